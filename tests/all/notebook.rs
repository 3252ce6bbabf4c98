//! NotebookEdit through the binary: the read-first rule, then replace, insert
//! and delete, each checked on disk, and the refusals that leave the file be.

use crate::support::*;
use serde_json::{Value, json};

/// A notebook as Jupyter saves it (nbformat 4.5: cells have ids).
const NOTEBOOK: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "intro",
   "metadata": {},
   "source": [
    "# Analysis"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 7,
   "id": "calc",
   "metadata": {},
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "2\n"
     ]
    }
   ],
   "source": [
    "print(1 + 1)"
   ]
  }
 ],
 "metadata": {
  "language_info": {
   "name": "python"
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

/// The session flags: one session, edits allowed.
const SESSION: [&str; 4] = ["--session", "nb", "--mode", "acceptEdits"];

/// Loads NotebookEdit's definition in the session (Claude Code defers it).
fn load(sb: &Sandbox) {
    call(sb, "ToolSearch", &json!({"query": "select:NotebookEdit"}), &SESSION).assert_ok();
}

fn cells(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("notebook on disk");
    let nb: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    nb["cells"].as_array().expect("cells").clone()
}

#[test]
fn read_then_replace_insert_and_delete_cells() {
    let sb = Sandbox::new();
    let file = sb.write("analysis.ipynb", NOTEBOOK);
    let path = p(&file);
    let edit = |input: Value| call(&sb, "NotebookEdit", &input, &SESSION);
    load(&sb);

    let text = edit(json!({"notebook_path": path, "cell_id": "calc", "new_source": "x = 2"})).assert_error("");
    assert_eq!(
        text,
        "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), NOTEBOOK);
    call(&sb, "Read", &json!({"file_path": path}), &SESSION).assert_ok();

    // Replace: one source string, outputs and execution count cleared, the
    // rest as JSON.stringify(nb, null, 1) writes it, the file's final newline kept.
    let text = edit(json!({"notebook_path": path, "cell_id": "calc", "new_source": "x = 2"})).assert_ok();
    assert_eq!(text, "Updated cell calc with x = 2");
    let on_disk = std::fs::read_to_string(&file).unwrap();
    let expected = NOTEBOOK
        .replace("\"execution_count\": 7", "\"execution_count\": null")
        .replace(
            "\"outputs\": [\n    {\n     \"name\": \"stdout\",\n     \"output_type\": \"stream\",\n     \"text\": [\n      \"2\\n\"\n     ]\n    }\n   ]",
            "\"outputs\": []",
        )
        .replace("\"source\": [\n    \"print(1 + 1)\"\n   ]", "\"source\": \"x = 2\"");
    assert_eq!(on_disk, expected);

    // Insert after a cell: a new cell with a fresh id. Its own write counts
    // as a read, so no Read is needed in between.
    let text = edit(json!({
        "notebook_path": path, "cell_id": "intro", "new_source": "## Notes", "cell_type": "markdown", "edit_mode": "insert"
    }))
    .assert_ok();
    let id = text
        .strip_prefix("Inserted cell ")
        .and_then(|rest| rest.strip_suffix(" with ## Notes"))
        .unwrap_or_else(|| panic!("{text}"))
        .to_string();
    assert!(id.len() == 8 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{id}");
    let now = cells(&file);
    assert_eq!(now.len(), 3);
    assert_eq!(now[1], json!({"cell_type": "markdown", "id": id, "source": "## Notes", "metadata": {}}));

    // Replace by position (cell-N), changing the cell's type.
    let text = edit(json!({
        "notebook_path": path, "cell_id": "cell-0", "new_source": "print('hi')", "cell_type": "code", "edit_mode": "replace"
    }))
    .assert_ok();
    assert_eq!(text, "Updated cell cell-0 with print('hi')");
    assert_eq!(cells(&file)[0], json!({"cell_type": "code", "id": "intro", "metadata": {}, "source": "print('hi')"}));

    // Delete the inserted cell.
    let text = edit(json!({"notebook_path": path, "cell_id": id, "new_source": "", "edit_mode": "delete"})).assert_ok();
    assert_eq!(text, format!("Deleted cell {id}"));
    let ids: Vec<_> = cells(&file).iter().map(|c| c["id"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(ids, ["intro", "calc"]);

    let leftovers: Vec<_> = std::fs::read_dir(&sb.workspace)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".toolhost-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn older_notebooks_and_crlf_files_are_written_as_claude_code_writes_them() {
    let sb = Sandbox::new();
    let old = "{\r\n \"cells\": [],\r\n \"metadata\": {},\r\n \"nbformat\": 4,\r\n \"nbformat_minor\": 2\r\n}\r\n";
    let file = sb.write("old.ipynb", old);
    load(&sb);
    call(&sb, "Read", &json!({"file_path": p(&file)}), &SESSION).assert_ok();
    let input = json!({"notebook_path": p(&file), "new_source": "a = 1", "cell_type": "code", "edit_mode": "insert"});
    // Before nbformat 4.5 cells have no id: "a new cell".
    assert_eq!(call(&sb, "NotebookEdit", &input, &SESSION).assert_ok(), "Inserted a new cell with a = 1");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\r\n \"cells\": [\r\n  {\r\n   \"cell_type\": \"code\",\r\n   \"source\": \"a = 1\",\r\n   \"metadata\": {},\r\n   \
         \"execution_count\": null,\r\n   \"outputs\": []\r\n  }\r\n ],\r\n \"metadata\": {},\r\n \"nbformat\": 4,\r\n \
         \"nbformat_minor\": 2\r\n}\r\n"
    );
}

#[test]
fn refusals_leave_the_notebook_as_it_was() {
    let sb = Sandbox::new();
    let file = sb.write("analysis.ipynb", NOTEBOOK);
    let path = p(&file);
    let other = sb.write("notes.txt", "text\n");
    load(&sb);
    call(&sb, "Read", &json!({"file_path": path}), &SESSION).assert_ok();
    let refused = |input: Value, message: &str| {
        let text = call(&sb, "NotebookEdit", &input, &SESSION).assert_error("");
        assert_eq!(text, format!("<tool_use_error>{message}</tool_use_error>"));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), NOTEBOOK);
    };
    refused(
        json!({"notebook_path": p(&other), "cell_id": "calc", "new_source": "x"}),
        "File must be a Jupyter notebook (.ipynb file). For editing other file types, use the FileEdit tool.",
    );
    refused(
        json!({"notebook_path": path, "new_source": "x", "edit_mode": "insert"}),
        "Cell type is required when using edit_mode=insert.",
    );
    refused(
        json!({"notebook_path": path, "new_source": "x"}),
        "Cell ID must be specified when not inserting a new cell.",
    );
    refused(
        json!({"notebook_path": path, "cell_id": "gone", "new_source": "x"}),
        "Cell with ID \"gone\" not found in notebook.",
    );
    refused(
        json!({"notebook_path": path, "cell_id": "cell-2", "new_source": "x"}),
        "Cell with index 2 does not exist in notebook.",
    );
    let r =
        call(&sb, "NotebookEdit", &json!({"notebook_path": path, "new_source": "x", "edit_mode": "append"}), &SESSION);
    assert!(r.is_error() && r.text().contains("InputValidationError"), "{r:?}");

    // Someone else changes the notebook: it must be read again.
    let changed = NOTEBOOK.replace("# Analysis", "# Analysis, revised");
    std::fs::write(&file, &changed).unwrap();
    let later = std::fs::metadata(&file).unwrap().modified().unwrap() + std::time::Duration::from_secs(5);
    std::fs::File::options().write(true).open(&file).unwrap().set_modified(later).unwrap();
    let text =
        call(&sb, "NotebookEdit", &json!({"notebook_path": path, "cell_id": "calc", "new_source": "x"}), &SESSION)
            .assert_error("");
    assert_eq!(
        text,
        "<tool_use_error>File has been modified since read, either by the user or by a linter. Read it again before \
         attempting to write it.</tool_use_error>"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), changed);
}

#[test]
fn is_deferred_until_toolsearch_loads_it() {
    let sb = Sandbox::new();
    let file = sb.write("analysis.ipynb", NOTEBOOK);
    let r =
        call(&sb, "NotebookEdit", &json!({"notebook_path": p(&file), "cell_id": "calc", "new_source": "x"}), &SESSION);
    r.assert_error("select:NotebookEdit");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), NOTEBOOK);
}
