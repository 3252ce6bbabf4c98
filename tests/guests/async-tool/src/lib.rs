//! A tool written the way wit-bindgen's defaults write one against the
//! `async-plugin` world: its `validate-input`, `check-permissions` and
//! `call` are async Rust functions (async lifts), and it uses WASI 0.3
//! (`wasip3`): clocks, files, sockets, environment and stdout, all host
//! futures and streams. The input's `action` picks what a call does; some
//! actions are hostile (waiting forever on the host, on a future nothing
//! writes, flooding stdout, allocating without end, spinning), and each must
//! end at the call's limits with the host unharmed.

wit_bindgen::generate!({
    world: "async-plugin",
    path: "../../../wit",
});

use exports::toolhost::tool::async_tool::{CallContext, Guest, PermissionDecision};
use toolhost::tool::progress;
use toolhost::tool::types::{ContentBlock, ErrorKind, InputRoles, InterruptBehavior, ToolError, ToolInfo, ToolOutput};
use wasip3::filesystem::types::{DescriptorFlags, ErrorCode, OpenFlags, PathFlags};

struct AsyncTool;

fn field(input: &str, key: &str) -> Option<serde_json::Value> {
    serde_json::from_str::<serde_json::Value>(input).ok()?.get(key).cloned()
}

fn text(s: impl Into<String>) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput { content: vec![ContentBlock::Text(s.into())], structured: None, is_error: false })
}

fn failed(what: &str, e: impl std::fmt::Debug) -> ToolError {
    ToolError { kind: ErrorKind::Io, message: format!("{what}: {e:?}") }
}

/// The preopened directory holding `path`, and `path` relative to it.
fn directory_of(path: &str) -> Option<(wasip3::filesystem::types::Descriptor, String)> {
    wasip3::filesystem::preopens::get_directories().into_iter().find_map(|(dir, name)| {
        let rest = path.strip_prefix(name.trim_end_matches('/'))?.trim_start_matches('/');
        Some((dir, rest.to_string()))
    })
}

async fn read(path: &str) -> Result<String, ToolError> {
    let (dir, rest) = directory_of(path).ok_or_else(|| failed("no directory holds it", path))?;
    let file = dir
        .open_at(PathFlags::empty(), rest, OpenFlags::empty(), DescriptorFlags::READ)
        .await
        .map_err(|e| failed("open", e))?;
    let (stream, done) = file.read_via_stream(0);
    let bytes = stream.collect().await;
    done.await.map_err(|e| failed("read", e))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

async fn write(path: &str, contents: &str) -> Result<(), ToolError> {
    let (dir, rest) = directory_of(path).ok_or_else(|| failed("no directory holds it", path))?;
    let file = dir
        .open_at(PathFlags::empty(), rest, OpenFlags::CREATE | OpenFlags::TRUNCATE, DescriptorFlags::WRITE)
        .await
        .map_err(|e| failed("open", e))?;
    let (mut tx, rx) = wasip3::wit_stream::new::<u8>();
    let done = file.write_via_stream(rx, 0);
    let left = tx.write_all(contents.as_bytes().to_vec()).await;
    drop(tx);
    if !left.is_empty() {
        return Err(failed("write", "the stream was closed early"));
    }
    done.await.map_err(|e| failed("write", e))
}

async fn connect(address: &str) -> Result<(), ToolError> {
    use wasip3::sockets::types::{IpAddressFamily, IpSocketAddress, Ipv4SocketAddress, TcpSocket};
    let addr: std::net::SocketAddrV4 = address.parse().map_err(|e| failed("address", e))?;
    let o = addr.ip().octets();
    let socket = TcpSocket::create(IpAddressFamily::Ipv4).map_err(|e| failed("socket", e))?;
    let remote = IpSocketAddress::Ipv4(Ipv4SocketAddress { port: addr.port(), address: (o[0], o[1], o[2], o[3]) });
    socket.connect(remote).await.map_err(|e| failed("connect", e))
}

/// A GET of `url` (`http://HOST:PORT/PATH`) through wasi:http 0.3's client:
/// the status and the body's length.
async fn fetch(url: &str) -> Result<String, ToolError> {
    use wasip3::http::client;
    use wasip3::http::types::{Fields, Method, Request, Response, Scheme};
    let rest = url.strip_prefix("http://").ok_or_else(|| failed("url", url))?;
    let (authority, path) = rest.split_once('/').map_or((rest, "/".to_string()), |(a, p)| (a, format!("/{p}")));
    let (trailers_tx, trailers_rx) = wasip3::wit_future::new(|| Ok(None));
    drop(trailers_tx);
    let (request, _sent) = Request::new(Fields::new(), None, trailers_rx, None);
    request.set_method(&Method::Get).map_err(|e| failed("method", e))?;
    request.set_scheme(Some(&Scheme::Http)).map_err(|e| failed("scheme", e))?;
    request.set_authority(Some(authority)).map_err(|e| failed("authority", e))?;
    request.set_path_with_query(Some(&path)).map_err(|e| failed("path", e))?;
    let response = client::send(request).await.map_err(|e| failed("send", e))?;
    let status = response.get_status_code();
    let (done_tx, done_rx) = wasip3::wit_future::new(|| Ok(()));
    drop(done_tx);
    let (body, _trailers) = Response::consume_body(response, done_rx);
    let bytes = body.collect().await;
    Ok(format!("status {status}, {} bytes", bytes.len()))
}

async fn stdout(bytes: usize) -> Result<String, ToolError> {
    let (mut tx, rx) = wasip3::wit_stream::new::<u8>();
    let done = wasip3::cli::stdout::write_via_stream(rx);
    let chunk = vec![b'x'; 64 * 1024];
    let mut written = 0;
    while written < bytes {
        let left = tx.write_all(chunk.clone()).await;
        if !left.is_empty() {
            break;
        }
        written += chunk.len();
    }
    drop(tx);
    let outcome = done.await;
    Ok(format!("wrote {written} bytes: {outcome:?}"))
}

async fn sleep(ms: u64) {
    wasip3::clocks::monotonic_clock::wait_for(ms * 1_000_000).await;
}

impl Guest for AsyncTool {
    fn info() -> ToolInfo {
        ToolInfo {
            name: "AsyncTool".into(),
            aliases: vec![],
            description: "Async exports and WASI 0.3, on request.".into(),
            prompt: "Test tool.".into(),
            search_hint: None,
            input_schema: r#"{"type":"object","properties":{"action":{"type":"string"},"n":{"type":"integer"},"path":{"type":"string"},"text":{"type":"string"}},"required":["action"]}"#.into(),
            output_schema: None,
            max_result_size_chars: Some(100_000),
            should_defer: false,
            always_load: false,
            interrupt_behavior: InterruptBehavior::Cancel,
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            input_roles: InputRoles { paths: vec![], command: None, addresses: vec![] },
            cancels_siblings_on_failure: false,
            reuse_instance: false,
            concurrency_safe_hint: Some(true),
            validates_input: true,
            checks_permissions: true,
        }
    }

    fn is_enabled() -> bool {
        true
    }

    fn is_concurrency_safe(_input: String) -> bool {
        true
    }

    fn is_read_only(_input: String) -> bool {
        true
    }

    fn is_destructive(_input: String) -> bool {
        false
    }

    async fn validate_input(input: String, _ctx: CallContext) -> Result<(), ToolError> {
        // It may wait here too.
        sleep(1).await;
        match field(&input, "action").and_then(|a| a.as_str().map(str::to_owned)) {
            Some(a) if a == "invalid" => {
                Err(ToolError { kind: ErrorKind::InvalidInput, message: "asked to be invalid".into() })
            }
            _ => Ok(()),
        }
    }

    async fn check_permissions(input: String, _ctx: CallContext) -> PermissionDecision {
        sleep(1).await;
        match field(&input, "action").and_then(|a| a.as_str().map(str::to_owned)) {
            Some(a) if a == "denied" => PermissionDecision::Deny("asked to be denied".into()),
            _ => PermissionDecision::Passthrough,
        }
    }

    async fn call(input: String, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let action = field(&input, "action").and_then(|a| a.as_str().map(str::to_owned)).unwrap_or_default();
        let n = field(&input, "n").and_then(|n| n.as_u64()).unwrap_or(3);
        let path = field(&input, "path").and_then(|p| p.as_str().map(str::to_owned)).unwrap_or_default();
        match action.as_str() {
            // Waits on the host between progress reports.
            "ok" => {
                for step in 1..=n {
                    sleep(10).await;
                    progress::report(&format!("step {step}"), None);
                }
                text(format!("{n} steps done in {}", ctx.cwd))
            }
            "read" => read(&path).await.and_then(text),
            "write" => {
                let contents = field(&input, "text").and_then(|t| t.as_str().map(str::to_owned)).unwrap_or_default();
                write(&path, &contents).await?;
                text("written")
            }
            "connect" => connect(&path).await.and_then(|()| text("connected")),
            "fetch" => fetch(&path).await.and_then(text),
            "env" => {
                let names: Vec<String> =
                    wasip3::cli::environment::get_environment().into_iter().map(|(k, _)| k).collect();
                text(names.join(","))
            }
            // `n` waits of 1 ms at once, each a task of its own waiting on
            // a subtask of the host.
            "subtasks" => {
                let done = std::rc::Rc::new(std::cell::Cell::new(0));
                for _ in 0..n {
                    let done = done.clone();
                    wit_bindgen::spawn_local(async move {
                        sleep(1).await;
                        done.set(done.get() + 1);
                    });
                }
                while done.get() < n {
                    sleep(1).await;
                }
                text(format!("{n} waits done"))
            }
            // A host future that outlives every deadline.
            "sleep-forever" => {
                sleep(86_400_000).await;
                text("woke up")
            }
            // A future of its own nothing will ever write.
            "future-never" => {
                let (writer, reader) = wasip3::wit_future::new::<Result<(), ErrorCode>>(|| Ok(()));
                let got = reader.await;
                drop(writer);
                text(format!("got {got:?}"))
            }
            // Futures and streams it never uses, held: each is state in
            // the host, outside its linear memory.
            "handles" => {
                let mut held = Vec::new();
                loop {
                    held.push(wasip3::wit_stream::new::<u8>());
                    held.push(wasip3::wit_stream::new::<u8>());
                    if held.len() % 4096 == 0 {
                        sleep(0).await;
                    }
                }
            }
            "stdout-flood" => stdout(n as usize).await.and_then(text),
            "allocate" => {
                let mut held: Vec<Vec<u8>> = Vec::new();
                loop {
                    held.push(vec![1u8; 1 << 20]);
                    sleep(0).await;
                }
            }
            "spin" => {
                let mut x = 0u64;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            other => Err(ToolError { kind: ErrorKind::InvalidInput, message: format!("unknown action {other:?}") }),
        }
    }
}

export!(AsyncTool);
