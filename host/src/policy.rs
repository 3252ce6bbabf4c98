//! A host's permission policy: the compiled rules (which "allow always" can
//! extend while the host runs), the hooks and the audit log.

use crate::hooks::Hooks;
use crate::permissions::{Decision, Source};
use crate::rules::{Behavior, Places, Rule, RuleEntry, RuleSet};
use crate::settings::{self, Settings};
use serde_json::{Map, Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

/// Rules, hooks and the audit log, built once per host.
pub struct Policy {
    rules: RwLock<Arc<RuleSet>>,
    pub hooks: Hooks,
    audit: Option<Audit>,
    /// Where "allow always" writes.
    local_file: Option<PathBuf>,
    /// The trust store, and whether the local file is trusted.
    trust: Option<(PathBuf, bool)>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            rules: RwLock::new(Arc::new(RuleSet::default())),
            hooks: Hooks::default(),
            audit: None,
            local_file: None,
            trust: None,
        }
    }
}

impl Policy {
    /// Compiles the rules and hooks of `settings` and opens the audit log.
    pub fn new(settings: &Settings, places: Places) -> Result<Policy, String> {
        let rules = RuleSet::compile(settings.rules.clone(), places)?;
        for warning in rules.warnings() {
            tracing::warn!("{warning}");
        }
        let hooks = Hooks::compile(&settings.hooks)?;
        let audit = match &settings.audit_log {
            Some(path) => Some(Audit::open(path).map_err(|e| format!("audit log {}: {e}", path.display()))?),
            None => None,
        };
        Ok(Policy {
            rules: RwLock::new(Arc::new(rules)),
            hooks,
            audit,
            local_file: settings.local_file.clone(),
            trust: settings.trust.clone(),
        })
    }

    /// The rules as they are now.
    pub fn rules(&self) -> Arc<RuleSet> {
        Arc::clone(&self.rules.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The local settings file "allow always" writes to.
    pub fn local_file(&self) -> Option<&Path> {
        self.local_file.as_deref()
    }

    /// Adds an allow rule for the rest of the host's life and writes it to
    /// the local settings file.
    pub fn allow_always(&self, text: &str) -> Result<(), String> {
        let rule = Rule::parse(text)?;
        let origin: Arc<str> = Arc::from(match &self.local_file {
            Some(f) => format!("local settings {}", f.display()),
            None => "allowed always by the user".to_string(),
        });
        let mut guard = self.rules.write().unwrap_or_else(|e| e.into_inner());
        let mut entries = guard.entries().to_vec();
        entries.push(RuleEntry { rule, behavior: Behavior::Allow, origin, base: None });
        // Compiled before it is written: a rule that does not compile must
        // not make the settings file unusable.
        let compiled = RuleSet::compile(entries, guard.places().clone())?;
        if let Some(file) = &self.local_file {
            settings::add_allow_rule(file, text).map_err(|e| e.to_string())?;
            // The user wrote this rule: a local file they trusted stays trusted.
            if let Some((store, true)) = &self.trust {
                let mut trusted = settings::TrustStore::load(store);
                if let Err(e) = trusted.trust(file).and_then(|()| trusted.save(store)) {
                    tracing::warn!(error = %e, "could not record the local settings as trusted");
                }
            }
        }
        *guard = Arc::new(compiled);
        Ok(())
    }

    /// Writes one decision to the audit log, if there is one.
    pub fn audit(&self, record: &AuditRecord<'_>) {
        if let Some(audit) = &self.audit {
            audit.write(record);
        }
    }
}

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

struct Audit {
    file: Mutex<std::fs::File>,
}

impl Audit {
    fn open(path: &Path) -> std::io::Result<Audit> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Audit { file: Mutex::new(file) })
    }

    fn write(&self, r: &AuditRecord<'_>) {
        let (decision, source, reason) = match r.decision {
            Decision::Allow { source, .. } => ("allow", source, None),
            Decision::Deny { message, source } => ("deny", source, Some(message.as_str())),
            Decision::Ask { message, source, .. } => ("ask", source, Some(message.as_str())),
        };
        let mut line = Map::new();
        line.insert("time".into(), json!(humantime::format_rfc3339_micros(SystemTime::now()).to_string()));
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
        let mut text = Value::Object(line).to_string();
        text.push('\n');
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = file.write_all(text.as_bytes()) {
            tracing::error!(error = %e, "could not write the audit log");
        }
    }
}
