//! The MCP front (`toolhost serve`), on rmcp, the official Rust SDK: the
//! pool as `tools/list`, `tools/call` through the whole pipeline on a
//! streaming executor, progress notifications, cancellation, and asks put
//! to the user, in every protocol revision from 2024-11-05 to 2026-07-28,
//! chosen per request.
//!
//! - **Revisions with a session** (up to 2025-11-25, after `initialize`):
//!   one MCP session (the stdio connection, or one streamable-HTTP session)
//!   is one toolhost [`Session`] with its own [`Executor`]; asks are live
//!   elicitation requests.
//! - **2026-07-28** (no `initialize`, no session; each request carries its
//!   revision and the client's capabilities in `_meta`): state that spans
//!   calls belongs to an explicit handle (see [`handles`](crate::handles)
//!   for how it is keyed and checked); on stdio, calls without one share
//!   the connection's state, since a stdio server has exactly one client.
//!   Asks end the call with an `InputRequiredResult`, and the client calls
//!   again with the answer. `tools/list_changed` reaches clients listening
//!   with `subscriptions/listen`.
//!
//! Calls are independent requests ([`Calls::Independent`]): each result
//! goes back as soon as it is ready, and no call is cancelled by another's
//! failure. Each request awaits its own [`toolhost::CallHandle`]; the
//! protocol thread never waits on a tool.

mod asks;
pub mod handles;
mod http;
mod tools;

pub use handles::{SESSION_ARGUMENT, START_SESSION};
pub use http::{HTTP_PATH, HttpConfig, serve_http};
pub use tools::{sessionless_tools, to_mcp, tools};

use asks::{Deferring, Elicitation, Pending, Waiting};
use handles::Handles;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, Implementation, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerCapabilities,
    SubscriptionFilter,
};
use rmcp::service::{ElicitationMode, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolhost::{Approver, Host, Progress, ProgressSink, Session, ToolResult, ToolUse};
use toolhost::{CallSetup, Calls, Executor};

/// How `toolhost serve` runs calls.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Calls running at once in one MCP session (or under one state handle).
    pub max_concurrency: usize,
    /// How long an elicitation waits for the user before the call is
    /// denied; how long a 2026-07-28 client may take to call again with the
    /// user's answer.
    pub ask_timeout: Duration,
    /// How long a state handle lives unused (2026-07-28).
    pub handle_idle: Duration,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            max_concurrency: toolhost::DEFAULT_MAX_CONCURRENCY,
            ask_timeout: Duration::from_secs(600),
            handle_idle: Duration::from_secs(8 * 3600),
        }
    }
}

/// How long a 2026-07-28 client may keep the tool list (`ttlMs`): a listening
/// client hears of a change at once.
pub const TOOLS_TTL: Duration = Duration::from_secs(30);

/// The protocol revisions served: 2024-11-05 to 2025-11-25 with a session
/// (`initialize`), and the sessionless 2026-07-28.
pub fn protocol_versions() -> &'static [ProtocolVersion] {
    ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28)
}

/// Who made a request: the credential's name over HTTP, the local user on
/// stdio. State handles and pending approvals belong to one identity.
#[derive(Clone, Debug)]
pub struct Identity(pub Arc<str>);

impl Identity {
    /// The one client of a stdio server.
    pub fn local() -> Identity {
        Identity(Arc::from("local"))
    }
}

/// What every MCP session of one server shares: the host, the state
/// handles and the calls waiting for an answer.
pub(crate) struct Front {
    host: Host,
    config: ServeConfig,
    runtime: tokio::runtime::Handle,
    handles: Handles,
    pending: Pending,
}

impl Front {
    pub(crate) fn new(host: Host, config: ServeConfig) -> Arc<Front> {
        Arc::new(Front {
            handles: Handles::new(host.clone(), config.max_concurrency, config.handle_idle),
            pending: Pending::new(config.ask_timeout),
            runtime: tokio::runtime::Handle::current(),
            host,
            config,
        })
    }
}

/// One MCP session (a stdio connection; an HTTP session of an older
/// revision; one 2026-07-28 HTTP request): an rmcp [`ServerHandler`].
pub struct McpSession {
    front: Arc<Front>,
    /// The state of calls naming no handle.
    session: Arc<Session>,
    executor: Arc<Executor>,
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
        McpSession::in_front(Front::new(host, config), session)
    }

    pub(crate) fn in_front(front: Arc<Front>, session: Arc<Session>) -> McpSession {
        // The client gets every tool in full (see `tools`), so none needs
        // loading with ToolSearch first.
        session.discover_all();
        let executor = Executor::with_config(
            front.host.clone(),
            Arc::clone(&session),
            toolhost::SchedulerConfig {
                max_concurrency: front.config.max_concurrency,
                calls: Calls::Independent,
                approver: None,
            },
        );
        McpSession { front, session, executor: Arc::new(executor), ended: CancellationToken::new() }
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        // The session ended: its running calls are cancelled.
        self.ended.cancel();
        self.executor.discard();
        self.front.host.end_session(&self.session);
    }
}

/// The key of `owner`'s oldest entry in `all` when `owner` holds `max` or
/// more (the one to forget before adding another): the bound on what one
/// identity keeps, for state handles and pending approvals alike.
pub(crate) fn oldest_beyond<V>(
    all: &std::collections::HashMap<String, V>,
    max: usize,
    owner: impl Fn(&V) -> bool,
    since: impl Fn(&V) -> std::time::Instant,
) -> Option<String> {
    let mine: Vec<(std::time::Instant, &String)> =
        all.iter().filter(|(_, v)| owner(v)).map(|(k, v)| (since(v), k)).collect();
    if mine.len() < max {
        return None;
    }
    mine.into_iter().min().map(|(_, k)| k.clone())
}

/// Whether a request is of a revision without sessions (2026-07-28 on).
fn sessionless(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|v| !v.has_initialize())
}

/// Who made the request (see [`Identity`]).
fn identity(context: &RequestContext<RoleServer>) -> Arc<str> {
    context
        .extensions
        .get::<::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Identity>())
        .map_or_else(|| Identity::local().0, |i| Arc::clone(&i.0))
}

/// Whether the client can answer a form elicitation: told at `initialize`
/// before 2026-07-28, in each request's `_meta` from then on.
fn can_elicit(context: &RequestContext<RoleServer>, sessionless: bool) -> bool {
    if !sessionless {
        return context.peer.supported_elicitation_modes().contains(&ElicitationMode::Form);
    }
    // An empty elicitation capability means form (the older revisions' shape).
    context.client_capabilities().and_then(|c| c.elicitation).is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// Sends one progress notification for a request's token.
async fn notify_progress(peer: &Peer<RoleServer>, token: &ProgressToken, count: u64, p: Progress) {
    let note = ProgressNotificationParam::new(token.clone(), count as f64).with_message(p.message);
    if let Err(e) = peer.notify_progress(note).await {
        tracing::debug!(error = %e, "could not send a progress notification");
    }
}

/// A finished call's result as an MCP response.
fn complete(result: ToolResult) -> Result<CallToolResponse, McpError> {
    Ok(CallToolResponse::Complete(to_mcp(result)))
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
    /// `notifications/tools/list_changed` (it lists them again). For the
    /// revisions with a session; 2026-07-28 clients `listen`.
    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        use tokio::sync::broadcast::error::RecvError;
        let mut changes = self.front.host.tools_changed();
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

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    /// A 2026-07-28 client's `subscriptions/listen`: each reload that
    /// changes the tools is told on its stream until it ends.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        use tokio::sync::broadcast::error::RecvError;
        let mut changes = self.front.host.tools_changed();
        loop {
            let change = tokio::select! {
                () = context.cancelled() => return Ok(()),
                () = self.ended.cancelled() => return Ok(()),
                change = changes.recv() => change,
            };
            match change {
                Ok(change) if !change.tools_changed() => continue,
                Ok(_) | Err(RecvError::Lagged(_)) => {
                    if let Err(e) = context.sink().notify_tool_list_changed().await {
                        tracing::debug!(error = %e, "could not tell a listener the tools changed");
                        return Ok(());
                    }
                }
                Err(RecvError::Closed) => return Ok(()),
            }
        }
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(protocol_versions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        if !sessionless(&context) {
            return Ok(ListToolsResult::with_all_items(tools(&self.front.host)));
        }
        // The same list for every client and identity; a listener hears of
        // a change at once, others look again after the TTL.
        Ok(ListToolsResult::with_all_items(sessionless_tools(&self.front.host))
            .with_ttl_ms(TOOLS_TTL.as_millis() as u64)
            .with_cache_scope(CacheScope::Private))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let id = call_id();
        if !sessionless(&context) {
            return self.call(request, context, id, None, Vec::new()).await;
        }
        let owner = identity(&context);
        if request.name == START_SESSION {
            let handle = self.front.handles.start(&owner);
            tracing::info!(identity = %owner, "state handle started");
            let text = format!(
                "Session started. Pass {SESSION_ARGUMENT}: \"{handle}\" in every call that belongs to this piece of \
                 work."
            );
            return complete(ToolResult {
                tool_use_id: id,
                content: vec![toolhost::Content::Text(text)],
                is_error: false,
                structured: Some(json!({ SESSION_ARGUMENT: handle })),
                stop: None,
                usage: None,
            });
        }
        let arguments = request.arguments.clone().unwrap_or_default();
        // The answers so far, when this call is one answering an approval.
        let mut answered = Vec::new();
        if let Some(state) = &request.request_state {
            match self.front.pending.resume(state, &owner, &request.name, &arguments, request.input_responses.as_ref())
            {
                Ok(a) => answered = a,
                Err(refused) => return complete(ToolResult::error(&id, refused.message())),
            }
        }
        self.call(request, context, id, Some(owner), answered).await
    }
}

impl McpSession {
    /// Runs one call through the pipeline: the state it names, its progress
    /// as notifications, its cancellation, and asks in the shape of the
    /// request's revision. `owner` is set for a sessionless request.
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        id: String,
        owner: Option<Arc<str>>,
        answered: Vec<(String, toolhost::Answer)>,
    ) -> Result<CallToolResponse, McpError> {
        let front = &self.front;
        let sent_arguments = request.arguments.unwrap_or_default();
        let mut arguments = sent_arguments.clone();
        let (session, executor) = match &owner {
            None => (Arc::clone(&self.session), Arc::clone(&self.executor)),
            Some(owner) => {
                let declared = front
                    .host
                    .tool(&request.name)
                    .is_some_and(|t| t.spec().input_schema["properties"].get(SESSION_ARGUMENT).is_some());
                match (declared, arguments.get(SESSION_ARGUMENT)) {
                    (true, _) | (false, None) => (Arc::clone(&self.session), Arc::clone(&self.executor)),
                    (false, Some(Value::String(handle))) => match front.handles.get(handle, owner) {
                        Some(held) => {
                            arguments.remove(SESSION_ARGUMENT);
                            (held.session, held.executor)
                        }
                        None => {
                            return complete(ToolResult::error(
                                &id,
                                format!(
                                    "Unknown {SESSION_ARGUMENT} \"{handle}\": it was never started, belongs to \
                                     another client, or ended after a while unused. Call {START_SESSION} for a \
                                     new one (files read before must be read again)."
                                ),
                            ));
                        }
                    },
                    (false, Some(_)) => {
                        return complete(ToolResult::error(
                            &id,
                            format!("{SESSION_ARGUMENT} must be the string {START_SESSION} returned."),
                        ));
                    }
                }
            }
        };
        // The call's progress comes here, in order, from the worker running it.
        let (progress_tx, mut progress) = tokio::sync::mpsc::unbounded_channel::<Progress>();
        let sink: ProgressSink = Arc::new(move |p| {
            let _ = progress_tx.send(p);
        });
        let asks = can_elicit(&context, owner.is_some());
        let deferring = (asks && owner.is_some()).then(|| Arc::new(Deferring::new(answered)));
        let approver: Option<Arc<dyn Approver>> = match &deferring {
            Some(d) => Some(Arc::clone(d) as Arc<dyn Approver>),
            None => asks.then(|| {
                Arc::new(Elicitation {
                    peer: context.peer.clone(),
                    cancelled: context.ct.clone(),
                    timeout: front.config.ask_timeout,
                    runtime: front.runtime.clone(),
                }) as Arc<dyn Approver>
            }),
        };
        let handle = executor.add_tool_with(
            ToolUse { id: id.clone(), name: request.name.to_string(), input: Value::Object(arguments) },
            CallSetup {
                progress: Some(sink),
                approver,
                traceparent: context.meta.get_traceparent().map(str::to_string),
            },
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
                    return complete(ToolResult::error(&id, "Cancelled by the client."));
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
        // A question for the user: the client asks it and calls again.
        if let (Some(deferring), Some(owner)) = (&deferring, owner)
            && let Some(question) = deferring.deferred()
        {
            let waiting = Waiting {
                owner,
                tool: request.name.to_string(),
                arguments: sent_arguments,
                request: question,
                answered: deferring.answered().to_vec(),
            };
            return match front.pending.defer(waiting) {
                Ok(input_required) => Ok(CallToolResponse::InputRequired(input_required)),
                Err(e) => complete(ToolResult::error(&id, format!("toolhost could not build the approval form: {e}"))),
            };
        }
        // What the call recorded (a read, for Edit's checks) is on disk
        // before the client sees its result.
        if session.is_persistent() {
            match tokio::task::spawn_blocking(move || session.save()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "could not save the session's state"),
                Err(e) => tracing::warn!(error = %e, "saving the session's state failed"),
            }
        }
        complete(result)
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

/// Serves one MCP client over standard input and output until it closes
/// the connection: in `session` (a persistent one, from `Host::session`),
/// else in a session of its own kept in memory.
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
