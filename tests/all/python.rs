//! Tools written in Python with the SDK's helper (`sdk/python/toolhost.py`),
//! built by componentize-py (pinned, installed on first use) and served
//! through `call`, `run` and `serve`: the example Calc, and a test tool
//! whose faults the helper must turn into answers.

use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A Python tool built and compiled into the shared cache once per test
/// process (so parallel tests do not each compile 18 MB).
fn built(dir: &str, cell: &'static OnceLock<PathBuf>) -> &'static Path {
    checked_once(cell, || toolhost_tests::python::python_tool(&toolhost_tests::repo_root().join(dir)))
}

fn calc() -> &'static Path {
    static CELL: OnceLock<PathBuf> = OnceLock::new();
    built("sdk/python/examples/calc", &CELL)
}

fn faults() -> &'static Path {
    static CELL: OnceLock<PathBuf> = OnceLock::new();
    built("tests/python/faults", &CELL)
}

fn install(sb: &Sandbox, wasm: &Path, name: &str) {
    std::fs::copy(wasm, sb.plugins.join(name)).unwrap();
}

#[test]
fn calc_through_call_answers_fails_and_keeps_session_state() {
    let sb = Sandbox::new();
    install(&sb, calc(), "calc.wasm");
    // Read-only for every input, concurrency-safe for some: one asked, one
    // declared; the checks it leaves at their defaults are not asked.
    let check = toolhost(&sb, &["check", calc().to_str().unwrap()]);
    assert!(check.stdout.contains("asks is-concurrency-safe, call; declared read-only;"), "{check:?}");
    let r = call(&sb, "Calc", &json!({"expressions": ["x = 17/400", "x * 25000", "2**100"]}), &[]);
    assert_eq!(r.assert_ok(), "x = 17/400 (≈ 0.0425)\n2125/2 (≈ 1062.5)\n1267650600228229401496703205376", "{r:?}");
    assert!(r.stderr.contains("[progress] 1/3: x = 17/400"), "{}", r.stderr);
    // The schema (additionalProperties: false by the helper), then the tool's own errors.
    call(&sb, "Calc", &json!({"expressions": ["1"], "bogus": 1}), &[]).assert_error("unexpected parameter `bogus`");
    call(&sb, "Calc", &json!({"expressions": []}), &[]).assert_error("InputValidationError");
    call(&sb, "Calc", &json!({"expressions": ["1/0"]}), &[]).assert_error("division by zero");
    call(&sb, "Calc", &json!({"expressions": ["__import__('os')"]}), &[]).assert_error("is not supported");
    call(&sb, "Calc", &json!({"expressions": ["9**9**9"]}), &[]).assert_error("digits");
    // Variables stay with the session, and only with it.
    call(&sb, "Calc", &json!({"expressions": ["r = 3"]}), &["--session", "s1"]).assert_ok();
    assert_eq!(call(&sb, "Calc", &json!({"expressions": ["r * 2"]}), &["--session", "s1"]).assert_ok(), "6");
    call(&sb, "Calc", &json!({"expressions": ["r"]}), &["--session", "s2"]).assert_error("`r` is not defined");

    let listed = toolhost(&sb, &["tools", "--json"]).json();
    let calc = listed.as_array().unwrap().iter().find(|t| t["name"] == "Calc").expect("Calc listed");
    assert_eq!(calc["input_schema"]["additionalProperties"], false, "{calc}");
    assert_eq!(calc["input_schema"]["required"], json!(["expressions"]), "{calc}");
}

#[test]
fn python_faults_become_answers_with_their_traceback() {
    let sb = Sandbox::new();
    install(&sb, faults(), "faults.wasm");
    let allow = ["--allow", "PyFaults"];
    let text = call(&sb, "PyFaults", &json!({"do": "raise"}), &allow).assert_error("ZeroDivisionError");
    // Where it happened: the file, the line and the function.
    assert!(text.contains("Traceback") && text.contains("app.py\", line ") && text.contains("in divide"), "{text}");
    call(&sb, "PyFaults", &json!({"do": "tool-error"}), &allow).assert_error("the file is gone");
    let ok = call(&sb, "PyFaults", &json!({"do": "ok"}), &allow);
    assert_eq!(ok.json()["content"][0], json!({"type": "text", "text": "{\"fine\":true}"}), "{ok:?}");
    // print goes to the host's log, tagged with the tool.
    let input = json!({"do": "print"}).to_string();
    let out = toolhost_command(&sb)
        .env("RUST_LOG", "info")
        .args(["--allow", "PyFaults", "call", "PyFaults", &input])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("a line for the log from PyFaults") && stderr.contains("PyFaults"), "{stderr}");
    assert!(stderr.contains("unfinished"), "the last line without a newline is logged too: {stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("a line for the log"), "not in the result");
}

#[test]
fn calc_through_run_in_order_with_progress() {
    let sb = Sandbox::new();
    install(&sb, calc(), "calc.wasm");
    install(&sb, faults(), "faults.wasm");
    let lines = [
        json!({"type": "tool_use", "id": "a", "name": "Calc", "input": {"expressions": ["n = 6"]}}),
        json!({"type": "tool_use", "id": "b", "name": "Calc", "input": {"expressions": ["n * 7"]}}),
        json!({"type": "tool_use", "id": "c", "name": "Calc", "input": {"expressions": ["n + 1"]}}),
        json!({"type": "tool_use", "id": "d", "name": "Calc", "input": {"expressions": "n"}}),
        json!({"type": "tool_use", "id": "e", "name": "Calc", "input": {"expressions": ["m"]}}),
        // A classification that raises counts as not concurrency-safe.
        json!({"type": "tool_use", "id": "f", "name": "PyFaults", "input": {"do": "ok"}}),
    ];
    let out = run_stream(&sb, &["--allow", "PyFaults"], &lines);
    let results: Vec<&Value> = out.iter().filter(|v| v["type"] == "tool_result").collect();
    let ids: Vec<&str> = results.iter().map(|r| r["tool_use_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["a", "b", "c", "d", "e", "f"], "{out:?}");
    let answer = |i: usize| (results[i]["is_error"].as_bool().unwrap(), content_text(results[i]));
    assert_eq!(answer(0), (false, "n = 6".into()));
    assert_eq!(answer(1), (false, "42".into()));
    assert_eq!(answer(2), (false, "7".into()));
    assert!(answer(3).0 && answer(3).1.contains("InputValidationError"), "{:?}", answer(3));
    assert!(answer(4).0 && answer(4).1.contains("`m` is not defined"), "{:?}", answer(4));
    assert!(!answer(5).0, "{:?}", answer(5));
    assert!(out.iter().any(|v| v["type"] == "progress" && v["tool_use_id"] == "b"), "{out:?}");
}

#[test]
fn calc_through_serve_lists_calls_reports_progress_and_fails_cleanly() {
    let sb = Sandbox::new();
    install(&sb, calc(), "calc.wasm");
    with_served(&sb, |client, handler| async move {
        let tools = client.list_all_tools().await.expect("tools/list");
        let calc = tools.iter().find(|t| t.name == "Calc").expect("Calc listed");
        assert_eq!(calc.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
        assert!(calc.description.as_deref().is_some_and(|d| d.contains("exactly")), "{calc:?}");

        let r = client.call_tool(mcp_call("Calc", json!({"expressions": ["a = 2", "a ** 10"]}))).await.expect("call");
        assert_eq!((r.is_error, mcp_text(&r)), (Some(false), "a = 2\n1024".to_string()));
        let r = client.call_tool(mcp_call("Calc", json!({"expressions": ["a / 0"]}))).await.expect("call");
        assert_eq!((r.is_error, mcp_text(&r)), (Some(true), "division by zero".to_string()));
        let r = client.call_tool(mcp_call("Calc", json!({"expressions": ["1"], "x": 1}))).await.expect("call");
        assert!(r.is_error == Some(true) && mcp_text(&r).contains("unexpected parameter `x`"), "{r:?}");
        let progress = handler.wait_for("2/2: a ** 10").await;
        assert!(progress.iter().any(|m| m == "2/2: a ** 10"), "{progress:?}");
        client
    });
}

/// A tool without `reuse-instance` gets a fresh instance for every call, also
/// when the host made that instance ahead (a spare, made while no call ran):
/// its module-state counter says 1 every time, and the host's log shows the
/// spares served.
#[test]
fn each_call_of_a_fresh_instance_tool_sees_a_new_instance_also_from_a_spare() {
    use std::io::{BufRead as _, Read as _, Write as _};
    let sb = Sandbox::new();
    install(&sb, faults(), "faults.wasm");
    let mut child = toolhost_command(&sb)
        .args(["--allow", "PyFaults", "run", "--max-concurrency", "1"])
        .env("RUST_LOG", "toolhost=debug")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start toolhost");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    // One call at a time, with a pause between them (as an agent's calls
    // come): the spare of the next call is made in the pause.
    for n in 0..6 {
        let line = json!({"type": "tool_use", "id": format!("c{n}"), "name": "PyFaults", "input": {"do": "count"}});
        writeln!(stdin, "{line}").unwrap();
        let result = loop {
            let mut text = String::new();
            assert!(stdout.read_line(&mut text).unwrap() > 0, "the stream ended");
            let v: Value = serde_json::from_str(&text).unwrap();
            if v["type"] == "tool_result" {
                break v;
            }
        };
        assert_eq!(content_text(&result), "served 1", "call {n}: {result}");
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let log = log.join().unwrap();
    let spares = log.lines().filter(|l| l.contains("instance=\"spare\"") && l.contains("call finished")).count();
    assert!(spares >= 3, "spares served {spares} of the 5 calls after the first:\n{log}");
}
