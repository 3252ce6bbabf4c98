//! The compatibility table: one row per fact of Claude Code 2.1.328's
//! built-in tools that toolhost's built-ins match, each with the place in
//! Claude Code's source it comes from (2.1.328's bundle where that release
//! changed or added the fact, 2.1.88's TypeScript where it kept it). The rows live in `tests/compat/*.json`
//! (one file per tool); this runner checks every row against the real
//! components, so a drift in a schema, an output or an error text fails here
//! with the fact and its source named.
//!
//! A row is either a schema fact:
//!   `{"fact", "source", "schema": TOOL, "pointer": "/properties/x/type", "equals": JSON}`
//!   (`"absent": true` instead of `equals`: nothing is at the pointer), or a call:
//!   `{"fact", "source", "files": {PATH: TEXT | {"base64"} | {"repeat", "times", "before"?, "after"?} | {"text", "length"}},
//!     "before": [{"tool", "input", "capture": {NAME: REGEX}}], "call": {"tool", "input"},
//!     "mode": MODE, "is_error": BOOL, "text" | "contains" | "matches": …, "file": {"path", "text"}}`.
//!   Each call row runs in a fresh workspace and session, in `bypassPermissions`
//!   unless it names a mode. `{ws}` in any string is the workspace's path; a
//!   `capture` of a `before` call takes the first group of REGEX from that
//!   call's text, and `{NAME}` in later strings is replaced by it. A file
//!   `{"text", "length"}` is TEXT followed by NUL bytes up to LENGTH, made
//!   sparse (a size limit's case without writing the bytes).

use base64::Engine as _;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use toolhost::{CallOptions, Host, PermissionMode, ToolUse};
use toolhost_tests::{Sandbox, repo_root};

/// Every row of every file, with the file it came from.
fn rows() -> Vec<(String, Value)> {
    let dir = repo_root().join("tests").join("compat");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut rows = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("compat file");
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let list: Vec<Value> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        rows.extend(list.into_iter().map(|row| (name.clone(), row)));
    }
    rows
}

fn host(sb: &Sandbox, mode: PermissionMode) -> Host {
    crate::support::host_builder(sb).mode(mode).build().expect("host")
}

/// `value` with `{ws}` and the captured `{NAME}`s put in every string.
fn fill(value: &Value, vars: &BTreeMap<String, String>) -> Value {
    match value {
        Value::String(s) => {
            let mut s = s.clone();
            for (name, v) in vars {
                s = s.replace(&format!("{{{name}}}"), v);
            }
            Value::String(s)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| fill(v, vars)).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), fill(v, vars))).collect()),
        other => other.clone(),
    }
}

fn make_files(root: &Path, files: &Value) {
    let Some(files) = files.as_object() else { return };
    for (rel, content) in files {
        let path = root.join(rel);
        if rel.ends_with('/') {
            std::fs::create_dir_all(&path).expect("directory");
            continue;
        }
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("parent directory");
        let bytes = match content {
            Value::String(s) => s.clone().into_bytes(),
            Value::Object(o) if o.contains_key("base64") => base64::engine::general_purpose::STANDARD
                .decode(o["base64"].as_str().expect("base64 text"))
                .expect("valid base64"),
            Value::Object(o) if o.contains_key("repeat") => {
                let text = |key: &str| o.get(key).map_or("", |v| v.as_str().expect("text"));
                let repeated = text("repeat").repeat(o["times"].as_u64().expect("times") as usize);
                format!("{}{repeated}{}", text("before"), text("after")).into_bytes()
            }
            Value::Object(o) if o.contains_key("length") => {
                std::fs::write(&path, o["text"].as_str().expect("text")).expect("write file");
                let file = std::fs::OpenOptions::new().write(true).open(&path).expect("open file");
                file.set_len(o["length"].as_u64().expect("length")).expect("extend file");
                continue;
            }
            other => panic!("file {rel}: unknown content {other}"),
        };
        std::fs::write(&path, bytes).expect("write file");
    }
}

/// Checks one row; `Err` says what differs.
fn check(row: &Value) -> Result<(), String> {
    let sb = Sandbox::new();
    let mut vars = BTreeMap::from([("ws".to_string(), sb.workspace.display().to_string())]);
    let mode = match row.get("mode").and_then(Value::as_str) {
        Some(m) => m.parse().map_err(|e| format!("mode {m}: {e:?}"))?,
        None => PermissionMode::BypassPermissions,
    };
    let host = host(&sb, mode);
    if let Some(tool) = row.get("schema").and_then(Value::as_str) {
        let spec = host.tool(tool).ok_or_else(|| format!("no tool {tool}"))?.spec().clone();
        let pointer = row["pointer"].as_str().ok_or("a schema row needs a pointer")?;
        let found = spec.input_schema.pointer(pointer);
        return match (row.get("absent").and_then(Value::as_bool), found) {
            (Some(true), None) => Ok(()),
            (Some(true), Some(v)) => Err(format!("{pointer} should be absent, is {v}")),
            (_, found) if found == row.get("equals") => Ok(()),
            (_, found) => Err(format!("{pointer}: expected {}, found {found:?}", row["equals"])),
        };
    }
    make_files(&sb.workspace, &fill(&row["files"], &vars));
    let session = host.ephemeral_session();
    let run = |call: &Value, vars: &BTreeMap<String, String>, n: usize| {
        let call = fill(call, vars);
        let tool_use = ToolUse {
            id: format!("toolu_compat_{n}"),
            name: call["tool"].as_str().expect("a call names its tool").to_string(),
            input: call["input"].clone(),
        };
        host.call(&session, &tool_use, &CallOptions::default())
    };
    for (n, before) in row["before"].as_array().into_iter().flatten().enumerate() {
        let r = run(before, &vars, n);
        for (name, pattern) in before["capture"].as_object().into_iter().flatten() {
            let re = regex::Regex::new(pattern.as_str().expect("capture regex")).expect("valid capture regex");
            let text = r.text();
            let got = re
                .captures(&text)
                .and_then(|c| c.get(1))
                .ok_or_else(|| format!("capture {name}: {pattern} not found in {text:?}"))?;
            vars.insert(name.clone(), got.as_str().to_string());
        }
    }
    let r = run(&row["call"], &vars, 99);
    let text = r.text();
    let mut problems = Vec::new();
    let want_error = row["is_error"].as_bool().ok_or("a call row needs is_error")?;
    if r.is_error != want_error {
        problems.push(format!("is_error {} (expected {want_error})", r.is_error));
    }
    let expect = fill(&json!({"text": row["text"], "contains": row["contains"], "matches": row["matches"]}), &vars);
    if let Some(want) = expect["text"].as_str()
        && text != want
    {
        problems.push(format!("text differs:\n  expected {want:?}\n  found    {text:?}"));
    }
    for needle in expect["contains"].as_array().into_iter().flatten() {
        let needle = needle.as_str().expect("contains lists strings");
        if !text.contains(needle) {
            problems.push(format!("{needle:?} not in {text:?}"));
        }
    }
    if let Some(pattern) = expect["matches"].as_str() {
        let re = regex::Regex::new(&format!("^(?:{pattern})$")).map_err(|e| format!("bad regex: {e}"))?;
        if !re.is_match(&text) {
            problems.push(format!("{text:?} does not match {pattern:?}"));
        }
    }
    if let Some(file) = row.get("file") {
        let path = sb.workspace.join(file["path"].as_str().expect("file path"));
        let found = std::fs::read_to_string(&path).unwrap_or_else(|e| format!("<unreadable: {e}>"));
        let want = fill(&file["text"], &vars);
        if Some(found.as_str()) != want.as_str() {
            problems.push(format!("{}: expected {want}, found {found:?}", path.display()));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n")) }
}

#[test]
fn every_row_of_the_compatibility_table_holds() {
    let rows = rows();
    assert!(rows.len() >= 50, "the table has only {} rows", rows.len());
    let mut failures = Vec::new();
    for (file, row) in &rows {
        let fact = row["fact"].as_str().unwrap_or_default();
        let source = row["source"].as_str().unwrap_or_default();
        if fact.is_empty() || source.is_empty() {
            failures.push(format!("{file}: a row without its fact or source: {row}"));
            continue;
        }
        let expectations = ["text", "contains", "matches"].iter().filter(|k| row.get(**k).is_some()).count();
        if row.get("schema").is_none() && expectations != 1 && row.get("file").is_none() {
            failures.push(format!("{file}: {fact}: a call row needs one of text, contains, matches"));
            continue;
        }
        if let Err(why) = check(row) {
            failures.push(format!("{file}: {fact}\n  (Claude Code: {source})\n  {}", why.replace('\n', "\n  ")));
        }
    }
    assert!(failures.is_empty(), "{} of {} rows fail:\n\n{}", failures.len(), rows.len(), failures.join("\n\n"));
}
