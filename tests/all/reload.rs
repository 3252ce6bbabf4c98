//! Hot loading: the plugins directory watched (library, `run`; `serve` is in
//! mcp.rs), components added, replaced, broken and removed while calls run.

use crate::support::{host_builder, spawn_piped, tool_use};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::sync::mpsc;
use std::time::Duration;
use toolhost::ToolsChanged;
use toolhost::{CallOptions, Host};
use toolhost_tests::{ECHO, SLEEPER, Sandbox};

/// Long enough for a debounced reload that compiles a component on a
/// loaded 2-core machine (a cached compile takes milliseconds).
const WAIT: Duration = Duration::from_secs(60);

fn host(sb: &Sandbox, watch: bool) -> Host {
    host_builder(sb).plugins_dir(Some(sb.plugins.clone())).watch_plugins(watch).build().expect("host")
}

/// The reload events of `host`, as a channel with timeouts.
fn changes(host: &Host) -> mpsc::Receiver<ToolsChanged> {
    let mut rx = host.tools_changed();
    let (tx, out) = mpsc::channel();
    std::thread::spawn(move || {
        while let Ok(change) = rx.blocking_recv() {
            if tx.send(change).is_err() {
                return;
            }
        }
    });
    out
}

fn next(changes: &mpsc::Receiver<ToolsChanged>, what: &str) -> ToolsChanged {
    changes.recv_timeout(WAIT).unwrap_or_else(|_| panic!("no reload within {WAIT:?} after {what}"))
}

use toolhost_tests::with_custom_section;

/// Writes `bytes` as `name` in the plugins directory, atomically.
fn put(sb: &Sandbox, name: &str, bytes: &[u8]) {
    toolhost_tests::put_atomically(&sb.plugins.join(name), bytes);
}

fn echo(host: &Host) -> toolhost::ToolResult {
    host.call(&host.ephemeral_session(), &tool_use("Echo", json!({"text": "hi"})), &CallOptions::default())
}

#[test]
fn reload_adds_replaces_keeps_a_good_version_and_removes() {
    let sb = Sandbox::new();
    let host = host(&sb, false);
    assert!(host.reload_plugins().is_none(), "nothing changed yet");
    let r = echo(&host);
    assert!(r.is_error && r.text().contains("No such tool available: Echo"), "{r:?}");

    let wasm = std::fs::read(ECHO).unwrap();
    put(&sb, "echo.wasm", &wasm);
    let change = host.reload_plugins().expect("a change");
    assert_eq!((change.added, change.removed, change.replaced), (vec!["Echo".to_string()], vec![], vec![]));
    assert_eq!(echo(&host).text(), "hi");
    // The alias came with it.
    assert!(host.tool("Parrot").is_some());
    // Touched but the same bytes: nothing to tell.
    put(&sb, "echo.wasm", &wasm);
    assert!(host.reload_plugins().is_none(), "the same bytes are no change");

    // A new version (other bytes, here a request more).
    let old = host.tool("Echo").unwrap();
    put(&sb, "echo.wasm", &with_custom_section(&wasm, "toolhost:requests", br#"{"env": ["ECHO_VERSION"]}"#));
    let change = host.reload_plugins().expect("a change");
    assert_eq!(change.replaced, ["Echo"]);
    let new = host.tool("Echo").unwrap();
    assert!(!std::sync::Arc::ptr_eq(&old, &new));
    assert_eq!(new.requests().env, ["ECHO_VERSION"]);
    assert!(old.requests().env.is_empty(), "a held version does not change");

    // A broken new version is rejected; the one before keeps serving.
    put(&sb, "echo.wasm", b"\0asm\x0d\0\x01\0not a component");
    let change = host.reload_plugins().expect("the rejection is told");
    assert!(!change.tools_changed(), "{change:?}");
    assert_eq!(change.problems.len(), 1, "{change:?}");
    let problem = &change.problems[0];
    assert!(problem.contains("echo.wasm") && problem.contains("keeps serving"), "{problem}");
    assert_eq!(echo(&host).text(), "hi");
    assert!(std::sync::Arc::ptr_eq(&host.tool("Echo").unwrap(), &new));
    assert!(host.problems().iter().any(|p| p.source.ends_with("echo.wasm") && p.message.contains("rejected")));
    // Reloading again does not load the same broken bytes again.
    assert!(host.reload_plugins().is_none());

    // Fixed: served again, the problem gone.
    put(&sb, "echo.wasm", &wasm);
    let change = host.reload_plugins().expect("a change");
    assert_eq!(change.replaced, ["Echo"]);
    assert!(host.problems().is_empty(), "{:?}", host.problems());

    // Removed: no longer offered, calls get the no-such-tool error.
    std::fs::remove_file(sb.plugins.join("echo.wasm")).unwrap();
    let change = host.reload_plugins().expect("a change");
    assert_eq!(change.removed, ["Echo"]);
    assert!(host.pool().iter().all(|t| t.spec().name != "Echo"));
    let r = echo(&host);
    assert!(r.is_error && r.text().contains("No such tool available: Echo"), "{r:?}");
}

#[test]
fn a_new_broken_component_is_a_problem_and_others_load() {
    let sb = Sandbox::new();
    let host = host(&sb, false);
    put(&sb, "broken.wasm", b"not wasm at all");
    put(&sb, "echo.wasm", &std::fs::read(ECHO).unwrap());
    let change = host.reload_plugins().expect("a change");
    assert_eq!(change.added, ["Echo"]);
    assert!(change.problems.iter().any(|p| p.contains("broken.wasm") && p.contains("not a WebAssembly file")));
    assert_eq!(echo(&host).text(), "hi");
}

#[test]
fn a_watching_host_reloads_and_running_calls_finish_on_their_version() {
    let sb = Sandbox::new();
    let host = host(&sb, true);
    assert!(host.watching());
    let changes = changes(&host);

    put(&sb, "sleeper.wasm", &std::fs::read(SLEEPER).unwrap());
    let change = next(&changes, "adding sleeper.wasm");
    assert_eq!(change.added, ["Sleeper"]);

    // A call runs while its component is removed: it finishes, on the
    // version it started with; the next call finds no such tool.
    let (began, started) = mpsc::channel();
    let running = {
        let host = host.clone();
        std::thread::spawn(move || {
            let input = json!({"label": "long", "ms": 1500, "safe": true, "progress_ms": 100});
            let began = std::sync::Mutex::new(began);
            let progress: toolhost::ProgressSink = std::sync::Arc::new(move |_| {
                let _ = began.lock().unwrap().send(());
            });
            let options = CallOptions { progress: Some(progress), ..CallOptions::default() };
            host.call(&host.ephemeral_session(), &tool_use("Sleeper", input), &options)
        })
    };
    // Its first progress message: the call runs.
    started.recv_timeout(Duration::from_secs(30)).expect("the call reports progress");
    std::fs::remove_file(sb.plugins.join("sleeper.wasm")).unwrap();
    let change = next(&changes, "removing sleeper.wasm");
    assert_eq!(change.removed, ["Sleeper"]);
    let r = running.join().unwrap();
    assert!(!r.is_error, "{r:?}");
    assert!(r.text().contains("\"label\":\"long\""), "{}", r.text());
    let r = host.call(
        &host.ephemeral_session(),
        &tool_use("Sleeper", json!({"label": "x", "safe": true})),
        &CallOptions::default(),
    );
    assert!(r.is_error && r.text().contains("No such tool available: Sleeper"), "{r:?}");

    // A burst of writes (a copy in pieces) is one reload, of the whole file.
    let wasm = std::fs::read(ECHO).unwrap();
    let mut file = std::fs::File::create(sb.plugins.join("echo.wasm")).unwrap();
    for chunk in wasm.chunks(wasm.len() / 4 + 1) {
        file.write_all(chunk).unwrap();
        file.flush().unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(file);
    // (A machine too loaded to write within the quiet time may reload a
    // part first: that is a rejected file, then the whole one loads.)
    let mut change = next(&changes, "writing echo.wasm");
    while change.added.is_empty() {
        assert!(!change.tools_changed(), "{change:?}");
        change = next(&changes, "writing echo.wasm");
    }
    assert_eq!(change.added, ["Echo"], "{change:?}");
    assert_eq!(echo(&host).text(), "hi");
}

/// Reads `run`'s stdout lines until one satisfies `want`.
fn read_until(lines: &mpsc::Receiver<Value>, what: &str, want: impl Fn(&Value) -> bool) -> Value {
    loop {
        let line = lines.recv_timeout(WAIT).unwrap_or_else(|_| panic!("no line {what} within {WAIT:?}"));
        if want(&line) {
            return line;
        }
    }
}

#[test]
fn run_writes_tools_changed_and_serves_the_new_tool() {
    let sb = Sandbox::new();
    let mut child = spawn_piped(&sb, &["run"]);
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = tx.send(serde_json::from_str::<Value>(&line).expect("a JSON line"));
        }
    });
    // The host is up once it answers a call.
    let mut send = |line: Value| writeln!(stdin, "{line}").and_then(|()| stdin.flush()).expect("write stdin");
    let call = |id: &str| json!({"type": "tool_use", "id": id, "name": "Echo", "input": {"text": id}});
    send(call("before"));
    let r = read_until(&lines, "for `before`", |l| l["tool_use_id"] == "before");
    assert_eq!(r["is_error"], true, "{r}");

    std::fs::copy(ECHO, sb.plugins.join("echo.wasm")).unwrap();
    let line = read_until(&lines, "tools_changed", |l| l["type"] == "tools_changed");
    assert_eq!(line["added"], json!(["Echo"]), "{line}");
    send(call("after"));
    let r = read_until(&lines, "for `after`", |l| l["tool_use_id"] == "after");
    assert_eq!((r["is_error"].as_bool(), crate::support::content_text(&r)), (Some(false), "after".into()), "{r}");

    std::fs::remove_file(sb.plugins.join("echo.wasm")).unwrap();
    let line = read_until(&lines, "tools_changed", |l| l["type"] == "tools_changed");
    assert_eq!(line["removed"], json!(["Echo"]), "{line}");
    send(call("gone"));
    let r = read_until(&lines, "for `gone`", |l| l["tool_use_id"] == "gone");
    assert!(crate::support::content_text(&r).contains("No such tool available: Echo"), "{r}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn run_no_watch_loads_once() {
    let sb = Sandbox::new();
    let mut child = spawn_piped(&sb, &["run", "--no-watch"]);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, "{}", json!({"type": "tool_use", "id": "a", "name": "Read", "input": {"file_path": "/nope"}}))
        .unwrap();
    stdin.flush().unwrap();
    // The host is up and serving once the first call is answered.
    let mut text = String::new();
    while !text.contains("tool_result") {
        assert!(stdout.read_line(&mut text).unwrap() > 0, "the stream ended: {text}");
    }
    std::fs::copy(ECHO, sb.plugins.join("echo.wasm")).unwrap();
    // Time a watcher would have taken to see the new file (it reloads after
    // 150 ms of quiet): nothing may come of it.
    std::thread::sleep(Duration::from_millis(1000));
    writeln!(stdin, "{}", json!({"type": "tool_use", "id": "b", "name": "Echo", "input": {"text": "x"}})).unwrap();
    drop(stdin);
    std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(!text.contains("tools_changed"), "{text}");
    assert!(text.contains("No such tool available: Echo"), "{text}");
}

#[test]
fn a_reload_reads_the_grants_again() {
    use std::sync::{Arc, Mutex};
    let sb = Sandbox::new();
    let grants: Arc<Mutex<Value>> = Arc::new(Mutex::new(json!({})));
    let source: toolhost::GrantsSource = {
        let grants = Arc::clone(&grants);
        Arc::new(move || serde_json::from_value(grants.lock().unwrap().clone()).map_err(|e| e.to_string()))
    };
    let host = crate::support::host_builder(&sb)
        .plugins_dir(Some(sb.plugins.clone()))
        .tool_grants_source(source)
        .build()
        .expect("host");
    // It imports the files capability: without the grant it does not load.
    put(&sb, "thief.wasm", &std::fs::read(toolhost_tests::FILES_THIEF).unwrap());
    let change = host.reload_plugins().expect("a change");
    assert!(change.added.is_empty() && change.problems.iter().any(|p| p.contains("not granted")), "{change:?}");
    // Granted in the settings meanwhile (as `toolhost install` does): the
    // next reload loads it, though the file did not change.
    *grants.lock().unwrap() = json!({"Thief": {"workspace": "read-write"}});
    let change = host.reload_plugins().expect("a change");
    assert_eq!(change.added, ["Thief"], "{change:?}");
    assert!(host.tool("Thief").unwrap().grants().files.workspace().is_some());
    // Nothing changed since: nothing to tell, nothing loaded again.
    assert!(host.reload_plugins().is_none());
}

#[test]
fn a_component_installed_into_a_running_run_is_served_with_its_grants() {
    let sb = Sandbox::new();
    let mut child = spawn_piped(&sb, &["--allow", "Thief", "run"]);
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = tx.send(serde_json::from_str::<Value>(&line).expect("a JSON line"));
        }
    });
    let victim = sb.write("victim.txt", "mine");
    let call = |id: &str| json!({"type": "tool_use", "id": id, "name": "Thief", "input": {"path": victim}});
    writeln!(stdin, "{}", call("before")).unwrap();
    let r = read_until(&lines, "for `before`", |l| l["tool_use_id"] == "before");
    assert_eq!(r["is_error"], true, "{r}");
    // Installed meanwhile, with its grant (workspace read-write) written to
    // the local settings: the running host reads it at the reload.
    let out = crate::support::toolhost(&sb, &["install", toolhost_tests::FILES_THIEF, "--yes"]);
    assert_eq!(out.code, 0, "{out:?}");
    let line = read_until(&lines, "tools_changed", |l| l["type"] == "tools_changed");
    assert_eq!(line["added"], json!(["Thief"]), "{line}");
    writeln!(stdin, "{}", call("after")).unwrap();
    let r = read_until(&lines, "for `after`", |l| l["tool_use_id"] == "after");
    assert_eq!(r["is_error"], false, "{r}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "pwned");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// Calls from several threads while the component is replaced (between two
/// versions) and, for a moment, removed: every call of the served tool
/// succeeds, each on one version; calls while it is gone get the
/// no-such-tool error and nothing else; no call is lost.
#[test]
fn soak_ten_thousand_calls_through_fifty_reloads() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let sb = Sandbox::new();
    let host = host(&sb, false);
    let wasm = std::fs::read(ECHO).unwrap();
    let versions = [with_custom_section(&wasm, "soak", b"a"), with_custom_section(&wasm, "soak", b"b")];
    put(&sb, "echo.wasm", &versions[0]);
    host.reload_plugins().expect("loaded");
    let (ok, gone) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let callers: Vec<_> = (0..4)
        .map(|t| {
            let (host, ok, gone) = (host.clone(), Arc::clone(&ok), Arc::clone(&gone));
            std::thread::spawn(move || {
                let session = host.ephemeral_session();
                for i in 0..2_500 {
                    let text = format!("{t}-{i}");
                    let r = host.call(&session, &tool_use("Echo", json!({"text": text})), &CallOptions::default());
                    match (r.is_error, r.text()) {
                        (false, out) if out == text => ok.fetch_add(1, Ordering::Relaxed),
                        (true, out) if out.contains("No such tool available: Echo") => {
                            gone.fetch_add(1, Ordering::Relaxed)
                        }
                        other => panic!("call {text}: {other:?}"),
                    };
                }
            })
        })
        .collect();
    let mut reloads = 0;
    while reloads < 50 {
        reloads += 1;
        if reloads == 25 {
            std::fs::remove_file(sb.plugins.join("echo.wasm")).unwrap();
            assert_eq!(host.reload_plugins().expect("removed").removed, ["Echo"]);
            std::thread::sleep(Duration::from_millis(5));
        }
        put(&sb, "echo.wasm", &versions[reloads % 2]);
        let change = host.reload_plugins().expect("a change");
        assert!(change.problems.is_empty(), "{change:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
    for caller in callers {
        caller.join().expect("a caller panicked");
    }
    let (ok, gone) = (ok.load(Ordering::Relaxed), gone.load(Ordering::Relaxed));
    assert_eq!(ok + gone, 10_000, "calls lost");
    assert!(ok > 0, "no call was served");
}

/// `run` with a stream of calls while the component is replaced again and
/// again: every call has exactly one result, and every one succeeds.
#[test]
fn run_keeps_serving_a_stream_of_calls_through_replacements() {
    let sb = Sandbox::new();
    let wasm = std::fs::read(ECHO).unwrap();
    let versions = [with_custom_section(&wasm, "stream", b"a"), with_custom_section(&wasm, "stream", b"b")];
    put(&sb, "echo.wasm", &versions[0]);
    let mut child = spawn_piped(&sb, &["run"]);
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let reader = std::thread::spawn(move || {
        stdout.lines().map_while(Result::ok).map(|l| serde_json::from_str::<Value>(&l).unwrap()).collect::<Vec<_>>()
    });
    for i in 0..300 {
        let line =
            json!({"type": "tool_use", "id": format!("c{i}"), "name": "Echo", "input": {"text": format!("c{i}")}});
        writeln!(stdin, "{line}").unwrap();
        if i % 20 == 10 {
            put(&sb, "echo.wasm", &versions[(i / 20 + 1) % 2]);
        }
        // Calls keep coming; now and then quiet long enough for a reload.
        std::thread::sleep(Duration::from_millis(if i % 20 == 15 { 250 } else { 2 }));
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let lines = reader.join().unwrap();
    let results: Vec<&Value> = lines.iter().filter(|l| l["type"] == "tool_result").collect();
    assert_eq!(results.len(), 300, "a call has no result, or two");
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["tool_use_id"], format!("c{i}"), "in order");
        assert_eq!((r["is_error"].as_bool(), crate::support::content_text(r)), (Some(false), format!("c{i}")), "{r}");
    }
    assert!(lines.iter().any(|l| l["type"] == "tools_changed" && l["replaced"] == json!(["Echo"])), "no reload seen");
}

/// A plain component's tools come and go together, and writing the policy
/// file beside it reloads them with what it now requests.
#[test]
fn a_plain_components_tools_reload_with_it_and_with_its_policy_file() {
    let sb = Sandbox::new();
    let host = host(&sb, true);
    let changes = changes(&host);
    put(&sb, "plain.wasm", &std::fs::read(toolhost_tests::PLAIN).unwrap());
    let change = next(&changes, "adding plain.wasm");
    assert!(
        change.added.contains(&"greet".to_string()) && change.added.contains(&"read-file".to_string()),
        "{change:?}"
    );
    assert!(host.tool("read-file").unwrap().requests().is_empty());
    let policy = "permissions:\n  storage:\n    allow:\n      - uri: \"fs://.\"\n        access: [\"read\"]\n";
    toolhost_tests::put_atomically(&sb.plugins.join("plain.policy.yaml"), policy.as_bytes());
    let change = next(&changes, "writing plain.policy.yaml");
    assert!(change.replaced.contains(&"read-file".to_string()), "{change:?}");
    let requests = host.tool("read-file").unwrap().requests().clone();
    assert_eq!(requests.workspace, Some(toolhost::grants::DirAccess::ReadOnly));
    std::fs::remove_file(sb.plugins.join("plain.wasm")).unwrap();
    let change = next(&changes, "removing plain.wasm");
    assert!(
        change.removed.contains(&"greet".to_string()) && change.removed.contains(&"midpoint".to_string()),
        "{change:?}"
    );
}

/// A WASI command's tool takes the name its manifest gives as the manifest
/// is written, and its file's name again when the manifest goes.
#[test]
fn a_commands_tool_is_renamed_as_its_manifest_is_written() {
    let sb = Sandbox::new();
    let host = host(&sb, true);
    let changes = changes(&host);
    put(&sb, "tally.wasm", &std::fs::read(toolhost_tests::COMMAND).unwrap());
    let change = next(&changes, "adding tally.wasm");
    assert_eq!(change.added, ["tally"], "{change:?}");
    let manifest = "name: word-count\ndescription: Counts words.\n";
    toolhost_tests::put_atomically(&sb.plugins.join("tally.tool.yaml"), manifest.as_bytes());
    let change = next(&changes, "writing tally.tool.yaml");
    assert_eq!(
        (change.added.as_slice(), change.removed.as_slice()),
        (&["word-count".to_string()][..], &["tally".to_string()][..]),
        "{change:?}"
    );
    assert_eq!(host.tool("word-count").unwrap().spec().description, "Counts words.");
    std::fs::remove_file(sb.plugins.join("tally.tool.yaml")).unwrap();
    let change = next(&changes, "removing tally.tool.yaml");
    assert_eq!(change.added, ["tally"], "{change:?}");
}
