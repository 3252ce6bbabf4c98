//! Streamable HTTP: one endpoint for every client, with a session per
//! client of the revisions that have one and none for 2026-07-28.

use crate::{Front, Identity, McpSession, ServeConfig, ServeError};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolhost::Host;

/// How the streamable-HTTP endpoint is guarded.
#[derive(Clone, Debug, Default)]
pub struct HttpConfig {
    /// Allowance must carry `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// `Host` values accepted besides the loopback names and the bound
    /// address (for a server reached by another name).
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted besides `http://localhost`, `127.0.0.1` and
    /// `[::1]` on the bound port (a request without `Origin` passes).
    pub allowed_origins: Vec<String>,
}

/// The path the MCP endpoint is served on.
pub const HTTP_PATH: &str = "/mcp";

/// Serves streamable HTTP on `listener` (at [`HTTP_PATH`]) until `shutdown`
/// is cancelled: one MCP session per client of a revision with sessions;
/// each 2026-07-28 request on its own, its state named by a handle.
pub async fn serve_http(
    host: Host,
    config: ServeConfig,
    http: HttpConfig,
    listener: tokio::net::TcpListener,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    use http_body_util::BodyExt as _;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let addr = listener.local_addr()?;
    let port = addr.port();
    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string(), addr.ip().to_string()];
    hosts.extend(http.allowed_hosts.iter().cloned());
    let mut origins =
        vec![format!("http://localhost:{port}"), format!("http://127.0.0.1:{port}"), format!("http://[::1]:{port}")];
    origins.extend(http.allowed_origins.iter().cloned());
    let server_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_cancellation_token(shutdown.child_token());
    let front = Front::new(host, config);
    let mcp = StreamableHttpService::new(
        move || Ok(McpSession::in_front(Arc::clone(&front), front.host.ephemeral_session())),
        LocalSessionManager::default().into(),
        server_config,
    );
    let token: Option<Arc<str>> = http.token.as_deref().map(Arc::from);
    let service = hyper::service::service_fn(move |mut request: http::Request<hyper::body::Incoming>| {
        let mut mcp = mcp.clone();
        let token = token.clone();
        async move {
            use tower_service::Service as _;
            let refuse = |status: http::StatusCode, message: &'static str| {
                let mut response = http::Response::new(
                    http_body_util::Full::new(bytes::Bytes::from_static(message.as_bytes()))
                        .map_err(|never| match never {})
                        .boxed(),
                );
                *response.status_mut() = status;
                if status == http::StatusCode::UNAUTHORIZED {
                    response
                        .headers_mut()
                        .insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
                }
                Ok::<_, std::convert::Infallible>(response)
            };
            if request.uri().path() != HTTP_PATH {
                return refuse(http::StatusCode::NOT_FOUND, "Not found: the MCP endpoint is /mcp\n");
            }
            if let Some(token) = &token {
                let given = request
                    .headers()
                    .get(http::header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.strip_prefix("Bearer "));
                if !given.is_some_and(|g| same_secret(g.as_bytes(), token.as_bytes())) {
                    return refuse(http::StatusCode::UNAUTHORIZED, "Unauthorized: a bearer token is required\n");
                }
            }
            // One credential for now: whoever holds the token.
            let who = if token.is_some() { "token" } else { "anonymous" };
            request.extensions_mut().insert(Identity(Arc::from(who)));
            let deleting = request.method() == http::Method::DELETE;
            let mut response = mcp.call(request).await?;
            // The session is closed by now: "No Content" (202 would say it
            // is still going on; clients expect 200 or 204).
            if deleting && response.status() == http::StatusCode::ACCEPTED {
                *response.status_mut() = http::StatusCode::NO_CONTENT;
                *response.body_mut() = http_body_util::Empty::new().map_err(|never| match never {}).boxed();
            }
            Ok(response)
        }
    });
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => return Ok(()),
        };
        let service = service.clone();
        tokio::spawn(async move {
            let served = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                tracing::debug!(%peer, error = %e, "connection ended");
            }
        });
    }
}

/// Compares secrets in time independent of where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
