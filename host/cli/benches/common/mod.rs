//! What the benchmark binaries share: re-running themselves pinned to one
//! CPU, latency statistics, the generated data (and the `rg`) that more
//! than one benchmark uses, and the floor of a stdio MCP server.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// This benchmark's own executable, pinned to CPU 1 with `taskset` when
/// `pinned` and `taskset` is available (migrations between the two vCPUs of
/// these machines add noise).
#[allow(dead_code, reason = "not every benchmark re-runs itself")]
pub fn self_command(pinned: bool) -> Command {
    let exe = std::env::current_exe().expect("bench executable");
    let taskset = pinned && Command::new("taskset").arg("-V").output().is_ok_and(|o| o.status.success());
    if taskset {
        let mut c = Command::new("taskset");
        c.args(["-c", "1"]).arg(exe);
        c
    } else {
        Command::new(exe)
    }
}

/// Median, 10th, 90th and 99th percentile, in microseconds.
#[allow(dead_code, reason = "each benchmark reports the percentiles it needs")]
pub struct Stats {
    pub p50: f64,
    pub p10: f64,
    pub p90: f64,
    pub p99: f64,
}

/// The statistics of samples in microseconds.
pub fn stats(mut micros: Vec<f64>) -> Stats {
    micros.sort_by(f64::total_cmp);
    let at = |q: f64| micros[((micros.len() as f64 - 1.0) * q).round() as usize];
    Stats { p50: at(0.5), p10: at(0.1), p90: at(0.9), p99: at(0.99) }
}

/// Runs `f` `warm_up` times untimed (page cache, lazy initialisation), then
/// `iterations` timed runs.
#[allow(dead_code, reason = "some benchmarks time whole processes instead")]
pub fn time<T>(warm_up: usize, iterations: usize, mut f: impl FnMut() -> T) -> Stats {
    for _ in 0..warm_up {
        std::hint::black_box(f());
    }
    let samples = (0..iterations)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    stats(samples)
}

/// 5,000 files of about 10 KB (50 MB) in 50 directories, from a fixed seed:
/// the tree the Grep benchmarks search. Written once; a marker file says it
/// is complete.
#[allow(dead_code, reason = "only the benchmarks of Grep search it")]
pub fn generate_tree(root: &Path) {
    let marker = root.join(".complete");
    if marker.exists() {
        return;
    }
    const WORDS: [&str; 24] = [
        "the", "request", "error", "handler", "value", "returns", "warning", "config", "socket", "buffer", "client",
        "server", "fatal", "parse", "token", "stream", "errors", "warnings", "index", "cache", "thread", "lock",
        "queue", "timeout",
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for d in 0..50 {
        let dir = root.join(format!("dir{d:02}"));
        std::fs::create_dir_all(&dir).expect("tree dir");
        for f in 0..100 {
            let mut text = String::with_capacity(10_400);
            while text.len() < 10_000 {
                let n = next();
                match n % 97 {
                    0 => text.push_str("    if elapsed > connection_timeout { return Err(Timeout); }\n"),
                    1 => text.push_str(&format!("const CODE: &str = \"{}{}{}{:03}\";\n", 'A', 'Q', 'Z', n % 1000)),
                    _ => {
                        let words = 6 + (n % 8) as usize;
                        let line: Vec<&str> =
                            (0..words).map(|_| WORDS[(next() % WORDS.len() as u64) as usize]).collect();
                        text.push_str(&line.join(" "));
                        text.push('\n');
                    }
                }
            }
            std::fs::write(dir.join(format!("file{f:03}.rs")), text).expect("tree file");
        }
    }
    std::fs::write(marker, "").expect("marker");
}

/// A text file of 10 MB (about 117,000 numbered lines of source-like text)
/// in `dir`, written once: the file the Read benchmarks read.
#[allow(dead_code, reason = "only the benchmarks of Read read it")]
pub fn ten_megabyte_file(dir: &Path) -> PathBuf {
    let file = dir.join("ten-megabytes.txt");
    if std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0) < 10_000_000 {
        let mut text = String::with_capacity(10_100_000);
        let mut i = 0u64;
        while text.len() < 10_000_000 {
            text.push_str(&format!(
                "{i:08} the quick brown fox jumps over the lazy dog; fn main() {{ println!(\"{i}\"); }}\n"
            ));
            i += 1;
        }
        std::fs::write(&file, text).expect("write 10 MB file");
    }
    file
}

/// `rg`: looked up on PATH, then in `target/tools/bin`; if absent it is
/// installed there with `cargo install ripgrep`. `None` if that fails.
#[allow(dead_code, reason = "only the benchmarks of Grep compare with rg")]
pub fn ripgrep() -> Option<PathBuf> {
    if Command::new("rg").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Some("rg".into());
    }
    let tools = toolhost_tests::repo_root().join("target").join("tools");
    let local = tools.join("bin").join("rg");
    if !local.exists() {
        eprintln!("installing ripgrep into {} for the comparison...", tools.display());
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let ok = Command::new(cargo)
            .args(["install", "ripgrep", "--locked", "--root"])
            .arg(&tools)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("could not install ripgrep; the rg column stays empty");
            return None;
        }
    }
    Some(local)
}

/// The floor of a stdio MCP server: the least one can do for a call, as a
/// measure of what the machine charges for the exchange itself. One thread,
/// blocking reads and writes, serde_json, no SDK, no sandbox: `initialize`
/// and `tools/list` (the one tool `tool`) answered plainly, each
/// `tools/call` with what `call` makes of its arguments, until stdin ends.
#[allow(dead_code, reason = "only the benchmarks of MCP serve as a floor")]
pub fn floor_server(tool: &str, call: impl Fn(&serde_json::Value) -> serde_json::Value) {
    use serde_json::{Value, json};
    use std::io::{BufRead as _, Write as _};
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { return };
        let Ok(request) = serde_json::from_str::<Value>(&line) else { continue };
        let Some(id) = request.get("id") else { continue };
        let result = match request["method"].as_str().unwrap_or_default() {
            "initialize" => json!({
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "floor", "version": "1.0.0"},
            }),
            "tools/list" => json!({"tools": [{"name": tool, "inputSchema": {"type": "object"}}]}),
            "tools/call" => call(&request["params"]["arguments"]),
            _ => json!({}),
        };
        let response = json!({"jsonrpc": "2.0", "id": id, "result": result});
        if writeln!(out, "{response}").and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}

/// The state of the machine while something was measured, for a wall-clock
/// figure to say what it was measured in (these VMs run 1.5–2× slower in
/// some hours than in others): when, the load average, how long a fixed
/// single-threaded workload took at the start (the gauge: the machine's
/// speed at that moment, whatever the benchmark does), and the share of CPU
/// time the hypervisor stole while it ran.
#[allow(dead_code, reason = "only the wall-clock benchmarks say what they ran in")]
pub struct Machine {
    at: String,
    load: f64,
    gauge_ms: f64,
    cpu: Option<CpuTimes>,
}

/// The machine's CPU time so far (`/proc/stat`, in clock ticks).
#[derive(Clone, Copy)]
struct CpuTimes {
    total: u64,
    steal: u64,
}

#[allow(dead_code, reason = "only the wall-clock benchmarks say what they ran in")]
impl Machine {
    /// The state now: call it just before a measurement, and
    /// [`Machine::describe`] right after it.
    pub fn now() -> Machine {
        let load = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|l| l.parse().ok()))
            .unwrap_or(f64::NAN);
        Machine { at: date_utc("%H:%M UTC %Y-%m-%d"), load, gauge_ms: gauge_ms(), cpu: cpu_times() }
    }

    /// `HH:MM UTC (date), load L, gauge G ms, steal S%`: the steal from
    /// [`Machine::now`] to this call.
    pub fn describe(&self) -> String {
        let steal = match (self.cpu, cpu_times()) {
            (Some(a), Some(b)) if b.total > a.total => {
                format!(", steal {:.1}%", 100.0 * (b.steal - a.steal) as f64 / (b.total - a.total) as f64)
            }
            _ => String::new(),
        };
        format!("{}, load {:.2}, gauge {:.1} ms{steal}", self.at, self.load, self.gauge_ms)
    }
}

/// A fixed single-threaded workload (an xorshift chain the compiler cannot
/// shorten), best of three, in milliseconds (38 ms on one of these machines
/// with a core free, 2026-12-07); the ratio of two gauges is the ratio of
/// the machine's speeds when they were taken.
fn gauge_ms() -> f64 {
    (0..3)
        .map(|_| {
            let started = Instant::now();
            let mut x = std::hint::black_box(0x9E37_79B9_7F4A_7C15_u64);
            for _ in 0..20_000_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
            }
            std::hint::black_box(x);
            started.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}

fn cpu_times() -> Option<CpuTimes> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat.lines().next()?.split_whitespace().skip(1).map(|f| f.parse().unwrap_or(0)).collect();
    // user nice system idle iowait irq softirq steal (guest time is in user).
    Some(CpuTimes { total: fields.iter().take(8).sum(), steal: *fields.get(7)? })
}

/// The time now in UTC, as `date -u +FORMAT` prints it.
#[allow(dead_code, reason = "only some benchmarks date what they print")]
pub fn date_utc(format: &str) -> String {
    Command::new("date")
        .arg("-u")
        .arg(format!("+{format}"))
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}
