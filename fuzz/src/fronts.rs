//! What clients send: `toolhost run`'s input lines, MCP over stdio and over
//! HTTP, and the session ids that name directories under the data dir.

use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolhost::{Host, PermissionMode};

#[path = "../../host/cli/src/input.rs"]
mod input;

/// `toolhost run`'s input, line by line: never a panic, and (unless the
/// stream discards its blocks) every tool_use block that starts streaming
/// ends in exactly one call or failure.
pub fn run_input(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut stream = input::InputStream::default();
    let mut out: Vec<input::Line> = text.lines().flat_map(|l| stream.feed(l)).collect();
    out.extend(stream.finish());
    if text.lines().any(|l| l.contains("discard")) {
        return;
    }
    let started: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
        .filter(|v| v["type"] == "content_block_start" && v["content_block"]["type"] == "tool_use")
        .filter(|v| v["index"].is_u64() && v["content_block"]["name"].is_string())
        .filter_map(|v| v["content_block"]["id"].as_str().map(str::to_owned))
        .collect();
    let answered = |id: &str| {
        out.iter()
            .filter(|l| match l {
                input::Line::ToolUse(t) => t.id == id,
                input::Line::Failed { id: failed, .. } => failed == id,
                _ => false,
            })
            .count()
    };
    for id in &started {
        let times = started.iter().filter(|s| *s == id).count();
        assert!(answered(id) >= times, "block {id:?} started {times} times, answered {}: {out:?}", answered(id));
    }
}

/// One host for every MCP input: no plugins, WebFetch denied (the fuzzer
/// must not reach the network), a short deadline for every call.
fn host() -> &'static Host {
    static HOST: OnceLock<Host> = OnceLock::new();
    HOST.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("toolhost-fuzz-mcp-{}", std::process::id()));
        let workspace = root.join("workspace");
        std::fs::create_dir_all(&workspace).expect("a workspace");
        std::fs::write(workspace.join("a.txt"), "hello\n").expect("a file");
        let sources = toolhost::Sources {
            command_line_rules: vec![(toolhost::Behavior::Deny, "WebFetch".into())],
            ..toolhost::Sources::default()
        };
        let settings = toolhost::settings::load(&sources, &workspace).expect("settings");
        Host::builder()
            .workspace(&workspace)
            .plugins_dir(None)
            .data_dir(root.join("data"))
            .cache_dir(Some(crate::cache_dir()))
            .settings(settings)
            .mode(PermissionMode::Default)
            .timeout(Duration::from_secs(2))
            .build()
            .expect("a host")
    })
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime")
    })
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A stdio session after the handshake: whatever lines follow, the server
/// never panics or stalls, writes only JSON-RPC messages, answers no id
/// more often than requests carried it, and ends when its input does.
pub fn mcp_stdio(data: &[u8]) {
    serve_stdio(&[INITIALIZE, INITIALIZED], data);
}

/// A stdio connection with no handshake (MCP 2026-07-28: each request
/// carries its revision in `_meta`; state handles, approvals' request
/// state and listen streams come from the client): the same invariants as
/// [`mcp_stdio`].
pub fn mcp_sessionless(data: &[u8]) {
    serve_stdio(&[], data);
}

fn serve_stdio(prelude: &[&str], data: &[u8]) {
    let host = host().clone();
    runtime().block_on(async move {
        let (client, server) = tokio::io::duplex(1 << 20);
        let session = toolhost_mcp::McpSession::new(host, toolhost_mcp::ServeConfig::default());
        let serving = tokio::spawn(async move {
            use rmcp::ServiceExt as _;
            if let Ok(running) = session.serve(tokio::io::split(server)).await {
                let _ = running.waiting().await;
            }
        });
        let (mut reader, mut writer) = tokio::io::split(client);
        let writing = async move {
            for line in prelude {
                writer.write_all(line.as_bytes()).await?;
                writer.write_all(b"\n").await?;
            }
            writer.write_all(data).await?;
            writer.write_all(b"\n").await?;
            writer.shutdown().await
        };
        let mut out = Vec::new();
        let (_, read) =
            tokio::join!(writing, tokio::time::timeout(Duration::from_secs(20), reader.read_to_end(&mut out)));
        read.expect("the server stalled: no end of output 20 s after its input ended").expect("reading the server");
        tokio::time::timeout(Duration::from_secs(20), serving)
            .await
            .expect("the session did not end with its input")
            .expect("the session panicked");
        // A client may send an id again once its request is answered (or
        // while it runs, which the server may refuse): each id is answered
        // at most as often as requests carried it.
        let mut asked: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        let input = prelude.iter().map(|l| l.as_bytes()).chain(data.split(|b| *b == b'\n'));
        for message in input.filter_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok()) {
            let messages = match message {
                serde_json::Value::Array(batch) => batch,
                one => vec![one],
            };
            for m in messages.iter().filter(|m| m.get("method").is_some() && !m["id"].is_null()) {
                *asked.entry(m["id"].to_string()).or_default() += 1;
            }
        }
        let mut answered: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for line in String::from_utf8_lossy(&out).lines().filter(|l| !l.trim().is_empty()) {
            let message: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("the server wrote {line:?}, not JSON ({e})"));
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
            let is_response = message.get("result").is_some() || message.get("error").is_some();
            if is_response && !message["id"].is_null() {
                let id = message["id"].to_string();
                let times = answered.entry(id.clone()).or_default();
                *times += 1;
                let sent = asked.get(&id).copied().unwrap_or(0);
                assert!(*times <= sent.max(1), "request {id} answered {times} times, asked {sent}");
            }
        }
    });
}

struct HttpServer {
    addr: std::net::SocketAddr,
}

fn http_server() -> &'static HttpServer {
    static SERVER: OnceLock<HttpServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let host = host().clone();
        let (tx, rx) = std::sync::mpsc::channel();
        runtime().spawn(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
            tx.send(listener.local_addr().expect("an address")).expect("the fuzzer waits");
            let shutdown = tokio_util::sync::CancellationToken::new();
            let http = toolhost_mcp::HttpConfig::default();
            let _ =
                toolhost_mcp::serve_http(host, toolhost_mcp::ServeConfig::default(), http, listener, shutdown).await;
        });
        HttpServer { addr: rx.recv().expect("the server's address") }
    })
}

async fn exchange(addr: std::net::SocketAddr, request: &[u8], wait: Duration) -> Vec<u8> {
    let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await else { return Vec::new() };
    let _ = stream.write_all(request).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(wait, stream.read_to_end(&mut out)).await;
    out
}

fn post(body: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

/// A request to the streamable HTTP endpoint (raw bytes, or a JSON-RPC body
/// in a well-formed POST): the server never panics, answers in HTTP, and
/// still answers a good `initialize` afterwards.
pub fn mcp_http(data: &[u8]) {
    let server = http_server();
    let raw = data.first().is_some_and(|b| b.is_ascii_uppercase());
    let request = if raw { data.to_vec() } else { post(data) };
    runtime().block_on(async {
        let answer = exchange(server.addr, &request, Duration::from_millis(if raw { 300 } else { 3000 })).await;
        if !answer.is_empty() {
            assert!(answer.starts_with(b"HTTP/1."), "not an HTTP answer: {:?}", String::from_utf8_lossy(&answer));
        }
        let check = exchange(server.addr, &post(INITIALIZE.as_bytes()), Duration::from_secs(10)).await;
        assert!(
            check.starts_with(b"HTTP/1.1 200"),
            "the server stopped answering after {:?}: {:?}",
            String::from_utf8_lossy(&request),
            String::from_utf8_lossy(&check)
        );
    });
}

/// A session id from a client: what opens is a directory right under the
/// data dir's `sessions/`, named by the id, never anywhere else.
pub fn session_paths(data: &[u8]) {
    let Ok(id) = std::str::from_utf8(data) else { return };
    let root = std::env::temp_dir().join("toolhost-fuzz-sessions");
    if let Ok(session) = toolhost::Session::open(&root, id) {
        let session = Arc::new(session);
        let dir = session.dir();
        assert_eq!(dir.parent(), Some(root.join("sessions").as_path()), "{id:?} opened {}", dir.display());
        assert_eq!(dir.file_name().and_then(|n| n.to_str()), Some(id), "{id:?} opened {}", dir.display());
        assert!(
            dir.components().all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::RootDir)),
            "{id:?} opened {}",
            dir.display()
        );
        assert!(session.results_dir().starts_with(dir));
    }
}

/// A token file (`serve --token-file`): never a panic; what it gives is at
/// least one credential, each name and token well-formed and used once,
/// and a request carrying one of the tokens is that credential's holder.
pub fn token_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(credentials) = toolhost_mcp::parse_credentials(text) else { return };
    assert!(!credentials.is_empty());
    for (i, c) in credentials.iter().enumerate() {
        assert!(!c.name.is_empty() && c.name.len() <= 128, "{c:?}");
        assert!(c.token.len() >= 16 && c.token.bytes().all(|b| b.is_ascii_graphic()), "{c:?}");
        assert!(!format!("{c:?}").contains(&c.token), "a token shows in Debug");
        for other in &credentials[i + 1..] {
            assert!(other.name != c.name && other.token != c.token, "used twice: {c:?}, {other:?}");
        }
        // The file read again, this credential alone, names the same holder.
        let line = format!("{} {}\n", c.name, c.token);
        assert_eq!(toolhost_mcp::parse_credentials(&line).as_deref(), Ok(std::slice::from_ref(c)));
    }
}

/// What an MCP server sends about its tools and as a call's answer, as the
/// host reads it: a `tools/list` entry described for the pool (a valid
/// name, the description capped, the schema an object within the caps,
/// made portable for good: doing it again changes nothing), and any JSON as
/// a `CallToolResult` giving a result with content.
pub fn mcp_tool(data: &[u8]) {
    use toolhost::remote::{MAX_REMOTE_DESCRIPTION, describe, from_call_result, make_portable};
    if data.len() > 64 << 10 {
        return;
    }
    let Ok(entry) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    if let Ok((spec, _, _)) = describe("srv", &entry) {
        let name_ok = spec.name.starts_with("mcp__srv__")
            && spec.name.len() <= 64
            && spec.name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        assert!(name_ok, "{}", spec.name);
        assert!(spec.prompt.chars().count() <= MAX_REMOTE_DESCRIPTION);
        assert_eq!(spec.input_schema["type"], "object", "{}", spec.input_schema);
        assert!(spec.input_schema.to_string().len() <= 64 << 10);
        assert_eq!(make_portable(&spec.input_schema), spec.input_schema, "made portable twice differs");
        let _ = toolhost::internals::Schema::compile(spec.input_schema);
    }
    let result = from_call_result("t", &entry);
    assert!(!result.content.is_empty(), "{entry}");
}

/// A stdio MCP server's output, through the host's line check: the check
/// passes exactly when every complete line is blank or UTF-8 JSON whose
/// value is an object or an array (judged here with serde_json alone), and
/// the same output always fares the same.
pub fn mcp_server_lines(data: &[u8]) {
    if data.len() > 1 << 20 {
        return;
    }
    let result = toolhost_mcp::client::check_server_output(data);
    assert_eq!(result, toolhost_mcp::client::check_server_output(data), "not deterministic");
    let complete = match data.iter().rposition(|&b| b == b'\n') {
        Some(end) => &data[..end],
        None => &[][..],
    };
    let a_message = |line: &[u8]| {
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        let Ok(text) = std::str::from_utf8(line) else { return false };
        let text = text.trim();
        text.is_empty()
            || matches!(
                serde_json::from_str::<serde_json::Value>(text),
                Ok(serde_json::Value::Object(_) | serde_json::Value::Array(_))
            )
    };
    // No newline: no complete line, nothing to judge yet.
    let all_messages = !data.contains(&b'\n') || complete.split(|&b| b == b'\n').all(a_message);
    assert_eq!(result.is_ok(), all_messages, "{:?}: {result:?}", String::from_utf8_lossy(data));
}
