//! The MCP front (`toolhost serve`), on rmcp, the official Rust SDK: the
//! pool as `tools/list`, `tools/call` through the whole pipeline on the
//! session's streaming executor, progress notifications, cancellation, and
//! asks put to the user by elicitation.
//!
//! One MCP session (the stdio connection, or one streamable-HTTP session) is
//! one toolhost [`Session`] with its own [`Executor`]. Its calls are
//! independent requests ([`Calls::Independent`]): each result goes back as
//! soon as it is ready, and no call is cancelled by another's failure. Each
//! request awaits its own [`toolhost::CallHandle`]; the protocol
//! thread never waits on a tool.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams, ElicitationAction,
    ElicitationSchema, Implementation, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolhost::{Answer, Approver, AskRequest, Content, Host, Progress, ProgressSink, Session, ToolResult, ToolUse};
use toolhost::{CallSetup, Calls, Executor};

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
        ServeConfig { max_concurrency: toolhost::DEFAULT_MAX_CONCURRENCY, ask_timeout: Duration::from_secs(600) }
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
    session: Arc<Session>,
    executor: Executor,
    runtime: tokio::runtime::Handle,
    /// Cancelled when the session ends: stops telling its client of reloads.
    ended: CancellationToken,
}

impl McpSession {
    /// A new session over `host`, its state in memory only. Call inside a
    /// tokio runtime.
    pub fn new(host: Host, config: ServeConfig) -> McpSession {
        let session = host.ephemeral_session();
        McpSession::over(host, config, session)
    }

    /// A new MCP session over `host` whose calls share `session`'s state: a
    /// persistent session (`Host::session`) is saved after every call,
    /// before its result goes out, so a server killed at any point keeps
    /// every read a client saw the result of.
    pub fn over(host: Host, config: ServeConfig, session: Arc<Session>) -> McpSession {
        // The client gets every tool in full (see `tools`), so none needs
        // loading with ToolSearch first.
        session.discover_all();
        let executor = Executor::with_config(
            host.clone(),
            Arc::clone(&session),
            toolhost::SchedulerConfig {
                max_concurrency: config.max_concurrency,
                calls: Calls::Independent,
                approver: None,
            },
        );
        McpSession {
            host,
            config,
            session,
            executor,
            runtime: tokio::runtime::Handle::current(),
            ended: CancellationToken::new(),
        }
    }

    /// The tool list: the pool in its order, with schemas and the hints the
    /// tools declare for every input. Deferred tools are listed in full too,
    /// marked `_meta["toolhost/deferred"]`: an MCP client decides itself
    /// what its model sees at once (Claude Code defers MCP tools behind its
    /// own tool search), so toolhost's ToolSearch is not listed.
    pub fn tools(host: &Host) -> Vec<Tool> {
        let deferred = host.deferred_tools();
        host.pool()
            .iter()
            .filter(|t| t.spec().name != toolhost::TOOL_SEARCH)
            .map(|t| {
                let schema = match &t.spec().input_schema {
                    Value::Object(o) => o.clone(),
                    _ => serde_json::Map::new(),
                };
                let mut tool =
                    Tool::new(t.spec().name.clone(), t.spec().model_description().to_string(), Arc::new(schema));
                if let Some(output) = &t.spec().output_schema
                    && let Value::Object(o) = output
                {
                    tool = tool.with_raw_output_schema(Arc::new(o.clone()));
                }
                let hints = &t.spec().hints;
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
                if deferred.contains(&t.spec().name) {
                    let mut meta = rmcp::model::MetaObject::new();
                    meta.insert("toolhost/deferred".into(), json!(true));
                    tool.meta = Some(meta);
                }
                tool
            })
            .collect()
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        // The session ended: its running calls are cancelled.
        self.ended.cancel();
        self.executor.discard();
        self.host.end_session(&self.session);
    }
}

/// Sends one progress notification for a request's token.
async fn notify_progress(peer: &Peer<RoleServer>, token: &ProgressToken, count: u64, p: Progress) {
    let note = ProgressNotificationParam::new(token.clone(), count as f64).with_message(p.message);
    if let Err(e) = peer.notify_progress(note).await {
        tracing::debug!(error = %e, "could not send a progress notification");
    }
}

impl ServerHandler for McpSession {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "toolhost runs each tool as a sandboxed WebAssembly component. Calls go through the \
                 permission rules and hooks of the workspace's settings; a denied call's result says \
                 which rule would allow it.",
            )
    }

    /// From now on, each reload that changes the tools sends the client
    /// `notifications/tools/list_changed` (it lists them again).
    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        use tokio::sync::broadcast::error::RecvError;
        let mut changes = self.host.tools_changed();
        let (ended, peer) = (self.ended.clone(), context.peer);
        tokio::spawn(async move {
            loop {
                let change = tokio::select! {
                    () = ended.cancelled() => return,
                    change = changes.recv() => change,
                };
                match change {
                    Ok(change) if !change.tools_changed() => continue,
                    // Fell behind: something changed all the same.
                    Ok(_) | Err(RecvError::Lagged(_)) => {
                        if let Err(e) = peer.notify_tool_list_changed().await {
                            tracing::debug!(error = %e, "could not tell the client the tools changed");
                            return;
                        }
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        });
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
        let id = call_id();
        let input = Value::Object(request.arguments.unwrap_or_default());
        // The call's progress comes here, in order, from the worker running it.
        let (progress_tx, mut progress) = tokio::sync::mpsc::unbounded_channel::<Progress>();
        let sink: ProgressSink = Arc::new(move |p| {
            let _ = progress_tx.send(p);
        });
        let asks = context.peer.supported_elicitation_modes().contains(&ElicitationMode::Form);
        let approver = asks.then(|| {
            let elicitation = Elicitation {
                peer: context.peer.clone(),
                cancelled: context.ct.clone(),
                timeout: self.config.ask_timeout,
                runtime: self.runtime.clone(),
            };
            Arc::new(elicitation) as Arc<dyn Approver>
        });
        let handle = self.executor.add_tool_with(
            ToolUse { id: id.clone(), name: request.name.to_string(), input },
            CallSetup { progress: Some(sink), approver },
        );
        let token = context.meta.get_progress_token();
        let mut sent = 0;
        let result = handle.result();
        tokio::pin!(result);
        let result = loop {
            tokio::select! {
                biased;
                () = context.ct.cancelled() => {
                    handle.cancel("Cancelled by the client.");
                    return Ok(CallToolResponse::Complete(to_mcp(ToolResult::error(&id, "Cancelled by the client."))));
                }
                Some(p) = progress.recv() => {
                    if let Some(token) = &token {
                        sent += 1;
                        notify_progress(&context.peer, token, sent, p).await;
                    }
                }
                r = &mut result => {
                    break r.unwrap_or_else(|| ToolResult::error(&id, "The session ended before the call finished."));
                }
            }
        };
        // What the call reported before it ended goes out before its result.
        while let Ok(p) = progress.try_recv() {
            if let Some(token) = &token {
                sent += 1;
                notify_progress(&context.peer, token, sent, p).await;
            }
        }
        // What the call recorded (a read, for Edit's checks) is on disk
        // before the client sees its result.
        if self.session.is_persistent() {
            let session = Arc::clone(&self.session);
            match tokio::task::spawn_blocking(move || session.save()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "could not save the session's state"),
                Err(e) => tracing::warn!(error = %e, "saving the session's state failed"),
            }
        }
        Ok(CallToolResponse::Complete(to_mcp(result)))
    }
}

/// A `tool_use` id for a call from an MCP client, which names none: unique
/// across processes too, since a persistent session outlives its server
/// (audit lines and persisted results are named by it).
fn call_id() -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    static PROCESS: std::sync::LazyLock<u32> = std::sync::LazyLock::new(|| {
        // Seeded from the system's randomness, fresh in every process.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.finish() as u32
    });
    format!("toolu_mcp_{:08x}_{:06}", *PROCESS, NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A toolhost result as an MCP one (errors stay results, with `isError`).
pub fn to_mcp(result: ToolResult) -> CallToolResult {
    let content = result
        .content
        .into_iter()
        .map(|c| match c {
            Content::Text(t) => ContentBlock::text(t),
            Content::Image { media_type, data } => ContentBlock::image(data, media_type),
            // MCP has no document block: an embedded resource carries it,
            // named by the call that made it.
            Content::Document { media_type, data } => ContentBlock::resource(
                rmcp::model::ResourceContents::blob(data, format!("toolhost://result/{}", result.tool_use_id))
                    .with_mime_type(media_type),
            ),
        })
        .collect();
    let mut out = if result.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    out.structured_content = result.structured;
    let mut meta = rmcp::model::MetaObject::new();
    if let Some(reason) = result.stop {
        meta.insert("toolhost/stop".into(), json!(reason));
    }
    if let Some(usage) = result.usage {
        meta.insert("toolhost/usage".into(), usage.to_json());
    }
    if !meta.is_empty() {
        out.meta = Some(meta);
    }
    out
}

/// Asks the MCP client's user about one call, by a form elicitation.
struct Elicitation {
    peer: Peer<RoleServer>,
    /// The request's cancellation: a cancelled call stops waiting.
    cancelled: CancellationToken,
    timeout: Duration,
    runtime: tokio::runtime::Handle,
}

impl Approver for Elicitation {
    fn ask(&self, request: &AskRequest) -> Answer {
        let (peer, cancelled) = (self.peer.clone(), self.cancelled.clone());
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
        let answer = self.runtime.block_on(async move {
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
/// closes it: in `session` (a persistent one, from `Host::session`), else in
/// a session of its own kept in memory.
pub async fn serve_stdio(host: Host, config: ServeConfig, session: Option<Arc<Session>>) -> Result<(), ServeError> {
    use rmcp::ServiceExt as _;
    let session = session.unwrap_or_else(|| host.ephemeral_session());
    let running = McpSession::over(host, config, session)
        .serve(rmcp::transport::io::stdio_pipes())
        .await
        .map_err(|e| ServeError::Initialize(e.to_string()))?;
    running.waiting().await.map_err(|e| ServeError::Session(e.to_string()))?;
    Ok(())
}

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
