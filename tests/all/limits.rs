//! Deadlines and cancellation hold wherever a guest is: spinning in wasm or
//! waiting inside a host call (a clock, `poll`, a stream), in every export
//! the host calls during a call.

use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
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
    every_wait_is_stopped(&sb, &[]);
}

/// Calls the `Adversary` in `sb` (with `extra` arguments) waiting in each
/// export a call goes through, in each of the [`WAYS`], at once, with a
/// 400 ms limit: every call is stopped at it.
pub fn every_wait_is_stopped(sb: &Sandbox, extra: &[&str]) {
    let cases: Vec<(&str, &str)> = ["call", "validate", "permissions", "read-only"]
        .into_iter()
        .flat_map(|export| WAYS.iter().map(move |how| (export, *how)))
        .collect();
    let mut args = vec!["--timeout-ms", "400"];
    args.extend_from_slice(extra);
    std::thread::scope(|s| {
        let runs: Vec<_> = cases
            .iter()
            .map(|&(export, how)| {
                let args = &args;
                s.spawn(move || {
                    let started = Instant::now();
                    let run = call(sb, "Adversary", &wait(export, how), args);
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
    let mut child = spawn_piped(sb, &[args, &["run"]].concat());
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
    tool_use_line(id, "Adversary", input)
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
        assert_eq!(content_text(r), "fine", "{r}");
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

/// Installs the `broken-info` guest with its mode patched to `mode` (see
/// the guest's `MODE`), as `broken-MODE.wasm`.
fn install_broken(sb: &Sandbox, mode: &str) {
    const MARKER: &[u8] = b"toolhost-broken-info-mode:";
    let mut bytes = std::fs::read(toolhost_tests::BROKEN_INFO).unwrap();
    let at: Vec<usize> =
        bytes.windows(MARKER.len()).enumerate().filter(|(_, w)| *w == MARKER).map(|(i, _)| i).collect();
    assert_eq!(at.len(), 1, "the mode marker appears once in the component");
    let slot = &mut bytes[at[0] + MARKER.len()..at[0] + MARKER.len() + 6];
    slot.fill(0);
    slot[..mode.len()].copy_from_slice(mode.as_bytes());
    std::fs::write(sb.plugins.join(format!("broken-{mode}.wasm")), bytes).unwrap();
}

/// Modes in which loading must fail, and what the report says.
const REFUSED: &[(&str, &str)] = &[
    ("panic", "broken on purpose while describing itself"),
    ("sleep", "failed while describing itself: timed out"),
    ("spin", "failed while describing itself: timed out"),
    ("alloc", "exceeded its memory limit"),
    ("deep", "nests deeper than 32 levels"),
    ("big", "at most 64 KiB are accepted"),
    ("name", "is not a valid tool name"),
];

fn with_refused_plugins() -> Sandbox {
    let sb = Sandbox::new();
    sb.install(toolhost_tests::ECHO);
    for (mode, _) in REFUSED {
        install_broken(&sb, mode);
    }
    sb
}

#[test]
fn components_that_fail_hang_or_overreach_while_loading_are_skipped_and_the_host_starts() {
    let sb = with_refused_plugins();
    let started = Instant::now();
    let tools = toolhost(&sb, &["tools"]);
    let took = started.elapsed();
    assert_eq!(tools.code, 0, "{tools:?}");
    let names: Vec<&str> = tools.stdout.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(names.contains(&"Echo") && !names.contains(&"Broken"), "{names:?}");
    for (mode, reason) in REFUSED {
        let line = tools.stderr.lines().find(|l| l.contains(&format!("broken-{mode}.wasm")));
        assert!(line.is_some_and(|l| l.contains(reason)), "{mode}: expected `{reason}` in\n{}", tools.stderr);
    }
    // Two describe limits at most, run side by side; a hang would be an hour.
    assert!(took < Duration::from_secs(10) + SLACK, "starting took {took:?}");

    // `check` names the reason for one file, and fails.
    let check = toolhost(&sb, &["check", &p(&sb.plugins.join("broken-sleep.wasm"))]);
    assert_ne!(check.code, 0, "{check:?}");
    assert!(check.stdout.contains("timed out"), "{check:?}");

    // `call` and `run` start and serve.
    assert_eq!(call(&sb, "Echo", &json!({"text": "still here"}), &[]).assert_ok(), "still here");
    let line = json!({"type": "tool_use", "id": "e", "name": "Echo", "input": {"text": "run too"}});
    let (results, _) = run_stream(&sb, &[], &[line], None);
    assert_eq!(content_text(&results[0]), "run too", "{results:?}");
}

#[test]
fn serve_starts_beside_components_that_hang_while_loading() {
    let sb = with_refused_plugins();
    let _ = toolhost(&sb, &["tools"]);
    let mut child = spawn_piped(&sb, &["serve"]);
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    for msg in [
        init,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ] {
        writeln!(stdin, "{msg}").unwrap();
    }
    stdin.flush().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let listed = loop {
        let reply: Value = serde_json::from_str(&lines.next().expect("a reply").unwrap()).unwrap();
        if reply["id"] == 2 {
            break reply;
        }
    };
    drop(stdin);
    let _ = child.wait();
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"Echo") && !names.contains(&"Broken"), "{names:?}");
}

#[test]
fn oversized_declarations_are_cut_with_a_warning() {
    let sb = Sandbox::new();
    install_broken(&sb, "huge");
    let tools = toolhost(&sb, &["tools", "--json"]);
    assert_eq!(tools.code, 0, "{tools:?}");
    assert!(tools.stdout.len() < 1 << 20, "tools --json printed {} bytes", tools.stdout.len());
    let list: Vec<Value> = serde_json::from_str(&tools.stdout).unwrap();
    let broken = list.iter().find(|t| t["name"] == "Broken").expect("the tool loads, cut");
    // The model is given the prompt: cut to 32 KiB characters.
    assert_eq!(broken["description"].as_str().unwrap().chars().count(), 32_768);
    assert!(tools.stderr.contains("its description has 52428800 characters; it was cut to 1024"), "{}", tools.stderr);
    assert!(tools.stderr.contains("its prompt has 1048576 characters; it was cut to 32768"), "{}", tools.stderr);

    let sb = Sandbox::new();
    install_broken(&sb, "alias");
    let tools = toolhost(&sb, &["tools"]);
    assert!(tools.stderr.contains("it declares 100 aliases; the first 8 are kept"), "{}", tools.stderr);
    assert_eq!(call(&sb, "Broken7", &json!({}), &[]).assert_ok(), "loaded in mode alias");
    assert!(call(&sb, "Broken8", &json!({}), &[]).is_error());
}
