//! MCP servers' tools in toolhost's pool: the client side. Each configured
//! server (stdio or streamable HTTP) is connected, its tools listed and
//! offered as `mcp__SERVER__TOOL` ([`toolhost::remote`]); a call goes
//! through the host's whole pipeline and reaches the server here, under the
//! call's deadline, cancellation and progress.
//!
//! A stdio server is a child of the host confined as Bash's children are
//! (it writes only in the working directories and its own temporary
//! directory; it has no network unless `toolGrants.mcp__NAME` grants hosts).
//! A server that exits, floods (a message over [`MAX_MESSAGE`] bytes),
//! writes a line to stdout that is not a message, or lets a call run past
//! its deadline is cut off: the call fails saying so,
//! and the next call starts it again. A server's `tools/list_changed` reads
//! its tools again and the host swaps them in.

mod caller;
mod lines;

use crate::telemetry;
use caller::Caller;
use lines::Checked;
#[doc(hidden)]
pub use lines::StreamFault;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, Implementation, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerResult,
};
use rmcp::service::{NotificationContext, Peer, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;
use tokio::io::AsyncBufReadExt;
use toolhost::remote::{MAX_REMOTE_TOOLS, Remote, RemoteCall, RemoteCaller, RemoteSource, RemoteTool};
use toolhost::settings::{ConfiguredServer, McpServer};
use toolhost::{Confinement, Progress, ProgressSink};

/// Largest message a server may send, in bytes; a longer one cuts it off.
pub const MAX_MESSAGE: usize = 16 << 20;
/// How long a server has to start and answer `initialize` and `tools/list`.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Most pages of `tools/list` read from one server.
const MAX_PAGES: usize = 64;
/// Lines of a stdio server's stderr kept, for the error when it exits.
const STDERR_LINES: usize = 20;
/// Most progress notifications one call passes on.
const MAX_PROGRESS: u32 = 10_000;

/// What a stdio server may reach.
#[derive(Clone, Debug)]
pub struct ChildLimits {
    /// Directories it may write (the working directories).
    pub writable: Vec<PathBuf>,
    /// Where its private temporary directories go (one per server).
    pub temp_root: PathBuf,
    /// What to do when the kernel cannot confine it.
    pub confinement: Confinement,
    /// The servers granted the network (`toolGrants.mcp__NAME.hosts`).
    pub network: Vec<String>,
    /// Directories each server is granted to write, by server name.
    pub more_writable: BTreeMap<String, Vec<PathBuf>>,
    /// Variables each server is granted, by server name: the host's
    /// variables granted by name (`toolGrants.mcp__NAME.env`).
    pub env: BTreeMap<String, Vec<(String, String)>>,
    /// Secrets each server is granted, by server name (`NAME`, value): set
    /// as variables, and masked wherever they come back.
    pub secrets: BTreeMap<String, Vec<(String, String)>>,
}

/// The configured MCP servers, connected: a [`RemoteSource`] for
/// [`toolhost::HostBuilder::remote_tools`].
pub struct Servers {
    shared: Arc<Shared>,
}

struct Shared {
    /// The client's runtime: one thread (`toolhost-mcp-client`) runs every
    /// connection, so a call's exchange wakes no other worker.
    runtime: tokio::runtime::Handle,
    /// Dropped with the servers: the runtime's thread then ends, and with
    /// it every connection (their children are killed).
    _stop: tokio::sync::oneshot::Sender<()>,
    servers: Vec<Arc<Server>>,
    /// Told when a server's tools changed (the host reads them again).
    on_change: OnceLock<Box<dyn Fn() + Send + Sync>>,
}

struct Server {
    name: String,
    config: Result<McpServer, String>,
    file: String,
    limits: ChildLimits,
    /// The live connection, if any; `None` starts one at the next use.
    connection: tokio::sync::Mutex<Option<Arc<Connection>>>,
    /// The tools as last listed, or why they could not be.
    tools: Mutex<Result<Vec<RemoteTool>, String>>,
    /// Progress tokens of calls in flight → where their progress goes.
    progress: Arc<Mutex<HashMap<ProgressToken, Sink>>>,
    shared: OnceLock<Weak<Shared>>,
}

#[derive(Clone)]
struct Sink {
    id: String,
    sink: ProgressSink,
    sent: Arc<AtomicU32>,
}

struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// What tells how it ended.
    process: Process,
}

/// What tells how a server's connection ended (for HTTP, nothing but that
/// it closed).
#[derive(Default)]
struct Process {
    /// Set when the server broke the protocol on stdio (a message over
    /// [`MAX_MESSAGE`], a line that is not one).
    fault: Arc<OnceLock<StreamFault>>,
    /// Its stderr's last lines (stdio).
    stderr: Arc<StderrTail>,
    /// Its child process (stdio), to tell how it exited.
    child: Option<Arc<tokio::sync::Mutex<tokio::process::Child>>>,
}

#[derive(Clone)]
struct Handler {
    server: Weak<Server>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let Some(server) = self.server.upgrade() else { return };
        let sink = server.progress.lock().unwrap_or_else(|e| e.into_inner()).get(&params.progress_token).cloned();
        let Some(sink) = sink else { return };
        if sink.sent.fetch_add(1, Ordering::Relaxed) >= MAX_PROGRESS {
            return;
        }
        let mut message = params.message.unwrap_or_default();
        if message.len() > 16 * 1024 {
            let mut cut = 16 * 1024;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
        }
        let data = serde_json::json!({"progress": params.progress, "total": params.total});
        (sink.sink)(Progress { tool_use_id: sink.id, message, data: Some(data) });
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let Some(server) = self.server.upgrade() else { return };
        tracing::info!(server = %server.name, "the server says its tools changed; reading them again");
        tokio::spawn(relist(server));
    }
}

/// First wait before starting again a server that could not start; each
/// failure doubles it, up to [`RETRY_MOST`].
const RETRY_FIRST: Duration = Duration::from_secs(2);
const RETRY_MOST: Duration = Duration::from_secs(300);

/// Tries to start a server that could not start, until it does (or the
/// host goes away); then lists its tools and tells the host.
async fn retry(server: Weak<Server>) {
    let mut wait = RETRY_FIRST;
    loop {
        tokio::time::sleep(wait).await;
        let Some(server) = server.upgrade() else { return };
        let listed = server.live_tools().await;
        if listed.is_ok() {
            tracing::info!(server = %server.name, "the server started");
            *server.tools.lock().unwrap_or_else(|e| e.into_inner()) = listed;
            tell_host(&server);
            return;
        }
        wait = (wait * 2).min(RETRY_MOST);
    }
}

/// Lists `server`'s tools again, then tells the host (boxed: listing may
/// start the server, whose handler calls this).
fn relist(server: Arc<Server>) -> Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(async move {
        let listed = server.live_tools().await;
        match listed {
            Ok(tools) => *server.tools.lock().unwrap_or_else(|e| e.into_inner()) = Ok(tools),
            // The tools known stay offered; a call finds out.
            Err(why) => tracing::warn!(server = %server.name, "could not list the tools again: {why}"),
        }
        tell_host(&server);
    })
}

/// Tells the host that `server`'s tools changed, off the client's thread
/// (the host's reload may wait for a plugins reload to finish).
fn tell_host(server: &Server) {
    if let Some(shared) = server.shared.get().and_then(Weak::upgrade) {
        tokio::task::spawn_blocking(move || {
            if let Some(changed) = shared.on_change.get() {
                changed();
            }
        });
    }
}

impl Servers {
    /// Connects every server of `configured` (at most [`START_TIMEOUT`]
    /// each, all at once) and lists its tools; a server that cannot be
    /// reached is a problem of the pool, and tried again with growing waits.
    pub fn start(configured: &BTreeMap<String, ConfiguredServer>, limits: ChildLimits) -> std::io::Result<Servers> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new().name("toolhost-mcp-client".into()).spawn(move || {
            let _ = runtime.block_on(stopped);
        })?;
        let servers: Vec<Arc<Server>> = configured
            .iter()
            .map(|(name, c)| {
                Arc::new(Server {
                    name: name.clone(),
                    config: c.server.clone(),
                    file: c.file.clone(),
                    limits: limits.clone(),
                    connection: tokio::sync::Mutex::new(None),
                    tools: Mutex::new(Err("not listed yet".into())),
                    progress: Arc::default(),
                    shared: OnceLock::new(),
                })
            })
            .collect();
        let shared = Arc::new(Shared { runtime: handle, _stop: stop, servers, on_change: OnceLock::new() });
        for server in &shared.servers {
            let _ = server.shared.set(Arc::downgrade(&shared));
        }
        let listing: Vec<_> = shared
            .servers
            .iter()
            .map(|server| {
                let server = Arc::clone(server);
                shared.runtime.spawn(async move {
                    let listed = server.live_tools().await;
                    if let Err(why) = &listed {
                        tracing::warn!(server = %server.name, "{why}");
                    }
                    *server.tools.lock().unwrap_or_else(|e| e.into_inner()) = listed;
                })
            })
            .collect();
        // Waited for on this thread (which may be inside another runtime).
        let (done, all_done) = std::sync::mpsc::channel();
        shared.runtime.spawn(async move {
            for task in listing {
                let _ = task.await;
            }
            let _ = done.send(());
        });
        let _ = all_done.recv();
        // A server that could not start is tried again, less and less often.
        for server in &shared.servers {
            let failed = server.tools.lock().unwrap_or_else(|e| e.into_inner()).is_err();
            if failed && server.config.is_ok() {
                shared.runtime.spawn(retry(Arc::downgrade(server)));
            }
        }
        Ok(Servers { shared })
    }

    /// Calls `changed` whenever a server's tools changed.
    pub fn on_change(&self, changed: impl Fn() + Send + Sync + 'static) {
        let _ = self.shared.on_change.set(Box::new(changed));
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        // The children go with their connections (killed on drop).
        for server in &self.shared.servers {
            if let Ok(mut connection) = server.connection.try_lock() {
                connection.take();
            }
        }
        // Their temporary directories go too.
        if let Some(server) = self.shared.servers.first() {
            let _ = std::fs::remove_dir_all(&server.limits.temp_root);
        }
    }
}

impl RemoteSource for Servers {
    fn tools(&self) -> (Vec<RemoteTool>, Vec<(String, String)>) {
        let (mut tools, mut problems) = (Vec::new(), Vec::new());
        for server in &self.shared.servers {
            match &*server.tools.lock().unwrap_or_else(|e| e.into_inner()) {
                Ok(listed) => tools.extend(listed.iter().cloned()),
                Err(why) => problems.push((format!("mcp:{} ({})", server.name, server.file), why.clone())),
            }
        }
        (tools, problems)
    }
}

impl Server {
    /// How requests reach it, as the conventions' `network.transport` says.
    fn transport(&self) -> &'static str {
        match &self.config {
            Ok(McpServer::Http { .. }) => "tcp",
            _ => "pipe",
        }
    }

    /// The secrets it is granted.
    fn secrets(&self) -> Arc<[(String, String)]> {
        self.limits.secrets.get(&self.name).cloned().unwrap_or_default().into()
    }

    /// Its tools, listed over the live connection (started if there is none).
    async fn live_tools(self: &Arc<Self>) -> Result<Vec<RemoteTool>, String> {
        let connection = self.live().await?;
        self.list(&connection.service.peer().clone()).await
    }

    /// The live connection, started if there is none.
    async fn live(self: &Arc<Self>) -> Result<Arc<Connection>, String> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref()
            && !connection.service.is_closed()
        {
            return Ok(Arc::clone(connection));
        }
        let restart = slot.take();
        if let Some(dead) = &restart {
            let why = dead.process.ended(&self.name).await;
            tracing::info!(server = %self.name, why = %why, "starting the server again");
        }
        let config =
            self.config.as_ref().map_err(|why| format!("the MCP server {} ({}): {why}", self.name, self.file))?;
        let started = tokio::time::timeout(START_TIMEOUT, self.connect(config)).await.unwrap_or_else(|_| {
            Err(format!("the MCP server {} did not start and answer within {} s", self.name, START_TIMEOUT.as_secs()))
        })?;
        let connection = Arc::new(started);
        *slot = Some(Arc::clone(&connection));
        if restart.is_some() {
            // Started again: its tools may have changed meanwhile.
            tokio::spawn(relist(Arc::clone(self)));
        }
        Ok(connection)
    }

    async fn connect(self: &Arc<Self>, config: &McpServer) -> Result<Connection, String> {
        let handler = Handler { server: Arc::downgrade(self) };
        let fail = |e: &dyn std::fmt::Display| format!("the MCP server {} could not be started: {e}", self.name);
        match config {
            McpServer::Stdio { command, args, env } => {
                // As Bash's children: a few of the host's variables, then
                // what is granted, then the server's own `env`.
                let mut cmd = std::process::Command::new(command);
                cmd.env_clear().envs(toolhost::child_environment());
                cmd.envs(self.limits.env.get(&self.name).into_iter().flatten().map(|(k, v)| (k, v)));
                cmd.envs(self.secrets().iter().map(|(k, v)| (k, v)));
                cmd.args(args)
                    .envs(env)
                    .current_dir(self.limits.writable.first().cloned().unwrap_or_else(|| ".".into()));
                let temp = self.limits.temp_root.join(toolhost::remote::normalize_name(&self.name));
                std::fs::create_dir_all(&temp).map_err(|e| fail(&e))?;
                cmd.env("TMPDIR", &temp);
                let mut writable = self.limits.writable.clone();
                writable.push(temp);
                writable.extend(self.limits.more_writable.get(&self.name).into_iter().flatten().cloned());
                let network = self.limits.network.contains(&self.name);
                let confined = toolhost::confine_program(&mut cmd, writable, network, self.limits.confinement)
                    .map_err(|e| fail(&e))?;
                let mut cmd = tokio::process::Command::from(cmd);
                cmd.stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .kill_on_drop(true);
                let mut child = cmd.spawn().map_err(|e| fail(&format!("{command}: {e}")))?;
                drop(confined);
                let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
                let (Some(stdin), Some(stdout), Some(stderr)) = (stdin, stdout, stderr) else {
                    return Err(fail(&"its standard streams could not be opened"));
                };
                let child = Some(Arc::new(tokio::sync::Mutex::new(child)));
                let process = Process { child, ..Process::default() };
                tokio::spawn(keep_stderr(stderr, Arc::clone(&process.stderr), self.name.clone(), self.secrets()));
                let read = Checked::new(stdout, Arc::clone(&process.fault));
                match handler.serve((read, stdin)).await {
                    Ok(service) => Ok(Connection { service, process }),
                    Err(e) => Err(format!("{} ({e})", process.ended(&self.name).await)),
                }
            }
            McpServer::Http { url, headers } => {
                use rmcp::transport::StreamableHttpClientTransport;
                use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                let _ = rustls::crypto::ring::default_provider().install_default();
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    match (name.eq_ignore_ascii_case("authorization"), value.strip_prefix("Bearer ")) {
                        (true, Some(token)) => config = config.auth_header(token),
                        _ => {
                            let name = http::HeaderName::try_from(name.as_str()).map_err(|e| fail(&e))?;
                            let value = http::HeaderValue::try_from(value.as_str()).map_err(|e| fail(&e))?;
                            custom.insert(name, value);
                        }
                    }
                }
                config.max_sse_event_size = MAX_MESSAGE;
                config.max_json_response_size = MAX_MESSAGE;
                let transport = StreamableHttpClientTransport::from_config(config.custom_headers(custom));
                let service = handler.serve(transport).await.map_err(|e| fail(&e))?;
                Ok(Connection { service, process: Process::default() })
            }
        }
    }

    /// Its tools, listed page by page (at most [`MAX_PAGES`] pages and
    /// [`MAX_REMOTE_TOOLS`] tools), each described for the pool.
    async fn list(self: &Arc<Self>, peer: &Peer<RoleClient>) -> Result<Vec<RemoteTool>, String> {
        let caller: Arc<dyn RemoteCaller> = Arc::new(Caller { server: Arc::downgrade(self) });
        let mut tools = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let params = cursor.take().map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = tokio::time::timeout(START_TIMEOUT, peer.list_tools(params))
                .await
                .map_err(|_| {
                    format!("the MCP server {} did not list its tools within {} s", self.name, START_TIMEOUT.as_secs())
                })?
                .map_err(|e| format!("the MCP server {} could not list its tools: {e}", self.name))?;
            for tool in page.tools {
                if tools.len() == MAX_REMOTE_TOOLS {
                    tracing::warn!(server = %self.name, "the server offers more than {MAX_REMOTE_TOOLS} tools; the rest are left out");
                    return Ok(tools);
                }
                let entry = serde_json::to_value(&tool).unwrap_or_default();
                match toolhost::remote::describe(&self.name, &entry) {
                    Ok((spec, name, warnings)) => {
                        let remote = Remote {
                            server: self.name.clone(),
                            tool: name,
                            caller: Arc::clone(&caller),
                            secrets: self.secrets(),
                        };
                        tools.push(RemoteTool { spec, remote, warnings });
                    }
                    Err(why) => tracing::warn!(server = %self.name, tool = %tool.name, "left out: {why}"),
                }
            }
            match page.next_cursor {
                Some(next) if !next.is_empty() => cursor = Some(next),
                _ => return Ok(tools),
            }
        }
        Ok(tools)
    }

    async fn call(self: &Arc<Self>, tool: &str, input: Value, call: &RemoteCall) -> Result<Value, String> {
        let arguments = match input {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        // The trace goes on in the server (the span current here is this
        // call's client span).
        let mut meta = rmcp::model::RequestMetaObject::default();
        telemetry::inject(&tracing::Span::current(), &mut meta);
        if !meta.0.0.is_empty() {
            params.meta = Some(meta);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // A connection that died since its last use (the server exited
        // between calls) is found out here: started again, once.
        let mut connection = self.live().await?;
        let handle = loop {
            let peer = connection.service.peer().clone();
            match peer.send_cancellable_request(request.clone(), Default::default()).await {
                Ok(handle) => break handle,
                Err(e) => {
                    let why = connection.process.ended(&self.name).await;
                    self.cut_off(&connection).await;
                    match self.live().await {
                        Ok(fresh) if !Arc::ptr_eq(&fresh, &connection) => connection = fresh,
                        _ => return Err(format!("{why} Its call of {tool} was not sent ({e}).")),
                    }
                }
            }
        };
        let peer = connection.service.peer().clone();
        let (id, token) = (handle.id.clone(), handle.progress_token.clone());
        if let Some(sink) = &call.progress {
            let sink = Sink { id: call.tool_use_id.clone(), sink: Arc::clone(sink), sent: Arc::default() };
            self.progress.lock().unwrap_or_else(|e| e.into_inner()).insert(token.clone(), sink);
        }
        let cancel = call.cancel.clone();
        let cancelled = async move {
            match cancel {
                Some(flag) => {
                    while !flag.load(Ordering::Relaxed) {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                None => std::future::pending().await,
            }
        };
        let tell = |reason: &str| {
            let notification =
                CancelledNotification::new(CancelledNotificationParam::new(Some(id.clone()), Some(reason.to_string())));
            let peer = peer.clone();
            async move {
                let _ = tokio::time::timeout(Duration::from_secs(1), peer.send_notification(notification.into())).await;
            }
        };
        let answer = tokio::select! {
            answer = handle.await_response() => match answer {
                Ok(ServerResult::CallToolResult(result)) => {
                    Ok(serde_json::to_value(result).unwrap_or_default())
                }
                Ok(other) => Err(format!(
                    "The MCP server {} answered the call of {tool} with something other than a tool result ({}).",
                    self.name,
                    serde_json::to_string(&other).unwrap_or_default().chars().take(200).collect::<String>()
                )),
                Err(rmcp::ServiceError::McpError(e)) => Err(format!("The MCP server {} refused the call of {tool}: {}", self.name, e.message)),
                Err(_) => {
                    let why = connection.process.ended(&self.name).await;
                    self.cut_off(&connection).await;
                    Err(format!("{why} The call of {tool} got no answer."))
                }
            },
            _ = tokio::time::sleep(call.timeout) => {
                tell("timed out").await;
                // A server that lets a call run past its deadline is cut
                // off; the next call starts it again.
                self.cut_off(&connection).await;
                Err(format!(
                    "{} did not answer within {} ms; the call was stopped and the MCP server {} cut off (it is \
                     started again at its next call).",
                    tool, call.timeout.as_millis(), self.name
                ))
            }
            _ = cancelled => {
                tell("cancelled").await;
                Err(format!("mcp__{}__{tool} was cancelled.", toolhost::remote::normalize_name(&self.name)))
            }
        };
        self.progress.lock().unwrap_or_else(|e| e.into_inner()).remove(&token);
        answer
    }

    /// Drops the connection (its child is killed), if it is still `connection`.
    async fn cut_off(&self, connection: &Arc<Connection>) {
        let mut slot = self.connection.lock().await;
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, connection)) {
            slot.take();
        }
        if let Some(child) = &connection.process.child {
            let _ = child.lock().await.start_kill();
        }
    }
}

impl Process {
    /// Why the server stopped answering, for a message.
    async fn ended(&self, name: &str) -> String {
        let mut why = if let Some(fault) = self.fault.get() {
            fault.describe(name)
        } else {
            let status = match &self.child {
                Some(child) => {
                    let mut child = child.lock().await;
                    match tokio::time::timeout(Duration::from_millis(500), child.wait()).await {
                        Ok(Ok(status)) => format!(" ({status})"),
                        _ => String::new(),
                    }
                }
                None => String::new(),
            };
            let again = if self.child.is_some() { "started again" } else { "connected to again" };
            format!("The MCP server {name} closed its connection{status}; it is {again} at its next call.")
        };
        // What it wrote last, once its stderr is read to the end (briefly).
        for _ in 0..50 {
            if self.stderr.done.load(Ordering::Acquire) || self.child.is_none() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let lines = self.stderr.lines.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect::<Vec<_>>();
        if !lines.is_empty() {
            why.push_str(&format!("\nIts last output:\n{}", lines.join("\n")));
        }
        why
    }
}

/// The last lines of a server's stderr, and whether it was read to its end.
#[derive(Default)]
struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    done: AtomicBool,
}

/// Keeps the last [`STDERR_LINES`] lines of a server's stderr (each cut at
/// 1 KiB) and logs them at debug; reads on whatever it writes.
async fn keep_stderr(
    stderr: tokio::process::ChildStderr,
    lines: Arc<StderrTail>,
    name: String,
    secrets: Arc<[(String, String)]>,
) {
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // A line is read in pieces of at most 8 KiB: a flood without
        // newlines cannot grow the buffer.
        let read = {
            let available = match reader.fill_buf().await {
                Ok([]) | Err(_) => {
                    lines.done.store(true, Ordering::Release);
                    return;
                }
                Ok(bytes) => bytes,
            };
            let end = available.iter().position(|&b| b == b'\n').map_or(available.len().min(8192), |i| i + 1);
            buf.extend_from_slice(&available[..end]);
            end
        };
        reader.consume(read);
        let mut line = toolhost::secrets::mask(String::from_utf8_lossy(&buf).trim_end(), &secrets);
        if line.is_empty() {
            continue;
        }
        if line.len() > 1024 {
            let mut cut = 1024;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
        }
        tracing::debug!(server = %name, "stderr: {line}");
        let mut kept = lines.lines.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() == STDERR_LINES {
            kept.pop_front();
        }
        kept.push_back(line);
    }
}

/// How a stdio server's output fares through the line check: `Ok` if every
/// line passed, else the fault (for the fuzz target `mcp_server_lines`).
#[doc(hidden)]
pub fn check_server_output(output: &[u8]) -> Result<(), StreamFault> {
    lines::check_all(output)
}
