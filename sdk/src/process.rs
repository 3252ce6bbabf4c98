//! Starting processes, through the host's process capability.
//!
//! Only components granted the capability can use it (the built-in Bash
//! tools are); the host checks every start against the grant, the call's
//! approval (a call approved as read-only can start only commands the host
//! classifies as read-only), the working directories and its environment
//! rules, and kills each process group at its timeout, on cancellation, and
//! when the [`Child`] is dropped.
//!
//! The host hands out each byte a background process prints once
//! ([`read_background`]). [`BackgroundTask`] is how the built-in shell tools
//! (Bash starts a command, TaskOutput reads it, TaskStop stops it) remember a
//! background command across calls: its command line, the beginning and the
//! end of everything it printed so far, how it ended, and whether it was
//! stopped, in the session's state.

pub use crate::bindings::toolhost::tool::process::{
    BackgroundOutput, Child, Chunk, ExitStatus, Finished, ProcessError, Program, SpawnOptions, StreamKind,
    kill_background, read_background, spawn, start_background,
};
use crate::{Context, LogLevel};
use serde::{Deserialize, Serialize};

/// A sentence for the model about why the host refused or failed.
pub fn describe(e: &ProcessError) -> String {
    match e {
        ProcessError::NotPermitted(m) => format!("not permitted: {m}"),
        ProcessError::BadDirectory(m) => format!("bad working directory: {m}"),
        ProcessError::SpawnFailed(m) => format!("could not start the command: {m}"),
        ProcessError::UnknownId(m) => m.clone(),
    }
}

/// What TaskOutput and TaskStop say of a task `id` the host does not know
/// (`host` is the host's message): Claude Code's sentence, and the host's
/// explanation when it knows more than that the id is unknown (another
/// instance serving the same session started it).
pub fn no_task(id: &str, host: &str) -> String {
    if host.starts_with("no background process") || host.is_empty() {
        format!("No task found with ID: {id}")
    } else {
        format!("No task found with ID: {id} here: {host}")
    }
}

/// Bytes of a background command's output kept from its start: what
/// TaskOutput shows while the command runs.
pub const TASK_HEAD_BYTES: usize = 30_000;
/// UTF-16 code units (a JavaScript string's length) of output kept from its
/// end: what TaskOutput shows once the command ended.
pub const TASK_TAIL_UNITS: usize = 32_000;

/// Session keys of background tasks start with this.
const KEY_PREFIX: &str = "background/";
/// Bytes of text per session value (values are at most 64 KiB).
const VALUE_BYTES: usize = 60_000;

/// How a background command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ended {
    Exited(i32),
    Signaled(i32),
}

impl From<ExitStatus> for Ended {
    fn from(s: ExitStatus) -> Self {
        match s {
            ExitStatus::Exited(c) => Ended::Exited(c),
            ExitStatus::Signaled(s) => Ended::Signaled(s),
        }
    }
}

/// What of a task the session keeps under `background/<id>` (its text
/// under `background/<id>/head` and `background/<id>/tail/<n>`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Meta {
    command: String,
    total: u64,
    tail_complete: bool,
    ended: Option<Ended>,
    stopped: bool,
    /// Bytes at the end of each stream (stdout, stderr) that may begin a
    /// character the next read completes.
    carry: [Vec<u8>; 2],
    tail_values: usize,
}

/// A background command as the session remembers it.
#[derive(Clone, Debug, PartialEq)]
pub struct BackgroundTask {
    pub id: String,
    /// The command line Bash started (empty when no record was kept).
    pub command: String,
    /// Bytes of output read from the host so far, both streams.
    pub total: u64,
    /// The first [`TASK_HEAD_BYTES`] of output (while the command runs).
    pub head: String,
    /// The end of the output: at least [`TASK_TAIL_UNITS`] UTF-16 units of
    /// it when there is that much.
    pub tail: String,
    /// Whether `tail` holds all the output.
    pub tail_complete: bool,
    /// How the command ended, once the host said so.
    pub ended: Option<Ended>,
    /// TaskStop stopped it.
    pub stopped: bool,
    carry: [Vec<u8>; 2],
    /// Session values the tail was saved in last.
    tail_values: usize,
}

impl BackgroundTask {
    /// A task with no output yet.
    pub fn new(id: &str, command: &str) -> Self {
        BackgroundTask {
            id: id.to_string(),
            command: command.to_string(),
            total: 0,
            head: String::new(),
            tail: String::new(),
            tail_complete: true,
            ended: None,
            stopped: false,
            carry: [Vec::new(), Vec::new()],
            tail_values: 0,
        }
    }

    /// Records a command Bash just started in the background as `id`.
    pub fn started(ctx: &Context, id: &str, command: &str) {
        BackgroundTask::new(id, command).save(ctx, true);
    }

    /// The task `id` with what the host has for it since the last read added
    /// (that output is returned too), saved. `UnknownId` when the host knows
    /// no such background process in this session.
    pub fn refresh(ctx: &Context, id: &str) -> Result<(BackgroundTask, BackgroundOutput), ProcessError> {
        let out = read_background(id)?;
        let mut task = BackgroundTask::load(ctx, id).unwrap_or_else(|| BackgroundTask::new(id, ""));
        let changed = task.absorb(&out);
        task.save(ctx, changed);
        Ok((task, out))
    }

    /// Reads the host again, adding what came; saves only when something did.
    pub fn update(&mut self, ctx: &Context) -> Result<BackgroundOutput, ProcessError> {
        let out = read_background(&self.id)?;
        if self.absorb(&out) {
            self.save(ctx, true);
        }
        Ok(out)
    }

    /// Marks the task stopped by TaskStop.
    pub fn mark_stopped(&mut self, ctx: &Context) {
        self.stopped = true;
        self.save(ctx, false);
    }

    /// Still running: not ended, not stopped.
    pub fn is_running(&self) -> bool {
        self.ended.is_none() && !self.stopped
    }

    /// `running`, `completed`, `failed` or `killed` (stopped by TaskStop).
    pub fn status(&self) -> &'static str {
        match (self.stopped, self.ended) {
            (true, _) => "killed",
            (false, None) => "running",
            (false, Some(Ended::Exited(0))) => "completed",
            (false, Some(_)) => "failed",
        }
    }

    /// The exit code, once the command ended on its own. A shell killed by
    /// a signal reports what Node reports for it: 144 for SIGTERM, else 1.
    pub fn exit_code(&self) -> Option<i32> {
        match (self.stopped, self.ended?) {
            (true, _) => None,
            (false, Ended::Exited(c)) => Some(c),
            (false, Ended::Signaled(15)) => Some(144),
            (false, Ended::Signaled(_)) => Some(1),
        }
    }

    /// Adds `out` (stdout, then stderr), and its status; whether anything
    /// changed.
    pub fn absorb(&mut self, out: &BackgroundOutput) -> bool {
        let ended = out.status.map(Ended::from);
        let finishing = ended.is_some() && self.ended.is_none();
        if out.dropped > 0 {
            // The host dropped bytes nobody read in time: the tail is no
            // longer the whole output.
            self.tail_complete = false;
        }
        let mut changed = finishing || out.dropped > 0;
        for (i, data) in [&out.stdout, &out.stderr].into_iter().enumerate() {
            if data.is_empty() && (!finishing || self.carry[i].is_empty()) {
                continue;
            }
            self.total += data.len() as u64;
            let mut bytes = std::mem::take(&mut self.carry[i]);
            bytes.extend_from_slice(data);
            if !finishing {
                let keep = incomplete_suffix(&bytes);
                self.carry[i] = bytes.split_off(bytes.len() - keep);
            }
            self.push_text(&String::from_utf8_lossy(&bytes));
            changed = true;
        }
        if finishing {
            self.ended = ended;
            // Nobody shows the head of a finished task.
            self.head = String::new();
        }
        changed
    }

    fn push_text(&mut self, text: &str) {
        if self.ended.is_none() && self.head.len() < TASK_HEAD_BYTES {
            let room = floor_char_boundary(text, TASK_HEAD_BYTES - self.head.len());
            self.head.push_str(&text[..room]);
        }
        self.tail.push_str(text);
        // A string of n bytes is at most n UTF-16 units long.
        if self.tail.len() > TASK_TAIL_UNITS {
            let cut = tail_start(&self.tail, TASK_TAIL_UNITS);
            if cut > 0 {
                self.tail.drain(..cut);
                self.tail_complete = false;
            }
        }
    }

    fn key(id: &str) -> String {
        format!("{KEY_PREFIX}{id}")
    }

    fn load(ctx: &Context, id: &str) -> Option<BackgroundTask> {
        let session = ctx.session();
        let key = Self::key(id);
        let meta: Meta = session.get_json(&key)?;
        let head = session.get(&format!("{key}/head")).unwrap_or_default();
        let tail: String = (0..meta.tail_values).filter_map(|n| session.get(&format!("{key}/tail/{n}"))).collect();
        Some(BackgroundTask {
            id: id.to_string(),
            command: meta.command,
            total: meta.total,
            head,
            tail,
            tail_complete: meta.tail_complete,
            ended: meta.ended,
            stopped: meta.stopped,
            carry: meta.carry,
            tail_values: meta.tail_values,
        })
    }

    /// Saves the record, and its text when `text` (a full session is
    /// logged, not an error: the task still runs and is read from the host).
    fn save(&mut self, ctx: &Context, text: bool) {
        let session = ctx.session();
        let key = Self::key(&self.id);
        let mut failed = Vec::new();
        if text {
            let head_key = format!("{key}/head");
            if self.head.is_empty() {
                session.remove(&head_key);
            } else if let Err(e) = session.set(&head_key, &self.head) {
                failed.push(e.message);
            }
            let pieces = split_values(&self.tail, VALUE_BYTES);
            for (n, piece) in pieces.iter().enumerate() {
                if let Err(e) = session.set(&format!("{key}/tail/{n}"), piece) {
                    failed.push(e.message);
                }
            }
            for n in pieces.len()..self.tail_values {
                session.remove(&format!("{key}/tail/{n}"));
            }
            self.tail_values = pieces.len();
        }
        let meta = Meta {
            command: self.command.clone(),
            total: self.total,
            tail_complete: self.tail_complete,
            ended: self.ended,
            stopped: self.stopped,
            carry: self.carry.clone(),
            tail_values: self.tail_values,
        };
        if let Err(e) = session.set_json(&key, &meta) {
            failed.push(e.message);
        }
        if !failed.is_empty() {
            ctx.log(LogLevel::Warn, &format!("background task {}: {}", self.id, failed.join("; ")));
        }
    }
}

/// How many bytes at the end of `bytes` may begin a UTF-8 character that
/// more bytes would complete (0 to 3).
fn incomplete_suffix(bytes: &[u8]) -> usize {
    let start = bytes.len().saturating_sub(3);
    for i in (start..bytes.len()).rev() {
        let b = bytes[i];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back
        }
        let needed = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0,
        };
        let have = bytes.len() - i;
        return if have < needed { have } else { 0 };
    }
    0
}

/// The largest char boundary of `s` at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)
}

/// Where the shortest suffix of `s` that is at least `units` UTF-16 units
/// long starts (0 when `s` is shorter).
fn tail_start(s: &str, units: usize) -> usize {
    let mut counted = 0;
    for (i, c) in s.char_indices().rev() {
        counted += c.len_utf16();
        if counted >= units {
            return i;
        }
    }
    0
}

/// `s` in pieces of at most `max` bytes, cut at char boundaries.
fn split_values(s: &str, max: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let cut = floor_char_boundary(rest, max).max(rest.chars().next().map_or(0, char::len_utf8));
        let (piece, more) = rest.split_at(cut);
        pieces.push(piece);
        rest = more;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(stdout: &[u8], stderr: &[u8], status: Option<ExitStatus>) -> BackgroundOutput {
        BackgroundOutput { stdout: stdout.to_vec(), stderr: stderr.to_vec(), dropped: 0, status }
    }

    #[test]
    fn output_is_kept_head_and_tail_with_both_streams_in_order() {
        let mut t = BackgroundTask::new("b1", "make");
        assert!(!t.absorb(&out(b"", b"", None)), "nothing new");
        assert!(t.absorb(&out(b"one\n", b"warn\n", None)));
        assert!(t.absorb(&out(b"two\n", b"", None)));
        assert_eq!((t.head.as_str(), t.tail.as_str(), t.total), ("one\nwarn\ntwo\n", "one\nwarn\ntwo\n", 13));
        assert!(t.tail_complete && t.is_running());

        let big = "x".repeat(TASK_HEAD_BYTES + TASK_TAIL_UNITS);
        t.absorb(&out(big.as_bytes(), b"", None));
        t.absorb(&out(b"end\n", b"", None));
        assert_eq!(t.head.len(), TASK_HEAD_BYTES);
        assert!(t.head.starts_with("one\nwarn\ntwo\nxxx"));
        assert_eq!(t.tail.len(), TASK_TAIL_UNITS);
        assert!(t.tail.ends_with("xxend\n") && !t.tail_complete);

        assert!(t.absorb(&out(b"", b"", Some(ExitStatus::Exited(0)))));
        assert_eq!((t.status(), t.exit_code(), t.head.as_str()), ("completed", Some(0), ""));
    }

    #[test]
    fn characters_split_between_reads_are_joined() {
        let mut t = BackgroundTask::new("b1", "");
        let e = "é".as_bytes();
        t.absorb(&out(&[b'a', e[0]], b"", None));
        assert_eq!(t.tail, "a");
        t.absorb(&out(&[e[1], b'b'], b"", None));
        assert_eq!(t.tail, "aéb");
        // A stream that ends on half a character shows it lossily.
        t.absorb(&out(&[e[0]], b"", None));
        t.absorb(&out(b"", b"", Some(ExitStatus::Exited(1))));
        assert_eq!(t.tail, "aéb\u{fffd}");
        assert_eq!((t.status(), t.exit_code()), ("failed", Some(1)));
    }

    #[test]
    fn statuses_and_exit_codes_as_claude_code_reports_them() {
        let mut t = BackgroundTask::new("b1", "");
        assert_eq!((t.status(), t.exit_code()), ("running", None));
        t.ended = Some(Ended::Signaled(15));
        assert_eq!((t.status(), t.exit_code()), ("failed", Some(144)));
        t.ended = Some(Ended::Signaled(9));
        assert_eq!((t.status(), t.exit_code()), ("failed", Some(1)));
        t.stopped = true;
        assert_eq!((t.status(), t.exit_code(), t.is_running()), ("killed", None, false));
    }

    #[test]
    fn text_helpers() {
        assert_eq!(incomplete_suffix(b"ab"), 0);
        assert_eq!(incomplete_suffix(&[b'a', 0xE2, 0x82]), 2);
        assert_eq!(incomplete_suffix(&[b'a', 0xE2, 0x82, 0xAC]), 0);
        assert_eq!(incomplete_suffix(&[0xF0]), 1);
        assert_eq!(incomplete_suffix(&[0xFF]), 0);
        assert_eq!(tail_start("abcd", 2), 2);
        assert_eq!(tail_start("a😀", 2), 1, "an astral character counts twice");
        assert_eq!(tail_start("ab", 5), 0);
        assert_eq!(split_values("ééé", 3), ["é", "é", "é"]);
        assert_eq!(split_values("", 3), Vec::<&str>::new());
        assert_eq!(floor_char_boundary("aé", 2), 1);
    }
}
