//! Deadlines and cancellation hold wherever a guest is: spinning in wasm or
//! waiting inside a host call (a clock, `poll`, a stream), in every export
//! the host calls during a call.

use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};
use toolhost_tests::ADVERSARY;

/// The ways the adversary waits (see its `wait_if_asked`).
const WAYS: &[&str] = &["sleep", "block", "poll", "naps", "spin"];

/// Bound on how long a stopped call may take beyond its limit, process
/// start and a loaded CI machine included. A guest that ignored its limit
/// would wait an hour.
const SLACK: Duration = Duration::from_secs(8);

fn wait(export: &str, how: &str) -> Value {
    json!({"action": "wait", "in": export, "how": how})
}

#[test]
fn a_waiting_guest_is_stopped_at_its_deadline_in_every_export() {
    let sb = Sandbox::new();
    sb.install(ADVERSARY);
    let _ = toolhost(&sb, &["tools"]);
    let cases: Vec<(&str, &str)> = ["call", "validate", "permissions", "read-only"]
        .into_iter()
        .flat_map(|export| WAYS.iter().map(move |how| (export, *how)))
        .collect();
    std::thread::scope(|s| {
        let runs: Vec<_> = cases
            .iter()
            .map(|&(export, how)| {
                let sb = &sb;
                s.spawn(move || {
                    let started = Instant::now();
                    let run = call(sb, "Adversary", &wait(export, how), &["--timeout-ms", "400"]);
                    (export, how, run, started.elapsed())
                })
            })
            .collect();
        for r in runs {
            let (export, how, run, took) = r.join().unwrap();
            assert!(run.is_error(), "waiting in {export} by {how} was not stopped: {}", run.text());
            assert!(
                run.text().contains("Adversary timed out after 400 ms and was stopped."),
                "waiting in {export} by {how}: {}",
                run.text()
            );
            assert!(took < Duration::from_millis(400) + SLACK, "waiting in {export} by {how} took {took:?}");
        }
    });
}

#[test]
fn reading_stdin_ends_at_once() {
    let sb = Sandbox::new();
    sb.install(ADVERSARY);
    let text = call(&sb, "Adversary", &wait("call", "stdin"), &["--timeout-ms", "20000"]).assert_ok();
    assert!(text.contains("fine"), "{text}");
}

/// `toolhost run` with `lines`, then `interrupt` after `pause` if given;
/// returns the result lines and how long the run took.
fn run_stream(
    sb: &Sandbox,
    args: &[&str],
    lines: &[Value],
    interrupt_after: Option<Duration>,
) -> (Vec<Value>, Duration) {
    let _ = toolhost(sb, &["tools"]);
    let started = Instant::now();
    let mut child = toolhost_command(sb)
        .args(args)
        .arg("run")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run toolhost");
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    if let Some(pause) = interrupt_after {
        std::thread::sleep(pause);
        writeln!(stdin, "{}", json!({"type": "interrupt"})).unwrap();
        stdin.flush().unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let results = BufReader::new(&out.stdout[..])
        .lines()
        .map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap())
        .filter(|v| v["type"] == "tool_result")
        .collect();
    (results, started.elapsed())
}

fn tool_use(id: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": "Adversary", "input": input})
}

fn result_text(v: &Value) -> String {
    v["content"].as_array().into_iter().flatten().filter_map(|b| b["text"].as_str()).collect()
}

#[test]
fn a_classification_that_waits_is_cut_off_and_the_stream_goes_on() {
    let sb = Sandbox::new();
    sb.install(ADVERSARY);
    // Two calls: the second is classified while the first runs (a guest
    // waiting in is-concurrency-safe, each way); it counts as not
    // concurrency-safe and then runs.
    let mut lines = Vec::new();
    for how in WAYS {
        lines.push(tool_use(&format!("first-{how}"), json!({"action": "ok"})));
        lines.push(tool_use(&format!("waits-{how}"), wait("classify", how)));
    }
    let (results, took) = run_stream(&sb, &["--allow", "Adversary"], &lines, None);
    assert_eq!(results.len(), lines.len(), "{results:?}");
    for r in &results {
        assert_eq!(r["is_error"], json!(false), "{r}");
        assert_eq!(result_text(r), "fine", "{r}");
    }
    let bound = toolhost::CLASSIFY_TIMEOUT * WAYS.len() as u32 + SLACK;
    assert!(took < bound, "the stream took {took:?}");
}

#[test]
fn an_interrupt_stops_a_waiting_guest_in_run() {
    let sb = Sandbox::new();
    sb.install(ADVERSARY);
    let lines: Vec<Value> = WAYS.iter().map(|how| tool_use(&format!("waits-{how}"), wait("call", how))).collect();
    let (results, took) = run_stream(&sb, &["--allow", "Adversary"], &lines, Some(Duration::from_millis(500)));
    assert_eq!(results.len(), lines.len(), "{results:?}");
    for r in &results {
        assert_eq!(r["is_error"], json!(true), "{r}");
    }
    assert!(took < Duration::from_millis(500) + SLACK, "the interrupted stream took {took:?}");
}
