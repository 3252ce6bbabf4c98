//! The permission policy: rules (`Tool`, `Tool(content)`), settings files
//! in layers, hooks, the decision order, asking the user, and the audit log.
//! [`Policy`] holds a host's compiled rules (which "allow always" can extend
//! while the host runs), its hooks and its audit log.

mod ask;
mod audit;
mod decision;
pub(crate) mod hooks;
pub(crate) mod rules;

pub use ask::{Answer, Approver, AskRequest};
pub(crate) use audit::AuditRecord;
pub use decision::{Decision, Facts, PermissionMode, ToolCheck, decide};
pub(crate) use decision::{Source, sensitive_write};

use crate::config::{self as settings, Settings, SettingsError};
use crate::imports::CallRules;
use crate::process::{CommandRules, CommandVerdict};
use crate::registry::InputRoles;
use crate::shell::Parsed;
use audit::Audit;
use hooks::{HookConfigError, Hooks};
use rules::{Behavior, Catalog, Places, Rule, RuleEntry, RuleError, RuleSet, Subject};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// Why the policy of a host could not be built, or a rule not kept.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A permission rule cannot be used.
    #[error(transparent)]
    Rules(#[from] RuleError),
    /// A hooks configuration cannot be used.
    #[error(transparent)]
    Hooks(#[from] HookConfigError),
    /// The audit log cannot be opened for appending.
    #[error("audit log {path}: {source}")]
    AuditLog {
        /// The log file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A settings file cannot be read, or says something invalid.
    #[error(transparent)]
    Settings(#[from] SettingsError),
}

/// Rules, hooks and the audit log, built once per host.
pub(crate) struct Policy {
    rules: RwLock<Arc<RuleSet>>,
    /// What the loaded tools' rule contents mean.
    catalog: RwLock<Arc<Catalog>>,
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
            catalog: RwLock::default(),
            hooks: Hooks::default(),
            audit: None,
            local_file: None,
            trust: None,
        }
    }
}

impl Policy {
    /// Compiles the rules of `settings` for the tools of `catalog`, and its
    /// hooks, and opens the audit log.
    pub(crate) fn new(settings: &Settings, places: Places, catalog: Catalog) -> Result<Policy, PolicyError> {
        let rules = RuleSet::compile(settings.rules.clone(), places, &catalog)?;
        for warning in rules.warnings() {
            tracing::warn!("{warning}");
        }
        let hooks = Hooks::compile(&settings.hooks)?;
        let audit = match &settings.audit_log {
            Some(path) => {
                Some(Audit::open(path).map_err(|source| PolicyError::AuditLog { path: path.clone(), source })?)
            }
            None => None,
        };
        Ok(Policy {
            rules: RwLock::new(Arc::new(rules)),
            catalog: RwLock::new(Arc::new(catalog)),
            hooks,
            audit,
            local_file: settings.local_file.clone(),
            trust: settings.trust.clone(),
        })
    }

    /// The rules as they are now.
    pub(crate) fn rules(&self) -> Arc<RuleSet> {
        Arc::clone(&self.rules.read().unwrap_or_else(|e| e.into_inner()))
    }

    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The tools changed (a reload): the rules are compiled again for what
    /// their inputs are now. A rule that does not compile for a changed tool
    /// (a command rule for a tool that no longer takes a command) leaves the
    /// rules as they were, with a warning.
    pub(crate) fn set_catalog(&self, catalog: Catalog) {
        let mut guard = self.rules.write().unwrap_or_else(|e| e.into_inner());
        match RuleSet::compile(guard.entries().to_vec(), guard.places().clone(), &catalog) {
            Ok(compiled) => {
                *guard = Arc::new(compiled);
                *self.catalog.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(catalog);
            }
            Err(e) => tracing::warn!(error = %e, "the rules do not fit the reloaded tools; they stay as they were"),
        }
    }

    /// The local settings file "allow always" writes to.
    pub(crate) fn local_file(&self) -> Option<&Path> {
        self.local_file.as_deref()
    }

    /// Adds an allow rule for the rest of the host's life and writes it to
    /// the local settings file.
    pub(crate) fn allow_always(&self, text: &str) -> Result<(), PolicyError> {
        let rule = Rule::parse_in(text, Behavior::Allow)?;
        let origin: Arc<str> = Arc::from(match &self.local_file {
            Some(f) => format!("local settings {}", f.display()),
            None => "allowed always by the user".to_string(),
        });
        let mut guard = self.rules.write().unwrap_or_else(|e| e.into_inner());
        let mut entries = guard.entries().to_vec();
        entries.push(RuleEntry { rule, behavior: Behavior::Allow, origin, base: None });
        // Compiled before it is written: a rule that does not compile must
        // not make the settings file unusable.
        let compiled = RuleSet::compile(entries, guard.places().clone(), &self.catalog())?;
        if let Some(file) = &self.local_file {
            settings::add_allow_rule(file, text)?;
            self.keep_trusted(file);
        }
        *guard = Arc::new(compiled);
        Ok(())
    }

    /// Writes `grant` under `toolGrants.TOOL` in the local settings file, for
    /// the next starts (the running host keeps it itself). Without a local
    /// file, nothing is written.
    pub(crate) fn grant_always(&self, tool: &str, grant: &crate::grants::Allowance) -> Result<(), PolicyError> {
        if let Some(file) = &self.local_file {
            crate::grants::persist::add_tool_grant(file, tool, grant)?;
            self.keep_trusted(file);
        }
        Ok(())
    }

    /// The user changed the local file: if they trusted it, it stays trusted.
    fn keep_trusted(&self, file: &Path) {
        if let Some((store, true)) = &self.trust {
            let mut trusted = settings::TrustStore::load(store);
            if let Err(e) = trusted.trust(file).and_then(|()| trusted.save(store)) {
                tracing::warn!(error = %e, "could not record the local settings as trusted");
            }
        }
    }

    /// `texts` as allow rules alone, compiled like the host's (to see what
    /// a suggested rule would allow); `None` if one does not compile.
    pub(crate) fn allow_rules(&self, texts: &[String]) -> Option<RuleSet> {
        let entries = texts
            .iter()
            .map(|text| {
                Rule::parse(text).map(|rule| RuleEntry {
                    rule,
                    behavior: Behavior::Allow,
                    origin: Arc::from("suggested"),
                    base: None,
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .ok()?;
        RuleSet::compile(entries, self.rules().places().clone(), &self.catalog()).ok()
    }

    /// The rules `rules` as they apply to calls of `tool`, for the host
    /// imports of its calls.
    pub(crate) fn for_call(rules: Arc<RuleSet>, tool: &str, roles: &InputRoles) -> Arc<dyn CallRules> {
        Arc::new(ToolRules { rules, tool: tool.to_string(), roles: roles.clone() })
    }

    /// Writes one decision to the audit log, if there is one; `Err` says
    /// why it could not be (the caller refuses a call it cannot record).
    pub(crate) fn audit(&self, record: &AuditRecord<'_>) -> Result<(), String> {
        match &self.audit {
            Some(audit) => audit.write(record),
            None => Ok(()),
        }
    }

    /// Records what a finished call used, after its decision's line.
    pub(crate) fn audit_usage(&self, session: &str, tool: &str, tool_use_id: &str, usage: &crate::sandbox::Usage) {
        // A usage line that cannot be written is reported in the log; the
        // call has ended, there is nothing left to refuse.
        if let Some(audit) = &self.audit {
            let _ = audit.write_usage(session, tool, tool_use_id, usage);
        }
    }
}

/// One tool's view of the rules, for the host imports of its calls.
struct ToolRules {
    rules: Arc<RuleSet>,
    tool: String,
    roles: InputRoles,
}

impl CommandRules for ToolRules {
    fn is_empty(&self) -> bool {
        self.rules.entries().is_empty()
    }

    fn check_command(&self, text: &str, parsed: &Parsed) -> CommandVerdict {
        let v = self.rules.check(&Subject::command(&self.tool, text, parsed));
        CommandVerdict { deny: v.deny.map(ToString::to_string), unclear: v.unclear, allowed: v.allow.is_some() }
    }
}

impl CallRules for ToolRules {
    fn hidden_paths(&self) -> Vec<String> {
        self.rules.hidden_paths(&self.tool, &self.roles)
    }

    fn hidden_from_searches(&self) -> Vec<String> {
        self.rules.hidden_from_searches(&self.tool)
    }
}

/// What each loaded tool's rule contents mean (by name and alias).
pub(crate) fn catalog(registry: &crate::registry::Registry) -> rules::Catalog {
    let mut catalog = rules::Catalog::default();
    for tool in registry.all() {
        catalog.add(&tool.spec.name, &tool.spec.aliases, rules::ContentKind::of(&tool.spec.inputs));
    }
    catalog
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsx::Dirs;
    use crate::process::fixtures::shell;
    use crate::process::{Approval, Confinement, Foreground, Permit, ProcessError};

    #[test]
    fn rules_are_checked_again_at_spawn() {
        let (_t, dirs) = crate::process::fixtures::dirs();
        let list = [
            (Behavior::Allow, "Bash(touch allowed.txt)"),
            (Behavior::Allow, "Bash(touch \\(x\\):*)"),
            (Behavior::Deny, "Bash(rm:*)"),
        ];
        let entries = list
            .into_iter()
            .map(|(behavior, text)| RuleEntry {
                rule: Rule::parse(text).unwrap(),
                behavior,
                origin: Arc::from("test"),
                base: None,
            })
            .collect();
        let places = Places { cwd: dirs.cwd.clone(), working: dirs.working.clone(), home: None };
        let bash = InputRoles { command: Some("command".into()), ..InputRoles::default() };
        let catalog = Catalog::from([("Bash".to_string(), rules::ContentKind::of(&bash))]);
        let rules = Arc::new(RuleSet::compile(entries, places, &catalog).unwrap());
        let for_bash = Policy::for_call(Arc::clone(&rules), "Bash", &bash);
        let for_other = Policy::for_call(rules, "Other", &bash);
        fn permit<'a>(rules: &'a Arc<dyn CallRules>, dirs: &'a Dirs, approval: Approval) -> Permit<'a> {
            Permit {
                granted: true,
                approval,
                dirs,
                session_dir: &dirs.cwd,
                network: false,
                confinement: Confinement::BestEffort,
                rules: Some(rules.as_ref() as &dyn CommandRules),
            }
        }
        let start = |cmd: &str, approval| Foreground::spawn(shell(cmd), &permit(&for_bash, &dirs, approval), None);
        let refused = |cmd: &str, approval: Approval| match start(cmd, approval) {
            Err(ProcessError::NotPermitted(m)) => m,
            other => panic!("`{cmd}` was not refused: {:?}", other.map(|_| ())),
        };
        // Deny rules hold whatever approved the call.
        for approval in [Approval::Any, Approval::Rules, Approval::Command("rm x".into()), Approval::ReadOnly] {
            assert!(refused("rm x", approval.clone()).contains("deny rule `Bash(rm:*)`"), "{approval:?}");
            assert!(refused("ls && rm -rf x", approval).contains("forbids"));
        }
        // A call allowed by a rule starts what the rules allow, and what reads.
        assert!(start("touch allowed.txt", Approval::Rules).is_ok());
        assert!(start("ls", Approval::Rules).is_ok());
        assert!(refused("touch other.txt", Approval::Rules).contains("neither"));
        assert!(start("touch '(x)' y", Approval::Rules).is_ok(), "a rule read as text");
        assert!(refused("touch '(y)'", Approval::Rules).contains("neither"));
        // A call the user approved starts that command.
        let approved = Approval::Command("touch mine.txt".into());
        assert!(start("touch mine.txt", approved.clone()).is_ok());
        assert!(refused("touch theirs.txt", approved).contains("neither"));
        // The rules of one tool are not another's.
        assert!(Foreground::spawn(shell("rm -f nothing"), &permit(&for_other, &dirs, Approval::Any), None).is_ok());
    }
}
