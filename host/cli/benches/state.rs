//! What keeping a session's state in a store costs per call:
//! `cargo bench -p toolhost-cli --bench state`.
//!
//! The same call (Read of a small file, which records the read in the
//! session) one at a time through `Host::call`, in a session kept in
//! memory (the baseline), in files under the data directory (`--session`
//! on one machine), and in a real `redis-server` on loopback (`--state`),
//! each followed by the save a front makes after a call. Five rounds of
//! 2,000 calls, interleaved; the median of the rounds' p50 and p99, and
//! what each store adds to the baseline. Prints a Markdown table.

use serde_json::json;
use std::sync::Arc;
use std::time::Instant;
use toolhost::{CallOptions, Host, PermissionMode, Session, ToolUse};
use toolhost_tests::redis::RedisServer;

const CALLS: usize = 2_000;
const ROUNDS: usize = 5;

fn host(dir: &std::path::Path, store: Option<Arc<dyn toolhost::StateStore>>) -> Host {
    let mut builder = Host::builder()
        .workspace(dir.join("ws"))
        .plugins_dir(None)
        .data_dir(dir.join("data"))
        .cache_dir(Some(toolhost_tests::shared_cache_dir()))
        .mode(PermissionMode::Default);
    if let Some(store) = store {
        builder = builder.state_store(store);
    }
    builder.build().expect("host")
}

/// p50 and p99 of one round, in µs.
fn round(host: &Host, session: &Arc<Session>, file: &str) -> (f64, f64) {
    let mut times = Vec::with_capacity(CALLS);
    for i in 0..CALLS {
        let call = ToolUse { id: format!("r{i}"), name: "Read".into(), input: json!({"file_path": file}) };
        let started = Instant::now();
        let r = host.call(session, &call, &CallOptions::default());
        session.save().expect("save");
        times.push(started.elapsed().as_secs_f64() * 1e6);
        assert!(!r.is_error, "{}", r.text());
    }
    times.sort_by(f64::total_cmp);
    (times[CALLS / 2], times[CALLS * 99 / 100])
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let dir = std::env::temp_dir().join(format!("toolhost-bench-state-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("ws")).expect("bench dirs");
    let file = dir.join("ws").join("small.txt");
    std::fs::write(&file, "a small file\n".repeat(20)).expect("a file");
    let file = file.display().to_string();
    let redis = RedisServer::start();
    let store: Arc<dyn toolhost::StateStore> =
        Arc::new(toolhost_redis::RedisStore::open(&redis.url(0)).expect("the Redis store"));
    let memory = host(&dir, None);
    let files = host(&dir, None);
    let in_redis = host(&dir, Some(store));
    let sessions = [
        ("in memory (ephemeral)", &memory, memory.ephemeral_session()),
        ("files under the data directory", &files, files.session("bench-files").expect("a file session")),
        ("Redis on loopback", &in_redis, in_redis.session("bench-redis").expect("a Redis session")),
    ];
    for (_, host, session) in &sessions {
        round(host, session, &file);
    }
    let mut results: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); sessions.len()];
    for _ in 0..ROUNDS {
        for (i, (_, host, session)) in sessions.iter().enumerate() {
            let (p50, p99) = round(host, session, &file);
            results[i].0.push(p50);
            results[i].1.push(p99);
        }
    }
    let base = (median(results[0].0.clone()), median(results[0].1.clone()));
    println!(
        "| Read of a small file, one call at a time, then save ({ROUNDS} rounds × {CALLS}) | p50 | p99 | added p50 / p99 |"
    );
    println!("|---|---|---|---|");
    for (i, (name, _, _)) in sessions.iter().enumerate() {
        let (p50, p99) = (median(results[i].0.clone()), median(results[i].1.clone()));
        let (lo, hi) = (
            results[i].0.iter().copied().fold(f64::INFINITY, f64::min),
            results[i].0.iter().copied().fold(0.0, f64::max),
        );
        let added = if i == 0 { "—".to_string() } else { format!("+{:.1} / +{:.1} µs", p50 - base.0, p99 - base.1) };
        println!("| session {name} | {p50:.1} µs ({lo:.1}–{hi:.1}) | {p99:.1} µs | {added} |");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
