//! Starting processes, through the host's process capability.
//!
//! Only components granted the capability can use it (the built-in Bash
//! tools are); the host checks every start against the grant, the call's
//! approval (a call approved as read-only can start only commands the host
//! classifies as read-only), the working directories and its environment
//! rules, and kills each process group at its timeout, on cancellation, and
//! when the [`Child`] is dropped.
//!
//! The host writes everything a background process prints to an output file
//! the file tools may read ([`output_file`] names it to the built-ins), and
//! hands out each byte once more through [`read_background`].
//! [`BackgroundTask`] is how the built-in shell tools (Bash starts a command,
//! TaskStop stops it) remember a background command across calls: its
//! command line, how it ended, and whether it was stopped, in the session's
//! state.

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

/// What TaskStop says of a task `id` the host does not know (`host` is the
/// host's message): Claude Code's sentence, and the host's explanation when
/// it knows more than that the id is unknown (another instance serving the
/// same session started it).
pub fn no_task(id: &str, host: &str) -> String {
    let id = quoted_id(id);
    if host.starts_with("no background process") || host.is_empty() {
        format!("No task found with ID: {id}")
    } else {
        format!("No task found with ID: {id} here: {host}")
    }
}

/// An ID the model gave, as 2.1.328 quotes it back: control and format
/// characters (Unicode Cc, Cf) dropped unless they are white space, runs of
/// white space as one space, trimmed, and over 160 UTF-16 code units cut
/// there with `…`.
pub fn quoted_id(id: &str) -> String {
    const MAX_UNITS: usize = 160;
    let mut out = String::with_capacity(id.len().min(4 * MAX_UNITS));
    let mut space = false;
    for c in id.chars() {
        if crate::fs::is_js_whitespace(c) {
            space = true;
        } else if !is_control_or_format(c) {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(c);
        }
    }
    if out.encode_utf16().count() <= MAX_UNITS {
        return out;
    }
    let mut cut = String::new();
    let mut units = 0;
    for c in out.chars() {
        units += c.len_utf16();
        if units > MAX_UNITS {
            break;
        }
        cut.push(c);
    }
    cut + "…"
}

/// Unicode's control (Cc) and format (Cf) characters.
fn is_control_or_format(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{ad}'
                | '\u{600}'..='\u{605}'
                | '\u{61c}'
                | '\u{6dd}'
                | '\u{70f}'
                | '\u{890}'..='\u{891}'
                | '\u{8e2}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206f}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{110bd}'
                | '\u{110cd}'
                | '\u{13430}'..='\u{1343f}'
                | '\u{1bca0}'..='\u{1bca3}'
                | '\u{1d173}'..='\u{1d17a}'
                | '\u{e0001}'
                | '\u{e0020}'..='\u{e007f}'
        )
}

/// The path of background process `id`'s output file, as the host recorded
/// it when it started the process (only built-ins, which share the session's
/// namespace, can read the record).
pub fn output_file(ctx: &Context, id: &str) -> Option<String> {
    ctx.session().get(&format!("toolhost:background-output:{id}"))
}

/// Session keys of background tasks start with this.
const KEY_PREFIX: &str = "background/";

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

/// What of a task the session keeps under `background/<id>` (records
/// written by earlier versions carry more fields, which are ignored).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Meta {
    command: String,
    ended: Option<Ended>,
    stopped: bool,
}

/// A background command as the session remembers it.
#[derive(Clone, Debug, PartialEq)]
pub struct BackgroundTask {
    pub id: String,
    /// The command line Bash started (empty when no record was kept).
    pub command: String,
    /// How the command ended, once the host said so.
    pub ended: Option<Ended>,
    /// TaskStop stopped it.
    pub stopped: bool,
}

impl BackgroundTask {
    /// A task that runs.
    pub fn new(id: &str, command: &str) -> Self {
        BackgroundTask { id: id.to_string(), command: command.to_string(), ended: None, stopped: false }
    }

    /// Records a command Bash just started in the background as `id`.
    pub fn started(ctx: &Context, id: &str, command: &str) {
        BackgroundTask::new(id, command).save(ctx);
    }

    /// The task `id` as the host knows it now (its state), saved when that
    /// changed. `UnknownId` when the host knows no such background process
    /// in this session. The output the host handed out with the state is
    /// not kept: it is all in the output file.
    pub fn refresh(ctx: &Context, id: &str) -> Result<BackgroundTask, ProcessError> {
        let out = read_background(id)?;
        let mut task = BackgroundTask::load(ctx, id).unwrap_or_else(|| BackgroundTask::new(id, ""));
        if task.absorb(&out) {
            task.save(ctx);
        }
        Ok(task)
    }

    /// Marks the task stopped by TaskStop.
    pub fn mark_stopped(&mut self, ctx: &Context) {
        self.stopped = true;
        self.save(ctx);
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

    /// Takes the state in `out`; whether it changed (the command ended).
    pub fn absorb(&mut self, out: &BackgroundOutput) -> bool {
        match out.status {
            Some(status) if self.ended.is_none() => {
                self.ended = Some(status.into());
                true
            }
            _ => false,
        }
    }

    fn key(id: &str) -> String {
        format!("{KEY_PREFIX}{id}")
    }

    fn load(ctx: &Context, id: &str) -> Option<BackgroundTask> {
        let meta: Meta = ctx.session().get_json(&Self::key(id))?;
        Some(BackgroundTask { id: id.to_string(), command: meta.command, ended: meta.ended, stopped: meta.stopped })
    }

    /// Saves the record (a full session is logged, not an error: the task
    /// still runs and the host still knows it).
    fn save(&self, ctx: &Context) {
        let meta = Meta { command: self.command.clone(), ended: self.ended, stopped: self.stopped };
        if let Err(e) = ctx.session().set_json(&Self::key(&self.id), &meta) {
            ctx.log(LogLevel::Warn, &format!("background task {}: {}", self.id, e.message));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(status: ExitStatus) -> BackgroundOutput {
        BackgroundOutput { stdout: b"ignored".to_vec(), stderr: vec![], dropped: 0, status: Some(status) }
    }

    #[test]
    fn unknown_ids_are_quoted_clean() {
        assert_eq!(no_task("  b1\u{200b}2\u{1b}[31m \t\n x ", ""), "No task found with ID: b12[31m x");
        let long = format!("{}😀tail", "a".repeat(159));
        assert_eq!(quoted_id(&long), format!("{}…", "a".repeat(159)), "a pair cut in two is dropped");
        assert_eq!(quoted_id(&"b".repeat(160)), "b".repeat(160));
    }

    #[test]
    fn the_state_is_taken_once() {
        let mut t = BackgroundTask::new("b1", "make");
        let running = BackgroundOutput { stdout: b"x".to_vec(), stderr: vec![], dropped: 0, status: None };
        assert!(!t.absorb(&running), "output alone changes nothing");
        assert!(t.is_running());
        assert!(t.absorb(&ended(ExitStatus::Exited(0))));
        assert!(!t.absorb(&ended(ExitStatus::Exited(1))), "an ended task stays as it ended");
        assert_eq!(t.status(), "completed");
    }

    #[test]
    fn statuses_as_claude_code_reports_them() {
        let mut t = BackgroundTask::new("b1", "");
        assert_eq!(t.status(), "running");
        t.ended = Some(Ended::Exited(2));
        assert_eq!(t.status(), "failed");
        t.ended = Some(Ended::Signaled(9));
        assert_eq!(t.status(), "failed");
        t.stopped = true;
        assert_eq!((t.status(), t.is_running()), ("killed", false));
    }

    #[test]
    fn records_of_earlier_versions_still_read() {
        let old = r#"{"command":"make","total":3,"tail_complete":true,"ended":{"Exited":0},"stopped":false,"carry":[[],[]],"tail_values":1}"#;
        let meta: Meta = serde_json::from_str(old).unwrap();
        assert_eq!(meta, Meta { command: "make".into(), ended: Some(Ended::Exited(0)), stopped: false });
    }
}
