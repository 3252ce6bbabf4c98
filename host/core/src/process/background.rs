//! Background processes: started by a call, they outlive it (as long as the
//! host runs or their session lasts). Everything they print, both streams
//! in the order it came, goes to an output file the model can read (Claude
//! Code's `<id>.output`), at most [`MAX_OUTPUT_BYTES`] of it; what came
//! since the last read is also kept in memory, bounded, for the process
//! capability's `read-background`.

use super::runner::{Child, Group, Status, Stream};
use super::spawn::{Permit, ProcessError, Spawn, deadline_after, prepare};
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bytes kept in memory per stream of a background process between reads
/// (the output file has all of it).
pub(crate) const BACKGROUND_KEEP: usize = 1 << 20;
/// Most bytes of output a background process's file takes: past it, the file
/// ends with [`OUTPUT_CAP_LINE`] and the process is killed, as Claude Code
/// does at its own (5 GB) cap.
pub(crate) const MAX_OUTPUT_BYTES: u64 = 64 << 20;
/// The last line of an output file that reached [`MAX_OUTPUT_BYTES`]
/// (Claude Code 2.1.328's words, with toolhost's cap).
pub(crate) const OUTPUT_CAP_LINE: &str = "\n[output truncated: exceeded 64MB disk cap]\n";

/// What a background process's id is made of: `b` (a shell task, as Claude
/// Code names them) and [`ID_DIGITS`] characters of this alphabet, each
/// drawn uniformly: 129 random bits, so an id says nothing about the host's other processes and
/// cannot be guessed (Claude Code's are 8 characters; toolhost's ids may be
/// presented to any instance of a cluster, so they carry more).
const ID_ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
/// Characters of an id: 36^25 > 2^129.
pub(crate) const ID_DIGITS: usize = 25;

/// The session key recording which instance runs background process `id`
/// (so another instance serving the same session can say where it is).
pub(crate) fn instance_key(id: &str) -> String {
    format!("toolhost:background:{id}")
}

/// The session key holding the path of background process `id`'s output
/// file, for the built-in that started it to name (in the namespace only
/// built-ins reach).
pub(crate) fn output_key(id: &str) -> String {
    format!("toolhost:background-output:{id}")
}

/// One stream of a background process: what it printed since the last read.
#[derive(Default)]
struct Pending {
    data: VecDeque<u8>,
    dropped: u64,
}

struct Background {
    group: Arc<Group>,
    session: String,
    stdout: Mutex<Pending>,
    stderr: Mutex<Pending>,
    status: Mutex<Option<Status>>,
    done: AtomicBool,
}

/// A background process's output file, written up to `cap` bytes
/// ([`MAX_OUTPUT_BYTES`]).
struct OutputFile {
    file: Option<File>,
    written: u64,
    cap: u64,
    /// The cap was reached: nothing more is written.
    full: bool,
}

impl OutputFile {
    /// Appends `data`; false once the cap is reached (the caller kills the
    /// process). A file that cannot be written is dropped with a log line:
    /// the process runs on, and its output is still read through memory.
    fn append(&mut self, data: &[u8]) -> bool {
        if self.full {
            return false;
        }
        let room = self.cap.saturating_sub(self.written);
        let (kept, over) = if data.len() as u64 > room { (&data[..room as usize], true) } else { (data, false) };
        if let Some(file) = &mut self.file {
            let written = file
                .write_all(kept)
                .and_then(|()| if over { file.write_all(OUTPUT_CAP_LINE.as_bytes()) } else { Ok(()) });
            if let Err(e) = written {
                tracing::warn!(error = %e, "could not write a background process's output file");
                self.file = None;
            }
        }
        self.written += kept.len() as u64;
        self.full = over;
        !over
    }
}

impl Background {
    /// Reads `child` into the buffers and `output` until it closes its output
    /// (killing it at `deadline`, or when `output` is full), then records how
    /// it ended.
    fn follow(&self, mut child: Child, deadline: Instant, mut output: OutputFile) {
        let mut killed = false;
        loop {
            let now = Instant::now();
            let until =
                if killed { now + Duration::from_millis(20) } else { (now + Duration::from_secs(1)).min(deadline) };
            let Some(chunks) = child.read(until) else { break };
            for (stream, data) in chunks {
                if !output.append(&data) && !killed {
                    child.kill();
                    killed = true;
                }
                let target = match stream {
                    Stream::Stdout => &self.stdout,
                    Stream::Stderr => &self.stderr,
                };
                let mut pending = target.lock().unwrap_or_else(|e| e.into_inner());
                pending.data.extend(&data);
                let over = pending.data.len().saturating_sub(BACKGROUND_KEEP);
                if over > 0 {
                    pending.data.drain(..over);
                    pending.dropped += over as u64;
                }
            }
            if !killed && Instant::now() >= deadline {
                child.kill();
                killed = true;
            }
            // Killed, and a process that left the group still holds a pipe.
            if killed && child.exited() {
                break;
            }
        }
        if !child.wait_exit(deadline, &mut || false) {
            child.kill();
            child.wait_exit(Instant::now() + Duration::from_secs(3600), &mut || false);
        }
        let status = child.reap();
        *self.status.lock().unwrap_or_else(|e| e.into_inner()) = Some(status);
        self.done.store(true, Ordering::Release);
    }
}

/// What a background process printed since the last read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BackgroundOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub dropped: u64,
    pub status: Option<Status>,
}

/// The host's background processes, by id; each belongs to one session.
/// Dropping the registry (the host ending) kills them all.
#[derive(Default)]
pub(crate) struct BackgroundRegistry {
    /// This host's name among the instances serving the same sessions.
    instance: String,
    running: Mutex<HashMap<String, Arc<Background>>>,
}

impl BackgroundRegistry {
    /// A registry of the instance called `instance`.
    pub(crate) fn new(instance: String) -> BackgroundRegistry {
        BackgroundRegistry { instance, running: Mutex::default() }
    }

    /// This instance's name.
    pub(crate) fn instance(&self) -> &str {
        &self.instance
    }

    /// Starts a background process for `session`, its output going to a new
    /// file `<id>.output` in `dir`: its id and that file.
    pub(crate) fn start(
        &self,
        session: &str,
        dir: &Path,
        request: Spawn,
        permit: &Permit<'_>,
    ) -> Result<(String, PathBuf), ProcessError> {
        let (mut cmd, confined) = prepare(&request, permit)?;
        // The id is taken before the start, so the file can be made first;
        // a start that fails leaves the id unused.
        let id = {
            let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                let id = self.new_id();
                if !running.contains_key(&id) {
                    break id;
                }
            }
        };
        let path = dir.join(format!("{id}.output"));
        let file = std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::OpenOptions::new().write(true).create_new(true).open(&path))
            .map_err(|e| {
                ProcessError::SpawnFailed(format!("could not create its output file {}: {e}", path.display()))
            })?;
        let output = OutputFile { file: Some(file), written: 0, cap: MAX_OUTPUT_BYTES, full: false };
        let child = match Child::start(&mut cmd, request.stdin.clone()) {
            Ok(child) => child,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(ProcessError::SpawnFailed(e.to_string()));
            }
        };
        drop((cmd, confined));
        let entry = Arc::new(Background {
            group: child.group(),
            session: session.to_string(),
            stdout: Mutex::default(),
            stderr: Mutex::default(),
            status: Mutex::new(None),
            done: AtomicBool::new(false),
        });
        let follower = Arc::clone(&entry);
        let deadline = deadline_after(request.timeout);
        // If the thread cannot start, the child is dropped with the closure:
        // killed and reaped.
        std::thread::Builder::new()
            .name("toolhost-background".into())
            .spawn(move || follower.follow(child, deadline, output))
            .map_err(|e| ProcessError::SpawnFailed(format!("could not start a thread: {e}")))?;
        self.running.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), entry);
        Ok((id, path))
    }

    /// `b` and [`ID_DIGITS`] random characters of [`ID_ALPHABET`].
    fn new_id(&self) -> String {
        toolhost_primitives::id::random_text("b", ID_ALPHABET, ID_DIGITS)
    }

    fn get(&self, session: &str, id: &str) -> Result<Arc<Background>, ProcessError> {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        match running.get(id) {
            Some(b) if b.session == session => Ok(Arc::clone(b)),
            _ => Err(ProcessError::UnknownId(format!("no background process `{id}` in this session"))),
        }
    }

    /// Output since the last read, and the state.
    pub(crate) fn read(&self, session: &str, id: &str) -> Result<BackgroundOutput, ProcessError> {
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
    pub(crate) fn kill(&self, session: &str, id: &str) -> Result<(), ProcessError> {
        self.get(session, id)?.group.kill();
        Ok(())
    }

    /// The session ended: its processes still running are killed, and all
    /// of its processes (with their unread output) are forgotten.
    pub(crate) fn end_session(&self, session: &str) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.retain(|_, entry| {
            if entry.session != session {
                return true;
            }
            entry.group.kill();
            false
        });
    }
}

impl Drop for BackgroundRegistry {
    fn drop(&mut self) {
        for entry in self.running.get_mut().unwrap_or_else(|e| e.into_inner()).values() {
            entry.group.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::Approval;
    use crate::process::fixtures::{dirs, permit, shell};

    #[test]
    fn background_processes_are_read_incrementally_and_per_session() {
        let (_t, dirs) = dirs();
        let permit = permit(&dirs, Approval::Any);
        let registry = BackgroundRegistry::default();
        let out = dirs.cwd.join("out");
        let (id, file) = registry.start("s1", &out, shell("echo one; sleep 0.3; echo two >&2"), &permit).unwrap();
        assert_eq!(file, out.join(format!("{id}.output")));
        assert!(
            id.len() == 1 + ID_DIGITS && id.starts_with('b') && id[1..].bytes().all(|b| ID_ALPHABET.contains(&b)),
            "ids are `b` and 25 base-36 digits: {id}"
        );
        assert_ne!(registry.new_id(), registry.new_id());
        assert!(matches!(registry.read("s2", &id), Err(ProcessError::UnknownId(_))));
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let out = registry.read("s1", &id).unwrap();
            seen.extend(out.stdout);
            seen.extend(out.stderr);
            if out.status.is_some() || Instant::now() > deadline {
                assert_eq!(out.status, Some(Status::Exited(0)));
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(String::from_utf8_lossy(&seen), "one\ntwo\n");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\ntwo\n", "both streams, in the file too");
        let (id, _) = registry.start("s1", &out, shell("sleep 30"), &permit).unwrap();
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
        let permit = permit(&dirs, Approval::Any);
        let registry = BackgroundRegistry::default();
        let pid_file = dirs.cwd.join("a.pid");
        let a =
            registry.start("a", &dirs.cwd, shell(&format!("echo $$ > {}; exec sleep 30", pid_file.display())), &permit);
        let (a, b) = (a.unwrap().0, registry.start("b", &dirs.cwd, shell("sleep 30"), &permit).unwrap().0);
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

    #[test]
    fn the_output_file_stops_at_its_cap_and_the_process_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.output");
        let mut output = OutputFile { file: Some(File::create(&path).unwrap()), written: 0, cap: 10, full: false };
        assert!(output.append(b"12345"));
        assert!(!output.append(b"6789abc"), "over the cap");
        assert!(!output.append(b"more"), "and nothing after");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("123456789a{OUTPUT_CAP_LINE}"));
        assert!(OUTPUT_CAP_LINE.contains(&format!("exceeded {}MB disk cap", MAX_OUTPUT_BYTES >> 20)));

        // At the real cap, a process that floods its output is stopped.
        let (_t, dirs) = crate::process::fixtures::dirs();
        let permit = permit(&dirs, Approval::Any);
        let registry = BackgroundRegistry::default();
        let (id, file) = registry.start("s", &dirs.cwd, shell("yes"), &permit).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while registry.read("s", &id).unwrap().status.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(registry.read("s", &id).unwrap().status, Some(Status::Signaled(9)));
        let len = std::fs::metadata(&file).unwrap().len();
        assert_eq!(len, MAX_OUTPUT_BYTES + OUTPUT_CAP_LINE.len() as u64);
    }
}
