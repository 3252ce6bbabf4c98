//! The one child-process runner: a command in a process group of its own,
//! its output read through bounded pumps, its exit waited for with a
//! deadline, and a kill that takes the whole group. Hooks, the foreground
//! commands of the process capability and its background commands all run
//! through it.

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bytes read from a pipe at a time.
const CHUNK: usize = 64 * 1024;
/// Chunks buffered before the child's writes block: a flood of output stops
/// the child, not the host's memory.
const BUFFERED_CHUNKS: usize = 32;
/// Most bytes one [`Child::read`] hands back.
const READ_MAX: usize = 1 << 20;
/// How long [`Drop`] waits for a killed process before leaving the reaping
/// to a thread.
const REAP_GRACE: Duration = Duration::from_millis(100);

/// Which output stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
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

enum Piece {
    Chunk(Stream, Vec<u8>),
    Closed,
}

/// A running child process and its process group.
pub(crate) struct Child {
    /// Taken only by [`Drop`], to hand a stuck child to a reaping thread.
    child: Option<std::process::Child>,
    group: Arc<Group>,
    pieces: Receiver<Piece>,
    /// Output streams not closed yet.
    open: u8,
    status: Option<Status>,
}

/// A child's process group, to kill it from another thread (a background
/// command's reader owns the [`Child`]).
pub(crate) struct Group {
    pgid: libc::pid_t,
    /// Set, under the lock, once the leader is reaped: from then on the group
    /// id may name other processes and is never signalled.
    reaped: Mutex<bool>,
}

impl Group {
    /// Kills every process of the group (nothing once the leader is reaped).
    pub(crate) fn kill(&self) {
        let reaped = self.reaped.lock().unwrap_or_else(|e| e.into_inner());
        if !*reaped && self.pgid > 0 {
            // SAFETY: killpg has no memory-safety preconditions; the leader is
            // not reaped (we hold the lock `reap` takes), so the id still
            // names this run's group.
            unsafe {
                libc::killpg(self.pgid, libc::SIGKILL);
            }
        }
    }
}

impl Child {
    /// The process id of the leader (also the process group's id).
    pub(crate) fn id(&self) -> u32 {
        self.group.pgid.unsigned_abs()
    }

    /// Starts `command` in a process group of its own, with stdout and stderr
    /// piped and stdin fed `stdin` (then closed) or empty.
    pub(crate) fn start(command: &mut Command, stdin: Option<Vec<u8>>) -> std::io::Result<Child> {
        command
            .process_group(0)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = keeper::spawn(std::mem::replace(command, Command::new("true")))?;
        let Ok(pgid) = libc::pid_t::try_from(child.id()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("the process id does not fit a pid_t"));
        };
        let (tx, pieces) = std::sync::mpsc::sync_channel(BUFFERED_CHUNKS);
        let (pipe_in, pipe_out, pipe_err) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let group = Arc::new(Group { pgid, reaped: Mutex::new(false) });
        let mut started = Child { child: Some(child), group, pieces, open: 0, status: None };
        let io = (|| {
            if let (Some(mut pipe), Some(input)) = (pipe_in, stdin) {
                // The child may exit without reading: a broken pipe is no concern.
                spawn("toolhost-stdin", move || {
                    let _ = pipe.write_all(&input);
                })?;
            }
            if let Some(out) = pipe_out {
                pump(out, Stream::Stdout, tx.clone())?;
                started.open += 1;
            }
            if let Some(err) = pipe_err {
                pump(err, Stream::Stderr, tx)?;
                started.open += 1;
            }
            Ok(())
        })();
        // On failure the child is dropped: killed and reaped.
        io.map(|()| started)
    }

    /// The process group, for killing it from elsewhere.
    pub(crate) fn group(&self) -> Arc<Group> {
        Arc::clone(&self.group)
    }

    fn process(&mut self) -> &mut std::process::Child {
        self.child.as_mut().expect("the child is taken only when the runner is dropped")
    }

    /// Output that arrives before `until`, and whatever else is ready then
    /// (up to about 1 MiB): an empty list if nothing came in time, `None` once
    /// both streams have closed.
    pub(crate) fn read(&mut self, until: Instant) -> Option<Vec<(Stream, Vec<u8>)>> {
        let mut out = Vec::new();
        let mut bytes = 0;
        while self.open > 0 {
            let piece = if out.is_empty() {
                match self.pieces.recv_timeout(until.saturating_duration_since(Instant::now())) {
                    Ok(p) => p,
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => {
                        self.open = 0;
                        break;
                    }
                }
            } else {
                match self.pieces.try_recv() {
                    Ok(p) => p,
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        self.open = 0;
                        break;
                    }
                }
            };
            match piece {
                Piece::Chunk(stream, data) => {
                    bytes += data.len();
                    out.push((stream, data));
                    if bytes >= READ_MAX {
                        break;
                    }
                }
                Piece::Closed => self.open -= 1,
            }
        }
        if out.is_empty() && self.open == 0 { None } else { Some(out) }
    }

    /// Whether the leader has exited. It is not reaped yet (so the group id
    /// still names this run's group): [`Child::reap`] collects its status.
    pub(crate) fn exited(&mut self) -> bool {
        if self.status.is_some() {
            return true;
        }
        let Ok(id) = libc::id_t::try_from(self.group.pgid) else { return false };
        loop {
            // SAFETY: `info` is a valid, writable siginfo_t; WNOWAIT leaves
            // the child for `reap` to collect.
            let (rc, pid) = unsafe {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                let rc = libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT);
                (rc, info.si_pid())
            };
            if rc == 0 {
                return pid != 0;
            }
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                // waitid cannot tell (say, SIGCHLD is ignored): reap instead.
                let group = Arc::clone(&self.group);
                let mut reaped = group.reaped.lock().unwrap_or_else(|e| e.into_inner());
                return match self.process().try_wait() {
                    Ok(Some(s)) => {
                        *reaped = true;
                        self.status = Some(Status::from(s));
                        true
                    }
                    Ok(None) | Err(_) => false,
                };
            }
        }
    }

    /// Waits for the leader to exit, polling (backing off from 20 µs to
    /// 5 ms) until `until` or until `stop` says to give up; whether it exited.
    pub(crate) fn wait_exit(&mut self, until: Instant, stop: &mut dyn FnMut() -> bool) -> bool {
        let mut pause = Duration::from_micros(20);
        loop {
            if self.exited() {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || stop() {
                return false;
            }
            std::thread::sleep(pause.min(left));
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }

    /// The leader's exit status, reaping it (waits for it to go).
    pub(crate) fn reap(&mut self) -> Status {
        if let Some(status) = self.status {
            return status;
        }
        let group = Arc::clone(&self.group);
        let status = reap(self.process(), &group);
        self.status = Some(status);
        status
    }

    /// Kills the whole process group (nothing once the leader is reaped).
    pub(crate) fn kill(&self) {
        self.group.kill();
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        self.kill();
        let _ = self.process().kill();
        let until = Instant::now() + REAP_GRACE;
        if self.wait_exit(until, &mut || false) {
            self.reap();
            return;
        }
        // Stuck in the kernel: reaped by a thread, never blocking the caller
        // (if even that thread cannot start, a zombie is left behind).
        if let Some(mut child) = self.child.take() {
            let group = Arc::clone(&self.group);
            let _ = spawn("toolhost-reap", move || {
                reap(&mut child, &group);
            });
        }
    }
}

/// Waits for `child` to exit without the group's lock (so [`Group::kill`]
/// never waits for a process stuck in the kernel), then reaps it under the
/// lock.
fn reap(child: &mut std::process::Child, group: &Group) -> Status {
    if let Ok(id) = libc::id_t::try_from(group.pgid) {
        loop {
            // SAFETY: `info` is a valid, writable siginfo_t; WNOWAIT leaves
            // the child to be reaped below.
            let rc = unsafe {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOWAIT)
            };
            if rc == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                break;
            }
        }
    }
    let mut reaped = group.reaped.lock().unwrap_or_else(|e| e.into_inner());
    let status = child.wait().map_or(Status::Exited(-1), Status::from);
    *reaped = true;
    status
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new().name(name.into()).spawn(f).map(drop)
}

/// Reads `pipe` into `tx` in chunks until it closes.
fn pump(mut pipe: impl Read + Send + 'static, stream: Stream, tx: SyncSender<Piece>) -> std::io::Result<()> {
    spawn("toolhost-pipe", move || {
        let mut buf = vec![0u8; CHUNK];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if tx.send(Piece::Chunk(stream, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send(Piece::Closed);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    #[test]
    fn output_exit_and_a_kill_from_another_thread() {
        let mut child = Child::start(&mut sh("cat; echo err >&2; exit 7"), Some(b"in".to_vec())).unwrap();
        let mut out = Vec::new();
        while let Some(chunks) = child.read(Instant::now() + Duration::from_secs(10)) {
            out.extend(chunks);
        }
        assert!(out.contains(&(Stream::Stdout, b"in".to_vec())) && out.contains(&(Stream::Stderr, b"err\n".to_vec())));
        assert!(child.wait_exit(Instant::now() + Duration::from_secs(10), &mut || false));
        assert_eq!(child.reap(), Status::Exited(7));

        let mut child = Child::start(&mut sh("sleep 30"), None).unwrap();
        let group = child.group();
        std::thread::spawn(move || group.kill());
        assert!(child.wait_exit(Instant::now() + Duration::from_secs(10), &mut || false));
        assert_eq!(child.reap(), Status::Signaled(libc::SIGKILL));
        child.kill(); // after the reap: nothing to signal, no error
    }

    #[test]
    fn a_flood_blocks_the_child_not_the_host() {
        // 64 MiB of output, never read: the child blocks on a full pipe.
        let mut child = Child::start(&mut sh("head -c 67108864 /dev/zero"), None).unwrap();
        assert!(!child.wait_exit(Instant::now() + Duration::from_millis(300), &mut || false), "it cannot finish");
        let pid = child.id() as i32;
        drop(child);
        assert!(toolhost_tests::wait_gone(pid, Duration::from_secs(10)), "dropping the runner kills the child");
    }
}

/// Children die with the host. A host killed outright (SIGKILL, the OOM
/// killer) runs no cleanup, so each child asks the kernel for SIGKILL when
/// its parent dies (`PR_SET_PDEATHSIG`). The kernel sends it when the
/// *thread* that forked the child ends, so every child is forked by one
/// thread that lives as long as the process: a background command started
/// by a call's thread outlives that thread, not the host.
mod keeper {
    use std::process::Command;
    use std::sync::OnceLock;
    use std::sync::mpsc::{Sender, SyncSender, sync_channel};

    type Request = (Command, SyncSender<std::io::Result<std::process::Child>>);

    fn thread() -> Option<&'static std::sync::Mutex<Sender<Request>>> {
        static KEEPER: OnceLock<Option<std::sync::Mutex<Sender<Request>>>> = OnceLock::new();
        KEEPER
            .get_or_init(|| {
                let (tx, rx) = std::sync::mpsc::channel::<Request>();
                let started = std::thread::Builder::new().name("toolhost-spawner".into()).spawn(move || {
                    for (mut command, reply) in rx {
                        let _ = reply.send(with_parent_death(&mut command).spawn());
                    }
                });
                match started {
                    Ok(_) => Some(std::sync::Mutex::new(tx)),
                    Err(e) => {
                        tracing::error!(error = %e, "no spawner thread: children may outlive a killed host");
                        None
                    }
                }
            })
            .as_ref()
    }

    /// Spawns `command` from the spawner thread (from this one, without the
    /// parent-death signal, if that thread could not be started).
    pub(super) fn spawn(mut command: Command) -> std::io::Result<std::process::Child> {
        let Some(keeper) = thread() else { return command.spawn() };
        let (reply, answer) = sync_channel(1);
        let sent = keeper.lock().unwrap_or_else(|e| e.into_inner()).send((command, reply));
        if sent.is_err() {
            return Err(std::io::Error::other("the spawner thread is gone"));
        }
        answer.recv().unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread is gone")))
    }

    fn with_parent_death(command: &mut Command) -> &mut Command {
        use std::os::unix::process::CommandExt as _;
        // SAFETY: getpid before the fork; between fork and exec only
        // prctl, getppid and _exit, which are async-signal-safe.
        let parent = unsafe { libc::getpid() };
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The host died between the fork and the prctl.
                if libc::getppid() != parent {
                    libc::_exit(137);
                }
                Ok(())
            })
        }
    }
}
