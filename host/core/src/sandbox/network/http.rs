//! Outgoing HTTP for tools granted hosts: wasmtime-wasi-http's `wasi:http`
//! with the sending done here, so that every request (and so every redirect
//! hop, which a guest makes as a new request) is checked against the
//! [`Network`], connects to the addresses that were checked, and gets a
//! response of bounded size within bounded times.

use super::{Network, Refused};
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

/// Largest response body a tool may receive, in bytes.
pub(crate) const MAX_RESPONSE_BYTES: u64 = 32 << 20;
/// Longest wait for a connection (TCP and TLS), whatever the guest asks.
pub(crate) const MAX_CONNECT: Duration = Duration::from_secs(30);
/// Longest wait for the response's head.
pub(crate) const MAX_FIRST_BYTE: Duration = Duration::from_secs(60);
/// Longest silence between two parts of the response body.
pub(crate) const MAX_BETWEEN_BYTES: Duration = Duration::from_secs(30);

/// The `wasi:http` hooks of one call.
pub(crate) struct Hooks {
    pub network: Arc<Network>,
}

type Sent = Result<(http::Response<WasiBody>, Box<dyn Future<Output = Result<(), Error>> + Send>), Error>;

impl WasiHttpHooks for Hooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _done: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Box<dyn Future<Output = Sent> + Send> {
        let network = Arc::clone(&self.network);
        Box::new(async move {
            let (response, connection) = send(&network, request, options).await?;
            Ok((response.map(BodyExt::boxed_unsync), Box::new(connection) as Box<dyn Future<Output = _> + Send>))
        })
    }
}

/// The guest's wait (at most `most`), or `most` when it set none.
fn at_most(asked: Option<Duration>, most: Duration) -> Duration {
    asked.map_or(most, |d| d.min(most))
}

trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

async fn send(
    network: &Network,
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
) -> Result<(http::Response<Capped>, impl Future<Output = Result<(), Error>> + Send + use<>), Error> {
    let uri = request.uri().clone();
    let tls = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err(Error::HttpProtocolError),
    };
    let host = uri.host().ok_or(Error::HttpRequestUriInvalid)?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let addrs = network.resolve(host, port).await.map_err(|why| refused(&uri, why))?;
    tracing::debug!(%uri, ?addrs, "outgoing request");

    let connect = at_most(options.and_then(|o| o.connect_timeout), MAX_CONNECT);
    let tcp = connect_any(&addrs, connect).await?;
    let stream: Box<dyn Stream> = match tls {
        true => {
            let name =
                rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|_| Error::HttpRequestUriInvalid)?;
            let tls = tokio_rustls::TlsConnector::from(tls_config()).connect(name, tcp);
            match tokio::time::timeout(connect, tls).await {
                Ok(Ok(stream)) => Box::new(stream),
                Ok(Err(e)) => return Err(Error::Tls(e)),
                Err(_) => return Err(Error::ConnectionTimeout),
            }
        }
        false => Box::new(tcp),
    };
    let (mut sender, connection) =
        match tokio::time::timeout(connect, hyper::client::conn::http1::handshake(TokioIo::new(stream))).await {
            Ok(handshake) => handshake?,
            Err(_) => return Err(Error::ConnectionTimeout),
        };
    // The connection runs beside the request; dropping its handle (the
    // guest dropped the response, or its call ended) stops it.
    let connection = wasmtime_wasi::runtime::spawn(connection);

    // On the wire, the path and query only (the host header is set).
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    *request.uri_mut() = http::Uri::try_from(path).map_err(|_| Error::HttpRequestUriInvalid)?;
    let first_byte = at_most(options.and_then(|o| o.first_byte_timeout), MAX_FIRST_BYTE);
    let response = match tokio::time::timeout(first_byte, sender.send_request(request)).await {
        Ok(response) => response?,
        Err(_) => return Err(Error::ConnectionReadTimeout),
    };
    let declared = response.headers().get(http::header::CONTENT_LENGTH);
    if let Some(length) = declared.and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        && length > MAX_RESPONSE_BYTES
    {
        return Err(Error::HttpResponseBodySize(Some(length)));
    }
    let idle = at_most(options.and_then(|o| o.between_bytes_timeout), MAX_BETWEEN_BYTES).max(Duration::from_millis(1));
    let response =
        response.map(|body| Capped { body, left: MAX_RESPONSE_BYTES, idle, timer: Box::pin(tokio::time::sleep(idle)) });
    Ok((response, async move {
        match connection.await {
            Ok(()) => Ok(()),
            Err(e) if e.is_timeout() => Err(Error::HttpResponseTimeout),
            Err(e) => Err(e.into()),
        }
    }))
}

/// A refusal as the guest sees it: the reason, which the SDKs show.
fn refused(uri: &http::Uri, why: Refused) -> Error {
    tracing::info!(%uri, reason = %why, "outgoing request refused");
    Error::InternalError(Some(format!("toolhost refused the request: {why}")))
}

/// A TCP connection to the first of `addrs` that answers within `timeout`.
async fn connect_any(addrs: &[SocketAddr], timeout: Duration) -> Result<tokio::net::TcpStream, Error> {
    let mut last = Error::ConnectionRefused;
    for addr in addrs {
        match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = Error::Connect(e),
            Err(_) => last = Error::ConnectionTimeout,
        }
    }
    Err(last)
}

/// TLS 1.2 and 1.3 with the Mozilla root certificates (webpki-roots), the
/// same on every machine; HTTP/1.1 only.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    Arc::clone(CONFIG.get_or_init(|| {
        let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.into() };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    }))
}

/// A response body cut at [`MAX_RESPONSE_BYTES`], failing when silent for
/// longer than its idle limit.
pub(crate) struct Capped {
    body: hyper::body::Incoming,
    left: u64,
    idle: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
}

impl Body for Capped {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let len = data.len() as u64;
                    if len > this.left {
                        return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(MAX_RESPONSE_BYTES)))));
                    }
                    this.left -= len;
                }
                let next = tokio::time::Instant::now() + this.idle;
                this.timer.as_mut().reset(next);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) if e.is_timeout() => Poll::Ready(Some(Err(Error::HttpResponseTimeout))),
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match this.timer.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(Error::ConnectionReadTimeout))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
