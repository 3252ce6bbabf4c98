//! One fresh, bounded Store per call: the capabilities a tool was granted and
//! nothing else, a memory limit, a deadline, and cancellation.

use crate::state::{HostState, Limits, Scope};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Store};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

/// Bytes of a guest's stdout and stderr kept for the log (and for the message
/// when it panics).
pub const CAPTURED_OUTPUT: usize = 64 * 1024;

/// Filesystem access granted to a tool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FileAccess {
    /// No directory at all.
    #[default]
    None,
    /// The working directories and the read-only directories, read-only.
    ReadOnly,
    /// The working directories read-write (plus the `files` capability), the
    /// read-only directories read-only.
    ReadWrite,
}

/// What the operator grants a tool. Built-in tools get the access their job
/// needs; a third-party tool gets nothing unless granted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grants {
    pub files: FileAccess,
    /// The process capability (starting commands, policed by the host).
    pub process: bool,
}

/// The directories of a call, as absolute host paths. Each is preopened in the
/// guest at the same path, so paths mean the same inside and out.
#[derive(Clone, Debug, Default)]
pub struct Dirs {
    pub cwd: PathBuf,
    pub working: Vec<PathBuf>,
    pub read_only: Vec<PathBuf>,
}

/// Per-call limits.
#[derive(Clone, Copy, Debug)]
pub struct CallLimits {
    /// Largest linear memory, in bytes.
    pub memory: usize,
    /// Wall-clock limit of one call.
    pub timeout: Duration,
}

/// The guest's captured stdout and stderr.
#[derive(Clone)]
pub struct Captured {
    pub stdout: MemoryOutputPipe,
    pub stderr: MemoryOutputPipe,
}

impl Captured {
    /// The last non-empty line of stderr, where a Rust guest's panic message
    /// ends up (`panicked at src/lib.rs:10:5: boom`).
    pub fn last_stderr_lines(&self, n: usize) -> String {
        let text = String::from_utf8_lossy(&self.stderr.contents()).to_string();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Sends what the guest printed to the log.
    pub fn log(&self, tool: &str, id: &str) {
        for (stream, pipe) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let bytes = pipe.contents();
            if !bytes.is_empty() {
                tracing::debug!(tool, id, stream, "{}", String::from_utf8_lossy(&bytes).trim_end());
            }
        }
    }
}

/// Builds the Store for one call of a tool with `grants`, in the scope's
/// directories.
pub fn store(engine: &Engine, grants: &Grants, mut scope: Scope, limits: CallLimits) -> (Store<HostState>, Captured) {
    let dirs = std::sync::Arc::clone(&scope.dirs);
    let captured =
        Captured { stdout: MemoryOutputPipe::new(CAPTURED_OUTPUT), stderr: MemoryOutputPipe::new(CAPTURED_OUTPUT) };
    let mut wasi = WasiCtxBuilder::new();
    // Calls run on threads that may block: file I/O runs inline instead of
    // hopping to a thread pool (the difference is up to 20x for Grep).
    wasi.allow_blocking_current_thread(true)
        .args(&[&*scope.tool])
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
    if grants.files == FileAccess::ReadWrite {
        scope.writable = dirs.working.clone();
    }
    scope.process_granted = grants.process;
    scope.deadline = Some((Instant::now() + limits.timeout, limits.timeout));
    let state =
        HostState { wasi: wasi.build(), table: ResourceTable::new(), limits: Limits { memory: limits.memory }, scope };
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limits);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(crate::state::on_epoch);
    (store, captured)
}

fn preopen(wasi: &mut WasiCtxBuilder, dirs: &[PathBuf], perms: FsPerms) {
    for dir in dirs {
        if let Err(e) = wasi.preopened_dir(dir, path_str(dir), perms) {
            // A directory that vanished is simply not reachable.
            tracing::debug!(dir = %dir.display(), error = %e, "could not preopen directory");
        }
    }
}

/// `path` as an absolute path without `.` and `..`, lexically (symlinks are
/// left to the filesystem checks).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(p) => out.push(p),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// Writes `path` whole or not at all: into a fresh temporary file beside it
/// (created new, so never one planted beforehand), then renamed over it.
/// Creates the directory.
pub(crate) fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let unique = format!("{}.{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{unique}.tmp"));
    let tmp = path.with_file_name(name);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut out| std::io::Write::write_all(&mut out, bytes))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
