//! Throughput of several `toolhost serve --http` instances behind a real
//! haproxy, against one instance alone: `cargo bench -p toolhost-cli
//! --bench cluster`.
//!
//! Clients (threads, one connection per request) each start a state handle
//! and then call Read of a small file with it as fast as the servers answer
//! (MCP 2026-07-28: every call loads the handle's state from the store and
//! saves the read it records). Configurations: one instance reached
//! directly with its state in memory (the baseline), the same with its
//! state in a real `redis-server`, and 1, 2 and 3 instances sharing that
//! Redis behind haproxy (round robin: a client's calls land on every
//! instance). Rounds interleave the configurations; the table gives the
//! median round's calls per second with the range, latency p50 and p99, and
//! the ratio to the baseline. Everything runs on this machine: the
//! instances share its cores with haproxy, Redis and the clients.

use std::io::{Read as _, Write as _};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use toolhost_tests::haproxy::{Balance, Haproxy};
use toolhost_tests::redis::RedisServer;

const CLIENTS: usize = 8;
const ROUNDS: usize = 3;
const RUN: Duration = Duration::from_secs(6);
const WARM: Duration = Duration::from_secs(1);

struct Instance(Child, String);

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn instance(dir: &std::path::Path, name: &str, state: Option<&str>) -> Instance {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.env("TOOLHOST_DATA_DIR", dir.join(format!("data-{name}")))
        .env("TOOLHOST_CACHE_DIR", toolhost_tests::shared_cache_dir())
        .env("HOME", dir.join("home"))
        .env_remove("TOOLHOST_HTTP_TOKEN")
        .arg("--workspace")
        .arg(dir.join("ws"))
        .args(["--instance", name]);
    if let Some(url) = state {
        cmd.args(["--state", url]);
    }
    cmd.args(["serve", "--http", "0"]).stdin(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start toolhost serve");
    let url = toolhost_tests::serving_url(&mut child, "toolhost serve");
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    Instance(child, addr)
}

/// One 2026-07-28 `tools/call` to `addr`; the response's text.
fn call(addr: &str, tool: &str, arguments: serde_json::Value) -> String {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n\
         Mcp-Name: {tool}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("receive");
    response
}

/// Calls per second, p50 and p99 in ms, of `CLIENTS` clients on `addr`.
fn load(addr: &str, file: &str) -> (f64, f64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(CLIENTS + 1));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (addr, file, stop, start) = (addr.to_string(), file.to_string(), stop.clone(), start.clone());
            std::thread::spawn(move || {
                let started = call(&addr, "StartSession", serde_json::json!({}));
                let at = started.find("session_").expect("a handle");
                let handle: String =
                    started[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                let read = serde_json::json!({"file_path": file, "toolhost_session": handle});
                start.wait();
                let began = Instant::now();
                let mut times = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    let r = call(&addr, "Read", read.clone());
                    assert!(r.contains("a small file") && !r.contains("\"isError\":true"), "{r}");
                    if began.elapsed() > WARM {
                        times.push(t.elapsed().as_secs_f64() * 1e3);
                    }
                }
                times
            })
        })
        .collect();
    start.wait();
    std::thread::sleep(WARM + RUN);
    stop.store(true, Ordering::Relaxed);
    let mut times: Vec<f64> = clients.into_iter().flat_map(|c| c.join().expect("a client")).collect();
    times.sort_by(f64::total_cmp);
    let n = times.len();
    (n as f64 / RUN.as_secs_f64(), times[n / 2], times[n * 99 / 100])
}

fn main() {
    let dir = std::env::temp_dir().join(format!("toolhost-bench-cluster-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("ws")).expect("bench dirs");
    let file = dir.join("ws").join("small.txt");
    std::fs::write(&file, "a small file\n".repeat(20)).expect("a file");
    let file = file.display().to_string();
    let redis = RedisServer::start();
    let url = redis.url(0);
    let alone = instance(&dir, "alone", None);
    let shared: Vec<Instance> = ["a", "b", "c"].iter().map(|n| instance(&dir, n, Some(&url))).collect();
    let proxies: Vec<Haproxy> = (1..=3)
        .map(|n| Haproxy::start(&shared[..n].iter().map(|i| i.1.clone()).collect::<Vec<_>>(), Balance::RoundRobin))
        .collect();
    let mut configs: Vec<(String, String)> = vec![
        ("one instance, state in memory, direct".into(), alone.1.clone()),
        ("one instance, state in Redis, direct".into(), shared[0].1.clone()),
    ];
    for (n, proxy) in proxies.iter().enumerate() {
        let s = if n == 0 { "" } else { "s" };
        configs.push((format!("{} instance{s}, Redis, behind haproxy", n + 1), format!("127.0.0.1:{}", proxy.port)));
    }
    let mut results: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new(); configs.len()];
    for _ in 0..ROUNDS {
        for (i, (_, addr)) in configs.iter().enumerate() {
            results[i].push(load(addr, &file));
        }
    }
    let base = median(results[0].iter().map(|r| r.0).collect());
    println!(
        "| {CLIENTS} clients, Read with a state handle, MCP 2026-07-28 ({ROUNDS} rounds × {} s) | calls/s | p50 | p99 | × baseline |",
        RUN.as_secs()
    );
    println!("|---|---|---|---|---|");
    for (i, (name, _)) in configs.iter().enumerate() {
        let rate: Vec<f64> = results[i].iter().map(|r| r.0).collect();
        let (lo, hi) = (rate.iter().copied().fold(f64::INFINITY, f64::min), rate.iter().copied().fold(0.0, f64::max));
        let rate = median(rate);
        let p50 = median(results[i].iter().map(|r| r.1).collect());
        let p99 = median(results[i].iter().map(|r| r.2).collect());
        println!("| {name} | {rate:.0} ({lo:.0}–{hi:.0}) | {p50:.2} ms | {p99:.2} ms | {:.2}× |", rate / base);
    }
    println!("\n(this machine: {} cores)", std::thread::available_parallelism().map_or(0, |n| n.get()));
    drop(proxies);
    drop(shared);
    let _ = std::fs::remove_dir_all(&dir);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
