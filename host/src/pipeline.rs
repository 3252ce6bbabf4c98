//! One call, start to finish: the pipeline of SPEC §4.
//!
//! 1. find the tool by name or alias;
//! 2. validate the input against its JSON Schema;
//! 3. the tool's `validate-input`;
//! 4. PreToolUse hooks (may rewrite the input, decide, or stop);
//! 5. the permission decision (rules, hooks, the tool's check, the mode; an
//!    ask goes to the approver), written to the audit log;
//! 6. `call` in a fresh sandboxed instance;
//! 7. PostToolUse / PostToolUseFailure hooks;
//! 8. map to a `tool_result`, persisting an oversized one.
//!
//! Every failure is an error result; nothing a tool or its input does reaches
//! the caller as anything else.

use crate::bindings::{CallContext, PermissionDecision, PermissionMode as WitMode};
use crate::hooks::{Event, EventInput, HookDecision};
use crate::host::Host;
use crate::permissions::{self, Answer, AskRequest, Decision, Facts, PermissionMode, Source, ToolCheck};
use crate::policy::AuditRecord;
use crate::process::Approval;
use crate::result::{self, Content, ToolResult};
use crate::rules::{self, Call};
use crate::session::Session;
use crate::shell;
use crate::state::{Interrupted, MemoryExceeded, ProgressSink, Scope};
use crate::tool::{Instance, LoadedTool};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;
use tracing::field;

/// A `tool_use` block from the model.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolUse {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// The longest a tool may take to say whether a call is concurrency-safe.
pub const CLASSIFY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// Per-call options.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Receives progress while the call runs.
    pub progress: Option<ProgressSink>,
    /// Set to stop the call; it ends with a "cancelled" error result.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Told, as soon as the tool's instance exists, whether the call is
    /// concurrency-safe (the scheduler starts a call before it knows, when
    /// nothing else runs).
    pub on_concurrency_safe: Option<Arc<dyn Fn(bool) + Send + Sync>>,
    /// Who answers this call's asks, instead of the host's approver (an MCP
    /// session asks its own client).
    pub approver: Option<Arc<dyn crate::permissions::Approver>>,
}

impl Host {
    /// Runs one call through the whole pipeline. Blocks the calling thread
    /// while the tool runs (use a blocking-capable thread in async code).
    pub fn call(&self, session: &Arc<Session>, tool_use: &ToolUse, options: &CallOptions) -> ToolResult {
        let started = Instant::now();
        let span = tracing::info_span!(
            "tool_call",
            tool = %tool_use.name,
            id = %tool_use.id,
            decision = field::Empty,
            is_error = field::Empty,
            duration_us = field::Empty,
        );
        let _entered = span.enter();
        let result = self.run(session, tool_use, options, &span);
        let micros = started.elapsed().as_micros() as u64;
        span.record("is_error", result.is_error);
        span.record("duration_us", micros);
        tracing::debug!(is_error = result.is_error, duration_us = micros, "call finished");
        result
    }

    /// Whether a user interrupt cancels calls of `tool` (its interrupt
    /// behavior is `cancel`); unknown tools: yes.
    pub fn cancels_on_interrupt(&self, tool: &str) -> bool {
        self.inner.registry.resolve(tool).is_none_or(|t| t.spec.cancel_on_interrupt)
    }

    /// Whether a call may run beside others, and whether a user interrupt
    /// cancels it: what the scheduler asks before starting it. A tool that
    /// is unknown, input that fails the schema and a tool that cannot answer
    /// are not concurrency-safe.
    pub fn call_traits(&self, tool_use: &ToolUse) -> crate::scheduler::CallTraits {
        let unsafe_traits = crate::scheduler::CallTraits { concurrency_safe: false, cancel_on_interrupt: true };
        let inner = &*self.inner;
        let Some(tool) = inner.registry.resolve(&tool_use.name).filter(|t| t.spec.enabled) else {
            return unsafe_traits;
        };
        let cancel_on_interrupt = tool.spec.cancel_on_interrupt;
        if tool.input_schema().check(&tool.spec.name, &tool_use.input).is_err() {
            return crate::scheduler::CallTraits { concurrency_safe: false, cancel_on_interrupt };
        }
        let scope = inner.scratch_scope(tool, tool_use.id.clone());
        let _running = inner.runtime.running();
        // Asked before the call starts, on the thread adding it (a reader
        // of the model's stream, an MCP protocol thread): a tool that takes
        // longer is stopped and counted not concurrency-safe.
        let limits = crate::sandbox::CallLimits { timeout: inner.limits.timeout.min(CLASSIFY_TIMEOUT), ..inner.limits };
        let safe = Instance::new(&inner.runtime.engine, tool, scope, limits)
            .and_then(|mut i| {
                let text = tool_use.input.to_string();
                i.plugin.toolhost_tool_tool().call_is_concurrency_safe(&mut i.store, &text)
            })
            .unwrap_or(false);
        crate::scheduler::CallTraits { concurrency_safe: safe, cancel_on_interrupt }
    }

    fn run(
        &self,
        session: &Arc<Session>,
        tool_use: &ToolUse,
        options: &CallOptions,
        span: &tracing::Span,
    ) -> ToolResult {
        let id = tool_use.id.as_str();
        let inner = &*self.inner;
        // 1. Lookup (disabled tools are not in the pool, so not callable).
        let Some(tool) = inner.registry.resolve(&tool_use.name).filter(|t| t.spec.enabled) else {
            return ToolResult::error(
                id,
                format!("<tool_use_error>Error: No such tool available: {}</tool_use_error>", tool_use.name),
            );
        };
        let name = tool.spec.name.as_str();
        // The rules as they are now, for the whole call.
        let rules = inner.policy.rules();
        if let Some(rule) = rules.denies_tool(name) {
            span.record("decision", "deny (not in the pool)");
            return ToolResult::error(
                id,
                format!(
                    "<tool_use_error>Error: No such tool available: {name} (the {rule} removes it)</tool_use_error>"
                ),
            );
        }
        // 2. Schema.
        if let Err(message) = tool.input_schema().check(name, &tool_use.input) {
            return ToolResult::error(id, format!("<tool_use_error>{message}</tool_use_error>"));
        }

        let _slot = inner.gate.enter();
        let _running = inner.runtime.running();
        let results = session.existing_results_dir();
        let dirs = match &results {
            None => Arc::clone(&inner.dirs),
            Some(r) => Arc::new(crate::sandbox::Dirs { read_only: vec![r.clone()], ..(*inner.dirs).clone() }),
        };
        let background = Arc::clone(&inner.background);
        let mut scope =
            Scope::new(Arc::from(name), id.to_string(), Arc::clone(session), tool.namespace(), dirs, background);
        scope.progress = options.progress.clone();
        scope.cancel = options.cancel.clone();
        scope.confinement = inner.confinement;
        let mut instance = match Instance::new(&inner.runtime.engine, tool, scope, inner.limits) {
            Ok(i) => i,
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "could not instantiate");
                return ToolResult::error(
                    id,
                    format!("toolhost could not start {name}: {e}. The host keeps serving; try again."),
                );
            }
        };
        if let Some(report) = &options.on_concurrency_safe {
            let text = tool_use.input.to_string();
            let guest = instance.plugin.toolhost_tool_tool();
            report(guest.call_is_concurrency_safe(&mut instance.store, &text).unwrap_or(false));
        }
        let ctx = CallContext {
            tool_use_id: id.to_string(),
            session_id: session.id().to_string(),
            cwd: inner.dir_strings.cwd.clone(),
            working_dirs: inner.dir_strings.working.clone(),
            read_only_dirs: results.iter().map(|d| d.to_string_lossy().into_owned()).collect(),
            mode: wit_mode(inner.mode),
        };
        let mut state = CallState {
            input: tool_use.input.clone(),
            rules,
            called: false,
            context: Vec::new(),
            stop: None,
            approver: options.approver.clone().or_else(|| self.inner.approver.clone()),
        };
        let outcome = self.steps(session, tool, tool_use, &mut instance, &ctx, span, &mut state);
        instance.captured.log(name, id);
        // An `Err` is a failure inside the guest (trap, timeout, malformed
        // output), as opposed to an error the tool returned.
        let mut result = outcome.unwrap_or_else(|e| fault_result(name, id, &e, &instance));
        drop(instance);
        // 7. PostToolUse / PostToolUseFailure hooks, for calls that ran.
        let event = if result.is_error { Event::PostToolUseFailure } else { Event::PostToolUse };
        if state.called && inner.policy.hooks.any(event, name) {
            let response = result.to_json()["content"].take();
            let error = result.is_error.then(|| result.text());
            let outcome = inner.policy.hooks.run(
                event,
                &EventInput {
                    session_id: session.id(),
                    cwd: &inner.dir_strings.cwd,
                    permission_mode: inner.mode.as_str(),
                    tool_name: name,
                    tool_input: &state.input,
                    tool_use_id: id,
                    tool_response: (!result.is_error).then_some(&response),
                    error: error.as_deref(),
                },
            );
            state.context.extend(outcome.additional_context.into_iter().map(|c| format!("[{event} hook] {c}")));
            state.stop = state.stop.or(outcome.stop);
        }
        for context in state.context {
            result.content.push(Content::Text(context));
        }
        result.stop = state.stop;
        // Errors too: a failed command's output can be as long as a good one's.
        result::persist_if_oversized(&mut result, tool.spec.max_result_size_chars, session);
        result
    }

    /// Steps 3 to 6 and 8 on a live instance.
    #[allow(clippy::too_many_arguments, reason = "one call's pieces, passed down once")]
    fn steps(
        &self,
        session: &Arc<Session>,
        tool: &LoadedTool,
        tool_use: &ToolUse,
        instance: &mut Instance,
        ctx: &CallContext,
        span: &tracing::Span,
        state: &mut CallState,
    ) -> wasmtime::Result<ToolResult> {
        let inner = &*self.inner;
        let (name, id) = (tool.spec.name.as_str(), tool_use.id.as_str());
        let mut input_text = tool_use.input.to_string();
        let guest = instance.plugin.toolhost_tool_tool();
        let store = &mut instance.store;

        // 3. The tool's own validation.
        if let Err(e) = guest.call_validate_input(&mut *store, &input_text, ctx)? {
            return Ok(ToolResult::error(id, format!("<tool_use_error>{}</tool_use_error>", e.message)));
        }

        // 4. PreToolUse hooks.
        let decision_started = Instant::now();
        let hooks = &inner.policy.hooks;
        let pre = hooks.any(Event::PreToolUse, name).then(|| {
            hooks.run(
                Event::PreToolUse,
                &EventInput {
                    session_id: session.id(),
                    cwd: &inner.dir_strings.cwd,
                    permission_mode: inner.mode.as_str(),
                    tool_name: name,
                    tool_input: &tool_use.input,
                    tool_use_id: id,
                    tool_response: None,
                    error: None,
                },
            )
        });
        if let Some(pre) = &pre {
            state.context.extend(pre.additional_context.iter().map(|c| format!("[PreToolUse hook] {c}")));
            if let Some(reason) = &pre.stop {
                state.stop = Some(reason.clone());
                span.record("decision", "stopped (hook)");
                inner.policy.audit(&AuditRecord {
                    session: session.id(),
                    tool: name,
                    tool_use_id: id,
                    mode: inner.mode.as_str(),
                    decision: &Decision::Deny {
                        message: format!("stopped: {reason}"),
                        source: Source::Hook("PreToolUse (continue: false)".into()),
                    },
                    asked: false,
                    duration: decision_started.elapsed(),
                });
                return Ok(ToolResult::error(id, format!("A PreToolUse hook stopped the call: {reason}")));
            }
            let denied = matches!(pre.decision, Some(HookDecision::Deny { .. }));
            if let (Some(updated), false) = (&pre.updated_input, denied) {
                if let Err(message) = tool.input_schema().check(name, updated) {
                    return Ok(ToolResult::error(
                        id,
                        format!(
                            "<tool_use_error>A PreToolUse hook rewrote the input into one that is not valid: {message}</tool_use_error>"
                        ),
                    ));
                }
                let text = updated.to_string();
                if let Err(e) = guest.call_validate_input(&mut *store, &text, ctx)? {
                    return Ok(ToolResult::error(
                        id,
                        format!(
                            "<tool_use_error>A PreToolUse hook rewrote the input into one the tool refuses: {}</tool_use_error>",
                            e.message
                        ),
                    ));
                }
                state.input = updated.clone();
                input_text = text;
            }
        }

        // 5. Permission.
        let read_only = match tool.spec.hints.read_only {
            Some(declared) => declared,
            None => guest.call_is_read_only(&mut *store, &input_text)?,
        };
        let check_in = |mode: PermissionMode, store: &mut wasmtime::Store<_>| -> wasmtime::Result<ToolCheck> {
            let decision = if mode == inner.mode {
                guest.call_check_permissions(store, &input_text, ctx)?
            } else {
                guest.call_check_permissions(
                    store,
                    &input_text,
                    &CallContext { mode: wit_mode(mode), ..ctx.clone() },
                )?
            };
            Ok(tool_check(decision, tool.trusted()))
        };
        let check = check_in(inner.mode, store)?;
        let rules = Arc::clone(&state.rules);
        let parsed = match (name, state.input.get("command").and_then(Value::as_str)) {
            ("Bash", Some(command)) if command.len() <= crate::process::MAX_COMMAND => Some(shell::parse(command)),
            _ => None,
        };
        let call = Call { tool: name, input: &state.input, bash: parsed.as_ref() };
        // A command that reads outside the working directories is not one the
        // mode runs unasked.
        let outside = parsed.as_ref().and_then(|p| rules.path_outside(p));
        if let Some(word) = outside {
            tracing::debug!(word, "the command names a path outside the working directories");
        }
        let facts = Facts {
            tool: name,
            mode: inner.mode,
            read_only: read_only && outside.is_none(),
            check,
            rules: rules.check(&call),
            hook: pre.as_ref().and_then(|p| p.decision.as_ref()),
            sensitive: sensitive_write(name, &state.input, parsed.as_ref(), rules.places()),
        };
        let mut decision = permissions::decide(&facts);
        let mut asked = false;
        if let Decision::Ask { message, suggested_rules, .. } = &decision {
            let suggestions = match rules::suggest(&call, rules.places()) {
                s if s.is_empty() => suggested_rules.clone(),
                s => s,
            };
            decision = match &state.approver {
                Some(approver) => {
                    asked = true;
                    // "Allow always" only with a rule that would allow the call.
                    let offered =
                        if self.rules_would_allow(&facts, &call, &suggestions) { suggestions } else { Vec::new() };
                    let request = AskRequest {
                        tool: name.to_string(),
                        tool_use_id: id.to_string(),
                        input: state.input.clone(),
                        message: message.clone(),
                        suggested_rules: offered,
                    };
                    match approver.ask(&request) {
                        Answer::AllowOnce => Decision::Allow { input: None, source: Source::User },
                        Answer::AllowAlways(rule) => {
                            if let Err(e) = inner.policy.allow_always(&rule) {
                                tracing::warn!(rule, error = %e, "could not keep the rule");
                            }
                            Decision::Allow { input: None, source: Source::User }
                        }
                        Answer::Deny(reason) => Decision::Deny { message: reason, source: Source::User },
                    }
                }
                None => {
                    let hint = self.how_to_allow(&facts, &call, &suggestions, &mut |m| check_in(m, &mut *store))?;
                    Decision::Deny {
                        message: format!(
                            "{message} toolhost could not ask for approval: no interactive prompt is available.{hint}"
                        ),
                        source: Source::Mode(inner.mode),
                    }
                }
            };
        } else if let Decision::Deny { message, source: source @ Source::Mode(_) } = &decision {
            // Plan and dontAsk refuse what would ask: say what would allow it.
            let suggestions = rules::suggest(&call, rules.places());
            let hint = self.how_to_allow(&facts, &call, &suggestions, &mut |m| check_in(m, &mut *store))?;
            decision = Decision::Deny { message: format!("{message}{hint}"), source: source.clone() };
        }
        inner.policy.audit(&AuditRecord {
            session: session.id(),
            tool: name,
            tool_use_id: id,
            mode: inner.mode.as_str(),
            decision: &decision,
            asked,
            duration: decision_started.elapsed(),
        });
        match decision {
            Decision::Allow { input, source } => {
                span.record("decision", field::display(format_args!("allow ({source})")));
                // What the call may start: a call allowed only because it reads
                // can start only what the host classifies as read-only, one
                // allowed by a rule what the rules allow, one the user approved
                // that command. Deny rules hold whatever allowed the call.
                let data = store.data_mut();
                data.scope.rules = Some(Arc::clone(&rules));
                data.scope.approval = match source {
                    Source::Mode(mode) if read_only && mode != PermissionMode::BypassPermissions => Approval::ReadOnly,
                    Source::Rule { .. } => Approval::Rules,
                    Source::User | Source::Hook(_) | Source::Safety => match &parsed {
                        Some(_) => Approval::Command(
                            state.input.get("command").and_then(Value::as_str).unwrap_or_default().to_string(),
                        ),
                        None => Approval::Any,
                    },
                    Source::Mode(_) | Source::Tool => Approval::Any,
                };
                if let Some(updated) = input {
                    if let Err(message) = tool.input_schema().check(name, &updated) {
                        return Ok(ToolResult::error(id, format!("<tool_use_error>{message}</tool_use_error>")));
                    }
                    input_text = updated.to_string();
                    state.input = updated;
                }
            }
            Decision::Deny { message, source } => {
                span.record("decision", field::display(format_args!("deny ({source})")));
                return Ok(ToolResult::error(id, format!("Permission to use {name} was denied. {message}")));
            }
            Decision::Ask { .. } => unreachable!("asks were resolved above"),
        }

        // 6. Call, with the whole time limit: hooks and the prompt do not
        // count against it.
        let limit = inner.limits.timeout;
        store.data_mut().scope.deadline = Some((Instant::now() + limit, limit));
        state.called = true;
        let output = guest.call_call(&mut *store, &input_text, ctx)?;

        // 8. Result.
        Ok(match output {
            Ok(output) => {
                let scope = &mut store.data_mut().scope;
                let streamed = result::Streamed { text: std::mem::take(&mut scope.streamed), cut: scope.streamed_cut };
                result::from_output(name, id, streamed, output, tool.output_schema())
            }
            Err(e) => ToolResult::error(id, e.message),
        })
    }

    /// Whether adding `suggestions` to the allow rules would allow the call
    /// in the current mode (so "allow always" and hints offer only rules
    /// that work).
    fn rules_would_allow(&self, facts: &Facts<'_>, call: &Call<'_>, suggestions: &[String]) -> bool {
        if suggestions.is_empty() {
            return false;
        }
        let places = self.inner.policy.rules().places().clone();
        let entries = suggestions
            .iter()
            .filter_map(|text| rules::Rule::parse(text).ok())
            .map(|rule| rules::RuleEntry {
                rule,
                behavior: rules::Behavior::Allow,
                origin: Arc::from("suggested"),
                base: None,
            })
            .collect();
        let Ok(set) = rules::RuleSet::compile(entries, places) else { return false };
        let Some(allow) = set.check(call).allow else { return false };
        let with_rule = Facts { rules: rules::Verdicts { allow: Some(allow), ..facts.rules.clone() }, ..facts.clone() };
        matches!(permissions::decide(&with_rule), Decision::Allow { .. })
    }

    /// " To allow it, …": the narrowest rule that would allow the call, or
    /// the least permissive mode that would; empty when neither would.
    fn how_to_allow(
        &self,
        facts: &Facts<'_>,
        call: &Call<'_>,
        suggestions: &[String],
        check_in: &mut dyn FnMut(PermissionMode) -> wasmtime::Result<ToolCheck>,
    ) -> wasmtime::Result<String> {
        let inner = &*self.inner;
        let mut hints = Vec::new();
        if self.rules_would_allow(facts, call, suggestions) {
            let list = suggestions.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ");
            let args = suggestions.iter().map(|r| format!("--allow '{r}'")).collect::<Vec<_>>().join(" ");
            let file =
                inner.policy.local_file().map_or_else(|| "a settings file".to_string(), |f| f.display().to_string());
            hints.push(format!("add {list} to permissions.allow in {file} (or pass {args})"));
        }
        for mode in [PermissionMode::AcceptEdits, PermissionMode::BypassPermissions] {
            if mode == facts.mode {
                continue;
            }
            let f = Facts { mode, check: check_in(mode)?, ..facts.clone() };
            if matches!(permissions::decide(&f), Decision::Allow { .. }) {
                hints.push(format!("run toolhost with `--mode {mode}`"));
                break;
            }
        }
        Ok(if hints.is_empty() { String::new() } else { format!(" To allow it, {}.", hints.join("; or ")) })
    }
}

/// One call's facts that outlive the steps.
struct CallState {
    /// The input as the tool gets it (after a hook's or the tool's rewrite).
    input: Value,
    /// The rules the call is decided by.
    rules: Arc<rules::RuleSet>,
    /// The tool's `call` ran (so the Post hooks run).
    called: bool,
    /// Hooks' additional context, appended to the result.
    context: Vec<String>,
    /// A hook's `continue: false`.
    stop: Option<String>,
    /// Who answers an ask: the call's own approver, else the host's.
    approver: Option<Arc<dyn crate::permissions::Approver>>,
}

/// Why a call writes a protected path (see [`permissions::sensitive_path`]):
/// the file of Write, Edit and NotebookEdit, the redirection targets of a
/// Bash command.
fn sensitive_write(
    tool: &str,
    input: &Value,
    parsed: Option<&shell::Parsed>,
    places: &rules::Places,
) -> Option<String> {
    let check = |written: &str| {
        let path = crate::sandbox::normalize(&places.cwd.join(written));
        permissions::sensitive_path(&path).or_else(|| permissions::sensitive_path(&rules::resolve(&path)?))
    };
    let field = match tool {
        "Write" | "Edit" => "file_path",
        "NotebookEdit" => "notebook_path",
        "Bash" => {
            let home = places.home.as_deref();
            return parsed?.commands.iter().flat_map(|c| &c.redirections).filter(|r| r.writes()).find_map(|r| {
                match (r.target.strip_prefix("~/"), home) {
                    (Some(rest), Some(home)) => check(&home.join(rest).to_string_lossy()),
                    (Some(_), None) => None,
                    (None, _) => check(&r.target),
                }
            });
        }
        _ => return None,
    };
    check(input.get(field)?.as_str()?)
}

fn wit_mode(mode: PermissionMode) -> WitMode {
    match mode {
        PermissionMode::Default => WitMode::Default,
        PermissionMode::Plan => WitMode::Plan,
        PermissionMode::AcceptEdits => WitMode::AcceptEdits,
        PermissionMode::DontAsk => WitMode::DontAsk,
        PermissionMode::BypassPermissions => WitMode::BypassPermissions,
    }
}

/// The tool's decision as the host will weigh it: an `allow` from an untrusted
/// tool counts for nothing (it cannot grant itself permission), and an updated
/// input that is not JSON is refused.
fn tool_check(decision: PermissionDecision, trusted: bool) -> ToolCheck {
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

/// The result for a call that failed inside the guest: timeout, cancellation,
/// memory limit, trap (a panic included), or output the host could not read.
fn fault_result(name: &str, id: &str, e: &wasmtime::Error, instance: &Instance) -> ToolResult {
    let message = if let Some(i) = e.downcast_ref::<Interrupted>() {
        match i {
            Interrupted::Timeout(limit) => format!("{name} timed out after {} ms and was stopped.", limit.as_millis()),
            Interrupted::Cancelled => format!("{name} was cancelled."),
        }
    } else if let Some(m) = e.downcast_ref::<MemoryExceeded>() {
        format!("{name} exceeded its memory limit of {} MiB and was stopped.", m.limit >> 20)
    } else if let Some(trap) = e.downcast_ref::<wasmtime::Trap>() {
        let stderr = instance.captured.last_stderr_lines(4);
        let detail = if stderr.is_empty() { String::new() } else { format!("\nThe tool's last output:\n{stderr}") };
        format!("{name} crashed ({trap}). This is a bug in the tool; the host keeps serving.{detail}")
    } else {
        format!("{name} returned malformed output: {e:#}. This is a bug in the tool; the host keeps serving.")
    };
    match e.downcast_ref::<Interrupted>() {
        Some(Interrupted::Cancelled) => tracing::debug!(tool = name, id, "tool call cancelled"),
        _ => tracing::warn!(tool = name, id, error = %format!("{e:#}"), "tool call failed in the guest"),
    }
    ToolResult::error(id, message)
}
