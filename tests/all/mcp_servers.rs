//! MCP servers' tools in the pool: real servers (one the tests write with the
//! official Python SDK, `tests/mcp/server.py`, and
//! `@modelcontextprotocol/server-filesystem` from npm) configured as Claude
//! Code configures them, listed as `mcp__NAME__TOOL` and called through
//! `call`, `run` and `serve` under the host's rules, limits and confinement.

use crate::support::{Sandbox, call, content_text, p, run_stream, toolhost};
use serde_json::{Value, json};
use std::path::PathBuf;
use toolhost_tests::{pins, toolchain};

/// The Python of a virtual environment with the SDK's 1.x line (the line
/// most servers are written with).
fn python() -> PathBuf {
    toolchain::installed(&pins::MCP_PYTHON_1).join("bin").join("python")
}

/// The probe server (`tests/mcp/server.py`) as `mcpServers` configures it.
pub(crate) fn probe_server() -> Value {
    let script = toolhost_tests::repo_root().join("tests").join("mcp").join("server.py");
    json!({"command": p(&python()), "args": [p(&script)]})
}

/// `--settings` JSON configuring `servers`.
fn servers(servers: Value) -> String {
    json!({"mcpServers": servers}).to_string()
}

/// Whether the result of `id` among `run`'s output lines is an error, and
/// its text.
fn result_of(out: &[Value], id: &str) -> (bool, String) {
    let r = out
        .iter()
        .find(|v| v["type"] == "tool_result" && v["tool_use_id"] == id)
        .unwrap_or_else(|| panic!("{id}: {out:?}"));
    (r["is_error"].as_bool().unwrap(), content_text(r))
}

fn tool_names(sb: &Sandbox, args: &[&str]) -> Vec<String> {
    let mut all = args.to_vec();
    all.extend(["tools", "--json"]);
    let out = toolhost(sb, &all);
    assert_eq!(out.code, 0, "{out:?}");
    let tools: Value = serde_json::from_str(&out.stdout).expect("JSON");
    tools.as_array().expect("a list").iter().filter_map(|t| t["name"].as_str().map(String::from)).collect()
}

#[test]
fn a_workspace_mcp_json_counts_once_trusted_and_its_tools_go_through_the_rules() {
    let sb = Sandbox::new();
    std::fs::write(sb.workspace.join(".mcp.json"), servers(json!({"probe": probe_server()}))).unwrap();
    let untrusted = toolhost(&sb, &["tools", "--json"]);
    assert!(untrusted.stderr.contains(".mcp.json is not trusted"), "{untrusted:?}");
    assert!(!untrusted.stdout.contains("mcp__probe"), "{untrusted:?}");
    let trusted = toolhost(&sb, &["trust"]);
    assert!(trusted.stdout.contains("mcpServers probe:"), "{trusted:?}");
    let names = tool_names(&sb, &[]);
    for tool in ["mcp__probe__echo", "mcp__probe__slow", "mcp__probe__crash"] {
        assert!(names.iter().any(|n| n == tool), "{tool} in {names:?}");
    }
    // Not read-only as far as the host knows: no prompt here, so refused,
    // naming the rule that would allow it.
    let refused = call(&sb, "mcp__probe__echo", &json!({"text": "hi"}), &[]);
    let why = refused.assert_error("Permission to use mcp__probe__echo was denied");
    assert!(why.contains("mcp__probe__echo"), "{why}");
    // A server rule covers its tools.
    let allowed = call(&sb, "mcp__probe__echo", &json!({"text": "hi"}), &["--allow", "mcp__probe"]);
    assert_eq!(allowed.assert_ok(), "hi");
    let denied = call(&sb, "mcp__probe__echo", &json!({"text": "hi"}), &["--deny", "mcp__probe__*"]);
    denied.assert_error("No such tool available: mcp__probe__echo");
    // The schema is checked by the host before the server sees the call.
    let bad = call(&sb, "mcp__probe__echo", &json!({"text": 3}), &["--allow", "mcp__probe"]);
    bad.assert_error("InputValidationError");
}

#[test]
fn servers_that_crash_flood_or_hang_are_cut_off_and_started_again() {
    let sb = Sandbox::new();
    let settings = servers(json!({"probe": probe_server()}));
    let use_ = |id: &str, name: &str, input: Value| json!({"type": "tool_use", "id": id, "name": format!("mcp__probe__{name}"), "input": input});
    let outside = sb.root.join("outside.txt");
    let lines = [
        use_("crash", "crash", json!({})),
        use_("after-crash", "echo", json!({"text": "back"})),
        use_("flood", "flood", json!({})),
        use_("after-flood", "echo", json!({"text": "back again"})),
        use_("babble", "babble", json!({})),
        use_("after-babble", "echo", json!({"text": "once more"})),
        use_("garble", "babble", json!({"bytes_hex": "7b2261223a22fffe227d"})),
        use_("after-garble", "echo", json!({"text": "still here"})),
        use_("hang", "hang", json!({})),
        use_("after-hang", "echo", json!({"text": "and again"})),
        use_("progress", "slow", json!({"steps": 3})),
        use_("inside", "write", json!({"path": p(&sb.workspace.join("in.txt"))})),
        use_("outside", "write", json!({"path": p(&outside)})),
        use_("unknown", "nope", json!({})),
    ];
    let out = run_stream(&sb, &["--settings", &settings, "--allow", "mcp__probe", "--timeout-ms", "3000"], &lines);
    let result = |id: &str| result_of(&out, id);
    let (failed, crash) = result("crash");
    assert!(failed && crash.contains("closed its connection") && crash.contains("about to exit"), "{crash}");
    assert_eq!(result("after-crash"), (false, "back".into()));
    let (failed, flood) = result("flood");
    assert!(failed && flood.contains("over 16 MiB"), "{flood}");
    assert_eq!(result("after-flood"), (false, "back again".into()));
    // A line that is not a message ends the connection at once (not at the
    // call's deadline, which says "did not answer"), saying what it was.
    let (failed, babble) = result("babble");
    assert!(
        failed && babble.contains("not a JSON-RPC message (it is not a JSON object") && babble.contains("Server log"),
        "{babble}"
    );
    assert_eq!(result("after-babble"), (false, "once more".into()));
    let (failed, garble) = result("garble");
    assert!(failed && garble.contains("not a JSON-RPC message (it is not UTF-8"), "{garble}");
    assert_eq!(result("after-garble"), (false, "still here".into()));
    let (failed, hang) = result("hang");
    assert!(failed && hang.contains("did not answer within 3000 ms"), "{hang}");
    assert_eq!(result("after-hang"), (false, "and again".into()));
    assert_eq!(result("progress"), (false, "3 steps".into()));
    let steps: Vec<&str> = out
        .iter()
        .filter(|v| v["type"] == "progress" && v["tool_use_id"] == "progress")
        .filter_map(|v| v["message"].as_str())
        .collect();
    assert_eq!(steps, ["step 1", "step 2", "step 3"], "{out:?}");
    assert!(!result("inside").0 && sb.workspace.join("in.txt").exists());
    let (failed, refused) = result("outside");
    assert!(failed && !outside.exists(), "the server wrote outside the working directories: {refused}");
    let (failed, unknown) = result("unknown");
    assert!(failed && unknown.contains("No such tool available"), "{unknown}");
}

#[test]
fn a_stdio_server_has_no_network_unless_granted() {
    let sb = Sandbox::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = json!({"host": "127.0.0.1", "port": port});
    let plain = servers(json!({"probe": probe_server()}));
    let r = call(&sb, "mcp__probe__connect", &connect, &["--settings", &plain, "--allow", "mcp__probe"]);
    assert!(r.is_error(), "{r:?}");
    let granted =
        json!({"mcpServers": {"probe": probe_server()}, "toolGrants": {"mcp__probe": {"hosts": ["127.0.0.1"]}}});
    let r = call(&sb, "mcp__probe__connect", &connect, &["--settings", &granted.to_string(), "--allow", "mcp__probe"]);
    assert_eq!(r.assert_ok(), "connected");
}

#[test]
fn served_tools_follow_the_servers_list_changes() {
    let sb = Sandbox::new();
    let settings = servers(json!({"probe": probe_server()}));
    crate::support::with_served_args(
        &sb,
        &["--settings", &settings, "--allow", "mcp__probe"],
        |client, progress| async move {
            let tools = client.list_all_tools().await.expect("tools/list");
            let echo = tools.iter().find(|t| t.name == "mcp__probe__echo").expect("echo listed");
            assert_eq!(echo.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
            assert!(!tools.iter().any(|t| t.name == "mcp__probe__added"));
            let r = client
                .call_tool(crate::support::mcp_call("mcp__probe__echo", json!({"text": "over serve"})))
                .await
                .unwrap();
            assert_eq!(crate::support::mcp_text(&r), "over serve");
            let r = client.call_tool(crate::support::mcp_call("mcp__probe__grow", json!({}))).await.unwrap();
            assert_eq!(crate::support::mcp_text(&r), "grown");
            let mut listed = false;
            for _ in 0..100 {
                let tools = client.list_all_tools().await.expect("tools/list");
                if tools.iter().any(|t| t.name == "mcp__probe__added") {
                    listed = true;
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            assert!(listed, "the added tool reached the client");
            let r = client.call_tool(crate::support::mcp_call("mcp__probe__added", json!({}))).await.unwrap();
            assert_eq!(crate::support::mcp_text(&r), "I was added");
            drop(progress);
            client
        },
    );
}

#[test]
fn server_filesystem_from_npm_reads_and_writes_inside_the_workspace() {
    let sb = Sandbox::new();
    let modules = toolchain::installed(&pins::MCP_SERVER_FILESYSTEM);
    let index = modules.join("@modelcontextprotocol/server-filesystem/dist/index.js");
    std::fs::write(sb.workspace.join("notes.txt"), "first line\n").unwrap();
    let settings = servers(json!({"fs": {"command": "node", "args": [p(&index), p(&sb.workspace)]}}));
    let args = ["--settings", settings.as_str(), "--allow", "mcp__fs"];
    let names = tool_names(&sb, &args);
    assert!(names.iter().any(|n| n == "mcp__fs__read_text_file"), "{names:?}");
    let read = call(&sb, "mcp__fs__read_text_file", &json!({"path": p(&sb.workspace.join("notes.txt"))}), &args);
    assert_eq!(read.assert_ok(), "first line\n");
    let write = json!({"path": p(&sb.workspace.join("new.txt")), "content": "written"});
    call(&sb, "mcp__fs__write_file", &write, &args).assert_ok();
    assert_eq!(std::fs::read_to_string(sb.workspace.join("new.txt")).unwrap(), "written");
    // Over `run` and `serve` too.
    let line =
        json!({"type": "tool_use", "id": "r", "name": "mcp__fs__list_directory", "input": {"path": p(&sb.workspace)}});
    let out = run_stream(&sb, &args, &[line]);
    let listed = out.iter().find(|v| v["type"] == "tool_result").map(content_text).unwrap_or_default();
    assert!(listed.contains("notes.txt") && listed.contains("new.txt"), "{out:?}");
    let path = p(&sb.workspace.join("notes.txt"));
    crate::support::with_served_args(&sb, &args, |client, _| async move {
        let r =
            client.call_tool(crate::support::mcp_call("mcp__fs__read_text_file", json!({"path": path}))).await.unwrap();
        assert_eq!(crate::support::mcp_text(&r), "first line\n");
        client
    });
}

#[test]
fn mcp_tools_meet_hooks_the_audit_log_and_tool_search() {
    let sb = Sandbox::new();
    let audit = sb.root.join("audit.jsonl");
    let hook =
        json!({"type": "command", "command": "grep -q blocked && { echo 'no blocked echoes' >&2; exit 2; }; exit 0"});
    let settings = json!({
        "mcpServers": {"probe": probe_server()},
        "hooks": {"PreToolUse": [{"matcher": "mcp__probe__.*", "hooks": [hook]}]},
        "auditLog": p(&audit),
        "deferToolsAfter": 0,
    })
    .to_string();
    let args = ["--settings", settings.as_str(), "--allow", "mcp__probe"];
    let tools = toolhost(&sb, &["--settings", &settings, "tools", "--json"]);
    let listed: Value = serde_json::from_str(&tools.stdout).unwrap();
    let echo = listed.as_array().unwrap().iter().find(|t| t["name"] == "mcp__probe__echo").expect("listed");
    assert_eq!(echo["deferred"], true, "offered by name only past deferToolsAfter: {echo}");
    let use_ = |id: &str, name: &str, input: Value| json!({"type": "tool_use", "id": id, "name": name, "input": input});
    let lines = [
        use_("early", "mcp__probe__echo", json!({"text": "too early"})),
        use_("load", "ToolSearch", json!({"query": "select:mcp__probe__echo"})),
        use_("fine", "mcp__probe__echo", json!({"text": "fine"})),
        use_("blocked", "mcp__probe__echo", json!({"text": "blocked"})),
    ];
    let out = run_stream(&sb, &args, &lines);
    let result = |id: &str| result_of(&out, id);
    let (failed, early) = result("early");
    assert!(failed && early.contains("select:mcp__probe__echo"), "{early}");
    assert_eq!(result("fine"), (false, "fine".into()));
    let (failed, blocked) = result("blocked");
    assert!(failed && blocked.contains("no blocked echoes"), "{blocked}");
    let log = std::fs::read_to_string(&audit).expect("the audit log");
    let lines: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let decided = |id: &str| lines.iter().find(|l| l["tool_use_id"] == id && l.get("decision").is_some()).cloned();
    assert_eq!(decided("fine").expect("fine audited")["tool"], "mcp__probe__echo", "{log}");
    assert!(decided("blocked").is_some_and(|l| l.to_string().contains("deny")), "{log}");
}

#[test]
fn an_http_server_is_called_with_its_configured_headers() {
    let sb = Sandbox::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let script = toolhost_tests::repo_root().join("tests").join("mcp").join("server.py");
    let mut server = std::process::Command::new(python())
        .arg(&script)
        .args(["--http", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the Python server over HTTP");
    let ready = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let url = format!("http://127.0.0.1:{port}/mcp");
    let entry = json!({"type": "http", "url": url, "headers": {"X-Probe": "${PROBE_VALUE:-from default}"}});
    let settings = servers(json!({"remote": entry}));
    let args = ["--settings", settings.as_str(), "--allow", "mcp__remote"];
    let echoed = ready.then(|| call(&sb, "mcp__remote__echo", &json!({"text": "over http"}), &args));
    let header = ready.then(|| call(&sb, "mcp__remote__header", &json!({"name": "x-probe"}), &args));
    let _ = server.kill();
    let _ = server.wait();
    assert!(ready, "the Python server did not listen on {port}");
    assert_eq!(echoed.unwrap().assert_ok(), "over http");
    assert_eq!(header.unwrap().assert_ok(), "from default");
}

#[test]
fn a_stdio_server_gets_the_environment_bash_gets_plus_what_is_granted_and_its_secrets_masked() {
    let sb = Sandbox::new();
    let set = {
        use std::io::Write as _;
        let mut child = crate::support::toolhost_command(&sb)
            .args(["secret", "set", "mcp__probe", "PROBE_TOKEN"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(b"tok-4f9a1c77e2\n").unwrap();
        child.wait_with_output().unwrap()
    };
    assert!(set.status.success(), "{set:?}");
    let env_of = |grants: Value, name: &str| {
        let settings =
            json!({"mcpServers": {"probe": probe_server()}, "toolGrants": {"mcp__probe": grants}}).to_string();
        let input = json!({"name": name}).to_string();
        let out = crate::support::toolhost_command(&sb)
            .env("PROBE_HOST_VAR", "from the host")
            .args(["--settings", &settings, "--allow", "mcp__probe", "call", "mcp__probe__env", &input, "--json"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(!stdout.contains("tok-4f9a1c77e2"), "the secret's value came back: {stdout}");
        let result: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
        content_text(&result)
    };
    assert_eq!(env_of(json!({}), "PROBE_HOST_VAR"), "(unset)", "the host's variables are not the server's");
    assert_ne!(env_of(json!({}), "PATH"), "(unset)", "PATH is, as for Bash");
    assert_eq!(env_of(json!({"env": ["PROBE_HOST_VAR"]}), "PROBE_HOST_VAR"), "from the host");
    assert_eq!(env_of(json!({}), "PROBE_TOKEN"), "(unset)", "stored but not granted");
    assert_eq!(env_of(json!({"secrets": ["PROBE_TOKEN"]}), "PROBE_TOKEN"), "[secret PROBE_TOKEN]");
}

#[test]
fn a_cancelled_call_is_cancelled_on_its_server_too() {
    let sb = Sandbox::new();
    let settings = servers(json!({"probe": probe_server()}));
    let mark = sb.workspace.join("steps.txt");
    let steps = |m: &std::path::Path| std::fs::read_to_string(m).map(|t| t.lines().count()).unwrap_or(0);
    crate::support::with_served_args(
        &sb,
        &["--settings", &settings, "--allow", "mcp__probe"],
        |client, _| async move {
            use std::time::Duration;
            // Dropping rmcp's request sends notifications/cancelled to toolhost,
            // which sends it on to the Python server.
            let long = crate::support::mcp_call("mcp__probe__slow", json!({"steps": 100, "mark": p(&mark)}));
            let gave_up = tokio::time::timeout(Duration::from_millis(800), client.call_tool(long)).await;
            assert!(gave_up.is_err(), "the long call returned: {gave_up:?}");
            tokio::time::sleep(Duration::from_millis(700)).await;
            let after_cancel = steps(&mark);
            tokio::time::sleep(Duration::from_millis(1000)).await;
            let later = steps(&mark);
            assert!(after_cancel > 0 && after_cancel < 100, "the call ran: {after_cancel} steps");
            assert_eq!(later, after_cancel, "the server went on with the cancelled call");
            let r = client
                .call_tool(crate::support::mcp_call("mcp__probe__echo", json!({"text": "still here"})))
                .await
                .unwrap();
            assert_eq!(crate::support::mcp_text(&r), "still here");
            client
        },
    );
}
