//! A fresh instance per call of a large interpreted component, with and
//! without spare instances: `cargo bench -p toolhost-cli --bench fresh`.
//!
//! The subjects keep no instance between calls (no `reuse-instance`): the
//! Python test tool `PyFaults` (componentize-py, about 19 MB) and the
//! JavaScript one `JsFaults` on SpiderMonkey (componentize-js, about 12 MB)
//! with its `reuseInstance` turned off. Each is called inside one
//! `toolhost run --max-concurrency 1`, in two ways:
//! - one call at a time with 5 ms between a result and the next call (as an
//!   agent's calls come): the call's time inside the host (its `wall_us`),
//!   200 calls after 20 untimed ones;
//! - back to back: 400 calls written at once, the stream's time over a
//!   stream of one, per call.
//!
//! Each with spares off and on (the default), taking turns, three rounds;
//! the median of the rounds' medians, with the range over the rounds.
//! Prints a Markdown table.

use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use toolhost_tests::js::{Engine, js_tool};
use toolhost_tests::python::python_tool;

const TOOLHOST: &str = env!("CARGO_BIN_EXE_toolhost");
const ROUNDS: usize = 3;
const WARM_UP: usize = 20;
const PACED: usize = 200;
const PAUSE: Duration = Duration::from_millis(5);
const BACK_TO_BACK: usize = 400;

struct Subject {
    label: &'static str,
    wasm: PathBuf,
    tool: &'static str,
}

fn main() {
    let repo = toolhost_tests::repo_root();
    let root = repo.join("target").join("bench-data").join("fresh");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("bench dir");
    // The JavaScript test tool, keeping no instance.
    let js = root.join("jsfresh");
    std::fs::create_dir_all(&js).expect("js dir");
    let source = std::fs::read_to_string(repo.join("tests/js/faults/app.js")).expect("app.js");
    std::fs::write(js.join("app.js"), source.replace("reuseInstance: true", "reuseInstance: false")).expect("write");
    let subjects = [
        Subject {
            label: "Python (componentize-py)",
            wasm: python_tool(&repo.join("tests/python/faults")),
            tool: "PyFaults",
        },
        Subject {
            label: "JS, SpiderMonkey (componentize-js)",
            wasm: js_tool(&js, Engine::SpiderMonkey),
            tool: "JsFaults",
        },
    ];
    println!(
        "| fresh instance per call ({ROUNDS} rounds: median (range)) | spares | one at a time, 5 ms apart: time in the host, p50 | p90 | back to back, per call |"
    );
    println!("|---|---|---|---|---|");
    for subject in &subjects {
        let plugins = root.join(format!("plugins-{}", subject.tool));
        std::fs::create_dir_all(&plugins).expect("plugins dir");
        std::fs::copy(&subject.wasm, plugins.join("tool.wasm")).expect("install");
        // Compiled once, optimized, into the shared cache.
        let checked = Command::new(TOOLHOST)
            .args(["--quick-compile-above", "off", "check"])
            .arg(plugins.join("tool.wasm"))
            .env("TOOLHOST_CACHE_DIR", toolhost_tests::shared_cache_dir())
            .output()
            .expect("toolhost check");
        assert!(checked.status.success(), "{}", String::from_utf8_lossy(&checked.stderr));
        let mut rows: [Vec<(f64, f64, f64)>; 2] = [Vec::new(), Vec::new()];
        for round in 0..ROUNDS {
            for (i, spares) in ["off", "250"].into_iter().enumerate() {
                let (p50, p90) = paced(&plugins, subject.tool, spares);
                let per_call = back_to_back(&plugins, subject.tool, spares);
                eprintln!(
                    "round {round}, {}, spares {spares}: paced p50 {p50:.0} µs, p90 {p90:.0} µs; back to back {per_call:.0} µs",
                    subject.label
                );
                rows[i].push((p50, p90, per_call));
            }
        }
        for (i, spares) in ["off", "on"].into_iter().enumerate() {
            let figure = |f: fn(&(f64, f64, f64)) -> f64| spread(rows[i].iter().map(f).collect());
            println!(
                "| {} | {spares} | {} | {} | {} |",
                subject.label,
                figure(|r| r.0),
                figure(|r| r.1),
                figure(|r| r.2)
            );
        }
    }
    println!(
        "\nTimes in ms. One `toolhost run --max-concurrency 1` per measurement; \"time in the host\" is each \
         result's `usage.wall_us` (schema, permission, the instance, the guest's call), {PACED} calls after \
         {WARM_UP} untimed ones; back to back: {BACK_TO_BACK} calls written at once against a stream of one."
    );
}

/// "median (min–max)" of the rounds, in ms.
fn spread(mut micros: Vec<f64>) -> String {
    micros.sort_by(f64::total_cmp);
    let ms = |us: f64| us / 1000.0;
    format!("{:.2} ({:.2}–{:.2})", ms(micros[micros.len() / 2]), ms(micros[0]), ms(micros[micros.len() - 1]))
}

fn toolhost(plugins: &Path, spares: &str) -> Command {
    let mut c = Command::new(TOOLHOST);
    c.args(["--plugins"])
        .arg(plugins)
        .args(["--spare-instances-above", spares, "--quick-compile-above", "off", "--allow", "PyFaults"])
        .args(["--allow", "JsFaults", "run", "--max-concurrency", "1", "--no-watch"])
        .env("TOOLHOST_CACHE_DIR", toolhost_tests::shared_cache_dir())
        .current_dir(plugins);
    c
}

fn call_line(tool: &str, n: usize) -> String {
    json!({"type": "tool_use", "id": format!("c{n}"), "name": tool, "input": {"do": "ok"}}).to_string()
}

/// p50 and p90 of the calls' `wall_us`, one call at a time with a pause.
fn paced(plugins: &Path, tool: &str, spares: &str) -> (f64, f64) {
    let mut child =
        toolhost(plugins, spares).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("toolhost run");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut walls = Vec::new();
    for n in 0..WARM_UP + PACED {
        writeln!(stdin, "{}", call_line(tool, n)).expect("write");
        let result = loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).expect("read") > 0, "the stream ended");
            let v: Value = serde_json::from_str(&line).expect("a JSON line");
            if v["type"] == "tool_result" {
                break v;
            }
        };
        assert_eq!(result["is_error"], false, "{result}");
        if n >= WARM_UP {
            walls.push(result["usage"]["wall_us"].as_f64().expect("wall_us"));
        }
        std::thread::sleep(PAUSE);
    }
    drop(stdin);
    assert!(child.wait().expect("wait").success());
    walls.sort_by(f64::total_cmp);
    (walls[walls.len() / 2], walls[walls.len() * 9 / 10])
}

/// Microseconds per call of a stream of calls written at once, over a
/// stream of one (the start and the first call).
fn back_to_back(plugins: &Path, tool: &str, spares: &str) -> f64 {
    let stream = |n: usize| {
        let input: String = (0..n).map(|i| call_line(tool, i) + "\n").collect();
        let mut child = toolhost(plugins, spares)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("toolhost run");
        let began = Instant::now();
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input.as_bytes()).expect("write");
        drop(stdin);
        let out = child.wait_with_output().expect("wait");
        let took = began.elapsed().as_secs_f64() * 1e6;
        assert!(out.status.success());
        let results = String::from_utf8_lossy(&out.stdout).matches("\"tool_result\"").count();
        assert_eq!(results, n);
        took
    };
    let one = stream(1);
    (stream(BACK_TO_BACK + 1) - one) / BACK_TO_BACK as f64
}
