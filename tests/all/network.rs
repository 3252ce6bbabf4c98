//! The policed network: a third-party tool's HTTP requests and TCP connects
//! reach only the hosts it was granted, never a loopback, private or
//! link-local address unless granted by address (also not by a name that
//! resolves to one, nor by a redirect to one), and get bounded responses
//! within bounded times.

use crate::support::*;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use toolhost_tests::FETCHER;

/// An HTTP/1.1 server on 127.0.0.1 with fixed routes, counting the
/// connections it accepted.
pub struct TestServer {
    pub port: u16,
    pub connections: Arc<AtomicUsize>,
}

impl TestServer {
    pub fn start() -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the test server");
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&connections);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                counted.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || serve(stream, port));
            }
        });
        TestServer { port, connections }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// The page the HTML routes serve: a title, a list, a link, a script.
pub const PAGE: &str = "<!doctype html><html><head><title>Test page</title><style>body{color:red}</style>\
<script>var secret = 1;</script></head><body><h1>Toolhost test page</h1><p>Some <b>bold</b> text and a \
<a href=\"/hello\">link</a>.</p><ul><li>first</li><li>second</li></ul></body></html>";

fn serve(mut stream: TcpStream, port: u16) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        if request.starts_with(b"hello\n") {
            let _ = stream.write_all(b"hi\n");
            return;
        }
        if request.starts_with(b"silent\n") {
            std::thread::sleep(Duration::from_secs(30));
            return;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&request).into_owned();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    let respond = |stream: &mut TcpStream, status: &str, headers: &str, body: &[u8]| {
        let head = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n{headers}\r\n", body.len());
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(body);
    };
    match path.as_str() {
        "/hello" => respond(&mut stream, "200 OK", "content-type: text/plain\r\n", b"hello from the test server"),
        "/page.html" => respond(&mut stream, "200 OK", "content-type: text/html; charset=utf-8\r\n", PAGE.as_bytes()),
        "/big.html" => {
            let mut page = String::from("<html><body>");
            while page.len() < 1 << 20 {
                page.push_str("<p>Lorem ipsum dolor sit amet, <em>consectetur</em> adipiscing elit.</p>\n");
            }
            page.push_str("</body></html>");
            respond(&mut stream, "200 OK", "content-type: text/html\r\n", page.as_bytes())
        }
        "/data.json" => respond(&mut stream, "200 OK", "content-type: application/json\r\n", br#"{"answer":42}"#),
        "/image.png" => {
            respond(&mut stream, "200 OK", "content-type: image/png\r\n", &[0x89, b'P', b'N', b'G', 0, 1, 2])
        }
        "/redirect-in" => respond(&mut stream, "302 Found", "location: /hello\r\n", b""),
        "/redirect-out" => {
            let to = format!("location: http://127.0.0.2:{port}/hello\r\n");
            respond(&mut stream, "302 Found", &to, b"")
        }
        "/metadata" => respond(&mut stream, "302 Found", "location: http://169.254.169.254/latest/meta-data/\r\n", b""),
        "/missing" => respond(&mut stream, "404 Not Found", "content-type: text/plain\r\n", b"no such page"),
        "/huge-declared" => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 40000000\r\nconnection: close\r\n\r\n");
        }
        "/huge" => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n");
            let chunk = vec![b'x'; 1 << 16];
            for _ in 0..(40 << 4) {
                if stream.write_all(&chunk).is_err() {
                    return;
                }
            }
        }
        "/silent" => std::thread::sleep(Duration::from_secs(30)),
        // A body a byte at a time, never finished within a call's time.
        "/drip" => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\nconnection: close\r\n\r\n");
            for _ in 0..300 {
                if stream.write_all(b"x").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        // A head that never ends.
        "/endless-head" => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\n");
            for _ in 0..100_000 {
                if stream.write_all(b"x-filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n").is_err() {
                    return;
                }
            }
        }
        // Not HTTP at all.
        "/garbage" => {
            let _ = stream.write_all(b"\xff\xfeNOT HTTP\r\n\r\n");
        }
        _ => respond(&mut stream, "404 Not Found", "", b""),
    }
}

fn hosts(list: &[&str]) -> String {
    json!({"toolGrants": {"Fetcher": {"hosts": list}}}).to_string()
}

/// Calls Fetcher with `input` and `settings`; the result's text and whether
/// it was an error.
fn fetcher(sb: &Sandbox, input: Value, settings: Option<&str>, extra: &[&str]) -> (String, bool) {
    let mut args = vec!["--allow", "Fetcher"];
    if let Some(s) = settings {
        args.extend(["--settings", s]);
    }
    args.extend_from_slice(extra);
    let run = call(sb, "Fetcher", &input, &args);
    (run.text(), run.is_error())
}

fn get(url: &str) -> Value {
    json!({"action": "get", "target": url})
}

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.install(FETCHER);
    sb
}

#[test]
fn without_a_grant_nothing_is_reached() {
    let (sb, server) = (sandbox(), TestServer::start());
    let (text, error) = fetcher(&sb, get(&server.url("/hello")), None, &[]);
    assert!(error, "{text}");
    assert!(text.contains(&format!("127.0.0.1:{} is not a host this tool was granted", server.port)), "{text}");
    assert!(text.contains("Fetcher requested what it was not granted: host *"), "{text}");
    let (text, error) =
        fetcher(&sb, json!({"action": "connect", "target": format!("127.0.0.1:{}", server.port)}), None, &[]);
    assert!(error && text.starts_with("refused"), "{text}");
    assert_eq!(server.connections(), 0, "nothing reached the server");
}

#[test]
fn public_hosts_only_reach_no_private_address_by_any_spelling() {
    let (sb, server) = (sandbox(), TestServer::start());
    let settings = hosts(&["*"]);
    let port = server.port;
    for (url, kind) in [
        (server.url("/hello"), "loopback"),
        (format!("http://[::1]:{port}/hello"), "loopback"),
        (format!("http://[::ffff:127.0.0.1]:{port}/hello"), "loopback"),
        (format!("http://localhost:{port}/hello"), "loopback"),
        ("http://169.254.169.254/latest/meta-data/".to_string(), "link-local"),
        ("http://10.0.0.1/".to_string(), "private"),
        ("http://0.0.0.0/".to_string(), "unspecified"),
    ] {
        let (text, error) = fetcher(&sb, get(&url), Some(&settings), &[]);
        assert!(error, "{url}: {text}");
        assert!(text.contains(&format!("a {kind}")), "{url}: {text}");
        assert!(text.contains("reached only when granted by address"), "{url}: {text}");
    }
    let target = format!("127.0.0.1:{port}");
    let (text, error) = fetcher(&sb, json!({"action": "connect", "target": target}), Some(&settings), &[]);
    assert!(error && text.starts_with("refused"), "{text}");
    assert_eq!(server.connections(), 0, "nothing reached the server");
}

#[test]
fn a_granted_address_is_reached_and_each_redirect_is_checked() {
    let (sb, server) = (sandbox(), TestServer::start());
    let settings = hosts(&[&format!("127.0.0.1:{}", server.port)]);
    let s = Some(settings.as_str());
    let (text, error) = fetcher(&sb, get(&server.url("/hello")), s, &[]);
    assert!(!error, "{text}");
    assert_eq!(text, "status 200, 26 bytes: hello from the test server");
    let follow = |path: &str| json!({"action": "get", "target": server.url(path), "follow": 3});
    let (text, _) = fetcher(&sb, follow("/redirect-in"), s, &[]);
    assert_eq!(text, "status 200, 26 bytes: hello from the test server", "a redirect on the granted host");
    // Each hop is a request of its own: another address, or the cloud
    // metadata address, is refused however the tool got there.
    let (text, error) = fetcher(&sb, follow("/redirect-out"), s, &[]);
    assert!(
        error && text.contains(&format!("127.0.0.2:{} is not a host this tool was granted", server.port)),
        "{text}"
    );
    let (text, error) = fetcher(&sb, follow("/metadata"), s, &[]);
    assert!(error && text.contains("169.254.169.254:80 is not a host this tool was granted"), "{text}");
    // Another port of the same address is another host.
    let (text, error) = fetcher(&sb, get(&format!("http://127.0.0.1:{}/", server.port + 1)), s, &[]);
    assert!(error && text.contains("is not a host this tool was granted"), "{text}");
    // A plain TCP connect follows the same grant.
    let connect = |target: String| json!({"action": "connect", "target": target});
    let (text, error) = fetcher(&sb, connect(format!("127.0.0.1:{}", server.port)), s, &[]);
    assert!(!error, "{text}");
    assert_eq!(text, "CONNECTED: hi\n");
    let (text, error) = fetcher(&sb, connect(format!("127.0.0.1:{}", server.port + 1)), s, &[]);
    assert!(error && text.starts_with("refused"), "{text}");
}

#[test]
fn responses_are_capped_in_size_and_time() {
    let (sb, server) = (sandbox(), TestServer::start());
    let settings = hosts(&[&format!("127.0.0.1:{}", server.port)]);
    let s = Some(settings.as_str());
    let (text, error) = fetcher(&sb, get(&server.url("/huge-declared")), s, &[]);
    assert!(error && text.contains("HttpResponseBodySize(Some(40000000))"), "{text}");
    // Sent without a length: cut once past the cap.
    let (text, error) = fetcher(&sb, get(&server.url("/huge")), s, &[]);
    assert!(
        error && text.contains("body failed after") && text.contains("body size exceeds limit: 33554432 bytes"),
        "{text}"
    );
    let bytes: u64 = text.split("after ").nth(1).and_then(|t| t.split(' ').next()).unwrap().parse().unwrap();
    assert!(bytes <= 32 << 20, "{bytes} bytes reached the guest");
    // A server that never answers: the guest's own wait, then the call's
    // deadline, end it.
    let silent = json!({"action": "get", "target": server.url("/silent"), "first_byte_ms": 300});
    let (text, error) = fetcher(&sb, silent, s, &[]);
    assert!(error && text.contains("ConnectionReadTimeout"), "{text}");
    let started = std::time::Instant::now();
    let (text, error) = fetcher(&sb, get(&server.url("/silent")), s, &["--timeout-ms", "1000"]);
    assert!(error && text.contains("timed out after 1000 ms"), "{text}");
    // The same on a plain socket, blocked reading an answer that never comes.
    let target = format!("127.0.0.1:{}", server.port);
    let silent = json!({"action": "connect", "target": target, "send": "silent"});
    let (text, error) = fetcher(&sb, silent, s, &["--timeout-ms", "1000"]);
    assert!(error && text.contains("timed out after 1000 ms"), "{text}");
    // A body that drips: the call's deadline holds while bytes arrive.
    let (text, error) = fetcher(&sb, get(&server.url("/drip")), s, &["--timeout-ms", "1500"]);
    assert!(error && text.contains("timed out after 1500 ms"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(30), "the calls ended at their deadlines");
    // A head without end, and an answer that is not HTTP: refused at once.
    let (text, error) = fetcher(&sb, get(&server.url("/endless-head")), s, &[]);
    assert!(error && text.contains("refused: ErrorCode::HttpProtocolError"), "{text}");
    let (text, error) = fetcher(&sb, get(&server.url("/garbage")), s, &[]);
    assert!(error && text.contains("refused: ErrorCode::HttpProtocolError"), "{text}");
}
