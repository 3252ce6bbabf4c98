//! The same tool in each language: `cargo bench -p toolhost-cli --bench languages`.
//!
//! `toolhost new Shout --lang rust|python|js` makes the same small tool in
//! each language (schema, classification, progress, a session write, an
//! error path); each is built with the pinned toolchains (the JavaScript one
//! with QuickJS, `--sync` and by default on the component-model async ABI,
//! and with SpiderMonkey), and the examples Calc (Python) and
//! Notes (JavaScript) are built beside them. For each component, in one run:
//! - its size;
//! - its first load: `toolhost check` in a new process whose cache holds the
//!   built-ins but not this component, so it compiles (three runs): quick
//!   (Winch, the default for a component of 1 MiB or more) and optimized
//!   (`--quick-compile-above off`);
//! - the cost of one call inside a `toolhost run` stream, calls one at a
//!   time (`--max-concurrency 1`): a stream of 1001 calls against a stream
//!   of 1, the difference over 1000 (five runs of each), on the optimized
//!   code (what serves once the background compile is done) and on the
//!   quick code (what serves until then, and in one-shot commands).
//!
//! Prints a Markdown table: medians, with the spread (lowest–highest) and
//! each per-call median over the Rust tool's.

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use toolhost_tests::js::{Engine, js_tool};
use toolhost_tests::python::python_tool;

const TOOLHOST: &str = env!("CARGO_BIN_EXE_toolhost");

struct Subject {
    label: &'static str,
    wasm: PathBuf,
    tool: &'static str,
    input: serde_json::Value,
}

fn main() {
    let repo = toolhost_tests::repo_root();
    let root = repo.join("target").join("bench-data").join("languages");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("bench dir");
    let project = |lang: &str| {
        let dir = root.join(format!("shout-{lang}"));
        let out = Command::new(TOOLHOST).args(["new", "Shout", "--lang", lang, "--dir"]).arg(&dir).output();
        assert!(out.is_ok_and(|o| o.status.success()), "toolhost new --lang {lang}");
        dir
    };
    // Rust through the project's own script (its dependencies built once,
    // shared with the test suite's scaffold test).
    let rust = project("rust");
    let built = Command::new(rust.join("build.sh"))
        .env("CARGO_TARGET_DIR", repo.join("target").join("scaffold"))
        .stdout(Stdio::null())
        .status();
    assert!(built.is_ok_and(|s| s.success()), "the Rust project's build.sh");
    let (python, js) = (project("python"), project("js"));
    let shout = json!({"text": "hello"});
    let subjects = [
        Subject { label: "Rust (SDK)", wasm: rust.join("shout.wasm"), tool: "Shout", input: shout.clone() },
        Subject { label: "Python (componentize-py)", wasm: python_tool(&python), tool: "Shout", input: shout.clone() },
        Subject {
            label: "JS, QuickJS (componentize-qjs)",
            wasm: js_tool(&js, Engine::QuickJs),
            tool: "Shout",
            input: shout.clone(),
        },
        Subject {
            label: "JS, QuickJS default: async ABI (componentize-qjs)",
            wasm: js_tool(&js, Engine::QuickJsAsync),
            tool: "Shout",
            input: shout.clone(),
        },
        Subject {
            label: "JS, SpiderMonkey (componentize-js)",
            wasm: js_tool(&js, Engine::SpiderMonkey),
            tool: "Shout",
            input: shout,
        },
        Subject {
            label: "example Calc (Python)",
            wasm: python_tool(&repo.join("sdk/python/examples/calc")),
            tool: "Calc",
            input: json!({"expressions": ["2**64 / 3"]}),
        },
        Subject {
            label: "example Notes (JS, QuickJS)",
            wasm: js_tool(&repo.join("sdk/js/examples/notes"), Engine::QuickJs),
            tool: "Notes",
            input: json!({"action": "search", "query": "nothing"}),
        },
    ];

    // A cache with the built-ins compiled and nothing else.
    let builtins_cache = root.join("cache-builtins");
    let empty_plugins = root.join("no-plugins");
    std::fs::create_dir_all(&empty_plugins).expect("bench dir");
    let status = toolhost(&builtins_cache, &empty_plugins).arg("tools").stdout(Stdio::null()).status();
    assert!(status.is_ok_and(|s| s.success()), "warming the built-ins");

    let mut rows = Vec::new();
    let mut rust_call = None;
    for (i, subject) in subjects.iter().enumerate() {
        let size = std::fs::metadata(&subject.wasm).expect("component").len();
        let first_load = |quick: &str| -> Vec<f64> {
            (0..3)
                .map(|run| {
                    let cache = root.join(format!("cache-{i}-{run}"));
                    copy_dir(&builtins_cache, &cache);
                    let t = Instant::now();
                    let out = toolhost(&cache, &empty_plugins)
                        .args(["--quick-compile-above", quick, "check"])
                        .arg(&subject.wasm)
                        .output()
                        .expect("check");
                    let took = t.elapsed().as_secs_f64() * 1e3;
                    assert!(out.status.success(), "{}: {}", subject.label, String::from_utf8_lossy(&out.stdout));
                    let _ = std::fs::remove_dir_all(&cache);
                    took
                })
                .collect()
        };
        let (quick_loads, optimized_loads) = (first_load("1024"), first_load("off"));
        // Per call: its own plugins directory, the cache warm (with the
        // optimized compile, or only the quick one).
        let plugins = root.join(format!("plugins-{i}"));
        std::fs::create_dir_all(&plugins).expect("bench dir");
        std::fs::copy(&subject.wasm, plugins.join("tool.wasm")).expect("copy");
        let per_call = |quick: bool| -> Vec<f64> {
            let cache = root.join(format!("cache-run-{i}-{quick}"));
            copy_dir(&builtins_cache, &cache);
            let args: &[&str] = if quick { &["--quick-compile-above", "0", "--no-optimize"] } else { &[] };
            let compile: &[&str] = if quick { args } else { &["--quick-compile-above", "off"] };
            let check = toolhost(&cache, &empty_plugins).args(compile).arg("check").arg(&subject.wasm).output();
            assert!(check.is_ok_and(|o| o.status.success()), "{}: check", subject.label);
            stream(&cache, &plugins, subject, 1, args);
            (0..5)
                .map(|_| {
                    (stream(&cache, &plugins, subject, 1001, args) - stream(&cache, &plugins, subject, 1, args))
                        / 1000.0
                })
                .collect()
        };
        let (optimized, quick) = (per_call(false), per_call(true));
        let call = median(&optimized);
        if i == 0 {
            rust_call = Some(call);
        }
        let spread = |xs: &[f64], scale: f64, digits: usize| {
            format!("{:.digits$} ({:.digits$}–{:.digits$})", median(xs) / scale, min(xs) / scale, max(xs) / scale)
        };
        rows.push(format!(
            "| {} | {:.1} MB | {} s | {} s | {} ms | {:.1}× | {} ms |",
            subject.label,
            size as f64 / 1e6,
            spread(&quick_loads, 1e3, 2),
            spread(&optimized_loads, 1e3, 2),
            spread(&optimized, 1.0, 3),
            call / rust_call.expect("the Rust tool comes first"),
            spread(&quick, 1.0, 3),
        ));
    }
    println!(
        "| component | size | first load, quick (default) | first load, optimized | per call in a `run` stream | per call / Rust | per call, quick code |"
    );
    println!("|---|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
}

/// `toolhost` with `cache` as its cache and `plugins` as its plugins
/// directory, in a scratch workspace.
fn toolhost(cache: &Path, plugins: &Path) -> Command {
    let mut cmd = Command::new(TOOLHOST);
    cmd.env("TOOLHOST_CACHE_DIR", cache)
        .env("TOOLHOST_DATA_DIR", cache.with_extension("data"))
        .env_remove("RUST_LOG")
        .arg("--workspace")
        .arg(cache.parent().expect("bench dir"))
        .arg("--plugins")
        .arg(plugins);
    cmd
}

/// The milliseconds a `run` stream of `n` calls of the subject takes, one
/// call at a time, start to exit.
fn stream(cache: &Path, plugins: &Path, subject: &Subject, n: usize, args: &[&str]) -> f64 {
    use std::io::Write as _;
    let lines: String = (0..n)
        .map(|i| {
            json!({"type": "tool_use", "id": format!("c{i}"), "name": subject.tool, "input": subject.input}).to_string()
                + "\n"
        })
        .collect();
    let t = Instant::now();
    let mut child = toolhost(cache, plugins)
        .args(args)
        .args(["--allow", subject.tool, "run", "--max-concurrency", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("toolhost run");
    child.stdin.take().expect("stdin").write_all(lines.as_bytes()).expect("write calls");
    let out = child.wait_with_output().expect("wait");
    let took = t.elapsed().as_secs_f64() * 1e3;
    let text = String::from_utf8_lossy(&out.stdout);
    let results = text.lines().filter(|l| l.contains("\"tool_result\"")).count();
    let errors = text.lines().filter(|l| l.contains("\"is_error\":true")).count();
    assert!(out.status.success() && results == n && errors == 0, "{}: {text}", subject.label);
    took
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).expect("copy dir");
    // The built-ins come compiled in the binary: the warm cache may be empty.
    let Ok(entries) = std::fs::read_dir(from) else { return };
    for entry in entries.flatten() {
        let dest = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).expect("copy file");
        }
    }
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn min(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}
