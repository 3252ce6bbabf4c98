//! Streamable HTTP: one endpoint for every client, with a session per
//! client of the revisions that have one and none for 2026-07-28; beside
//! it, what an orchestrator asks of a server (`/healthz`, `/readyz`,
//! `/metrics`), and a drain when told to stop.
//!
//! Who may call is said by credentials: bearer tokens, each with the name
//! of who holds it ([`parse_credentials`]). That name is the request's
//! [`Identity`]: it is in the call's span and audit lines, and an HTTP
//! session, a state handle or a waiting approval belongs to the identity
//! that made it (another presenting it is told exactly what an unknown one
//! gets).
//!
//! Who made each HTTP session is one of the front's records, and one
//! identity holds at most [`MAX_SESSIONS_PER_IDENTITY`]. With
//! [`ServeConfig::shared_state`], the records (who owns each session, the
//! client's `initialize`, through rmcp's `SessionStore`) are in the host's
//! state store, with the sessions' state: a session made on one instance
//! goes on at any other sharing the store, one deleted is gone on all of
//! them, and the cap holds across them.
//!
//! A `tools/call` over a quota of its identity is answered `429` with
//! `Retry-After` before it starts ([`crate::quota`]).

use crate::records::{Kind, Records};
use crate::{Front, Identity, McpSession, ServeConfig, ServeError, blocking};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{SessionManager as _, SessionState, SessionStore};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolhost::Host;

/// One credential: a bearer token, and the name of who holds it.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    pub name: String,
    pub token: String,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential").field("name", &self.name).finish_non_exhaustive()
    }
}

/// The name of the one credential a file of a bare token (or
/// `$TOOLHOST_HTTP_TOKEN`) gives.
pub const SOLE_TOKEN_NAME: &str = "token";

/// Reads a token file: one credential per line, `NAME TOKEN` (separated by
/// spaces or a tab), or a file holding one bare token (named
/// [`SOLE_TOKEN_NAME`]). Blank lines and lines starting with `#` are
/// skipped. Names are letters, digits and `._@-`; names and tokens are
/// each used once; a token is at least 16 characters and holds no spaces.
pub fn parse_credentials(text: &str) -> Result<Vec<Credential>, CredentialsError> {
    use CredentialsError as E;
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut credentials: Vec<Credential> = Vec::new();
    for &(line, text) in &lines {
        let fields: Vec<&str> = text.split_whitespace().collect();
        let (name, token) = match fields[..] {
            [token] if lines.len() == 1 => (SOLE_TOKEN_NAME, token),
            [_] => return Err(E::BareTokenAmongOthers { line }),
            [name, token] => (name, token),
            _ => return Err(E::Fields { line, found: fields.len() }),
        };
        if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-'))
            || name.len() > 128
        {
            return Err(E::BadName { line });
        }
        if token.len() < 16 || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(E::ShortToken { line });
        }
        if credentials.iter().any(|c| c.name == name) {
            return Err(E::NameTwice { line, name: name.to_string() });
        }
        if credentials.iter().any(|c| c.token == token) {
            return Err(E::TokenTwice { line });
        }
        credentials.push(Credential { name: name.to_string(), token: token.to_string() });
    }
    if credentials.is_empty() {
        return Err(E::Empty);
    }
    Ok(credentials)
}

/// Why a token file cannot be used ([`parse_credentials`]); each names the
/// line (counted from 1).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CredentialsError {
    /// A line of one field in a file of several credentials.
    #[error("line {line}: `NAME TOKEN` expected (a bare token only in a file of one line)")]
    BareTokenAmongOthers {
        /// The line.
        line: usize,
    },
    /// A line of three fields or more.
    #[error("line {line}: `NAME TOKEN` expected, found {found} fields")]
    Fields {
        /// The line.
        line: usize,
        /// How many fields it has.
        found: usize,
    },
    /// A name of other characters, or over 128.
    #[error("line {line}: a name is 1 to 128 letters, digits and `._@-`")]
    BadName {
        /// The line.
        line: usize,
    },
    /// A token under 16 characters, or holding a character that does not print.
    #[error("line {line}: a token is at least 16 printable characters")]
    ShortToken {
        /// The line.
        line: usize,
    },
    /// A name given to two credentials.
    #[error("line {line}: the name `{name}` is used twice")]
    NameTwice {
        /// The line of the second.
        line: usize,
        /// The name.
        name: String,
    },
    /// A token given to two credentials.
    #[error("line {line}: this token is used twice")]
    TokenTwice {
        /// The line of the second.
        line: usize,
    },
    /// No credential at all.
    #[error("no credentials in it")]
    Empty,
}

/// How the streamable-HTTP endpoint is guarded and stopped.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// The credentials a request must carry one of (`Authorization: Bearer
    /// <token>`); none: any local client, as `anonymous`.
    pub credentials: Vec<Credential>,
    /// `Host` values accepted besides the loopback names and the bound
    /// address (for a server reached by another name).
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted besides `http://localhost`, `127.0.0.1` and
    /// `[::1]` on the bound port (a request without `Origin` passes).
    pub allowed_origins: Vec<String>,
    /// How long a drain waits for running calls before cancelling them.
    pub drain_timeout: Duration,
}

impl Default for HttpConfig {
    fn default() -> HttpConfig {
        HttpConfig {
            credentials: Vec::new(),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            drain_timeout: Duration::from_secs(30),
        }
    }
}

/// The path the MCP endpoint is served on.
pub const HTTP_PATH: &str = "/mcp";

/// The HTTP session header of the revisions with sessions.
const SESSION_HEADER: &str = "mcp-session-id";

/// The entries of an HTTP session's record.
const OWNER: &str = "owner";
const INITIALIZE: &str = "initialize";

/// Most HTTP sessions one identity holds; a new one beyond it ends the one
/// made the longest ago.
pub const MAX_SESSIONS_PER_IDENTITY: usize = 1024;

/// The record of HTTP session `id`.
fn record_of(id: &str) -> Result<String, String> {
    // rmcp makes ids (UUIDs); anything else was never one.
    if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err("not a session id".into());
    }
    Ok(format!("{RECORD_PREFIX}{id}"))
}

const RECORD_PREFIX: &str = "http-";

/// Who made each HTTP session, in the front's records (see [`Records`]).
struct Owners {
    records: Arc<Records>,
    host: Host,
}

impl Owners {
    /// Who made session `id`, if it is known.
    async fn owner(&self, id: &str) -> Result<Option<String>, String> {
        let (records, id) = (Arc::clone(&self.records), id.to_string());
        blocking(move || {
            let Ok(record) = record_of(&id) else { return Ok(None) };
            Ok(records.load(&record)?.remove(OWNER))
        })
        .await
    }

    /// Records that `owner` made session `id`; ends the sessions of
    /// `owner` beyond [`MAX_SESSIONS_PER_IDENTITY`].
    async fn made(&self, id: &str, owner: &Arc<str>, manager: &LocalSessionManager) -> Result<(), String> {
        let (records, host, id, owner) =
            (Arc::clone(&self.records), self.host.clone(), id.to_string(), owner.to_string());
        let beyond = blocking(move || {
            let record = record_of(&id)?;
            records.apply(&record, &[(OWNER, Some(owner.clone()))])?;
            let beyond = records.admit(&owner, Kind::HttpSession, &record, MAX_SESSIONS_PER_IDENTITY)?;
            let mut ended = Vec::new();
            for record in beyond {
                if let Some(session) = record.strip_prefix(RECORD_PREFIX) {
                    forget(&records, &host, session)?;
                    ended.push(session.to_string());
                }
            }
            Ok(ended)
        })
        .await?;
        for session in beyond {
            let _ = manager.close_session(&Arc::from(session.as_str())).await;
        }
        Ok(())
    }

    /// Forgets session `id`, which `owner` made and deleted.
    async fn ended(&self, id: &str, owner: &str) -> Result<(), String> {
        let (records, host, id, owner) =
            (Arc::clone(&self.records), self.host.clone(), id.to_string(), owner.to_string());
        blocking(move || {
            forget(&records, &host, &id)?;
            records.release(&owner, Kind::HttpSession, &record_of(&id)?)
        })
        .await
    }
}

/// Forgets HTTP session `id` for every instance: its record, and its state
/// when that is in a shared store.
fn forget(records: &Records, host: &Host, id: &str) -> Result<(), String> {
    records.remove(&record_of(id)?)?;
    if records.is_shared() {
        host.forget_session(&crate::http_session_id(id)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// rmcp's session store over the front's records: each HTTP session's
/// `initialize`, in its record beside its owner, so another instance can
/// take it up. A session deleted goes with its state.
struct Sessions {
    records: Arc<Records>,
    host: Host,
}

#[async_trait::async_trait]
impl SessionStore for Sessions {
    async fn load(
        &self,
        id: &str,
    ) -> Result<Option<SessionState>, rmcp::transport::streamable_http_server::session::SessionStoreError> {
        let (records, id) = (Arc::clone(&self.records), id.to_string());
        let mut record = blocking(move || records.load(&record_of(&id)?)).await?;
        // A session without an owner is not one (yet, or any more).
        if !record.contains_key(OWNER) {
            return Ok(None);
        }
        match record.remove(INITIALIZE) {
            Some(text) => Ok(Some(serde_json::from_str(&text)?)),
            None => Ok(None),
        }
    }

    async fn store(
        &self,
        id: &str,
        state: &SessionState,
    ) -> Result<(), rmcp::transport::streamable_http_server::session::SessionStoreError> {
        let (records, id, text) = (Arc::clone(&self.records), id.to_string(), serde_json::to_string(state)?);
        blocking(move || records.apply(&record_of(&id)?, &[(INITIALIZE, Some(text))])).await?;
        Ok(())
    }

    async fn delete(
        &self,
        id: &str,
    ) -> Result<(), rmcp::transport::streamable_http_server::session::SessionStoreError> {
        let (records, host, id) = (Arc::clone(&self.records), self.host.clone(), id.to_string());
        blocking(move || forget(&records, &host, &id)).await?;
        Ok(())
    }
}

pub(crate) type Body = http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>;

/// A short plain answer.
fn plain(status: http::StatusCode, message: impl Into<String>) -> http::Response<Body> {
    use http_body_util::BodyExt as _;
    let mut response = http::Response::new(http_body_util::Full::new(bytes::Bytes::from(message.into())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/plain; charset=utf-8"));
    if status == http::StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
    }
    response
}

/// The name of the credential `request` carries, if it is one of `credentials`.
fn identify<'c>(credentials: &'c [Credential], request: &http::request::Parts) -> Option<&'c str> {
    let given = request
        .headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))?;
    // Every credential is compared, in time independent of where they differ.
    let mut found = None;
    for c in credentials {
        if same_secret(given.as_bytes(), c.token.as_bytes()) {
            found = Some(c.name.as_str());
        }
    }
    found
}

/// What every request of one endpoint shares.
struct Endpoint {
    host: Host,
    http: HttpConfig,
    owners: Owners,
    manager: Arc<LocalSessionManager>,
    /// Set once the server drains: no new work.
    draining: AtomicBool,
    shared: bool,
}

impl Endpoint {
    /// `/readyz`: serving, and the state store answering.
    async fn ready(&self) -> http::Response<Body> {
        if self.draining.load(Ordering::Relaxed) {
            return plain(http::StatusCode::SERVICE_UNAVAILABLE, "draining\n");
        }
        if self.shared {
            let host = self.host.clone();
            let probe = blocking(move || host.state_store().load("toolhost-readyz").map_err(|e| e.to_string()));
            match tokio::time::timeout(Duration::from_secs(3), probe).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return plain(http::StatusCode::SERVICE_UNAVAILABLE, format!("state store: {e}\n")),
                Err(_) => return plain(http::StatusCode::SERVICE_UNAVAILABLE, "state store: no answer in 3 s\n"),
            }
        }
        plain(http::StatusCode::OK, "ready\n")
    }
}

/// Serves streamable HTTP on `listener` (at [`HTTP_PATH`]) until `shutdown`
/// is cancelled, then drains: stops accepting, answers 503 to new requests
/// and `/readyz`, waits up to [`HttpConfig::drain_timeout`] for running
/// calls, cancels what still runs, and returns.
pub async fn serve_http(
    host: Host,
    config: ServeConfig,
    http: HttpConfig,
    listener: tokio::net::TcpListener,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    use http_body_util::BodyExt as _;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    let addr = listener.local_addr()?;
    let port = addr.port();
    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string(), addr.ip().to_string()];
    hosts.extend(http.allowed_hosts.iter().cloned());
    let mut origins =
        vec![format!("http://localhost:{port}"), format!("http://127.0.0.1:{port}"), format!("http://[::1]:{port}")];
    origins.extend(http.allowed_origins.iter().cloned());
    // Cancelled at the end of a drain: every session ends.
    let sessions_end = CancellationToken::new();
    let mut server_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_cancellation_token(sessions_end.clone());
    let shared = config.shared_state;
    let front = Front::new(host.clone(), config);
    if shared {
        let sessions = Sessions { records: Arc::clone(&front.records), host: host.clone() };
        server_config.session_store = Some(Arc::new(sessions));
    }
    let owners = Owners { records: Arc::clone(&front.records), host: host.clone() };
    let manager = Arc::new(LocalSessionManager::default());
    let mcp = StreamableHttpService::new(
        move || Ok(McpSession::lazy(Arc::clone(&front))),
        Arc::clone(&manager),
        server_config,
    );
    let endpoint = Arc::new(Endpoint { host, http, owners, manager, draining: AtomicBool::new(false), shared });
    let serving = Arc::clone(&endpoint);
    let service = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
        let mut mcp = mcp.clone();
        let endpoint = Arc::clone(&serving);
        async move {
            use tower_service::Service as _;
            let ok = |r: http::Response<Body>| Ok::<_, std::convert::Infallible>(r);
            match request.uri().path() {
                "/healthz" => return ok(plain(http::StatusCode::OK, "ok\n")),
                "/readyz" => return ok(endpoint.ready().await),
                "/metrics" => {
                    let mut response = plain(http::StatusCode::OK, endpoint.host.metrics_text());
                    response.headers_mut().insert(
                        http::header::CONTENT_TYPE,
                        http::HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
                    );
                    return ok(response);
                }
                HTTP_PATH => {}
                _ => return ok(plain(http::StatusCode::NOT_FOUND, "Not found: the MCP endpoint is /mcp\n")),
            }
            if endpoint.draining.load(Ordering::Relaxed) {
                let mut response = plain(http::StatusCode::SERVICE_UNAVAILABLE, "This server is stopping; retry.\n");
                response.headers_mut().insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
                return ok(response);
            }
            let (mut parts, body) = request.into_parts();
            let who: Arc<str> = if endpoint.http.credentials.is_empty() {
                Arc::from("anonymous")
            } else {
                match identify(&endpoint.http.credentials, &parts) {
                    Some(name) => Arc::from(name),
                    None => {
                        return ok(plain(http::StatusCode::UNAUTHORIZED, "Unauthorized: a bearer token is required\n"));
                    }
                }
            };
            // A session belongs to who made it: anyone else, like an unknown
            // or deleted session, is told it is not found.
            let session = parts.headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
            if let Some(id) = &session {
                match endpoint.owners.owner(id).await {
                    Ok(Some(owner)) if *owner == *who => {}
                    Ok(owner) => {
                        if owner.is_none() {
                            // Deleted on another instance: it ends here too.
                            let _ = endpoint.manager.close_session(&Arc::from(id.as_str())).await;
                        }
                        return ok(plain(http::StatusCode::NOT_FOUND, "Not Found: Session not found"));
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "the state store failed looking up a session");
                        return ok(plain(
                            http::StatusCode::SERVICE_UNAVAILABLE,
                            format!("The session could not be looked up ({e}); retry.\n"),
                        ));
                    }
                }
            }
            // With quotas set, a call over one is refused here, before it
            // starts (the body read whole for it, as rmcp would).
            let body = match endpoint.host.has_quotas() && parts.method == http::Method::POST {
                false => http_body_util::Either::Left(body),
                true => {
                    let read = http_body_util::Limited::new(body, crate::quota::MAX_BODY).collect().await;
                    let bytes = match read {
                        Ok(collected) => collected.to_bytes(),
                        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                            return ok(plain(http::StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large\n"));
                        }
                        Err(e) => return ok(plain(http::StatusCode::BAD_REQUEST, format!("Bad Request: {e}\n"))),
                    };
                    if let Some(refused) = crate::quota::refusal(&endpoint.host, &who, session.as_deref(), &bytes).await
                    {
                        return ok(refused);
                    }
                    http_body_util::Either::Right(http_body_util::Full::new(bytes))
                }
            };
            parts.extensions.insert(Identity(Arc::clone(&who)));
            let deleting = parts.method == http::Method::DELETE;
            let mut response = mcp.call(http::Request::from_parts(parts, body)).await?;
            match (&session, response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok())) {
                (None, Some(made)) if response.status().is_success() => {
                    if let Err(e) = endpoint.owners.made(made, &who, &endpoint.manager).await {
                        // Unowned, the session is unknown: the client starts another.
                        tracing::warn!(error = %e, "could not record a new session's owner");
                    }
                }
                _ => {}
            }
            // The session is closed by now: "No Content" (202 would say it
            // is still going on; clients expect 200 or 204).
            if deleting && response.status() == http::StatusCode::ACCEPTED {
                if let Some(id) = &session
                    && let Err(e) = endpoint.owners.ended(id, &who).await
                {
                    tracing::warn!(error = %e, "could not forget a deleted session");
                }
                *response.status_mut() = http::StatusCode::NO_CONTENT;
                *response.body_mut() = http_body_util::Empty::new().map_err(|never| match never {}).boxed();
            }
            Ok(response)
        }
    });
    let connections = hyper_util::server::graceful::GracefulShutdown::new();
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
            () = shutdown.cancelled() => break,
        };
        // Small responses go out at once: without it, a proxy keeping its
        // connection open waits on each one for a delayed ACK (about 40 ms).
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%peer, error = %e, "could not set TCP_NODELAY");
        }
        let served = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
            .serve_connection_with_upgrades(hyper_util::rt::TokioIo::new(stream), service.clone())
            .into_owned();
        let served = connections.watch(served);
        tokio::spawn(async move {
            if let Err(e) = served.await {
                tracing::debug!(%peer, error = %e, "connection ended");
            }
        });
    }
    drain(&endpoint, listener, sessions_end, connections).await;
    Ok(())
}

/// Stops a server: no new connections or requests, running calls given
/// until the drain timeout, then every session ended and the connections
/// closed.
async fn drain(
    endpoint: &Endpoint,
    listener: tokio::net::TcpListener,
    sessions_end: CancellationToken,
    connections: hyper_util::server::graceful::GracefulShutdown,
) {
    endpoint.draining.store(true, Ordering::Relaxed);
    drop(listener);
    let started = std::time::Instant::now();
    let bound = endpoint.http.drain_timeout;
    tracing::info!(running = endpoint.host.calls_running(), "draining");
    while endpoint.host.calls_running() > 0 && started.elapsed() < bound {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left = endpoint.host.calls_running();
    if left > 0 {
        tracing::warn!(left, "calls still running at the end of the drain are cancelled");
    }
    // Results of the calls that finished go out before the sessions end.
    tokio::time::sleep(Duration::from_millis(100)).await;
    sessions_end.cancel();
    if tokio::time::timeout(Duration::from_secs(2), connections.shutdown()).await.is_err() {
        tracing::debug!("connections still open after the drain are dropped");
    }
    tracing::info!(took_ms = started.elapsed().as_millis() as u64, "drained");
}

/// Compares secrets in time independent of where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_files_name_their_credentials() {
        let sole = parse_credentials("  0123456789abcdef0123  \n").unwrap();
        assert_eq!(sole, [Credential { name: SOLE_TOKEN_NAME.into(), token: "0123456789abcdef0123".into() }]);
        let named = parse_credentials("# who\nalice 0123456789abcdef\n\nbob\tfedcba9876543210\n").unwrap();
        assert_eq!(named.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["alice", "bob"]);
        assert_eq!(named[1].token, "fedcba9876543210");
        assert!(!format!("{named:?}").contains("0123456789abcdef"), "a token never shows in Debug");
        for bad in [
            "",
            "# nothing\n",
            "alice 0123456789abcdef\nfedcba9876543210\n",
            "alice short",
            "alice 0123456789abcdef\nalice fedcba9876543210",
            "alice 0123456789abcdef\nbob 0123456789abcdef",
            "al/ice 0123456789abcdef",
            "alice 0123456789abcdef extra",
        ] {
            assert!(parse_credentials(bad).is_err(), "{bad:?} was taken");
        }
    }

    #[test]
    fn a_request_is_who_its_token_names() {
        let credentials = parse_credentials("alice 0123456789abcdef\nbob fedcba9876543210\n").unwrap();
        let parts =
            |auth: &str| http::Request::builder().header("authorization", auth).body(()).unwrap().into_parts().0;
        assert_eq!(identify(&credentials, &parts("Bearer fedcba9876543210")), Some("bob"));
        assert_eq!(identify(&credentials, &parts("Bearer 0123456789abcdef")), Some("alice"));
        assert_eq!(identify(&credentials, &parts("Bearer 0123456789abcdeF")), None);
        assert_eq!(identify(&credentials, &parts("Basic 0123456789abcdef")), None);
        assert!(record_of("../x").is_err() && record_of("0b7c-AA").is_ok());
    }
}
