//! Step 5 of a call: the permission decision (rules, hooks, the tool's own
//! check, the mode; an ask goes to the approver), its audit line, and the
//! grants a tool may be given at runtime when it asks for more.

use super::result::ToolResult;
use super::run::{Run, wasm};
use super::trace::{Verdict, record_decision};
use crate::contract::bindings::PermissionDecision;
use crate::grants::{Allowance, DirRequest, Grants};
use crate::policy::hooks::Outcome;
use crate::policy::rules::Subject;
use crate::policy::{
    self, Answer, AskRequest, AuditRecord, Decision, Facts, PermissionMode, Policy, Source, ToolCheck,
};
use crate::process::Approval;
use crate::registry::LoadedTool;
use crate::shell;
use std::sync::Arc;
use std::time::Instant;

impl Run<'_> {
    /// What the tool requested and lacks (nothing once the user granted it
    /// while the host runs).
    pub(super) fn missing(&self) -> &[String] {
        match self.pipeline.granted_since_start(self.name()) {
            Some(_) => &[],
            None => &self.tool.missing,
        }
    }

    /// A capability fault becomes a question: the tool failed and lacks
    /// directories, hosts or variables it requested, so the user is asked to
    /// grant them (once, or always: written under `toolGrants` in the local
    /// settings) and the call runs again, in a fresh instance with the
    /// grant. `None` when there is nobody to ask, nothing to grant, or the
    /// user said no.
    pub(super) fn grant_and_retry(&mut self, failure: &str) -> wasmtime::Result<Option<ToolResult>> {
        let Some(approver) = self.approver.clone() else { return Ok(None) };
        if self.instance.is_none() {
            return Ok(None);
        }
        // dontAsk and plan never ask; neither mode grants anything either.
        let asks = !matches!(self.pipeline.mode, PermissionMode::DontAsk | PermissionMode::Plan);
        if !asks || self.pipeline.granted_since_start(self.name()).is_some() {
            return Ok(None);
        }
        let name = self.tool.spec.name.clone();
        let current = &self.tool.grants;
        let (wanted, _) = crate::grants::intersect(&self.tool.requests, &self.tool.requests, &self.pipeline.dirs.cwd);
        let more = Allowance {
            workspace: wanted.files.workspace().filter(|_| wanted.files != current.files),
            process: wanted.process && !current.process,
            directories: (wanted.dirs.iter().filter(|d| !current.dirs.contains(d)))
                .map(|(path, access)| DirRequest { path: path.display().to_string(), access: *access })
                .collect(),
            hosts: wanted.hosts.iter().filter(|h| !current.hosts.contains(h)).cloned().collect(),
            env: wanted.env.iter().filter(|v| !current.env.contains(v)).cloned().collect(),
            ..Allowance::default()
        };
        if more.is_empty() {
            return Ok(None);
        }
        let failed = failure.lines().next().unwrap_or_default();
        let what = more.describe();
        let request = AskRequest {
            tool: name.clone(),
            tool_use_id: self.id.to_string(),
            input: self.input.clone(),
            message: format!(
                "It failed ({failed}), and it requested what it was not granted: {what}. Grant it and run the call \
                 again?"
            ),
            suggested_rules: vec![format!("toolGrants.{name}: {}", serde_json::to_string(&more).unwrap_or_default())],
        };
        let grants = Grants {
            files: wanted.files,
            process: wanted.process,
            dirs: wanted.dirs,
            hosts: wanted.hosts,
            env: wanted.env,
            ..current.clone()
        };
        match approver.ask(&request) {
            Answer::Deny(_) | Answer::Later(_) => return Ok(None),
            Answer::AllowOnce => tracing::info!(tool = %name, grant = %what, "granted once by the user"),
            Answer::AllowAlways(_) => {
                tracing::info!(tool = %name, grant = %what, "granted always by the user");
                if let Err(e) = self.pipeline.policy.grant_always(&name, &more) {
                    tracing::warn!(tool = %name, error = %e, "could not keep the grant");
                }
                let mut granted = self.pipeline.granted.write().unwrap_or_else(|e| e.into_inner());
                granted.insert(name.clone(), Arc::new(grants.clone()));
            }
        }
        // Again, from the start of the call, in a fresh instance.
        let instance = wasm(&mut self.instance)?;
        instance.captured.log(&name, self.id, &instance.store.data().call.secrets);
        let scope = instance.store.data().call.again();
        let limits = grants.limits(self.pipeline.sandbox.limits());
        let pre = self.tool.pre(&self.pipeline.sandbox)?;
        self.instance = Some(self.pipeline.sandbox.instantiate(pre, &grants, scope, limits)?);
        self.limits = limits;
        // Made for other grants than the ones the call started with.
        self.warm = None;
        let output = self.call_guest()?;
        Ok(Some(match output {
            Ok(output) => self.output(output),
            Err(e) => self.error(e.message),
        }))
    }

    /// Step 5: decides (asking when needed), audits, and sets what the call
    /// may start; a result when the call is refused.
    pub(super) fn permission(
        &mut self,
        pre: Option<&Outcome>,
        decision_started: Instant,
    ) -> wasmtime::Result<Option<ToolResult>> {
        let read_only = match self.tool.spec.hints.read_only {
            // An MCP server's read-only hint is its own claim: the host
            // cannot hold the server to it, so it lets no call run unasked.
            _ if self.tool.remote.is_some() => false,
            Some(declared) => declared,
            None => {
                let instance = wasm(&mut self.instance)?;
                instance.guest.is_read_only(&mut instance.store, &self.input_text)?
            }
        };
        let check = self.check_in(self.pipeline.mode)?;
        let tool: &LoadedTool = self.tool;
        let rules = Arc::clone(&self.rules);
        let input = self.input.clone();
        let roles = &tool.spec.inputs;
        let command = roles.command_in(&input);
        let parsed = command.map(shell::parse);
        let subject = Subject::of(&tool.spec.name, roles, &input, parsed.as_ref());
        // A command that reads outside the working directories is not one the
        // mode runs unasked.
        let outside = parsed.as_ref().and_then(|p| rules.path_outside(p));
        if let Some(word) = outside {
            tracing::debug!(word, "the command names a path outside the working directories");
        }
        let facts = Facts {
            tool: &tool.spec.name,
            mode: self.pipeline.mode,
            read_only: read_only && outside.is_none(),
            check,
            rules: rules.check(&subject),
            hook: pre.and_then(|p| p.decision.as_ref()),
            sensitive: policy::sensitive_write(&subject, rules.places()),
        };
        let mut decision = policy::decide(&facts);
        let mut asked = false;
        if let Decision::Ask { message, suggested_rules, .. } = &decision {
            let suggestions = match policy::rules::suggest(&subject, rules.places()) {
                s if s.is_empty() => suggested_rules.clone(),
                s => s,
            };
            decision = match self.approver.clone() {
                Some(approver) => {
                    asked = true;
                    // "Allow always" only with a rule that would allow the call.
                    let offered =
                        if self.rules_would_allow(&facts, &subject, &suggestions) { suggestions } else { Vec::new() };
                    let request = AskRequest {
                        tool: tool.spec.name.clone(),
                        tool_use_id: self.id.to_string(),
                        input: input.clone(),
                        message: message.clone(),
                        suggested_rules: offered,
                    };
                    match approver.ask(&request) {
                        Answer::AllowOnce => Decision::Allow { input: None, source: Source::User },
                        Answer::AllowAlways(rule) => {
                            if let Err(e) = self.pipeline.policy.allow_always(&rule) {
                                tracing::warn!(rule, error = %e, "could not keep the rule");
                            }
                            Decision::Allow { input: None, source: Source::User }
                        }
                        Answer::Deny(reason) => Decision::Deny { message: reason, source: Source::User },
                        Answer::Later(message) => {
                            Decision::Ask { message, suggested_rules: Vec::new(), source: Source::User }
                        }
                    }
                }
                None => {
                    let hint = self.how_to_allow(&facts, &subject, &suggestions)?;
                    Decision::Deny {
                        message: format!(
                            "{message} toolhost could not ask for approval: no interactive prompt is available.{hint}"
                        ),
                        source: Source::Mode(self.pipeline.mode),
                    }
                }
            };
        } else if let Decision::Deny { message, source: source @ Source::Mode(_) } = &decision {
            // Plan and dontAsk refuse what would ask: say what would allow it.
            let suggestions = policy::rules::suggest(&subject, rules.places());
            let hint = self.how_to_allow(&facts, &subject, &suggestions)?;
            decision = Decision::Deny { message: format!("{message}{hint}"), source: source.clone() };
        }
        if let Err(why) = self.audit(&decision, asked, decision_started)
            && matches!(decision, Decision::Allow { .. })
        {
            // No call runs unrecorded.
            record_decision(self.span, Verdict::Deny, "the audit log could not be written");
            return Ok(Some(self.error(format!(
                "{} was not run: its permission decision could not be recorded ({why}). Calls are refused until \
                 the audit log can be written.",
                self.name()
            ))));
        }
        match decision {
            Decision::Allow { input: rewritten, source } => {
                record_decision(self.span, Verdict::Allow, &source);
                // What the call may start: a call allowed only because it reads
                // can start only what the host classifies as read-only, one
                // allowed by a rule what the rules allow, one the user approved
                // that command. Deny rules hold whatever allowed the call.
                let approval = match source {
                    Source::Mode(mode) if read_only && mode != PermissionMode::BypassPermissions => Approval::ReadOnly,
                    Source::Rule { .. } => Approval::Rules,
                    Source::User | Source::Hook(_) | Source::Safety => match command {
                        Some(command) => Approval::Command(command.to_string()),
                        None => Approval::Any,
                    },
                    Source::Mode(_) | Source::Tool | Source::Quota(_) => Approval::Any,
                };
                if let Some(instance) = self.instance.as_mut() {
                    let call = &mut instance.store.data_mut().call;
                    call.rules = Some(Policy::for_call(Arc::clone(&rules), &tool.spec.name, roles));
                    call.approval = approval;
                }
                if let Some(updated) = rewritten {
                    if let Err(message) = self.tool.input_schema().check(self.name(), &updated) {
                        return Ok(Some(self.error(format!("<tool_use_error>{message}</tool_use_error>"))));
                    }
                    self.input_text = updated.to_string();
                    self.input = updated;
                }
                Ok(None)
            }
            Decision::Deny { message, source } => {
                record_decision(self.span, Verdict::Deny, &source);
                Ok(Some(self.error(format!("Permission to use {} was denied. {message}", self.name()))))
            }
            // The user answers later, in another call (Answer::Later).
            Decision::Ask { message, .. } => {
                record_decision(self.span, Verdict::Ask, "answered later");
                Ok(Some(self.error(message)))
            }
        }
    }

    pub(super) fn audit(&self, decision: &Decision, asked: bool, started: Instant) -> Result<(), String> {
        use crate::metrics::Decided;
        self.pipeline.metrics.decided(match decision {
            Decision::Allow { .. } => Decided::Allow,
            Decision::Deny { .. } => Decided::Deny,
            Decision::Ask { .. } => Decided::Ask,
        });
        self.pipeline.policy.audit(&AuditRecord {
            session: self.session.id(),
            identity: self.identity.as_deref(),
            parent: self.parent.as_deref(),
            tool: self.name(),
            tool_use_id: self.id,
            mode: self.pipeline.mode.as_str(),
            decision,
            asked,
            duration: started.elapsed(),
        })
    }

    /// Whether adding `suggestions` to the allow rules would allow the call
    /// in the current mode (so "allow always" and hints offer only rules
    /// that work).
    pub(super) fn rules_would_allow(&self, facts: &Facts<'_>, subject: &Subject<'_>, suggestions: &[String]) -> bool {
        if suggestions.is_empty() {
            return false;
        }
        let Some(set) = self.pipeline.policy.allow_rules(suggestions) else { return false };
        let Some(allow) = set.check(subject).allow else { return false };
        let with_rule =
            Facts { rules: policy::rules::Verdicts { allow: Some(allow), ..facts.rules.clone() }, ..facts.clone() };
        matches!(policy::decide(&with_rule), Decision::Allow { .. })
    }

    /// " To allow it, …": the narrowest rule that would allow the call, or
    /// the least permissive mode that would; empty when neither would.
    pub(super) fn how_to_allow(
        &mut self,
        facts: &Facts<'_>,
        subject: &Subject<'_>,
        suggestions: &[String],
    ) -> wasmtime::Result<String> {
        let mut hints = Vec::new();
        if self.rules_would_allow(facts, subject, suggestions) {
            let list = suggestions.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ");
            let args = suggestions.iter().map(|r| format!("--allow '{r}'")).collect::<Vec<_>>().join(" ");
            let file = self
                .pipeline
                .policy
                .local_file()
                .map_or_else(|| "a settings file".to_string(), |f| f.display().to_string());
            hints.push(format!("add {list} to permissions.allow in {file} (or pass {args})"));
        }
        for mode in [PermissionMode::AcceptEdits, PermissionMode::BypassPermissions] {
            if mode == facts.mode {
                continue;
            }
            let f = Facts { mode, check: self.check_in(mode)?, ..facts.clone() };
            if matches!(policy::decide(&f), Decision::Allow { .. }) {
                hints.push(format!("run toolhost with `--mode {mode}`"));
                break;
            }
        }
        Ok(if hints.is_empty() { String::new() } else { format!(" To allow it, {}.", hints.join("; or ")) })
    }
}

/// The tool's decision as the host will weigh it: an `allow` from an untrusted
/// tool counts for nothing (it cannot grant itself permission), and an updated
/// input that is not JSON is refused.
pub(crate) fn tool_check(decision: PermissionDecision, trusted: bool) -> ToolCheck {
    match decision {
        PermissionDecision::Allow(_) if !trusted => ToolCheck::Passthrough,
        PermissionDecision::Allow(None) => ToolCheck::Allow(None),
        PermissionDecision::Allow(Some(text)) => match serde_json::from_str(&text) {
            Ok(v) => ToolCheck::Allow(Some(v)),
            Err(e) => ToolCheck::Deny(format!("the tool rewrote the input into invalid JSON ({e})")),
        },
        PermissionDecision::Deny(reason) => ToolCheck::Deny(reason),
        PermissionDecision::Ask(req) => ToolCheck::Ask { message: req.message, suggested_rules: req.suggested_rules },
        PermissionDecision::Passthrough => ToolCheck::Passthrough,
    }
}
