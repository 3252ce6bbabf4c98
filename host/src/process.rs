//! The process capability: the host starts processes for components granted
//! it, and polices every start.
//!
//! What the host enforces, whatever the component does:
//! - only components granted the capability can start anything, and only
//!   during `call` (not while validating or checking permissions);
//! - a call approved only because it was read-only can start only commands
//!   the host itself classifies as read-only ([`crate::shell`]);
//! - the working directory lies inside the working directories;
//! - the environment is an allow-list of the host's, plus variables the tool
//!   sets that cannot change what programs load;
//! - each process runs in its own process group, killed whole at its
//!   timeout, at the call's deadline, on cancellation, and when the component
//!   drops it (background processes: when the host ends);
//! - output is read through bounded buffers, so a flood of output blocks the
//!   child instead of growing the host's memory.

use crate::confine;
use crate::rules::{Call, RuleSet, Verdicts};
use crate::sandbox::Dirs;
use crate::shell;
use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Host variables a child inherits (plus every `LC_*`).
const ENV_ALLOW: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR", "SHELL"];
/// Bytes read from a pipe at a time.
const CHUNK: usize = 64 * 1024;
/// Chunks buffered per foreground process before its output blocks.
const BUFFERED_CHUNKS: usize = 32;
/// Bytes kept per stream of a background process between reads.
pub const BACKGROUND_KEEP: usize = 8 << 20;
/// Longest command the host parses.
pub const MAX_COMMAND: usize = 64 * 1024;

/// What a call may start, decided by the permission step. Whatever it is,
/// a command a deny rule forbids never starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Approval {
    /// Nothing (before the permission decision, or no grant).
    #[default]
    Nothing,
    /// Only commands the host classifies as read-only.
    ReadOnly,
    /// Read-only commands and those the allow rules cover (the call was
    /// allowed by a rule).
    Rules,
    /// This command, as approved by the user or a hook, and what
    /// [`Approval::Rules`] allows.
    Command(String),
    /// Any command.
    Any,
}

/// Which stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Exited(i32),
    Signaled(i32),
}

impl From<std::process::ExitStatus> for Status {
    fn from(s: std::process::ExitStatus) -> Self {
        match (s.code(), s.signal()) {
            (Some(code), _) => Status::Exited(code),
            (None, Some(sig)) => Status::Signaled(sig),
            (None, None) => Status::Exited(-1),
        }
    }
}

/// Why a start or an operation was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProcessError {
    NotPermitted(String),
    BadDirectory(String),
    SpawnFailed(String),
    UnknownId(String),
}

/// What to run.
#[derive(Clone, Debug)]
pub enum Program {
    Shell(String),
    Argv(Vec<String>),
}

impl Program {
    /// The command as a shell would read it (what the classification sees).
    fn as_shell(&self) -> String {
        match self {
            Program::Shell(s) => s.clone(),
            Program::Argv(argv) => argv.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" "),
        }
    }
}

fn quote(word: &str) -> String {
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// A request to start a process.
#[derive(Clone, Debug)]
pub struct Spawn {
    pub program: Program,
    pub cwd: Option<String>,
    pub env: Vec<(String, String)>,
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
}

/// The call-side facts the checks need.
pub struct Policy<'a> {
    pub granted: bool,
    pub approval: Approval,
    pub dirs: &'a Dirs,
    /// Where the session keeps its files (the children's private temporary
    /// directory goes there).
    pub session_dir: &'a Path,
    /// Whether children keep the network.
    pub network: bool,
    pub confinement: confine::Mode,
    /// The permission rules, checked again on every command.
    pub rules: Option<&'a RuleSet>,
}

/// Checks a request against the grant, the approval, the directories and the
/// environment rules, and builds the command, confined.
fn prepare(request: &Spawn, policy: &Policy<'_>) -> Result<(Command, confine::Confined), ProcessError> {
    if !policy.granted {
        return Err(ProcessError::NotPermitted("this tool is not granted the process capability".into()));
    }
    let text = request.program.as_shell();
    if policy.approval == Approval::Nothing {
        return Err(ProcessError::NotPermitted(
            "processes can only be started while the call runs, after its permission check".into(),
        ));
    }
    let rules = policy.rules.filter(|r| !r.entries().is_empty());
    if policy.approval != Approval::Any || rules.is_some() {
        if text.len() > MAX_COMMAND {
            return Err(ProcessError::NotPermitted("the command is too long to check".into()));
        }
        let parsed = shell::parse(&text);
        let verdicts = match rules {
            Some(r) => r.check(&Call { tool: "Bash", input: &serde_json::Value::Null, bash: Some(&parsed) }),
            None => Verdicts::default(),
        };
        if let Some(rule) = verdicts.deny {
            return Err(ProcessError::NotPermitted(format!("the {rule} forbids `{}`", clip(&text))));
        }
        if let Some(why) = &verdicts.unclear
            && !matches!(&policy.approval, Approval::Command(c) if *c == text)
        {
            return Err(ProcessError::NotPermitted(format!("`{}` was not approved: {why}", clip(&text))));
        }
        let read_only = || shell::classify_parsed(&parsed);
        match &policy.approval {
            Approval::Nothing | Approval::Any => {}
            Approval::ReadOnly => {
                let verdict = read_only();
                if !verdict.read_only {
                    return Err(ProcessError::NotPermitted(format!(
                        "this call was approved only for read-only commands, and `{}` is not read-only: {}",
                        clip(&text),
                        verdict.reason.unwrap_or_default()
                    )));
                }
            }
            Approval::Rules | Approval::Command(_) => {
                let approved = matches!(&policy.approval, Approval::Command(c) if *c == text);
                if !approved && verdicts.allow.is_none() && !read_only().read_only {
                    return Err(ProcessError::NotPermitted(format!(
                        "`{}` is neither the command this call was approved for, nor read-only, nor covered by an allow rule",
                        clip(&text)
                    )));
                }
            }
        }
    }
    let cwd = working_dir(request.cwd.as_deref(), policy.dirs)?;
    let mut cmd = match &request.program {
        Program::Shell(s) => {
            let mut c = Command::new("bash");
            c.arg("-c").arg(s);
            c
        }
        Program::Argv(argv) => {
            let Some((first, rest)) = argv.split_first() else {
                return Err(ProcessError::SpawnFailed("empty argv".into()));
            };
            let mut c = Command::new(first);
            c.args(rest);
            c
        }
    };
    cmd.env_clear();
    for (key, value) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if ENV_ALLOW.contains(&k.as_ref()) || k.starts_with("LC_") {
            cmd.env(&key, value);
        }
    }
    for (key, value) in &request.env {
        if !valid_env_name(key) {
            return Err(ProcessError::NotPermitted(format!("`{key}` is not a valid environment variable name")));
        }
        if shell::changes_loading(key) {
            return Err(ProcessError::NotPermitted(format!("setting `{key}` can change what programs load; refused")));
        }
        // What was approved is the command as written; a variable that
        // changes which programs it runs (`PATH`, `GIT_*`, `PAGER`, …) would
        // run something else.
        if policy.approval != Approval::Any && shell::assignment_changes_what_runs(&format!("{key}=")) {
            return Err(ProcessError::NotPermitted(format!(
                "setting `{key}` can change what the approved command runs; refused"
            )));
        }
        cmd.env(key, value);
    }
    cmd.current_dir(&cwd)
        .process_group(0)
        .stdin(if request.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let tmp = confine::temp_dir(policy.session_dir)
        .map_err(|e| ProcessError::SpawnFailed(format!("could not create the private temporary directory: {e}")))?;
    cmd.env("TMPDIR", &tmp);
    let mut writable = policy.dirs.working.clone();
    writable.push(tmp);
    let plan = confine::Plan { writable, network: policy.network, mode: policy.confinement };
    let confined = confine::apply(&mut cmd, &plan).map_err(ProcessError::NotPermitted)?;
    Ok((cmd, confined))
}

fn clip(s: &str) -> String {
    if s.chars().count() > 200 { format!("{}…", s.chars().take(200).collect::<String>()) } else { s.to_string() }
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The working directory of a request: the call's by default; otherwise an
/// absolute directory that lies, also after resolving symlinks, inside the
/// working directories.
fn working_dir(requested: Option<&str>, dirs: &Dirs) -> Result<PathBuf, ProcessError> {
    let Some(requested) = requested else { return Ok(dirs.cwd.clone()) };
    let path = Path::new(requested);
    if !path.is_absolute() {
        return Err(ProcessError::BadDirectory(format!("`{requested}` is not an absolute path")));
    }
    let inside = |p: &Path| dirs.working.iter().any(|w| p.starts_with(w));
    let canonical = path
        .canonicalize()
        .map_err(|e| ProcessError::BadDirectory(format!("`{requested}` cannot be used as a working directory: {e}")))?;
    if !inside(&canonical) {
        return Err(ProcessError::BadDirectory(format!(
            "`{requested}` is outside the working directories ({})",
            dirs.working.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
        )));
    }
    if !canonical.is_dir() {
        return Err(ProcessError::BadDirectory(format!("`{requested}` is not a directory")));
    }
    Ok(canonical)
}

/// Now plus `timeout`, saturating: a tool may ask for any timeout.
fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout).unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}

fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: killpg has no memory-safety preconditions; a stale group id
        // at worst fails with ESRCH.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

enum Event {
    Chunk(Stream, Vec<u8>),
    Closed,
}

/// Reads `pipe` into `tx` in chunks until it closes.
fn pump(mut pipe: impl Read + Send + 'static, stream: Stream, tx: SyncSender<Event>) {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; CHUNK];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send(Event::Chunk(stream, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = tx.send(Event::Closed);
    });
}

fn feed_stdin(child: &mut std::process::Child, input: Option<Vec<u8>>) {
    if let (Some(mut stdin), Some(input)) = (child.stdin.take(), input) {
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
}

/// A foreground process of a call (the `child` resource).
pub struct ChildProcess {
    child: std::process::Child,
    pgid: i32,
    events: Receiver<Event>,
    open: u8,
    deadline: Instant,
    timed_out: bool,
    cancelled: bool,
    status: Option<Status>,
    /// Confinement the host could not apply (best-effort mode).
    unconfined: Vec<String>,
}

/// How a foreground process finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    pub status: Status,
    pub timed_out: bool,
    pub cancelled: bool,
    pub unconfined: Vec<String>,
}

impl ChildProcess {
    /// Starts a foreground process.
    pub fn spawn(
        request: Spawn,
        policy: &Policy<'_>,
        call_deadline: Option<Instant>,
    ) -> Result<ChildProcess, ProcessError> {
        let (mut cmd, confined) = prepare(&request, policy)?;
        let mut child = cmd.spawn().map_err(|e| ProcessError::SpawnFailed(format!("{e}")))?;
        let pgid = child.id() as i32;
        feed_stdin(&mut child, request.stdin);
        let (tx, rx) = std::sync::mpsc::sync_channel(BUFFERED_CHUNKS);
        if let Some(out) = child.stdout.take() {
            pump(out, Stream::Stdout, tx.clone());
        }
        if let Some(err) = child.stderr.take() {
            pump(err, Stream::Stderr, tx);
        }
        let mut deadline = deadline_after(request.timeout);
        if let Some(call) = call_deadline {
            deadline = deadline.min(call);
        }
        Ok(ChildProcess {
            child,
            pgid,
            events: rx,
            open: 2,
            deadline,
            timed_out: false,
            cancelled: false,
            status: None,
            unconfined: confined.missing,
        })
    }

    /// Kills the group if the deadline passed or the call was cancelled.
    fn enforce(&mut self, cancel: Option<&AtomicBool>) {
        if self.timed_out || self.cancelled {
            return;
        }
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            self.cancelled = true;
            kill_group(self.pgid);
        } else if Instant::now() >= self.deadline {
            self.timed_out = true;
            kill_group(self.pgid);
        }
    }

    /// Output that arrived within `wait`; `None` once both streams closed.
    pub fn read(&mut self, wait: Duration, cancel: Option<&AtomicBool>) -> Option<Vec<(Stream, Vec<u8>)>> {
        let until = Instant::now() + wait.min(Duration::from_secs(1));
        let mut out = Vec::new();
        let mut bytes = 0;
        while self.open > 0 {
            self.enforce(cancel);
            let event = if out.is_empty() {
                let slice = until.saturating_duration_since(Instant::now()).min(Duration::from_millis(20));
                match self.events.recv_timeout(slice) {
                    Ok(e) => e,
                    Err(RecvTimeoutError::Timeout) if Instant::now() < until => continue,
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => {
                        self.open = 0;
                        break;
                    }
                }
            } else {
                match self.events.try_recv() {
                    Ok(e) => e,
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        self.open = 0;
                        break;
                    }
                }
            };
            match event {
                Event::Chunk(stream, data) => {
                    bytes += data.len();
                    out.push((stream, data));
                    if bytes >= 1 << 20 {
                        break;
                    }
                }
                Event::Closed => self.open -= 1,
            }
            // Killed, and a grandchild that left the group still holds a pipe:
            // do not wait for it.
            if (self.timed_out || self.cancelled) && out.is_empty() && self.child.try_wait().ok().flatten().is_some() {
                self.open = 0;
            }
        }
        if out.is_empty() && self.open == 0 { None } else { Some(out) }
    }

    /// Waits for the process to end, killing it at its deadline.
    pub fn wait(&mut self, cancel: Option<&AtomicBool>) -> Finished {
        if let Some(status) = self.status {
            return Finished {
                status,
                timed_out: self.timed_out,
                cancelled: self.cancelled,
                unconfined: self.unconfined.clone(),
            };
        }
        // Poll, backing off from 20 µs to 5 ms: a process that closed its
        // output is usually gone already, and deadlines and cancellation
        // still apply to one that is not.
        let mut pause = Duration::from_micros(20);
        let status = loop {
            self.enforce(cancel);
            match self.child.try_wait() {
                Ok(Some(s)) => break Status::from(s),
                Ok(None) => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(5));
                }
                Err(_) => break Status::Exited(-1),
            }
        };
        // The leader is gone; make sure the rest of its group is too.
        kill_group(self.pgid);
        self.status = Some(status);
        Finished { status, timed_out: self.timed_out, cancelled: self.cancelled, unconfined: self.unconfined.clone() }
    }

    /// Kills the process group.
    pub fn kill(&mut self) {
        kill_group(self.pgid);
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        kill_group(self.pgid);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One stream of a background process: what it printed since the last read.
#[derive(Default)]
struct Pending {
    data: VecDeque<u8>,
    dropped: u64,
}

struct Background {
    pgid: i32,
    session: String,
    stdout: Mutex<Pending>,
    stderr: Mutex<Pending>,
    status: Mutex<Option<Status>>,
    done: AtomicBool,
}

/// What a background process printed since the last read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackgroundOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub dropped: u64,
    pub status: Option<Status>,
}

/// The host's background processes, by id; each belongs to one session.
/// Dropping the registry (the host ending) kills them all.
#[derive(Default)]
pub struct BackgroundRegistry {
    next: AtomicU64,
    running: Mutex<HashMap<String, Arc<Background>>>,
}

impl BackgroundRegistry {
    /// Starts a background process for `session`.
    pub fn start(&self, session: &str, request: Spawn, policy: &Policy<'_>) -> Result<String, ProcessError> {
        let (mut cmd, confined) = prepare(&request, policy)?;
        let mut child = cmd.spawn().map_err(|e| ProcessError::SpawnFailed(format!("{e}")))?;
        drop((cmd, confined));
        let pgid = child.id() as i32;
        feed_stdin(&mut child, request.stdin.clone());
        let entry = Arc::new(Background {
            pgid,
            session: session.to_string(),
            stdout: Mutex::default(),
            stderr: Mutex::default(),
            status: Mutex::new(None),
            done: AtomicBool::new(false),
        });
        let collect = |pipe: Option<Box<dyn Read + Send>>, stream: Stream| {
            let entry = Arc::clone(&entry);
            pipe.map(|mut pipe| {
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; CHUNK];
                    while let Ok(n) = pipe.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let target = match stream {
                            Stream::Stdout => &entry.stdout,
                            Stream::Stderr => &entry.stderr,
                        };
                        let mut pending = target.lock().unwrap_or_else(|e| e.into_inner());
                        pending.data.extend(&buf[..n]);
                        let over = pending.data.len().saturating_sub(BACKGROUND_KEEP);
                        if over > 0 {
                            pending.data.drain(..over);
                            pending.dropped += over as u64;
                        }
                    }
                })
            })
        };
        let readers = [
            collect(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>), Stream::Stdout),
            collect(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>), Stream::Stderr),
        ];
        let waiter = Arc::clone(&entry);
        let timeout = request.timeout;
        std::thread::spawn(move || {
            let deadline = deadline_after(timeout);
            let status = loop {
                match child.try_wait() {
                    Ok(Some(s)) => break Status::from(s),
                    Ok(None) if Instant::now() >= deadline => kill_group(waiter.pgid),
                    Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                    Err(_) => break Status::Exited(-1),
                }
            };
            for r in readers.into_iter().flatten() {
                let _ = r.join();
            }
            *waiter.status.lock().unwrap_or_else(|e| e.into_inner()) = Some(status);
            waiter.done.store(true, Ordering::Release);
        });
        let id = format!("bash_{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        self.running.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), entry);
        Ok(id)
    }

    fn get(&self, session: &str, id: &str) -> Result<Arc<Background>, ProcessError> {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        match running.get(id) {
            Some(b) if b.session == session => Ok(Arc::clone(b)),
            _ => Err(ProcessError::UnknownId(format!("no background process `{id}` in this session"))),
        }
    }

    /// Output since the last read, and the state.
    pub fn read(&self, session: &str, id: &str) -> Result<BackgroundOutput, ProcessError> {
        let entry = self.get(session, id)?;
        // Status first: once it is set, every byte is already in the buffers.
        let status = if entry.done.load(Ordering::Acquire) {
            *entry.status.lock().unwrap_or_else(|e| e.into_inner())
        } else {
            None
        };
        let take = |m: &Mutex<Pending>| {
            let mut p = m.lock().unwrap_or_else(|e| e.into_inner());
            let dropped = std::mem::take(&mut p.dropped);
            (p.data.drain(..).collect::<Vec<u8>>(), dropped)
        };
        let (stdout, d1) = take(&entry.stdout);
        let (stderr, d2) = take(&entry.stderr);
        Ok(BackgroundOutput { stdout, stderr, dropped: d1 + d2, status })
    }

    /// Kills a background process group.
    pub fn kill(&self, session: &str, id: &str) -> Result<(), ProcessError> {
        let entry = self.get(session, id)?;
        kill_group(entry.pgid);
        Ok(())
    }

    /// The session ended: its processes still running are killed, and all
    /// of its processes (with their unread output) are forgotten.
    pub fn end_session(&self, session: &str) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.retain(|_, entry| {
            if entry.session != session {
                return true;
            }
            if !entry.done.load(Ordering::Acquire) {
                kill_group(entry.pgid);
            }
            false
        });
    }
}

impl Drop for BackgroundRegistry {
    fn drop(&mut self) {
        for entry in self.running.get_mut().unwrap_or_else(|e| e.into_inner()).values() {
            if !entry.done.load(Ordering::Acquire) {
                kill_group(entry.pgid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(dirs: &Dirs, approval: Approval) -> Policy<'_> {
        Policy {
            granted: true,
            approval,
            dirs,
            session_dir: dirs.cwd.parent().expect("a temp dir has a parent"),
            network: false,
            confinement: confine::Mode::Required,
            rules: None,
        }
    }

    fn dirs() -> (tempfile::TempDir, Dirs) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        (t, Dirs { cwd: root.clone(), working: vec![root], read_only: vec![] })
    }

    fn shell(cmd: &str) -> Spawn {
        Spawn {
            program: Program::Shell(cmd.into()),
            cwd: None,
            env: vec![],
            stdin: None,
            timeout: Duration::from_secs(10),
        }
    }

    fn run(child: &mut ChildProcess) -> (String, Finished) {
        let mut out = Vec::new();
        while let Some(chunks) = child.read(Duration::from_millis(200), None) {
            for (_, data) in chunks {
                out.extend(data);
            }
        }
        (String::from_utf8_lossy(&out).into_owned(), child.wait(None))
    }

    #[test]
    fn runs_and_reports_output_and_status() {
        let (_t, dirs) = dirs();
        let policy = policy(&dirs, Approval::Any);
        let mut child = ChildProcess::spawn(shell("echo out; echo err >&2; exit 3"), &policy, None).unwrap();
        let (out, finished) = run(&mut child);
        assert!(out.contains("out\n") && out.contains("err\n"), "{out}");
        assert_eq!(finished.status, Status::Exited(3));
        let mut child =
            ChildProcess::spawn(Spawn { stdin: Some(b"piped".to_vec()), ..shell("cat; pwd") }, &policy, None).unwrap();
        let (out, _) = run(&mut child);
        assert_eq!(out, format!("piped{}\n", dirs.cwd.display()));
    }

    #[test]
    fn policy_is_enforced_at_spawn() {
        let (_t, dirs) = dirs();
        let read_only = policy(&dirs, Approval::ReadOnly);
        assert!(ChildProcess::spawn(shell("ls"), &read_only, None).is_ok());
        let err = ChildProcess::spawn(shell("rm -rf x"), &read_only, None).err().unwrap();
        assert!(matches!(&err, ProcessError::NotPermitted(m) if m.contains("approved only for read-only")), "{err:?}");
        let argv = Spawn { program: Program::Argv(vec!["rm".into(), "x".into()]), ..shell("") };
        assert!(matches!(ChildProcess::spawn(argv, &read_only, None), Err(ProcessError::NotPermitted(_))));
        let nothing = Policy { approval: Approval::Nothing, ..read_only };
        assert!(matches!(ChildProcess::spawn(shell("ls"), &nothing, None), Err(ProcessError::NotPermitted(_))));
        let ungranted = Policy { granted: false, ..policy(&dirs, Approval::Any) };
        assert!(matches!(ChildProcess::spawn(shell("ls"), &ungranted, None), Err(ProcessError::NotPermitted(_))));
        let any = policy(&dirs, Approval::Any);
        let outside = Spawn { cwd: Some("/tmp".into()), ..shell("ls") };
        assert!(
            matches!(ChildProcess::spawn(outside, &any, None), Err(ProcessError::BadDirectory(m)) if m.contains("outside"))
        );
        let evil = Spawn { env: vec![("LD_PRELOAD".into(), "/x.so".into())], ..shell("ls") };
        assert!(matches!(ChildProcess::spawn(evil, &any, None), Err(ProcessError::NotPermitted(_))));
        let path = || Spawn { env: vec![("PATH".into(), "/tmp/evil".into())], ..shell("ls") };
        assert!(
            matches!(ChildProcess::spawn(path(), &read_only, None), Err(ProcessError::NotPermitted(m)) if m.contains("PATH"))
        );
        assert!(
            !matches!(ChildProcess::spawn(path(), &any, None), Err(ProcessError::NotPermitted(_))),
            "a call allowed to run anything may set PATH"
        );
    }

    #[test]
    fn rules_are_checked_again_at_spawn() {
        use crate::rules::{Behavior, Places, Rule, RuleEntry, RuleSet};
        let (_t, dirs) = dirs();
        let entries = [(Behavior::Allow, "Bash(touch allowed.txt)"), (Behavior::Deny, "Bash(rm:*)")]
            .into_iter()
            .map(|(behavior, text)| RuleEntry {
                rule: Rule::parse(text).unwrap(),
                behavior,
                origin: std::sync::Arc::from("test"),
                base: None,
            })
            .collect();
        let places = Places { cwd: dirs.cwd.clone(), working: dirs.working.clone(), home: None };
        let rules = RuleSet::compile(entries, places).unwrap();
        let with = |approval| Policy { rules: Some(&rules), ..policy(&dirs, approval) };
        let refused = |cmd: &str, approval: Approval| match ChildProcess::spawn(shell(cmd), &with(approval), None) {
            Err(ProcessError::NotPermitted(m)) => m,
            other => panic!("`{cmd}` was not refused: {:?}", other.map(|_| ())),
        };
        // Deny rules hold whatever approved the call.
        for approval in [Approval::Any, Approval::Rules, Approval::Command("rm x".into()), Approval::ReadOnly] {
            assert!(refused("rm x", approval.clone()).contains("deny rule `Bash(rm:*)`"), "{approval:?}");
            assert!(refused("ls && rm -rf x", approval).contains("forbids"));
        }
        // A call allowed by a rule starts what the rules allow, and what reads.
        assert!(ChildProcess::spawn(shell("touch allowed.txt"), &with(Approval::Rules), None).is_ok());
        assert!(ChildProcess::spawn(shell("ls"), &with(Approval::Rules), None).is_ok());
        assert!(refused("touch other.txt", Approval::Rules).contains("neither"));
        // A call the user approved starts that command.
        let approved = Approval::Command("touch mine.txt".into());
        assert!(ChildProcess::spawn(shell("touch mine.txt"), &with(approved.clone()), None).is_ok());
        assert!(refused("touch theirs.txt", approved).contains("neither"));
    }

    #[test]
    fn any_timeout_is_accepted() {
        let (_t, dirs) = dirs();
        let policy = policy(&dirs, Approval::Any);
        let request = Spawn { timeout: Duration::MAX, ..shell("true") };
        let (_, finished) = run(&mut ChildProcess::spawn(request, &policy, None).unwrap());
        assert_eq!(finished.status, Status::Exited(0));
    }

    #[test]
    fn the_environment_is_an_allow_list() {
        let (_t, dirs) = dirs();
        let policy = policy(&dirs, Approval::Any);
        // SAFETY: tests in this module do not read this variable concurrently.
        unsafe { std::env::set_var("TOOLHOST_TEST_SECRET", "leak") };
        let request = Spawn { env: vec![("MINE".into(), "1".into())], ..shell("env") };
        let (out, _) = run(&mut ChildProcess::spawn(request, &policy, None).unwrap());
        assert!(!out.contains("TOOLHOST_TEST_SECRET") && out.contains("MINE=1") && out.contains("PATH="), "{out}");
    }

    #[test]
    fn timeouts_kill_the_whole_group() {
        let (_t, dirs) = dirs();
        let policy = policy(&dirs, Approval::Any);
        let marker = dirs.cwd.join("grandchild-survived");
        let script = format!("(sleep 1; touch {}) & sleep 30", marker.display());
        let started = Instant::now();
        let mut child =
            ChildProcess::spawn(Spawn { timeout: Duration::from_millis(300), ..shell(&script) }, &policy, None)
                .unwrap();
        let (_, finished) = run(&mut child);
        assert!(finished.timed_out && matches!(finished.status, Status::Signaled(9)), "{finished:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!marker.exists(), "the grandchild was killed with its group");
    }

    #[test]
    fn background_processes_are_read_incrementally_and_per_session() {
        let (_t, dirs) = dirs();
        let policy = policy(&dirs, Approval::Any);
        let registry = BackgroundRegistry::default();
        let id = registry.start("s1", shell("echo one; sleep 0.3; echo two"), &policy).unwrap();
        assert!(matches!(registry.read("s2", &id), Err(ProcessError::UnknownId(_))));
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let out = registry.read("s1", &id).unwrap();
            seen.extend(out.stdout);
            if out.status.is_some() || Instant::now() > deadline {
                assert_eq!(out.status, Some(Status::Exited(0)));
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(String::from_utf8_lossy(&seen), "one\ntwo\n");
        let id = registry.start("s1", shell("sleep 30"), &policy).unwrap();
        registry.kill("s1", &id).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while registry.read("s1", &id).unwrap().status.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(registry.read("s1", &id).unwrap().status, Some(Status::Signaled(9)));
    }

    #[test]
    fn ending_a_session_kills_and_forgets_its_background_processes_only() {
        let (_t, dirs) = dirs();
        let policy = policy(&dirs, Approval::Any);
        let registry = BackgroundRegistry::default();
        let pid_file = dirs.cwd.join("a.pid");
        let a =
            registry.start("a", shell(&format!("echo $$ > {}; exec sleep 30", pid_file.display())), &policy).unwrap();
        let b = registry.start("b", shell("sleep 30"), &policy).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(&pid_file).map_or(true, |s| s.trim().is_empty()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        registry.end_session("a");
        assert!(matches!(registry.read("a", &a), Err(ProcessError::UnknownId(_))), "forgotten");
        assert!(toolhost_tests::wait_gone(pid, Duration::from_secs(10)), "session a's process was killed");
        assert_eq!(registry.read("b", &b).unwrap().status, None, "session b's process runs on");
        registry.kill("b", &b).unwrap();
    }
}
