//! toolhost's benchmark: `cargo bench -p toolhost-cli --bench pipeline`.
//!
//! Every figure is measured side by side with its baseline in the same run:
//! the pipeline against the same logic as a native function, Read and Grep
//! against the same crates compiled natively (and Grep against `rg -j1`).
//! Each allocator configuration runs in its own process (configurations
//! interfere with each other inside one process). Prints a Markdown table.
//!
//! `rg` is looked up on PATH, then in `target/tools/bin`; if absent it is
//! installed there with `cargo install ripgrep`.

mod common;

use common::Stats;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::{Allocator, CallOptions, Host, ToolUse};

const TOOLHOST: &str = env!("CARGO_BIN_EXE_toolhost");

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let part = args.get(i + 1).expect("--child PART").as_str();
        let allocator: Allocator = args.get(i + 2).map_or(Allocator::Pooling, |a| a.parse().expect("allocator"));
        let out = match part {
            "latency" => latency(allocator),
            "throughput" => throughput(allocator),
            "read" => read_10mb(),
            "grep" => grep_tree(),
            "rss" => rss(),
            "shell" => shell(),
            "bash" => bash_true(),
            other => panic!("unknown part {other}"),
        };
        println!("{out}");
        return;
    }
    // `cargo bench` passes `--bench`; a filter argument selects parts.
    let only: Option<&str> = args.iter().skip(1).find(|a| !a.starts_with("--")).map(String::as_str);
    let run = |part: &str| only.is_none_or(|o| part.contains(o));
    let mut report = Report::default();
    if run("calls") {
        for alloc in ["pooling", "on-demand"] {
            // Latency: five processes pinned to one CPU (migrations between
            // the two vCPUs of these machines add noise, and some processes
            // run slow throughout), the median of their medians. Throughput:
            // one process, unpinned.
            let mut runs: Vec<Value> = (0..5).map(|_| child_pinned("latency", alloc)).collect();
            runs.sort_by(|a, b| {
                a["pipeline_p50"].as_f64().unwrap_or(0.0).total_cmp(&b["pipeline_p50"].as_f64().unwrap_or(0.0))
            });
            let mut merged = runs.swap_remove(2);
            let throughput = child("throughput", alloc);
            if let (Some(m), Some(t)) = (merged.as_object_mut(), throughput.as_object()) {
                m.extend(t.clone());
            }
            report.calls.push((alloc.to_string(), merged));
        }
    }
    if run("read") {
        report.read = Some(child_pinned("read", "pooling"));
    }
    if run("grep") {
        report.grep = Some(child_pinned("grep", "pooling"));
    }
    if run("startup") {
        report.startup = Some(startup());
    }
    if run("rss") {
        report.rss = Some(child("rss", "pooling"));
    }
    if run("bash") {
        report.bash = Some(child_pinned("bash", "pooling"));
    }
    if run("shell") {
        report.shell = Some(child_pinned("shell", "pooling"));
    }
    report.print();
}

/// Runs one part in a fresh process and returns its JSON.
fn child(part: &str, allocator: &str) -> Value {
    run_child(part, allocator, false)
}

/// Like [`child`], pinned to one CPU with `taskset` when it is available.
fn child_pinned(part: &str, allocator: &str) -> Value {
    run_child(part, allocator, true)
}

fn run_child(part: &str, allocator: &str, pinned: bool) -> Value {
    eprintln!("running {part} ({allocator})...");
    let out = common::self_command(pinned).args(["--child", part, allocator]).output().expect("run bench child");
    assert!(out.status.success(), "{part} failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("child prints JSON")
}

/// Runs `f` once untimed (page cache, lazy initialisation), then `iterations`
/// timed runs.
fn time<T>(iterations: usize, f: impl FnMut() -> T) -> Stats {
    common::time(1, iterations, f)
}

fn bench_dir(name: &str) -> PathBuf {
    let dir = toolhost_tests::repo_root().join("target").join("bench-data").join(name);
    std::fs::create_dir_all(&dir).expect("bench dir");
    dir
}

fn host(allocator: Allocator, workspace: &Path, plugins: Option<PathBuf>) -> Host {
    Host::builder()
        .workspace(workspace)
        .plugins_dir(plugins)
        .allocator(allocator)
        .data_dir(bench_dir("data"))
        .cache_dir(Some(toolhost_tests::shared_cache_dir()))
        .build()
        .expect("host")
}

/// The Echo tool's logic as a native function: parse the input, build the result.
fn echo_native(input: &Value) -> toolhost::ToolResult {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct EchoInput {
        text: String,
        #[serde(default)]
        progress: u32,
        #[serde(default)]
        count: bool,
    }
    let parsed = EchoInput::deserialize(input).expect("valid input");
    toolhost::ToolResult {
        tool_use_id: "toolu_bench".into(),
        content: vec![toolhost::Content::Text(parsed.text)],
        is_error: false,
        structured: None,
        stop: None,
        usage: None,
    }
}

use serde::Deserialize as _;

/// A host with the Echo tool installed, and the call the benchmarks make.
fn echo_host(allocator: Allocator) -> (Host, ToolUse) {
    let ws = bench_dir("calls-ws");
    let plugins = bench_dir("calls-plugins");
    std::fs::copy(toolhost_tests::ECHO, plugins.join("echo.wasm")).expect("install echo");
    let host = host(allocator, &ws, Some(plugins));
    (host, ToolUse { id: "toolu_bench".into(), name: "Echo".into(), input: json!({"text": "hello"}) })
}

fn latency(allocator: Allocator) -> Value {
    let (host, call) = echo_host(allocator);
    let session = host.ephemeral_session();
    let options = CallOptions::default();
    let one = || {
        let r = host.call(&session, &call, &options);
        assert!(!r.is_error, "{r:?}");
        r
    };
    for _ in 0..2000 {
        one();
    }
    let pipeline = time(20_000, one);
    for _ in 0..2000 {
        host.bare_call("Echo").expect("bare call");
    }
    let bare = time(20_000, || host.bare_call("Echo"));
    let native = time(20_000, || echo_native(&call.input));
    // The call the MCP benchmark makes (peers.rs: Read of a 1 KB file), here
    // on the calling thread: what a front's per-call figure adds is its own.
    let file = bench_dir("calls-ws").join("small.txt");
    let text: String =
        (1..=20).map(|i| format!("line {i:02}: the quick brown fox jumps over the lazy dog {:04}\n", i * 37)).collect();
    std::fs::write(&file, text).expect("small file");
    let read = ToolUse { id: "toolu_read".into(), name: "Read".into(), input: json!({"file_path": file}) };
    let read_one = || {
        let r = host.call(&session, &read, &options);
        assert!(!r.is_error, "{r:?}");
        r
    };
    for _ in 0..2000 {
        read_one();
    }
    let small_read = time(20_000, read_one);
    // The same call after the thread slept (as a server's does between one
    // client's requests): the CPU it takes, caches and predictors cold.
    let mut after_pause = Vec::with_capacity(3000);
    for _ in 0..3000 {
        std::thread::sleep(Duration::from_micros(300));
        let start = thread_cpu_micros();
        read_one();
        after_pause.push(thread_cpu_micros() - start);
    }
    let after_pause = common::stats(after_pause);
    json!({
        "read_p50": small_read.p50, "read_p99": small_read.p99, "read_paused_cpu_p50": after_pause.p50,
        "allocator": format!("{:?}", host.allocator()),
        "pipeline_p50": pipeline.p50, "pipeline_p99": pipeline.p99,
        "bare_p50": bare.p50, "bare_p99": bare.p99,
        "native_p50": native.p50, "native_p99": native.p99,
    })
}

/// The CPU time the calling thread has used, in microseconds.
fn thread_cpu_micros() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec for the call to fill in.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1e6 + t.tv_nsec as f64 / 1e3
}

fn throughput(allocator: Allocator) -> Value {
    let (host, call) = echo_host(allocator);
    let session = host.ephemeral_session();
    let rate = |threads: usize| {
        let window = Duration::from_secs(2);
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (host, session, call) = (host.clone(), Arc::clone(&session), call.clone());
                std::thread::spawn(move || {
                    let options = CallOptions::default();
                    let start = Instant::now();
                    let mut n = 0u64;
                    while start.elapsed() < window {
                        host.call(&session, &call, &options);
                        n += 1;
                    }
                    n as f64 / start.elapsed().as_secs_f64()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("worker")).sum::<f64>()
    };
    rate(1);
    json!({"throughput_1": rate(1), "throughput_2": rate(2)})
}

fn read_10mb() -> Value {
    let ws = bench_dir("read-ws");
    let file = common::ten_megabyte_file(&ws);
    let host = host(Allocator::Pooling, &ws, None);
    let session = host.ephemeral_session();
    let call = ToolUse {
        id: "toolu_read".into(),
        name: "Read".into(),
        // What a model reads of a large file: a window under Read's
        // 25,000-token cap (a whole 10 MB file is refused, as in Claude Code),
        // found by scanning the file up to it.
        input: json!({"file_path": file.display().to_string(), "offset": READ_OFFSET, "limit": READ_LIMIT}),
    };
    let first = host.call(&session, &call, &CallOptions::default());
    assert!(!first.is_error && first.text().len() > 80_000, "{:?}", &first.text()[..200.min(first.text().len())]);
    let wasm = time(15, || host.call(&session, &call, &CallOptions::default()));
    // The component's own code, natively: the same chunked reading and
    // rendering, the whole result kept in one string instead of streamed out.
    let native = time(15, || {
        let f = std::fs::File::open(&file).expect("open");
        toolhost_plugin_read::render_file(f, Some(READ_OFFSET), Some(READ_LIMIT), usize::MAX, &mut |_| {})
            .expect("read")
            .expect("text")
    });
    json!({"wasm_ms": wasm.p50 / 1e3, "native_ms": native.p50 / 1e3})
}

/// The window of the 10 MB file the Read benchmark reads: 1,000 lines from
/// the middle (about 87 KB, 22,000 estimated tokens).
const READ_OFFSET: u64 = 60_000;
const READ_LIMIT: u64 = 1_000;

/// The patterns of the Grep benchmark: a literal, an alternation with word
/// boundaries, a regex without any literal.
const PATTERNS: [(&str, &str); 3] = [
    ("literal", "connection_timeout"),
    ("alternation", r"\b(error|warning|fatal)\b"),
    ("no literal", r"[A-Z]{3}[0-9]{3}"),
];

fn grep_tree() -> Value {
    let root = bench_dir("grep-tree");
    common::generate_tree(&root);
    let rg = common::ripgrep();
    let host = host(Allocator::Pooling, &root, None);
    let session = host.ephemeral_session();
    let mut rows = Vec::new();
    for (label, pattern) in PATTERNS {
        let input = json!({"pattern": pattern, "output_mode": "count", "head_limit": 0});
        let call = ToolUse { id: "toolu_grep".into(), name: "Grep".into(), input: input.clone() };
        let wasm = time(5, || {
            let r = host.call(&session, &call, &CallOptions::default());
            assert!(!r.is_error, "{r:?}");
        });
        let native_input: toolhost_plugin_grep::GrepInput = serde_json::from_value(input).expect("grep input");
        let native =
            time(5, || toolhost_plugin_grep::search(&root, &native_input, &Default::default()).expect("native search"));
        let rg_ms = rg.as_ref().map(|rg| {
            time(5, || {
                let out = Command::new(rg).args(["-j1", "--count", pattern]).arg(&root).output().expect("rg");
                assert!(out.status.success());
            })
            .p50 / 1e3
        });
        rows.push(json!({"pattern": label, "regex": pattern, "wasm_ms": wasm.p50 / 1e3, "native_ms": native.p50 / 1e3, "rg_ms": rg_ms}));
    }
    json!(rows)
}

fn startup() -> Value {
    let ws = bench_dir("startup-ws");
    let empty_plugins = bench_dir("startup-plugins");
    std::fs::write(ws.join("a.txt"), "one\n").expect("write a.txt");
    let read = serde_json::json!({"file_path": ws.join("a.txt")}).to_string();
    let run = |cache: &Path, args: &[&str]| {
        let out = Command::new(TOOLHOST)
            .arg("--workspace")
            .arg(&ws)
            .arg("--plugins")
            .arg(&empty_plugins)
            .args(args)
            .env("TOOLHOST_CACHE_DIR", cache)
            .output()
            .expect("run toolhost");
        assert!(out.status.success());
    };
    // Cold: an empty cache each time. `tools` lists the built-ins from the
    // descriptions in the binary; the first call compiles its tool.
    let timed = |f: &dyn Fn()| {
        let started = Instant::now();
        f();
        started.elapsed().as_secs_f64() * 1e3
    };
    let (mut tools_ms, mut read_ms) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let cold = tempfile::tempdir().expect("temp dir");
        tools_ms.push(timed(&|| run(cold.path(), &["tools"])));
        read_ms.push(timed(&|| run(cold.path(), &["call", "Read", &read])));
    }
    let spread = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        json!({"median": v[v.len() / 2], "min": v[0], "max": v[v.len() - 1]})
    };
    let warm_cache = toolhost_tests::shared_cache_dir();
    run(&warm_cache, &["tools"]);
    let warm = time(40, || run(&warm_cache, &["tools"]));
    json!({"p50_ms": warm.p50 / 1e3, "p99_ms": warm.p99 / 1e3, "cold_tools_ms": spread(tools_ms), "cold_read_ms": spread(read_ms)})
}

/// `Bash {command: "true"}` through the whole pipeline (parse, classify,
/// confine, spawn, wait) against `bash -c true` spawned natively.
fn bash_true() -> Value {
    let ws = bench_dir("bash-ws");
    let host = host(Allocator::Pooling, &ws, None);
    let session = host.ephemeral_session();
    let call = ToolUse { id: "toolu_bash".into(), name: "Bash".into(), input: json!({"command": "true"}) };
    let r = host.call(&session, &call, &CallOptions::default());
    assert!(!r.is_error, "{r:?}");
    let toolhost = time(300, || host.call(&session, &call, &CallOptions::default()));
    let native = time(300, || Command::new("bash").args(["-c", "true"]).output().expect("bash"));
    json!({"toolhost_us": toolhost.p50, "native_us": native.p50})
}

/// Parsing (in the parser's sandbox, a fresh instance each time: not from
/// the memo of recent commands) and classifying a 1 KB command.
fn shell() -> Value {
    use toolhost::internals::{classify_parsed, parse_fresh};
    let part = "git log --oneline -20 | grep -v 'Merge branch' | sort | uniq -c && FOO=1 ls -la src/*.rs 2>/dev/null; ";
    let command = part.repeat(1024 / part.len() + 1);
    let command = command.trim_end_matches("; ");
    assert!(toolhost::internals::classify(command).read_only);
    let t = time(2_000, || classify_parsed(&parse_fresh(command)));
    let typical = "git status && git diff --stat | tail -1";
    let short = time(20_000, || classify_parsed(&parse_fresh(typical)));
    json!({"bytes": command.len(), "p50_us": t.p50, "p99_us": t.p99, "typical": typical, "typical_p50_us": short.p50})
}

fn rss() -> Value {
    let ws = bench_dir("rss-ws");
    let host = host(Allocator::Pooling, &ws, None);
    let tools = host.pool().len();
    assert!(tools >= 8, "the built-ins are loaded ({tools} tools)");
    std::thread::sleep(Duration::from_millis(200));
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    drop(host);
    json!({"rss_mib": kib / 1024.0, "tools": tools})
}

#[derive(Default)]
struct Report {
    calls: Vec<(String, Value)>,
    read: Option<Value>,
    grep: Option<Value>,
    startup: Option<Value>,
    rss: Option<Value>,
    shell: Option<Value>,
    bash: Option<Value>,
}

impl Report {
    fn print(&self) {
        println!("| measure | toolhost | baseline | ratio | target |");
        println!("|---|---|---|---|---|");
        for (alloc, c) in &self.calls {
            let f = |k: &str| c[k].as_f64().unwrap_or(f64::NAN);
            println!(
                "| per call through the pipeline, p50 / p99 ({alloc}) | {:.1} / {:.1} µs | native {:.2} / {:.2} µs | {:.0}× | p50 ≤ 20 µs, p99 ≤ 60 µs |",
                f("pipeline_p50"),
                f("pipeline_p99"),
                f("native_p50"),
                f("native_p99"),
                f("pipeline_p50") / f("native_p50")
            );
            println!(
                "| Read of a 1 KB file through the pipeline, on the calling thread, p50 / p99 ({alloc}) | {:.1} / {:.1} µs | | | |",
                f("read_p50"),
                f("read_p99")
            );
            println!(
                "| the same Read, each after the thread slept 300 µs: its CPU time, p50 ({alloc}) | {:.1} µs | | | |",
                f("read_paused_cpu_p50")
            );
            println!(
                "| bare instantiate + call + drop, p50 / p99 ({alloc}) | {:.1} / {:.1} µs | | | ≤ 12 µs |",
                f("bare_p50"),
                f("bare_p99")
            );
            println!(
                "| throughput, 1 → 2 workers ({alloc}) | {:.0} → {:.0} calls/s | | {:.2}× | ≥ 60k calls/s, ≥ 1.7× |",
                f("throughput_1"),
                f("throughput_2"),
                f("throughput_2") / f("throughput_1")
            );
        }
        if let Some(r) = &self.read {
            let (w, n) = (r["wasm_ms"].as_f64().unwrap_or(f64::NAN), r["native_ms"].as_f64().unwrap_or(f64::NAN));
            println!(
                "| Read, a 1,000-line window in the middle of a 10 MB file, p50 | {w:.1} ms | native {n:.1} ms | {:.2}× | ≤ 1.5× |",
                w / n
            );
        }
        if let Some(Value::Array(rows)) = &self.grep {
            let (mut gn, mut gr, mut worst, mut count) = (0.0, 0.0, 0.0f64, 0.0);
            for row in rows {
                let w = row["wasm_ms"].as_f64().unwrap_or(f64::NAN);
                let n = row["native_ms"].as_f64().unwrap_or(f64::NAN);
                let rg = row["rg_ms"].as_f64();
                let rg_text = rg.map_or("rg not available".to_string(), |r| format!("rg -j1 {r:.1} ms"));
                let rg_ratio = rg.map_or(String::new(), |r| format!(", {:.2}× rg", w / r));
                println!(
                    "| Grep `{}` ({}), 5,000 files / 50 MB, p50 | {w:.1} ms | native {n:.1} ms; {rg_text} | {:.2}× native{rg_ratio} | |",
                    row["regex"].as_str().unwrap_or_default().replace('|', "\\|"),
                    row["pattern"].as_str().unwrap_or_default(),
                    w / n
                );
                gn += (w / n).ln();
                gr += rg.map_or(f64::NAN, |r| (w / r).ln());
                worst = worst.max(rg.map_or(w / n, |r| w / r));
                count += 1.0;
            }
            println!(
                "| Grep, geometric mean | | | {:.2}× native, {:.2}× rg; worst {:.2}× | ≤ 2.5× native, ≤ 1.5× rg, worst ≤ 3× |",
                (gn / count).exp(),
                (gr / count).exp(),
                worst
            );
        }
        if let Some(s) = &self.startup {
            println!(
                "| start-up, `toolhost tools` (warm cache), p50 / p99 | {:.1} / {:.1} ms | | | ≤ 15 ms |",
                s["p50_ms"].as_f64().unwrap_or(f64::NAN),
                s["p99_ms"].as_f64().unwrap_or(f64::NAN)
            );
            let ms = |v: &Value| {
                let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
                format!("{:.0} ms ({:.0}–{:.0})", f("median"), f("min"), f("max"))
            };
            println!(
                "| first start ever, empty cache: `toolhost tools`, median (range of 5) | {} | | | ≤ 1 s |",
                ms(&s["cold_tools_ms"])
            );
            println!(
                "| then the first `toolhost call Read` (compiles Read), median (range of 5) | {} | | | |",
                ms(&s["cold_read_ms"])
            );
        }
        if let Some(b) = &self.bash {
            let (t, n) = (b["toolhost_us"].as_f64().unwrap_or(f64::NAN), b["native_us"].as_f64().unwrap_or(f64::NAN));
            println!(
                "| `Bash {{command: \"true\"}}` (confined) vs `bash -c true` spawned natively, p50 | {:.2} ms | {:.2} ms | {:.2}× | ≤ 1.3× |",
                t / 1e3,
                n / 1e3,
                t / n
            );
        }
        if let Some(s) = &self.shell {
            println!(
                "| parse + classify a {}-byte shell command, p50 / p99 | {:.1} / {:.1} µs | | | ≤ 50 µs |",
                s["bytes"],
                s["p50_us"].as_f64().unwrap_or(f64::NAN),
                s["p99_us"].as_f64().unwrap_or(f64::NAN)
            );
            println!(
                "| parse + classify `{}`, p50 | {:.1} µs | | | |",
                s["typical"].as_str().unwrap_or_default().replace('|', "\\|"),
                s["typical_p50_us"].as_f64().unwrap_or(f64::NAN)
            );
        }
        if let Some(r) = &self.rss {
            println!(
                "| RSS, host with the {} built-ins loaded, idle | {:.1} MiB | | | ≤ 20 MiB |",
                r["tools"].as_u64().unwrap_or_default(),
                r["rss_mib"].as_f64().unwrap_or(f64::NAN)
            );
        }
    }
}
