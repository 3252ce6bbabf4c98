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
        [
            "Bash",
            "Edit",
            "Glob",
            "Grep",
            "NotebookEdit",
            "Read",
            "TaskStop",
            "ToolSearch",
            "WebFetch",
            "Write",
            "Adversary",
            "Echo"
        ]
    );
    // As in Claude Code, NotebookEdit and TaskStop are deferred: listed by
    // name until ToolSearch loads them.
    for tool in list.as_array().unwrap() {
        let keys = tool.as_object().unwrap().keys().collect::<Vec<_>>();
        if ["NotebookEdit", "TaskStop"].contains(&tool["name"].as_str().unwrap()) {
            assert_eq!(keys, ["name", "deferred"], "{tool}");
            continue;
        }
        assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
        assert_eq!(tool["input_schema"]["type"], "object", "{tool}");
        assert_eq!(keys, ["name", "description", "input_schema"]);
    }
    let second = toolhost(&sb, &["tools", "--json"]);
    assert_eq!(first.stdout, second.stdout, "byte-stable across runs");
}

/// A model is given each built-in's full prompt as its description (people
/// get the one-liner from `toolhost tools`), and schemas in the subset every
/// function-calling API accepts; deferred ones included (what ToolSearch and
/// MCP give).
#[test]
fn builtins_are_offered_with_their_prompts_and_portable_schemas() {
    let sb = Sandbox::new();
    let host = crate::support::host_builder(&sb).build().expect("host");
    let people = toolhost(&sb, &["tools"]);
    let pool = host.pool();
    assert!(pool.len() >= 10, "{}", pool.len());
    for tool in pool {
        let definition = tool.spec().definition();
        let name = definition["name"].as_str().unwrap();
        let description = definition["description"].as_str().unwrap();
        assert_eq!(description, tool.spec().prompt, "{name}");
        assert!(description.len() >= 200, "{name}: a prompt of {} characters", description.len());
        let line = people.stdout.lines().find(|l| l.split_whitespace().next() == Some(name)).unwrap();
        assert!(line.contains(&tool.spec().description) && line.len() < 200, "{name}: {line}");
        let problems = toolhost::portability_problems(&definition["input_schema"]);
        assert!(problems.is_empty(), "{name}: {problems:#?}");
    }
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
        (
            vec!["allow_large".into(), "file_path".into(), "limit".into(), "offset".into(), "pages".into()],
            serde_json::json!(["file_path"]),
            false.into()
        )
    );
    assert_eq!(props("Write").0, ["content", "file_path"]);
    assert_eq!(props("Edit").0, ["file_path", "new_string", "old_string", "replace_all"]);
    assert_eq!(props("Glob").0, ["path", "pattern"]);
    assert_eq!(props("WebFetch").0, ["offset", "prompt", "url"]);
    assert_eq!(
        props("Grep").0,
        [
            "-A",
            "-B",
            "-C",
            "-i",
            "-n",
            "-o",
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

/// A plugin's description is saved beside its compiled form: the next start
/// does not instantiate it; a saved description that does not read, or
/// claims what loading would never have allowed, is described afresh.
#[test]
fn descriptions_are_cached_and_bad_entries_are_rebuilt() {
    let sb = Sandbox::new();
    sb.install(ECHO);
    // The shared cache has every component compiled (the first run fills
    // it); a private copy of it, without Echo's description, is this test's.
    toolhost(&sb, &["tools"]);
    let shared = toolhost_tests::shared_cache_dir().join("components");
    let cache = sb.root.join("cache");
    std::fs::create_dir_all(cache.join("components")).unwrap();
    for entry in std::fs::read_dir(&shared).unwrap().flatten() {
        let text = std::fs::read(entry.path()).unwrap_or_default();
        let is_echo_spec = entry.file_name().to_string_lossy().contains(".spec-")
            && String::from_utf8_lossy(&text).contains(r#""name":"Echo""#);
        if !is_echo_spec && !entry.file_name().to_string_lossy().starts_with('.') {
            let _ = std::fs::hard_link(entry.path(), cache.join("components").join(entry.file_name()));
        }
    }
    let tools = || {
        let out = toolhost_command(&sb)
            .env("TOOLHOST_CACHE_DIR", &cache)
            .env("RUST_LOG", "toolhost=debug")
            .arg("tools")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let described: Vec<String> = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.contains("described by its component"))
            .filter_map(|l| l.split("tool=").nth(1).map(str::to_string))
            .collect();
        (String::from_utf8_lossy(&out.stdout).into_owned(), described)
    };
    let (listed, described) = tools();
    assert!(listed.lines().any(|l| l.starts_with("Echo ") && l.contains("  Echoes its input.  [")), "{listed}");
    assert_eq!(described, ["Echo"], "only Echo had no saved description");
    assert_eq!(tools(), (listed.clone(), vec![]), "a second start instantiates nothing");

    let echo_spec = || {
        std::fs::read_dir(cache.join("components")).unwrap().flatten().map(|e| e.path()).find(|p| {
            p.to_string_lossy().contains(".spec-")
                && std::fs::read_to_string(p).is_ok_and(|t| t.contains(r#""name":"Echo""#))
        })
    };
    // Corrupt: not read, described again, saved again.
    let file = echo_spec().expect("Echo's description was saved");
    let saved = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, "{not json").unwrap();
    assert_eq!(tools(), (listed.clone(), vec!["Echo".to_string()]));
    // Tampered with: a description no load would have kept.
    let long = "x".repeat(50_000);
    let tampered = saved.replace("Echoes its input.", &long);
    assert_ne!(tampered, saved);
    std::fs::write(echo_spec().unwrap(), tampered).unwrap();
    assert_eq!(tools(), (listed, vec!["Echo".to_string()]), "the oversized saved description was not used");
}
