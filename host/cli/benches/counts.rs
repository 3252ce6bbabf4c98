//! Instruction counts of the hot paths, their floors and the ratios between
//! them, under valgrind's callgrind (the same for a build and its inputs
//! whatever else the machine does, but for background work against the
//! clock: a rise is counted again before it is believed, `counts::held`):
//!
//! ```sh
//! cargo counts                  # every scenario, on the README's test build; fails on a rise over 5%
//! cargo counts --quick          # the ones CI holds to their baselines
//! cargo counts --only mcp.      # those whose name starts so
//! cargo counts --explain 20     # and, for each, the 20 functions that cost most per operation
//! cargo counts --save           # record this build's counts as its baselines
//! ```
//!
//! `cargo counts` (`.cargo/config.toml`) runs this benchmark in the `ci`
//! profile, as `cargo test-linted` builds; `cargo bench -p toolhost-cli
//! --bench counts` runs it on a release build. The baselines
//! (`benches/counts/baseline.json`) hold a set of figures per profile; the
//! end-to-end test `counts::hot_paths_hold_their_baselines` holds the quick
//! set to the `ci` ones. Prints a Markdown table: instructions, system calls
//! and page faults per operation, the floor's, the ratio, the change from
//! the baseline (docs/benchmarks.md, "Instruction counts").

#[path = "counts/floor.rs"]
mod floor;

#[path = "common/mod.rs"]
mod common;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use toolhost_tests::counts::{self, Baselines, Exchange, PerOp, Program, Scenario, Verdict};
use toolhost_tests::hot_paths::Fixture;
use toolhost_tests::js::{Engine, js_tool};

const TOOLHOST: &str = env!("CARGO_BIN_EXE_toolhost");

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--floor-jsonrpc") => return floor::jsonrpc(Path::new(&args[1])),
        Some("--floor-guest") => return floor::guest(Path::new(&args[1]), Path::new(&args[2])),
        _ => {}
    }
    let save = args.iter().any(|a| a == "--save");
    let quick = args.iter().any(|a| a == "--quick");
    let only: Vec<&str> = args.windows(2).filter(|w| w[0] == "--only").map(|w| w[1].as_str()).collect();
    let explain: Option<usize> =
        args.windows(2).find(|w| w[0] == "--explain").map(|w| w[1].parse().expect("--explain N: a number"));
    if let Err(why) = counts::valgrind().and_then(|()| counts::time()) {
        eprintln!("counts: {why}");
        std::process::exit(2);
    }
    let fixture = Fixture::new(Path::new(TOOLHOST));
    let out = fixture.root.join("out");
    std::fs::create_dir_all(&out).expect("the output directory");
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| name.starts_with(o));
    let scenarios: Vec<Scenario> = if quick { fixture.quick() } else { everything(&fixture, &out, &wanted) };
    let scenarios: Vec<Scenario> = scenarios.into_iter().filter(|s| wanted(&s.name)).collect();

    let profile = counts::profile_of(Path::new(TOOLHOST));
    let file = baseline_file();
    let mut baselines = Baselines::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let base = baselines.profiles.get(&profile).cloned().unwrap_or_default();
    let mut results: Vec<(Scenario, PerOp)> = Vec::new();
    for scenario in scenarios {
        eprintln!("counts: {} …", scenario.name);
        let started = std::time::Instant::now();
        counts::warm_up(&scenario, &out).unwrap_or_else(|e| panic!("warming up: {e}"));
        // Saving records what is counted; otherwise a rise must repeat.
        let baseline = base.get(&scenario.name).copied().filter(|_| !save);
        let (per_op, _, counted) = counts::held(&scenario, &out, baseline).unwrap_or_else(|e| panic!("{e}"));
        eprintln!(
            "counts: {} {:.0} instructions per operation (counted {counted:.0?}; {:.0?})",
            scenario.name,
            per_op.ir,
            started.elapsed()
        );
        if let Some(top) = explain.filter(|_| scenario.op.is_some()) {
            println!("\n`{}`, per operation, the functions' own instructions that grew most:\n", scenario.name);
            for (ir, function) in counts::explain(&scenario, &out, top).unwrap_or_else(|e| panic!("{e}")) {
                println!("{:>12}  {function}", thousands(ir));
            }
            println!();
        }
        results.push((scenario, per_op));
    }

    let unlike = floors_unlike_host(&results, &out, &fixture.cache);

    let found = |name: &str| results.iter().find(|(s, _)| s.name == name).map(|(_, p)| *p);
    println!("Profile `{profile}`; instructions (Ir) and system calls per operation, under callgrind.\n");
    println!(
        "| scenario | one operation | instructions | system calls | page faults | floor | × floor | baseline | change |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut rose = Vec::new();
    for (scenario, per_op) in &results {
        let floor: Option<f64> = scenario
            .floor
            .iter()
            .map(|f| found(f).map(|p| p.ir))
            .sum::<Option<f64>>()
            .filter(|_| !scenario.floor.is_empty());
        let verdict = counts::compare(*per_op, base.get(&scenario.name).copied());
        let change = match verdict {
            Verdict::New => "new".to_string(),
            Verdict::Within(c) => format!("{:+.1}%", c * 100.0),
            Verdict::Fell(c) => format!("**{:+.1}%** (fell: `--save`)", c * 100.0),
            Verdict::Rose(c) => {
                rose.push(scenario.name.clone());
                format!("**{:+.1}%** (rose)", c * 100.0)
            }
        };
        println!(
            "| `{}` | {} | {} | {:.1} | {:.1} | {} | {} | {} | {change} |",
            scenario.name,
            scenario.what,
            thousands(per_op.ir),
            per_op.syscalls,
            per_op.faults,
            floor.map_or(String::new(), |f| format!("{} ({})", thousands(f), scenario.floor.join(" + "))),
            floor.map_or(String::new(), |f| format!("{:.2}×", per_op.ir / f)),
            base.get(&scenario.name).map_or(String::new(), |b| thousands(b.ir)),
        );
    }
    if !unlike.is_empty() {
        println!(
            "\nNo floor: the code of {} differs from every component toolhost compiled into {} — the floor's \
             engine settings (`benches/counts/floor.rs`) no longer match the host's (`sandbox::base_config`).",
            unlike.join(", "),
            fixture.cache.join("components").display()
        );
        std::process::exit(1);
    }
    if save {
        let entry = baselines.profiles.entry(profile.clone()).or_default();
        for (scenario, per_op) in &results {
            entry.insert(scenario.name.clone(), round(*per_op));
        }
        baselines.recorded.insert(profile.clone(), recorded());
        baselines.save(&file).unwrap_or_else(|e| panic!("{e}"));
        println!("\nSaved as the `{profile}` baselines in {}.", file.display());
    } else if !rose.is_empty() {
        println!(
            "\nRose more than {:.0}% over the `{profile}` baselines: {}.",
            counts::TOLERANCE * 100.0,
            rose.join(", ")
        );
        std::process::exit(1);
    }
}

/// The guest floors whose compiled code is not byte for byte what toolhost
/// compiled for the same component in `cache` (the compile cache of the
/// counted runs): a floor is one only while it runs the host's very code.
/// Checked for each floor whose hot path was counted in this run, since
/// that run compiled the component (or found it compiled) under the counted
/// settings; a floor counted alone is not checked, and says so.
fn floors_unlike_host(results: &[(Scenario, PerOp)], out: &Path, cache: &Path) -> Vec<String> {
    let mut unlike = Vec::new();
    for (floor, _) in results {
        let Some(name) = floor.name.strip_prefix("floor.guest.") else { continue };
        if !results.iter().any(|(s, _)| s.floor.contains(&floor.name)) {
            eprintln!("counts: {}: not checked against toolhost's code (no hot path of it counted)", floor.name);
            continue;
        }
        let compiled = std::fs::read(out.join(format!("{name}.cwasm"))).expect("the floor's compiled component");
        if !floor::same_code_cached(&compiled, &cache.join("components")) {
            unlike.push(format!("`{}`", floor.name));
        }
    }
    unlike
}

/// The baselines file, beside this benchmark.
fn baseline_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches").join("counts").join("baseline.json")
}

/// Figures stored without the noise of their last digits.
fn round(p: PerOp) -> PerOp {
    let tenths = |x: f64| (x * 10.0).round() / 10.0;
    PerOp { ir: (p.ir / 10.0).round() * 10.0, syscalls: tenths(p.syscalls), faults: tenths(p.faults) }
}

/// What a saved set was made with.
fn recorded() -> String {
    let rustc =
        Command::new("rustc").arg("--version").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let valgrind = Command::new("valgrind")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    format!("{}, {}, {}", rustc.unwrap_or_default(), valgrind.unwrap_or_default(), common::date_utc("%Y-%m-%d"))
}

fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if x < 0.0 { format!("-{out}") } else { out }
}

/// Every scenario: the quick ones, the slower ones, the other languages'
/// components and the floors (the components are built only when wanted).
fn everything(fixture: &Fixture, out: &Path, wanted: &dyn Fn(&str) -> bool) -> Vec<Scenario> {
    let mut all = fixture.quick();
    all.push(fixture.mcp_read_socket());
    all.push(fixture.tools_fresh_cache());
    if wanted("run.grep-corpus") {
        let corpus = fixture.workspace.join("corpus");
        common::generate_tree(&corpus);
        let input = json!({"pattern": "connection_timeout", "path": corpus, "output_mode": "count"});
        let mut s =
            fixture.run("run.grep-corpus", "Grep of 5,000 files / 50 MB (`connection_timeout`)", "Grep", input, &[]);
        (s.warm, s.measured) = (1, 2);
        all.push(s);
    }
    let upper = json!({"text": "hello"});
    if wanted("run.python-raw") || wanted("floor.guest.python-raw") {
        let wasm = toolhost_tests::python::python_against(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("benches").join("counts").join("raw-python"),
            &toolhost_tests::repo_root().join("wit").join("v1.0.0"),
            "plugin",
        );
        all.push(component(
            fixture,
            "python-raw",
            "a raw componentize-py tool on the 1.0.0 contract",
            &wasm,
            "Upper",
            &upper,
        ));
        all.push(guest_floor(fixture, out, "python-raw", &wasm, &upper));
    }
    if wanted("run.python-sdk") || wanted("floor.guest.python-sdk") {
        let project = fresh_project(fixture, "python", "app.py", "reuse_instance = True", "reuse_instance = False");
        let wasm = toolhost_tests::python::python_tool(&project);
        all.push(component(fixture, "python-sdk", "a Python tool (componentize-py, the SDK)", &wasm, "Shout", &upper));
        all.push(guest_floor(fixture, out, "python-sdk", &wasm, &upper));
    }
    if wanted("run.spidermonkey") || wanted("floor.guest.spidermonkey") {
        let project = fresh_project(fixture, "js", "app.js", "reuseInstance: true", "reuseInstance: false");
        let wasm = js_tool(&project, Engine::SpiderMonkey);
        all.push(component(
            fixture,
            "spidermonkey",
            "a SpiderMonkey tool (componentize-js, the SDK)",
            &wasm,
            "Shout",
            &upper,
        ));
        all.push(guest_floor(fixture, out, "spidermonkey", &wasm, &upper));
    }
    if wanted("floor.mcp") {
        let reply = out.join("mcp-reply.json");
        record_reply(fixture, &reply);
        all.push(Scenario {
            name: "floor.mcp".into(),
            what: "a bare JSON-RPC loop answering the same call with the same bytes".into(),
            program: Program::new(std::env::current_exe().expect("this benchmark"), &fixture.workspace)
                .arg("--floor-jsonrpc")
                .arg(&reply),
            opening: Fixture::mcp_opening(),
            op: Some(Box::new(Fixture::mcp_read_call(&fixture.small))),
            warm: toolhost_tests::hot_paths::WARM,
            measured: toolhost_tests::hot_paths::MEASURED,
            warm_up: None,
            floor: Vec::new(),
            reset: Vec::new(),
            socket: false,
        });
    }
    if wanted("floor.guest.read") {
        let wasm = toolhost_tests::repo_root().join("target/wasm/wasm32-wasip2/plugin/toolhost_plugin_read.wasm");
        all.push(guest_floor(fixture, out, "read", &wasm, &json!({"file_path": fixture.small})));
    }
    all
}

/// `toolhost new Shout --lang LANG`, with `was` replaced by `now` in its
/// source `file`: the template keeps one warm instance for every call;
/// counted here is a fresh instance per call, as the floor makes.
fn fresh_project(fixture: &Fixture, lang: &str, file: &str, was: &str, now: &str) -> PathBuf {
    let project = fixture.root.join(format!("shout-{lang}"));
    if !project.join(file).exists() {
        let made = Command::new(TOOLHOST).args(["new", "Shout", "--lang", lang, "--dir"]).arg(&project).status();
        assert!(made.is_ok_and(|s| s.success()), "toolhost new Shout --lang {lang}");
    }
    let source = std::fs::read_to_string(project.join(file)).expect("the tool's source");
    let fresh = source.replace(was, now);
    assert!(fresh.contains(now), "the {lang} template no longer says {was}");
    if fresh != source {
        std::fs::write(project.join(file), fresh).expect("the tool's source");
    }
    project
}

/// Calls of a third-party component's tool in a `toolhost run` stream, a
/// fresh instance each.
fn component(fixture: &Fixture, name: &str, what: &str, wasm: &Path, tool: &'static str, input: &Value) -> Scenario {
    let plugins = fixture.root.join(format!("plugins-{name}"));
    std::fs::create_dir_all(&plugins).expect("a plugins directory");
    std::fs::copy(wasm, plugins.join(format!("{name}.wasm"))).expect("installing the component");
    let allow = tool.to_string();
    let mut s = fixture.run(
        &format!("run.{name}"),
        &format!("{what}: a fresh instance and a call"),
        tool,
        input.clone(),
        &["--allow", &allow],
    );
    s.program = s.program.env("TOOLHOST_PLUGINS", &plugins);
    s.floor = vec![format!("floor.guest.{name}")];
    s
}

/// Bare wasmtime: a fresh instance of `wasm` and one call, per operation.
fn guest_floor(fixture: &Fixture, out: &Path, name: &str, wasm: &Path, input: &Value) -> Scenario {
    let cwasm = out.join(format!("{name}.cwasm"));
    floor::precompile(wasm, &cwasm);
    let line = input.to_string();
    Scenario {
        name: format!("floor.guest.{name}"),
        what: "bare wasmtime: a fresh instance and one call of `call`".into(),
        program: Program::new(std::env::current_exe().expect("this benchmark"), &fixture.workspace)
            .arg("--floor-guest")
            .arg(&cwasm)
            .arg(&fixture.workspace),
        opening: Vec::new(),
        op: Some(Box::new(move |_| Exchange::line(line.clone()))),
        warm: toolhost_tests::hot_paths::WARM,
        measured: toolhost_tests::hot_paths::MEASURED,
        warm_up: None,
        floor: Vec::new(),
        reset: Vec::new(),
        socket: false,
    }
}

/// The `result` toolhost sends for the small Read over MCP, for the floor
/// to send the same bytes.
fn record_reply(fixture: &Fixture, file: &Path) {
    let program = fixture.host("serve", &fixture.cache).arg("--no-watch");
    let mut child = program.command(&[]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("toolhost serve");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut exchange = |e: Exchange| -> Option<Value> {
        writeln!(stdin, "{}", e.send).expect("writing");
        let until = e.until?;
        lines.by_ref().map_while(Result::ok).find(|l| until(l)).and_then(|l| serde_json::from_str(&l).ok())
    };
    for e in Fixture::mcp_opening() {
        exchange(e);
    }
    let answer = exchange(Fixture::mcp_read_call(&fixture.small)(0)).expect("an answer to the Read");
    drop(stdin);
    let _ = child.wait();
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    std::fs::write(file, answer["result"].to_string()).expect("writing the reply");
}
