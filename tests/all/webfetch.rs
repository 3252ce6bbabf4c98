//! WebFetch, the built-in, over the policed network: a local page the test
//! grants by address comes back as markdown; private addresses are refused
//! without a grant; same-host redirects are followed and others reported;
//! `WebFetch(domain:…)` rules decide.

use crate::network::TestServer;
use crate::support::*;
use serde_json::json;

/// The settings that grant WebFetch the test server's address.
fn granted(server: &TestServer) -> String {
    json!({"toolGrants": {"WebFetch": {"hosts": [format!("127.0.0.1:{}", server.port)]}}}).to_string()
}

fn fetch(sb: &Sandbox, url: &str, settings: Option<&str>, extra: &[&str]) -> Run {
    let mut args = vec!["--allow", "WebFetch(domain:127.0.0.1)"];
    if let Some(s) = settings {
        args.extend(["--settings", s]);
    }
    args.extend_from_slice(extra);
    call(sb, "WebFetch", &json!({"url": url, "prompt": "What is the title?"}), &args)
}

#[test]
fn a_granted_local_page_comes_back_as_markdown_with_the_prompt() {
    let (sb, server) = (Sandbox::new(), TestServer::start());
    let settings = granted(&server);
    let run = fetch(&sb, &server.url("/page.html"), Some(&settings), &[]);
    let text = run.assert_ok();
    assert!(text.contains(&format!("URL: {}", server.url("/page.html"))), "{text}");
    assert!(text.contains("Status: 200 OK"), "{text}");
    assert!(text.contains("apply this prompt to the content below yourself: What is the title?"), "{text}");
    for markdown in ["# Toolhost test page", "**bold**", "[link](/hello)", "first", "second"] {
        assert!(text.contains(markdown), "{markdown:?} in {text}");
    }
    assert!(!text.contains("secret") && !text.contains("color:red"), "scripts and styles are dropped: {text}");
    assert!(run.json()["usage"]["output_bytes"].as_u64().unwrap() > 0, "{}", run.stdout);

    // Other kinds of content.
    assert!(fetch(&sb, &server.url("/data.json"), Some(&settings), &[]).assert_ok().contains(r#"{"answer":42}"#));
    let image = fetch(&sb, &server.url("/image.png"), Some(&settings), &[]).assert_ok();
    assert!(image.contains("binary content of type image/png"), "{image}");
}

#[test]
fn redirects_stay_on_the_host_and_errors_are_clear() {
    let (sb, server) = (Sandbox::new(), TestServer::start());
    let settings = granted(&server);
    let s = Some(settings.as_str());
    let text = fetch(&sb, &server.url("/redirect-in"), s, &[]).assert_ok();
    assert!(text.contains("hello from the test server") && text.contains(&server.url("/hello")), "{text}");
    // To another host: reported, with the URL to fetch next, not followed.
    let text = fetch(&sb, &server.url("/redirect-out"), s, &[]).assert_ok();
    assert!(text.contains("REDIRECT DETECTED: The URL redirects to a location that was not fetched"), "{text}");
    assert!(text.contains(&format!("not verified): http://127.0.0.2:{}/hello\n", server.port)), "{text}");
    // An error status is a result, not an error of the call.
    let text = fetch(&sb, &server.url("/missing"), s, &[]).assert_ok();
    assert!(text.starts_with("The server returned HTTP 404 Not Found."), "{text}");
    fetch(&sb, &server.url("/huge-declared"), s, &[]).assert_error("too large");
    fetch(&sb, "ftp://example.com/file", s, &[]).assert_error("only http and https");
    // http is upgraded to https for a name (which cannot be resolved here).
    fetch(&sb, "http://nowhere.invalid/page", s, &["--allow", "WebFetch"]).assert_error("https://nowhere.invalid/page");
}

#[test]
fn private_addresses_need_a_grant_and_rules_decide() {
    let (sb, server) = (Sandbox::new(), TestServer::start());
    // By default WebFetch reaches public hosts only.
    let text = fetch(&sb, &server.url("/hello"), None, &[]).assert_error("a loopback address");
    assert!(text.contains(&format!("granted by address (\"127.0.0.1:{}\")", server.port)), "{text}");
    fetch(&sb, "http://169.254.169.254/latest/meta-data/", None, &["--allow", "WebFetch"]).assert_error("link-local");
    assert_eq!(server.connections(), 0, "nothing reached the server");
    // A deny rule wins over the grant; without an allow rule the call asks
    // (and, with no one to ask, is refused), suggesting the domain rule.
    let settings = granted(&server);
    let input = json!({"url": server.url("/hello"), "prompt": "p"});
    call(&sb, "WebFetch", &input, &["--settings", &settings, "--deny", "WebFetch(domain:127.0.0.1)"])
        .assert_error("WebFetch(domain:127.0.0.1)");
    let run = call(&sb, "WebFetch", &input, &["--settings", &settings]);
    assert!(run.is_error(), "{run:?}");
    assert!(
        run.stdout.contains("WebFetch(domain:127.0.0.1)") || run.stderr.contains("WebFetch(domain:127.0.0.1)"),
        "{run:?}"
    );
    assert_eq!(server.connections(), 0, "nothing reached the server");
}
