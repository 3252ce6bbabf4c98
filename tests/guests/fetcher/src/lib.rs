//! A third-party tool that requests any public host and uses the network
//! directly, the way an attacker would: `wasi:http` requests (following
//! redirects itself when asked, so each hop is a new request the host
//! checks) and plain TCP connects. Tests grant part of it and check what
//! gets through.

use toolhost_sdk::{Context, Deserialize, JsonSchema, Output, Tool, ToolError, export_tool, requests};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, OutgoingRequest, RequestOptions, Scheme};
use wasip2::io::streams::StreamError;

requests!(r#"{"hosts": ["*"]}"#);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FetcherInput {
    /// `get` (an HTTP GET of `target`, a URL) or `connect` (a TCP connect
    /// to `target`, `host:port`, which sends a line and reads the answer).
    action: String,
    target: String,
    /// Redirects to follow (`get`).
    #[serde(default)]
    follow: u32,
    /// The guest's own first-byte timeout, in milliseconds (`get`).
    #[serde(default)]
    first_byte_ms: Option<u64>,
    /// The line `connect` sends (`hello` by default).
    #[serde(default)]
    send: Option<String>,
}

struct Fetcher;

impl Tool for Fetcher {
    type Input = FetcherInput;
    const NAME: &'static str = "Fetcher";
    const DESCRIPTION: &'static str = "Fetches and connects wherever it is told to.";

    fn call(input: FetcherInput, _ctx: &Context) -> Result<Output, ToolError> {
        match input.action.as_str() {
            "get" => get(&input.target, input.follow, input.first_byte_ms).map(Output::text).map_err(ToolError::io),
            "connect" => connect(&input.target, input.send.as_deref().unwrap_or("hello"))
                .map(Output::text)
                .map_err(|e| ToolError::io(format!("refused: {e}"))),
            other => Err(ToolError::invalid_input(format!("unknown action `{other}`"))),
        }
    }
}

fn get(target: &str, follow: u32, first_byte_ms: Option<u64>) -> Result<String, String> {
    let url = url::Url::parse(target).map_err(|e| e.to_string())?;
    let request = OutgoingRequest::new(Fields::new());
    let scheme = match url.scheme() {
        "https" => Scheme::Https,
        _ => Scheme::Http,
    };
    request.set_scheme(Some(&scheme)).map_err(|()| "scheme")?;
    let authority = match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_string(),
    };
    request.set_authority(Some(&authority)).map_err(|()| "authority")?;
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    request.set_path_with_query(Some(&path)).map_err(|()| "path")?;
    let options = first_byte_ms.map(|ms| {
        let o = RequestOptions::new();
        let _ = o.set_first_byte_timeout(Some(ms * 1_000_000));
        o
    });
    let future = outgoing_handler::handle(request, options).map_err(|e| format!("refused: {e:?}"))?;
    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(r))) => r,
        Some(Ok(Err(e))) => return Err(format!("refused: {e:?}")),
        other => return Err(format!("no response: {other:?}")),
    };
    let status = response.status();
    let location = response.headers().get("location").first().map(|v| String::from_utf8_lossy(v).into_owned());
    if let (300..=399, Some(location), true) = (status, &location, follow > 0) {
        let next = url.join(location).map_err(|e| e.to_string())?;
        return get(next.as_str(), follow - 1, first_byte_ms);
    }
    let body = response.consume().map_err(|()| "no body")?;
    let stream = body.stream().map_err(|()| "no stream")?;
    let mut bytes = 0usize;
    let mut head = Vec::new();
    loop {
        match stream.blocking_read(1 << 16) {
            Ok(chunk) => {
                bytes += chunk.len();
                if head.len() < 200 {
                    head.extend(chunk.iter().take(200 - head.len()));
                }
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                let code = wasip2::http::types::http_error_code(&e);
                return Err(format!("body failed after {bytes} bytes: {code:?} {}", e.to_debug_string()));
            }
        }
    }
    Ok(format!("status {status}, {bytes} bytes: {}", String::from_utf8_lossy(&head)))
}

fn connect(target: &str, line: &str) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(target)?;
    stream.write_all(format!("{line}\n").as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(format!("CONNECTED: {answer}"))
}

export_tool!(Fetcher);
