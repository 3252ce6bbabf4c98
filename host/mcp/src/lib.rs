//! The MCP front (`toolhost serve`), on rmcp, the official Rust SDK: the
//! pool as `tools/list`, `tools/call` through the whole pipeline on the
//! session's streaming executor, progress notifications, cancellation, and
//! asks put to the user by elicitation.
//!
//! One MCP session (the stdio connection, or one streamable-HTTP session) is
//! one toolhost [`Session`] with its own [`Executor`]; calls are independent
//! requests, so each result goes back as soon as it is ready.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams, ElicitationAction,
    ElicitationSchema, Implementation, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use toolhost::scheduler::{self, Executor, Update};
use toolhost::{Answer, Approver, AskRequest, Content, Host, Progress, Session, ToolResult, ToolUse};

/// How `toolhost serve` runs calls.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Calls running at once in one MCP session.
    pub max_concurrency: usize,
    /// How long an elicitation waits for the user before the call is denied.
    pub ask_timeout: Duration,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig { max_concurrency: scheduler::DEFAULT_MAX_CONCURRENCY, ask_timeout: Duration::from_secs(600) }
    }
}

/// The protocol revisions served: those with a session (`initialize`), which
/// progress, cancellation and elicitation need. A client preferring the
/// sessionless 2026-07-28 revision falls back to the newest of these.
pub fn protocol_versions() -> &'static [ProtocolVersion] {
    ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25)
}

/// One MCP session: an rmcp [`ServerHandler`].
pub struct McpSession {
    host: Host,
    config: ServeConfig,
    inner: Arc<Inner>,
}

struct Inner {
    session: Arc<Session>,
    /// Created by the first call, when the client's capabilities are known
    /// (they decide whether asks go to the client).
    executor: OnceLock<Arc<Executor>>,
    calls: Mutex<HashMap<String, Pending>>,
    next_id: AtomicU64,
    runtime: tokio::runtime::Handle,
}

/// A call waiting for its result.
struct Pending {
    done: oneshot::Sender<ToolResult>,
    peer: Peer<RoleServer>,
    /// The client's progress token, and the progress sent so far.
    progress: Option<(ProgressToken, u64)>,
    /// Cancelled with the request.
    cancelled: CancellationToken,
}

impl McpSession {
    /// A new session over `host`. Call inside a tokio runtime.
    pub fn new(host: Host, config: ServeConfig) -> McpSession {
        let session = host.ephemeral_session();
        McpSession {
            host,
            config,
            inner: Arc::new(Inner {
                session,
                executor: OnceLock::new(),
                calls: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
                runtime: tokio::runtime::Handle::current(),
            }),
        }
    }

    /// The tool list: the pool in its order, with schemas and the hints the
    /// tools declare for every input.
    pub fn tools(host: &Host) -> Vec<Tool> {
        host.pool()
            .iter()
            .map(|t| {
                let schema = match &t.spec.input_schema {
                    Value::Object(o) => o.clone(),
                    _ => serde_json::Map::new(),
                };
                let mut tool = Tool::new(t.spec.name.clone(), t.spec.description.clone(), Arc::new(schema));
                if let Some(output) = &t.spec.output_schema
                    && let Value::Object(o) = output
                {
                    tool = tool.with_raw_output_schema(Arc::new(o.clone()));
                }
                let hints = &t.spec.hints;
                if hints.read_only.is_some() || hints.destructive.is_some() {
                    let mut annotations = ToolAnnotations::new();
                    if let Some(read_only) = hints.read_only {
                        annotations = annotations.read_only(read_only);
                    }
                    if let Some(destructive) = hints.destructive {
                        annotations = annotations.destructive(destructive);
                    }
                    tool = tool.with_annotations(annotations);
                }
                tool
            })
            .collect()
    }

    fn executor(&self, peer: &Peer<RoleServer>) -> Arc<Executor> {
        Arc::clone(self.inner.executor.get_or_init(|| {
            let asks = peer.supported_elicitation_modes().contains(&ElicitationMode::Form);
            let approver: Option<Arc<dyn Approver>> = asks.then(|| {
                let approver: Arc<dyn Approver> =
                    Arc::new(Elicitation { inner: Arc::downgrade(&self.inner), timeout: self.config.ask_timeout });
                approver
            });
            let executor = Arc::new(Executor::with_config(
                self.host.clone(),
                Arc::clone(&self.inner.session),
                scheduler::Config { max_concurrency: self.config.max_concurrency, ordered: false, approver },
            ));
            tokio::spawn(dispatch(Arc::clone(&executor), Arc::downgrade(&self.inner)));
            executor
        }))
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        // The session ended: its running calls are cancelled, the
        // dispatcher ends.
        if let Some(executor) = self.inner.executor.get() {
            executor.discard();
        }
        self.host.end_session(&self.inner.session);
    }
}

/// Hands the executor's updates to the waiting requests: progress as
/// notifications, results to their calls.
async fn dispatch(executor: Arc<Executor>, inner: Weak<Inner>) {
    while let Some(update) = executor.next().await {
        let Some(inner) = inner.upgrade() else { break };
        match update {
            Update::Progress(p) => {
                let note = progress_note(&inner, &p);
                if let Some((peer, note)) = note
                    && let Err(e) = peer.notify_progress(note).await
                {
                    tracing::debug!(error = %e, "could not send a progress notification");
                }
            }
            Update::Result(r) => {
                let pending = inner.calls.lock().unwrap_or_else(|e| e.into_inner()).remove(&r.tool_use_id);
                if let Some(pending) = pending {
                    let _ = pending.done.send(r);
                }
            }
        }
    }
}

fn progress_note(inner: &Inner, p: &Progress) -> Option<(Peer<RoleServer>, ProgressNotificationParam)> {
    let mut calls = inner.calls.lock().unwrap_or_else(|e| e.into_inner());
    let pending = calls.get_mut(&p.tool_use_id)?;
    let (token, sent) = pending.progress.as_mut()?;
    *sent += 1;
    let note = ProgressNotificationParam::new(token.clone(), *sent as f64).with_message(p.message.clone());
    Some((pending.peer.clone(), note))
}

impl ServerHandler for McpSession {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "toolhost runs each tool as a sandboxed WebAssembly component. Calls go through the \
                 permission rules and hooks of the workspace's settings; a denied call's result says \
                 which rule would allow it.",
            )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(protocol_versions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(Self::tools(&self.host)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let id = format!("toolu_mcp_{:06}", self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let input = Value::Object(request.arguments.unwrap_or_default());
        let (done, result) = oneshot::channel();
        let pending = Pending {
            done,
            peer: context.peer.clone(),
            progress: context.meta.get_progress_token().map(|t| (t, 0)),
            cancelled: context.ct.clone(),
        };
        self.inner.calls.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), pending);
        let executor = self.executor(&context.peer);
        executor.add_tool(ToolUse { id: id.clone(), name: request.name.to_string(), input });
        let result = tokio::select! {
            r = result => r.unwrap_or_else(|_| ToolResult::error(&id, "The session ended before the call finished.")),
            () = context.ct.cancelled() => {
                executor.cancel(&id, "Cancelled by the client.");
                self.inner.calls.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                ToolResult::error(&id, "Cancelled by the client.")
            }
        };
        Ok(CallToolResponse::Complete(to_mcp(result)))
    }
}

/// A toolhost result as an MCP one (errors stay results, with `isError`).
pub fn to_mcp(result: ToolResult) -> CallToolResult {
    let content = result
        .content
        .into_iter()
        .map(|c| match c {
            Content::Text(t) => ContentBlock::text(t),
            Content::Image { media_type, data } => ContentBlock::image(data, media_type),
        })
        .collect();
    let mut out = if result.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    out.structured_content = result.structured;
    if let Some(reason) = result.stop {
        let mut meta = rmcp::model::MetaObject::new();
        meta.insert("toolhost/stop".into(), json!(reason));
        out.meta = Some(meta);
    }
    out
}

/// Asks the MCP client's user about a call, by a form elicitation.
struct Elicitation {
    inner: Weak<Inner>,
    timeout: Duration,
}

impl Approver for Elicitation {
    fn ask(&self, request: &AskRequest) -> Answer {
        let Some(inner) = self.inner.upgrade() else {
            return Answer::Deny("The MCP session ended.".into());
        };
        let found = {
            let calls = inner.calls.lock().unwrap_or_else(|e| e.into_inner());
            calls.get(&request.tool_use_id).map(|p| (p.peer.clone(), p.cancelled.clone()))
        };
        let Some((peer, cancelled)) = found else {
            return Answer::Deny("The call was cancelled.".into());
        };
        let choices = request.choices();
        let explained: Vec<String> = choices.iter().map(|c| format!("\"{}\": {}", c.label(), c.explain())).collect();
        let message = format!("toolhost: {}\n{}", request.question(), explained.join("; "));
        let labels: Vec<&str> = choices.iter().map(|c| c.label()).collect();
        let schema = json!({
            "type": "object",
            "properties": {
                "decision": {"type": "string", "title": "Decision", "enum": labels},
                "reason": {"type": "string", "title": "Reason (when denying, told to the model)"},
            },
            "required": ["decision"],
        });
        let schema = match schema {
            Value::Object(o) => ElicitationSchema::from_json_schema(o),
            _ => unreachable!("an object"),
        };
        let requested_schema = match schema {
            Ok(s) => s,
            Err(e) => return Answer::Deny(format!("toolhost could not build the approval form: {e}")),
        };
        let params = ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema };
        let timeout = self.timeout;
        let answer = inner.runtime.block_on(async move {
            tokio::select! {
                r = peer.create_elicitation_with_timeout(params, Some(timeout)) => Some(r),
                () = cancelled.cancelled() => None,
            }
        });
        match answer {
            None => Answer::Deny("The call was cancelled while waiting for approval.".into()),
            Some(Err(e)) => Answer::Deny(format!("toolhost could not get the user's approval: {e}")),
            Some(Ok(r)) => match r.action {
                ElicitationAction::Accept => {
                    let content = r.content.unwrap_or(Value::Null);
                    let reason = content["reason"].as_str();
                    match content["decision"].as_str().and_then(|d| request.choice(d)) {
                        Some(choice) => choice.answer(reason),
                        None => Answer::denied(reason),
                    }
                }
                ElicitationAction::Decline => Answer::denied(None),
                _ => Answer::Deny("The user dismissed the approval request; the call did not run.".into()),
            },
        }
    }
}

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("the MCP session could not start: {0}")]
    Initialize(String),
    #[error("the MCP session failed: {0}")]
    Session(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Serves one MCP session over standard input and output until the client
/// closes it.
pub async fn serve_stdio(host: Host, config: ServeConfig) -> Result<(), ServeError> {
    use rmcp::ServiceExt as _;
    let running = McpSession::new(host, config)
        .serve(rmcp::transport::io::stdio_pipes())
        .await
        .map_err(|e| ServeError::Initialize(e.to_string()))?;
    running.waiting().await.map_err(|e| ServeError::Session(e.to_string()))?;
    Ok(())
}

/// How the streamable-HTTP endpoint is guarded.
#[derive(Clone, Debug, Default)]
pub struct HttpConfig {
    /// Requests must carry `Authorization: Bearer <token>`.
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

/// Serves streamable HTTP on `listener` (at [`HTTP_PATH`]), one MCP session
/// per client, until `shutdown` is cancelled.
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
    let mcp = StreamableHttpService::new(
        move || Ok(McpSession::new(host.clone(), config.clone())),
        LocalSessionManager::default().into(),
        server_config,
    );
    let token: Option<Arc<str>> = http.token.as_deref().map(Arc::from);
    let service = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
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
