//! A guest on the component-model async ABI that calls WASI 0.2's functions
//! which block in the host (its stdout and stderr, written small, large,
//! flushed or not; a clock's pollable; `poll`; stdin; the filesystem; a
//! socket; `wasi:http`) is answered under `call`, `run` and `serve`, each
//! with a second call after it, within its limits; and a fault of the host
//! itself (an import that panics, in the test build) ends that one call
//! with an error result in every front, the next call answered.

use crate::support::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use toolhost_tests::{ADVERSARY, ASYNC_ADVERSARY};

/// The `log` line on which the test build's `log` import panics
/// (`toolhost::imports::progress::FAULT_INJECTION_PANIC`).
const PANIC: &str = "toolhost:fault-injection:panic";

/// What a host fault's error result says.
const HOST_FAILED: &str = "toolhost itself failed while running this";

/// Each WASI 0.2 action of the async adversary, its input and the text of
/// its answer.
fn blocking_cases() -> Vec<(Value, String)> {
    let case = |input: Value, want: &str| (input, want.to_string());
    vec![
        case(json!({"action": "print", "n": 3}), "printed 3 lines"),
        // Past what is kept for the log (64 KiB): dropped, never a failure.
        case(json!({"action": "print", "n": 20000}), "printed 20000 lines"),
        case(json!({"action": "eprint", "n": 3}), "printed 3 lines to stderr"),
        case(json!({"action": "write-flush", "n": 1_000_000}), "wrote 1000000 bytes: Ok(())"),
        case(json!({"action": "write-unflushed", "n": 100}), "wrote 100 bytes, unflushed"),
        case(json!({"action": "sleep", "n": 30}), "slept 30 ms"),
        case(json!({"action": "poll", "n": 20}), "ready: [1]"),
        case(json!({"action": "stdin"}), "read 0 bytes from stdin: Ok(0)"),
        case(json!({"action": "list-dir"}), "cannot list:"),
        case(json!({"action": "connect", "target": "127.0.0.1:9"}), "connect: Err("),
        case(json!({"action": "http", "target": "127.0.0.1:9"}), "http: Err("),
    ]
}

fn async_use(id: &str, input: &Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": "AsyncAdversary", "input": input})
}

#[test]
fn wasi_02_blocking_calls_on_the_async_abi_are_answered_in_every_front() {
    let sb = Sandbox::new();
    sb.install(ASYNC_ADVERSARY);
    let ok = json!({"action": "ok"});
    // `call`, and what it printed in the debug log.
    for (input, want) in blocking_cases() {
        let out = toolhost_command(&sb)
            .env("RUST_LOG", "toolhost=debug")
            .args(["call", "AsyncAdversary", &input.to_string()])
            .output()
            .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{input}: exit {:?}\n{stdout}\n{stderr}", out.status.code());
        assert!(stdout.contains(&want), "{input}: {stdout}\n{stderr}");
        if input["action"] == "print" {
            assert!(stderr.contains("line 2 of"), "{input}: the guest's stdout reaches the log: {stderr}");
        }
        if input["action"] == "print" && input["n"] == 20000 {
            assert!(stderr.contains("more bytes past the 65536-byte cap not kept"), "{stderr}");
        }
        if input["action"] == "eprint" {
            assert!(stderr.contains("error line 2 of 3"), "{stderr}");
        }
    }
    // One `run` stream: each action, then a plain call.
    let cases = blocking_cases();
    let lines: Vec<Value> = cases
        .iter()
        .enumerate()
        .flat_map(|(i, (input, _))| [async_use(&format!("a{i}"), input), async_use(&format!("b{i}"), &ok)])
        .collect();
    let out = run_stream(&sb, &[], &lines);
    let results: Vec<&Value> = out.iter().filter(|v| v["type"] == "tool_result").collect();
    assert_eq!(results.len(), lines.len(), "{out:?}");
    for (i, (input, want)) in cases.iter().enumerate() {
        let of = |id: String| results.iter().find(|r| r["tool_use_id"] == id).copied().unwrap();
        let (a, b) = (of(format!("a{i}")), of(format!("b{i}")));
        assert!(a["is_error"] == false && content_text(a).contains(want.as_str()), "{input}: {a}");
        assert_eq!((b["is_error"].clone(), content_text(b)), (json!(false), "3 steps done".into()), "after {input}");
    }
    // `serve`: each action, then a plain call.
    with_served(&sb, |client, _progress| async move {
        for (input, want) in blocking_cases() {
            let r = client.call_tool(mcp_call("AsyncAdversary", input.clone())).await.expect("answered");
            assert!(r.is_error == Some(false) && mcp_text(&r).contains(&want), "{input}: {r:?}");
            let r = client.call_tool(mcp_call("AsyncAdversary", json!({"action": "ok"}))).await.expect("answered");
            assert_eq!(mcp_text(&r), "3 steps done", "after {input}");
        }
        client
    });
}

/// Waiting in WASI 0.2 from inside the async ABI holds every limit: the
/// deadline, an interrupt.
#[test]
fn a_wasi_02_wait_on_the_async_abi_ends_at_the_deadline_and_at_an_interrupt() {
    let sb = Sandbox::new();
    sb.install(ASYNC_ADVERSARY);
    for action in ["sleep-forever", "poll"] {
        let input = json!({"action": action, "n": 3_600_000});
        let started = Instant::now();
        let r = call(&sb, "AsyncAdversary", &input, &["--timeout-ms", "1000"]);
        r.assert_error("AsyncAdversary timed out after 1000 ms and was stopped.");
        assert!(started.elapsed() < Duration::from_secs(9), "{action}: {:?}", started.elapsed());
    }
    // An interrupt in `run` stops it, and the stream goes on.
    let mut child = spawn_piped(&sb, &["run"]);
    let mut stdin = child.stdin.take().unwrap();
    use std::io::{BufRead as _, Write as _};
    writeln!(stdin, "{}", async_use("w", &json!({"action": "sleep-forever"}))).unwrap();
    stdin.flush().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    std::thread::sleep(Duration::from_millis(300));
    writeln!(stdin, "{}", json!({"type": "interrupt"})).unwrap();
    writeln!(stdin, "{}", async_use("after", &json!({"action": "ok"}))).unwrap();
    drop(stdin);
    let mut answered = Vec::new();
    for line in lines.by_ref().map_while(Result::ok) {
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "tool_result" {
            answered.push(v);
        }
    }
    assert!(child.wait().unwrap().success());
    let of = |id: &str| answered.iter().find(|r| r["tool_use_id"] == id).cloned().unwrap_or_default();
    assert_eq!(of("w")["is_error"], json!(true), "{answered:?}");
    assert_eq!(content_text(&of("after")), "3 steps done", "{answered:?}");
}

/// The test build's `log` import panics on one line: the call that met it
/// ends with an error naming the fault, and the next call is answered, for
/// a synchronous guest and one on the async ABI, in `call`, `run`, `serve`
/// over stdio and HTTP, and the library.
#[test]
fn a_panic_in_the_host_is_one_error_result_in_every_front() {
    let sb = Sandbox::new();
    sb.install(ADVERSARY);
    sb.install(ASYNC_ADVERSARY);
    let panic = json!({"action": "log", "message": PANIC});
    let tools = [("Adversary", "fine"), ("AsyncAdversary", "3 steps done")];
    for (tool, _) in tools {
        let r = call(&sb, tool, &panic, &[]);
        assert_eq!(r.code, 1, "an error result, not a crash: {r:?}");
        r.assert_error(HOST_FAILED);
        assert!(r.stderr.contains("the log import panicked on purpose"), "the panic is in the log: {}", r.stderr);
    }
    // `run`: the panicking call, then others, twice over.
    let mut lines = Vec::new();
    for (tool, _) in tools {
        for round in 0..2 {
            lines.push(json!({"type": "tool_use", "id": format!("{tool}-p{round}"), "name": tool, "input": panic}));
            lines.push(
                json!({"type": "tool_use", "id": format!("{tool}-ok{round}"), "name": tool, "input": {"action": "ok"}}),
            );
        }
    }
    let out = run_stream(&sb, &[], &lines);
    let results: Vec<&Value> = out.iter().filter(|v| v["type"] == "tool_result").collect();
    assert_eq!(results.len(), lines.len(), "{out:?}");
    for (tool, fine) in tools {
        for round in 0..2 {
            let of = |id: String| results.iter().find(|r| r["tool_use_id"] == id).copied().unwrap();
            let failed = of(format!("{tool}-p{round}"));
            assert!(failed["is_error"] == true && content_text(failed).contains(HOST_FAILED), "{failed}");
            assert_eq!(content_text(of(format!("{tool}-ok{round}"))), fine);
        }
    }
    // `serve` over stdio.
    with_served(&sb, |client, _progress| async move {
        a_panic_then_an_answer(&client, tools).await;
        client
    });
    // `serve` over HTTP, with rmcp's client.
    let mut server = toolhost_command(&sb)
        .args(["serve", "--http", "0"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve --http");
    let url = toolhost_tests::serving_url(&mut server, "toolhost serve --http");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        use rmcp::ServiceExt as _;
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url);
        let client = ().serve(transport).await.expect("initialize");
        a_panic_then_an_answer(&client, tools).await;
        client.cancel().await.expect("close");
    });
    let _ = server.kill();
    let _ = server.wait();
    // The library.
    let host = crate::support::host_builder(&sb)
        .plugins_dir(Some(sb.plugins.clone()))
        .mode(toolhost::PermissionMode::BypassPermissions)
        .build()
        .expect("host");
    let session = host.ephemeral_session();
    for (tool, fine) in tools {
        let call = |id: &str, input: Value| {
            let tool_use = toolhost::ToolUse { id: id.into(), name: tool.into(), input };
            host.call(&session, &tool_use, &toolhost::CallOptions::default())
        };
        let failed = call("p", panic.clone());
        assert!(failed.is_error && failed.text().contains(HOST_FAILED), "{}", failed.text());
        assert_eq!(call("ok", json!({"action": "ok"})).text(), fine);
    }
}

/// Over MCP: for each tool, a call whose import panics is an error result,
/// and the call after it is answered.
async fn a_panic_then_an_answer(client: &rmcp::service::Peer<rmcp::RoleClient>, tools: [(&'static str, &str); 2]) {
    for (tool, fine) in tools {
        let r = client.call_tool(mcp_call(tool, json!({"action": "log", "message": PANIC}))).await.expect("answered");
        assert!(r.is_error == Some(true) && mcp_text(&r).contains(HOST_FAILED), "{r:?}");
        let r = client.call_tool(mcp_call(tool, json!({"action": "ok"}))).await.expect("answered");
        assert_eq!(mcp_text(&r), fine);
    }
}
