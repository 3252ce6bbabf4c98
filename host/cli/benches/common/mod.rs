//! What the benchmark binaries share: re-running themselves pinned to one
//! CPU, and latency statistics.

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
