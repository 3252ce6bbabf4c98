//! Deferred tools and ToolSearch: offered by name only, loaded per session,
//! refused until loaded; listed in full over MCP.

use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use toolhost_tests::{ECHO, SLEEPER};

const DEFER_ALL: &str = r#"{"deferToolsAfter": 0}"#;

#[test]
fn deferred_tools_are_listed_by_name_and_toolsearch_appears() {
    let sb = Sandbox::new();
    sb.install(ECHO);
    // Only the built-ins Claude Code defers (NotebookEdit, TaskStop):
    // ToolSearch is listed, Echo in full.
    let r = toolhost(&sb, &["tools", "--json"]);
    let list: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
    assert!(list.iter().any(|t| t["name"] == "ToolSearch"), "{}", r.stdout);
    assert!(list.iter().any(|t| t == &json!({"name": "NotebookEdit", "deferred": true})), "{}", r.stdout);
    assert!(list.iter().any(|t| t["name"] == "Echo" && t["input_schema"].is_object()));

    let r = toolhost(&sb, &["--settings", DEFER_ALL, "tools", "--json"]);
    let list: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
    let echo = list.iter().find(|t| t["name"] == "Echo").expect("Echo listed");
    assert_eq!(echo, &json!({"name": "Echo", "deferred": true}));
    let search = list.iter().find(|t| t["name"] == "ToolSearch").expect("ToolSearch listed");
    let schema = &search["input_schema"];
    assert_eq!(schema["required"], json!(["query"]), "{schema}");
    assert_eq!(schema["properties"]["max_results"]["type"], "number", "{schema}");
    assert!(schema["properties"].get("deferred").is_none(), "the host's field is not the model's: {schema}");
    assert_eq!(schema["additionalProperties"], false, "{schema}");
    // Built-ins are not deferred by the count.
    assert!(list.iter().any(|t| t["name"] == "Read" && t["input_schema"].is_object()));
    let text = toolhost(&sb, &["--settings", DEFER_ALL, "tools"]).stdout;
    assert!(text.lines().any(|l| l.starts_with("Echo") && l.contains("deferred")), "{text}");
}

/// Runs `lines` through one `toolhost run`, returning the results by id.
fn run(sb: &Sandbox, extra: &[&str], lines: &[Value]) -> Vec<Value> {
    let mut args = extra.to_vec();
    args.push("run");
    let mut child = spawn_piped(sb, &args);
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let out = BufReader::new(child.stdout.take().unwrap());
    let results: Vec<Value> = out
        .lines()
        .map_while(Result::ok)
        .map(|l| serde_json::from_str::<Value>(&l).unwrap())
        .filter(|v| v["type"] == "tool_result")
        .collect();
    assert!(child.wait().unwrap().success());
    results
}

#[test]
fn a_deferred_tool_is_refused_until_toolsearch_loads_it_in_the_session() {
    let sb = Sandbox::new();
    sb.install(ECHO);
    sb.install(SLEEPER);
    let results = run(
        &sb,
        &["--settings", DEFER_ALL],
        &[
            tool_use_line("before", "Echo", json!({"text": "hi"})),
            tool_use_line("forged", "ToolSearch", json!({"query": "select:Echo", "deferred": [{"name": "Read"}]})),
            tool_use_line("keywords", "ToolSearch", json!({"query": "echoes input"})),
            tool_use_line("select", "ToolSearch", json!({"query": "select:Echo"})),
            tool_use_line("none", "ToolSearch", json!({"query": "select:Nothing"})),
            tool_use_line("after", "Echo", json!({"text": "hi"})),
            tool_use_line("other", "Sleeper", json!({"label": "x", "safe": true})),
        ],
    );
    let by_id = |id: &str| results.iter().find(|r| r["tool_use_id"] == id).unwrap_or_else(|| panic!("no {id}"));
    let before = by_id("before");
    assert_eq!(before["is_error"], true);
    let text = content_text(before);
    assert!(text.contains("deferred tool") && text.contains("\"select:Echo\""), "{text}");

    assert_eq!(by_id("forged")["is_error"], true, "the model cannot pass the catalog");

    // Keywords find it (and load it, too).
    let keywords = content_text(by_id("keywords"));
    assert!(keywords.contains("\"name\":\"Echo\""), "{keywords}");

    let select = by_id("select");
    assert_eq!(select["is_error"], false, "{select}");
    let text = content_text(select);
    assert!(text.starts_with("<functions>\n<function>{"), "{text}");
    let def: Value = serde_json::from_str(
        text.lines().nth(1).unwrap().trim_start_matches("<function>").trim_end_matches("</function>"),
    )
    .unwrap();
    assert_eq!(def["name"], "Echo");
    assert_eq!(def["parameters"]["properties"]["text"]["type"], "string", "{def}");
    assert!(!def["description"].as_str().unwrap().is_empty());

    assert_eq!(content_text(by_id("none")), "No matching deferred tools found");
    assert_eq!((by_id("after")["is_error"].as_bool(), content_text(by_id("after"))), (Some(false), "hi".into()));
    // Loading Echo did not load Sleeper.
    assert!(content_text(by_id("other")).contains("select:Sleeper"), "{}", by_id("other"));
}

#[test]
fn what_toolsearch_loaded_stays_with_a_persisted_session() {
    let sb = Sandbox::new();
    sb.install(ECHO);
    fn with<'a>(args: &[&'a str]) -> Vec<&'a str> {
        [&["--settings", DEFER_ALL][..], args, &["--json"]].concat()
    }
    toolhost(&sb, &with(&["call", "--session", "s1", "Echo", r#"{"text":"a"}"#])).assert_error("select:Echo");
    toolhost(&sb, &with(&["call", "--session", "s1", "ToolSearch", r#"{"query":"select:Echo"}"#])).assert_ok();
    let r = toolhost(&sb, &with(&["call", "--session", "s1", "Echo", r#"{"text":"a"}"#]));
    assert_eq!(r.assert_ok(), "a");
    // Another session has not loaded it.
    toolhost(&sb, &with(&["call", "--session", "s2", "Echo", r#"{"text":"a"}"#])).assert_error("select:Echo");
}
