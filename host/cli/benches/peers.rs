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
//! reference server is installed with npm on first use, where the tests
//! install it; if that fails its columns stay empty.
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
//! Prints Markdown tables, each figure with the state of the machine it was
//! measured in (`common::Machine`: the time, the load average, a fixed
//! workload's duration as a gauge of the machine's speed then, the CPU
//! share stolen by the hypervisor): per round for `mcp`, per comparison for
//! `process`.

mod common;
#[path = "peers/mcp.rs"]
mod mcp;
#[path = "peers/process.rs"]
mod process;

use common::Stats;
use mcp::*;
use process::*;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const TOOLHOST: &str = env!("CARGO_BIN_EXE_toolhost");

/// The reference server, pinned (the version the tests run).
const SERVER_FILESYSTEM: toolhost_tests::pins::Pin = toolhost_tests::pins::MCP_SERVER_FILESYSTEM;
const SERVER_FILESYSTEM_VERSION: &str = SERVER_FILESYSTEM.version;

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
            socket: false,
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
            socket: false,
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
