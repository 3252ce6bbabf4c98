//! `toolhost run`: JSON lines in, JSON lines out, through the real binary.

use crate::support::*;
use serde_json::{Value, json};
use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Runs `toolhost run` with `lines` on stdin, closing it after `pause_after`
/// lines have been written and `pause` has passed (for interrupts).
fn run(sb: &Sandbox, lines: &[String], pause: Option<(usize, Duration)>) -> Vec<Value> {
    sb.install(toolhost_tests::ECHO);
    sb.install(toolhost_tests::SLEEPER);
    let _ = toolhost(sb, &["tools"]); // warm the shared cache
    let mut child = spawn_piped(sb, &["--child-confinement", "best-effort", "run"]);
    let mut stdin = child.stdin.take().unwrap();
    for (i, line) in lines.iter().enumerate() {
        if let Some((at, wait)) = pause
            && at == i
        {
            std::thread::sleep(wait);
        }
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

fn results(out: &[Value]) -> Vec<&Value> {
    out.iter().filter(|v| v["type"] == "tool_result").collect()
}

#[test]
fn tool_use_lines_run_and_results_come_in_order() {
    let sb = Sandbox::new();
    let lines = [
        json!({"type": "tool_use", "id": "slow", "name": "Sleeper", "input": {"label": "slow", "ms": 300, "safe": true, "progress_ms": 100}}),
        json!({"type": "tool_use", "id": "fast", "name": "Echo", "input": {"text": "hi"}}),
        json!({"type": "tool_use", "id": "bad", "name": "Echo", "input": {"nope": 1}}),
        json!({"type": "tool_use", "id": "gone", "name": "NoSuchTool", "input": {}}),
    ]
    .map(|v| v.to_string());
    let out = run(&sb, &lines, None);
    let r = results(&out);
    let order: Vec<&str> = r.iter().map(|v| v["tool_use_id"].as_str().unwrap()).collect();
    assert_eq!(order, ["slow", "fast", "bad", "gone"]);
    assert_eq!(r[1]["content"], json!([{"type": "text", "text": "hi"}]));
    assert_eq!((r[0]["is_error"].as_bool(), r[1]["is_error"].as_bool()), (Some(false), Some(false)));
    assert_eq!((r[2]["is_error"].as_bool(), r[3]["is_error"].as_bool()), (Some(true), Some(true)));
    let first_progress = out.iter().position(|v| v["type"] == "progress" && v["tool_use_id"] == "slow").unwrap();
    let slow_result = out.iter().position(|v| v["tool_use_id"] == "slow" && v["type"] == "tool_result").unwrap();
    assert!(first_progress < slow_result, "progress before the result: {out:?}");
}

#[test]
fn a_messages_stream_with_the_input_split_across_deltas() {
    let sb = Sandbox::new();
    let input = r#"{"text": "split \"across\" many deltas ✓"}"#;
    let mut lines = vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "role": "assistant"}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me echo."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Echo", "input": {}}}),
    ];
    let chars: Vec<char> = input.chars().collect();
    for piece in chars.chunks(2) {
        let piece: String = piece.iter().collect();
        lines.push(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": piece}}));
    }
    lines.push(json!({"type": "content_block_stop", "index": 1}));
    lines.push(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}));
    lines.push(json!({"type": "message_stop"}));
    let out = run(&sb, &lines.iter().map(Value::to_string).collect::<Vec<_>>(), None);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["tool_use_id"], "toolu_1");
    assert_eq!(out[0]["content"][0]["text"], "split \"across\" many deltas ✓");
}

#[test]
fn an_openai_message_with_tool_calls() {
    let sb = Sandbox::new();
    let message = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "Echo", "arguments": "{\"text\":\"one\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "Echo", "arguments": "{\"text\":"}}
    ]});
    let out = run(&sb, &[message.to_string()], None);
    let r = results(&out);
    assert_eq!(r[0]["content"][0]["text"], "one");
    assert_eq!(r[1]["tool_use_id"], "call_b");
    assert!(r[1]["is_error"] == true && r[1]["content"][0]["text"].as_str().unwrap().contains("not valid JSON"));
}

#[test]
fn malformed_lines_name_their_number_and_the_stream_goes_on() {
    let sb = Sandbox::new();
    let lines = [
        "{this is not json".to_string(),
        json!({"type": "tool_use", "name": "Echo"}).to_string(),
        json!({"type": "tool_use", "id": "ok", "name": "Echo", "input": {"text": "still here"}}).to_string(),
    ];
    let out = run(&sb, &lines, None);
    let errors: Vec<&Value> = out.iter().filter(|v| v["type"] == "error").collect();
    assert_eq!(errors.iter().map(|e| e["line"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2], "{out:?}");
    assert_eq!(results(&out)[0]["content"][0]["text"], "still here");
}

#[test]
fn an_interrupt_line_stops_a_running_command() {
    let sb = Sandbox::new();
    let lines = [
        json!({"type": "tool_use", "id": "long", "name": "Bash", "input": {"command": "sleep 20"}}).to_string(),
        json!({"type": "interrupt"}).to_string(),
    ];
    let started = Instant::now();
    let out = run(&sb, &lines, Some((1, Duration::from_millis(300))));
    let r = results(&out);
    assert!(r[0]["is_error"] == true && r[0]["content"][0]["text"].as_str().unwrap().contains("Interrupted"));
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn the_reader_never_waits_on_a_tool() {
    // A call runs (not concurrency-safe), so the next one's concurrency
    // safety is asked first, and its tool spins there until the 1 s limit.
    // The reader goes on meanwhile: the bad line after it is answered at once.
    let sb = Sandbox::new();
    sb.install(toolhost_tests::SLEEPER);
    sb.install(toolhost_tests::ADVERSARY);
    let _ = toolhost(&sb, &["tools"]);
    let mut child = toolhost_command(&sb)
        .args(["--allow", "Adversary", "--allow", "Sleeper", "run"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run toolhost");
    let mut stdin = child.stdin.take().unwrap();
    let lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let _ = tx.send((Instant::now(), line));
        }
    });
    let busy = json!({"type": "tool_use", "id": "busy", "name": "Sleeper",
        "input": {"label": "busy", "ms": 2500, "progress_ms": 100}});
    writeln!(stdin, "{busy}").unwrap();
    stdin.flush().unwrap();
    // It runs once it reports progress.
    let (_, first) = rx.recv_timeout(Duration::from_secs(20)).expect("busy's progress");
    assert!(first.contains("busy at"), "{first}");
    let spinner = json!({"type": "tool_use", "id": "spin", "name": "Adversary", "input": {"action": "loop-classify"}});
    writeln!(stdin, "{spinner}").unwrap();
    stdin.flush().unwrap();
    let written = Instant::now();
    writeln!(stdin, "not json").unwrap();
    stdin.flush().unwrap();
    // Past busy's progress, the answer to the bad line.
    let (at, line) = loop {
        let (at, line) = rx.recv_timeout(Duration::from_secs(10)).expect("an answer to the bad line");
        if !line.contains("busy at") {
            break (at, line);
        }
    };
    assert!(line.contains("\"type\":\"error\""), "{line}");
    let waited = at - written;
    assert!(waited < toolhost::CLASSIFY_TIMEOUT / 2, "the reader waited {waited:?} for the classification");
    drop(stdin);
    let rest: Vec<String> = rx.iter().map(|(_, l)| l).collect();
    assert!(
        rest.iter().any(|l| l.contains("\"tool_use_id\":\"spin\"") && l.contains("\"is_error\":false")),
        "{rest:?}"
    );
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_process_without_a_shared_store_holds_quotas_itself_and_audits_each_refusal() {
    let sb = Sandbox::new();
    let file = sb.write("notes.txt", "one\n");
    let audit = sb.root.join("audit.jsonl");
    let settings = json!({"auditLog": p(&audit), "quotas": [{"callsPerMinute": 2}]}).to_string();
    let read = |id: &str| tool_use_line(id, "Read", json!({"file_path": p(&file)}));
    let out = run_stream(&sb, &["--settings", &settings], &[read("r1"), read("r2"), read("r3")]);
    let results: Vec<&Value> = out.iter().filter(|v| v["type"] == "tool_result").collect();
    assert_eq!(results.len(), 3, "{out:?}");
    // The three Reads may run at once, so which of them comes third to the
    // quota is the workers' race: exactly one is refused, and audited.
    let refused: Vec<&&Value> = results.iter().filter(|r| r["is_error"] == json!(true)).collect();
    assert_eq!(refused.len(), 1, "{results:?}");
    let text = content_text(refused[0]);
    assert!(text.starts_with("Over quota: 2 calls a minute for calls without an identity"), "{text}");
    assert!(text.contains("--settings JSON") && text.contains("try again in"), "{text}");
    let lines: Vec<Value> = audit_lines(&audit).into_iter().filter(|l| l["source"] == "quota").collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!((&lines[0]["decision"], &lines[0]["quota"]), (&json!("deny"), &json!("callsPerMinute")));
    assert_eq!(lines[0]["tool_use_id"], refused[0]["tool_use_id"]);
}
