//! One fresh, bounded Store per call: the capabilities a tool was granted and
//! nothing else, a memory limit, a deadline, and cancellation.

use super::network::Network;
use super::output::GuestOutput;
use super::stdio::{GuestInput, Stdio};
use crate::grants::DirAccess;
use crate::grants::{CallLimits, FileAccess, Grants};
use crate::imports::{CallScope, CallView};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime::{Engine, ResourceLimiter, Store, StoreContextMut, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// Bytes of a guest's stdout and stderr kept for the log (and for the message
/// when it panics).
pub(crate) const CAPTURED_OUTPUT: usize = 64 * 1024;

pub(crate) use crate::epoch::Interrupted;

/// The memory limit was hit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("exceeded its memory limit of {limit} bytes (asked for {desired})")]
pub(crate) struct MemoryExceeded {
    pub limit: usize,
    pub desired: usize,
}

/// Why a guest's export failed, read from the error wasmtime returned: the
/// one place that knows which errors the sandbox's limits raise.
#[derive(Debug)]
pub(crate) enum GuestFault<'a> {
    /// Stopped at its deadline, the limit that set it.
    Timeout(Duration),
    Cancelled,
    /// Hit its memory limit, in bytes.
    Memory(usize),
    /// Trapped (a Rust guest's panic included).
    Trap(&'a wasmtime::Trap),
    /// Held more component-model handles (resources, futures, streams,
    /// tasks) at once than wasmtime lets a Store hold: state in the host,
    /// outside its memory, which wasmtime caps.
    Handles,
    /// Anything else: output the host could not read, a link error.
    Other,
}

impl GuestFault<'_> {
    pub(crate) fn of(e: &wasmtime::Error) -> GuestFault<'_> {
        if let Some(i) = e.downcast_ref::<Interrupted>() {
            match i {
                Interrupted::Timeout(limit) => GuestFault::Timeout(*limit),
                Interrupted::Cancelled => GuestFault::Cancelled,
            }
        } else if let Some(m) = e.downcast_ref::<MemoryExceeded>() {
            GuestFault::Memory(m.limit)
        } else if let Some(trap) = e.downcast_ref::<wasmtime::Trap>() {
            GuestFault::Trap(trap)
        } else if e.chain().any(|cause| cause.to_string().ends_with(HANDLE_LIMIT)) {
            GuestFault::Handles
        } else {
            GuestFault::Other
        }
    }
}

/// How wasmtime 48 ends the message of the error it raises when a Store's
/// component handles reach its cap (`vm/component/handle_table.rs`; a test
/// of the async-ABI guests notices if it changes).
const HANDLE_LIMIT: &str = "store handle limit exceeded";

/// Per-Store limits, enforced through [`ResourceLimiter`], and the memory
/// the Store's instances use.
pub(crate) struct MemoryLimiter {
    pub memory: usize,
    /// Linear memory of every memory of the Store together; memories never
    /// shrink, so this is also the peak.
    pub used: usize,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.memory {
            // An error (not `Ok(false)`) traps at once with a message we can
            // report, instead of a guest abort somewhere in its allocator.
            return Err(MemoryExceeded { limit: self.memory, desired }.into());
        }
        self.used += desired.saturating_sub(current);
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }

    fn instances(&self) -> usize {
        64
    }
    fn tables(&self) -> usize {
        64
    }
    fn memories(&self) -> usize {
        16
    }
}

/// The data of a Store: one field per capability context, the resource
/// table, the limits.
pub(crate) struct HostState {
    pub wasi: WasiCtx,
    #[cfg(feature = "http")]
    pub http: HttpState,
    pub table: ResourceTable,
    pub limits: MemoryLimiter,
    pub call: CallScope,
    /// The standard streams and arguments a command runs with.
    pub stdio: Stdio,
}

impl HostState {
    /// What the toolhost interfaces work on.
    pub(crate) fn call_view(&mut self) -> CallView<'_> {
        CallView { scope: &mut self.call, table: &mut self.table }
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// `wasi:http`'s context and the hooks that police it.
#[cfg(feature = "http")]
pub(crate) struct HttpState {
    ctx: wasmtime_wasi_http::WasiHttpCtx,
    hooks: super::network::http::Hooks,
}

#[cfg(feature = "http")]
impl wasmtime_wasi_http::WasiHttpView for HostState {
    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        wasmtime_wasi_http::WasiHttpCtxView {
            ctx: &mut self.http.ctx,
            hooks: &mut self.http.hooks,
            table: &mut self.table,
        }
    }
}

/// The epoch callback: stops the guest when the call is cancelled or past its
/// deadline, otherwise checks again at the next tick.
fn on_epoch(ctx: StoreContextMut<'_, HostState>) -> wasmtime::Result<UpdateDeadline> {
    let call = &ctx.data().call;
    if call.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
        return Err(Interrupted::Cancelled.into());
    }
    if let Some((at, limit)) = call.deadline
        && Instant::now() >= at
    {
        return Err(Interrupted::Timeout(limit).into());
    }
    Ok(UpdateDeadline::Continue(1))
}

/// The guest's captured stdout and stderr.
#[derive(Clone)]
pub(crate) struct Captured {
    pub stdout: GuestOutput,
    pub stderr: GuestOutput,
    /// How much of each the calls before this one printed (a warm instance
    /// serves several): bytes kept, bytes dropped past the cap.
    before: [(usize, u64); 2],
}

impl Captured {
    fn new() -> Captured {
        Captured {
            stdout: GuestOutput::new(CAPTURED_OUTPUT),
            stderr: GuestOutput::new(CAPTURED_OUTPUT),
            before: [(0, 0); 2],
        }
    }

    /// The last non-empty lines this call wrote to stderr, where a Rust
    /// guest's panic message ends up (`panicked at src/lib.rs:10:5: boom`).
    pub(crate) fn last_stderr_lines(&self, n: usize) -> String {
        let bytes = self.stderr.kept_since(self.before[1].0);
        let text = String::from_utf8_lossy(&bytes).to_string();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Sends what the guest printed during this call to the log, and how
    /// much more it printed past the cap.
    pub(crate) fn log(&self, tool: &str, id: &str, secrets: &[(String, String)]) {
        for (stream, pipe, (kept_before, dropped_before)) in
            [("stdout", &self.stdout, self.before[0]), ("stderr", &self.stderr, self.before[1])]
        {
            let mut new = pipe.kept_since(kept_before);
            // A command's standard output is its answer, kept far past
            // the log's share.
            new.truncate(CAPTURED_OUTPUT);
            if !new.is_empty() {
                let text = crate::secrets::mask(String::from_utf8_lossy(&new).trim_end(), secrets);
                tracing::debug!(tool, id, stream, "{text}");
            }
            let dropped = pipe.written().1 - dropped_before;
            if dropped > 0 {
                tracing::debug!(
                    tool,
                    id,
                    stream,
                    dropped,
                    "{dropped} more bytes past the {CAPTURED_OUTPUT}-byte cap not kept"
                );
            }
        }
    }

    /// Bytes kept so far of stdout and of stderr, for every call the
    /// instance served.
    pub(crate) fn printed(&self) -> (usize, usize) {
        (self.stdout.written().0, self.stderr.written().0)
    }

    /// Starts another call: what was printed so far belongs to the calls
    /// before it.
    fn next_call(&mut self) {
        self.before = [self.stdout.written(), self.stderr.written()];
    }
}

/// Builds the Store for one call of a tool with `grants`, in the scope's
/// directories.
pub(crate) fn store(
    engine: &Engine,
    grants: &Grants,
    call: CallScope,
    limits: CallLimits,
) -> (Store<HostState>, Captured) {
    let dirs = std::sync::Arc::clone(&call.dirs);
    let captured = Captured::new();
    let stdin = GuestInput::default();
    let mut wasi = WasiCtxBuilder::new();
    // Calls run on threads that may block: file I/O runs inline instead of
    // hopping to a thread pool (the difference is up to 20x for Grep).
    wasi.allow_blocking_current_thread(true)
        .stdin(stdin.clone())
        .stdout(captured.stdout.clone())
        .stderr(captured.stderr.clone());
    let (working, read_only) = match grants.files {
        FileAccess::None => (None, None),
        FileAccess::ReadOnly => (Some(FsPerms::ReadOnly), Some(FsPerms::ReadOnly)),
        FileAccess::ReadWrite => (Some(FsPerms::ReadWrite), Some(FsPerms::ReadOnly)),
    };
    if let Some(perms) = working {
        preopen(&mut wasi, &dirs.working, perms);
        wasi.initial_cwd(dirs.cwd.to_string_lossy());
    }
    if let Some(perms) = read_only {
        preopen(&mut wasi, &dirs.read_only, perms);
    }

    // A third-party tool's granted directories, each at its own path (so
    // the paths it requested mean what they say), and its granted
    // variables with the host's values.
    for (dir, access) in &grants.dirs {
        let perms = match access {
            DirAccess::ReadOnly => FsPerms::ReadOnly,
            DirAccess::ReadWrite => FsPerms::ReadWrite,
        };
        preopen(&mut wasi, std::slice::from_ref(dir), perms);
    }
    if !grants.dirs.is_empty() && working.is_none() {
        wasi.initial_cwd(dirs.cwd.to_string_lossy());
    }
    for name in &grants.env {
        if let Some(value) = std::env::var_os(name) {
            wasi.env(name, value.to_string_lossy());
        }
    }
    let stdio = Stdio::new(&call.tool, stdin, captured.stdout.clone(), captured.stderr.clone());
    // Its granted secrets, from the user's store, under their names.
    let call = per_call(call, grants, limits);
    for (name, value) in &call.secrets {
        wasi.env(name, value);
    }
    // The network: only the granted hosts, for sockets and HTTP alike.
    let network = std::sync::Arc::new(Network::new(&grants.hosts));
    if !network.is_empty() {
        wasi.allow_tcp(true).allow_ip_name_lookup(true).socket_addr_check(network.socket_check());
    }
    let state = HostState {
        wasi: wasi.build(),
        #[cfg(feature = "http")]
        http: HttpState { ctx: wasmtime_wasi_http::WasiHttpCtx::new(), hooks: super::network::http::Hooks { network } },
        table: ResourceTable::new(),
        limits: MemoryLimiter { memory: limits.memory, used: 0 },
        call,
        stdio,
    };
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limits);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(on_epoch);
    (store, captured)
}

/// What of a call's scope comes from its grants and limits: where it may
/// replace files, whether it may start processes, its deadline.
fn per_call(mut call: CallScope, grants: &Grants, limits: CallLimits) -> CallScope {
    if grants.files == FileAccess::ReadWrite {
        call.writable = call.dirs.working.clone();
    }
    // What the WASI directories of `store` hold.
    call.readable = grants.dirs.iter().map(|(dir, _)| dir.clone()).collect();
    if grants.files != FileAccess::None {
        call.readable.extend(call.dirs.working.iter().chain(&call.dirs.read_only).cloned());
    }
    call.process_granted = grants.process;
    call.deadline = Some((Instant::now() + limits.timeout, limits.timeout));
    call.secrets = match crate::secrets::SecretStore::user().values(&call.tool, &grants.secrets) {
        Ok(values) => values,
        Err(e) => {
            tracing::warn!(tool = %call.tool, error = %e, "the tool's secrets are not handed to it");
            Vec::new()
        }
    };
    call
}

/// Makes the Store of a warm instance serve another call (made for the same
/// grants and directories): the call's scope and deadline, a fresh epoch
/// deadline, and its output told apart from the calls' before.
pub(super) fn renew(
    store: &mut Store<HostState>,
    captured: &mut Captured,
    grants: &Grants,
    call: CallScope,
    limits: CallLimits,
) {
    store.data_mut().call = per_call(call, grants, limits);
    store.set_epoch_deadline(1);
    captured.next_call();
}

fn preopen(wasi: &mut WasiCtxBuilder, dirs: &[PathBuf], perms: FsPerms) {
    for dir in dirs {
        if let Err(e) = wasi.preopened_dir(dir, path_str(dir), perms) {
            // A directory that vanished is simply not reachable.
            tracing::debug!(dir = %dir.display(), error = %e, "could not preopen directory");
        }
    }
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
