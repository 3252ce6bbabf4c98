//! WASI commands as tools: an ordinary Rust program built for
//! `wasm32-wasip2` (`tests/guests/command`, which exports `wasi:cli/run`
//! and knows nothing of toolhost) runs with the call's arguments and
//! standard input, answers its standard output, and fails with its status
//! and standard error, under the same grants, limits and pipeline as any
//! third-party tool.

use crate::support::*;
use serde_json::{Value, json};
use toolhost_tests::COMMAND;

/// The command installed as `tally.wasm`.
fn with_tally() -> (Sandbox, std::path::PathBuf) {
    let sb = Sandbox::new();
    let wasm = sb.plugins.join("tally.wasm");
    std::fs::copy(COMMAND, &wasm).unwrap();
    (sb, wasm)
}

fn tally(sb: &Sandbox, input: Value, extra: &[&str]) -> Run {
    let mut args = vec!["--mode", "bypassPermissions"];
    args.extend(extra);
    call(sb, "tally", &input, &args)
}

#[test]
fn a_wasi_command_runs_with_the_calls_arguments_and_stdin() {
    let (sb, _) = with_tally();
    let r = toolhost(&sb, &["tools", "--json"]);
    let tools: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
    let tool = tools.iter().find(|t| t["name"] == "tally").expect("the command is a tool named after its file");
    let schema = &tool["input_schema"];
    assert_eq!(schema["properties"]["args"]["items"], json!({"type": "string"}));
    assert_eq!(schema["properties"]["stdin"]["type"], json!("string"));
    assert_eq!(schema["additionalProperties"], json!(false));
    assert!(tool["description"].as_str().unwrap().contains("WASI command"), "{tool}");

    // Its arguments after its name, spaces kept; its stdin.
    assert_eq!(tally(&sb, json!({"args": ["args", "a b", "", "ü"]}), &[]).assert_ok(), "tally\nargs\na b\n\nü\n");
    assert_eq!(tally(&sb, json!({"args": ["wc"], "stdin": "one two\nthree\n"}), &[]).assert_ok(), "2 3 14\n");
    assert_eq!(tally(&sb, json!({"args": ["wc"]}), &[]).assert_ok(), "0 0 0\n", "no stdin is an empty one");
    assert_eq!(
        tally(&sb, json!({"args": ["quiet"]}), &[]).assert_ok(),
        "(The program succeeded and wrote nothing to standard output.)"
    );
    // `exit(0)` is a success, wherever the program calls it.
    assert_eq!(tally(&sb, json!({"args": ["exit0"]}), &[]).assert_ok(), "leaving early\n");
    // A failure: its status, then its stderr and stdout.
    let text = tally(&sb, json!({"args": ["fail"]}), &[]).assert_error("The program exited with status 1.");
    assert!(text.contains("Standard error:\ntally: something went wrong"), "{text}");
    assert!(text.contains("Standard output:\npartial output"), "{text}");
    let text = tally(&sb, json!({}), &[]).assert_error("status 1");
    assert!(text.contains("unknown action None"), "{text}");
    // Input that makes no run is refused before it starts.
    tally(&sb, json!({"args": "wc"}), &[]).assert_error("args");
    tally(&sb, json!({"args": ["a\u{0}b"]}), &[]).assert_error("NUL");
    tally(&sb, json!({"argv": []}), &[]).assert_error("argv");
    // A panic is a crash of the tool, its message kept.
    let text = tally(&sb, json!({"args": ["panic"]}), &[]).assert_error("tally crashed");
    assert!(text.contains("tally was asked to panic"), "{text}");
}

#[test]
fn a_command_is_stopped_by_the_same_limits_and_the_host_serves_on() {
    let (sb, _) = with_tally();
    tally(&sb, json!({"args": ["spin"]}), &["--timeout-ms", "300"]).assert_error("tally timed out after 300 ms");
    tally(&sb, json!({"args": ["sleep"]}), &["--timeout-ms", "300"]).assert_error("tally timed out after 300 ms");
    tally(&sb, json!({"args": ["allocate"]}), &["--memory-mib", "64"])
        .assert_error("exceeded its memory limit of 64 MiB");
    // Output past 8 MiB is counted and dropped; the answer says so, and is
    // kept out of the model's context, whole on disk.
    let text = tally(&sb, json!({"args": ["flood", "12000000"]}), &[]).assert_ok();
    assert!(text.starts_with("<persisted-output>"), "{}", &text[..200.min(text.len())]);
    let saved = text.lines().find_map(|l| l.split("saved to: ").nth(1)).expect("the file it is saved to");
    let whole = std::fs::read_to_string(saved.trim()).unwrap();
    assert!(whole.len() < 8_400_000, "{}", whole.len());
    assert!(whole.ends_with("a run keeps the first 8 MiB]"), "{}", &whole[whole.len() - 200..]);
    // In one stream, each fault is one error result and the next call is
    // answered; over MCP too.
    let lines = [
        json!({"type": "tool_use", "id": "a", "name": "tally", "input": {"args": ["spin"]}}),
        json!({"type": "tool_use", "id": "b", "name": "tally", "input": {"args": ["wc"], "stdin": "x"}}),
    ];
    let out = run_stream(&sb, &["--mode", "bypassPermissions", "--timeout-ms", "300"], &lines);
    let by_id = |id: &str| out.iter().find(|v| v["tool_use_id"] == id).unwrap_or_else(|| panic!("no {id}: {out:?}"));
    assert_eq!(by_id("a")["is_error"], json!(true));
    assert_eq!(by_id("b")["content"][0]["text"], json!("1 1 1\n"), "{out:?}");
    with_served_args(&sb, &["--mode", "bypassPermissions", "--timeout-ms", "300"], |client, _| async move {
        let r = client.call_tool(mcp_call("tally", json!({"args": ["spin"]}))).await.unwrap();
        assert_eq!(r.is_error, Some(true));
        let r = client.call_tool(mcp_call("tally", json!({"args": ["wc"], "stdin": "a b"}))).await.unwrap();
        assert_eq!(mcp_text(&r), "1 2 3\n");
        client
    });
}

#[test]
fn a_command_reads_and_writes_only_where_it_was_granted() {
    let (sb, wasm) = with_tally();
    sb.write("notes.txt", "secret notes");
    let notes = p(&sb.ws("notes.txt"));
    let copy = p(&sb.ws("copy.txt"));
    // Nothing requested, nothing granted: no file, no variable.
    let text = tally(&sb, json!({"args": ["cat", notes]}), &[]).assert_error("status 1");
    assert!(text.contains("No such file or directory"), "{text}");
    assert!(!tally(&sb, json!({"args": ["env"]}), &[]).assert_ok().contains("HOME="));
    // Its policy file requests reading the workspace and HOME; the
    // operator grants reading alone.
    let policy = "permissions:\n  storage:\n    allow:\n      - uri: \"fs://.\"\n        access: [\"read\", \"write\"]\n  environment:\n    allow:\n      - key: \"HOME\"\n";
    std::fs::write(wasm.with_extension("policy.yaml"), policy).unwrap();
    tally(&sb, json!({"args": ["cat", notes]}), &[]).assert_error("No such file");
    let grant = json!({"toolGrants": {"tally": {"workspace": "read-only", "env": ["HOME"]}}}).to_string();
    let granted = ["--settings", grant.as_str()];
    assert_eq!(tally(&sb, json!({"args": ["cat", notes]}), &granted).assert_ok(), "secret notes");
    assert!(tally(&sb, json!({"args": ["env"]}), &granted).assert_ok().contains("HOME="));
    tally(&sb, json!({"args": ["cat", "/etc/hostname"]}), &granted).assert_error("No such file");
    let text = tally(&sb, json!({"args": ["write", copy], "stdin": "x"}), &granted).assert_error("status 1");
    assert!(!sb.ws("copy.txt").exists(), "{text}");
    let grant = json!({"toolGrants": {"tally": {"workspace": "read-write"}}}).to_string();
    let r = tally(&sb, json!({"args": ["write", copy], "stdin": "copied"}), &["--settings", &grant]);
    assert_eq!(r.assert_ok(), "wrote 6 bytes\n");
    assert_eq!(std::fs::read_to_string(sb.ws("copy.txt")).unwrap(), "copied");
}

#[test]
fn a_command_is_named_and_described_by_its_manifest_or_at_install() {
    let sb = Sandbox::new();
    let source = sb.root.join("tally.wasm");
    std::fs::copy(COMMAND, &source).unwrap();
    let r = toolhost(&sb, &["check", &p(&source)]);
    assert!(r.stdout.contains("is the tool `tally`") && r.stdout.contains("a WASI command"), "{r:?}");
    // A manifest beside it names it.
    std::fs::write(sb.root.join("tally.tool.yaml"), "name: count\ndescription: Counts what it is given.\n").unwrap();
    let r = toolhost(&sb, &["check", &p(&source)]);
    assert!(r.stdout.contains("is the tool `count`") && r.stdout.contains("Counts what it is given."), "{r:?}");
    std::fs::write(sb.root.join("tally.tool.yaml"), "name: two words\n").unwrap();
    let r = toolhost(&sb, &["check", &p(&source)]);
    assert!(r.stdout.contains("tally.tool.yaml does not read") && r.stdout.contains("not a valid tool name"), "{r:?}");
    std::fs::remove_file(sb.root.join("tally.tool.yaml")).unwrap();
    // Install's flags name it, and the manifest goes beside it.
    let r = toolhost(&sb, &["install", &p(&source), "--name", "word-count", "--description", "Counts words.", "--yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("tool:            word-count: Counts words."), "{}", r.stdout);
    assert!(r.stdout.contains("a WASI command"), "{}", r.stdout);
    assert!(sb.plugins.join("word-count.wasm").exists() && sb.plugins.join("word-count.tool.yaml").exists());
    let r = call(&sb, "word-count", &json!({"args": ["wc"], "stdin": "a"}), &["--allow", "word-count"]);
    assert_eq!(r.assert_ok(), "1 1 1\n");
    // A component of functions takes no name.
    let plain = sb.root.join("plain.wasm");
    std::fs::copy(toolhost_tests::PLAIN, &plain).unwrap();
    let r = toolhost(&sb, &["install", &p(&plain), "--name", "x", "--yes"]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("--name and --description name a WASI command"), "{r:?}");
    let r = toolhost(&sb, &["uninstall", "word-count"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(!sb.plugins.join("word-count.wasm").exists() && !sb.plugins.join("word-count.tool.yaml").exists());
}
