//! toolhost against its peers: `cargo bench -p toolhost-cli --bench peers [mcp|process]`
//! (both parts unless one is named).
//!
//! `mcp`: `toolhost serve` against the reference MCP server for files,
//! `@modelcontextprotocol/server-filesystem` (run by node), both driven by
//! the same raw JSON-RPC client over stdio, reading a small file: latency one
//! call at a time, throughput with 1, 8 and 32 requests in flight, the
//! server's CPU time per call (from `/proc`), and its RSS as the calls add
//! up. Beside them, the floor: a server of a few lines in this benchmark's
//! own executable (one thread, no SDK) that reads the file and answers, for
//! what this machine charges for a stdio exchange whatever the server does.
//! Three rounds, alternating the servers, each with a fresh server
//! process; the median of the rounds and their spread (min–max). The
//! reference server is installed with npm into `target/tools/npm` on first
//! use; if that fails its columns stay empty.
//!
//! `process`: whole `toolhost call` processes against the native tool doing
//! the same work: Grep against `rg`, Read against `cat -n | sed`, Bash
//! against `bash -c`. Each comparison takes turns (A, B, A, B, …) after one
//! untimed run of each; p50 and the p10–p90 spread. `rg` is found as in the
//! pipeline benchmark.
//!
//! `proxy`: server-filesystem's `read_text_file` called directly and through
//! toolhost's pool (`toolhost serve` with the server under `mcpServers`, the
//! tool as `mcp__fs__read_text_file`, every call through the pipeline): the
//! latency one call at a time and the throughput at 8 in flight, the two
//! taking turns over three rounds; what the pool adds per call.
//!
//! Prints Markdown tables.

mod common;

use common::Stats;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

const TOOLHOST: &str = env!("CARGO_BIN_EXE_toolhost");

/// The reference server, pinned: its newest version when this benchmark was
/// written.
const SERVER_FILESYSTEM: &str = "@modelcontextprotocol/server-filesystem";
const SERVER_FILESYSTEM_VERSION: &str = "2026.8.31";

const ROUNDS: usize = 3;
/// One call at a time: untimed calls, then timed ones.
const WARM_UP: usize = 1_000;
const TIMED: usize = 10_000;
/// Allowance kept in flight by the throughput runs, each for `WINDOW` or
/// `MAX_BATCH` calls, whichever comes first.
const IN_FLIGHT: [usize; 3] = [1, 8, 32];
const WINDOW: Duration = Duration::from_secs(2);
const MAX_BATCH: usize = 20_000;
/// The server's RSS is read every `RSS_EVERY` calls, `RSS_MARKS` times (the
/// last runs are topped up to reach them).
const RSS_EVERY: usize = 10_000;
const RSS_MARKS: usize = 4;
/// After the throughput runs, this many more calls at 32 in flight, the RSS
/// read before and after: growth at a steady load, apart from the step a
/// change of load makes (more threads, more instance slots).
const STEADY: usize = 20_000;

fn main() {
    if std::env::args().any(|a| a == FLOOR_SERVER) {
        floor_server();
        return;
    }
    // `cargo bench` passes `--bench`; other arguments name the parts.
    let parts: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    if let Some(unknown) = parts.iter().find(|p| !["mcp", "process", "proxy"].contains(&p.as_str())) {
        panic!("unknown part {unknown}: the parts are mcp, process and proxy");
    }
    let run = |part: &str| parts.is_empty() || parts.iter().any(|p| p == part);
    warm_compile_cache();
    if run("mcp") {
        let started = Instant::now();
        mcp();
        println!("\n_The `mcp` part took {:.0} s._\n", started.elapsed().as_secs_f64());
    }
    if run("process") {
        let started = Instant::now();
        process();
        println!("\n_The `process` part took {:.0} s._", started.elapsed().as_secs_f64());
    }
    if run("proxy") {
        let started = Instant::now();
        proxy();
        println!("\n_The `proxy` part took {:.0} s._", started.elapsed().as_secs_f64());
    }
}

/// Calls of the `proxy` part: untimed, then timed one at a time.
const PROXY_WARM_UP: usize = 500;
const PROXY_TIMED: usize = 5_000;

/// server-filesystem directly, and through toolhost's pool.
fn proxy() {
    let file = small_file();
    let ws = file.parent().expect("workspace").to_path_buf();
    let entry = match server_filesystem() {
        Ok(entry) => entry,
        Err(why) => {
            println!("the proxy part needs server-filesystem: {why}");
            return;
        }
    };
    let settings = json!({"mcpServers": {"fs": {"command": "node", "args": [&entry, &ws]}}}).to_string();
    let contenders = [
        Server {
            name: "server-filesystem",
            command: Box::new({
                let (entry, ws) = (entry.clone(), ws.clone());
                move || {
                    let mut cmd = Command::new("node");
                    cmd.arg(&entry).arg(&ws);
                    cmd
                }
            }),
            pick_tool: |_| "read_text_file",
            arguments: |file| json!({"path": file}),
        },
        Server {
            name: "through toolhost",
            command: Box::new(move || {
                let mut cmd = toolhost(&ws);
                cmd.args(["--settings", &settings, "--allow", "mcp__fs", "serve"]);
                cmd
            }),
            pick_tool: |_| "mcp__fs__read_text_file",
            arguments: |file| json!({"path": file}),
        },
    ];
    // (p50 µs, p99 µs, calls/s at 8 in flight) per contender and round.
    let mut figures: Vec<Vec<[f64; 3]>> = vec![Vec::new(), Vec::new()];
    for r in 0..ROUNDS {
        for (server, out) in contenders.iter().zip(&mut figures) {
            let mut client = Client::start(server, &file);
            for _ in 0..PROXY_WARM_UP {
                client.call();
            }
            let latency = common::stats((0..PROXY_TIMED).map(|_| client.call()).collect());
            let rate = client.in_flight(8, Some(WINDOW), MAX_BATCH).rate;
            eprintln!(
                "round {r}, {}: p50 {:.1} µs, p99 {:.1} µs, {rate:.0} calls/s at 8 in flight",
                server.name, latency.p50, latency.p99
            );
            out.push([latency.p50, latency.p99, rate]);
        }
    }
    println!(
        "| server-filesystem {SERVER_FILESYSTEM_VERSION}'s read_text_file, 1 KB ({ROUNDS} rounds: median (min–max)) | directly | through toolhost's pool | toolhost / direct | added |"
    );
    println!("|---|---|---|---|---|");
    for (i, label, unit, decimals) in [
        (0, "round trip p50, one at a time", "µs", 1),
        (1, "round trip p99, one at a time", "µs", 1),
        (2, "throughput, 8 in flight", "calls/s", 0),
    ] {
        let direct = Spread::of(figures[0].iter().map(|f| f[i]).collect());
        let proxied = Spread::of(figures[1].iter().map(|f| f[i]).collect());
        let added = if unit == "µs" { format!("{:+.1} µs", proxied.median - direct.median) } else { String::new() };
        println!(
            "| {label} | {} | {} | {} | {added} |",
            direct.show(decimals, unit),
            proxied.show(decimals, unit),
            times(proxied.median / direct.median)
        );
    }
    println!(
        "\nOne client (raw JSON-RPC over stdio, one thread); each round a fresh server: {PROXY_WARM_UP} warm-up + \
         {PROXY_TIMED} timed calls one at a time, then {} s (or {MAX_BATCH} calls) at 8 in flight. Through \
         toolhost, each call is validated, decided (an allow rule), audited and sent to the confined server.",
        WINDOW.as_secs()
    );
}

fn bench_dir(name: &str) -> PathBuf {
    let dir = toolhost_tests::repo_root().join("target").join("bench-data").join(name);
    std::fs::create_dir_all(&dir).expect("bench dir");
    dir
}

/// `toolhost --workspace <workspace> --plugins <empty dir>`, with the
/// environment of the MCP benchmark: its own home and data directory, the
/// tests' warm compile cache, no managed settings, no logging.
fn toolhost(workspace: &Path) -> Command {
    let data = bench_dir("peers-data");
    let mut cmd = Command::new(TOOLHOST);
    cmd.arg("--workspace")
        .arg(workspace)
        .arg("--plugins")
        .arg(bench_dir("peers-plugins"))
        .env("HOME", &data)
        .env("TOOLHOST_DATA_DIR", &data)
        .env("TOOLHOST_CACHE_DIR", toolhost_tests::shared_cache_dir())
        .env("TOOLHOST_MANAGED_SETTINGS", data.join("managed-settings.json"))
        .env_remove("RUST_LOG");
    cmd
}

/// Compiles the built-ins into the shared cache if they are not there yet
/// (after a rebuild of toolhost), so that no measured process compiles them:
/// `tools` lists them from their saved descriptions without compiling, so
/// Read, which every MCP round calls, is also called once, compiled
/// optimized at once (a server would otherwise compile it at its first call
/// and its RSS would carry the compile).
fn warm_compile_cache() {
    let started = Instant::now();
    let out = toolhost(&bench_dir("peers-ws")).arg("tools").output().expect("toolhost tools");
    succeeded("toolhost tools", &out);
    let read = json!({ "file_path": small_file() }).to_string();
    let out = toolhost(&bench_dir("peers-ws"))
        .args(["--quick-compile-above", "off", "call", "Read", &read])
        .output()
        .expect("toolhost call Read");
    succeeded("toolhost call Read", &out);
    eprintln!("compile cache warm ({:.1} s)", started.elapsed().as_secs_f64());
}

/// `ratio` as "1.23×".
fn times(ratio: f64) -> String {
    format!("{ratio:.2}×")
}

/// A Markdown table cell: `|` escaped.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

fn tick(met: bool) -> &'static str {
    if met { "✓" } else { "✗" }
}

// ---------------------------------------------------------------------------
// Part `mcp`

/// The workspace both servers serve, and the file every call reads: about
/// 1 KB in 20 lines.
fn small_file() -> PathBuf {
    let ws = bench_dir("peers-ws").canonicalize().expect("workspace");
    let text: String =
        (1..=20).map(|i| format!("line {i:02}: the quick brown fox jumps over the lazy dog {:04}\n", i * 37)).collect();
    let file = ws.join("small.txt");
    std::fs::write(&file, text).expect("small file");
    file
}

/// The reference server's entry point, installed with npm into
/// `target/tools/npm` unless it is there already at the pinned version; or
/// why it cannot be run.
fn server_filesystem() -> Result<PathBuf, String> {
    let node = Command::new("node").arg("--version").output();
    if !node.as_ref().is_ok_and(|o| o.status.success()) {
        return Err(format!("node cannot be run: {node:?}"));
    }
    let prefix = toolhost_tests::repo_root().join("target").join("tools").join("npm");
    let package = prefix.join("node_modules").join(SERVER_FILESYSTEM);
    let installed = std::fs::read_to_string(package.join("package.json"))
        .ok()
        .and_then(|p| serde_json::from_str::<Value>(&p).ok())
        .is_some_and(|p| p["version"] == SERVER_FILESYSTEM_VERSION);
    if !installed {
        eprintln!("installing {SERVER_FILESYSTEM}@{SERVER_FILESYSTEM_VERSION} into {}...", prefix.display());
        let out = Command::new("npm")
            .arg("install")
            .arg("--prefix")
            .arg(&prefix)
            .arg(format!("{SERVER_FILESYSTEM}@{SERVER_FILESYSTEM_VERSION}"))
            .output()
            .map_err(|e| format!("npm cannot be run: {e}"))?;
        if !out.status.success() {
            // npm's first lines say what failed; the rest is its stack.
            let stderr = String::from_utf8_lossy(&out.stderr);
            let first: Vec<&str> = stderr.lines().take(4).collect();
            return Err(format!("npm install failed ({}): {}", out.status, first.join(" / ")));
        }
    }
    Ok(package.join("dist").join("index.js"))
}

/// A server under test: how to start it, and which of its tools reads a file
/// with which arguments.
struct Server {
    name: &'static str,
    command: Box<dyn Fn() -> Command>,
    /// The reading tool's name, picked from the names `tools/list` offers.
    pick_tool: fn(&[&str]) -> &'static str,
    /// The reading tool's arguments for a file.
    arguments: fn(&Path) -> Value,
}

/// toolhost, the floor, and the reference server unless it cannot be run
/// (then why).
fn servers(file: &Path) -> (Vec<Server>, Option<String>) {
    let ws = file.parent().expect("workspace").to_path_buf();
    let mut servers = vec![
        Server {
            name: "toolhost",
            command: Box::new({
                let ws = ws.clone();
                move || {
                    let mut cmd = toolhost(&ws);
                    cmd.arg("serve");
                    cmd
                }
            }),
            pick_tool: |_| "Read",
            arguments: |file| json!({"file_path": file}),
        },
        Server {
            name: "floor",
            command: Box::new(|| {
                let mut cmd = Command::new(std::env::current_exe().expect("bench executable"));
                cmd.arg(FLOOR_SERVER);
                cmd
            }),
            pick_tool: |_| "read",
            arguments: |file| json!({"path": file}),
        },
    ];
    let missing = match server_filesystem() {
        Err(why) => Some(why),
        Ok(entry) => {
            servers.push(Server {
                name: "server-filesystem",
                command: Box::new(move || {
                    let mut cmd = Command::new("node");
                    cmd.arg(&entry).arg(&ws);
                    cmd
                }),
                // `read_file` is the older name, deprecated but still offered.
                pick_tool: |tools| if tools.contains(&"read_text_file") { "read_text_file" } else { "read_file" },
                arguments: |file| json!({"path": file}),
            });
            None
        }
    };
    (servers, missing)
}

/// The argument that makes this benchmark's executable the floor server.
const FLOOR_SERVER: &str = "--floor-server";

/// The floor: the least a stdio MCP server can do for the benchmark's call,
/// as a measure of what this machine charges for the exchange itself. One
/// thread, blocking reads and writes, no SDK, no sandbox: each `tools/call`
/// opens and reads the file it names and answers with its text.
fn floor_server() {
    let (stdin, stdout) = (std::io::stdin().lock(), std::io::stdout());
    let mut out = stdout.lock();
    for line in stdin.lines() {
        let Ok(line) = line else { return };
        let Ok(request) = serde_json::from_str::<Value>(&line) else { continue };
        let Some(id) = request.get("id") else { continue };
        let result = match request["method"].as_str().unwrap_or_default() {
            "initialize" => json!({
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "floor", "version": "1.0.0"},
            }),
            "tools/list" => json!({"tools": [{"name": "read", "inputSchema": {"type": "object"}}]}),
            "tools/call" => {
                match std::fs::read_to_string(request["params"]["arguments"]["path"].as_str().unwrap_or("")) {
                    Ok(text) => json!({"content": [{"type": "text", "text": text}]}),
                    Err(e) => json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true}),
                }
            }
            _ => json!({}),
        };
        let response = json!({"jsonrpc": "2.0", "id": id, "result": result});
        if writeln!(out, "{response}").and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}

/// An MCP server in a child process and the raw JSON-RPC 2.0 client talking
/// to it: one JSON message a line on its stdin and stdout. The writer and
/// the reader share one thread: at most 32 requests (about 5 KB) are ever
/// unread, far less than a pipe holds, so a write never waits on a server
/// that is itself waiting for its responses to be read.
struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
    next_id: u64,
    /// When each outstanding `tools/call` was sent, by request id.
    sent: HashMap<u64, Instant>,
    /// `"method":"tools/call","params":{…}}` and a newline: a request once
    /// its id is put in front.
    call_tail: String,
    /// What every result must contain: the file's first line.
    expect: String,
    /// `tools/call`s answered so far.
    calls: usize,
    /// The server's RSS in MiB after each `RSS_EVERY` calls.
    rss: Vec<f64>,
}

impl Client {
    /// Starts `server`, initializes the session, and picks its reading tool.
    fn start(server: &Server, file: &Path) -> Client {
        let mut child = (server.command)()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", server.name));
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let text = std::fs::read_to_string(file).expect("small file");
        let mut client = Client {
            child,
            stdin,
            stdout,
            line: String::new(),
            next_id: 0,
            sent: HashMap::new(),
            call_tail: String::new(),
            expect: text.lines().next().expect("a first line").to_string(),
            calls: 0,
            rss: Vec::new(),
        };
        client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "toolhost-peers-bench", "version": "1.0.0"},
            }),
        );
        client.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let list = client.request("tools/list", json!({}));
        let names: Vec<&str> =
            list["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
        let tool = (server.pick_tool)(&names);
        assert!(names.contains(&tool), "{} offers no {tool}: {names:?}", server.name);
        let params = json!({"name": tool, "arguments": (server.arguments)(file)});
        client.call_tail = format!(r#""method":"tools/call","params":{params}}}"#) + "\n";
        client
    }

    fn write(&mut self, message: &Value) {
        self.stdin.write_all(format!("{message}\n").as_bytes()).expect("write to the server");
    }

    /// The next response from the server, and when its line was read
    /// (notifications and requests from the server are skipped: the client
    /// declared no capabilities to answer them).
    fn read(&mut self) -> (Value, Instant) {
        loop {
            self.line.clear();
            let n = self.stdout.read_line(&mut self.line).expect("read from the server");
            let received = Instant::now();
            assert!(n > 0, "the server closed its output");
            let message: Value = serde_json::from_str(&self.line).expect("a JSON-RPC message");
            if message.get("method").is_none() {
                return (message, received);
            }
        }
    }

    /// A request answered before the next one is sent; its result.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let (response, _) = self.read();
        assert_eq!(response["id"], id, "{response}");
        response.get("result").cloned().unwrap_or_else(|| panic!("{method} failed: {response}"))
    }

    /// Sends one `tools/call`.
    fn send_call(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        let request = format!(r#"{{"jsonrpc":"2.0","id":{id},{}"#, self.call_tail);
        self.sent.insert(id, Instant::now());
        self.stdin.write_all(request.as_bytes()).expect("write to the server");
    }

    /// Waits for the answer to one outstanding `tools/call`, checks it (a
    /// result, not an error, with the file's text) and returns its round
    /// trip in microseconds.
    fn receive_call(&mut self) -> f64 {
        let (response, received) = self.read();
        let id = response["id"].as_u64().unwrap_or_else(|| panic!("a response without id: {response}"));
        let sent = self.sent.remove(&id).unwrap_or_else(|| panic!("an answer to no outstanding call: {response}"));
        let result = response.get("result").unwrap_or_else(|| panic!("tools/call failed: {response}"));
        assert_ne!(result["isError"], true, "{response}");
        let has_text = result["content"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().any(|b| b["text"].as_str().is_some_and(|t| t.contains(&self.expect))));
        assert!(has_text, "the result lacks the file's first line: {response}");
        self.calls += 1;
        if self.calls.is_multiple_of(RSS_EVERY) && self.rss.len() < RSS_MARKS {
            self.rss.push(self.rss_mib());
        }
        (received - sent).as_secs_f64() * 1e6
    }

    /// One call at a time: its round trip in microseconds.
    fn call(&mut self) -> f64 {
        self.send_call();
        self.receive_call()
    }

    /// Keeps `k` calls in flight (sending one more as each is answered) for
    /// `window`, if any, or until `max` calls have been sent, then waits for
    /// the last answers.
    fn in_flight(&mut self, k: usize, window: Option<Duration>, max: usize) -> Batch {
        let cpu = self.cpu_seconds();
        let start = Instant::now();
        let mut sent = 0;
        while sent < k.min(max) {
            self.send_call();
            sent += 1;
        }
        for answered in 1.. {
            self.receive_call();
            if sent < max && window.is_none_or(|w| start.elapsed() < w) {
                self.send_call();
                sent += 1;
            }
            if answered == sent {
                break;
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        Batch { rate: sent as f64 / seconds, cpu_us: (self.cpu_seconds() - cpu) * 1e6 / sent as f64 }
    }

    /// The server's CPU time so far, user and system (fields 14 and 15 of
    /// `/proc/<pid>/stat`, in clock ticks), in seconds.
    fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).expect("/proc/<pid>/stat");
        // The fields after the command's name (in parentheses, which may
        // hold spaces) start with field 3.
        let (_, rest) = stat.rsplit_once(')').expect("stat fields");
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |field: usize| fields[field - 3].parse::<u64>().expect("clock ticks");
        (ticks(14) + ticks(15)) as f64 / clock_ticks_per_second()
    }

    /// The server's resident set (`VmRSS`), in MiB.
    fn rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("/proc/<pid>/status");
        let kib: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS");
        kib / 1024.0
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// A run with calls in flight: calls per second, and the server's CPU time
/// per call in microseconds.
struct Batch {
    rate: f64,
    cpu_us: f64,
}

/// What one round measured of one server.
struct Round {
    p50: f64,
    p99: f64,
    /// CPU time per call in microseconds, one at a time (the timed calls).
    cpu_one_us: f64,
    /// The runs with `IN_FLIGHT` calls in flight.
    batches: Vec<Batch>,
    /// RSS in MiB after each `RSS_EVERY` calls.
    rss: Vec<f64>,
    /// RSS in MiB before and after `STEADY` calls at 32 in flight, at the end.
    steady: [f64; 2],
}

/// One round against a fresh server process.
fn round(server: &Server, file: &Path) -> Round {
    let mut client = Client::start(server, file);
    for _ in 0..WARM_UP {
        client.call();
    }
    let cpu = client.cpu_seconds();
    let latencies: Vec<f64> = (0..TIMED).map(|_| client.call()).collect();
    let cpu_one_us = (client.cpu_seconds() - cpu) * 1e6 / TIMED as f64;
    let latency = common::stats(latencies);
    let batches = IN_FLIGHT.iter().map(|&k| client.in_flight(k, Some(WINDOW), MAX_BATCH)).collect();
    let total = RSS_EVERY * RSS_MARKS;
    if client.calls < total {
        client.in_flight(32, None, total - client.calls);
    }
    assert_eq!(client.rss.len(), RSS_MARKS);
    let before = client.rss_mib();
    client.in_flight(32, None, STEADY);
    let steady = [before, client.rss_mib()];
    Round { p50: latency.p50, p99: latency.p99, cpu_one_us, batches, rss: std::mem::take(&mut client.rss), steady }
}

/// A figure over the rounds: their median and range.
#[derive(Clone, Copy)]
struct Spread {
    median: f64,
    min: f64,
    max: f64,
}

impl Spread {
    fn of(mut values: Vec<f64>) -> Spread {
        values.sort_by(f64::total_cmp);
        Spread { median: values[values.len() / 2], min: values[0], max: values[values.len() - 1] }
    }

    /// "median unit (min–max)", `decimals` after the point.
    fn show(&self, decimals: usize, unit: &str) -> String {
        format!("{:.*} {unit} ({:.*}–{:.*})", decimals, self.median, decimals, self.min, decimals, self.max)
    }
}

/// toolhost's target for a row of the MCP table.
enum Target {
    None,
    AtMost(f64),
    /// At least this many times the reference server's figure.
    PeerTimes(f64),
    /// At most this many MiB after the last calls, and flat.
    FlatRss(f64),
    /// Flat over the `STEADY` calls at one load.
    SteadyRss,
}

/// RSS is "flat" if it grew by at most this many MiB between the first and
/// the last RSS reading.
const FLAT_MIB: f64 = 1.0;

/// A row of the MCP table: a figure of each round, shown with `decimals`
/// and `unit`; the ratio of throughputs reads "× peer".
struct Row {
    label: String,
    figure: Box<dyn Fn(&Round) -> f64>,
    decimals: usize,
    unit: &'static str,
    throughput: bool,
    target: Target,
}

fn rows() -> Vec<Row> {
    let row = |label: String, figure: Box<dyn Fn(&Round) -> f64>, decimals, unit, target| Row {
        label,
        figure,
        decimals,
        unit,
        throughput: unit == "calls/s",
        target,
    };
    let mut rows = vec![
        row("round trip p50, one at a time".into(), Box::new(|r| r.p50), 1, "µs", Target::AtMost(200.0)),
        row("round trip p99, one at a time".into(), Box::new(|r| r.p99), 1, "µs", Target::None),
        row("server CPU per call, one at a time".into(), Box::new(|r| r.cpu_one_us), 1, "µs", Target::AtMost(60.0)),
    ];
    for (i, k) in IN_FLIGHT.into_iter().enumerate() {
        let figure = Box::new(move |r: &Round| r.batches[i].cpu_us);
        rows.push(row(format!("server CPU per call, {k} in flight"), figure, 1, "µs", Target::AtMost(60.0)));
    }
    for (i, k) in IN_FLIGHT.into_iter().enumerate() {
        let target = if k == 32 { Target::PeerTimes(4.0) } else { Target::None };
        rows.push(row(
            format!("throughput, {k} in flight"),
            Box::new(move |r| r.batches[i].rate),
            0,
            "calls/s",
            target,
        ));
    }
    for (mark, target) in [(0, Target::None), (RSS_MARKS - 1, Target::FlatRss(25.0))] {
        let label = format!("server RSS after {},000 calls", (mark + 1) * RSS_EVERY / 1000);
        rows.push(row(label, Box::new(move |r| r.rss[mark]), 1, "MiB", target));
    }
    rows.push(row(
        format!("server RSS after {},000 more calls at 32 in flight", STEADY / 1000),
        Box::new(|r| r.steady[1]),
        1,
        "MiB",
        Target::SteadyRss,
    ));
    rows
}

fn mcp() {
    let file = small_file();
    let (servers, missing) = servers(&file);
    if let Some(why) = &missing {
        eprintln!("{why}\nthe server-filesystem columns stay empty");
    }
    let mut rounds: Vec<Vec<Round>> = servers.iter().map(|_| Vec::new()).collect();
    for r in 0..ROUNDS {
        for (server, results) in servers.iter().zip(&mut rounds) {
            let m = round(server, &file);
            eprintln!(
                "round {r}, {}: p50 {:.1} µs, p99 {:.1} µs, CPU/call {:.1} µs; {} calls/s at {:?} in flight; RSS {:.1?} MiB, at a steady 32 in flight {:.1?} MiB",
                server.name,
                m.p50,
                m.p99,
                m.cpu_one_us,
                m.batches.iter().map(|b| format!("{:.0}", b.rate)).collect::<Vec<_>>().join(" / "),
                IN_FLIGHT,
                m.rss,
                m.steady
            );
            results.push(m);
        }
    }

    let (toolhost, floor, peer) = (&rounds[0], &rounds[1], rounds.get(2));
    let not_run = if peer.is_some() { "" } else { " (not run)" };
    println!(
        "| read a 1 KB file over MCP stdio ({ROUNDS} rounds: median (min–max)) | toolhost | floor (one thread, no SDK) | server-filesystem {SERVER_FILESYSTEM_VERSION}{not_run} | toolhost / server-filesystem | target |"
    );
    println!("|---|---|---|---|---|---|");
    for row in rows() {
        let t = Spread::of(toolhost.iter().map(&row.figure).collect());
        let f = Spread::of(floor.iter().map(&row.figure).collect());
        let p = peer.map(|p| Spread::of(p.iter().map(&row.figure).collect()));
        let ratio = p.map_or("—".into(), |p| {
            let ratio = times(t.median / p.median);
            if row.throughput { format!("{ratio} peer") } else { ratio }
        });
        let target = match row.target {
            Target::None => String::new(),
            Target::AtMost(limit) => format!("≤ {limit} {} {}", row.unit, tick(t.median <= limit)),
            Target::PeerTimes(factor) => p.map_or(format!("≥ {factor}× server-filesystem (no peer)"), |p| {
                format!("≥ {factor}× server-filesystem {}", tick(t.median >= factor * p.median))
            }),
            Target::FlatRss(limit) => {
                let grew = Spread::of(toolhost.iter().map(|r| r.rss[RSS_MARKS - 1] - r.rss[0]).collect()).median;
                let flat = grew <= FLAT_MIB;
                format!(
                    "≤ {limit} MiB and flat {} (grew {grew:+.1} MiB from 10,000 calls)",
                    tick(t.median <= limit && flat)
                )
            }
            Target::SteadyRss => {
                let grew = Spread::of(toolhost.iter().map(|r| r.steady[1] - r.steady[0]).collect()).median;
                format!("flat at one load {} (grew {grew:+.1} MiB)", tick(grew <= FLAT_MIB))
            }
        };
        println!(
            "| {} | {} | {} | {} | {ratio} | {target} |",
            row.label,
            t.show(row.decimals, row.unit),
            f.show(row.decimals, row.unit),
            p.map_or("—".into(), |p| p.show(row.decimals, row.unit))
        );
    }
    println!();
    if let Some(why) = &missing {
        println!("server-filesystem was not measured: {why}\n");
    }
    for (server, results) in servers.iter().zip(&rounds) {
        let marks: Vec<String> = (0..RSS_MARKS)
            .map(|m| format!("{:.1}", Spread::of(results.iter().map(|r| r.rss[m]).collect()).median))
            .collect();
        println!(
            "RSS of {} after {} calls (median of rounds): {} MiB.",
            server.name,
            (1..=RSS_MARKS).map(|m| format!("{},000", m * RSS_EVERY / 1000)).collect::<Vec<_>>().join(" / "),
            marks.join(" → ")
        );
    }
    println!(
        "\nOne client for both (raw JSON-RPC over stdio, one thread); each round a fresh server process: \
         {WARM_UP} warm-up + {TIMED} timed calls one at a time, then {} s (or {MAX_BATCH} calls) at each of \
         {IN_FLIGHT:?} in flight, topped up to {} calls at 32 in flight; then {STEADY} more at 32 in flight, \
         the RSS read before and after them. \"Flat\": RSS grew ≤ {FLAT_MIB} MiB from the first reading to the \
         last.",
        WINDOW.as_secs(),
        RSS_EVERY * RSS_MARKS
    );
}

// ---------------------------------------------------------------------------
// Part `process`

/// One side of a comparison: a command, run whole (spawn to exit), and the
/// check of its output.
struct Contender<'a> {
    label: String,
    command: Command,
    check: Box<dyn Fn(&Output) + 'a>,
}

impl<'a> Contender<'a> {
    fn new(label: impl Into<String>, command: Command, check: impl Fn(&Output) + 'a) -> Self {
        Contender { label: label.into(), command, check: Box::new(check) }
    }

    /// One run, checked; its wall time in microseconds.
    fn run(&mut self) -> f64 {
        let started = Instant::now();
        let out = self.command.output().unwrap_or_else(|e| panic!("{}: {e}", self.label));
        let micros = started.elapsed().as_secs_f64() * 1e6;
        (self.check)(&out);
        micros
    }
}

/// Runs each contender once untimed, then `n` timed runs of each, taking
/// turns (A, B, A, B, …).
fn alternately(n: usize, contenders: &mut [Contender]) -> Vec<Stats> {
    for c in contenders.iter_mut() {
        c.run();
    }
    let mut samples = vec![Vec::with_capacity(n); contenders.len()];
    for _ in 0..n {
        for (c, s) in contenders.iter_mut().zip(&mut samples) {
            s.push(c.run());
        }
    }
    samples.into_iter().map(common::stats).collect()
}

/// "p50 ms (p10–p90)".
fn ms(s: &Stats) -> String {
    format!("{:.1} ms ({:.1}–{:.1})", s.p50 / 1e3, s.p10 / 1e3, s.p90 / 1e3)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Checks that a run succeeded, showing its output if not.
fn succeeded(label: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{label}: {}\n{}\n{}",
        out.status,
        stdout(out).chars().take(2000).collect::<String>(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The patterns of the Grep comparison: a literal, an alternation with a
/// class, an alternation with word boundaries.
const PATTERNS: [(&str, &str); 3] = [
    ("literal", "connection_timeout"),
    ("alternation + class", "(error|fatal)s? [a-z]+"),
    ("word-bounded alternation", r"\b(error|warning|fatal)\b"),
];

fn process() {
    println!("| whole process, p50 (p10–p90) | toolhost | baseline | ratio of p50s | target |");
    println!("|---|---|---|---|---|");
    grep();
    read();
    bash();
}

/// The sum of `rg --count`'s per-file counts (`path:count` lines).
fn rg_total(out: &Output) -> u64 {
    stdout(out).lines().map(|l| l.rsplit_once(':').and_then(|(_, n)| n.parse::<u64>().ok()).expect("path:count")).sum()
}

/// The total of Grep's count mode, from its closing line ("Found N total
/// occurrences across M files."). A result too long for the model was saved
/// to the file its `<persisted-output>` preview names: that file is read,
/// then removed with the session's directories it leaves empty.
fn grep_total(out: &Output) -> u64 {
    let mut text = stdout(out);
    let saved = text.lines().find_map(|l| l.split_once("Full output saved to: ")).map(|(_, p)| PathBuf::from(p.trim()));
    if let Some(path) = saved {
        text = std::fs::read_to_string(&path).expect("the saved result");
        let _ = std::fs::remove_file(&path);
        for dir in path.ancestors().skip(1).take(2) {
            let _ = std::fs::remove_dir(dir);
        }
    }
    text.lines()
        .find_map(|l| l.strip_prefix("Found ").and_then(|rest| rest.split(' ').next()).and_then(|n| n.parse().ok()))
        .unwrap_or_else(|| panic!("no total in Grep's output: {}", text.chars().take(2000).collect::<String>()))
}

fn grep() {
    let tree = bench_dir("grep-tree");
    eprintln!("the Grep tree (written on first use)...");
    common::generate_tree(&tree);
    let Some(rg) = common::ripgrep() else {
        println!("| Grep | | rg not available | | |");
        return;
    };
    let (mut log_j1, mut log_rg) = (0.0, 0.0);
    for (label, pattern) in PATTERNS {
        eprintln!("Grep `{pattern}`...");
        let rg_count = |threads: Option<&str>| {
            let mut cmd = Command::new(&rg);
            cmd.args(threads).args(["--count", pattern]).arg(&tree);
            cmd
        };
        let expected = {
            let out = rg_count(None).output().expect("rg");
            succeeded("rg", &out);
            rg_total(&out)
        };
        let mut call = toolhost(&tree);
        call.args(["call", "Grep"])
            .arg(json!({"pattern": pattern, "output_mode": "count", "head_limit": 0}).to_string());
        let mut contenders = [
            Contender::new("toolhost call Grep", call, |out| {
                succeeded("toolhost call Grep", out);
                assert_eq!(grep_total(out), expected, "toolhost's total against rg's for {pattern}");
            }),
            Contender::new("rg -j1 --count", rg_count(Some("-j1")), |out| {
                succeeded("rg -j1", out);
                assert_eq!(rg_total(out), expected);
            }),
            Contender::new("rg --count", rg_count(None), |out| {
                succeeded("rg", out);
                assert_eq!(rg_total(out), expected);
            }),
        ];
        let [t, j1, all] = &alternately(10, &mut contenders)[..] else { unreachable!() };
        log_j1 += (t.p50 / j1.p50).ln();
        log_rg += (t.p50 / all.p50).ln();
        println!(
            "| Grep `{}` ({label}; {expected} matching lines in both), 5,000 files / 50 MB | {} | `rg -j1 --count` {} | {} | |",
            cell(pattern),
            ms(t),
            ms(j1),
            times(t.p50 / j1.p50)
        );
        println!("| | | `rg --count` {} | {} | |", ms(all), times(t.p50 / all.p50));
    }
    let n = PATTERNS.len() as f64;
    let (j1, all) = ((log_j1 / n).exp(), (log_rg / n).exp());
    println!(
        "| Grep, geometric mean of the ratios | | | {} `rg -j1`, {} `rg` | ≤ 1.5× `rg -j1` {}, ≤ 1.5× `rg` {} |",
        times(j1),
        times(all),
        tick(j1 <= 1.5),
        tick(all <= 1.5)
    );
}

fn read() {
    let ws = bench_dir("read-ws");
    let file = common::ten_megabyte_file(&ws);
    let text = std::fs::read_to_string(&file).expect("10 MB file");
    // The last 1,000 lines: Read scans the whole file to reach them.
    let lines = text.lines().count();
    let (first, last) = (lines - 999, lines);
    let last_line = text.lines().next_back().expect("a last line").to_string();
    drop(text);
    let size = std::fs::metadata(&file).expect("10 MB file").len();
    eprintln!("Read, lines {first}–{last} of {}, and all of it...", file.display());
    let mut call = toolhost(&ws);
    call.args(["call", "Read"]).arg(json!({"file_path": file, "offset": first, "limit": 1000}).to_string());
    // All lines: Read takes in the whole file and measures it, and answers,
    // as Claude Code does, that it is over the token cap. The text selected
    // is the file without its last `\n`, one UTF-16 unit per byte here, and
    // its estimate that many units over 4, rounded half up.
    let mut whole = toolhost(&ws);
    whole.args(["call", "Read"]).arg(json!({"file_path": file, "offset": 1, "limit": lines}).to_string());
    let over = format!("File content ({} tokens) exceeds maximum allowed tokens (25000)", (size + 1) / 4);
    let mut cat_sed = Command::new("sh");
    cat_sed.arg("-c").arg(format!("cat -n '{}' | sed -n '{first},{last}p'", file.display()));
    let mut cat = Command::new("cat");
    cat.arg("-n").arg(&file).stdout(std::process::Stdio::null());
    // Both print the window numbered; only the number's padding differs.
    let window = |label: &str, out: &Output| {
        succeeded(label, out);
        let text = stdout(out);
        let printed: Vec<&str> = text.lines().collect();
        assert_eq!(printed.len(), 1000, "{label}");
        assert!(printed[0].trim_start().starts_with(&format!("{first}\t")), "{label}: {}", printed[0]);
        assert_eq!(printed[999].trim_start(), format!("{last}\t{last_line}"), "{label}");
    };
    let mut contenders = [
        Contender::new("toolhost call Read", call, |out| window("toolhost call Read", out)),
        Contender::new("toolhost call Read, all lines", whole, |out| {
            assert!(stdout(out).starts_with(&over), "{}", stdout(out));
        }),
        Contender::new("cat -n | sed -n", cat_sed, |out| window("cat -n | sed -n", out)),
        Contender::new("cat -n > /dev/null", cat, |out| succeeded("cat -n > /dev/null", out)),
    ];
    let [t, all, sed, cat] = &alternately(15, &mut contenders)[..] else { unreachable!() };
    println!(
        "| Read, the last 1,000 of {lines} lines of a 10 MB file | {} | `{}` {} | {} | ≤ 1.5× {} |",
        ms(t),
        cell(&format!("cat -n FILE | sed -n '{first},{last}p'")),
        ms(sed),
        times(t.p50 / sed.p50),
        tick(t.p50 <= 1.5 * sed.p50)
    );
    println!(
        "| | | `cat -n FILE > /dev/null` {} | {} | ≤ 1.2× {} |",
        ms(cat),
        times(t.p50 / cat.p50),
        tick(t.p50 <= 1.2 * cat.p50)
    );
    println!(
        "| Read, all {lines} lines of a 10 MB file (read and measured whole; over the token cap) | {} | \
         `cat -n FILE > /dev/null` {} | {} | ≤ 1.2× {} |",
        ms(all),
        ms(cat),
        times(all.p50 / cat.p50),
        tick(all.p50 <= 1.2 * cat.p50)
    );
}

fn bash() {
    eprintln!("Bash `true`...");
    let mut call = toolhost(&bench_dir("peers-bash-ws"));
    call.args(["call", "Bash"]).arg(json!({"command": "true"}).to_string());
    let mut native = Command::new("bash");
    native.args(["-c", "true"]);
    let mut contenders = [
        Contender::new("toolhost call Bash", call, |out| {
            succeeded("toolhost call Bash", out);
            assert_eq!(stdout(out).trim_end(), "(Bash completed with no output)");
        }),
        Contender::new("bash -c true", native, |out| succeeded("bash -c true", out)),
    ];
    let [t, b] = &alternately(200, &mut contenders)[..] else { unreachable!() };
    println!(
        "| `Bash {{\"command\": \"true\"}}` (the whole `toolhost call` process, start-up included) | {} | `bash -c true` {} | {} | ≤ 1.3× {} |",
        ms(t),
        ms(b),
        times(t.p50 / b.p50),
        tick(t.p50 <= 1.3 * b.p50)
    );
}
