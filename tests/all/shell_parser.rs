//! The shell parser is contained: commands that made tree-sitter-bash's C
//! read out of bounds (and killed the host when it ran inside it) are
//! answered through every front and from a guest, and the host goes on.

use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};

/// Commands that crashed the host when the parser ran in its address space:
/// `{` before a 4-byte UTF-8 character (tree-sitter-bash issue #337), alone
/// and inside longer commands.
const CRASHERS: &[&str] = &["{\u{E0000}", "{\u{1F600}", "echo a; {\u{10FFFF}; rm -rf x", "ls | {\u{E0000} && cat"];

#[test]
fn crashing_commands_are_answered_by_call() {
    let sb = Sandbox::new();
    for command in CRASHERS {
        let r = call(&sb, "Bash", &json!({ "command": command }), &[]);
        // Unparsable, so never read-only: it asks, and `call` cannot ask.
        r.assert_error("Permission to use Bash was denied");
        assert!(r.text().contains("could not be parsed"), "{command:?}: {r:?}");
    }
    // Run anyway: the spawn-time check parses them again, bash runs what
    // it can of them, and the host answers each.
    for command in CRASHERS {
        let r = call(&sb, "Bash", &json!({ "command": command }), &["--mode", "bypassPermissions"]);
        assert!(matches!(r.code, 0 | 1), "{command:?}: {r:?}");
        assert_eq!(r.is_error(), r.code == 1, "{r:?}");
    }
}

#[test]
fn crashing_commands_are_answered_by_run_and_the_stream_goes_on() {
    let sb = Sandbox::new();
    let mut child = spawn_piped(&sb, &["--child-confinement", "best-effort", "run"]);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // One call at a time (a failed Bash call cancels its siblings).
    let mut result = |id: &str, command: &str| -> Value {
        let line = json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": command}});
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "the stream ended before {id}'s result");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["type"] == "tool_result" {
                assert_eq!(v["tool_use_id"], id, "{v}");
                return v;
            }
        }
    };
    for (i, command) in CRASHERS.iter().enumerate() {
        let r = result(&format!("toolu_{i}"), command);
        assert_eq!(r["is_error"], true, "{r}");
        assert!(content_text(&r).contains("could not be parsed"), "{r}");
    }
    let last = result("toolu_after", "echo still here");
    assert_eq!(last["is_error"], false, "{last}");
    assert!(content_text(&last).contains("still here"), "{last}");
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn crashing_commands_are_answered_by_serve_and_the_server_goes_on() {
    let sb = Sandbox::new();
    let mut mcp = StdioMcp::start(&sb, &["--allow", "Bash", "--child-confinement", "best-effort", "serve"]);
    let mut id = 0;
    for command in CRASHERS.iter().copied().chain(["echo still here"]) {
        id += 1;
        let r = mcp.call(id, "Bash", json!({"command": command}));
        let text = r["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
        if command == "echo still here" {
            assert_eq!(r["result"]["isError"], false, "{r}");
            assert!(text.contains("still here"), "{r}");
        } else {
            // Allowed by the rule, so bash runs what it can of it.
            assert!(r["result"]["isError"].is_boolean(), "{command:?}: {r}");
        }
    }
    let status = mcp.close();
    assert!(status.success(), "{status:?}");
}

#[test]
fn a_guest_handing_the_parser_a_crashing_command_gets_an_answer() {
    let sb = Sandbox::new();
    sb.install(toolhost_tests::ADVERSARY);
    for command in CRASHERS {
        let r = call(&sb, "Adversary", &json!({"action": "shell", "path": command}), &["--allow", "Adversary"]);
        let text = r.assert_ok();
        assert!(text.contains("parse_error=true") && text.contains("read_only=false"), "{command:?}: {text}");
    }
    let r = call(&sb, "Adversary", &json!({"action": "shell", "path": "git status"}), &["--allow", "Adversary"]);
    assert!(r.assert_ok().contains("parse_error=false commands=1 read_only=true"), "{r:?}");
}
