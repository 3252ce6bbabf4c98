//! `toolhost tools`: the pool, its order, its schemas.

use crate::support::*;
use toolhost_tests::{ADVERSARY, ECHO};

#[test]
fn the_pool_is_builtins_then_plugins_in_a_byte_stable_order() {
    let sb = Sandbox::new();
    sb.install(ECHO);
    sb.install(ADVERSARY);
    let first = toolhost(&sb, &["tools", "--json"]);
    assert_eq!(first.code, 0, "{first:?}");
    let list = first.json();
    let names: Vec<&str> = list.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["Bash", "BashOutput", "Edit", "Glob", "Grep", "KillShell", "Read", "WebFetch", "Write", "Adversary", "Echo"]
    );
    for tool in list.as_array().unwrap() {
        assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
        assert_eq!(tool["input_schema"]["type"], "object", "{tool}");
        assert_eq!(tool.as_object().unwrap().keys().collect::<Vec<_>>(), ["name", "description", "input_schema"]);
    }
    let second = toolhost(&sb, &["tools", "--json"]);
    assert_eq!(first.stdout, second.stdout, "byte-stable across runs");
}

#[test]
fn builtin_schemas_follow_claude_code() {
    let sb = Sandbox::new();
    let list = toolhost(&sb, &["tools", "--json"]).json();
    let schema =
        |name: &str| list.as_array().unwrap().iter().find(|t| t["name"] == name).unwrap()["input_schema"].clone();
    let props = |name: &str| {
        let s = schema(name);
        let mut keys: Vec<String> = s["properties"].as_object().unwrap().keys().cloned().collect();
        keys.sort();
        (keys, s["required"].clone(), s["additionalProperties"].clone())
    };
    assert_eq!(
        props("Read"),
        (vec!["file_path".into(), "limit".into(), "offset".into()], serde_json::json!(["file_path"]), false.into())
    );
    assert_eq!(props("Write").0, ["content", "file_path"]);
    assert_eq!(props("Edit").0, ["file_path", "new_string", "old_string", "replace_all"]);
    assert_eq!(props("Glob").0, ["path", "pattern"]);
    assert_eq!(
        props("Grep").0,
        [
            "-A",
            "-B",
            "-C",
            "-i",
            "-n",
            "context",
            "glob",
            "head_limit",
            "multiline",
            "offset",
            "output_mode",
            "path",
            "pattern",
            "type"
        ]
    );
}
