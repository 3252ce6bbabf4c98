//! The audit log: one JSON line per permission decision (`"event": "decision"`)
//! and one per finished call with what it used (`"event": "usage"`).

use super::decision::{Decision, Source};
use serde_json::{Map, Value, json};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// One decision, as the audit log records it.
pub struct AuditRecord<'a> {
    pub session: &'a str,
    pub tool: &'a str,
    pub tool_use_id: &'a str,
    pub mode: &'a str,
    pub decision: &'a Decision,
    /// The user was asked.
    pub asked: bool,
    pub duration: Duration,
}

pub(super) struct Audit {
    file: Mutex<std::fs::File>,
}

impl Audit {
    pub(super) fn open(path: &Path) -> std::io::Result<Audit> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Audit { file: Mutex::new(file) })
    }

    pub(super) fn write(&self, r: &AuditRecord<'_>) {
        let (decision, source, reason) = match r.decision {
            Decision::Allow { source, .. } => ("allow", source, None),
            Decision::Deny { message, source } => ("deny", source, Some(message.as_str())),
            Decision::Ask { message, source, .. } => ("ask", source, Some(message.as_str())),
        };
        let mut line = Map::new();
        line.insert("time".into(), json!(humantime::format_rfc3339_micros(SystemTime::now()).to_string()));
        line.insert("event".into(), json!("decision"));
        line.insert("session".into(), json!(r.session));
        line.insert("tool".into(), json!(r.tool));
        line.insert("tool_use_id".into(), json!(r.tool_use_id));
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
        };
        line.insert("source".into(), json!(kind));
        if let Some((key, value)) = detail {
            line.insert(key.into(), value);
        }
        if let Some(reason) = reason {
            line.insert("reason".into(), json!(reason));
        }
        line.insert("duration_us".into(), json!(r.duration.as_micros() as u64));
        self.append(Value::Object(line));
    }

    /// One line for a finished call: `"event": "usage"` and what it used.
    pub(super) fn write_usage(&self, session: &str, tool: &str, tool_use_id: &str, usage: &crate::pipeline::Usage) {
        self.append(json!({
            "time": humantime::format_rfc3339_micros(SystemTime::now()).to_string(),
            "event": "usage",
            "session": session,
            "tool": tool,
            "tool_use_id": tool_use_id,
            "usage": usage.to_json(),
        }));
    }

    fn append(&self, line: Value) {
        let mut text = line.to_string();
        text.push('\n');
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = file.write_all(text.as_bytes()) {
            tracing::error!(error = %e, "could not write the audit log");
        }
    }
}
