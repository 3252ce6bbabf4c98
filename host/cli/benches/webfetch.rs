//! WebFetch against curl: `cargo bench -p toolhost-cli --bench webfetch`.
//!
//! A 1 MB page served on 127.0.0.1 by a server in this process, fetched in
//! the same run by
//! - WebFetch in-process (the library's `Host::call`: a fresh instance, the
//!   policed `wasi:http` client, HTML turned into markdown),
//! - WebFetch of the same size of plain text (the fetch without the
//!   conversion),
//! - `curl -s -o /dev/null` (a new process per fetch, no conversion),
//! - `toolhost call WebFetch` (a new process per fetch, like curl),
//! - WebFetch's conversion compiled natively, on the page in memory (no
//!   fetch): what the markdown costs outside the sandbox.
//!
//! Prints a Markdown table: median and spread (10th–90th percentile) in
//! milliseconds, and each median over curl's.

mod common;

use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::Arc;
use toolhost::grants::Allowance;
use toolhost::{CallOptions, Host, PermissionMode, Settings, ToolUse};

const TOOLHOST: &str = env!("CARGO_BIN_EXE_toolhost");
const ITERATIONS: usize = 40;

fn main() {
    let page = html_page();
    let port = serve(page.clone());
    let html = format!("http://127.0.0.1:{port}/page.html");
    let text = format!("http://127.0.0.1:{port}/page.txt");
    let workspace = toolhost_tests::repo_root().join("target").join("bench-data").join("webfetch");
    std::fs::create_dir_all(&workspace).expect("bench dir");
    let grant = format!("127.0.0.1:{port}");

    let mut settings = Settings::default();
    settings.tool_grants.insert("WebFetch".into(), Allowance { hosts: vec![grant.clone()], ..Allowance::default() });
    let host = Host::builder()
        .workspace(&workspace)
        .plugins_dir(None)
        .mode(PermissionMode::BypassPermissions)
        .settings(settings)
        .data_dir(workspace.join("data"))
        .cache_dir(Some(toolhost_tests::shared_cache_dir()))
        .build()
        .expect("host");
    let session = host.session("bench").expect("session");
    let fetch = |url: &str| {
        let tool_use =
            ToolUse { id: "toolu_bench".into(), name: "WebFetch".into(), input: json!({"url": url, "prompt": "p"}) };
        let result = host.call(&session, &tool_use, &CallOptions::default());
        assert!(!result.is_error, "{}", result.text());
        result
    };
    let markdown = fetch(&html).text().len();

    let curl = |url: &str| {
        let status = Command::new("curl").args(["-s", "-o", "/dev/null", url]).status().expect("curl");
        assert!(status.success());
    };
    let settings_json = json!({"toolGrants": {"WebFetch": {"hosts": [grant]}}}).to_string();
    let call = |url: &str| {
        let input = json!({"url": url, "prompt": "p"}).to_string();
        let out = Command::new(TOOLHOST)
            .arg("--workspace")
            .arg(&workspace)
            .arg("--plugins")
            .arg(workspace.join("plugins"))
            .args(["--mode", "bypassPermissions", "--settings", &settings_json, "call", "WebFetch", &input])
            .output()
            .expect("toolhost");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };

    let rows = [
        ("WebFetch, 1 MB HTML → markdown (in-process)", common::time(2, ITERATIONS, || drop(fetch(&html)))),
        ("WebFetch, 1 MB plain text (in-process)", common::time(2, ITERATIONS, || drop(fetch(&text)))),
        ("curl -s -o /dev/null, 1 MB", common::time(2, ITERATIONS, || curl(&html))),
        ("toolhost call WebFetch, 1 MB HTML (a process per fetch)", common::time(2, ITERATIONS, || call(&html))),
        ("WebFetch's HTML → markdown natively, no fetch", common::time(2, ITERATIONS, || native(&page))),
    ];
    let curl_p50 = rows[2].1.p50;
    println!("WebFetch of a 1 MB local page ({markdown} bytes of result), {ITERATIONS} runs each\n");
    println!("| fetch | median ms | p10–p90 ms | median / curl |");
    println!("|---|---|---|---|");
    for (name, s) in rows {
        let ms = |us: f64| us / 1e3;
        println!("| {name} | {:.2} | {:.2}–{:.2} | {:.2}× |", ms(s.p50), ms(s.p10), ms(s.p90), s.p50 / curl_p50);
    }
}

/// The 1 MB HTML page: headings, paragraphs, bold text, links.
fn html_page() -> String {
    let mut html = String::from("<!doctype html><html><head><title>Bench</title></head><body>\n");
    while html.len() < 1 << 20 {
        html.push_str(
            "<h2>Section</h2><p>Lorem ipsum <b>dolor</b> sit amet, <a href=\"/x\">consectetur</a> elit.</p>\n",
        );
    }
    html.push_str("</body></html>\n");
    html
}

/// What WebFetch makes of the page, natively.
fn native(page: &str) -> String {
    use toolhost_plugin_webfetch::{MAX_CONTENT_CHARS, content, page_part};
    let rendered = content::render(Some("text/html"), None, page.as_bytes(), MAX_CONTENT_CHARS + 1);
    page_part(&rendered, 0).unwrap_or_default()
}

/// A server on 127.0.0.1 answering every request with a 1 MB page: `html`
/// for `/page.html`, plain text otherwise. Returns its port.
fn serve(html: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("port").port();
    let text: String = "lorem ipsum dolor sit amet consectetur\n".repeat((1 << 20) / 39);
    let pages = Arc::new((html, text));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let pages = Arc::clone(&pages);
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let html = String::from_utf8_lossy(&request).contains("/page.html");
                let (body, kind) = if html { (&pages.0, "text/html") } else { (&pages.1, "text/plain") };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(body.as_bytes());
            });
        }
    });
    port
}
