//! What an operator's backends see: traces and metrics exported over OTLP
//! (HTTP/protobuf and gRPC) to a receiver decoding with the official
//! protobuf definitions, one trace followed from the client through
//! toolhost, a hook, the tool and an MCP server's tool (a server on the
//! official Python SDK that shows the `_meta` it got); and Prometheus from
//! Debian scraping `/metrics` of two instances.

use crate::mcp_servers::probe_server;
use crate::otlp::{Receiver, Span};
use crate::support::*;
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The client's trace and the span its request was sent in.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// `toolhost serve` on stdio, exporting to `endpoint` over `protocol`, with
/// a PreToolUse hook on every tool and the probe MCP server.
fn serve(sb: &Sandbox, endpoint: &str, protocol: &str) -> std::process::Child {
    let settings = json!({
        "mcpServers": {"probe": probe_server()},
        "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "cat >/dev/null"}]}]},
    });
    let mut cmd = toolhost_command(sb);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "300");
    cmd.args(["--settings", &settings.to_string(), "--allow", "mcp__probe", "--allow", "Bash(echo:*)", "serve"]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    cmd.spawn().expect("start toolhost serve")
}

/// Sends `requests` (after the handshake) and reads until each is answered;
/// the answers by id.
fn exchange(child: &mut std::process::Child, requests: &[Value]) -> std::collections::HashMap<i64, Value> {
    use std::io::{BufRead as _, Write as _};
    let mut stdin = child.stdin.take().expect("stdin");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "otel-test", "version": "1"}}});
    writeln!(stdin, "{init}").unwrap();
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    for r in requests {
        writeln!(stdin, "{r}").unwrap();
    }
    stdin.flush().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut answers = std::collections::HashMap::new();
    let mut line = String::new();
    while answers.len() < requests.len() + 1 {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "serve ended early; answers so far {answers:?}");
        if let Ok(v) = serde_json::from_str::<Value>(&line)
            && let Some(id) = v["id"].as_i64()
        {
            answers.insert(id, v);
        }
    }
    // The end of the input ends the server, which sends what it holds.
    drop(stdin);
    answers
}

/// A process the test started, killed when the test ends (passed or not).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One 2026-07-28 `tools/call` of Glob at `url` (no session needed).
fn glob_at(url: &str, id: u64) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "Glob", "arguments": {"pattern": "*"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {},
                  "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}}});
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "Glob"),
    ];
    let (status, response) = raw_http(url, "POST", &headers, &body.to_string());
    assert_eq!(status, 200, "{response}");
}

fn call_with_trace(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments,
        "_meta": {"traceparent": format!("00-{TRACE}-{CLIENT_SPAN}-01"), "tracestate": "vendor=opaque"}}})
}

fn one<'s>(spans: &'s [Span], what: &str, matches: impl Fn(&Span) -> bool) -> &'s Span {
    let found: Vec<&Span> = spans.iter().filter(|s| matches(s)).collect();
    assert_eq!(found.len(), 1, "{what}: {} spans match among\n{spans:#?}", found.len());
    found[0]
}

fn child_of<'s>(spans: &'s [Span], parent: &Span, name: &str) -> &'s Span {
    one(spans, name, |s| s.name == name && s.parent_span_id == parent.span_id && s.trace_id == parent.trace_id)
}

#[test]
fn one_trace_runs_from_the_client_through_the_call_its_hook_and_an_mcp_servers_tool() {
    let (receiver, endpoint) = Receiver::http();
    let sb = Sandbox::new();
    let mut child = serve(&sb, &endpoint, "http/protobuf");
    let answers = exchange(
        &mut child,
        &[
            call_with_trace(1, "mcp__probe__meta", json!({})),
            call_with_trace(2, "Bash", json!({"command": "echo hi"})),
            call_with_trace(3, "NoSuchTool", json!({})),
        ],
    );
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(answers[&2]["result"]["isError"], false, "{:?}", answers[&2]);
    let meta_text = answers[&1]["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
    // Everything was sent before the server ended (flushed at its end).
    let spans = receiver.wait_for("both calls' spans", Duration::from_secs(20), |spans| {
        spans.iter().filter(|s| s.name.starts_with("execute_tool ")).count() >= 2
    });

    // The server span continues the client's trace.
    let server = one(&spans, "the server span of the MCP call", |s| s.name == "tools/call mcp__probe__meta");
    assert_eq!((server.trace_id.as_str(), server.parent_span_id.as_str()), (TRACE, CLIENT_SPAN), "{server:#?}");
    assert_eq!(server.kind, 2, "SPAN_KIND_SERVER: {server:#?}");
    assert_eq!(server.service, "toolhost");
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "mcp__probe__meta"),
        ("gen_ai.operation.name", "execute_tool"),
        ("mcp.protocol.version", "2025-06-18"),
        ("jsonrpc.request.id", "1"),
        ("network.transport", "pipe"),
    ] {
        assert_eq!(server.attribute(key), Some(value), "{key}: {server:#?}");
    }
    // The call under it, with its decision.
    let call = child_of(&spans, server, "execute_tool mcp__probe__meta");
    assert_eq!(call.attribute("gen_ai.tool.name"), Some("mcp__probe__meta"));
    assert_eq!(call.attribute("gen_ai.operation.name"), Some("execute_tool"));
    assert!(call.attribute("gen_ai.tool.call.id").is_some_and(|id| id.starts_with("toolu_mcp_")), "{call:#?}");
    assert_eq!(call.attribute("toolhost.decision"), Some("allow"), "{call:#?}");
    assert!(call.attribute("toolhost.decision.source").is_some_and(|s| s.contains("mcp__probe")), "{call:#?}");
    assert_eq!(call.attribute("toolhost.identity"), Some("local"));
    // Arguments and results only when opted in.
    assert!(call.attribute("gen_ai.tool.call.arguments").is_none(), "{call:#?}");
    // Its hook, and the client span of the MCP server's tool.
    let hook = child_of(&spans, call, "hook PreToolUse");
    assert_eq!(hook.attribute("toolhost.hook.event"), Some("PreToolUse"));
    let client = child_of(&spans, call, "tools/call meta");
    assert_eq!(client.kind, 3, "SPAN_KIND_CLIENT: {client:#?}");
    assert_eq!(client.attribute("server.address"), Some("probe"));
    assert_eq!(client.attribute("network.transport"), Some("pipe"));
    // The MCP server got the trace in its request's `_meta`: the client
    // span is its parent.
    let got: Value = serde_json::from_str(&meta_text).unwrap_or_else(|_| panic!("the probe's _meta: {meta_text}"));
    assert_eq!(got["traceparent"], format!("00-{TRACE}-{}-01", client.span_id), "{got}");
    assert_eq!(got["tracestate"], "vendor=opaque", "{got}");

    // Bash: the guest's call and the process it started, under the call.
    let bash_server = one(&spans, "the Bash request", |s| s.name == "tools/call Bash");
    let bash = child_of(&spans, bash_server, "execute_tool Bash");
    child_of(&spans, bash, "hook PreToolUse");
    let guest = child_of(&spans, bash, "guest_call Bash");
    let process =
        one(&spans, "Bash's child process", |s| s.name.starts_with("process ") && s.parent_span_id == guest.span_id);
    assert_eq!(process.attribute("process.exit.code"), Some("0"), "{process:#?}");
    // STATUS_CODE_ERROR is 2: none of these failed.
    assert!([server, call, hook, client, bash, process].iter().all(|s| s.status != 2), "{spans:#?}");
    assert!(process.attribute("process.pid").is_some(), "{process:#?}");
    for span in &spans {
        assert_eq!(span.trace_id, TRACE, "every span is in the client's trace: {span:#?}");
    }

    // Metrics: the conventions' and toolhost's own.
    let names = receiver.metric_names();
    for name in [
        "mcp.server.operation.duration",
        "mcp.client.operation.duration",
        "toolhost.calls",
        "toolhost.call.duration",
        "toolhost.call.cpu_time",
        "toolhost.call.output",
        "toolhost.decisions",
        "toolhost.instance_slots",
        "toolhost.calls.waiting_for_a_slot",
    ] {
        assert!(names.iter().any(|n| n == name), "no {name} among {names:?}");
    }
    // A name the client made up is no label: it counts as unknown.
    let tools = receiver.metric_values("mcp.server.operation.duration", "gen_ai.tool.name");
    assert_eq!(tools, ["(unknown)", "Bash", "mcp__probe__meta"], "{tools:?}");
}

#[test]
fn grpc_export_carries_the_same_spans_and_arguments_when_opted_in() {
    let (receiver, endpoint) = Receiver::grpc();
    let sb = Sandbox::new();
    sb.write("a.txt", "hello\n");
    let mut cmd = toolhost_command(&sb);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .env("OTEL_SERVICE_NAME", "tools-east")
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        .args(["--code-mode", "serve"]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = cmd.spawn().expect("start toolhost serve");
    let path = p(&sb.ws("a.txt"));
    let program = format!("return await tools.Glob({{pattern: \"*.txt\", path: {:?}}});", p(&sb.workspace));
    let answers = exchange(
        &mut child,
        &[
            call_with_trace(1, "Read", json!({"file_path": path})),
            call_with_trace(2, "Script", json!({"code": program})),
        ],
    );
    assert!(child.wait().unwrap().success());
    assert_eq!(answers[&1]["result"]["isError"], false, "{:?}", answers[&1]);
    assert_eq!(answers[&2]["result"]["isError"], false, "{:?}", answers[&2]);
    let spans = receiver.wait_for("the calls' spans", Duration::from_secs(20), |spans| {
        ["execute_tool Read", "execute_tool Glob", "execute_tool Script"]
            .iter()
            .all(|name| spans.iter().any(|s| s.name == *name))
    });
    // A Script's inner call is under the Script call, naming it.
    let script = one(&spans, "execute_tool Script", |s| s.name == "execute_tool Script");
    let inner = one(&spans, "execute_tool Glob", |s| s.name == "execute_tool Glob");
    assert_eq!(inner.attribute("toolhost.parent_call"), script.attribute("gen_ai.tool.call.id"), "{inner:#?}");
    let mut up = inner;
    while up.span_id != script.span_id {
        up = one(&spans, "an ancestor of the inner call", |s| s.span_id == up.parent_span_id);
    }
    let call = one(&spans, "execute_tool Read", |s| s.name == "execute_tool Read");
    assert_eq!(call.service, "tools-east");
    assert_eq!(call.trace_id, TRACE);
    let arguments: Value =
        serde_json::from_str(call.attribute("gen_ai.tool.call.arguments").unwrap_or("null")).unwrap();
    assert_eq!(arguments["file_path"], path, "{call:#?}");
    assert!(call.attribute("gen_ai.tool.call.result").is_some_and(|r| r.contains("hello")), "{call:#?}");
}

#[test]
fn a_collector_that_is_gone_costs_the_calls_nothing() {
    // A port nobody listens on: every export fails; calls are answered.
    let port = toolhost_tests::server::free_port();
    let sb = Sandbox::new();
    let mut cmd = toolhost_command(&sb);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://127.0.0.1:{port}"))
        .env("OTEL_BSP_SCHEDULE_DELAY", "10")
        .env("OTEL_BSP_MAX_QUEUE_SIZE", "4")
        .args(["serve", "--http", "0"]);
    cmd.stdin(Stdio::null()).stderr(Stdio::piped());
    let mut child = Killed(cmd.spawn().expect("start toolhost serve --http"));
    let url = toolhost_tests::serving_url(&mut child.0, "serve --http");
    let started = Instant::now();
    for i in 0..30 {
        glob_at(&url, i);
    }
    let took = started.elapsed();
    // Spans beyond the queue's four were dropped, and counted.
    let (_, metrics) = raw_http(&url.replace("/mcp", "/metrics"), "GET", &[], "");
    let dropped = metrics
        .lines()
        .find_map(|l| l.strip_prefix("toolhost_telemetry_spans_dropped_total "))
        .and_then(|v| v.trim().parse::<f64>().ok());
    assert!(dropped.is_some_and(|d| d > 0.0), "no drops counted after {took:?}:\n{metrics}");
}

#[test]
fn a_drained_server_sends_the_spans_it_still_holds() {
    let (receiver, endpoint) = Receiver::http();
    let sb = Sandbox::new();
    let mut cmd = toolhost_command(&sb);
    // Nothing would be sent for a minute but for the end.
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_BSP_SCHEDULE_DELAY", "60000")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "60000")
        .args(["serve", "--http", "0"]);
    cmd.stdin(Stdio::null()).stderr(Stdio::piped());
    let mut child = Killed(cmd.spawn().expect("start toolhost serve --http"));
    let url = toolhost_tests::serving_url(&mut child.0, "serve --http");
    glob_at(&url, 1);
    assert!(receiver.spans().is_empty(), "sent before the end: {:#?}", receiver.spans());
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) }, 0);
    let status = child.0.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let spans = receiver.spans();
    let call = one(&spans, "the call's span", |s| s.name == "execute_tool Glob");
    assert_eq!(call.attribute("toolhost.identity"), Some("anonymous"), "{call:#?}");
    one(&spans, "the request's span", |s| {
        s.name == "tools/call Glob" && s.attribute("network.transport") == Some("tcp")
    });
    assert!(receiver.metric_names().iter().any(|n| n == "toolhost.calls"), "{:?}", receiver.metric_names());
}

#[test]
fn prometheus_scrapes_two_instances() {
    let sb = Sandbox::new();
    let start = |name: &str| {
        let mut cmd = toolhost_command(&sb);
        cmd.env("TOOLHOST_DATA_DIR", sb.root.join(format!("data-{name}")));
        cmd.args(["--instance", name, "serve", "--http", "0"]).stdin(Stdio::null()).stderr(Stdio::piped());
        let mut child = Killed(cmd.spawn().expect("start toolhost serve --http"));
        let url = toolhost_tests::serving_url(&mut child.0, name);
        (child, url)
    };
    let instances = [start("a"), start("b")];
    let targets: Vec<String> = instances
        .iter()
        .map(|(_, url)| url.trim_start_matches("http://").trim_end_matches("/mcp").to_string())
        .collect();
    let port = toolhost_tests::server::free_port();
    let config = sb.root.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: toolhost\n    static_configs:\n      - targets: [{}]\n",
            targets.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(", ")
        ),
    )
    .unwrap();
    let prometheus = std::process::Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", sb.root.join("tsdb").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus from Debian's package (.ci/run installs it)");
    let _prometheus = Killed(prometheus);
    // A call on each, so the calls' series exist.
    for (_, url) in &instances {
        glob_at(url, 1);
    }
    toolhost_tests::server::wait_until(
        "Prometheus listening",
        Duration::from_secs(60),
        Duration::from_millis(100),
        || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
    );
    let api = format!("http://127.0.0.1:{port}/api/v1");
    let query = |path: &str| -> Value {
        let (status, response) = raw_http(&format!("{api}{path}"), "GET", &[], "");
        let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        if status != 200 {
            return Value::Null;
        }
        serde_json::from_str(body.trim()).unwrap_or(Value::Null)
    };
    let until = Instant::now() + Duration::from_secs(60);
    let series = loop {
        let up = query("/targets");
        let series = query("/query?query=toolhost_calls_total");
        let healthy = up["data"]["activeTargets"]
            .as_array()
            .is_some_and(|t| t.len() == 2 && t.iter().all(|t| t["health"] == "up"));
        let instances_seen = series["data"]["result"].as_array().map_or(0, |r| {
            r.iter().filter_map(|s| s["metric"]["instance"].as_str()).collect::<std::collections::BTreeSet<_>>().len()
        });
        if healthy && instances_seen == 2 {
            break series;
        }
        if Instant::now() > until {
            panic!("Prometheus did not scrape both instances:\ntargets {up}\nseries {series}");
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    // Each series is toolhost's, labelled by tool and outcome.
    let result = series["data"]["result"].as_array().unwrap();
    assert!(result.iter().all(|s| s["metric"]["tool"] == "Glob" && s["metric"]["outcome"] == "ok"), "{series}");
}
