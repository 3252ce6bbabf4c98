//! Peers toolhost talks to, written to misbehave: an OCI registry and a
//! Redis whose replies never end, drip a byte at a time, claim a terabyte,
//! nest a million deep, redirect forever or are not what they say. Each is
//! refused with a clear message, within the size caps and the deadlines,
//! and the host is never the one that ends up waiting or out of memory.
//! (The MCP server that writes what is not a message is in `mcp_servers`;
//! the guest on the async ABI in `host_faults`.)

use crate::support::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a hostile peer goes on at most (each loop of theirs is bounded).
const PEER_LIFETIME: Duration = Duration::from_secs(30);
/// What a refused pull may take beyond its `--pull-timeout` on a loaded
/// machine (process start included); an unbounded read would never end.
const SLACK: Duration = Duration::from_secs(20);

type Answer = dyn Fn(&str, &mut TcpStream, u16) + Send + Sync;

/// A server on a loopback port that answers each request's path with
/// `answer`, one thread per connection, until dropped.
struct Peer {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Peer {
    fn start(answer: impl Fn(&str, &mut TcpStream, u16) + Send + Sync + 'static) -> Peer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let answer: Arc<Answer> = Arc::new(answer);
        let stopped = Arc::clone(&stop);
        std::thread::spawn(move || {
            let began = Instant::now();
            while !stopped.load(Ordering::Relaxed) && began.elapsed() < PEER_LIFETIME * 4 {
                match listener.accept() {
                    Ok((mut socket, _)) => {
                        let answer = Arc::clone(&answer);
                        std::thread::spawn(move || {
                            socket.set_nonblocking(false).unwrap();
                            socket.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                            while let Some(path) = request_path(&mut socket) {
                                answer(&path, &mut socket, port);
                            }
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Peer { port, stop }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The path of the next HTTP request on `socket` (its head read whole).
fn request_path(socket: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if socket.read(&mut byte).ok()? == 0 || head.len() > 64 << 10 {
            return None;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    head.split_whitespace().nth(1).map(str::to_owned)
}

fn head(socket: &mut TcpStream, status: &str, headers: &[(&str, String)]) -> bool {
    let mut text = format!("HTTP/1.1 {status}\r\n");
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str("\r\n");
    socket.write_all(text.as_bytes()).is_ok()
}

fn whole(socket: &mut TcpStream, content_type: &str, body: &[u8]) {
    let headers = [("Content-Type", content_type.to_string()), ("Content-Length", body.len().to_string())];
    if head(socket, "200 OK", &headers) {
        let _ = socket.write_all(body);
    }
}

/// Sends `chunk` every `every` until the peer's lifetime or the reader's
/// end; a body without a length, ended by closing.
fn endless(socket: &mut TcpStream, chunk: &[u8], every: Duration) {
    let began = Instant::now();
    while began.elapsed() < PEER_LIFETIME {
        if socket.write_all(chunk).is_err() {
            return;
        }
        std::thread::sleep(every);
    }
    let _ = socket.shutdown(std::net::Shutdown::Both);
}

const MANIFEST_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

/// A manifest whose one wasm layer is `blob` (its digest), `size` bytes.
fn manifest(blob: &[u8], size: usize) -> Vec<u8> {
    let config = b"{}";
    serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": "application/vnd.wasm.config.v0+json",
            "digest": format!("sha256:{}", toolhost::content_hash(config)), "size": config.len()},
        "layers": [{"mediaType": "application/wasm",
            "digest": format!("sha256:{}", toolhost::content_hash(blob)), "size": size}],
    }))
    .unwrap()
}

/// A registry whose manifest names `blob` as its component, and whose
/// every other path (the blob's) `blob_answer` answers.
fn component_at(blob: &[u8], blob_answer: impl Fn(&str, &mut TcpStream) + Send + Sync + 'static) -> Peer {
    let listed = manifest(blob, blob.len());
    Peer::start(move |path, socket, _| match path.contains("/manifests/") {
        true => whole(socket, MANIFEST_TYPE, &listed),
        false => blob_answer(path, socket),
    })
}

/// `toolhost install oci://…/tools/x:1.0` against `peer`, pull timeout
/// `timeout` seconds: what it printed, and how long it took.
fn install(peer: &Peer, timeout: u64) -> (Run, Duration) {
    let sb = Sandbox::new();
    let source = format!("oci://127.0.0.1:{}/tools/x:1.0", peer.port);
    let started = Instant::now();
    let out = toolhost(&sb, &["install", &source, "--yes", "--pull-timeout", &timeout.to_string()]);
    let took = started.elapsed();
    assert_ne!(out.code, 0, "a hostile registry's component was installed: {out:?}");
    (out, took)
}

#[test]
fn a_registry_whose_replies_never_end_is_refused_at_a_cap() {
    // A manifest that never ends.
    let peer = Peer::start(|_, socket, _| {
        if head(socket, "200 OK", &[("Content-Type", MANIFEST_TYPE.into())]) {
            endless(socket, &[b' '; 64 << 10], Duration::ZERO);
        }
    });
    let (out, took) = install(&peer, 60);
    assert!(out.stderr.contains("the manifest 1.0 is larger than 4194304 bytes"), "{out:?}");
    assert!(took < Duration::from_secs(60), "stopped by the cap, not the deadline: {took:?}");
    // One that claims a terabyte.
    let peer = Peer::start(|_, socket, _| {
        let headers = [("Content-Type", MANIFEST_TYPE.to_string()), ("Content-Length", (1u64 << 40).to_string())];
        if head(socket, "200 OK", &headers) {
            endless(socket, b"{", Duration::from_millis(10));
        }
    });
    let (out, _) = install(&peer, 60);
    assert!(out.stderr.contains("is 1099511627776 bytes, more than the 4194304"), "{out:?}");
    // A blob that goes on past the size its manifest declared.
    let peer = component_at(&[b'x'; 1000], |_, socket| {
        if head(socket, "200 OK", &[("Content-Type", "application/wasm".into())]) {
            endless(socket, &[b'x'; 4096], Duration::ZERO);
        }
    });
    let (out, _) = install(&peer, 60);
    assert!(out.stderr.contains("the component is larger than 1000 bytes"), "{out:?}");
    // A token service that never ends its reply.
    let peer = Peer::start(|path, socket, port| {
        if path.starts_with("/token") {
            if head(socket, "200 OK", &[("Content-Type", "application/json".into())]) {
                endless(socket, &[b' '; 8192], Duration::ZERO);
            }
        } else {
            let challenge = format!("Bearer realm=\"http://127.0.0.1:{port}/token\",service=\"hostile\"");
            let headers = [("WWW-Authenticate", challenge), ("Content-Length", "0".into())];
            head(socket, "401 Unauthorized", &headers);
        }
    });
    let (out, _) = install(&peer, 60);
    assert!(out.stderr.contains("a token for the manifest 1.0 is larger than 65536 bytes"), "{out:?}");
}

#[test]
fn a_registry_that_drips_meets_the_pulls_deadline() {
    // A manifest a byte at a time.
    let peer = Peer::start(|_, socket, _| {
        let headers = [("Content-Type", MANIFEST_TYPE.to_string()), ("Content-Length", "100000".into())];
        if head(socket, "200 OK", &headers) {
            endless(socket, b" ", Duration::from_millis(50));
        }
    });
    let (out, took) = install(&peer, 3);
    assert!(out.stderr.contains("the pull did not finish within 3 s (reading the manifest 1.0)"), "{out:?}");
    assert!(took < Duration::from_secs(3) + SLACK, "{took:?}");
    // The component, ten bytes a tenth of a second: progress, then the deadline.
    let peer = component_at(&[b'x'; 100_000], |_, socket| {
        let headers = [("Content-Type", "application/wasm".to_string()), ("Content-Length", "100000".into())];
        if head(socket, "200 OK", &headers) {
            endless(socket, &[b'x'; 10], Duration::from_millis(100));
        }
    });
    let (out, took) = install(&peer, 3);
    assert!(out.stderr.contains("pulling the component (97.7 KiB)"), "progress is shown: {out:?}");
    assert!(out.stderr.contains("the pull did not finish within 3 s (reading the component)"), "{out:?}");
    assert!(took < Duration::from_secs(3) + SLACK, "{took:?}");
}

#[test]
fn a_registry_that_answers_nonsense_is_refused_clearly() {
    // A million-deep manifest.
    let deep = Arc::new(vec![b'['; 1_000_000]);
    let peer = Peer::start(move |_, socket, _| whole(socket, MANIFEST_TYPE, &deep[..]));
    let (out, _) = install(&peer, 30);
    assert!(out.stderr.contains("the manifest is not one (recursion limit exceeded"), "{out:?}");
    // Garbage.
    let peer = Peer::start(|_, socket, _| whole(socket, MANIFEST_TYPE, b"\xff\xfe not json"));
    let (out, _) = install(&peer, 30);
    assert!(out.stderr.contains("the manifest is not one"), "{out:?}");
    // A blob that redirects to itself.
    let peer = component_at(&[b'x'; 10], |path, socket| {
        head(socket, "302 Found", &[("Location", path.to_string()), ("Content-Length", "0".into())]);
    });
    let (out, _) = install(&peer, 30);
    assert!(out.stderr.contains("reading the component") && out.stderr.contains("redirect"), "{out:?}");
    // An error whose message is endless: its first part is the message.
    let peer = Peer::start(|_, socket, _| {
        if head(socket, "403 Forbidden", &[("Content-Type", "application/json".into())]) {
            let _ = socket.write_all(br#"{"errors":[{"code":"DENIED","message":"go away"}]}"#);
            endless(socket, &[b' '; 8192], Duration::ZERO);
        }
    });
    let (out, _) = install(&peer, 30);
    assert!(out.stderr.contains("the registry answered 403 Forbidden"), "{out:?}");
}

/// A Redis that answers every command with `head`, then `then` every
/// `every` (bounded by the peer's lifetime).
fn hostile_redis(head: &'static [u8], then: &'static [u8], every: Duration) -> Peer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    std::thread::spawn(move || {
        let began = Instant::now();
        while !stopped.load(Ordering::Relaxed) && began.elapsed() < PEER_LIFETIME * 4 {
            let Ok((mut socket, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            std::thread::spawn(move || {
                socket.set_nonblocking(false).unwrap();
                let mut request = [0u8; 4096];
                if socket.read(&mut request).unwrap_or(0) == 0 || socket.write_all(head).is_err() {
                    return;
                }
                endless(&mut socket, then, every);
            });
        }
    });
    Peer { port, stop }
}

#[test]
fn a_redis_whose_reply_never_ends_or_drips_is_refused_within_its_bounds() {
    static MIB: [u8; 1 << 20] = [b'x'; 1 << 20];
    // An element of 64 KiB, as a bulk string.
    let element: &'static [u8] = {
        let mut bytes = b"$65536\r\n".to_vec();
        bytes.extend(std::iter::repeat_n(b'y', 65536));
        bytes.extend(b"\r\n");
        Vec::leak(bytes)
    };
    let cases: [(&[u8], &[u8], Duration, &str); 3] = [
        // A bulk string that claims a terabyte, then streams.
        (b"$1099511627776\r\n", &MIB, Duration::ZERO, "more than 16777216 bytes"),
        // A reply a byte at a time.
        (b"$100000\r\n", b"x", Duration::from_millis(50), "did not finish its reply within 2000 ms"),
        // An array that claims a billion elements, and keeps sending them.
        (b"*1000000000\r\n", element, Duration::ZERO, "more than 16777216 bytes"),
    ];
    for (first, then, every, want) in cases {
        let peer = hostile_redis(first, then, every);
        let sb = Sandbox::new();
        let started = Instant::now();
        let out = toolhost(&sb, &["--state", &format!("redis://127.0.0.1:{}/0", peer.port), "tools"]);
        assert_ne!(out.code, 0, "{out:?}");
        assert!(out.stderr.contains("opening the state store") && out.stderr.contains(want), "{want}: {out:?}");
        assert!(started.elapsed() < SLACK, "{want}: {:?}", started.elapsed());
    }
}
