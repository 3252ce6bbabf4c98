//! The streaming executor: `cargo bench -p toolhost-cli --bench scheduler`.
//!
//! 1. 100 concurrency-safe calls of 10 ms each (the Sleeper test component)
//!    through the executor with at most 10 at once, against the same calls
//!    run one by one in the same process: the speed-up.
//! 2. The scheduler's own cost per call: trivial calls (Echo) one by one
//!    through `Host::call`, against the same calls added to an executor with
//!    at most one running, so nothing overlaps: the difference per call.
//!
//! Prints a Markdown table.

use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::{CallOptions, Executor, Host, PermissionMode, ToolUse, Update};

fn main() {
    let dir = std::env::temp_dir().join(format!("toolhost-bench-scheduler-{}", std::process::id()));
    let (workspace, plugins, data) = (dir.join("ws"), dir.join("plugins"), dir.join("data"));
    for d in [&workspace, &plugins, &data] {
        std::fs::create_dir_all(d).expect("bench dirs");
    }
    for guest in [toolhost_tests::SLEEPER, toolhost_tests::ECHO] {
        let name = std::path::Path::new(guest).file_name().expect("a file name");
        std::fs::copy(guest, plugins.join(name)).expect("install the guest");
    }
    let host = Host::builder()
        .workspace(&workspace)
        .plugins_dir(Some(plugins))
        .data_dir(&data)
        .cache_dir(Some(toolhost_tests::shared_cache_dir()))
        .mode(PermissionMode::Default)
        .build()
        .expect("host");
    let session = host.ephemeral_session();
    let sleeper = |i: usize| ToolUse {
        id: format!("s{i}"),
        name: "Sleeper".into(),
        input: json!({"label": format!("s{i}"), "ms": 10, "safe": true}),
    };
    let echo = |i: usize| ToolUse { id: format!("e{i}"), name: "Echo".into(), input: json!({"text": "x"}) };

    // Warm up: compile caches, page in the code, start worker threads.
    for i in 0..20 {
        host.call(&session, &echo(i), &CallOptions::default());
    }

    // 1. Speed-up.
    let sequential = time(|| {
        for i in 0..100 {
            let r = host.call(&session, &sleeper(i), &CallOptions::default());
            assert!(!r.is_error, "{}", r.text());
        }
    });
    let executor_wall = time(|| {
        let executor = Executor::new(host.clone(), Arc::clone(&session), 10);
        for i in 0..100 {
            executor.add_tool(sleeper(i));
        }
        assert_eq!(drain(&executor), 100);
    });
    let speedup = sequential.as_secs_f64() / executor_wall.as_secs_f64();

    // 2. Overhead per call, median of five rounds of 2,000 calls.
    const N: usize = 2_000;
    let mut direct = Vec::new();
    let mut scheduled = Vec::new();
    for _ in 0..5 {
        direct.push(time(|| {
            for i in 0..N {
                host.call(&session, &echo(i), &CallOptions::default());
            }
        }));
        scheduled.push(time(|| {
            let executor = Executor::new(host.clone(), Arc::clone(&session), 1);
            for i in 0..N {
                executor.add_tool(echo(i));
            }
            assert_eq!(drain(&executor), N);
        }));
    }
    let per_call = |v: &mut Vec<Duration>| {
        v.sort();
        v[2].as_secs_f64() * 1e6 / N as f64
    };
    let (direct_us, scheduled_us) = (per_call(&mut direct), per_call(&mut scheduled));
    let reporting_us = {
        let noop: Arc<dyn Fn(bool) + Send + Sync> = Arc::new(|_| {});
        let options = CallOptions { on_concurrency_safe: Some(noop), ..CallOptions::default() };
        let t = time(|| {
            for i in 0..N {
                host.call(&session, &echo(i), &options);
            }
        });
        t.as_secs_f64() * 1e6 / N as f64
    };
    let traits_us = {
        let t = time(|| {
            for i in 0..N {
                std::hint::black_box(host.is_concurrency_safe(&echo(i)));
            }
        });
        t.as_secs_f64() * 1e6 / N as f64
    };

    println!("| measure | executor | baseline | ratio | target |");
    println!("|---|---|---|---|---|");
    println!(
        "| 100 concurrency-safe calls of 10 ms, max concurrency 10 | {:.1} ms | one by one {:.1} ms | {speedup:.1}× faster | ≥ 8× |",
        ms(executor_wall),
        ms(sequential)
    );
    println!(
        "| trivial call (Echo), through the executor vs `Host::call` | {scheduled_us:.1} µs | {direct_us:.1} µs | +{:.1} µs per call | ≤ 10 µs |",
        scheduled_us - direct_us
    );
    println!(
        "| asking the tool whether the call is concurrency-safe, in a separate instance | {traits_us:.1} µs | | | |"
    );
    println!("| `Host::call` also reporting whether the call is concurrency-safe | {reporting_us:.1} µs | | | |");
    let _ = std::fs::remove_dir_all(&dir);
}

fn drain(executor: &Executor) -> usize {
    executor.close();
    let mut n = 0;
    while let Some(u) = executor.next_blocking() {
        if let Update::Result(r) = u {
            assert!(!r.is_error, "{}", r.text());
            n += 1;
        }
    }
    n
}

fn time(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
