//! The `WebFetch` tool: fetches a URL over `wasi:http` and returns the page
//! (HTML turned into markdown) with the prompt, for the caller to apply.
//!
//! The host runs no model, so where Claude Code would summarise the page
//! with a small model, this tool hands the content and the prompt back
//! together. What is reachable is the host's business: every request goes
//! through its `wasi:http` implementation, which checks the grants.

use std::time::Instant;
use toolhost_sdk::{
    Context, Deserialize, ErrorKind, InterruptBehavior, JsonSchema, Output, Permission, Tool, ToolError, export_tool,
    serde_json,
};
use url::{Host, Url};

pub mod content;
pub mod http;

/// Longest URL accepted, in characters.
pub const MAX_URL_CHARS: usize = 2000;
/// Redirects followed at most (same host only).
pub const MAX_REDIRECTS: usize = 10;
/// Largest body read, in bytes.
pub const MAX_BODY_BYTES: u64 = 10 * 1024 * 1024;
/// Characters of content returned at most.
pub const MAX_CONTENT_CHARS: usize = 100_000;

toolhost_sdk::requests!(r#"{"hosts":["*"]}"#);

/// Input of `WebFetch`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebFetchInput {
    /// The URL to fetch content from
    #[schemars(url)]
    pub url: String,
    /// The prompt to run on the fetched content
    pub prompt: String,
    /// Character position in the page text to start reading from. Use it to read on through a page too long for one call, with the value the previous result gave.
    #[schemars(range(min = 0))]
    pub offset: Option<u64>,
}

pub struct WebFetch;

impl Tool for WebFetch {
    type Input = WebFetchInput;
    const NAME: &'static str = "WebFetch";
    const DESCRIPTION: &'static str =
        "Fetches a web page and returns its content as markdown, together with the prompt to apply to it.";
    const ADDRESS_FIELDS: &'static [&'static str] = &["url"];
    const READ_ONLY_HINT: Option<bool> = Some(true);
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(true);
    // A fetch changes nothing: stopping it midway is harmless.
    const INTERRUPT_BEHAVIOR: InterruptBehavior = InterruptBehavior::Cancel;
    // WebFetch bounds its own result (a short header and at most
    // MAX_CONTENT_CHARS of content); persisting it to a file would only
    // hide the header behind a preview.
    const MAX_RESULT_SIZE_CHARS: Option<u64> = None;

    fn prompt() -> String {
        include_str!("prompt.md").to_string()
    }
    fn search_hint() -> Option<String> {
        Some("fetch web page url http download read website".into())
    }
    fn is_read_only(_: &WebFetchInput) -> bool {
        true
    }
    fn validate_input(input: &WebFetchInput, _: &Context) -> Result<(), ToolError> {
        parse_url(&input.url).map(drop)
    }

    fn check_permissions(input: &WebFetchInput, _: &Context) -> Permission {
        let host = host_of(&input.url);
        Permission::Ask {
            message: format!("WebFetch wants to fetch from {host}."),
            suggested_rules: vec![format!("WebFetch(domain:{host})")],
        }
    }

    fn call(input: WebFetchInput, ctx: &Context) -> Result<Output, ToolError> {
        #[cfg(target_os = "wasi")]
        {
            fetch(&mut http::WasiHttp, &input, &mut |message| ctx.progress(message))
        }
        #[cfg(not(target_os = "wasi"))]
        {
            let _ = (input, ctx);
            Err(ToolError::unsupported("WebFetch needs wasi:http: it runs only as a WebAssembly component."))
        }
    }
}

/// Parses and checks a URL the model gave: http or https, at most
/// [`MAX_URL_CHARS`] characters, a host, and no user name or password.
pub fn parse_url(raw: &str) -> Result<Url, ToolError> {
    // Counted as JavaScript counts a string's length.
    if raw.encode_utf16().count() > MAX_URL_CHARS {
        return Err(ToolError::invalid_input(format!("URL is longer than {MAX_URL_CHARS} characters")));
    }
    let url = Url::parse(raw.trim())
        .map_err(|e| ToolError::invalid_input(format!("Invalid URL `{raw}`: {e}. Give a full http or https URL.")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolError::invalid_input(format!(
            "Unsupported URL scheme `{}:` in `{raw}`: WebFetch fetches only http and https URLs.",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ToolError::invalid_input(format!(
            "The URL `{raw}` contains a user name or password; WebFetch does not send credentials."
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(ToolError::invalid_input(format!("The URL `{raw}` has no host.")));
    }
    Ok(url)
}

/// The host a URL names, as the permission rules see it (lower case, no
/// trailing dot), or the text itself when it is not a URL.
pub fn host_of(raw: &str) -> String {
    match Url::parse(raw.trim()).ok().as_ref().and_then(Url::host_str) {
        Some(host) => toolhost_primitives::host::normalize(host),
        None => raw.to_string(),
    }
}

/// Whether a host stays on plain http: `localhost`, `*.localhost` and IP
/// literals (a local server rarely speaks TLS).
pub fn is_local_or_ip(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(_) | Host::Ipv6(_)) => true,
        Some(Host::Domain(name)) => toolhost_primitives::host::is_within(name, "localhost"),
        None => false,
    }
}

/// `url` with `http` upgraded to `https`, unless [`is_local_or_ip`].
pub fn upgrade(mut url: Url) -> Url {
    if url.scheme() == "http" && !is_local_or_ip(&url) {
        // Both are special schemes, so the change cannot fail; an explicit
        // port is kept, the default one becomes 443.
        let _ = url.set_scheme("https");
    }
    url
}

/// Whether a redirect from `from` to `to` is followed: same scheme, same
/// port, no credentials, and the same host once a leading `www.` is
/// dropped from both.
pub fn redirect_allowed(from: &Url, to: &Url) -> bool {
    from.scheme() == to.scheme()
        && from.port_or_known_default() == to.port_or_known_default()
        && to.username().is_empty()
        && to.password().is_none()
        && same_site(from, to)
}

/// Whether two URLs name the same host once a leading `www.` is dropped.
fn same_site(a: &Url, b: &Url) -> bool {
    fn bare(url: &Url) -> Option<String> {
        let host = toolhost_primitives::host::normalize(url.host_str()?);
        Some(host.strip_prefix("www.").map(str::to_string).unwrap_or(host))
    }
    bare(a).is_some() && bare(a) == bare(b)
}

/// Whether `status` is a redirect WebFetch looks at (with a `location`).
pub fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// The reason phrase of a status code, or `""` for one not in the table.
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        418 => "I'm a teapot",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        510 => "Not Extended",
        511 => "Network Authentication Required",
        _ => "",
    }
}

/// `404 Not Found`, or just `599` for a code without a phrase.
fn status_line(status: u16) -> String {
    match reason_phrase(status) {
        "" => status.to_string(),
        reason => format!("{status} {reason}"),
    }
}

/// The response headers WebFetch uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    pub location: Option<String>,
    pub retry_after: Option<String>,
    pub content_type: Option<String>,
    pub content_length: Option<u64>,
    pub content_encoding: Option<String>,
}

/// A response body, read a chunk at a time.
pub trait Body {
    /// The next bytes, or `None` once the body is complete.
    fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, ToolError>;
}

/// What sends one GET: `wasi:http` in the component, a fake in the tests.
pub trait Transport {
    type Body: Body;
    /// Sends a GET for `url` and returns the response's head and body.
    fn get(&mut self, url: &Url) -> Result<(Head, Self::Body), ToolError>;
}

fn too_large(url: &Url) -> ToolError {
    ToolError::new(
        ErrorKind::TooLarge,
        format!("The page at {url} is larger than 10 MB ({MAX_BODY_BYTES} bytes); WebFetch does not fetch it."),
    )
}

/// Reads `body` whole, refusing more than [`MAX_BODY_BYTES`] (by the
/// `content-length` the server announced, or while reading).
pub fn read_capped(head: &Head, mut body: impl Body, url: &Url) -> Result<Vec<u8>, ToolError> {
    if head.content_length.is_some_and(|n| n > MAX_BODY_BYTES) {
        return Err(too_large(url));
    }
    let mut out = Vec::with_capacity(head.content_length.unwrap_or(0) as usize);
    while let Some(chunk) = body.next_chunk()? {
        if (out.len() + chunk.len()) as u64 > MAX_BODY_BYTES {
            return Err(too_large(url));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// A fetched page, as the result reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The URL the model asked for.
    pub requested: String,
    /// The URL the content came from (after the upgrade and redirects).
    pub url: String,
    pub status: u16,
    pub content_type: Option<String>,
    /// Body bytes fetched.
    pub bytes: usize,
    /// The content shown, already truncated.
    pub content: String,
}

/// The result text: a short header, a blank line, the content.
pub fn format_page(page: &Page, prompt: &str) -> String {
    let mut text = format!("URL: {}\n", page.url);
    if page.requested != page.url {
        text.push_str(&format!("Requested URL: {}\n", page.requested));
    }
    text.push_str(&format!(
        "Status: {}\nContent-Type: {}\nBytes fetched: {}\n\
         toolhost runs no model on the page: apply this prompt to the content below yourself: {prompt}\n\n",
        status_line(page.status),
        page.content_type.as_deref().unwrap_or("unknown"),
        page.bytes,
    ));
    text.push_str(&page.content);
    text
}

/// The result for a redirect WebFetch does not follow (2.1.328's text,
/// its four-space indent included): the target without credentials, and
/// the call to make next.
pub fn redirect_notice(original: &str, to: &Url, status: u16, prompt: &str, offset: u64) -> String {
    let mut target = to.clone();
    let _ = target.set_username("");
    let _ = target.set_password(None);
    let offset_line = if offset > 0 { format!("\n    - offset: {offset}") } else { String::new() };
    format!(
        "REDIRECT DETECTED: The URL redirects to a location that was not fetched automatically.\n\n    \
         Original URL: {original}\n    \
         Redirect URL (from the server's Location header — server-supplied, not verified): {target}\n    \
         Status: {status} {}\n\n    \
         To complete your request, I need to fetch content from the redirected URL. Please use WebFetch again with \
         these parameters:\n    \
         - url: \"{target}\"\n    \
         - prompt: \"{prompt}\"{offset_line}",
        reason_phrase(status),
    )
}

/// The result for a status that is neither a success nor a redirect
/// followed: not an error of the call, as in 2.1.328.
pub fn status_notice(status: u16, retry_after: Option<&str>) -> String {
    let retry = retry_after.map(|v| format!("\nRetry-After: {v}")).unwrap_or_default();
    format!(
        "The server returned HTTP {status} {}.{retry}\n\nThe response body was not retrieved. If this URL requires \
         authentication, use an authenticated tool (e.g. `gh` for GitHub, or an MCP-provided fetch tool) instead of \
         WebFetch.",
        reason_phrase(status)
    )
}

/// The part of a page's text from `offset` (in UTF-16 code units, as
/// 2.1.328 slices it) on, at most [`MAX_CONTENT_CHARS`] characters of it,
/// with the note saying where to go on when it stops short; or, past the
/// end, the text saying nothing is left.
pub fn page_part(text: &str, offset: u64) -> Result<String, String> {
    let total = text.encode_utf16().count() as u64;
    let mut units = 0u64;
    let start = text
        .char_indices()
        .find(|&(_, c)| {
            let at = units;
            units += c.len_utf16() as u64;
            at >= offset
        })
        .map_or(text.len(), |(i, _)| i);
    let rest = &text[start..];
    if offset > 0 && rest.is_empty() {
        return Err(format!("Nothing left to read from offset {offset}: this page's text is {total} characters long."));
    }
    let from = total - rest.encode_utf16().count() as u64;
    match rest.char_indices().nth(MAX_CONTENT_CHARS) {
        None => Ok(rest.to_string()),
        Some((cut, _)) => {
            let to = from + rest[..cut].encode_utf16().count() as u64;
            Ok(format!(
                "{}\n\n[WebFetch note: the answer above covers characters {from} to {to} of this page's {total} \
                 characters. Next offset: {to}.]",
                &rest[..cut]
            ))
        }
    }
}

/// Fetches `raw_url` through `transport`: upgrade, same-host redirects,
/// status and size checks, content conversion and truncation.
pub fn fetch<T: Transport>(
    transport: &mut T,
    input: &WebFetchInput,
    progress: &mut dyn FnMut(&str),
) -> Result<Output, ToolError> {
    let (raw_url, prompt, offset) = (input.url.as_str(), input.prompt.as_str(), input.offset.unwrap_or(0));
    let start = Instant::now();
    let mut url = upgrade(parse_url(raw_url)?);
    let mut hops = 0;
    loop {
        progress(&format!("Fetching {url}"));
        let (head, body) = transport.get(&url)?;
        if is_redirect(head.status)
            && let Some(location) = head.location.as_deref()
        {
            drop(body);
            let target = url.join(location.trim()).map_err(|e| {
                ToolError::io(format!(
                    "{url} answered {} with a Location WebFetch cannot use (`{location}`): {e}",
                    status_line(head.status)
                ))
            })?;
            if !redirect_allowed(&url, &target) {
                let text = redirect_notice(raw_url, &target, head.status, prompt, offset);
                return Ok(Output::text(text.clone()).with_structured(serde_json::json!({
                    "bytes": text.len(),
                    "code": head.status,
                    "codeText": reason_phrase(head.status),
                    "result": text,
                    "durationMs": start.elapsed().as_millis() as u64,
                    "url": url.as_str(),
                })));
            }
            hops += 1;
            if hops > MAX_REDIRECTS {
                return Err(ToolError::io(format!(
                    "Too many redirects fetching {raw_url}: more than {MAX_REDIRECTS} (the last one to {target})."
                )));
            }
            url = target;
            continue;
        }
        if !(200..300).contains(&head.status) {
            drop(body);
            let text = status_notice(head.status, head.retry_after.as_deref());
            return Ok(Output::text(text.clone()).with_structured(serde_json::json!({
                "bytes": 0,
                "code": head.status,
                "codeText": reason_phrase(head.status),
                "result": text,
                "durationMs": start.elapsed().as_millis() as u64,
                "url": url.as_str(),
            })));
        }
        let bytes = read_capped(&head, body, &url)?;
        let (kind, encoding) = (head.content_type.as_deref(), head.content_encoding.as_deref());
        // HTML is converted only as far as the part shown needs; when that
        // is not the whole page, the page's full length is needed for the note.
        let wanted = usize::try_from(offset).unwrap_or(usize::MAX).saturating_add(MAX_CONTENT_CHARS).saturating_add(1);
        let mut rendered = content::render(kind, encoding, &bytes, wanted);
        if rendered.chars().count() >= wanted {
            rendered = content::render(kind, encoding, &bytes, usize::MAX);
        }
        let content = match page_part(&rendered, offset) {
            Ok(part) => part,
            Err(nothing_left) => {
                return Ok(Output::text(nothing_left.clone()).with_structured(serde_json::json!({
                    "bytes": bytes.len(),
                    "code": head.status,
                    "codeText": reason_phrase(head.status),
                    "result": nothing_left,
                    "durationMs": start.elapsed().as_millis() as u64,
                    "url": url.as_str(),
                })));
            }
        };
        let page = Page {
            requested: raw_url.to_string(),
            url: url.to_string(),
            status: head.status,
            content_type: head.content_type.clone(),
            bytes: bytes.len(),
            content,
        };
        let text = format_page(&page, prompt);
        return Ok(Output::text(text).with_structured(serde_json::json!({
            "bytes": page.bytes,
            "code": page.status,
            "codeText": reason_phrase(page.status),
            "result": page.content,
            "durationMs": start.elapsed().as_millis() as u64,
            "url": page.url,
        })));
    }
}

export_tool!(WebFetch);

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use toolhost_sdk::{Content, Mode};

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn validates_urls() {
        assert!(parse_url("https://example.com/docs?q=1").is_ok());
        assert!(parse_url("http://localhost:8080/").is_ok());
        for bad in [
            "not a url",
            "example.com/page",
            "ftp://example.com/file",
            "file:///etc/passwd",
            "https://user@example.com/",
            "https://user:secret@example.com/",
            "https://:secret@example.com/",
            "data:text/plain,hi",
        ] {
            let err = parse_url(bad).unwrap_err();
            assert_eq!(err.kind, ErrorKind::InvalidInput, "{bad}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_CHARS));
        assert_eq!(parse_url(&long).unwrap_err().message, "URL is longer than 2000 characters");
        let exact = format!("https://example.com/{}", "a".repeat(MAX_URL_CHARS - 20));
        assert_eq!(exact.chars().count(), MAX_URL_CHARS);
        assert!(parse_url(&exact).is_ok());
    }

    #[test]
    fn validate_input_and_permissions() {
        let ctx = Context::for_tests("/ws", Mode::Default);
        let input = |u: &str| WebFetchInput { url: u.into(), prompt: "summarise".into(), offset: None };
        assert!(WebFetch::validate_input(&input("https://docs.rs/url"), &ctx).is_ok());
        assert!(WebFetch::validate_input(&input("gopher://docs.rs"), &ctx).is_err());
        assert_eq!(
            WebFetch::check_permissions(&input("https://Docs.RS./url/latest"), &ctx),
            Permission::Ask {
                message: "WebFetch wants to fetch from docs.rs.".into(),
                suggested_rules: vec!["WebFetch(domain:docs.rs)".into()],
            }
        );
    }

    #[test]
    fn schema_and_flags() {
        let schema: serde_json::Value = serde_json::from_str(&toolhost_sdk::input_schema::<WebFetch>()).unwrap();
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["required"], serde_json::json!(["url", "prompt"]));
        // Portable: a plain string (the tool checks the URL itself).
        assert_eq!(
            schema["properties"]["url"],
            serde_json::json!({"type": "string", "description": "The URL to fetch content from"})
        );
        assert_eq!(schema["properties"]["url"]["description"], "The URL to fetch content from");
        assert_eq!(schema["properties"]["prompt"]["description"], "The prompt to run on the fetched content");
        assert_eq!(schema["properties"]["offset"]["type"], "integer");
        assert_eq!(schema["properties"]["offset"]["minimum"], 0);
        let input = WebFetchInput { url: "https://a.org".into(), prompt: String::new(), offset: None };
        assert!(WebFetch::is_read_only(&input) && WebFetch::CONCURRENCY_SAFE_HINT == Some(true));
        assert_eq!(WebFetch::ADDRESS_FIELDS, &["url"]);
    }

    #[test]
    fn upgrades_http_except_local() {
        assert_eq!(upgrade(url("http://example.com/a?b#c")).as_str(), "https://example.com/a?b#c");
        assert_eq!(upgrade(url("http://example.com:8080/")).as_str(), "https://example.com:8080/");
        assert_eq!(upgrade(url("http://example.com:80/")).as_str(), "https://example.com/");
        assert_eq!(upgrade(url("https://example.com/")).as_str(), "https://example.com/");
        for local in [
            "http://localhost/",
            "http://LOCALHOST:3000/",
            "http://app.localhost/",
            "http://127.0.0.1:8000/",
            "http://10.1.2.3/",
            "http://[::1]:8080/",
        ] {
            assert_eq!(upgrade(url(local)).scheme(), "http", "{local}");
        }
        assert_eq!(upgrade(url("http://localhost.example.com/")).scheme(), "https");
    }

    #[test]
    fn redirect_rules() {
        let ok = |a: &str, b: &str| redirect_allowed(&url(a), &url(b));
        assert!(ok("https://example.com/a", "https://example.com/b"));
        assert!(ok("https://example.com/a", "https://www.example.com/b"));
        assert!(ok("https://www.example.com/a", "https://example.com/b"));
        assert!(ok("https://example.com/a", "https://example.com:443/b"));
        assert!(!ok("https://example.com/a", "https://other.com/"));
        assert!(!ok("https://example.com/a", "https://docs.example.com/"));
        assert!(!ok("https://example.com/a", "http://example.com/"));
        assert!(!ok("https://example.com/a", "https://example.com:8443/"));
        assert!(!ok("https://example.com/a", "https://u:p@example.com/"));
        assert!(!ok("https://example.com/a", "https://u@example.com/"));
        for s in [301, 302, 303, 307, 308] {
            assert!(is_redirect(s));
        }
        assert!(!is_redirect(300) && !is_redirect(304) && !is_redirect(200));
    }

    #[test]
    fn formats_header_then_content() {
        let page = Page {
            requested: "http://example.com".into(),
            url: "https://example.com/".into(),
            status: 200,
            content_type: Some("text/html; charset=utf-8".into()),
            bytes: 42,
            content: "# Title".into(),
        };
        assert_eq!(
            format_page(&page, "What is the title?"),
            "URL: https://example.com/\nRequested URL: http://example.com\nStatus: 200 OK\n\
             Content-Type: text/html; charset=utf-8\nBytes fetched: 42\n\
             toolhost runs no model on the page: apply this prompt to the content below yourself: What is the title?\n\n\
             # Title"
        );
        let same = Page { requested: "https://example.com/".into(), content_type: None, ..page };
        let text = format_page(&same, "p");
        assert!(!text.contains("Requested URL"));
        assert!(text.contains("Content-Type: unknown\n"));
        assert_eq!(status_line(599), "599");
    }

    /// Serves canned responses in order and records the URLs asked for.
    #[derive(Default)]
    struct Fake {
        responses: VecDeque<(Head, Vec<Vec<u8>>)>,
        asked: Vec<String>,
    }

    struct Chunks(VecDeque<Vec<u8>>);

    impl Body for Chunks {
        fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, ToolError> {
            Ok(self.0.pop_front())
        }
    }

    impl Transport for Fake {
        type Body = Chunks;
        fn get(&mut self, url: &Url) -> Result<(Head, Chunks), ToolError> {
            self.asked.push(url.to_string());
            let (head, chunks) = self.responses.pop_front().expect("an unexpected request");
            Ok((head, Chunks(chunks.into())))
        }
    }

    impl Fake {
        fn with(mut self, status: u16, headers: &[(&str, &str)], body: &[u8]) -> Self {
            let mut head = Head { status, ..Head::default() };
            for &(name, value) in headers {
                match name {
                    "location" => head.location = Some(value.into()),
                    "content-type" => head.content_type = Some(value.into()),
                    "content-length" => head.content_length = value.parse().ok(),
                    "content-encoding" => head.content_encoding = Some(value.into()),
                    "retry-after" => head.retry_after = Some(value.into()),
                    _ => unreachable!(),
                }
            }
            self.responses.push_back((head, vec![body.to_vec()]));
            self
        }
        fn run(&mut self, raw: &str) -> Result<Output, ToolError> {
            self.run_from(raw, None)
        }
        fn run_from(&mut self, raw: &str, offset: Option<u64>) -> Result<Output, ToolError> {
            let input = WebFetchInput { url: raw.into(), prompt: "the prompt".into(), offset };
            fetch(self, &input, &mut |_| {})
        }
    }

    fn text_of(out: &Output) -> &str {
        match &out.content[..] {
            [Content::Text(t)] => t,
            other => panic!("not one text block: {other:?}"),
        }
    }

    #[test]
    fn fetches_html_as_markdown() {
        let html = b"<html><head><title>T</title><style>p{}</style><script>alert(1)</script></head>\
                     <body><h1>Hello</h1><p>Some <b>bold</b> text.</p></body></html>";
        let mut fake = Fake::default().with(200, &[("content-type", "text/html; charset=utf-8")], html);
        let out = fake.run("http://example.com/page").unwrap();
        assert_eq!(fake.asked, ["https://example.com/page"]);
        let text = text_of(&out);
        assert!(text.starts_with("URL: https://example.com/page\nRequested URL: http://example.com/page\n"));
        assert!(text.contains("apply this prompt to the content below yourself: the prompt\n\n"));
        assert!(text.contains("# Hello") && text.contains("**bold**"), "{text}");
        assert!(!text.contains("alert") && !text.contains("p{}"), "{text}");
        let s = out.structured.as_ref().unwrap();
        assert_eq!(s["bytes"], html.len());
        assert_eq!(s["code"], 200);
        assert_eq!(s["codeText"], "OK");
        assert_eq!(s["url"], "https://example.com/page");
        assert!(s["result"].as_str().unwrap().contains("# Hello"));
        assert!(s["durationMs"].is_u64());
        assert!(!out.is_error);
    }

    #[test]
    fn follows_same_host_redirects() {
        let mut fake = Fake::default()
            .with(301, &[("location", "https://www.example.com/a")], b"")
            .with(302, &[("location", "/b?x=1")], b"moved")
            .with(200, &[("content-type", "text/plain")], b"done");
        let out = fake.run("https://example.com/").unwrap();
        assert_eq!(fake.asked, ["https://example.com/", "https://www.example.com/a", "https://www.example.com/b?x=1"]);
        assert!(text_of(&out).ends_with("\n\ndone"));
        assert_eq!(out.structured.unwrap()["url"], "https://www.example.com/b?x=1");
    }

    #[test]
    fn reports_cross_host_redirects() {
        let mut fake = Fake::default().with(301, &[("location", "https://other.org/new")], b"");
        let out = fake.run("https://example.com/old").unwrap();
        assert!(!out.is_error);
        assert_eq!(
            text_of(&out),
            "REDIRECT DETECTED: The URL redirects to a location that was not fetched automatically.\n\n    \
             Original URL: https://example.com/old\n    \
             Redirect URL (from the server's Location header — server-supplied, not verified): https://other.org/new\n    \
             Status: 301 Moved Permanently\n\n    \
             To complete your request, I need to fetch content from the redirected URL. Please use WebFetch again \
             with these parameters:\n    \
             - url: \"https://other.org/new\"\n    \
             - prompt: \"the prompt\""
        );
        let s = out.structured.unwrap();
        assert_eq!(s["code"], 301);
        assert_eq!(s["codeText"], "Moved Permanently");

        // Another scheme; the offset is passed on; credentials are not.
        let mut fake = Fake::default().with(302, &[("location", "http://u:p@example.com/plain")], b"");
        let text = text_of(&fake.run_from("https://example.com/", Some(7)).unwrap()).to_string();
        assert!(text.contains("not verified): http://example.com/plain\n"), "{text}");
        assert!(text.ends_with("- prompt: \"the prompt\"\n    - offset: 7"), "{text}");
    }

    #[test]
    fn too_many_redirects() {
        let mut fake = Fake::default();
        for i in 0..=MAX_REDIRECTS {
            fake = fake.with(307, &[("location", &format!("/r{i}"))], b"");
        }
        let err = fake.run("https://example.com/").unwrap_err();
        assert!(err.message.contains("Too many redirects"), "{}", err.message);
        assert_eq!(fake.asked.len(), MAX_REDIRECTS + 1);

        // Ten hops are fine.
        let mut fake = Fake::default();
        for i in 0..MAX_REDIRECTS {
            fake = fake.with(308, &[("location", &format!("/r{i}"))], b"");
        }
        fake = fake.with(200, &[("content-type", "text/plain")], b"end");
        assert!(fake.run("https://example.com/").is_ok());
    }

    #[test]
    fn error_statuses() {
        // Not an error of the call: the status, and what to do instead.
        let mut fake = Fake::default().with(404, &[("content-type", "text/html")], b"<h1>nope</h1>");
        let out = fake.run("https://example.com/missing").unwrap();
        assert!(!out.is_error);
        assert_eq!(
            text_of(&out),
            "The server returned HTTP 404 Not Found.\n\nThe response body was not retrieved. If this URL requires \
             authentication, use an authenticated tool (e.g. `gh` for GitHub, or an MCP-provided fetch tool) instead \
             of WebFetch."
        );
        let mut fake = Fake::default().with(429, &[("retry-after", "120")], b"");
        let text = text_of(&fake.run("https://example.com/").unwrap()).to_string();
        assert!(text.starts_with("The server returned HTTP 429 Too Many Requests.\nRetry-After: 120\n\n"), "{text}");
        // A redirect status without a location is such a status too.
        let mut fake = Fake::default().with(302, &[], b"");
        assert!(text_of(&fake.run("https://example.com/").unwrap()).starts_with("The server returned HTTP 302 Found."));
    }

    #[test]
    fn caps_the_body() {
        let mut fake =
            Fake::default().with(200, &[("content-length", &(MAX_BODY_BYTES + 1).to_string())], b"small really");
        let err = fake.run("https://example.com/big").unwrap_err();
        assert_eq!(err.kind, ErrorKind::TooLarge);
        assert!(err.message.contains("larger than 10 MB"));

        let head = Head { status: 200, ..Head::default() };
        let chunk = vec![b'a'; 1024 * 1024];
        let body = Chunks(std::iter::repeat_n(chunk.clone(), 11).collect());
        assert_eq!(read_capped(&head, body, &url("https://x.org/")).unwrap_err().kind, ErrorKind::TooLarge);
        let body = Chunks(std::iter::repeat_n(chunk, 10).collect());
        assert_eq!(read_capped(&head, body, &url("https://x.org/")).unwrap().len() as u64, MAX_BODY_BYTES);
    }

    #[test]
    fn binary_and_truncated_content() {
        let mut fake = Fake::default().with(200, &[("content-type", "image/png")], &[0x89, b'P', b'N', b'G', 0, 1]);
        let text = text_of(&fake.run("https://example.com/i.png").unwrap()).to_string();
        assert!(text.ends_with("binary content of type image/png, 6 bytes, not shown"), "{text}");

        let long = "é".repeat(MAX_CONTENT_CHARS + 5);
        let mut fake = Fake::default().with(200, &[("content-type", "text/plain")], long.as_bytes());
        let out = fake.run("https://example.com/long.txt").unwrap();
        let result = out.structured.unwrap()["result"].as_str().unwrap().to_string();
        assert_eq!(
            result,
            format!(
                "{}\n\n[WebFetch note: the answer above covers characters 0 to 100000 of this page's 100005 \
                 characters. Next offset: 100000.]",
                "é".repeat(MAX_CONTENT_CHARS)
            )
        );
    }

    #[test]
    fn offsets_read_on() {
        let page = format!("{}tail", "x".repeat(MAX_CONTENT_CHARS));
        let fetch_at = |offset| {
            let mut fake = Fake::default().with(200, &[("content-type", "text/plain")], page.as_bytes());
            let out = fake.run_from("https://example.com/p.txt", offset).unwrap();
            out.structured.unwrap()["result"].as_str().unwrap().to_string()
        };
        assert!(
            fetch_at(None).ends_with("characters 0 to 100000 of this page's 100004 characters. Next offset: 100000.]")
        );
        assert_eq!(fetch_at(Some(100_000)), "tail");
        assert_eq!(fetch_at(Some(100_002)), "il");
        assert_eq!(
            fetch_at(Some(100_004)),
            "Nothing left to read from offset 100004: this page's text is 100004 characters long."
        );
        // Offsets count UTF-16 code units, as JavaScript does.
        assert_eq!(page_part("😀ab", 2), Ok("ab".into()));
        assert_eq!(page_part("", 0), Ok(String::new()));
    }
}
