//! The audit log: one JSON line per permission decision (`"event": "decision"`)
//! and one per finished call with what it used (`"event": "usage"`).
//!
//! A line is written whole or not at all: it goes out in one `write`, and a
//! write that fails part way (a full disk) is cut back off the file, so a
//! reader never meets half a line glued to the next. A decision whose line
//! cannot be written is reported to the caller, which refuses the call
//! rather than run it unrecorded.

use super::decision::{Decision, Source};
use serde_json::{Map, Value, json};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// One decision, as the audit log records it.
pub(crate) struct AuditRecord<'a> {
    pub session: &'a str,
    /// Who asked for the call, when a front knows (an HTTP credential's name).
    pub identity: Option<&'a str>,
    /// The call that made this one (a Script call's id), if one did.
    pub parent: Option<&'a str>,
    pub tool: &'a str,
    pub tool_use_id: &'a str,
    pub mode: &'a str,
    pub decision: &'a Decision,
    /// The user was asked.
    pub asked: bool,
    pub duration: Duration,
}

pub(super) struct Audit {
    path: std::path::PathBuf,
    file: Mutex<Appender>,
}

struct Appender {
    file: std::fs::File,
    /// A failed write may have left part of a line that could not be cut
    /// back: the next line starts on a line of its own.
    ragged: bool,
}

impl Audit {
    pub(super) fn open(path: &Path) -> std::io::Result<Audit> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Audit { path: path.to_path_buf(), file: Mutex::new(Appender { file, ragged: false }) })
    }

    /// Writes a decision's line; `Err` says why it could not be.
    pub(super) fn write(&self, r: &AuditRecord<'_>) -> Result<(), String> {
        let (decision, source, reason) = match r.decision {
            Decision::Allow { source, .. } => ("allow", source, None),
            Decision::Deny { message, source } => ("deny", source, Some(message.as_str())),
            Decision::Ask { message, source, .. } => ("ask", source, Some(message.as_str())),
        };
        let mut line = Map::new();
        line.insert("time".into(), json!(humantime::format_rfc3339_micros(SystemTime::now()).to_string()));
        line.insert("event".into(), json!("decision"));
        line.insert("session".into(), json!(r.session));
        if let Some(identity) = r.identity {
            line.insert("identity".into(), json!(identity));
        }
        line.insert("tool".into(), json!(r.tool));
        line.insert("tool_use_id".into(), json!(r.tool_use_id));
        if let Some(parent) = r.parent {
            line.insert("parent_tool_use_id".into(), json!(parent));
        }
        line.insert("decision".into(), json!(decision));
        line.insert("asked".into(), json!(r.asked));
        line.insert("mode".into(), json!(r.mode));
        let (kind, detail): (&str, Option<(&str, Value)>) = match source {
            Source::Rule { behavior, rule, origin } => {
                line.insert("origin".into(), json!(origin.as_ref()));
                ("rule", Some(("rule", json!(format!("{}:{rule}", behavior.as_str())))))
            }
            Source::Hook(command) => ("hook", Some(("hook", json!(command)))),
            Source::Tool => ("tool", None),
            Source::Safety => ("safety", None),
            Source::Mode(m) => ("mode", Some(("decided_by_mode", json!(m.as_str())))),
            Source::User => ("user", None),
            Source::Quota(kind) => ("quota", Some(("quota", json!(kind.setting())))),
        };
        line.insert("source".into(), json!(kind));
        if let Some((key, value)) = detail {
            line.insert(key.into(), value);
        }
        if let Some(reason) = reason {
            line.insert("reason".into(), json!(reason));
        }
        line.insert("duration_us".into(), json!(r.duration.as_micros() as u64));
        self.append(Value::Object(line))
    }

    /// One line for a finished call: `"event": "usage"` and what it used.
    pub(super) fn write_usage(
        &self,
        session: &str,
        tool: &str,
        tool_use_id: &str,
        usage: &crate::sandbox::Usage,
    ) -> Result<(), String> {
        self.append(json!({
            "time": humantime::format_rfc3339_micros(SystemTime::now()).to_string(),
            "event": "usage",
            "session": session,
            "tool": tool,
            "tool_use_id": tool_use_id,
            "usage": usage.to_json(),
        }))
    }

    fn append(&self, line: Value) -> Result<(), String> {
        let mut out = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let mut text = String::from(if out.ragged { "\n" } else { "" });
        text.push_str(&line.to_string());
        text.push('\n');
        let before = out.file.metadata().map(|m| m.len());
        let Err(e) = out.file.write_all(text.as_bytes()) else {
            out.ragged = false;
            return Ok(());
        };
        // Cut the part that went out back off, so no half line stays.
        let cut = before.as_ref().ok().is_some_and(|len| out.file.set_len(*len).is_ok());
        out.ragged = !cut;
        let why = format!("could not write the audit log {}: {e}", self.path.display());
        tracing::error!("{why}");
        Err(why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(decision: &Decision) -> AuditRecord<'_> {
        AuditRecord {
            session: "s",
            identity: None,
            parent: None,
            tool: "Read",
            tool_use_id: "t",
            mode: "default",
            decision,
            asked: false,
            duration: Duration::ZERO,
        }
    }

    #[test]
    fn a_line_that_cannot_be_written_is_reported() {
        let allow = Decision::Allow { input: None, source: Source::Tool };
        let full = Audit::open(Path::new("/dev/full")).expect("/dev/full opens");
        let why = full.write(&record(&allow)).unwrap_err();
        assert!(why.contains("/dev/full") && why.contains("No space left"), "{why}");

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = Audit::open(&path).unwrap();
        log.write(&record(&allow)).unwrap();
        log.write(&record(&allow)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        for line in text.lines() {
            serde_json::from_str::<Value>(line).expect("a whole JSON line");
        }
    }
}
