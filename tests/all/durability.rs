//! What must not be lost: a decision that cannot be written to the audit log
//! refuses its call; session state is on disk once a call's result is out,
//! whatever happens to the process next; one-shot calls leave nothing
//! behind that nobody can read.

use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};

#[test]
fn a_call_whose_decision_cannot_be_audited_is_refused() {
    let sb = Sandbox::new();
    sb.write("a.txt", "hello\n");
    let full = json!({"auditLog": "/dev/full"}).to_string();
    let r = call(&sb, "Read", &json!({"file_path": p(&sb.ws("a.txt"))}), &["--settings", &full]);
    let text = r.assert_error("Read was not run: its permission decision could not be recorded");
    assert!(text.contains("/dev/full") && text.contains("No space left"), "{text}");
    // A log that can be written gets one whole line per decision.
    let log = sb.ws("audit.jsonl");
    let ok = json!({"auditLog": log}).to_string();
    for _ in 0..3 {
        call(&sb, "Read", &json!({"file_path": p(&sb.ws("a.txt"))}), &["--settings", &ok]).assert_ok();
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let decisions: Vec<Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).filter(|v: &Value| v["event"] == "decision").collect();
    assert_eq!(decisions.len(), 3, "{text}");
}

#[test]
fn run_keeps_session_state_through_a_kill() {
    let sb = Sandbox::new();
    let file = sb.write("notes.txt", "one\n");
    let mut child = spawn_piped(&sb, &["run", "--session", "kept"]);
    let mut stdin = child.stdin.take().unwrap();
    let read = json!({"type": "tool_use", "id": "toolu_read", "name": "Read", "input": {"file_path": p(&file)}});
    writeln!(stdin, "{read}").unwrap();
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "run ended before the Read's result");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "tool_result" {
            assert_eq!(v["is_error"], false, "{v}");
            break;
        }
    }
    // SIGKILL: no exit path runs. The read was recorded before its result
    // went out, so an Edit in the same session may follow it.
    child.kill().unwrap();
    child.wait().unwrap();
    let edit = json!({"file_path": p(&file), "old_string": "one", "new_string": "two"});
    call(&sb, "Edit", &edit, &["--session", "kept", "--mode", "acceptEdits"]).assert_ok();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "two\n");
}

#[test]
fn serve_keeps_session_state_through_a_kill() {
    let sb = Sandbox::new();
    let file = sb.write("notes.txt", "one\n");
    let log = sb.ws("audit.jsonl");
    let settings = json!({"auditLog": log}).to_string();
    let args = ["--mode", "acceptEdits", "--settings", &settings, "serve", "--session", "kept"];
    let mut mcp = StdioMcp::start(&sb, &args);
    let r = mcp.call(1, "Read", json!({"file_path": p(&file)}));
    assert_eq!(r["result"]["isError"], false, "{r}");
    // SIGKILL right after the result: the read was on disk before it went out.
    mcp.child.kill().unwrap();
    mcp.child.wait().unwrap();
    let mut mcp = StdioMcp::start(&sb, &args);
    let r = mcp.call(2, "Edit", json!({"file_path": p(&file), "old_string": "one", "new_string": "two"}));
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "two\n");
    assert!(mcp.close().success());
    // The two servers named their calls apart: one decision line each.
    let text = std::fs::read_to_string(&log).unwrap();
    let ids: std::collections::BTreeSet<String> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["event"] == "decision")
        .map(|v| v["tool_use_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2, "{text}");
    // Over HTTP every client has a session of its own.
    let out = toolhost_command(&sb).args(["serve", "--http", "0", "--session", "kept"]).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--session"));
}

#[test]
fn one_shot_calls_leave_only_what_the_model_may_read() {
    let sb = Sandbox::new();
    sb.write("a.txt", "hello\n");
    for (tool, input) in [
        ("Read", json!({"file_path": p(&sb.ws("a.txt"))})),
        ("Bash", json!({"command": "ls; cat a.txt"})),
        ("Glob", json!({"pattern": "*"})),
    ] {
        call(&sb, tool, &input, &[]).assert_ok();
    }
    let left: Vec<_> = walk(&sb.data);
    assert!(left.is_empty(), "one-shot calls left {left:?}");
    // A result persisted for the model stays where the model was told.
    let big = call(&sb, "Bash", &json!({"command": "seq 1 20000"}), &[]).assert_ok();
    let path = big.split("saved to: ").nth(1).expect("a persisted result").lines().next().unwrap();
    assert_eq!(walk(&sb.data), [std::path::PathBuf::from(path)]);
}

#[test]
fn children_die_with_a_killed_host() {
    let sb = Sandbox::new();
    let marker = "durability-child-marker";
    for background in [false, true] {
        // `exec -a`: the command line the test looks for is the sleep's own.
        let input = json!({"command": format!("exec -a {marker} sleep 600"), "run_in_background": background});
        let mut child = toolhost_command(&sb)
            .args(["--mode", "bypassPermissions", "--child-confinement", "best-effort", "run"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{}", json!({"type": "tool_use", "id": "t", "name": "Bash", "input": input})).unwrap();
        wait_running(marker, std::time::Duration::from_secs(20));
        // SIGKILL: the host runs no cleanup; its children go with it anyway.
        child.kill().unwrap();
        child.wait().unwrap();
        // No child outlives its killed host.
        wait_gone(marker, std::time::Duration::from_secs(5));
    }
    // The killed hosts' session temporaries go at the next start.
    assert!(!temporaries(&sb.data).is_empty(), "the commands had temporary directories");
    call(&sb, "Glob", &json!({"pattern": "*"}), &[]).assert_ok();
    assert_eq!(temporaries(&sb.data), Vec::<std::path::PathBuf>::new());
}

#[test]
fn a_client_leaving_mid_call_leaves_nothing() {
    let sb = Sandbox::new();
    let marker = "durability-leaving-client-marker";
    let mut mcp = StdioMcp::start(&sb, &["--mode", "bypassPermissions", "--child-confinement", "best-effort", "serve"]);
    let command = format!("echo kept > \"$TMPDIR/x\"; exec -a {marker} sleep 600");
    mcp.start_call(1, "Bash", json!({"command": command}));
    wait_running(marker, std::time::Duration::from_secs(20));
    assert!(!temporaries(&sb.data).is_empty(), "the command had a temporary directory");
    let status = mcp.close();
    assert!(status.success(), "serve ended with {status}");
    // The command does not outlive its server.
    wait_gone(marker, std::time::Duration::from_secs(5));
    assert_eq!(temporaries(&sb.data), Vec::<std::path::PathBuf>::new());
}

/// The session temporary directories under `data`.
fn temporaries(data: &std::path::Path) -> Vec<std::path::PathBuf> {
    let sessions = std::fs::read_dir(data.join("sessions")).into_iter().flatten().flatten();
    sessions.map(|e| e.path().join("tmp")).filter(|t| t.is_dir()).collect()
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
