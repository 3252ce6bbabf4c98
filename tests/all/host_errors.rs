//! Bad input caught by the host before a tool runs.

use crate::support::*;
use serde_json::json;

#[test]
fn unknown_tool() {
    let sb = Sandbox::new();
    let r = call(&sb, "Nope", &json!({}), &[]);
    assert_eq!(r.assert_error(""), "<tool_use_error>Error: No such tool available: Nope</tool_use_error>");
}

#[test]
fn missing_required_field() {
    let sb = Sandbox::new();
    call(&sb, "Read", &json!({}), &[]).assert_error("The required parameter `file_path` is missing");
}

#[test]
fn wrong_type() {
    let sb = Sandbox::new();
    call(&sb, "Read", &json!({"file_path": 7}), &[])
        .assert_error("The parameter `file_path` type is expected as `string` but provided as `integer`");
    call(&sb, "Grep", &json!({"pattern": "x", "-i": "yes"}), &[])
        .assert_error("The parameter `-i` type is expected as `boolean` but provided as `string`");
}

#[test]
fn extra_field_on_a_strict_schema() {
    let sb = Sandbox::new();
    let file = sb.write("a.txt", "a\n");
    call(&sb, "Read", &json!({"file_path": p(&file), "encoding": "latin1"}), &[])
        .assert_error("An unexpected parameter `encoding` was provided");
}

#[test]
fn invalid_json() {
    let sb = Sandbox::new();
    let r = toolhost(&sb, &["call", "Read", "{\"file_path\": ", "--json"]);
    r.assert_error("the input of Read is not valid JSON");
}

#[test]
fn exit_code_and_plain_output() {
    let sb = Sandbox::new();
    let file = sb.write("hello.txt", "hello\nworld\n");
    let ok = toolhost(&sb, &["call", "Read", &json!({"file_path": p(&file)}).to_string()]);
    assert_eq!((ok.code, ok.stdout.as_str()), (0, "1\thello\n2\tworld\n3\t\n"), "{ok:?}");
    let bad = toolhost(&sb, &["call", "Nope", "{}"]);
    assert_eq!(bad.code, 1, "{bad:?}");
}
