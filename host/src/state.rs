//! What a Store holds for one call: the WASI context, the resource table, the
//! limits, and the call's scope (which tool, which session, which directories,
//! where progress goes, when to stop). The host imports of the contract are
//! implemented here, each refusing what the call's grants do not allow.

use crate::bindings::toolhost::tool::{
    files, output, policy as wit_policy, process as wit_process, progress, session as wit_session, shell as wit_shell,
    types,
};
use crate::process::{
    Approval, BackgroundRegistry, ChildProcess, Policy, ProcessError, Program, Spawn, Status, Stream,
};
use crate::sandbox::Dirs;
use crate::session::{Session, WriteError};
use crate::shell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wasmtime::component::{Resource, ResourceTable};
use wasmtime::{ResourceLimiter, StoreContextMut, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Longest progress or log message kept, in bytes.
const MAX_MESSAGE: usize = 16 * 1024;
/// Most progress events one call may send; later ones are dropped.
const MAX_PROGRESS_EVENTS: u32 = 10_000;
/// Most bytes of text one call may stream into its result.
pub const MAX_STREAMED: usize = 64 << 20;

/// A progress report from a running call.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    pub tool_use_id: String,
    pub message: String,
    /// Optional JSON data from the tool.
    pub data: Option<serde_json::Value>,
}

/// Where progress goes; called on the thread running the call, in order.
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// Why a call was stopped from outside.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Interrupted {
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("cancelled")]
    Cancelled,
}

/// The memory limit was hit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("exceeded its memory limit of {limit} bytes (asked for {desired})")]
pub struct MemoryExceeded {
    pub limit: usize,
    pub desired: usize,
}

/// Per-Store limits, enforced through [`ResourceLimiter`].
pub struct Limits {
    pub memory: usize,
}

impl ResourceLimiter for Limits {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.memory {
            // An error (not `Ok(false)`) traps at once with a message we can
            // report, instead of a guest abort somewhere in its allocator.
            return Err(MemoryExceeded { limit: self.memory, desired }.into());
        }
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

/// How a tool's session keys are kept apart from other tools'.
#[derive(Clone, Debug)]
pub enum Namespace {
    /// Built-in tools share one namespace (Read records what Edit checks).
    Shared,
    /// A third-party tool sees only keys under this prefix.
    Private(String),
}

/// Everything the host imports need to know about the call.
pub struct Scope {
    pub tool: Arc<str>,
    pub tool_use_id: String,
    pub session: Arc<Session>,
    pub namespace: Namespace,
    pub progress: Option<ProgressSink>,
    progress_sent: u32,
    /// Directories `files.replace` may write (empty: not granted).
    pub writable: Vec<PathBuf>,
    /// The call's directories.
    pub dirs: Arc<Dirs>,
    /// The process capability was granted.
    pub process_granted: bool,
    /// What processes the call may start (set by the permission step).
    pub approval: Approval,
    /// The permission rules, checked again on every command started.
    pub rules: Option<Arc<crate::rules::RuleSet>>,
    /// The host's background processes.
    pub background: Arc<BackgroundRegistry>,
    /// What to do when a child cannot be confined.
    pub confinement: crate::confine::Mode,
    pub deadline: Option<(Instant, Duration)>,
    pub cancel: Option<Arc<AtomicBool>>,
    /// Text the tool streamed into its result (`output.append`).
    pub streamed: String,
    /// Streamed text beyond [`MAX_STREAMED`] was dropped.
    pub streamed_cut: bool,
}

impl Scope {
    pub fn new(
        tool: Arc<str>,
        tool_use_id: String,
        session: Arc<Session>,
        namespace: Namespace,
        dirs: Arc<Dirs>,
        background: Arc<BackgroundRegistry>,
    ) -> Scope {
        Scope {
            tool,
            tool_use_id,
            session,
            namespace,
            progress: None,
            progress_sent: 0,
            writable: Vec::new(),
            dirs,
            process_granted: false,
            approval: Approval::Nothing,
            rules: None,
            background,
            confinement: crate::confine::Mode::Required,
            deadline: None,
            cancel: None,
            streamed: String::new(),
            streamed_cut: false,
        }
    }

    fn key(&self, key: &str) -> String {
        match &self.namespace {
            Namespace::Shared => key.to_string(),
            Namespace::Private(prefix) => format!("{prefix}{key}"),
        }
    }
}

/// The data of a Store.
pub struct HostState {
    pub wasi: WasiCtx,
    pub table: ResourceTable,
    pub limits: Limits,
    pub scope: Scope,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// The epoch callback: stops the guest when the call is cancelled or past its
/// deadline, otherwise checks again at the next tick.
pub fn on_epoch(ctx: StoreContextMut<'_, HostState>) -> wasmtime::Result<UpdateDeadline> {
    let scope = &ctx.data().scope;
    if scope.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
        return Err(Interrupted::Cancelled.into());
    }
    if let Some((at, limit)) = scope.deadline
        && Instant::now() >= at
    {
        return Err(Interrupted::Timeout(limit).into());
    }
    Ok(UpdateDeadline::Continue(1))
}

fn clip(mut s: String) -> String {
    if s.len() > MAX_MESSAGE {
        let mut cut = MAX_MESSAGE;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

impl types::Host for HostState {}

impl progress::Host for HostState {
    fn report(&mut self, message: String, data: Option<String>) {
        let scope = &mut self.scope;
        let Some(sink) = &scope.progress else { return };
        if scope.progress_sent >= MAX_PROGRESS_EVENTS {
            return;
        }
        scope.progress_sent += 1;
        let data = data.and_then(|d| serde_json::from_str(&d).ok());
        sink(Progress { tool_use_id: scope.tool_use_id.clone(), message: clip(message), data });
    }

    fn log(&mut self, level: progress::LogLevel, message: String) {
        let message = clip(message);
        let (tool, id) = (&*self.scope.tool, &self.scope.tool_use_id);
        match level {
            progress::LogLevel::Trace => tracing::trace!(tool, id, "{message}"),
            progress::LogLevel::Debug => tracing::debug!(tool, id, "{message}"),
            progress::LogLevel::Info => tracing::info!(tool, id, "{message}"),
            progress::LogLevel::Warn => tracing::warn!(tool, id, "{message}"),
            progress::LogLevel::Error => tracing::error!(tool, id, "{message}"),
        }
    }
}

impl output::Host for HostState {
    fn append(&mut self, text: String) {
        // Copied into one growing string and freed at once, so the allocator
        // reuses the piece's memory for the next one.
        let scope = &mut self.scope;
        let room = MAX_STREAMED - scope.streamed.len();
        let mut take = text.len().min(room);
        while !text.is_char_boundary(take) {
            take -= 1;
        }
        scope.streamed.push_str(&text[..take]);
        scope.streamed_cut |= take < text.len();
    }
}

impl wit_session::Host for HostState {
    fn get(&mut self, key: String) -> Option<String> {
        self.scope.session.get(&self.scope.key(&key))
    }

    fn set(&mut self, key: String, value: String) -> Result<(), wit_session::SessionError> {
        let full = self.scope.key(&key);
        let quota = match &self.scope.namespace {
            Namespace::Shared => None,
            Namespace::Private(prefix) => Some(prefix.as_str()),
        };
        self.scope.session.set(&full, &value, quota).map_err(|e| match e {
            WriteError::InvalidKey => wit_session::SessionError::InvalidKey,
            WriteError::ValueTooLarge => wit_session::SessionError::ValueTooLarge,
            WriteError::QuotaExceeded => wit_session::SessionError::QuotaExceeded,
        })
    }

    fn remove(&mut self, key: String) {
        self.scope.session.remove(&self.scope.key(&key));
    }

    fn keys(&mut self, prefix: String) -> Vec<String> {
        let full = self.scope.key(&prefix);
        let strip = full.len() - prefix.len();
        self.scope.session.keys(&full).into_iter().map(|k| k[strip..].to_string()).collect()
    }
}

impl wit_policy::Host for HostState {
    fn hidden_paths(&mut self) -> Vec<String> {
        match &self.scope.rules {
            Some(rules) => rules.hidden_paths(&self.scope.tool),
            None => Vec::new(),
        }
    }
}

impl wit_shell::Host for HostState {
    fn parse(&mut self, command: String) -> wit_shell::ParsedCommand {
        if command.len() > crate::process::MAX_COMMAND {
            return wit_shell::ParsedCommand {
                commands: Vec::new(),
                operators: Vec::new(),
                command_substitution: false,
                process_substitution: false,
                variable_expansion: false,
                heredoc: false,
                subshell: false,
                control_flow: false,
                parse_error: true,
            };
        }
        let p = shell::parse(&command);
        wit_shell::ParsedCommand {
            commands: p
                .commands
                .into_iter()
                .map(|c| wit_shell::SimpleCommand {
                    argv: c.argv,
                    dynamic: c.dynamic,
                    assignments: c.assignments,
                    redirections: c
                        .redirections
                        .into_iter()
                        .map(|r| wit_shell::Redirection {
                            descriptor: r.descriptor,
                            operator: r.operator,
                            target: r.target,
                        })
                        .collect(),
                })
                .collect(),
            operators: p
                .operators
                .into_iter()
                .map(|o| match o {
                    shell::Operator::And => wit_shell::Operator::And,
                    shell::Operator::Or => wit_shell::Operator::Or,
                    shell::Operator::Sequence => wit_shell::Operator::Sequence,
                    shell::Operator::Pipe => wit_shell::Operator::Pipe,
                    shell::Operator::Background => wit_shell::Operator::Background,
                })
                .collect(),
            command_substitution: p.command_substitution,
            process_substitution: p.process_substitution,
            variable_expansion: p.variable_expansion,
            heredoc: p.heredoc,
            subshell: p.subshell,
            control_flow: p.control_flow,
            parse_error: p.parse_error,
        }
    }

    fn classify(&mut self, command: String) -> wit_shell::Classification {
        if command.len() > crate::process::MAX_COMMAND {
            return wit_shell::Classification {
                read_only: false,
                reason: Some("the command is too long to check".into()),
            };
        }
        let c = shell::classify(&command);
        wit_shell::Classification { read_only: c.read_only, reason: c.reason }
    }
}

fn spawn_request(options: wit_process::SpawnOptions) -> Spawn {
    Spawn {
        program: match options.program {
            wit_process::Program::Shell(s) => Program::Shell(s),
            wit_process::Program::Argv(a) => Program::Argv(a),
        },
        cwd: options.cwd,
        env: options.env,
        stdin: options.stdin,
        timeout: Duration::from_millis(options.timeout_ms),
    }
}

fn process_error(e: ProcessError) -> wit_process::ProcessError {
    match e {
        ProcessError::NotPermitted(m) => wit_process::ProcessError::NotPermitted(m),
        ProcessError::BadDirectory(m) => wit_process::ProcessError::BadDirectory(m),
        ProcessError::SpawnFailed(m) => wit_process::ProcessError::SpawnFailed(m),
        ProcessError::UnknownId(m) => wit_process::ProcessError::UnknownId(m),
    }
}

fn exit_status(s: Status) -> wit_process::ExitStatus {
    match s {
        Status::Exited(c) => wit_process::ExitStatus::Exited(c),
        Status::Signaled(s) => wit_process::ExitStatus::Signaled(s),
    }
}

impl HostState {
    fn policy(&self) -> Policy<'_> {
        Policy {
            granted: self.scope.process_granted,
            approval: self.scope.approval.clone(),
            dirs: &self.scope.dirs,
            session_dir: self.scope.session.dir(),
            network: false,
            confinement: self.scope.confinement,
            rules: self.scope.rules.as_deref(),
        }
    }
}

impl wit_process::Host for HostState {
    fn spawn(
        &mut self,
        options: wit_process::SpawnOptions,
    ) -> wasmtime::Result<Result<Resource<ChildProcess>, wit_process::ProcessError>> {
        let deadline = self.scope.deadline.map(|(at, _)| at);
        match ChildProcess::spawn(spawn_request(options), &self.policy(), deadline) {
            Ok(child) => Ok(Ok(self.table.push(child)?)),
            Err(e) => Ok(Err(process_error(e))),
        }
    }

    fn start_background(
        &mut self,
        options: wit_process::SpawnOptions,
    ) -> wasmtime::Result<Result<String, wit_process::ProcessError>> {
        let session = self.scope.session.id().to_string();
        Ok(self.scope.background.start(&session, spawn_request(options), &self.policy()).map_err(process_error))
    }

    fn read_background(
        &mut self,
        id: String,
    ) -> wasmtime::Result<Result<wit_process::BackgroundOutput, wit_process::ProcessError>> {
        if !self.scope.process_granted {
            return Ok(Err(wit_process::ProcessError::NotPermitted("the process capability is not granted".into())));
        }
        let out = self.scope.background.read(self.scope.session.id(), &id).map_err(process_error);
        Ok(out.map(|o| wit_process::BackgroundOutput {
            stdout: o.stdout,
            stderr: o.stderr,
            dropped: o.dropped,
            status: o.status.map(exit_status),
        }))
    }

    fn kill_background(&mut self, id: String) -> wasmtime::Result<Result<(), wit_process::ProcessError>> {
        if !self.scope.process_granted || self.scope.approval == Approval::Nothing {
            return Ok(Err(wit_process::ProcessError::NotPermitted(
                "killing a process needs the call's approval".into(),
            )));
        }
        Ok(self.scope.background.kill(self.scope.session.id(), &id).map_err(process_error))
    }
}

impl wit_process::HostChild for HostState {
    fn read(
        &mut self,
        child: Resource<ChildProcess>,
        wait_ms: u32,
    ) -> wasmtime::Result<Option<Vec<wit_process::Chunk>>> {
        let cancel = self.scope.cancel.clone();
        let child = self.table.get_mut(&child)?;
        Ok(child.read(Duration::from_millis(u64::from(wait_ms)), cancel.as_deref()).map(|chunks| {
            chunks
                .into_iter()
                .map(|(stream, data)| wit_process::Chunk {
                    source: match stream {
                        Stream::Stdout => wit_process::StreamKind::Stdout,
                        Stream::Stderr => wit_process::StreamKind::Stderr,
                    },
                    data,
                })
                .collect()
        }))
    }

    fn wait(&mut self, child: Resource<ChildProcess>) -> wasmtime::Result<wit_process::Finished> {
        let cancel = self.scope.cancel.clone();
        let f = self.table.get_mut(&child)?.wait(cancel.as_deref());
        Ok(wit_process::Finished {
            status: exit_status(f.status),
            timed_out: f.timed_out,
            cancelled: f.cancelled,
            unconfined: f.unconfined,
        })
    }

    fn kill(&mut self, child: Resource<ChildProcess>) -> wasmtime::Result<()> {
        self.table.get_mut(&child)?.kill();
        Ok(())
    }

    fn drop(&mut self, child: Resource<ChildProcess>) -> wasmtime::Result<()> {
        // Dropping the process kills its group.
        self.table.delete(child)?;
        Ok(())
    }
}

impl files::Host for HostState {
    fn replace(&mut self, path: String, contents: Vec<u8>) -> Result<(), files::FilesError> {
        replace_file(&self.scope.writable, Path::new(&path), &contents)
    }
}

/// Atomically replaces `path` (absolute, inside one of `writable`) with
/// `contents`, following a symlink to its target as long as the target stays
/// inside the same directory; the old file's permission bits are kept. All
/// filesystem access goes through a capability handle on the writable
/// directory, so no path (`..`, symlinks) can reach outside it.
pub fn replace_file(writable: &[PathBuf], path: &Path, contents: &[u8]) -> Result<(), files::FilesError> {
    use cap_std::fs::{Dir, OpenOptions};
    use std::io::Write;

    let refused = || files::FilesError::NotPermitted(path.display().to_string());
    let normalized = crate::sandbox::normalize(path);
    let Some(root) = writable.iter().filter(|w| normalized.starts_with(w)).max_by_key(|w| w.as_os_str().len()) else {
        return Err(refused());
    };
    let rel = normalized.strip_prefix(root).map_err(|_| refused())?.to_path_buf();
    let Some(name) = rel.file_name().map(|n| n.to_os_string()) else {
        return Err(files::FilesError::NotFound(format!("{} names a directory, not a file", path.display())));
    };
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::PermissionDenied => refused(),
        std::io::ErrorKind::NotFound => files::FilesError::NotFound(format!("{}: {e}", path.display())),
        _ => files::FilesError::Io(e.to_string()),
    };
    let dir = Dir::open_ambient_dir(root, cap_std::ambient_authority()).map_err(io)?;
    let parent = rel.parent().unwrap_or(Path::new(""));
    if !parent.as_os_str().is_empty() {
        dir.create_dir_all(parent).map_err(io)?;
    }
    // A symlink is replaced at its target; cap-std refuses a target outside `root`.
    let target = match dir.symlink_metadata(&rel) {
        Ok(meta) if meta.file_type().is_symlink() => dir.canonicalize(&rel).map_err(io)?,
        Ok(meta) if meta.is_dir() => {
            return Err(files::FilesError::NotFound(format!("{} is a directory", path.display())));
        }
        _ => rel.clone(),
    };
    let permissions = dir.metadata(&target).ok().map(|m| m.permissions());
    let target_parent = target.parent().unwrap_or(Path::new("")).to_path_buf();
    let tmp = target_parent.join(format!(
        ".{}.toolhost-{}-{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos())
    ));
    let write = || -> std::io::Result<()> {
        let mut file = dir.open_with(&tmp, OpenOptions::new().write(true).create_new(true))?;
        file.write_all(contents)?;
        file.sync_all()?;
        if let Some(p) = permissions {
            dir.set_permissions(&tmp, p)?;
        }
        dir.rename(&tmp, &dir, &target)
    };
    write().map_err(|e| {
        let _ = dir.remove_file(&tmp);
        io(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replace_keeps_mode_and_follows_symlinks_inside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let script = root.join("run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        replace_file(std::slice::from_ref(&root), &script, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&script).unwrap(), "new");
        assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o755);

        std::os::unix::fs::symlink("run.sh", root.join("link.sh")).unwrap();
        replace_file(std::slice::from_ref(&root), &root.join("link.sh"), b"via link").unwrap();
        assert!(std::fs::symlink_metadata(root.join("link.sh")).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&script).unwrap(), "via link");

        replace_file(std::slice::from_ref(&root), &root.join("new/dir/f.txt"), b"created").unwrap();
        assert_eq!(std::fs::read_to_string(root.join("new/dir/f.txt")).unwrap(), "created");
        let leftovers: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("toolhost"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn replace_refuses_escapes() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "keep").unwrap();
        std::os::unix::fs::symlink(&secret, root.join("escape")).unwrap();
        let w = std::slice::from_ref(&root);
        assert!(matches!(replace_file(w, &root.join("escape"), b"x"), Err(files::FilesError::NotPermitted(_))));
        assert!(matches!(replace_file(w, &root.join("../x"), b"x"), Err(files::FilesError::NotPermitted(_))));
        assert!(matches!(replace_file(&[], &root.join("a"), b"x"), Err(files::FilesError::NotPermitted(_))));
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "keep");
    }
}
