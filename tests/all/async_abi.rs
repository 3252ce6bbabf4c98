//! Components that use the component-model async ABI (futures, streams,
//! subtasks, `yield`, its built-ins inside the contract's synchronous
//! exports) load and run beside synchronous ones, and every state of the
//! ABI a guest can get stuck in ends: at once with a clear error where
//! nothing could ever complete it, at the deadline, at an interrupt or at
//! the memory limit where it keeps running. The host goes on serving.

use crate::support::*;
use serde_json::{Value, json};
use std::io::Write;
use std::time::{Duration, Instant};
use toolhost_tests::ASYNC_ADVERSARY;

/// Bound on a stopped call beyond its limit (process start and a loaded CI
/// machine included); a guest that ignored its limit would never end.
const SLACK: Duration = Duration::from_secs(8);

fn act(action: &str) -> Value {
    json!({"action": action, "n": 5000})
}

fn tool_use(id: &str, action: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "AsyncAdversary", "input": act(action)})
}

#[test]
fn an_async_abi_component_answers_over_call_run_and_serve() {
    let sb = Sandbox::new();
    sb.install(ASYNC_ADVERSARY);
    let check = toolhost(&sb, &["check", ASYNC_ADVERSARY]);
    assert_eq!(check.code, 0, "{check:?}");

    assert_eq!(call(&sb, "AsyncAdversary", &act("ok"), &[]).assert_ok(), "3 steps done");

    let out = run_stream(&sb, &[], &[tool_use("a", "ok"), tool_use("b", "ok")]);
    let results: Vec<&Value> = out.iter().filter(|v| v["type"] == "tool_result").collect();
    assert_eq!(results.len(), 2, "{out:?}");
    for r in results {
        assert_eq!(r["is_error"], json!(false), "{r}");
        assert_eq!(content_text(r), "3 steps done");
    }
    // Its progress reports, made between yields, reach the stream.
    assert!(out.iter().any(|v| v["type"] == "progress" && v.to_string().contains("step 2")), "{out:?}");

    with_served(&sb, |client, progress| async move {
        let r = client.call_tool(mcp_call("AsyncAdversary", act("ok"))).await.unwrap();
        assert_eq!(r.is_error, Some(false), "{r:?}");
        assert_eq!(mcp_text(&r), "3 steps done");
        let _ = progress;
        client
    });
}

/// What can never complete ends at once, with what the guest did; what
/// runs on is stopped by its limits; after each, the next call is served.
#[test]
fn every_async_state_a_guest_can_get_stuck_in_ends_and_the_host_serves_on() {
    let sb = Sandbox::new();
    sb.install(ASYNC_ADVERSARY);
    let _ = toolhost(&sb, &["tools"]);
    let cases: &[(&str, &str)] = &[
        ("future-never", "waited on a future, stream or task of its own"),
        ("stream-unread", "waited on a future, stream or task of its own"),
        ("stream-unclosed", "waited on a future, stream or task of its own"),
        ("subtasks", "waited on a future, stream or task of its own"),
        ("leave-pending", "waited on a future, stream or task of its own"),
        ("yield-forever", "AsyncAdversary timed out after 1500 ms and was stopped."),
        ("allocate", "AsyncAdversary exceeded its memory limit of 64 MiB and was stopped."),
    ];
    std::thread::scope(|s| {
        let runs: Vec<_> = cases
            .iter()
            .map(|&(action, want)| {
                let sb = &sb;
                s.spawn(move || {
                    let started = Instant::now();
                    let args = ["--timeout-ms", "1500", "--memory-mib", "64"];
                    let run = call(sb, "AsyncAdversary", &act(action), &args);
                    (action, want, run, started.elapsed())
                })
            })
            .collect();
        for r in runs {
            let (action, want, run, took) = r.join().unwrap();
            let text = run.assert_error(want);
            assert!(took < Duration::from_millis(1500) + SLACK, "{action} took {took:?}: {text}");
        }
    });
    // One `run` session: each stuck call is answered, and the calls after
    // it are served.
    let lines: Vec<Value> = ["future-never", "ok", "stream-unread", "ok", "subtasks", "ok"]
        .iter()
        .enumerate()
        .map(|(i, a)| tool_use(&format!("c{i}"), a))
        .collect();
    let out = run_stream(&sb, &["--timeout-ms", "1500"], &lines);
    let results: Vec<&Value> = out.iter().filter(|v| v["type"] == "tool_result").collect();
    assert_eq!(results.len(), lines.len(), "{out:?}");
    for r in results {
        let ok = r["tool_use_id"] == "c1" || r["tool_use_id"] == "c3" || r["tool_use_id"] == "c5";
        assert_eq!(r["is_error"], json!(!ok), "{r}");
    }
}

#[test]
fn an_interrupt_stops_a_guest_yielding_forever() {
    let sb = Sandbox::new();
    sb.install(ASYNC_ADVERSARY);
    let _ = toolhost(&sb, &["tools"]);
    let started = Instant::now();
    let mut child = spawn_piped(&sb, &["run"]);
    let mut stdin = child.stdin.take().unwrap();
    for i in 0..3 {
        writeln!(stdin, "{}", tool_use(&format!("y{i}"), "yield-forever")).unwrap();
    }
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    writeln!(stdin, "{}", json!({"type": "interrupt"})).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let results: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 3, "{text}");
    for r in &results {
        assert_eq!(r["is_error"], json!(true), "{r}");
    }
    assert!(started.elapsed() < Duration::from_millis(500) + SLACK, "took {:?}", started.elapsed());
}
