//! Code mode against separate calls: `cargo bench -p toolhost-cli --bench code_mode`.
//!
//! The task: in a project of 100 source files (what one Glob lists), find those whose first five
//! lines mention `TODO`. Done two ways over the same files, in one process:
//! - **separate calls**, as a model does it without Script: a Glob, then a
//!   Read of the first five lines of every file it lists (all sent in one
//!   turn, run by the scheduler ten at a time); the model then filters;
//! - **one script**: a Script call doing the same and returning the paths.
//!
//! For each: the bytes of tool results that reach the model, the model
//! turns it takes, and the wall time of the tool calls (median of 11 runs,
//! with the spread). Then the script runtime's start cost per call: a
//! Script call that returns at once against a Read of a one-line file, with
//! the instance made ahead between calls (spares: `run`, `serve`, the
//! library) and made by the call itself (spares off, as in `toolhost call`).
//!
//! Prints Markdown tables.

use serde_json::json;
use std::sync::Arc;
use std::time::Instant;
use toolhost::{CallOptions, Executor, Host, PermissionMode, ToolUse, Update};

const FILES: usize = 100;
const RUNS: usize = 11;

fn main() {
    let dir = std::env::temp_dir().join(format!("toolhost-bench-code-mode-{}", std::process::id()));
    let (workspace, data) = (dir.join("ws"), dir.join("data"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(workspace.join("src")).expect("bench dirs");
    std::fs::create_dir_all(&data).expect("bench dirs");
    let mut expected = Vec::new();
    for i in 0..FILES {
        // Every seventh file has a TODO near its top; every file has one
        // further down, which must not count.
        let head = if i % 7 == 0 { "// TODO: split this module" } else { "// module docs" };
        let body: String = (0..60).map(|l| format!("fn f{l}() -> usize {{ {l} * {i} }}\n")).collect();
        let text = format!("{head}\nuse std::fmt;\n\n{body}// TODO later\n");
        let name = format!("src/mod_{i:03}.rs");
        std::fs::write(workspace.join(&name), text).expect("bench file");
        if i % 7 == 0 {
            expected.push(name);
        }
    }
    std::fs::write(workspace.join("one.txt"), "one line\n").expect("bench file");
    let workspace = workspace.canonicalize().expect("workspace");
    let host = Host::builder()
        .workspace(&workspace)
        .data_dir(&data)
        .cache_dir(Some(toolhost_tests::shared_cache_dir()))
        .mode(PermissionMode::Default)
        .code_mode(true)
        .build()
        .expect("host");
    let session = host.ephemeral_session();
    let call = |id: &str, name: &str, input: serde_json::Value| {
        let r = host.call(&session, &ToolUse { id: id.into(), name: name.into(), input }, &CallOptions::default());
        assert!(!r.is_error, "{name}: {}", r.text());
        r
    };

    // Separate calls.
    let separate = || {
        let mut bytes = 0;
        let glob = call("g", "Glob", json!({"pattern": "src/*.rs"}));
        bytes += glob.text().len();
        let files: Vec<String> = glob.text().lines().filter(|l| l.ends_with(".rs")).map(String::from).collect();
        assert_eq!(files.len(), FILES, "{}", glob.text());
        let executor = Executor::new(host.clone(), Arc::clone(&session), 10);
        for (i, f) in files.iter().enumerate() {
            let path = if f.starts_with('/') { f.clone() } else { workspace.join(f).display().to_string() };
            executor.add_tool(ToolUse {
                id: format!("r{i}"),
                name: "Read".into(),
                input: json!({"file_path": path, "limit": 5}),
            });
        }
        executor.close();
        let mut found = Vec::new();
        while let Some(update) = executor.next_blocking() {
            if let Update::Result(r) = update {
                assert!(!r.is_error, "{}", r.text());
                bytes += r.text().len();
                let i: usize = r.tool_use_id[1..].parse().expect("an id");
                if r.text().contains("TODO") {
                    found.push(files[i].clone());
                }
            }
        }
        assert_eq!(found.len(), expected.len());
        bytes
    };
    let code = format!(
        r#"
        const listed = await tools.Glob({{ pattern: "src/*.rs" }});
        const files = listed.split("\n").filter((f) => f.endsWith(".rs"));
        const heads = await Promise.all(files.map((f) => tools.Read({{ file_path: f.startsWith("/") ? f : {ws} + "/" + f, limit: 5 }})));
        files.filter((f, i) => heads[i].includes("TODO"))
        "#,
        ws = serde_json::to_string(&workspace.display().to_string()).expect("a path")
    );
    let script = || {
        let r = call("s", "Script", json!({ "code": code }));
        let paths: Vec<String> = serde_json::from_str(&r.text()).expect("a JSON array");
        assert_eq!(paths.len(), expected.len(), "{}", r.text());
        r.text().len()
    };
    // Warm up both (compiles, caches, threads).
    let (separate_bytes, script_bytes) = (separate(), script());
    let separate_ms = timed(|| {
        separate();
    });
    let script_ms = timed(|| {
        script();
    });
    println!(
        "| {FILES} files, first 5 lines each, those with TODO | tool-result bytes to the model | model turns | wall time of the tool calls |"
    );
    println!("|---|---|---|---|");
    println!(
        "| separate calls (Glob, then {FILES} Reads in one turn) | {separate_bytes} | 3 (Glob; the Reads; the answer), or {} one Read at a time | {} ms |",
        FILES + 2,
        spread(&separate_ms)
    );
    println!("| one Script call | {script_bytes} | 2 (the Script; the answer) | {} ms |", spread(&script_ms));
    println!(
        "\nbytes: {:.1}× fewer with the script; wall time: {:.2}× (script / separate)",
        separate_bytes as f64 / script_bytes as f64,
        median(&script_ms) / median(&separate_ms)
    );

    // The start cost: a script that returns at once, against a Read of one
    // line; spares on (this host), then off (a host of its own).
    let one = workspace.join("one.txt").display().to_string();
    let cold = Host::builder()
        .workspace(&workspace)
        .data_dir(&data)
        .cache_dir(Some(toolhost_tests::shared_cache_dir()))
        .code_mode(true)
        .spare_instances_above(None)
        .build()
        .expect("host");
    let cold_session = cold.ephemeral_session();
    let per_call = |host: &Host, session: &Arc<toolhost::Session>, name: &str, input: serde_json::Value| -> Vec<f64> {
        let one = |id: &str| {
            let tool_use = ToolUse { id: id.into(), name: name.into(), input: input.clone() };
            let r = host.call(session, &tool_use, &CallOptions::default());
            assert!(!r.is_error, "{name}: {}", r.text());
        };
        (0..5).for_each(|_| one("w"));
        (0..51)
            .map(|_| {
                let t = Instant::now();
                one("c");
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect()
    };
    println!("\n| call | instance made ahead (spares) | instance made by the call |\n|---|---|---|");
    let mut medians = Vec::new();
    for (label, name, input) in [
        ("Script returning `1`", "Script", json!({"code": "1"})),
        ("Read of a one-line file", "Read", json!({"file_path": one})),
    ] {
        let warm = per_call(&host, &session, name, input.clone());
        let fresh = per_call(&cold, &cold_session, name, input);
        println!("| {label} | {} ms | {} ms |", spread3(&warm), spread3(&fresh));
        medians.push((median(&warm), median(&fresh)));
    }
    println!(
        "\nScript's start cost over a Read (medians of 51 calls): {:.3} ms with spares, {:.3} ms without",
        medians[0].0 - medians[1].0,
        medians[0].1 - medians[1].1
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Milliseconds each of [`RUNS`] runs of `f` took.
fn timed(mut f: impl FnMut()) -> Vec<f64> {
    (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect()
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn spread3(xs: &[f64]) -> String {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(0.0, f64::max);
    format!("{:.3} ({:.3}–{:.3})", median(xs), lo, hi)
}

fn spread(xs: &[f64]) -> String {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(0.0, f64::max);
    format!("{:.1} ({:.1}–{:.1})", median(xs), lo, hi)
}
