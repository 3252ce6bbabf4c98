//! Components that use the component-model async ABI (futures, streams,
//! subtasks, `yield`, its built-ins inside the contract's synchronous
//! exports) load and run beside synchronous ones, and every state of the
//! ABI a guest can get stuck in ends: at once with a clear error where
//! nothing could ever complete it, at the deadline, at an interrupt or at
//! the memory limit where it keeps running. The host goes on serving.

use crate::support::*;
use serde_json::{Value, json};
use std::io::Write;
use std::time::{Duration, Instant};
use toolhost_tests::ASYNC_ADVERSARY;

/// Bound on a stopped call beyond its limit (process start and a loaded CI
/// machine included); a guest that ignored its limit would never end.
const SLACK: Duration = Duration::from_secs(8);

fn act(action: &str) -> Value {
    json!({"action": action, "n": 5000})
}

fn tool_use(id: &str, action: &str) -> Value {
    tool_use_line(id, "AsyncAdversary", act(action))
}

#[test]
fn an_async_abi_component_answers_over_call_run_and_serve() {
    let sb = Sandbox::new();
    sb.install(ASYNC_ADVERSARY);
    let check = toolhost(&sb, &["check", ASYNC_ADVERSARY]);
    assert_eq!(check.code, 0, "{check:?}");

    assert_eq!(call(&sb, "AsyncAdversary", &act("ok"), &[]).assert_ok(), "3 steps done");

    let out = run_stream(&sb, &[], &[tool_use("a", "ok"), tool_use("b", "ok")]);
    let results: Vec<&Value> = out.iter().filter(|v| v["type"] == "tool_result").collect();
    assert_eq!(results.len(), 2, "{out:?}");
    for r in results {
        assert_eq!(r["is_error"], json!(false), "{r}");
        assert_eq!(content_text(r), "3 steps done");
    }
    // Its progress reports, made between yields, reach the stream.
    assert!(out.iter().any(|v| v["type"] == "progress" && v.to_string().contains("step 2")), "{out:?}");

    with_served(&sb, |client, progress| async move {
        let r = client.call_tool(mcp_call("AsyncAdversary", act("ok"))).await.unwrap();
        assert_eq!(r.is_error, Some(false), "{r:?}");
        assert_eq!(mcp_text(&r), "3 steps done");
        let _ = progress;
        client
    });
}

/// What can never complete ends at once, with what the guest did; what
/// runs on is stopped by its limits; after each, the next call is served.
#[test]
fn every_async_state_a_guest_can_get_stuck_in_ends_and_the_host_serves_on() {
    let sb = Sandbox::new();
    sb.install(ASYNC_ADVERSARY);
    let _ = toolhost(&sb, &["tools"]);
    let cases: &[(&str, &str)] = &[
        ("future-never", "waited on a future, stream or task of its own"),
        ("stream-unread", "waited on a future, stream or task of its own"),
        ("stream-unclosed", "waited on a future, stream or task of its own"),
        ("subtasks", "waited on a future, stream or task of its own"),
        ("leave-pending", "waited on a future, stream or task of its own"),
        ("yield-forever", "AsyncAdversary timed out after 1500 ms and was stopped."),
        ("allocate", "AsyncAdversary exceeded its memory limit of 64 MiB and was stopped."),
    ];
    std::thread::scope(|s| {
        let runs: Vec<_> = cases
            .iter()
            .map(|&(action, want)| {
                let sb = &sb;
                s.spawn(move || {
                    let started = Instant::now();
                    let args = ["--timeout-ms", "1500", "--memory-mib", "64"];
                    let run = call(sb, "AsyncAdversary", &act(action), &args);
                    (action, want, run, started.elapsed())
                })
            })
            .collect();
        for r in runs {
            let (action, want, run, took) = r.join().unwrap();
            let text = run.assert_error(want);
            assert!(took < Duration::from_millis(1500) + SLACK, "{action} took {took:?}: {text}");
        }
    });
    // One `run` session: each stuck call is answered, and the calls after
    // it are served.
    let lines: Vec<Value> = ["future-never", "ok", "stream-unread", "ok", "subtasks", "ok"]
        .iter()
        .enumerate()
        .map(|(i, a)| tool_use(&format!("c{i}"), a))
        .collect();
    let out = run_stream(&sb, &["--timeout-ms", "1500"], &lines);
    let results: Vec<&Value> = out.iter().filter(|v| v["type"] == "tool_result").collect();
    assert_eq!(results.len(), lines.len(), "{out:?}");
    for r in results {
        let ok = r["tool_use_id"] == "c1" || r["tool_use_id"] == "c3" || r["tool_use_id"] == "c5";
        assert_eq!(r["is_error"], json!(!ok), "{r}");
    }
}

#[test]
fn an_interrupt_stops_a_guest_yielding_forever() {
    let sb = Sandbox::new();
    sb.install(ASYNC_ADVERSARY);
    let _ = toolhost(&sb, &["tools"]);
    let lines: Vec<Value> = (0..3).map(|i| tool_use(&format!("y{i}"), "yield-forever")).collect();
    interrupted_in_run(&sb, &lines);
}

/// Sends `lines` (calls that never end by themselves) to one `toolhost run`,
/// an interrupt half a second later, and checks that every call is answered
/// with an error soon after.
fn interrupted_in_run(sb: &Sandbox, lines: &[Value]) {
    let started = Instant::now();
    let mut child = spawn_piped(sb, &["run"]);
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    writeln!(stdin, "{}", json!({"type": "interrupt"})).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let results: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), lines.len(), "{text}");
    for r in &results {
        assert_eq!(r["is_error"], json!(true), "{r}");
    }
    assert!(started.elapsed() < Duration::from_millis(500) + SLACK, "took {:?}", started.elapsed());
}

// A tool whose exports are async functions (the `async-tool` interface, as
// wit-bindgen writes them by default) and which uses WASI 0.3.

mod async_exports {
    use super::*;
    use toolhost_tests::ASYNC_TOOL;

    fn async_use(id: &str, input: Value) -> Value {
        json!({"type": "tool_use", "id": id, "name": "AsyncTool", "input": input})
    }

    #[test]
    fn async_exports_on_wasi_03_answer_over_call_run_and_serve() {
        let sb = Sandbox::new();
        sb.install(ASYNC_TOOL);
        let check = toolhost(&sb, &["check", ASYNC_TOOL]);
        assert_eq!(check.code, 0, "{check:?}");
        assert!(check.stdout.contains("contract:      1.6.0"), "{}", check.stdout);

        let done = format!("3 steps done in {}", p(&sb.workspace));
        assert_eq!(call(&sb, "AsyncTool", &json!({"action": "ok"}), &[]).assert_ok(), done);
        // Its async `validate-input` and `check-permissions` are asked too.
        call(&sb, "AsyncTool", &json!({"action": "invalid"}), &[]).assert_error("asked to be invalid");
        call(&sb, "AsyncTool", &json!({"action": "denied"}), &[]).assert_error("asked to be denied");

        let lines = [async_use("a", json!({"action": "ok"})), async_use("b", json!({"action": "subtasks", "n": 2000}))];
        let out = run_stream(&sb, &[], &lines);
        let results: Vec<&Value> = out.iter().filter(|v| v["type"] == "tool_result").collect();
        assert_eq!(results.len(), 2, "{out:?}");
        for r in &results {
            assert_eq!(r["is_error"], json!(false), "{r}");
        }
        let text = |id: &str| results.iter().find(|r| r["tool_use_id"] == id).map(|r| content_text(r)).unwrap();
        assert_eq!(text("a"), done);
        assert_eq!(text("b"), "2000 waits done");
        // Progress reported between waits on the host reaches the stream.
        assert!(out.iter().any(|v| v["type"] == "progress" && v.to_string().contains("step 2")), "{out:?}");

        let want = done.clone();
        with_served(&sb, |client, progress| async move {
            let r = client.call_tool(mcp_call("AsyncTool", json!({"action": "ok"}))).await.unwrap();
            assert_eq!(r.is_error, Some(false), "{r:?}");
            assert_eq!(mcp_text(&r), want);
            let _ = progress;
            client
        });
    }

    /// WASI 0.3's files, sockets and environment give what the 0.2 forms
    /// would: what the tool requested and was granted, nothing else.
    #[test]
    fn wasi_03_reaches_only_what_was_granted() {
        let sb = Sandbox::new();
        let requests = json!({
            "directories": [{"path": "data", "access": "read-only"}, {"path": "out", "access": "read-write"}],
            "hosts": ["*"],
            "env": ["GREETING", "NOT_GRANTED"],
        });
        let stamped = sb.plugins.join("async-tool.wasm");
        let r = toolhost(&sb, &["stamp", ASYNC_TOOL, &requests.to_string(), "--out", &p(&stamped)]);
        assert_eq!(r.code, 0, "{r:?}");
        let notes = sb.write("data/notes.txt", "granted data");
        let private = sb.write("other/private.txt", "not granted");
        std::fs::create_dir_all(sb.ws("out")).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let address = format!("127.0.0.1:{port}");

        let act = |input: Value, settings: Option<&str>| {
            let mut args = vec!["--allow", "AsyncTool"];
            args.extend(settings.iter().flat_map(|s| ["--settings", *s]));
            let input = input.to_string();
            let mut cmd_args = vec!["call", "AsyncTool", input.as_str(), "--json"];
            cmd_args.extend(args);
            run_with(&sb, &cmd_args, |cmd| {
                cmd.env("GREETING", "hello").env("NOT_GRANTED", "a secret");
            })
        };
        let read = |path: &std::path::Path| json!({"action": "read", "path": p(path)});
        let write = |path: &std::path::Path| json!({"action": "write", "path": p(path), "text": "written"});
        let connect = json!({"action": "connect", "path": address});

        // Nothing granted: nothing reachable.
        assert!(act(read(&notes), None).is_error());
        act(connect.clone(), None).assert_error("AccessDenied");
        let env = act(json!({"action": "env"}), None);
        assert_eq!(env.assert_ok(), "", "{env:?}");

        let grants = json!({"toolGrants": {"AsyncTool": {
            "directories": [{"path": "data", "access": "read-only"}, {"path": "out", "access": "read-write"}],
            "hosts": [address],
            "env": ["GREETING"],
        }}})
        .to_string();
        let g = Some(grants.as_str());
        assert_eq!(act(read(&notes), g).assert_ok(), "granted data");
        assert!(act(read(&private), g).is_error(), "a directory not granted");
        assert!(act(read(&sb.ws("data/../other/private.txt")), g).is_error(), "no escape by `..`");
        assert!(act(write(&sb.ws("data/new.txt")), g).is_error(), "read-only");
        assert!(!sb.ws("data/new.txt").exists());
        assert_eq!(act(write(&sb.ws("out/new.txt")), g).assert_ok(), "written");
        assert_eq!(std::fs::read_to_string(sb.ws("out/new.txt")).unwrap(), "written");
        assert_eq!(act(json!({"action": "env"}), g).assert_ok(), "GREETING");
        assert_eq!(act(connect, g).assert_ok(), "connected");
        // Another port of the same address is not granted.
        let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let elsewhere =
            json!({"action": "connect", "path": format!("127.0.0.1:{}", other.local_addr().unwrap().port())});
        act(elsewhere, g).assert_error("AccessDenied");
    }

    /// wasi:http 0.3's client sends through the same checks as 0.2's: only to
    /// a granted host, and a local address only when granted by address.
    #[test]
    fn wasi_http_03_sends_only_where_granted() {
        use std::io::{Read as _, Write as _};
        let sb = Sandbox::new();
        let stamped = sb.plugins.join("async-tool.wasm");
        let r = toolhost(&sb, &["stamp", ASYNC_TOOL, r#"{"hosts": ["*"]}"#, "--out", &p(&stamped)]);
        assert_eq!(r.code, 0, "{r:?}");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = format!("127.0.0.1:{}", listener.local_addr().unwrap().port());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut stream = stream;
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
            }
        });
        let fetch = |url: &str, settings: Option<&str>| {
            let input = json!({"action": "fetch", "path": url}).to_string();
            let mut args = vec!["call", "AsyncTool", input.as_str(), "--json", "--allow", "AsyncTool"];
            args.extend(settings.iter().flat_map(|s| ["--settings", *s]));
            toolhost(&sb, &args)
        };
        let url = format!("http://{address}/page");
        fetch(&url, None).assert_error("is not a host this tool was granted");
        let grants = json!({"toolGrants": {"AsyncTool": {"hosts": [address]}}}).to_string();
        assert_eq!(fetch(&url, Some(&grants)).assert_ok(), "status 200, 5 bytes");
        // A public name granted by pattern does not open a local address.
        let wide = json!({"toolGrants": {"AsyncTool": {"hosts": ["*"]}}}).to_string();
        fetch(&url, Some(&wide))
            .assert_error("a loopback address; such addresses are reached only when granted by address");
    }

    /// Waiting on the host (a WASI 0.3 sleep), on a future of its own, many
    /// subtasks, spinning, allocating, flooding stdout: each ends at the
    /// call's limits, and the host serves the next call.
    #[test]
    fn every_wait_of_an_async_export_ends_at_the_calls_limits() {
        let sb = Sandbox::new();
        sb.install(ASYNC_TOOL);
        let _ = toolhost(&sb, &["tools"]);
        let cases: &[(&str, u64, Option<&str>)] = &[
            ("sleep-forever", 0, Some("AsyncTool timed out after 1500 ms and was stopped.")),
            ("future-never", 0, Some("every task it started was waiting, and none could go on")),
            ("spin", 0, Some("AsyncTool timed out after 1500 ms and was stopped.")),
            ("allocate", 0, Some("AsyncTool exceeded its memory limit of 64 MiB and was stopped.")),
            ("handles", 0, Some("held more futures, streams, resources and tasks at once than a call may")),
            ("subtasks", 5000, None),
            ("stdout-flood", 64 << 20, None),
        ];
        std::thread::scope(|s| {
            let runs: Vec<_> = cases
                .iter()
                .map(|&(action, n, want)| {
                    let sb = &sb;
                    s.spawn(move || {
                        let started = Instant::now();
                        let args = ["--timeout-ms", "1500", "--memory-mib", "64"];
                        let run = call(sb, "AsyncTool", &json!({"action": action, "n": n}), &args);
                        (action, want, run, started.elapsed())
                    })
                })
                .collect();
            for r in runs {
                let (action, want, run, took) = r.join().unwrap();
                let text = match want {
                    Some(want) => run.assert_error(want),
                    None => run.assert_ok(),
                };
                assert!(took < Duration::from_millis(1500) + SLACK, "{action} took {took:?}: {text}");
                if action == "stdout-flood" {
                    // Its output is kept up to the cap and the rest dropped:
                    // every write succeeds, the host holds 64 KiB of it.
                    assert_eq!(text, format!("wrote {} bytes: Ok(())", 64 << 20));
                }
            }
        });
        let lines: Vec<Value> = ["sleep-forever", "ok", "future-never", "ok"]
            .iter()
            .enumerate()
            .map(|(i, a)| async_use(&format!("c{i}"), json!({"action": a})))
            .collect();
        let out = run_stream(&sb, &["--timeout-ms", "1500"], &lines);
        let results: Vec<&Value> = out.iter().filter(|v| v["type"] == "tool_result").collect();
        assert_eq!(results.len(), lines.len(), "{out:?}");
        for r in results {
            let ok = r["tool_use_id"] == "c1" || r["tool_use_id"] == "c3";
            assert_eq!(r["is_error"], json!(!ok), "{r}");
        }
    }

    /// An interrupt reaches a guest waiting on the host, where no wasm runs
    /// for the epoch to stop.
    #[test]
    fn an_interrupt_stops_async_exports_waiting_on_the_host() {
        let sb = Sandbox::new();
        sb.install(ASYNC_TOOL);
        let _ = toolhost(&sb, &["tools"]);
        let lines: Vec<Value> =
            (0..3).map(|i| async_use(&format!("w{i}"), json!({"action": "sleep-forever"}))).collect();
        interrupted_in_run(&sb, &lines);
    }
}

// A tool written with the SDK's `AsyncTool` (async Rust functions behind
// `export_async_tool!`), waiting on WASI 0.3's clock.

mod sdk_async {
    use super::*;
    use toolhost_tests::SDK_ASYNC;

    #[test]
    fn the_sdks_async_tool_answers_and_its_waits_end_at_the_limits() {
        let sb = Sandbox::new();
        sb.install(SDK_ASYNC);
        let check = toolhost(&sb, &["check", SDK_ASYNC]);
        assert_eq!(check.code, 0, "{check:?}");
        assert!(check.stdout.contains("contract:      1.6.0"), "{}", check.stdout);

        assert_eq!(call(&sb, "SdkAsync", &json!({"ms": 20}), &[]).assert_ok(), "waited 20 ms");
        // Its async validate-input is awaited like the call.
        call(&sb, "SdkAsync", &json!({"ms": 70000}), &[]).assert_error("70000 ms is longer than a minute");
        // A wait nothing ends ends at the deadline.
        let started = Instant::now();
        call(&sb, "SdkAsync", &json!({"ms": 1, "forever": true}), &["--timeout-ms", "800"])
            .assert_error("SdkAsync timed out after 800 ms and was stopped.");
        assert!(started.elapsed() < Duration::from_millis(800) + SLACK);

        // Two calls in one stream, progress streamed between their waits.
        let lines: Vec<Value> = ["a", "b"]
            .iter()
            .map(|id| json!({"type": "tool_use", "id": id, "name": "SdkAsync", "input": {"ms": 300}}))
            .collect();
        let out = run_stream(&sb, &[], &lines);
        let results: Vec<&Value> = out.iter().filter(|v| v["type"] == "tool_result").collect();
        assert_eq!(results.len(), 2, "{out:?}");
        for r in &results {
            assert_eq!(content_text(r), "waited 300 ms", "{r}");
        }
        assert!(out.iter().any(|v| v["type"] == "progress" && v.to_string().contains("step 2")), "{out:?}");
    }
}
