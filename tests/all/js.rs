//! Tools written in JavaScript with the SDK's helper (`sdk/js/toolhost.js`),
//! built by componentize-qjs (QuickJS, `--sync`, and its default on the
//! component-model async ABI), jco's default QuickJS build and
//! componentize-js (SpiderMonkey), each pinned and installed from npm on first use, served
//! through `call`, `run` and `serve`: the example Notes, and a test tool
//! whose faults the helper must turn into answers.

use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use toolhost_tests::js::{Engine, js_tool};

/// A JavaScript tool built with `engine` and compiled into the shared cache
/// once per test process.
fn built(dir: &str, engine: Engine, cell: &'static OnceLock<PathBuf>) -> &'static Path {
    checked_once(cell, || js_tool(&toolhost_tests::repo_root().join(dir), engine))
}

fn notes() -> &'static Path {
    static CELL: OnceLock<PathBuf> = OnceLock::new();
    built("sdk/js/examples/notes", Engine::QuickJs, &CELL)
}

fn faults(engine: Engine) -> &'static Path {
    static QJS: OnceLock<PathBuf> = OnceLock::new();
    static SM: OnceLock<PathBuf> = OnceLock::new();
    static QJS_ASYNC: OnceLock<PathBuf> = OnceLock::new();
    static JCO: OnceLock<PathBuf> = OnceLock::new();
    let cell = match engine {
        Engine::QuickJs => &QJS,
        Engine::SpiderMonkey => &SM,
        Engine::QuickJsAsync => &QJS_ASYNC,
        Engine::Jco => &JCO,
    };
    built("tests/js/faults", engine, cell)
}

fn install(sb: &Sandbox, wasm: &Path, name: &str) {
    std::fs::copy(wasm, sb.plugins.join(name)).unwrap();
}

#[test]
fn notes_through_call_keeps_notes_per_session_and_fails_cleanly() {
    let sb = Sandbox::new();
    install(&sb, notes(), "notes.wasm");
    // Its classifications depend on the input and it validates: asked on
    // each call; it leaves out checkPermissions: not asked.
    let r = toolhost(&sb, &["check", notes().to_str().unwrap()]);
    assert!(
        r.stdout.contains("asks is-concurrency-safe, is-read-only, validate-input, call; declared nothing"),
        "{r:?}"
    );
    let s1 = ["--session", "s1", "--allow", "Notes"];
    let notes = |input: Value| call(&sb, "Notes", &input, &s1);
    let saved = notes(json!({"action": "save", "title": "plan", "text": "1. read the tests\n2. fix the parser"}));
    assert_eq!(saved.assert_ok(), "Saved \"plan\" (35 characters).");
    notes(json!({"action": "save", "title": "bug", "text": "The parser drops trailing commas."})).assert_ok();
    assert_eq!(notes(json!({"action": "get", "title": "plan"})).assert_ok(), "1. read the tests\n2. fix the parser");
    let found = notes(json!({"action": "search", "query": "PARSER trailing"}));
    assert_eq!(found.assert_ok(), "1 of 2 notes match:\n- bug: The parser drops trailing commas.");
    assert!(found.stderr.contains("[progress] searched 2/2 notes"), "{}", found.stderr);
    let listed = notes(json!({"action": "list"}));
    assert_eq!(listed.assert_ok(), "- bug (33 characters)\n- plan (35 characters)");
    // The model's mistakes, then the schema's refusals.
    notes(json!({"action": "get", "title": "plans"}))
        .assert_error("no note titled \"plans\"; the notes are: bug, plan");
    notes(json!({"action": "save", "title": "x"})).assert_error("\"save\" needs a \"text\"");
    notes(json!({"action": "save", "title": "x", "text": "y".repeat(16_001)})).assert_error("at most 16000");
    notes(json!({"action": "shout"})).assert_error("InputValidationError");
    notes(json!({"action": "list", "titel": "x"})).assert_error("unexpected parameter `titel`");
    assert_eq!(notes(json!({"action": "delete", "title": "bug"})).assert_ok(), "Deleted \"bug\".");
    // Another session sees none of it.
    let other = call(&sb, "Notes", &json!({"action": "list"}), &["--session", "s2"]);
    assert_eq!(other.assert_ok(), "There are no notes yet.");

    // Reading calls need no permission; the declaration says which do.
    let listed = toolhost(&sb, &["tools", "--json"]).json();
    let tool = listed.as_array().unwrap().iter().find(|t| t["name"] == "Notes").expect("Notes listed");
    assert_eq!(tool["input_schema"]["additionalProperties"], false, "{tool}");
    assert_eq!(tool["input_schema"]["required"], json!(["action"]), "{tool}");
    call(&sb, "Notes", &json!({"action": "save", "title": "t", "text": "x"}), &[]).assert_error("permission");
}

#[test]
fn notes_through_run_in_order_reads_beside_each_other() {
    let sb = Sandbox::new();
    install(&sb, notes(), "notes.wasm");
    let use_ = |id: &str, input: Value| json!({"type": "tool_use", "id": id, "name": "Notes", "input": input});
    let lines = [
        use_("a", json!({"action": "save", "title": "n1", "text": "alpha beta"})),
        use_("b", json!({"action": "save", "title": "n2", "text": "beta gamma"})),
        use_("c", json!({"action": "search", "query": "beta"})),
        use_("d", json!({"action": "get", "title": "n1"})),
        use_("e", json!({"action": "get"})),
        use_("f", json!({"action": "delete", "title": "n1"})),
        use_("g", json!({"action": "list"})),
    ];
    let out = run_stream(&sb, &["--allow", "Notes"], &lines);
    let results: Vec<&Value> = out.iter().filter(|v| v["type"] == "tool_result").collect();
    let ids: Vec<&str> = results.iter().map(|r| r["tool_use_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["a", "b", "c", "d", "e", "f", "g"], "{out:?}");
    let answer = |i: usize| (results[i]["is_error"].as_bool().unwrap(), content_text(results[i]));
    assert_eq!(answer(2), (false, "2 of 2 notes match:\n- n1: alpha beta\n- n2: beta gamma".into()));
    assert_eq!(answer(3), (false, "alpha beta".into()));
    assert!(answer(4).0 && answer(4).1.contains("needs a \"title\""), "{:?}", answer(4));
    assert_eq!(answer(6), (false, "- n2 (10 characters)".into()));
    assert!(out.iter().any(|v| v["type"] == "progress" && v["tool_use_id"] == "c"), "{out:?}");
}

#[test]
fn notes_through_serve_lists_calls_reports_progress_and_fails_cleanly() {
    let sb = Sandbox::new();
    install(&sb, notes(), "notes.wasm");
    with_served(&sb, |client, _| async move {
        let tools = client.list_all_tools().await.expect("tools/list");
        let notes = tools.iter().find(|t| t.name == "Notes").expect("Notes listed");
        // Read-only for some inputs only: no claim either way.
        assert_eq!(notes.annotations.as_ref().and_then(|a| a.read_only_hint), None, "{notes:?}");
        let r = client.call_tool(mcp_call("Notes", json!({"action": "list"}))).await.expect("call");
        assert_eq!((r.is_error, mcp_text(&r)), (Some(false), "There are no notes yet.".to_string()));
        let r = client.call_tool(mcp_call("Notes", json!({"action": "get", "title": "x"}))).await.expect("call");
        assert!(r.is_error == Some(true) && mcp_text(&r).contains("there are no notes yet"), "{r:?}");
        let r = client.call_tool(mcp_call("Notes", json!({"action": "list", "x": 1}))).await.expect("call");
        assert!(r.is_error == Some(true) && mcp_text(&r).contains("unexpected parameter `x`"), "{r:?}");
        let r = client.call_tool(mcp_call("Notes", json!({"action": "search", "query": "q"}))).await.expect("call");
        assert_eq!((r.is_error, mcp_text(&r)), (Some(false), "No note contains \"q\".".to_string()));
        client
    });
    // Progress, from a search over notes that exist (saving asks, so the
    // session allows Notes).
    let sb2 = Sandbox::new();
    install(&sb2, notes(), "notes.wasm");
    with_served_args(&sb2, &["--allow", "Notes"], |client, handler| async move {
        for title in ["a", "b"] {
            let save = json!({"action": "save", "title": title, "text": "some words"});
            let r = client.call_tool(mcp_call("Notes", save)).await.expect("call");
            assert_eq!(r.is_error, Some(false), "{r:?}");
        }
        let r = client.call_tool(mcp_call("Notes", json!({"action": "search", "query": "words"}))).await.expect("call");
        assert!(mcp_text(&r).starts_with("2 of 2 notes match"), "{r:?}");
        // The structured result, for programs.
        let r = client.call_tool(mcp_call("Notes", json!({"action": "list"}))).await.expect("call");
        let titles = r.structured_content.as_ref().map(|s| s["titles"].clone());
        assert_eq!(titles, Some(json!(["b", "a"])), "{r:?}");
        let progress = handler.wait_for("searched 2/2 notes").await;
        assert!(progress.iter().any(|m| m == "searched 2/2 notes"), "{progress:?}");
        client
    });
}

/// What every engine's build of the fault tool must answer.
fn faults_become_answers(engine: Engine) {
    let sb = Sandbox::new();
    install(&sb, faults(engine), "faults.wasm");
    let allow = ["--allow", "JsFaults"];
    let faults = |what: &str| call(&sb, "JsFaults", &json!({"do": what}), &allow);
    // A bug: the exception and where it happened (file, line, function).
    let text = faults("bug").assert_error("the tool failed with an exception:\nTypeError");
    assert!(text.contains("app.js:") && text.contains("divide"), "{text}");
    faults("throw-string").assert_error("a thrown value: not an Error");
    faults("tool-error").assert_error("the file is gone");
    faults("too-large").assert_error("session state refused \"big\": value-too-large");
    let ok = faults("ok");
    assert_eq!(ok.json()["content"][0], json!({"type": "text", "text": "{\"fine\":true}"}), "{ok:?}");
    // console goes to the host's log, tagged with the tool; not into the result.
    let input = json!({"do": "console"}).to_string();
    let out = toolhost_command(&sb)
        .env("RUST_LOG", "info")
        .args(["--allow", "JsFaults", "call", "JsFaults", &input])
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), "logged");
    assert!(stderr.contains("a line for the log from JsFaults {\"n\":1}") && stderr.contains("JsFaults"), "{stderr}");
    assert!(stderr.contains("an error line"), "{stderr}");
    // A classification that throws answers false: the call runs alone, and
    // the warning says why.
    let lines = [json!({"type": "tool_use", "id": "a", "name": "JsFaults", "input": {"do": "ok"}})];
    let out = run_stream(&sb, &allow, &lines);
    assert!(out.iter().any(|v| v["type"] == "tool_result" && v["is_error"] == false), "{out:?}");
}

#[test]
fn quickjs_faults_become_answers_with_their_stack() {
    faults_become_answers(Engine::QuickJs);
}

#[test]
fn spidermonkey_faults_become_answers_with_their_stack() {
    faults_become_answers(Engine::SpiderMonkey);
}

/// componentize-qjs's default build (its runtime on the component-model
/// async ABI) loads and answers as the synchronous build does.
#[test]
fn a_default_quickjs_build_on_the_async_abi_answers_the_same() {
    faults_become_answers(Engine::QuickJsAsync);
}

/// jco's default QuickJS build (`jco componentize app.js --wit wit -n
/// plugin --backend quickjs`, no other flag) loads and answers; a guest
/// spinning in it is stopped at its deadline.
#[test]
fn a_default_jco_quickjs_build_answers_and_is_stopped_at_its_deadline() {
    faults_become_answers(Engine::Jco);
    let sb = Sandbox::new();
    install(&sb, faults(Engine::Jco), "faults.wasm");
    let started = std::time::Instant::now();
    let spin = call(&sb, "JsFaults", &json!({"do": "spin"}), &["--allow", "JsFaults", "--timeout-ms", "1000"]);
    spin.assert_error("JsFaults timed out after 1000 ms and was stopped.");
    assert!(started.elapsed() < std::time::Duration::from_secs(9), "{:?}", started.elapsed());
}

/// A tool that declares `reuse-instance`: one warm instance serves a
/// session's calls one after another (its module state shows it), a fault
/// ends it, and calls of another session never share it.
#[test]
fn a_warm_instance_serves_one_session_until_a_fault() {
    use toolhost::{CallOptions, ToolUse};
    let sb = Sandbox::new();
    install(&sb, faults(Engine::QuickJs), "faults.wasm");
    let host = crate::support::host_builder(&sb)
        .plugins_dir(Some(sb.plugins.clone()))
        .timeout(std::time::Duration::from_millis(500))
        .mode(toolhost::PermissionMode::BypassPermissions)
        // Optimized at once: a switch from quick code (tests/all/quick.rs)
        // would start a new instance midway.
        .quick_compile_above(None)
        .build()
        .expect("host");
    let call = |session: &std::sync::Arc<toolhost::Session>, what: &str| {
        let tool_use = ToolUse { id: format!("toolu_{what}"), name: "JsFaults".into(), input: json!({"do": what}) };
        let r = host.call(session, &tool_use, &CallOptions::default());
        (r.is_error, r.text())
    };
    let (a, b) = (host.session("a").unwrap(), host.session("b").unwrap());
    let count = |n: u32| (false, format!("call {n} of this instance"));
    assert_eq!(call(&a, "count"), count(1));
    assert_eq!(call(&a, "count"), count(2));
    // Another session: an instance of its own.
    assert_eq!(call(&b, "count"), count(1));
    assert_eq!(call(&a, "count"), count(3));
    // A tool error is an answer, not a fault: the instance stays.
    assert!(call(&a, "tool-error").0);
    assert_eq!(call(&a, "count"), count(5));
    // A fault (here its time limit) ends the instance.
    let (failed, text) = call(&a, "spin");
    assert!(failed && text.contains("time"), "{text}");
    assert_eq!(call(&a, "count"), count(1));
    // So does the session's end.
    host.end_session(&b);
    assert_eq!(call(&b, "count"), count(1));
}

/// Through `run`: the stream's calls share the warm instance, classification
/// included. Each call is sent once the one before is answered: calls sent
/// together are classified while earlier ones run, and a classification
/// that finds the session's instance busy makes another (reuse saves time;
/// it is never owed).
#[test]
fn a_run_stream_reuses_the_warm_instance() {
    use std::io::{BufRead as _, Write as _};
    let sb = Sandbox::new();
    install(&sb, faults(Engine::QuickJs), "faults.wasm");
    // Optimized at once: see above.
    let args = ["--allow", "JsFaults", "--timeout-ms", "500", "--quick-compile-above", "off", "run"];
    let mut child = spawn_piped(&sb, &args);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut ask = |id: &str, what: &str| -> (bool, String) {
        let line = json!({"type": "tool_use", "id": id, "name": "JsFaults", "input": {"do": what}});
        writeln!(stdin, "{line}").expect("write a line");
        stdin.flush().expect("flush");
        loop {
            let out: Value = serde_json::from_str(&lines.next().expect("a line").expect("read")).expect("JSON");
            if out["type"] == "tool_result" {
                assert_eq!(out["tool_use_id"], id, "{out}");
                return (out["is_error"].as_bool().unwrap(), content_text(&out));
            }
        }
    };
    assert_eq!(ask("a", "count"), (false, "call 1 of this instance".into()));
    assert_eq!(ask("b", "count"), (false, "call 2 of this instance".into()));
    assert!(ask("c", "spin").0);
    // The fault ended that instance.
    assert_eq!(ask("d", "count"), (false, "call 1 of this instance".into()));
    assert_eq!(ask("e", "count"), (false, "call 2 of this instance".into()));
    drop(stdin);
    assert!(child.wait().expect("wait").success());
}

/// A tool written without the helper (`tests/js/console`), built by jco's
/// default QuickJS build and componentize-qjs's default (both on the async
/// ABI), whose engine writes to WASI's stderr from inside the async ABI: the
/// report of a `console` QuickJS lacks, of an error of 200 KiB (past the 64
/// KiB kept), of a promise nothing settles. Each is an answer under `call`,
/// `run` and `serve`, and the call after it is answered.
#[test]
fn an_engine_writing_to_stderr_on_the_async_abi_is_answered_in_every_front() {
    static JCO: OnceLock<PathBuf> = OnceLock::new();
    static QJS_ASYNC: OnceLock<PathBuf> = OnceLock::new();
    for (engine, cell) in [(Engine::Jco, &JCO), (Engine::QuickJsAsync, &QJS_ASYNC)] {
        let wasm = built("tests/js/console", engine, cell);
        let sb = Sandbox::new();
        install(&sb, wasm, "console.wasm");
        let flags = ["--allow", "JsConsole", "--timeout-ms", "3000"];
        let cases = [json!({"do": "log"}), json!({"do": "throw-large"}), json!({"do": "never"})];
        for input in &cases {
            let out = toolhost_command(&sb)
                .env("RUST_LOG", "toolhost=debug")
                .args(flags)
                .args(["call", "JsConsole", &input.to_string()])
                .output()
                .unwrap();
            let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            // An answer (exit 0, or 1 for an error result), never a crash.
            assert!(
                matches!(out.status.code(), Some(0 | 1)),
                "{engine:?} {input}: {:?}\n{stdout}\n{stderr}",
                out.status
            );
            if input["do"] == "log" {
                let answered = stdout.contains("logged") || stdout.contains("console is not defined");
                assert!(answered, "{engine:?}: the engine's report reaches the answer: {stdout}\n{stderr}");
            }
        }
        assert_eq!(call(&sb, "JsConsole", &json!({"do": "ok"}), &flags).assert_ok(), "ok");
        // `run`: each, then a plain call.
        let mut lines = Vec::new();
        for (i, input) in cases.iter().enumerate() {
            lines.push(json!({"type": "tool_use", "id": format!("a{i}"), "name": "JsConsole", "input": input}));
            lines.push(json!({"type": "tool_use", "id": format!("b{i}"), "name": "JsConsole", "input": {"do": "ok"}}));
        }
        let out = run_stream(&sb, &flags, &lines);
        let results: Vec<&Value> = out.iter().filter(|v| v["type"] == "tool_result").collect();
        assert_eq!(results.len(), lines.len(), "{engine:?}: {out:?}");
        for r in results.iter().filter(|r| r["tool_use_id"].as_str().is_some_and(|id| id.starts_with('b'))) {
            assert_eq!(content_text(r), "ok", "{engine:?}: {r}");
        }
        // `serve`: each, then a plain call.
        with_served_args(&sb, &flags, |client, _| async move {
            for input in [json!({"do": "log"}), json!({"do": "throw-large"}), json!({"do": "never"})] {
                client.call_tool(mcp_call("JsConsole", input.clone())).await.expect("answered");
                let r = client.call_tool(mcp_call("JsConsole", json!({"do": "ok"}))).await.expect("answered");
                assert_eq!(mcp_text(&r), "ok", "after {input}");
            }
            client
        });
    }
}
