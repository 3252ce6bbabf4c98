use super::*;
use serde_json::json;

fn schema(json: Value) -> Schema {
    Schema::compile(json).unwrap()
}

/// The repairs the built-in `name` declares (its crate directory is its
/// name in lower case), or none for a third-party tool.
fn repairs_of(name: &str, builtin: bool) -> Option<&'static Repairs> {
    builtin.then(|| &crate::registry::builtins::declared(&name.to_lowercase()).repairs)
}

fn fix(name: &str, builtin: bool, schema: &Schema, input: Value) -> Option<(Value, Option<String>)> {
    let tool_use = ToolUse { id: "t".into(), name: name.into(), input };
    repair(name, repairs_of(name, builtin), schema, &tool_use, "/w").map(|r| (r.input, r.note))
}

fn strict(properties: Value, required: &[&str]) -> Schema {
    schema(json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false}))
}

fn read_schema() -> Schema {
    strict(
        json!({"file_path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}, "pages": {"type": "string"}}),
        &["file_path"],
    )
}

#[test]
fn javascript_number_texts() {
    for (f, text) in [
        (30.0, "30"),
        (-7.0, "-7"),
        (1.5, "1.5"),
        (0.1, "0.1"),
        (1e21, "1e+21"),
        (1.5e-7, "1.5e-7"),
        (1e-6, "0.000001"),
        (123456789012345680000.0, "123456789012345680000"),
        (2.5e25, "2.5e+25"),
    ] {
        assert_eq!(js_number_text(f), text, "{f}");
    }
}

#[test]
fn json_text_of_the_declared_type_is_parsed_for_any_tool() {
    let s = schema(json!({"type": "object", "properties": {
            "n": {"type": "number"}, "i": {"type": "integer"}, "b": {"type": "boolean"},
            "a": {"type": "array"}, "o": {"type": ["object", "null"]}, "s": {"type": "string"},
            "r": {"$ref": "#/$defs/count"}, "u": {"anyOf": [{"type": "null"}, {"type": "integer"}]}
        }, "$defs": {"count": {"type": "integer"}}}));
    let input = json!({"n": "1.5", "i": "30", "b": "true", "a": "[1, \"x\"]", "o": "{\"k\": 1}", "s": "30",
            "r": "4", "u": "5", "other": "7"});
    let (fixed, note) = fix("Tool", false, &s, input).unwrap();
    assert_eq!(
        fixed,
        json!({"n": 1.5, "i": 30, "b": true, "a": [1, "x"], "o": {"k": 1}, "s": "30", "r": 4, "u": 5, "other": "7"})
    );
    assert_eq!(note, None);
    // Numbers only when they read back as the same text; the wrong type
    // or bad JSON stays as sent (for the schema to refuse).
    for (field, text) in [
        ("i", "30.0"),
        ("i", " 30"),
        ("i", "1e3"),
        ("i", "1.5"),
        ("n", "01"),
        ("n", "NaN"),
        ("b", "1"),
        ("a", "{}"),
        ("o", "[1]"),
        ("a", "[1,"),
        ("b", "null"),
    ] {
        assert_eq!(fix("Tool", false, &s, json!({field: text})), None, "{field}: {text}");
    }
    assert_eq!(fix("Tool", false, &s, json!({"b": " false "})), Some((json!({"b": false}), None)));
    assert_eq!(fix("Tool", false, &s, json!(["not", "an", "object"])), None);
}

#[test]
fn read_slips() {
    let s = read_schema();
    let fixed = |input| fix("Read", true, &s, input).map(|(v, n)| (v, n.is_some()));
    assert_eq!(
        fixed(json!({"file_path": "/a", "offset": [5], "limit": ["10"]})),
        Some((json!({"file_path": "/a", "offset": 5, "limit": 10}), false))
    );
    assert_eq!(fixed(json!({"file_path": "/a", "offset": -3, "limit": 0})), Some((json!({"file_path": "/a"}), false)));
    assert_eq!(
        fixed(json!({"file_path": "/a", "offset": " -3 ", "limit": "-1"})),
        Some((json!({"file_path": "/a"}), false))
    );
    assert_eq!(
        fixed(json!({"file_path": "/a", "length": "20"})),
        Some((json!({"file_path": "/a", "limit": 20}), false))
    );
    assert_eq!(
        fixed(json!({"file_path": "/a", "length": 20, "limit": 5})),
        Some((json!({"file_path": "/a", "limit": 5}), false))
    );
    assert_eq!(fixed(json!({"file_path": "/a", "length": 0})), Some((json!({"file_path": "/a"}), false)));
    assert_eq!(fixed(json!({"file_path": "/a", "description": "x"})), Some((json!({"file_path": "/a"}), false)));
    assert_eq!(fixed(json!({"file_path": "/a", "offset": [1, 2]})), None, "only a one-element array");
    assert_eq!(fixed(json!({"file_path": "/a", "offset": 3})), None);
    // Not a built-in: its fields are its own.
    assert_eq!(fix("Read", false, &s, json!({"file_path": "/a", "offset": -3})), None);
}

#[test]
fn edit_slips() {
    let s = strict(
        json!({"file_path": {"type": "string"}, "old_string": {"type": "string"}, "new_string": {"type": "string"}, "replace_all": {"type": "boolean"}}),
        &["file_path", "old_string", "new_string"],
    );
    let (fixed, note) =
        fix("Edit", true, &s, json!({"path": "/a", "old_str": "x", "new_str": "y", "replace_name": "true"})).unwrap();
    assert_eq!(fixed, json!({"file_path": "/a", "old_string": "x", "new_string": "y", "replace_all": true}));
    assert_eq!(note, None);
    let (fixed, _) = fix("Edit", true, &s, json!({"file_path": "/a", "path": "/b", "old_string": "x", "new_string": "y", "replace_name": 1, "replace_all": false})).unwrap();
    assert_eq!(
        fixed,
        json!({"file_path": "/a", "path": "/b", "old_string": "x", "new_string": "y", "replace_all": false}),
        "targets present: left, and the schema refuses"
    );
    let (fixed, _) =
        fix("Edit", true, &s, json!({"file_path": "/a", "old_string": "x", "new_string": "y", "replace_name": "yes"}))
            .unwrap();
    assert_eq!(fixed["replace_all"], false);
}

#[test]
fn write_slips_come_with_a_note_and_only_when_they_make_the_input_valid() {
    let s = strict(json!({"file_path": {"type": "string"}, "content": {"type": "string"}}), &["file_path", "content"]);
    let (fixed, note) =
        fix("Write", true, &s, json!({"path": "/a", "file_text": "hi", "description": "d", "command": "create"}))
            .unwrap();
    assert_eq!(fixed, json!({"file_path": "/a", "content": "hi"}));
    assert_eq!(
        note.unwrap(),
        "Note: Write's parameters are named `file_path` and `content`. `path` was read as `file_path`. `file_text` \
             was read as `content`. `description` was ignored. `command` was ignored."
    );
    let (fixed, note) =
        fix("Write", true, &s, json!({"file_path": "/a", "content": "hi", "file": "/a", "text": "hi"})).unwrap();
    assert_eq!(fixed, json!({"file_path": "/a", "content": "hi"}));
    assert_eq!(
        note.unwrap(),
        "Note: Write's parameters are named `file_path` and `content`. `file` repeated `file_path` and was \
             ignored. `text` repeated `content` and was ignored."
    );
    // Two content names: neither is taken, and the result would still be
    // invalid, so nothing changes.
    assert_eq!(fix("Write", true, &s, json!({"path": "/a", "file_text": "x", "file_content": "y"})), None);
    assert_eq!(fix("Write", true, &s, json!({"path": "/a", "body": "x"})), None, "`body` is no content name");
}

#[test]
fn grep_slips() {
    let s = strict(
        json!({"pattern": {"type": "string"}, "path": {"type": "string"}, "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"]}}),
        &["pattern"],
    );
    let (fixed, note) =
        fix("Grep", true, &s, json!({"pattern": "x", "file_path": "/a", "-l": true, "-r": "true"})).unwrap();
    assert_eq!(fixed, json!({"pattern": "x", "path": "/a", "output_mode": "files_with_matches"}));
    assert_eq!(
        note.unwrap(),
        "Note: Grep's parameter for where to search is named `path`. `file_path` was read as `path`. `-l` is not a \
             Grep parameter and was read as `output_mode: \"files_with_matches\"`. `-r` was ignored: Grep always \
             searches a directory recursively."
    );
    let (fixed, note) = fix(
        "Grep",
        true,
        &s,
        json!({"pattern": "x", "path": "/a", "file_path": "/a", "output_mode": "count", "-c": "true"}),
    )
    .unwrap();
    assert_eq!(fixed, json!({"pattern": "x", "path": "/a", "output_mode": "count"}));
    assert_eq!(
        note.unwrap(),
        "Note: Grep's parameter for where to search is named `path`. `file_path` repeated `path` and was ignored. \
             `-c` repeated `output_mode` and was ignored."
    );
    assert_eq!(
        fix("Grep", true, &s, json!({"pattern": "x", "-l": true, "-c": true})),
        None,
        "both flags: still invalid"
    );
}

#[test]
fn bash_slips() {
    let s = strict(
        json!({"command": {"type": "string"}, "timeout": {"type": "number"}, "description": {"type": "string"}}),
        &["command"],
    );
    let (fixed, note) =
        fix("Bash", true, &s, json!({"command": "ls", "timeout_ms": "5000", "command_description": "List"})).unwrap();
    assert_eq!(fixed, json!({"command": "ls", "timeout": 5000, "description": "List"}));
    assert_eq!(note, None);
    let (fixed, _) = fix(
        "Bash",
        true,
        &s,
        json!({"command": "ls", "description": "A", "command_description": "B", "timeout_ms": "5s"}),
    )
    .unwrap();
    assert_eq!(fixed, json!({"command": "ls", "description": "A", "timeout_ms": "5s"}));
    let (fixed, note) = fix("Bash", true, &s, json!({"command": "ls", "view_images": ["/a.png"]})).unwrap();
    assert_eq!(fixed, json!({"command": "ls"}));
    assert_eq!(
        note.unwrap(),
        "view_images: no pictures were shown, because this input is not available here. Read them if you still need \
             them."
    );
}

#[test]
fn bash_commands_lose_a_leading_cd_to_the_working_directory() {
    let s = strict(json!({"command": {"type": "string"}}), &["command"]);
    let command = |c: &str| fix("Bash", true, &s, json!({"command": c})).map(|(v, _)| v["command"].clone());
    assert_eq!(command("cd /w && make"), Some(json!("make")));
    assert_eq!(command("make && cd /w && ls"), None, "only at the start (2.1.88 dropped it anywhere)");
    assert_eq!(command("cd /w/sub && make"), None);
    assert_eq!(command("cd /w&& make"), None);
    assert_eq!(command(r"find . -exec rm {} \\;"), Some(json!(r"find . -exec rm {} \;")));
    assert_eq!(
        command(r"cd /w && find . -exec rm {} \\; && cd /w && ls"),
        Some(json!(r"find . -exec rm {} \; && cd /w && ls"))
    );
    let tool_use = ToolUse { id: "t".into(), name: "Bash".into(), input: json!({"command": "cd /a b && ls"}) };
    assert_eq!(
        repair("Bash", repairs_of("Bash", true), &s, &tool_use, "/a b"),
        None,
        "a directory that needs quoting is left"
    );
    assert!(
        crate::registry::repairs::plain_path("/")
            && crate::registry::repairs::plain_path("C:\\Users\\me")
            && crate::registry::repairs::plain_path("/tmp/é")
    );
    assert!(
        !crate::registry::repairs::plain_path("rel/dir")
            && !crate::registry::repairs::plain_path("/a$b")
            && !crate::registry::repairs::plain_path("/a#")
            && !crate::registry::repairs::plain_path(&format!("/{}", "a".repeat(1024)))
    );
    assert!(crate::registry::repairs::plain_path(&format!("/{}", "a".repeat(1023))));
}

#[test]
fn webfetch_slips_only_when_that_makes_the_input_valid() {
    let s = strict(json!({"url": {"type": "string"}, "prompt": {"type": "string"}}), &["url", "prompt"]);
    let input =
        json!({"url": "https://a", "prompt": "p", "html_extraction_method": "x", "text_content_token_limit": 5});
    assert_eq!(fix("WebFetch", true, &s, input), Some((json!({"url": "https://a", "prompt": "p"}), None)));
    let input = json!({"url": "https://a", "web_fetch_pdf_extract_text": true});
    assert_eq!(fix("WebFetch", true, &s, input), None, "`prompt` is still missing");
}
