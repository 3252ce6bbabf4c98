//! The GET over `wasi:http`, and readable messages for its error codes.

use toolhost_sdk::ToolError;
use url::Url;
pub use wasip2::http::types::ErrorCode;

/// The `user-agent` WebFetch sends.
pub const USER_AGENT: &str = concat!("toolhost-WebFetch/", env!("CARGO_PKG_VERSION"));
/// The `accept` WebFetch sends: markdown if the server has it, else HTML.
pub const ACCEPT: &str = "text/markdown, text/html;q=0.9, */*;q=0.8";
/// Timeouts asked of the host's HTTP client, in nanoseconds.
pub const CONNECT_TIMEOUT_NS: u64 = 30_000_000_000;
pub const FIRST_BYTE_TIMEOUT_NS: u64 = 60_000_000_000;
pub const BETWEEN_BYTES_TIMEOUT_NS: u64 = 30_000_000_000;
/// Bytes asked for per read of the body.
pub const READ_CHUNK: u64 = 64 * 1024;

/// What went wrong, in words. The host gives its refusals (a host not
/// granted, an address not allowed) in `internal-error`: those are shown as
/// they are.
pub fn describe(code: &ErrorCode) -> String {
    let with = |what: &str, detail: Option<String>| match detail {
        Some(d) if !d.is_empty() => format!("{what} ({d})"),
        _ => what.to_string(),
    };
    match code {
        ErrorCode::DnsTimeout => "the DNS lookup timed out".into(),
        ErrorCode::DnsError(p) => with(
            "the DNS lookup failed",
            match (&p.rcode, p.info_code) {
                (Some(r), Some(i)) => Some(format!("{r}, info code {i}")),
                (Some(r), None) => Some(r.clone()),
                (None, Some(i)) => Some(format!("info code {i}")),
                (None, None) => None,
            },
        ),
        ErrorCode::DestinationNotFound => "the host was not found".into(),
        ErrorCode::DestinationUnavailable => "the host is unavailable".into(),
        ErrorCode::DestinationIpProhibited => "connecting to that IP address is prohibited".into(),
        ErrorCode::DestinationIpUnroutable => "the IP address is unroutable".into(),
        ErrorCode::ConnectionRefused => "the connection was refused".into(),
        ErrorCode::ConnectionTerminated => "the connection was closed before the response was complete".into(),
        ErrorCode::ConnectionTimeout => "connecting timed out".into(),
        ErrorCode::ConnectionReadTimeout => "reading from the server timed out".into(),
        ErrorCode::ConnectionWriteTimeout => "sending to the server timed out".into(),
        ErrorCode::ConnectionLimitReached => "too many connections are open".into(),
        ErrorCode::TlsProtocolError => "the TLS handshake failed".into(),
        ErrorCode::TlsCertificateError => "the server's TLS certificate was not accepted".into(),
        ErrorCode::TlsAlertReceived(p) => with(
            "the server sent a TLS alert",
            match (&p.alert_message, p.alert_id) {
                (Some(m), _) => Some(m.clone()),
                (None, Some(id)) => Some(format!("alert {id}")),
                (None, None) => None,
            },
        ),
        ErrorCode::HttpRequestDenied => "the request was denied".into(),
        ErrorCode::HttpRequestLengthRequired => "the server requires a request length".into(),
        ErrorCode::HttpRequestBodySize(_) => "the request body has the wrong size".into(),
        ErrorCode::HttpRequestMethodInvalid => "the request method is invalid".into(),
        ErrorCode::HttpRequestUriInvalid => "the URL is invalid".into(),
        ErrorCode::HttpRequestUriTooLong => "the URL is too long".into(),
        ErrorCode::HttpRequestHeaderSectionSize(_) | ErrorCode::HttpRequestHeaderSize(_) => {
            "the request headers are too large".into()
        }
        ErrorCode::HttpRequestTrailerSectionSize(_) | ErrorCode::HttpRequestTrailerSize(_) => {
            "the request trailers are too large".into()
        }
        ErrorCode::HttpResponseIncomplete => "the response was incomplete".into(),
        ErrorCode::HttpResponseHeaderSectionSize(_) | ErrorCode::HttpResponseHeaderSize(_) => {
            "the response headers are too large".into()
        }
        ErrorCode::HttpResponseBodySize(_) => "the response body is too large".into(),
        ErrorCode::HttpResponseTrailerSectionSize(_) | ErrorCode::HttpResponseTrailerSize(_) => {
            "the response trailers are too large".into()
        }
        ErrorCode::HttpResponseTransferCoding(c) => with("the response has an unsupported transfer coding", c.clone()),
        ErrorCode::HttpResponseContentCoding(c) => with("the response has an unsupported content coding", c.clone()),
        ErrorCode::HttpResponseTimeout => "the request timed out waiting for the response".into(),
        ErrorCode::HttpUpgradeFailed => "the HTTP upgrade failed".into(),
        ErrorCode::HttpProtocolError => "the server broke the HTTP protocol".into(),
        ErrorCode::LoopDetected => "a request loop was detected".into(),
        ErrorCode::ConfigurationError => "the HTTP client is misconfigured".into(),
        ErrorCode::InternalError(Some(message)) => message.clone(),
        ErrorCode::InternalError(None) => "the host's HTTP client failed".into(),
    }
}

/// The error for a failed fetch of `url`.
pub fn fetch_error(url: &Url, code: &ErrorCode) -> ToolError {
    ToolError::io(format!("WebFetch could not fetch {url}: {}", describe(code)))
}

/// `host[:port]` of `url` (a default port left out), as the request's authority.
pub fn authority(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

/// The path and query of `url`, without the fragment.
pub fn path_with_query(url: &Url) -> &str {
    let path = &url[url::Position::BeforePath..url::Position::AfterQuery];
    if path.is_empty() { "/" } else { path }
}

#[cfg(target_os = "wasi")]
pub use wasi::WasiHttp;

#[cfg(target_os = "wasi")]
mod wasi {
    use super::*;
    use crate::{Body, Head, Transport};
    use toolhost_sdk::ErrorKind;
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::{
        Fields, IncomingBody, IncomingResponse, Method, OutgoingRequest, RequestOptions, Scheme,
    };
    use wasip2::io::streams::{InputStream, StreamError};

    /// Sends requests through the host's `wasi:http/outgoing-handler`.
    pub struct WasiHttp;

    /// A response body being read. Fields drop in order: the stream before
    /// the body it belongs to, the body before its response.
    pub struct WasiBody {
        stream: InputStream,
        _body: IncomingBody,
        _response: IncomingResponse,
        url: Url,
    }

    fn internal(url: &Url, what: &str) -> ToolError {
        ToolError::new(ErrorKind::Internal, format!("WebFetch could not fetch {url}: {what}"))
    }

    impl Transport for WasiHttp {
        type Body = WasiBody;

        fn get(&mut self, url: &Url) -> Result<(Head, WasiBody), ToolError> {
            let headers = Fields::from_list(&[
                ("user-agent".to_string(), USER_AGENT.as_bytes().to_vec()),
                ("accept".to_string(), ACCEPT.as_bytes().to_vec()),
                // The body is shown as text: no compression, please.
                ("accept-encoding".to_string(), b"identity".to_vec()),
            ])
            .map_err(|e| internal(url, &format!("the request headers were refused ({e:?})")))?;
            let request = OutgoingRequest::new(headers);
            let scheme = if url.scheme() == "https" { Scheme::Https } else { Scheme::Http };
            request
                .set_method(&Method::Get)
                .and_then(|()| request.set_scheme(Some(&scheme)))
                .and_then(|()| request.set_authority(Some(&authority(url))))
                .and_then(|()| request.set_path_with_query(Some(path_with_query(url))))
                .map_err(|()| internal(url, "the host refused the request's URL"))?;
            let options = RequestOptions::new();
            // A host that does not support a timeout keeps its own.
            let _ = options.set_connect_timeout(Some(CONNECT_TIMEOUT_NS));
            let _ = options.set_first_byte_timeout(Some(FIRST_BYTE_TIMEOUT_NS));
            let _ = options.set_between_bytes_timeout(Some(BETWEEN_BYTES_TIMEOUT_NS));

            let future = outgoing_handler::handle(request, Some(options)).map_err(|e| fetch_error(url, &e))?;
            future.subscribe().block();
            let response = match future.get() {
                Some(Ok(Ok(response))) => response,
                Some(Ok(Err(code))) => return Err(fetch_error(url, &code)),
                Some(Err(())) | None => return Err(internal(url, "the response was not available")),
            };
            let head = {
                let headers = response.headers();
                let first =
                    |name: &str| headers.get(name).first().map(|v| String::from_utf8_lossy(v).trim().to_string());
                Head {
                    status: response.status(),
                    location: first("location"),
                    retry_after: first("retry-after"),
                    content_type: first("content-type"),
                    content_length: first("content-length").and_then(|v| v.parse().ok()),
                    content_encoding: first("content-encoding"),
                }
            };
            let body = response.consume().map_err(|()| internal(url, "the response body was not available"))?;
            let stream = body.stream().map_err(|()| internal(url, "the response body was not readable"))?;
            Ok((head, WasiBody { stream, _body: body, _response: response, url: url.clone() }))
        }
    }

    impl Body for WasiBody {
        fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, ToolError> {
            match self.stream.blocking_read(READ_CHUNK) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(StreamError::Closed) => Ok(None),
                Err(StreamError::LastOperationFailed(e)) => Err(match wasip2::http::types::http_error_code(&e) {
                    Some(code) => fetch_error(&self.url, &code),
                    None => ToolError::io(format!(
                        "WebFetch could not read the body of {}: {}",
                        self.url,
                        e.to_debug_string()
                    )),
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasip2::http::types::{DnsErrorPayload, TlsAlertReceivedPayload};

    #[test]
    fn host_refusals_are_shown_verbatim() {
        let url = Url::parse("https://internal.example/").unwrap();
        let msg = "internal.example resolves to 127.0.0.1, a loopback address WebFetch may not reach";
        let err = fetch_error(&url, &ErrorCode::InternalError(Some(msg.into())));
        assert_eq!(err.message, format!("WebFetch could not fetch https://internal.example/: {msg}"));
        assert_eq!(err.kind, toolhost_sdk::ErrorKind::Io);
        assert!(describe(&ErrorCode::InternalError(None)).contains("failed"));
    }

    #[test]
    fn timeouts_say_so() {
        for code in [
            ErrorCode::DnsTimeout,
            ErrorCode::ConnectionTimeout,
            ErrorCode::ConnectionReadTimeout,
            ErrorCode::ConnectionWriteTimeout,
            ErrorCode::HttpResponseTimeout,
        ] {
            assert!(describe(&code).contains("timed out"), "{code:?}");
        }
    }

    #[test]
    fn details_are_kept() {
        let dns = ErrorCode::DnsError(DnsErrorPayload { rcode: Some("NXDOMAIN".into()), info_code: None });
        assert_eq!(describe(&dns), "the DNS lookup failed (NXDOMAIN)");
        let tls = ErrorCode::TlsAlertReceived(TlsAlertReceivedPayload { alert_id: Some(42), alert_message: None });
        assert_eq!(describe(&tls), "the server sent a TLS alert (alert 42)");
        assert_eq!(describe(&ErrorCode::ConnectionRefused), "the connection was refused");
    }

    #[test]
    fn request_parts() {
        let url = Url::parse("https://example.com:8443/a/b?x=1#frag").unwrap();
        assert_eq!(authority(&url), "example.com:8443");
        assert_eq!(path_with_query(&url), "/a/b?x=1");
        let url = Url::parse("https://[::1]:443").unwrap();
        assert_eq!(authority(&url), "[::1]");
        assert_eq!(path_with_query(&url), "/");
        assert!(USER_AGENT.starts_with("toolhost-WebFetch/0."));
    }
}
