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
//! Calls are independent requests ([`Calls::Independent`](toolhost::Calls::Independent)): each result
//! goes back as soon as it is ready, and no call is cancelled by another's
//! failure. Each request awaits its own [`toolhost::CallHandle`]; the
//! protocol thread never waits on a tool.

mod asks;
pub mod client;
mod flow;
pub mod handles;
mod http;
mod quota;
mod records;
mod stdio;
mod telemetry;
mod tools;

pub use client::{ChildLimits, Servers};
pub use handles::{SESSION_ARGUMENT, START_SESSION};
pub use http::{
    Credential, CredentialsError, HTTP_PATH, HttpConfig, MAX_SESSIONS_PER_IDENTITY, SOLE_TOKEN_NAME, parse_credentials,
    serve_http,
};
pub use tools::{sessionless_tools, to_mcp, tools};

use asks::{Deferring, Elicitation, Pending, Waiting};
use handles::{Handles, Held};
use records::Records;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, Implementation, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerCapabilities,
    SubscriptionFilter,
};
use rmcp::service::{ElicitationMode, RequestContext, SubscriptionContext};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolhost::CallSetup;
use toolhost::{Approver, Host, Progress, ProgressSink, Session, ToolResult, ToolUse};
use tracing::Instrument;

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
    /// Keep what spans requests (the older revisions' HTTP sessions and
    /// their state, state handles, calls waiting for an answer) in the
    /// host's state store, so that every instance sharing it serves any
    /// request; otherwise in this process's memory.
    pub shared_state: bool,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            max_concurrency: toolhost::DEFAULT_MAX_CONCURRENCY,
            ask_timeout: Duration::from_secs(600),
            handle_idle: Duration::from_secs(8 * 3600),
            shared_state: false,
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
    /// What spans requests: in memory, or in the store instances share.
    records: Arc<Records>,
}

impl Front {
    pub(crate) fn new(host: Host, config: ServeConfig) -> Arc<Front> {
        let records = Arc::new(Records::new(&host, config.shared_state));
        Arc::new(Front {
            handles: Handles::new(host.clone(), config.max_concurrency, config.handle_idle, Arc::clone(&records)),
            pending: Pending::new(config.ask_timeout, Arc::clone(&records)),
            records,
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
    /// The state of calls naming no handle: given at the start (stdio), or
    /// made at the first call (HTTP: the session's, in the shared store
    /// when there is one).
    own: std::sync::OnceLock<Held>,
    /// Cancelled when the session ends: stops telling its client of reloads.
    ended: CancellationToken,
}

/// Runs `f` on a blocking thread: the state store's calls block, and the
/// protocol thread must not.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f).await.map_err(|e| e.to_string()).and_then(|r| r)
}

/// Milliseconds since the epoch: when records in a shared store were
/// written, and until when they hold.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Whether `id`, from a client, can be one the server made with `prefix`
/// (`unguessable_id`): anything else is unknown without asking the store.
pub(crate) fn could_be(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix).is_some_and(|rest| rest.len() == 26 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// The persistent session holding the state of HTTP session `id` (older
/// revisions), when instances share state.
pub(crate) fn http_session_id(id: &str) -> String {
    format!("mcp-{id}")
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
        let held = Held::new(&front.host, session, front.config.max_concurrency);
        McpSession { front, own: held.into(), ended: CancellationToken::new() }
    }

    /// An HTTP session (or one 2026-07-28 request), its state made at its
    /// first call.
    pub(crate) fn lazy(front: Arc<Front>) -> McpSession {
        McpSession { front, own: std::sync::OnceLock::new(), ended: CancellationToken::new() }
    }

    /// The state of the request's calls that name no handle; else what
    /// the model is told.
    async fn own(&self, context: &RequestContext<RoleServer>, revision: &Revision) -> Result<Held, String> {
        if let Some(held) = self.own.get() {
            return Ok(held.clone());
        }
        let front = &self.front;
        // An HTTP session of an older revision, with instances sharing state:
        // its state is in the store under its id.
        let shared_id = context
            .extensions
            .get::<::http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|v| v.to_str().ok())
            .filter(|_| front.config.shared_state && matches!(revision, Revision::Session))
            .map(http_session_id);
        let session = match shared_id {
            Some(id) => {
                let host = front.host.clone();
                blocking(move || host.session(&id).map_err(|e| e.to_string()))
                    .await
                    .map_err(|e| format!("toolhost could not open the session: {e}"))?
            }
            None => front.host.ephemeral_session(),
        };
        let mut made = Some(Held::new(&front.host, session, front.config.max_concurrency));
        let held = self.own.get_or_init(|| made.take().expect("made once")).clone();
        if let Some(unused) = made {
            // Another call of this session made it first: only the executor
            // is this one's own (the session may be the same).
            unused.executor.discard();
        }
        Ok(held)
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        // The session ended: its running calls are cancelled.
        self.ended.cancel();
        if let Some(held) = self.own.get() {
            held.end(&self.front.host);
        }
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

/// How a request is served, by its protocol revision: decided once, as it
/// arrives, and followed along the whole call.
enum Revision {
    /// A revision with a session (up to 2025-11-25): calls share the
    /// session's state; an ask is a live elicitation, if the client said
    /// at `initialize` that it can answer one.
    Session,
    /// 2026-07-28 on, without a session: state that spans calls is a
    /// handle `owner` made; an ask ends the call with an
    /// `InputRequiredResult` and the client calls again with the answer.
    Sessionless {
        /// Who made the request: the owner of the handles it names and of
        /// the asks it leaves waiting.
        owner: Arc<str>,
    },
}

impl Revision {
    fn of(context: &RequestContext<RoleServer>) -> Revision {
        match sessionless(context) {
            true => Revision::Sessionless { owner: identity(context) },
            false => Revision::Session,
        }
    }

    /// Whether the client can answer a form elicitation: told at
    /// `initialize` with a session, in each request's `_meta` without.
    fn can_elicit(&self, context: &RequestContext<RoleServer>) -> bool {
        match self {
            Revision::Session => context.peer.supported_elicitation_modes().contains(&ElicitationMode::Form),
            // An empty elicitation capability means form (the older revisions' shape).
            Revision::Sessionless { .. } => context
                .client_capabilities()
                .and_then(|c| c.elicitation)
                .is_some_and(|e| e.form.is_some() || e.url.is_none()),
        }
    }
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
        let served = telemetry::Served::start("tools/list", None, true, &context);
        let list = served.span.in_scope(|| match Revision::of(&context) {
            Revision::Session => ListToolsResult::with_all_items(tools(&self.front.host)),
            // The same list for every client and identity; a listener hears
            // of a change at once, others look again after the TTL.
            Revision::Sessionless { .. } => ListToolsResult::with_all_items(sessionless_tools(&self.front.host))
                .with_ttl_ms(TOOLS_TTL.as_millis() as u64)
                .with_cache_scope(CacheScope::Private),
        });
        served.end(None);
        Ok(list)
    }

    /// A call, in its server span (`tools/call {tool}`, continuing the
    /// client's trace): the call's own span is its child.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let known = request.name == START_SESSION || self.front.host.tool(&request.name).is_some();
        let served = telemetry::Served::start("tools/call", Some(&request.name), known, &context);
        let span = served.span.clone();
        // Boxed: rmcp moves the future of every request it serves into a task
        // of its own (several copies on the way), and this one, with the
        // whole call's state in it, is by far the largest it serves.
        let response = Box::pin(self.call_tool_traced(request, context).instrument(span)).await;
        served.end(match &response {
            Ok(CallToolResponse::Complete(result)) if result.is_error == Some(true) => Some("tool_error".into()),
            Ok(_) => None,
            Err(e) => Some(e.code.0.to_string()),
        });
        response
    }
}

impl McpSession {
    async fn call_tool_traced(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let id = call_id();
        let revision = Revision::of(&context);
        let Revision::Sessionless { owner } = &revision else {
            return self.call(request, context, id, revision, Vec::new()).await;
        };
        let owner = Arc::clone(owner);
        if request.name == START_SESSION {
            let front = Arc::clone(&self.front);
            let starter = Arc::clone(&owner);
            let handle = match blocking(move || front.handles.start(&starter)).await {
                Ok(handle) => handle,
                Err(e) => return complete(ToolResult::error(&id, format!("Could not start a session: {e}"))),
            };
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
        if let Some(state) = request.request_state.clone() {
            let front = Arc::clone(&self.front);
            let (who, tool, responses) =
                (Arc::clone(&owner), request.name.to_string(), request.input_responses.clone());
            let resumed =
                blocking(move || Ok(front.pending.resume(&state, &who, &tool, &arguments, responses.as_ref())))
                    .await
                    .unwrap_or_else(|e| Err(asks::Refused::Store(e)));
            match resumed {
                Ok(a) => answered = a,
                Err(refused) => return complete(ToolResult::error(&id, refused.message())),
            }
        }
        self.call(request, context, id, revision, answered).await
    }
}

impl McpSession {
    /// The state `handle` names, for a call by `owner`; else what the model
    /// is told.
    async fn named(&self, handle: Value, owner: &Arc<str>) -> Result<Held, String> {
        let Value::String(handle) = handle else {
            return Err(format!("{SESSION_ARGUMENT} must be the string {START_SESSION} returned."));
        };
        let (front, who, name) = (Arc::clone(&self.front), Arc::clone(owner), handle.clone());
        match blocking(move || front.handles.get(&name, &who)).await {
            Ok(Some(held)) => Ok(held),
            Ok(None) => Err(format!(
                "Unknown {SESSION_ARGUMENT} \"{handle}\": it was never started, belongs to another client, or ended \
                 after a while unused. Call {START_SESSION} for a new one (files read before must be read again)."
            )),
            Err(e) => Err(format!("toolhost could not look up {SESSION_ARGUMENT}: {e}. Try again shortly.")),
        }
    }

    /// Runs one call through the pipeline: the state it names, its progress
    /// as notifications, its cancellation, and asks in the shape of the
    /// request's revision.
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        id: String,
        revision: Revision,
        answered: Vec<(String, toolhost::Answer)>,
    ) -> Result<CallToolResponse, McpError> {
        let front = &self.front;
        let sent_arguments = request.arguments.unwrap_or_default();
        let mut arguments = sent_arguments.clone();
        let held = match &revision {
            Revision::Session => self.own(&context, &revision).await,
            Revision::Sessionless { owner } => {
                // The handle the call names (a tool declaring an argument of
                // that name gets it as it is).
                let declared = front
                    .host
                    .tool(&request.name)
                    .is_some_and(|t| t.spec().input_schema["properties"].get(SESSION_ARGUMENT).is_some());
                let named = if declared { None } else { arguments.remove(SESSION_ARGUMENT) };
                match named {
                    Some(handle) => self.named(handle, owner).await,
                    None => self.own(&context, &revision).await,
                }
            }
        };
        let Held { session, executor } = match held {
            Ok(held) => held,
            Err(message) => return complete(ToolResult::error(&id, message)),
        };
        // The call's progress comes here, in order, from the worker running it.
        let (progress_tx, mut progress) = tokio::sync::mpsc::unbounded_channel::<Progress>();
        let sink: ProgressSink = Arc::new(move |p| {
            let _ = progress_tx.send(p);
        });
        // Who answers the call's asks, if the client can: the user through a
        // live elicitation, or a question the client puts and calls again with.
        let asks = revision.can_elicit(&context);
        let deferring = match &revision {
            Revision::Sessionless { .. } if asks => Some(Arc::new(Deferring::new(answered))),
            _ => None,
        };
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
                identity: Some(identity(&context)),
                parent: None,
                // The request's span: the call runs on a worker thread.
                span: Some(tracing::Span::current()),
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
        if let (Some(deferring), Revision::Sessionless { owner }) = (&deferring, &revision)
            && let Some(question) = deferring.deferred()
        {
            let waiting = Waiting {
                owner: owner.to_string(),
                tool: request.name.to_string(),
                arguments: sent_arguments,
                request: question,
                answered: deferring.answered().to_vec(),
            };
            let deferring_front = Arc::clone(front);
            return match blocking(move || deferring_front.pending.defer(waiting)).await {
                Ok(input_required) => Ok(CallToolResponse::InputRequired(input_required)),
                Err(e) => complete(ToolResult::error(&id, format!("toolhost could not ask for approval: {e}"))),
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
    toolhost::unguessable_id("toolu_mcp_")
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

/// Standard input and output as an MCP transport, read only as fast as the
/// calls are answered ([`flow::Bounded`]).
fn stdio_transport() -> flow::Bounded<AsyncRwTransport<RoleServer, stdio::Reader, stdio::Writer>> {
    let (read, write) = stdio::standard();
    flow::Bounded::new(AsyncRwTransport::new_server(read, write), flow::MAX_UNANSWERED)
}

/// Serves one MCP client over standard input and output until it closes
/// the connection: in `session` (a persistent one, from `Host::session`),
/// else in a session of its own kept in memory.
pub async fn serve_stdio(host: Host, config: ServeConfig, session: Option<Arc<Session>>) -> Result<(), ServeError> {
    use rmcp::ServiceExt as _;
    let session = session.unwrap_or_else(|| host.ephemeral_session());
    let running = McpSession::over(host, config, session)
        .serve(stdio_transport())
        .await
        .map_err(|e| ServeError::Initialize(e.to_string()))?;
    running.waiting().await.map_err(|e| ServeError::Session(e.to_string()))?;
    Ok(())
}
