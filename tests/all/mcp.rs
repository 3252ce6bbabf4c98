//! `toolhost serve`, driven by real MCP clients: the official Python SDK
//! (the 2.x and the 1.x line, installed into virtual environments under
//! `target/mcp-venv` on first use) over stdio and streamable HTTP, and rmcp's
//! own client.

use crate::support::{Sandbox, raw_http, toolhost_command, wait_running};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use toolhost_tests::pins::{self, Pin};
use toolhost_tests::toolchain;

/// The SDK lines tested: the current one and the one most clients still use.
#[derive(Clone, Copy, Debug)]
enum Line {
    V2,
    V1,
}

impl Line {
    fn pin(self) -> Pin {
        match self {
            Line::V2 => pins::MCP_PYTHON_2,
            Line::V1 => pins::MCP_PYTHON_1,
        }
    }
}

/// The Python of a virtual environment with the SDK line installed (made
/// once per checkout).
fn python(line: Line) -> PathBuf {
    toolchain::installed(&line.pin()).join("bin").join("python")
}

fn client_script() -> PathBuf {
    toolhost_tests::repo_root().join("tests").join("mcp").join("client.py")
}

/// The flags every served toolhost gets here: edits and Bash allowed, curl
/// denied, `rm` asked.
const RULES: &[&str] = &[
    "--allow",
    "Write",
    "--allow",
    "Edit",
    "--allow",
    "Bash",
    "--allow",
    "TaskStop",
    "--deny",
    "Bash(curl:*)",
    "--ask",
    "Bash(rm:*)",
];

fn workspace(sb: &Sandbox) {
    sb.write("a.txt", "hello\n");
    for i in 0..20 {
        sb.write(&format!("many/{i}.txt"), format!("file number {i}\n"));
    }
    sb.write("kept.txt", "x\n");
    sb.write("allowed.txt", "x\n");
}

/// The server command as a stdio client starts it: the program, its
/// arguments, and only the environment the sandbox needs (clients start
/// servers with a minimal environment).
fn stdio_config(sb: &Sandbox) -> serde_json::Value {
    stdio_config_with(sb, RULES)
}

fn stdio_config_with(sb: &Sandbox, rules: &[&str]) -> serde_json::Value {
    let cmd = toolhost_command(sb);
    let mut command: Vec<String> = vec![cmd.get_program().to_string_lossy().into_owned()];
    command.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    command.extend(rules.iter().map(|s| s.to_string()));
    command.push("serve".into());
    let mut env: serde_json::Map<String, serde_json::Value> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_string_lossy().into_owned(), v?.to_string_lossy().into_owned().into())))
        .collect();
    env.insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into());
    serde_json::json!({"command": command, "env": env, "workspace": sb.workspace})
}

/// A `toolhost serve --http 127.0.0.1:0` and its URL; killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(sb: &Sandbox, token: Option<&str>) -> HttpServer {
        HttpServer::start_as(sb, token, None)
    }

    /// One of several instances named `instance.0` sharing state in the
    /// Redis at `instance.1`, with a data directory of its own.
    fn start_as(sb: &Sandbox, token: Option<&str>, instance: Option<(&str, &str)>) -> HttpServer {
        let mut cmd = toolhost_command(sb);
        if let Some((name, state)) = instance {
            cmd.env("TOOLHOST_DATA_DIR", sb.root.join(format!("data-{name}")));
            cmd.args(["--instance", name, "--state", state]);
        }
        // A port alone binds loopback.
        cmd.args(RULES).args(["serve", "--http", "0"]).stdin(Stdio::null()).stderr(Stdio::piped());
        match token {
            Some(t) => cmd.env("TOOLHOST_HTTP_TOKEN", t),
            None => cmd.env_remove("TOOLHOST_HTTP_TOKEN"),
        };
        let mut child = cmd.spawn().expect("start toolhost serve --http");
        let url = toolhost_tests::serving_url(&mut child, "toolhost serve --http");
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        HttpServer { child, url }
    }

    fn config(&self, sb: &Sandbox, token: Option<&str>) -> serde_json::Value {
        serde_json::json!({"url": self.url, "token": token, "workspace": sb.workspace})
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How a 2.x client picks the revision (`client.py`'s `mode`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// What clients do by default: discover, then 2026-07-28 (asserted).
    Auto,
    /// 2026-07-28 with no discovery at all.
    Pinned,
    /// `initialize` at 2025-11-25: a session.
    Legacy,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Pinned => "2026-07-28",
            Mode::Legacy => "legacy",
        }
    }
}

/// Runs a scenario of `client.py` and checks every expected check passed.
fn scenario(sb: &Sandbox, line: Line, config: &serde_json::Value, name: &str, expect: &[&str]) {
    let python = python(line);
    let config_file = sb.root.join(format!("mcp-{name}.json"));
    std::fs::write(&config_file, config.to_string()).expect("write config");
    let out = Command::new(python)
        .arg(client_script())
        .arg(&config_file)
        .arg(name)
        .current_dir(&sb.root)
        .output()
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{line:?} {name} failed:\n{stdout}\n{stderr}");
    for check in expect {
        assert!(
            stdout.lines().any(|l| l.starts_with(&format!("PASS {check}"))),
            "{line:?}: no PASS {check}:\n{stdout}"
        );
    }
}

const MAIN: &[&str] = &[
    "list tools, schemas, annotations",
    "every built-in tool, with good and bad input",
    "unknown tool is an error result",
    "permissions: deny rule, ask without elicitation",
    "20 concurrent calls",
    "progress notifications",
    "cancellation stops the process",
];

const SESSIONLESS: &[&str] = &[
    "server/discover",
    "tools/list: cache fields, order, the handle argument",
    "state handles: shared by handle, isolated between handles, checked",
    "approvals: an unknown requestState is refused",
    "a call carrying traceparent",
];

const REPLAY: &str = "approvals: a requestState answers its own call, once";

/// `config` for a 2.x client in `mode`.
fn in_mode(mut config: serde_json::Value, mode: Mode) -> serde_json::Value {
    config["mode"] = serde_json::json!(mode.name());
    config
}

fn main_over_stdio(line: Line, mode: Mode) {
    let stdio_config = |sb: &Sandbox| in_mode(stdio_config(sb), mode);
    let stdio_config_with = |sb: &Sandbox, rules: &[&str]| in_mode(stdio_config_with(sb, rules), mode);
    let sb = Sandbox::new();
    workspace(&sb);
    scenario(&sb, line, &stdio_config(&sb), "main", MAIN);
    if mode != Mode::Legacy && matches!(line, Line::V2) {
        let sb = Sandbox::new();
        workspace(&sb);
        scenario(&sb, line, &stdio_config(&sb), "sessionless", SESSIONLESS);
        scenario(&sb, line, &stdio_config(&sb), "replay", &[REPLAY]);
    }
    if mode == Mode::Pinned {
        return;
    }
    let sb = Sandbox::new();
    workspace(&sb);
    scenario(&sb, line, &stdio_config(&sb), "elicit", &["elicitation: allow once, deny with a reason"]);
    // No allow rules: `touch` asks, and "allow always" is offered.
    let sb = Sandbox::new();
    scenario(&sb, line, &stdio_config_with(&sb, &[]), "always", &["elicitation: allow always keeps the rule"]);
    // A capability fault: the grant is asked for, kept, and the call retried.
    let sb = Sandbox::new();
    sb.install(toolhost_tests::GRANTEE);
    sb.write("data/notes.txt", "granted data");
    let config = stdio_config_with(&sb, &["--allow", "Grantee"]);
    scenario(&sb, line, &config, "grant", &["elicitation: a capability fault grants and retries"]);
    // Hot loading: a component dropped in while the client is connected.
    let sb = Sandbox::new();
    scenario(&sb, line, &with_plugins(&sb, stdio_config(&sb)), "reload", &[RELOAD]);
}

const RELOAD: &str = "hot reload: list_changed, the new tool, its removal";

/// `config` with what the reload scenario needs: the plugins directory and
/// a component to drop into it.
fn with_plugins(sb: &Sandbox, mut config: serde_json::Value) -> serde_json::Value {
    config["plugins"] = serde_json::json!(sb.plugins);
    config["echo"] = serde_json::json!(toolhost_tests::ECHO);
    config
}

fn main_over_http(line: Line, mode: Mode) {
    let sb = Sandbox::new();
    workspace(&sb);
    let token = "test-token-1234-abcdef";
    let server = HttpServer::start(&sb, Some(token));
    let config = |sb: &Sandbox| in_mode(server.config(sb, Some(token)), mode);
    scenario(&sb, line, &config(&sb), "main", MAIN);
    if mode != Mode::Legacy && matches!(line, Line::V2) {
        scenario(&sb, line, &config(&sb), "sessionless", SESSIONLESS);
        sb.write("kept.txt", "x\n");
        sb.write("allowed.txt", "x\n");
        scenario(&sb, line, &config(&sb), "replay", &[REPLAY]);
    }
    if mode == Mode::Pinned {
        return;
    }
    sb.write("a.txt", "x\n");
    sb.write("b.txt", "x\n");
    scenario(&sb, line, &config(&sb), "two-clients", &["two clients at once, separate sessions"]);
    sb.write("allowed.txt", "x\n");
    sb.write("kept.txt", "x\n");
    scenario(&sb, line, &config(&sb), "elicit", &["elicitation: allow once, deny with a reason"]);
    scenario(&sb, line, &with_plugins(&sb, config(&sb)), "reload", &[RELOAD]);
}

/// The Python SDK through a real haproxy in front of three instances
/// sharing a real Redis: sessions of the older revisions hashed to an
/// instance by their `Mcp-Session-Id` (as the Kubernetes route does), and
/// 2026-07-28 requests sent round, each to the next instance, with the
/// approval asked on one instance answered on another.
#[test]
fn python_sdk_2_through_haproxy_over_three_instances_sharing_redis() {
    use toolhost_tests::haproxy::{Balance, Haproxy};
    let redis = toolhost_tests::redis::RedisServer::start();
    let sb = Sandbox::new();
    workspace(&sb);
    let token = "cluster-token-0123456789";
    let servers: Vec<HttpServer> = ["a", "b", "c"]
        .into_iter()
        .map(|name| HttpServer::start_as(&sb, Some(token), Some((name, &redis.url(0)))))
        .collect();
    let addrs: Vec<String> =
        servers.iter().map(|s| s.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string()).collect();
    let config = |url: String, mode: Mode| {
        in_mode(serde_json::json!({"url": url, "token": token, "workspace": sb.workspace}), mode)
    };
    let hashed = Haproxy::start(&addrs, Balance::SessionHeader);
    scenario(&sb, Line::V2, &config(hashed.url(), Mode::Legacy), "main", MAIN);
    let round = Haproxy::start(&addrs, Balance::RoundRobin);
    sb.write("kept.txt", "x\n");
    sb.write("allowed.txt", "x\n");
    scenario(&sb, Line::V2, &config(round.url(), Mode::Pinned), "replay", &[REPLAY]);
    // The calls were spread: more than one instance ran some.
    let ran: Vec<f64> = servers
        .iter()
        .map(|server| {
            let (_, metrics) = raw_http(&server.url.replace("/mcp", "/metrics"), "GET", &[], "");
            metrics
                .lines()
                .filter(|l| l.starts_with("toolhost_calls_total{"))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum()
        })
        .collect();
    assert!(ran.iter().filter(|&&n| n > 0.0).count() >= 2, "calls per instance: {ran:?}");
}

/// The 2.x line as clients use it: it finds 2026-07-28 and speaks it.
#[test]
fn python_sdk_2_over_stdio() {
    main_over_stdio(Line::V2, Mode::Auto);
}

#[test]
fn python_sdk_2_pinned_to_2026_07_28_over_stdio() {
    main_over_stdio(Line::V2, Mode::Pinned);
}

#[test]
fn python_sdk_2_at_2025_11_25_over_stdio() {
    main_over_stdio(Line::V2, Mode::Legacy);
}

#[test]
fn python_sdk_1_over_stdio() {
    main_over_stdio(Line::V1, Mode::Legacy);
}

#[test]
fn python_sdk_2_over_http() {
    main_over_http(Line::V2, Mode::Auto);
}

#[test]
fn python_sdk_2_pinned_to_2026_07_28_over_http() {
    main_over_http(Line::V2, Mode::Pinned);
}

#[test]
fn python_sdk_2_at_2025_11_25_over_http() {
    main_over_http(Line::V2, Mode::Legacy);
}

#[test]
fn python_sdk_1_over_http() {
    main_over_http(Line::V1, Mode::Legacy);
}

/// Runs `client.mjs` (copied beside the installed SDK, where Node finds it)
/// with `config` and checks every check passed.
fn ts_scenario(sb: &Sandbox, config: &serde_json::Value) {
    let modules = toolchain::installed(&pins::MCP_TS_CLIENT);
    // One copy per call: tests run at once in this process.
    static COPIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let copy = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let script = modules.parent().expect("the prefix").join(format!("client-{}-{copy}.mjs", std::process::id()));
    std::fs::copy(toolhost_tests::repo_root().join("tests").join("mcp").join("client.mjs"), &script)
        .expect("copy client.mjs");
    let config_file = sb.root.join("mcp-ts.json");
    std::fs::write(&config_file, config.to_string()).expect("write config");
    let out = Command::new("node").arg(&script).arg(&config_file).current_dir(&sb.root).output().expect("run node");
    let _ = std::fs::remove_file(&script);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the TypeScript client failed:\n{stdout}\n{stderr}");
    for check in
        ["connected at", "list tools", "Read then Edit", "progress", "asks answered", "cancellation", "hot reload"]
    {
        assert!(stdout.lines().any(|l| l.starts_with(&format!("PASS {check}"))), "no PASS {check}:\n{stdout}");
    }
}

fn ts_sdk(mode: Mode, http: bool) {
    let sb = Sandbox::new();
    workspace(&sb);
    if http {
        let server = HttpServer::start(&sb, Some("ts-token-0123456789"));
        ts_scenario(&sb, &in_mode(with_plugins(&sb, server.config(&sb, Some("ts-token-0123456789"))), mode));
    } else {
        ts_scenario(&sb, &in_mode(with_plugins(&sb, stdio_config(&sb)), mode));
    }
}

#[test]
fn typescript_sdk_pinned_to_2026_07_28_over_stdio() {
    ts_sdk(Mode::Pinned, false);
}

#[test]
fn typescript_sdk_pinned_to_2026_07_28_over_http() {
    ts_sdk(Mode::Pinned, true);
}

#[test]
fn typescript_sdk_auto_over_stdio() {
    ts_sdk(Mode::Auto, false);
}

#[test]
fn typescript_sdk_auto_over_http() {
    ts_sdk(Mode::Auto, true);
}

#[test]
fn typescript_sdk_at_2025_11_25_over_stdio() {
    ts_sdk(Mode::Legacy, false);
}

#[test]
fn typescript_sdk_at_2025_11_25_over_http() {
    ts_sdk(Mode::Legacy, true);
}

/// A 2026-07-28 request's `_meta`, with `extra` keys.
fn meta_2026(extra: serde_json::Value) -> serde_json::Value {
    let mut meta = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    });
    if let (Some(m), serde_json::Value::Object(extra)) = (meta.as_object_mut(), extra) {
        m.extend(extra);
    }
    meta
}

/// The wire of 2026-07-28 over stdio, written by hand: no `initialize`, the
/// first request is a call; results carry `resultType`, the list its cache
/// fields; a request without its `_meta` is refused; the call's span carries
/// the request's `traceparent` (RUST_LOG).
#[test]
fn a_2026_07_28_request_stream_over_stdio() {
    let sb = Sandbox::new();
    sb.write("a.txt", "hello\n");
    let trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let path = sb.ws("a.txt").display().to_string();
    let requests = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "Read", "arguments": {"file_path": path}, "_meta": meta_2026(serde_json::json!({"traceparent": trace}))}}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta_2026(serde_json::json!({}))}}),
        serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}),
    ];
    let mut child = {
        let mut cmd = toolhost_command(&sb);
        cmd.env("RUST_LOG", "toolhost=debug").arg("serve");
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.spawn().expect("start toolhost serve")
    };
    let mut stdin = child.stdin.take().expect("stdin");
    for r in &requests {
        writeln!(stdin, "{r}").expect("write a request");
    }
    drop(stdin);
    let out = child.wait_with_output().expect("serve ends with its input");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let answers: std::collections::HashMap<i64, serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| Some((v["id"].as_i64()?, v)))
        .collect();
    let read = &answers[&1]["result"];
    assert_eq!(read["resultType"], "complete", "{stdout}");
    assert!(read["content"][0]["text"].as_str().unwrap_or_default().contains("hello"), "{stdout}");
    let list = &answers[&2]["result"];
    assert!(list["ttlMs"].as_u64().is_some_and(|t| t > 0) && list["cacheScope"] == "private", "{stdout}");
    let names: Vec<&str> = list["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.is_sorted() && names.contains(&"StartSession"), "{names:?}");
    assert_eq!(answers[&3]["error"]["code"], -32602, "no _meta: {stdout}");
    let traced = stderr.lines().find(|l| l.contains("call finished") && l.contains("gen_ai.tool.name=Read"));
    assert!(traced.is_some_and(|l| l.contains(trace)), "the call's span has no traceparent:\n{stderr}");
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

/// How a client connects to `toolhost serve`'s standard input and output.
#[derive(Clone, Copy, Debug)]
enum Wiring {
    /// Two pipes, as Python's and Rust's process APIs make them.
    Pipes,
    /// One socket pair, as Node's child processes get theirs (Claude Code,
    /// the TypeScript SDK).
    Socket,
}

/// A client that writes requests far faster than calls are answered (here
/// 20,000 at once, read on another thread) is read only as fast as it is
/// answered: every call is answered, and the server does not hold the
/// requests it has not reached (unbounded, it peaked at 350 MB for these).
#[test]
fn a_client_writing_faster_than_it_is_answered_is_read_as_fast_as_it_is_answered() {
    flood(Wiring::Pipes, 20_000);
}

/// The same over a socket pair, which the server reads and writes on its
/// protocol thread without making the socket non-blocking for whoever
/// else holds it: the server's standard input keeps its flags.
#[test]
fn a_client_on_a_socket_pair_is_read_as_fast_as_it_is_answered_and_its_socket_keeps_its_flags() {
    flood(Wiring::Socket, 5_000);
}

fn flood(stdio: Wiring, calls: u64) {
    let sb = Sandbox::new();
    sb.write("a.txt", "hello\n");
    let path = sb.ws("a.txt").display().to_string();
    let mut cmd = toolhost_command(&sb);
    cmd.arg("serve").stderr(Stdio::null());
    // What the client writes to, what it reads from, and its end of a socket.
    let (mut child, mut requests, answers, socket): (Child, Box<dyn Write + Send>, Box<dyn std::io::Read>, _) =
        match stdio {
            Wiring::Pipes => {
                let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("start toolhost serve");
                let (stdin, stdout) = (child.stdin.take().expect("stdin"), child.stdout.take().expect("stdout"));
                (child, Box::new(stdin), Box::new(stdout), None)
            }
            Wiring::Socket => {
                let ours = toolhost_tests::socket_stdio(&mut cmd).expect("a socket pair");
                let child = cmd.spawn().expect("start toolhost serve");
                drop(cmd);
                let (write, read) = (ours.try_clone().expect("clone"), ours.try_clone().expect("clone"));
                (child, Box::new(write), Box::new(read), Some(ours))
            }
        };
    let writer = std::thread::spawn(move || {
        let init = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}}});
        let mut all = format!("{init}\n{}\n", r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        for id in 1..=calls {
            let call = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "Read", "arguments": {"file_path": path}}});
            all.push_str(&format!("{call}\n"));
        }
        requests.write_all(all.as_bytes()).expect("write the requests");
        requests
    });
    let mut answers = std::io::BufReader::new(answers);
    let mut answered = vec![false; calls as usize + 1];
    let mut line = String::new();
    for _ in 0..=calls {
        line.clear();
        assert!(std::io::BufRead::read_line(&mut answers, &mut line).expect("read an answer") > 0, "serve ended early");
        let answer: serde_json::Value = serde_json::from_str(&line).expect("an answer is JSON");
        let id = answer["id"].as_u64().expect("an answer to a request");
        if id > 0 {
            assert_eq!(answer["result"]["isError"], false, "{line}");
            assert!(!std::mem::replace(&mut answered[id as usize], true), "answered twice: {line}");
        }
    }
    assert!(answered[1..].iter().all(|a| *a));
    let proc = |file: &str| std::fs::read_to_string(format!("/proc/{}/{file}", child.id())).expect(file);
    let status = proc("status");
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    // O_NONBLOCK is 0o4000 in fdinfo's octal flags.
    for fd in ["0", "1"] {
        let info = proc(&format!("fdinfo/{fd}"));
        let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).expect("flags");
        let flags = u32::from_str_radix(flags.trim(), 8).expect("octal flags");
        assert_eq!(flags & 0o4000, 0, "the server's fd {fd} was made non-blocking ({stdio:?}):\n{info}");
    }
    drop(writer.join().expect("writer"));
    if let Some(socket) = socket {
        socket.shutdown(std::net::Shutdown::Write).expect("the end of the requests");
    }
    assert!(child.wait().expect("serve ends with its input").success());
    assert!(peak_kib < 128 * 1024, "the server held {peak_kib} KiB at its peak");
}

#[test]
fn http_guards_token_host_and_origin() {
    let sb = Sandbox::new();
    let token = "s3cret-token-0123456789";
    let server = HttpServer::start(&sb, Some(token));
    let json = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    let bearer = format!("Bearer {token}");
    let with = |extra: &[(&'static str, &str)]| -> Vec<(&str, String)> {
        let mut h: Vec<(&str, String)> = json.iter().map(|(k, v)| (*k, v.to_string())).collect();
        h.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
        h
    };
    let send = |headers: Vec<(&str, String)>, url: &str| {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        raw_http(url, "POST", &headers, INITIALIZE)
    };
    // No token, a wrong one: 401.
    let (status, response) = send(with(&[]), &server.url);
    assert_eq!(status, 401, "{response}");
    assert!(response.to_ascii_lowercase().contains("www-authenticate: bearer"), "{response}");
    assert_eq!(send(with(&[("Authorization", "Bearer wrong")]), &server.url).0, 401);
    // The right token: served.
    let (status, response) = send(with(&[("Authorization", &bearer)]), &server.url);
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("\"serverInfo\""), "{response}");
    // DNS rebinding: a foreign Host, a foreign Origin: 403.
    let (status, response) = send(with(&[("Authorization", &bearer), ("Host", "evil.example:80")]), &server.url);
    assert_eq!(status, 403, "{response}");
    let (status, response) = send(with(&[("Authorization", &bearer), ("Origin", "http://evil.example")]), &server.url);
    assert_eq!(status, 403, "{response}");
    // The server's own origin passes.
    let port = server.url.rsplit(':').next().and_then(|p| p.split('/').next()).expect("port");
    let own = format!("http://localhost:{port}");
    assert_eq!(send(with(&[("Authorization", &bearer), ("Origin", &own)]), &server.url).0, 200);
    // Only /mcp.
    let other = server.url.replace("/mcp", "/other");
    assert_eq!(send(with(&[("Authorization", &bearer)]), &other).0, 404);

    // Without a token on loopback: served.
    let open = HttpServer::start(&sb, None);
    assert_eq!(send(with(&[]), &open.url).0, 200);
}

#[test]
fn http_off_loopback_needs_a_token() {
    let sb = Sandbox::new();
    let out = toolhost_command(&sb)
        .env_remove("TOOLHOST_HTTP_TOKEN")
        .args(["serve", "--http", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a loopback address") && stderr.contains("TOOLHOST_HTTP_TOKEN"), "{stderr}");
}

mod rmcp_client {
    //! rmcp's own client against the real binary.
    use super::*;
    use rmcp::ServiceExt as _;
    use rmcp::model::{CallToolRequestParams, NumberOrString};
    use rmcp::transport::TokioChildProcess;
    use std::sync::{Arc, Mutex};

    fn text(result: &rmcp::model::CallToolResult) -> String {
        result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
    }

    fn call(name: &str, args: serde_json::Value) -> CallToolRequestParams {
        let serde_json::Value::Object(args) = args else { panic!("object") };
        CallToolRequestParams::new(name.to_string()).with_arguments(args)
    }

    /// Collects progress notifications.
    #[derive(Clone, Default)]
    struct Client {
        progress: Arc<Mutex<Vec<(NumberOrString, String)>>>,
    }

    impl rmcp::ClientHandler for Client {
        async fn on_progress(
            &self,
            params: rmcp::model::ProgressNotificationParam,
            _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
        ) {
            self.progress.lock().unwrap().push((params.progress_token.0, params.message.unwrap_or_default()));
        }
    }

    #[test]
    fn stdio_list_call_concurrent_progress() {
        let sb = Sandbox::new();
        workspace(&sb);
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async {
            sb.install(toolhost_tests::ADVERSARY);
            let mut cmd = tokio::process::Command::from(toolhost_command(&sb));
            // A PreToolUse hook stopping the agent on Glob.
            let stop = r#"cat >/dev/null; echo '{"continue":false,"stopReason":"enough for today"}'"#;
            let hooks = serde_json::json!({"hooks": {"PreToolUse": [
                {"matcher": "Glob", "hooks": [{"type": "command", "command": stop}]}
            ]}});
            cmd.args(RULES).args(["--allow", "Adversary", "--settings", &hooks.to_string(), "serve"]);
            let handler = Client::default();
            let client = handler.clone().serve(TokioChildProcess::new(cmd).expect("spawn")).await.expect("initialize");
            let info = client.peer_info().expect("server info");
            assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("toolhost"));
            let tools = client.list_all_tools().await.expect("tools/list");
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
            assert!(names.contains(&"Read") && names.contains(&"Bash"), "{names:?}");
            let read = tools.iter().find(|t| t.name == "Read").unwrap();
            assert_eq!(read.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));

            let a = sb.ws("a.txt").display().to_string();
            let r = client.call_tool(call("Read", serde_json::json!({"file_path": a}))).await.expect("call");
            assert_eq!(r.is_error, Some(false));
            assert!(text(&r).contains("hello"), "{}", text(&r));
            let r = client.call_tool(call("Read", serde_json::json!({}))).await.expect("call");
            assert_eq!(r.is_error, Some(true), "{}", text(&r));
            let r =
                client.call_tool(call("Nope", serde_json::json!({}))).await.expect("an error result, not a failure");
            assert_eq!(r.is_error, Some(true));

            // 20 at once.
            let calls = (0..20).map(|i| {
                let path = sb.ws(&format!("many/{i}.txt")).display().to_string();
                let peer = client.peer().clone();
                async move { peer.call_tool(call("Read", serde_json::json!({"file_path": path}))).await }
            });
            let results = futures_join_all(calls).await;
            for (i, r) in results.into_iter().enumerate() {
                let r = r.expect("call");
                assert!(text(&r).contains(&format!("file number {i}")), "{}", text(&r));
            }

            // Progress, under the call's token (rmcp gives every request one).
            let request = call("Bash", serde_json::json!({"command": "echo one; sleep 0.2; echo two"}));
            let r = client.call_tool(request).await.expect("call");
            assert_eq!(r.is_error, Some(false), "{}", text(&r));
            // rmcp's client runs notification handlers as tasks of their
            // own: the last may still be on its way when the result is in.
            for _ in 0..100 {
                if handler.progress.lock().unwrap().len() >= 2 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let progress = handler.progress.lock().unwrap().clone();
            assert!(progress.len() >= 2, "{progress:?}");
            assert!(progress.iter().all(|(t, _)| *t == progress[0].0), "one call, one token: {progress:?}");
            assert!(progress[0].1.contains("one") && progress[1].1.contains("two"), "{progress:?}");

            let r = client.call_tool(call("Glob", serde_json::json!({"pattern": "*"}))).await.expect("call");
            assert_eq!(r.is_error, Some(true), "{}", text(&r));
            let stop = r.meta.as_ref().and_then(|m| m.get("toolhost/stop").cloned());
            assert_eq!(stop, Some(serde_json::json!("enough for today")), "{r:?}");

            // Cancelling a wasm call stops it: dropping rmcp's request sends
            // notifications/cancelled; a call that is not concurrency-safe
            // (as the Adversary's are) then starts at once instead of waiting
            // for the endless loop's 120 s deadline.
            let endless = call("Adversary", serde_json::json!({"action": "loop"}));
            let gave_up = tokio::time::timeout(Duration::from_millis(500), client.call_tool(endless)).await;
            assert!(gave_up.is_err(), "the endless call returned: {gave_up:?}");
            let next = call("Adversary", serde_json::json!({"action": "ok"}));
            let r = tokio::time::timeout(Duration::from_secs(10), client.call_tool(next))
                .await
                .expect("the next call was not held up by the cancelled one")
                .expect("call");
            assert_eq!(r.is_error, Some(false), "{}", text(&r));
            client.cancel().await.expect("close");
        });
    }

    #[test]
    fn requests_are_independent_and_the_protocol_thread_never_waits_on_a_tool() {
        let sb = Sandbox::new();
        workspace(&sb);
        sb.install(toolhost_tests::ADVERSARY);
        sb.install(toolhost_tests::SLEEPER);
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async {
            let mut cmd = tokio::process::Command::from(toolhost_command(&sb));
            cmd.args(RULES).args(["--allow", "Adversary", "--allow", "Sleeper", "serve"]);
            let client = ().serve(TokioChildProcess::new(cmd).expect("spawn")).await.expect("initialize");

            // Two concurrency-safe Bash calls at once; the second fails. Over
            // MCP they are separate requests: the first is not cancelled.
            let slow = client.peer().clone();
            let slow = tokio::spawn(async move {
                slow.call_tool(call("Bash", serde_json::json!({"command": "sleep 2.0417; echo done"}))).await
            });
            // It runs before the second call is sent.
            tokio::task::spawn_blocking(|| wait_running("sleep 2.0417", Duration::from_secs(20))).await.expect("join");
            let failed =
                client.call_tool(call("Bash", serde_json::json!({"command": "ls /missing"}))).await.expect("call");
            assert_eq!(failed.is_error, Some(true), "{}", text(&failed));
            let r = slow.await.expect("join").expect("call");
            assert_eq!(r.is_error, Some(false), "{}", text(&r));
            assert!(text(&r).contains("done"), "{}", text(&r));

            // A call is running (not concurrency-safe), so the next one's
            // concurrency-safety is asked first, and its tool spins there
            // until the 1 s classification limit stops it. Meanwhile the
            // server answers a ping at once.
            let busy = client.peer().clone();
            let busy = tokio::spawn(async move {
                busy.call_tool(call("Sleeper", serde_json::json!({"label": "busy", "ms": 2500}))).await
            });
            tokio::time::sleep(Duration::from_millis(300)).await;
            let spinner = client.peer().clone();
            let started = std::time::Instant::now();
            let spinner = tokio::spawn(async move {
                let r = spinner.call_tool(call("Adversary", serde_json::json!({"action": "loop-classify"}))).await;
                (r, started.elapsed())
            });
            tokio::time::sleep(Duration::from_millis(50)).await;
            let ping = rmcp::model::ClientRequest::PingRequest(rmcp::model::PingRequest {
                method: Default::default(),
                extensions: Default::default(),
            });
            let before = std::time::Instant::now();
            client.send_request(ping).await.expect("ping");
            let ping_took = before.elapsed();
            assert!(ping_took < toolhost::CLASSIFY_TIMEOUT / 2, "the ping waited {ping_took:?} for the classification");
            let r = busy.await.expect("join").expect("call");
            assert_eq!(r.is_error, Some(false), "{}", text(&r));
            let (r, took) = spinner.await.expect("join");
            let r = r.expect("call");
            assert_eq!(r.is_error, Some(false), "counted not concurrency-safe, then run: {}", text(&r));
            assert!(took > ping_took, "the classification ran while the ping was answered");
            client.cancel().await.expect("close");
        });
    }

    #[test]
    fn guests_waiting_in_host_calls_are_cancelled_and_timed_out() {
        let sb = Sandbox::new();
        workspace(&sb);
        sb.install(toolhost_tests::ADVERSARY);
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async {
            let mut cmd = tokio::process::Command::from(toolhost_command(&sb));
            cmd.args(RULES).args(["--allow", "Adversary", "--timeout-ms", "1500", "serve"]);
            let client = ().serve(TokioChildProcess::new(cmd).expect("spawn")).await.expect("initialize");
            let wait = |how: &str, export: &str| {
                call("Adversary", serde_json::json!({"action": "wait", "how": how, "in": export}))
            };

            // Ten calls waiting in the host (a clock, poll), each given up by
            // the client: notifications/cancelled stops each, and the
            // server's workers are free for the next call.
            for round in 0..10 {
                let how = if round % 2 == 0 { "sleep" } else { "poll" };
                let gave_up =
                    tokio::time::timeout(Duration::from_millis(150), client.call_tool(wait(how, "call"))).await;
                assert!(gave_up.is_err(), "a waiting call returned: {gave_up:?}");
            }
            let next = call("Adversary", serde_json::json!({"action": "ok"}));
            let r = tokio::time::timeout(Duration::from_secs(10), client.call_tool(next))
                .await
                .expect("the server was held up by cancelled calls")
                .expect("call");
            assert_eq!(r.is_error, Some(false), "{}", text(&r));
            let usage = r.meta.as_ref().and_then(|m| m.get("toolhost/usage").cloned()).expect("usage in _meta");
            assert_eq!(usage["output_bytes"], serde_json::json!(4), "{usage}");

            // Not cancelled: the deadline stops a guest waiting in
            // validate-input, and the result names the limit.
            let started = std::time::Instant::now();
            let r = client.call_tool(wait("block", "validate")).await.expect("call");
            assert_eq!(r.is_error, Some(true), "{}", text(&r));
            assert!(text(&r).contains("timed out after 1500 ms"), "{}", text(&r));
            assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
            client.cancel().await.expect("close");
        });
    }

    /// Joins futures without another dependency.
    async fn futures_join_all<F>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let mut set = Vec::new();
        for f in futures {
            set.push(tokio::spawn(f));
        }
        let mut out = Vec::new();
        for h in set {
            out.push(h.await.expect("join"));
        }
        out
    }

    #[test]
    fn http_client_with_token() {
        use rmcp::transport::StreamableHttpClientTransport;
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let sb = Sandbox::new();
        workspace(&sb);
        let token = "rmcp-token-0123456789";
        let server = HttpServer::start(&sb, Some(token));
        // reqwest is built with rustls and no provider of its own (the
        // workspace's choice for `toolhost install oci://…`): ring, as the host.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async {
            let config =
                StreamableHttpClientTransportConfig::with_uri(server.url.clone()).auth_header(token.to_string());
            let transport = StreamableHttpClientTransport::from_config(config);
            let client = ().serve(transport).await.expect("initialize");
            let tools = client.list_all_tools().await.expect("tools/list");
            assert!(tools.iter().any(|t| t.name == "Grep"));
            let r = client.call_tool(call("Grep", serde_json::json!({"pattern": "hello"}))).await.expect("call");
            assert!(text(&r).contains("a.txt"), "{}", text(&r));
            // A background command of this session ends with the session.
            let pid_file = sb.ws("bg.pid");
            let command = format!("echo $$ > {}; exec sleep 30", pid_file.display());
            let r = client
                .call_tool(call("Bash", serde_json::json!({"command": command, "run_in_background": true})))
                .await
                .expect("call");
            assert_eq!(r.is_error, Some(false), "{}", text(&r));
            let mut pid = None;
            for _ in 0..200 {
                pid = std::fs::read_to_string(&pid_file).ok().and_then(|s| s.trim().parse::<i32>().ok());
                if pid.is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let pid = pid.expect("the background command started");
            assert!(!toolhost_tests::process_gone(pid));
            client.cancel().await.expect("close");
            let gone = tokio::task::spawn_blocking(move || toolhost_tests::wait_gone(pid, Duration::from_secs(5)));
            assert!(gone.await.expect("join"), "the session's background process outlived the session");
        });
    }

    #[test]
    fn deferred_tools_are_listed_in_full_and_callable_without_toolsearch() {
        let sb = Sandbox::new();
        sb.install(toolhost_tests::ECHO);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let mut cmd = tokio::process::Command::from(toolhost_command(&sb));
            cmd.args(["--settings", r#"{"deferToolsAfter": 0}"#, "serve"]);
            let client = Client::default().serve(TokioChildProcess::new(cmd).expect("spawn")).await.expect("init");
            let tools = client.list_all_tools().await.expect("tools/list");
            assert!(tools.iter().all(|t| t.name != "ToolSearch"), "ToolSearch is not for MCP clients");
            let echo = tools.iter().find(|t| t.name == "Echo").expect("Echo listed");
            assert!(echo.input_schema.get("properties").is_some(), "listed in full: {echo:?}");
            let deferred = echo.meta.as_ref().and_then(|m| m.get("toolhost/deferred").cloned());
            assert_eq!(deferred, Some(serde_json::json!(true)), "{echo:?}");
            let r = client.call_tool(call("Echo", serde_json::json!({"text": "direct"}))).await.expect("call");
            assert_eq!((r.is_error, text(&r)), (Some(false), "direct".to_string()));
            client.cancel().await.expect("close");
        });
    }

    /// Counts `notifications/tools/list_changed`.
    #[derive(Clone, Default)]
    struct Watcher {
        changes: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl rmcp::ClientHandler for Watcher {
        async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<rmcp::RoleClient>) {
            self.changes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn serve_answers_a_stream_of_calls_through_replacements_additions_and_removals() {
        let sb = Sandbox::new();
        let wasm = std::fs::read(toolhost_tests::ECHO).unwrap();
        let versions = [
            toolhost_tests::with_custom_section(&wasm, "stream", b"a"),
            toolhost_tests::with_custom_section(&wasm, "stream", b"b"),
        ];
        let put = |name: &str, bytes: &[u8]| toolhost_tests::put_atomically(&sb.plugins.join(name), bytes);
        put("echo.wasm", &versions[0]);
        let sleeper = std::fs::read(toolhost_tests::SLEEPER).unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async {
            let mut cmd = tokio::process::Command::from(toolhost_command(&sb));
            cmd.arg("serve");
            let watcher = Watcher::default();
            let client =
                Arc::new(watcher.clone().serve(TokioChildProcess::new(cmd).expect("spawn")).await.expect("init"));
            // Four callers, one call at a time each, for as long as the
            // directory changes under them.
            let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let callers: Vec<_> = (0..4)
                .map(|c| {
                    let (client, done) = (Arc::clone(&client), Arc::clone(&done));
                    tokio::spawn(async move {
                        let mut out = Vec::new();
                        for i in 0.. {
                            if done.load(std::sync::atomic::Ordering::SeqCst) {
                                break;
                            }
                            let text_in = format!("c{c}-{i}");
                            let r = client.call_tool(call("Echo", serde_json::json!({"text": text_in}))).await;
                            out.push((text_in, r.map(|r| (r.is_error, text(&r))).map_err(|e| e.to_string())));
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                        out
                    })
                })
                .collect();
            // Twelve changes: Echo replaced each time, Sleeper added or
            // removed every other time. After each of the six that change
            // the list, the client is told and the list shows it (waited
            // on, not timed: a slow hour only makes the test longer).
            let count = || watcher.changes.load(std::sync::atomic::Ordering::SeqCst);
            for step in 0..12 {
                tokio::time::sleep(Duration::from_millis(40)).await;
                let before = count();
                put("echo.wasm", &versions[(step + 1) % 2]);
                let sleeper_listed = match step % 4 {
                    1 => {
                        put("sleeper.wasm", &sleeper);
                        true
                    }
                    3 => {
                        std::fs::remove_file(sb.plugins.join("sleeper.wasm")).expect("remove");
                        false
                    }
                    _ => continue,
                };
                let deadline = std::time::Instant::now() + Duration::from_secs(30);
                loop {
                    let names: Vec<String> =
                        client.list_all_tools().await.expect("tools/list").iter().map(|t| t.name.to_string()).collect();
                    if count() > before && names.contains(&"Sleeper".to_string()) == sleeper_listed {
                        break;
                    }
                    assert!(
                        std::time::Instant::now() < deadline,
                        "step {step}: {} notifications since, tools {names:?}",
                        count() - before
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            // The last changes land while the calls go on.
            tokio::time::sleep(Duration::from_millis(500)).await;
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            let mut calls = 0;
            for caller in callers {
                for (text_in, r) in caller.await.expect("caller") {
                    assert_eq!(r, Ok((Some(false), text_in.clone())), "the call {text_in}");
                    calls += 1;
                }
            }
            assert!(calls >= 100, "only {calls} calls");
            assert!(count() >= 6, "{} notifications/tools/list_changed through six changes of the list", count());
            let names: Vec<String> =
                client.list_all_tools().await.expect("tools/list").iter().map(|t| t.name.to_string()).collect();
            assert!(names.contains(&"Echo".to_string()), "{names:?}");
        });
    }
}
