//! The streaming executor and the batch orchestrator, with the Sleeper test
//! component (its duration, concurrency-safety and failure come from its
//! input; it reports when it started and ended) and the real Bash.

use crate::support::*;
use proptest::prelude::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::{Calls, run_batch};
use toolhost::{Executor, Host, PermissionMode, ToolResult, ToolUse, Update};

fn host(sb: &Sandbox) -> Host {
    sb.install(toolhost_tests::SLEEPER);
    host_builder(sb)
        .plugins_dir(Some(sb.plugins.clone()))
        .mode(PermissionMode::BypassPermissions)
        .child_confinement(toolhost::Confinement::BestEffort)
        .build()
        .expect("host")
}

fn sleeper(id: &str, ms: u64, safe: bool) -> ToolUse {
    ToolUse { id: id.into(), name: "Sleeper".into(), input: json!({"label": id, "ms": ms, "safe": safe}) }
}

fn bash(id: &str, command: &str) -> ToolUse {
    ToolUse { id: id.into(), name: "Bash".into(), input: json!({"command": command}) }
}

#[test]
fn a_tool_hanging_in_its_classification_does_not_hold_up_the_thread_adding_calls() {
    let sb = Sandbox::new();
    sb.install(toolhost_tests::ADVERSARY);
    let host = host(&sb);
    let executor = Executor::new(host.clone(), host.ephemeral_session(), 4);
    // Something runs, so the next call's concurrency-safety is asked first.
    executor.add_tool(sleeper("long", 300, true));
    let started = Instant::now();
    executor.add_tool(ToolUse {
        id: "adv".into(),
        name: "Adversary".into(),
        input: json!({"action": "loop-classify"}),
    });
    let took = started.elapsed();
    // The tool is asked on a worker, not on the thread adding the call.
    assert!(took < toolhost::CLASSIFY_TIMEOUT / 2, "add_tool took {took:?}");
    let results = drain(&executor);
    assert_eq!(ids(&results), ["long", "adv"]);
    assert!(!results[1].is_error, "counted not concurrency-safe, then run: {}", results[1].text());
}

#[test]
fn a_long_session_keeps_only_what_is_going_on() {
    let sb = Sandbox::new();
    let host = host(&sb);
    for ordered in [true, false] {
        let calls = if ordered { Calls::Turn } else { Calls::Independent };
        let config = toolhost::SchedulerConfig { max_concurrency: 4, calls, approver: None };
        let executor = Executor::with_config(host.clone(), host.ephemeral_session(), config);
        let mut handed_out = Vec::new();
        for round in 0..50 {
            for k in 0..4 {
                executor.add_tool(sleeper(&format!("r{round}c{k}"), 1, k % 2 == 0));
            }
            while handed_out.len() < (round + 1) * 4 {
                if let Some(Update::Result(r)) = executor.next_blocking() {
                    assert!(!r.is_error, "{}", r.text());
                    handed_out.push(r.tool_use_id);
                }
            }
            assert!(executor.kept() <= 4, "round {round}: {} calls kept", executor.kept());
        }
        assert_eq!(executor.kept(), 0);
        if ordered {
            let expected: Vec<String> = (0..50).flat_map(|r| (0..4).map(move |k| format!("r{r}c{k}"))).collect();
            assert_eq!(handed_out, expected);
        }
        executor.close();
        assert!(executor.next_blocking().is_none());
    }
}

/// Calls one at a time, each added the moment the previous result is out
/// (as an MCP client's are): the worker that ran the last one runs the next,
/// and no thread is started beside it. A worker used to count itself free
/// only after its result was out, so such a call often started a thread:
/// an MCP server reached 22 worker threads at 10 calls at once.
#[test]
fn calls_added_as_each_result_comes_out_reuse_the_one_worker() {
    let (_sb, file, executor) = read_executor(4);
    for k in 0..300 {
        let id = format!("r{k}");
        executor.add_tool(ToolUse { id: id.clone(), name: "Read".into(), input: json!({"file_path": file}) });
        loop {
            if let Some(Update::Result(r)) = executor.next_blocking() {
                assert!(!r.is_error, "{}", r.text());
                assert_eq!(r.tool_use_id, id);
                break;
            }
        }
    }
    assert_eq!(executor.worker_threads(), 1, "worker threads after 300 calls one at a time");
}

/// Calls of a tool that declares itself concurrency-safe for every input
/// (Read) are classified without a worker: with 40 calls added at once and 4
/// allowed to run, no more than 4 worker threads are started. A worker used
/// to ask each call's safety beside the calls running, up to 4 more threads
/// (an MCP server at 32 requests in flight had 21 worker threads at a
/// maximum of 10).
#[test]
fn declared_concurrency_safe_calls_use_no_more_workers_than_may_run() {
    let (_sb, file, executor) = read_executor(4);
    for round in 0..5 {
        for k in 0..40 {
            executor.add_tool(ToolUse {
                id: format!("r{round}-{k}"),
                name: "Read".into(),
                input: json!({"file_path": file}),
            });
        }
        let mut seen = 0;
        while seen < 40 {
            if let Some(Update::Result(r)) = executor.next_blocking() {
                assert!(!r.is_error, "{}", r.text());
                seen += 1;
            }
        }
    }
    assert!(executor.worker_threads() <= 4, "{} worker threads for 4 calls at a time", executor.worker_threads());
}

/// An executor running at most `max` calls at once, and a one-line file in
/// its workspace for Read (the sandbox keeps the workspace while held).
fn read_executor(max: usize) -> (Sandbox, std::path::PathBuf, Executor) {
    let sb = Sandbox::new();
    let host = host(&sb);
    let file = sb.workspace.join("one.txt");
    std::fs::write(&file, "one line\n").unwrap();
    let config = toolhost::SchedulerConfig { max_concurrency: max, calls: Calls::Independent, approver: None };
    let executor = Executor::with_config(host.clone(), host.ephemeral_session(), config);
    (sb, file, executor)
}

/// Every result of `executor` once closed, in the order handed out.
fn drain(executor: &Executor) -> Vec<ToolResult> {
    executor.close();
    let mut out = Vec::new();
    while let Some(u) = executor.next_blocking() {
        if let Update::Result(r) = u {
            out.push(r);
        }
    }
    out
}

/// (start, end) in microseconds, as the Sleeper reported them.
fn span(r: &ToolResult) -> (u64, u64) {
    let v: Value = serde_json::from_str(&r.text()).unwrap_or_else(|_| panic!("not a Sleeper report: {}", r.text()));
    (v["start_us"].as_u64().unwrap(), v["end_us"].as_u64().unwrap())
}

fn overlap(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

fn ids(results: &[ToolResult]) -> Vec<&str> {
    results.iter().map(|r| r.tool_use_id.as_str()).collect()
}

#[test]
fn safe_calls_overlap_and_results_keep_their_order() {
    let sb = Sandbox::new();
    let host = host(&sb);
    let executor = Executor::new(host.clone(), host.ephemeral_session(), 10);
    for (id, ms) in [("a", 300), ("b", 100), ("c", 200), ("d", 10)] {
        executor.add_tool(sleeper(id, ms, true));
    }
    let results = drain(&executor);
    assert_eq!(ids(&results), ["a", "b", "c", "d"], "original order, although d ended first");
    let spans: Vec<_> = results.iter().map(span).collect();
    let latest_start = spans.iter().map(|s| s.0).max().unwrap();
    let earliest_end = spans.iter().map(|s| s.1).min().unwrap();
    assert!(latest_start < earliest_end, "all four ran at once: {spans:?}");
}

#[test]
fn a_non_safe_call_runs_alone_and_blocks_the_queue_behind_it() {
    let sb = Sandbox::new();
    let host = host(&sb);
    let executor = Executor::new(host.clone(), host.ephemeral_session(), 10);
    executor.add_tool(sleeper("a", 150, true));
    executor.add_tool(sleeper("b", 50, false));
    executor.add_tool(sleeper("c", 50, true));
    executor.add_tool(sleeper("d", 50, true));
    let results = drain(&executor);
    assert_eq!(ids(&results), ["a", "b", "c", "d"]);
    let [a, b, c, d] = [0, 1, 2, 3].map(|i| span(&results[i]));
    assert!(a.1 <= b.0, "b waited for a: {a:?} {b:?}");
    assert!(b.1 <= c.0 && b.1 <= d.0, "c and d waited behind b: {b:?} {c:?} {d:?}");
    assert!(overlap(c, d), "c and d ran together after b: {c:?} {d:?}");
}

#[test]
fn a_failing_bash_call_cancels_its_siblings_and_other_failures_do_not() {
    let sb = Sandbox::new();
    let host = host(&sb);
    let executor = Executor::new(host.clone(), host.ephemeral_session(), 10);
    let started = Instant::now();
    executor.add_tool(sleeper("long", 5_000, true));
    executor.add_tool(bash("bash", "sleep 0.2 && ls no-such-file"));
    executor.add_tool(sleeper("queued", 10, false));
    let results = drain(&executor);
    assert_eq!(ids(&results), ["long", "bash", "queued"]);
    assert!(results.iter().all(|r| r.is_error), "{results:?}");
    for r in [&results[0], &results[2]] {
        assert_eq!(r.text(), "Cancelled: parallel tool call Bash(sleep 0.2 && ls no-such-file) errored");
    }
    assert!(started.elapsed() < Duration::from_secs(3), "the long call was stopped, not waited for");

    // Once everything beside the failure has ended, later calls run again.
    let executor = Executor::new(host.clone(), host.ephemeral_session(), 10);
    executor.add_tool(bash("first", "ls no-such-file"));
    while !executor.completed().iter().any(|u| matches!(u, Update::Result(_))) {
        std::thread::sleep(Duration::from_millis(5));
    }
    executor.add_tool(sleeper("later", 10, true));
    let results = drain(&executor);
    assert!(!results.last().unwrap().is_error, "{results:?}");

    let executor = Executor::new(host.clone(), host.ephemeral_session(), 10);
    executor.add_tool(ToolUse {
        id: "fails".into(),
        name: "Sleeper".into(),
        input: json!({"label": "fails", "ms": 20, "safe": true, "fail": true}),
    });
    executor.add_tool(sleeper("fine", 200, true));
    let results = drain(&executor);
    assert!(results[0].is_error && !results[1].is_error, "no cascade: {results:?}");
}

#[test]
fn an_interrupt_cancels_cancel_tools_and_lets_block_tools_finish() {
    let sb = Sandbox::new();
    let host = host(&sb);
    let executor = Executor::new(host.clone(), host.ephemeral_session(), 10);
    let started = Instant::now();
    executor.add_tool(bash("shell", "sleep 10.25401"));
    executor.add_tool(sleeper("blocker", 400, true));
    wait_running("sleep 10.25401", Duration::from_secs(10));
    executor.interrupt();
    let results = drain(&executor);
    assert!(results[0].is_error && results[0].text().contains("Interrupted by user"), "{:?}", results[0]);
    assert!(!results[1].is_error, "Sleeper blocks: it ran to the end: {:?}", results[1]);
    assert!(started.elapsed() < Duration::from_secs(5), "the Bash process was killed");
    wait_gone("sleep 10.25401", Duration::from_secs(10));
}

#[test]
fn discard_drops_everything() {
    let sb = Sandbox::new();
    let host = host(&sb);
    let executor = Executor::new(host.clone(), host.ephemeral_session(), 10);
    executor.add_tool(sleeper("a", 5_000, true));
    executor.add_tool(sleeper("b", 10, false));
    let started = Instant::now();
    executor.discard();
    assert!(executor.next_blocking().is_none());
    assert!(executor.completed().is_empty());
    executor.add_tool(sleeper("c", 10, true));
    assert!(executor.completed().is_empty(), "nothing after a discard");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn progress_arrives_before_the_result() {
    let sb = Sandbox::new();
    let host = host(&sb);
    let executor = Executor::new(host.clone(), host.ephemeral_session(), 10);
    executor.add_tool(ToolUse {
        id: "p".into(),
        name: "Sleeper".into(),
        input: json!({"label": "p", "ms": 300, "safe": true, "progress_ms": 50}),
    });
    executor.close();
    let mut seen = Vec::new();
    while let Some(u) = executor.next_blocking() {
        seen.push((Instant::now(), u));
    }
    let (last_at, last) = seen.last().unwrap();
    assert!(matches!(last, Update::Result(_)));
    let progress: Vec<Instant> =
        seen.iter().filter(|(_, u)| matches!(u, Update::Progress(_))).map(|(at, _)| *at).collect();
    assert!(progress.len() >= 3, "{} progress updates", progress.len());
    assert!(*last_at - progress[0] >= Duration::from_millis(100), "the first progress came while it ran");
}

#[test]
fn the_batch_orchestrator_runs_safe_runs_together_and_others_alone() {
    let sb = Sandbox::new();
    let host = host(&sb);
    let calls = [sleeper("a", 100, true), sleeper("b", 100, true), sleeper("c", 50, false), sleeper("d", 50, true)];
    let results = run_batch(&host, &host.ephemeral_session(), &calls, 10);
    assert_eq!(ids(&results), ["a", "b", "c", "d"]);
    let [a, b, c, d] = [0, 1, 2, 3].map(|i| span(&results[i]));
    assert!(overlap(a, b), "{a:?} {b:?}");
    assert!(a.1.max(b.1) <= c.0 && c.1 <= d.0, "batches in order: {a:?} {b:?} {c:?} {d:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Random sequences of safe, non-safe and failing calls: results in
    /// order, and a non-safe call never overlaps another.
    #[test]
    fn order_and_exclusion_hold(calls in prop::collection::vec((any::<bool>(), 0u64..15, prop::bool::weighted(0.2)), 1..7)) {
        let sb = Sandbox::new();
        let host = host(&sb);
        let executor = Arc::new(Executor::new(host.clone(), host.ephemeral_session(), 3));
        let uses: Vec<ToolUse> = calls
            .iter()
            .enumerate()
            .map(|(i, &(safe, ms, fail))| ToolUse {
                id: format!("t{i}"),
                name: "Sleeper".into(),
                input: json!({"label": format!("t{i}"), "ms": ms, "safe": safe, "fail": fail}),
            })
            .collect();
        for u in &uses {
            executor.add_tool(u.clone());
        }
        let results = drain(&executor);
        prop_assert_eq!(ids(&results), uses.iter().map(|u| u.id.as_str()).collect::<Vec<_>>());
        let spans: Vec<(u64, u64)> = results
            .iter()
            .map(|r| {
                let text = r.text();
                let json_at = text.find('{').unwrap_or(0);
                let v: Value = serde_json::from_str(&text[json_at..]).unwrap_or(Value::Null);
                (v["start_us"].as_u64().unwrap_or(0), v["end_us"].as_u64().unwrap_or(0))
            })
            .collect();
        for (i, &(safe, _, _)) in calls.iter().enumerate() {
            if safe {
                continue;
            }
            for j in 0..calls.len() {
                prop_assert!(i == j || !overlap(spans[i], spans[j]), "t{} overlapped t{}: {:?}", i, j, spans);
            }
        }
    }
}

#[test]
fn independent_calls_are_not_cancelled_by_another_ones_failure() {
    let sb = Sandbox::new();
    let host = host(&sb);
    let config = toolhost::SchedulerConfig { calls: Calls::Independent, ..Default::default() };
    let executor = Executor::with_config(host.clone(), host.ephemeral_session(), config);
    // Both read-only, so they run at once; the second fails first.
    let slow = executor.add_tool(bash("slow", "sleep 0.5; echo done"));
    let failing = executor.add_tool(bash("failing", "ls no-such-file"));
    let failed = failing.wait().expect("a result");
    assert!(failed.is_error, "{}", failed.text());
    let done = slow.wait().expect("a result");
    assert!(!done.is_error && done.text().contains("done"), "{}", done.text());
    assert_eq!((slow.id(), failing.id()), ("slow", "failing"));
}

#[test]
fn a_handle_claims_its_result_and_next_skips_it() {
    let sb = Sandbox::new();
    let host = host(&sb);
    let executor = Executor::new(host.clone(), host.ephemeral_session(), 4);
    let first = executor.add_tool(sleeper("first", 200, true));
    executor.add_tool(sleeper("second", 10, true));
    let third = executor.add_tool(sleeper("third", 5_000, true));
    // Claimed while running: it goes to the handle, and the turn's stream
    // does not wait for it.
    let claimed = std::thread::spawn(move || first.wait());
    std::thread::sleep(Duration::from_millis(50));
    third.cancel("not needed");
    let results = drain(&executor);
    assert_eq!(ids(&results), ["second", "third"]);
    assert!(results[1].is_error && results[1].text().contains("not needed"), "{}", results[1].text());
    let first = claimed.join().unwrap().expect("the claimed result");
    assert_eq!(first.tool_use_id, "first");
    // Claimed, then forgotten by the executor once it is in: still the handle's.
    let handle = executor.add_tool(sleeper("claimed", 10, true));
    drop(handle.result());
    let until = Instant::now() + Duration::from_secs(10);
    while executor.kept() > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(executor.kept(), 0, "the executor keeps no claimed call once it has ended");
    assert_eq!(handle.wait().map(|r| r.tool_use_id), Some("claimed".to_string()));
    // A result handed out by `next` is not the handle's.
    let executor = Executor::new(host.clone(), host.ephemeral_session(), 4);
    let handle = executor.add_tool(sleeper("once", 10, true));
    assert_eq!(ids(&drain(&executor)), ["once"]);
    assert_eq!(handle.wait(), None);
    // Discarded: nothing comes, and nobody waits forever.
    let executor = Executor::new(host.clone(), host.ephemeral_session(), 4);
    let handle = executor.add_tool(sleeper("long", 10_000, true));
    let waiting = std::thread::spawn(move || handle.wait());
    std::thread::sleep(Duration::from_millis(100));
    executor.discard();
    assert_eq!(waiting.join().unwrap(), None);
}

#[test]
fn a_claimed_call_cancelled_in_the_queue_still_lets_the_turn_end() {
    let sb = Sandbox::new();
    let host = host(&sb);
    let executor = Executor::new(host.clone(), host.ephemeral_session(), 4);
    executor.add_tool(sleeper("first", 300, false));
    let queued = executor.add_tool(sleeper("queued", 10, true));
    drop(queued.result()); // claimed
    queued.cancel("changed my mind");
    let results = drain(&executor);
    assert_eq!(ids(&results), ["first"], "the claimed call is not the stream's");
    let cancelled = queued.wait().expect("the claimed result");
    assert!(cancelled.is_error && cancelled.text().contains("changed my mind"), "{}", cancelled.text());
}
