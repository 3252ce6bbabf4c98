//! The `NotebookEdit` tool: replace, insert or delete one cell of a Jupyter
//! notebook that was read first, as Claude Code 2.1.88 does.
//!
//! The checks, texts and the bytes written follow Claude Code: the notebook
//! is parsed and written back as JavaScript's `JSON.parse` and
//! `JSON.stringify(notebook, null, 1)` would ([`json`]), the edit is
//! [`notebook::apply`], and a failure Claude Code reports through its
//! `validateInput` comes from [`Tool::validate_input`] (the host wraps it in
//! `<tool_use_error>`), one from its `call` from [`Tool::call`] (plain).

pub mod json;
pub mod notebook;

use notebook::{Refusal, Request};
use std::path::Path;
use toolhost_sdk::fs::{self, Access, TextFile};
use toolhost_sdk::{
    Context, Deserialize, ErrorKind, JsonSchema, Output, PathAccess, Permission, Tool, ToolError, export_tool,
    serde_json,
};

/// Input of `NotebookEdit`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotebookEditInput {
    /// Absolute path of the Jupyter notebook file to change (an absolute path, not a relative one)
    pub notebook_path: String,
    /// ID of the cell to change. With edit_mode=insert the new cell goes right after the cell with this ID, or first in the notebook when no ID is given.
    #[serde(default)]
    pub cell_id: Option<String>,
    /// The cell's new source
    pub new_source: String,
    /// Kind of cell: code or markdown. When left out, the cell keeps its current kind. Required with edit_mode=insert.
    #[serde(default)]
    pub cell_type: Option<CellType>,
    /// What to do with the cell: replace, insert or delete. Replace when left out.
    #[serde(default)]
    pub edit_mode: Option<EditMode>,
}

// The kind of a notebook cell (no doc comment: the field's description is
// the one the model reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum CellType {
    Code,
    Markdown,
}

impl CellType {
    pub fn as_str(self) -> &'static str {
        match self {
            CellType::Code => "code",
            CellType::Markdown => "markdown",
        }
    }
}

// What an edit does to the cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum EditMode {
    Replace,
    Insert,
    Delete,
}

impl EditMode {
    pub fn as_str(self) -> &'static str {
        match self {
            EditMode::Replace => "replace",
            EditMode::Insert => "insert",
            EditMode::Delete => "delete",
        }
    }
}

impl NotebookEditInput {
    fn request(&self) -> Request<'_> {
        Request {
            cell_id: self.cell_id.as_deref(),
            new_source: &self.new_source,
            cell_type: self.cell_type,
            edit_mode: self.edit_mode,
        }
    }
}

pub struct NotebookEdit;

impl Tool for NotebookEdit {
    type Input = NotebookEditInput;
    const NAME: &'static str = "NotebookEdit";
    const PATH_FIELDS: &'static [(&'static str, PathAccess)] = &[("notebook_path", PathAccess::Edit)];
    const READ_ONLY_HINT: Option<bool> = Some(false);
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(false);
    // Claude Code lists NotebookEdit by name only until tool search loads it.
    const SHOULD_DEFER: bool = true;
    const DESCRIPTION: &'static str = "Replaces, inserts or deletes a cell in a Jupyter notebook.";

    fn prompt() -> String {
        PROMPT.to_string()
    }
    fn search_hint() -> Option<String> {
        Some("jupyter notebook ipynb cell edit insert delete replace".into())
    }

    fn validate_input(input: &NotebookEditInput, ctx: &Context) -> Result<(), ToolError> {
        let path = fs::confine(ctx, &input.notebook_path, Access::Write)?;
        if path.extension().is_none_or(|ext| ext != "ipynb") {
            return Err(invalid(
                "File must be a Jupyter notebook (.ipynb file). For editing other file types, use the FileEdit tool.",
            ));
        }
        if input.edit_mode == Some(EditMode::Insert) && input.cell_type.is_none() {
            return Err(invalid("Cell type is required when using edit_mode=insert."));
        }
        let Some(record) = fs::read_record(ctx, &path) else {
            return Err(ToolError::conflict(fs::NOT_READ_YET));
        };
        let meta = match std::fs::metadata(&path) {
            Ok(meta) => meta,
            // Claude Code's stat throws here, and its runner reports the throw.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(thrown_in_validation(format!(
                    "ENOENT: no such file or directory, stat '{}'",
                    path.display()
                )));
            }
            Err(e) => return Err(fs::io_error(ctx, &path, &e)),
        };
        // Only the time counts here: unlike Edit and Write, Claude Code's
        // NotebookEdit does not excuse a newer time when the text is the same.
        if record.is_older_than(&meta) {
            return Err(ToolError::conflict(fs::MODIFIED_SINCE_READ));
        }
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ToolError::not_found("Notebook file does not exist."));
            }
            Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => {
                return Err(thrown_in_validation("EISDIR: illegal operation on a directory, read".into()));
            }
            Err(e) => return Err(fs::io_error(ctx, &path, &e)),
        };
        if let Some(not_text) = fs::not_text(&bytes) {
            return Err(ToolError::unsupported(not_text.refusal()));
        }
        let file = TextFile::decode(&bytes);
        // Claude Code's check parses with a leading byte-order mark removed
        // (its call does not, and then fails: see `call`).
        let notebook = json::parse(file.text.strip_prefix('\u{feff}').unwrap_or(&file.text))
            .filter(json::Value::truthy)
            .ok_or_else(|| invalid("Notebook is not valid JSON."))?;
        if !notebook::is_notebook(&notebook) {
            return Err(invalid(notebook::NOT_A_NOTEBOOK));
        }
        notebook::check(&notebook, &input.request()).map_err(|refusal| match refusal {
            Refusal::Invalid(message) => invalid(message),
            Refusal::Thrown(message) => thrown_in_validation(message),
        })
    }

    fn check_permissions(_input: &NotebookEditInput, ctx: &Context) -> Permission {
        fs::edit_permission(ctx)
    }

    fn call(input: NotebookEditInput, ctx: &Context) -> Result<Output, ToolError> {
        let path = fs::confine(ctx, &input.notebook_path, Access::Write)?;
        let bytes = std::fs::read(&path).map_err(|e| read_error(ctx, &path, &e))?;
        if let Some(not_text) = fs::not_text(&bytes) {
            return Err(ToolError::unsupported(not_text.refusal()));
        }
        let file = TextFile::decode(&bytes);
        let mut notebook =
            json::parse(&file.text).ok_or_else(|| ToolError::invalid_input("Notebook is not valid JSON."))?;
        if !notebook::is_notebook(&notebook) {
            return Err(ToolError::invalid_input(notebook::NOT_A_NOTEBOOK));
        }
        let mut edited = notebook::apply(&mut notebook, &input.request(), || notebook::random_cell_id(random_bits()))
            .map_err(|thrown| ToolError::invalid_input(thrown.0))?;
        // 2.1.328 keeps a final newline the file had.
        if file.text.ends_with('\n') {
            edited.json.push('\n');
        }
        // Back in the file's encoding and line endings.
        let encoded = file.encode(&edited.json);
        within_size(encoded.len() as u64)?;
        fs::replace(&path, &encoded)?;
        // The write counts as a read of the whole file: a later edit needs no new Read.
        let meta = std::fs::metadata(&path).map_err(|e| fs::io_error(ctx, &path, &e))?;
        fs::record_write(ctx, &path, &meta, &edited.json)?;
        Ok(Output::text(edited.message(&input.new_source)).with_structured(serde_json::json!({
            "notebook_path": path.display().to_string(),
            "cell_id": edited.cell_id,
            "cell_type": edited.cell_type.as_str(),
            "edit_mode": edited.mode.as_str(),
            "language": edited.language,
            "new_source": input.new_source,
        })))
    }
}

/// The largest notebook Read reads (2.1.328): an edit that would make the
/// file larger is refused, so the notebook stays readable.
const MAX_NOTEBOOK_BYTES: u64 = 100 * 1024 * 1024;

/// Refuses an edited notebook of `bytes` over [`MAX_NOTEBOOK_BYTES`].
fn within_size(bytes: u64) -> Result<(), ToolError> {
    if bytes <= MAX_NOTEBOOK_BYTES {
        return Ok(());
    }
    Err(ToolError::new(
        ErrorKind::TooLarge,
        format!(
            "Edit rejected: the updated notebook would exceed the maximum size this tool can read ({}). The file \
             was left unchanged.",
            fs::format_file_size(MAX_NOTEBOOK_BYTES)
        ),
    ))
}

fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::invalid_input(message)
}

/// An exception thrown inside Claude Code's `validateInput`, as its runner
/// words it.
fn thrown_in_validation(message: String) -> ToolError {
    ToolError::invalid_input(format!("Error calling tool (NotebookEdit): {message}"))
}

/// A read failure in `call`, with the message Node gives it there.
fn read_error(ctx: &Context, path: &Path, e: &std::io::Error) -> ToolError {
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            ToolError::not_found(format!("ENOENT: no such file or directory, open '{}'", path.display()))
        }
        std::io::ErrorKind::IsADirectory => ToolError::invalid_input("EISDIR: illegal operation on a directory, read"),
        _ => fs::io_error(ctx, path, e),
    }
}

/// 64 random bits, from the host's random source (through the keys std
/// draws for hash maps), for new cell ids.
fn random_bits() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(0u8)
}

const PROMPT: &str = include_str!("prompt.md");

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests).
toolhost_sdk::requests!(r#"{"workspace": "read-write"}"#);

export_tool!(NotebookEdit);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_may_not_grow_the_notebook_past_what_read_reads() {
        assert!(within_size(MAX_NOTEBOOK_BYTES).is_ok());
        assert_eq!(
            within_size(MAX_NOTEBOOK_BYTES + 1).unwrap_err().message,
            "Edit rejected: the updated notebook would exceed the maximum size this tool can read (100MB). The file \
             was left unchanged."
        );
    }

    #[test]
    fn schema_has_claude_codes_fields_and_inline_enums() {
        let schema: serde_json::Value =
            serde_json::from_str(&toolhost_sdk::input_schema::<NotebookEdit>()).expect("schema is JSON");
        let props = schema["properties"].as_object().expect("properties");
        assert_eq!(
            props.keys().collect::<Vec<_>>(),
            ["notebook_path", "cell_id", "new_source", "cell_type", "edit_mode"]
        );
        assert_eq!(schema["required"], serde_json::json!(["notebook_path", "new_source"]));
        assert_eq!(schema["additionalProperties"], false);
        let text = schema.to_string();
        assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
        assert!(text.contains(r#"["code","markdown"]"#) && text.contains(r#"["replace","insert","delete"]"#), "{text}");
        assert!(props["cell_type"]["description"].as_str().is_some_and(|d| d.contains("insert")));
    }

    #[test]
    fn input_accepts_what_claude_code_sends() {
        let input: NotebookEditInput = serde_json::from_str(
            r#"{"notebook_path":"/w/a.ipynb","cell_id":"x","new_source":"s","cell_type":"markdown","edit_mode":"insert"}"#,
        )
        .expect("full input");
        assert_eq!((input.cell_type, input.edit_mode), (Some(CellType::Markdown), Some(EditMode::Insert)));
        let input: NotebookEditInput =
            serde_json::from_str(r#"{"notebook_path":"/w/a.ipynb","new_source":""}"#).expect("minimal input");
        assert!(input.cell_id.is_none() && input.edit_mode.is_none());
        assert!(
            serde_json::from_str::<NotebookEditInput>(r#"{"notebook_path":"a","new_source":"","cell_number":1}"#)
                .is_err()
        );
        assert!(
            serde_json::from_str::<NotebookEditInput>(r#"{"notebook_path":"a","new_source":"","edit_mode":"append"}"#)
                .is_err()
        );
    }

    #[test]
    fn refuses_other_files_and_inserts_without_a_type_before_any_io() {
        let ctx = Context::for_tests("/ws", toolhost_sdk::Mode::BypassPermissions);
        let input = |path: &str, mode: Option<EditMode>| NotebookEditInput {
            notebook_path: path.into(),
            cell_id: None,
            new_source: "x".into(),
            cell_type: None,
            edit_mode: mode,
        };
        for path in ["/ws/a.py", "/ws/.ipynb", "/ws/a.IPYNB", "/ws/a.ipynb.bak"] {
            let e = NotebookEdit::validate_input(&input(path, None), &ctx).unwrap_err();
            assert_eq!(
                e.message,
                "File must be a Jupyter notebook (.ipynb file). For editing other file types, use the FileEdit tool.",
                "{path}"
            );
        }
        let e = NotebookEdit::validate_input(&input("/ws/a.ipynb", Some(EditMode::Insert)), &ctx).unwrap_err();
        assert_eq!(e.message, "Cell type is required when using edit_mode=insert.");
        let e = NotebookEdit::validate_input(&input("/elsewhere/a.ipynb", None), &ctx).unwrap_err();
        assert!(e.message.contains("outside the working directories"), "{}", e.message);
    }
}
