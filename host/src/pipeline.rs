//! One call, start to finish: the pipeline of SPEC §4.
//!
//! 1. find the tool by name or alias;
//! 2. validate the input against its JSON Schema;
//! 3. the tool's `validate-input`;
//! 4. PreToolUse hooks (issue #4);
//! 5. the permission decision;
//! 6. `call` in a fresh sandboxed instance;
//! 7. PostToolUse hooks (issue #4);
//! 8. map to a `tool_result`, persisting an oversized one.
//!
//! Every failure is an error result; nothing a tool or its input does reaches
//! the caller as anything else.

use crate::bindings::{CallContext, PermissionDecision, PermissionMode as WitMode};
use crate::host::Host;
use crate::permissions::{self, Answer, AskRequest, Decision, Facts, PermissionMode, ToolCheck};
use crate::process::Approval;
use crate::result::{self, ToolResult};
use crate::session::Session;
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

/// Per-call options.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Receives progress while the call runs.
    pub progress: Option<ProgressSink>,
    /// Set to stop the call; it ends with a "cancelled" error result.
    pub cancel: Option<Arc<AtomicBool>>,
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
        let ctx = CallContext {
            tool_use_id: id.to_string(),
            session_id: session.id().to_string(),
            cwd: inner.dir_strings.cwd.clone(),
            working_dirs: inner.dir_strings.working.clone(),
            read_only_dirs: results.iter().map(|d| d.to_string_lossy().into_owned()).collect(),
            mode: wit_mode(inner.mode),
        };
        let outcome = self.steps(tool, tool_use, &mut instance, &ctx, span);
        instance.captured.log(name, id);
        // An `Err` is a failure inside the guest (trap, timeout, malformed
        // output), as opposed to an error the tool returned.
        let mut result = outcome.unwrap_or_else(|e| fault_result(name, id, &e, &instance));
        // Errors too: a failed command's output can be as long as a good one's.
        result::persist_if_oversized(&mut result, tool.spec.max_result_size_chars, session);
        result
    }

    /// Steps 3 to 8 on a live instance.
    fn steps(
        &self,
        tool: &LoadedTool,
        tool_use: &ToolUse,
        instance: &mut Instance,
        ctx: &CallContext,
        span: &tracing::Span,
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

        // 4. PreToolUse hooks: issue #4.

        // 5. Permission.
        let read_only = guest.call_is_read_only(&mut *store, &input_text)?;
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
        let facts = Facts { tool: name.to_string(), mode: inner.mode, read_only, check };
        let mut decision = permissions::decide(&facts);
        if let Decision::Ask { message, suggested_rules, .. } = &decision {
            decision = match &inner.approver {
                Some(approver) => {
                    let request = AskRequest {
                        tool: name.to_string(),
                        tool_use_id: id.to_string(),
                        input: tool_use.input.clone(),
                        message: message.clone(),
                        suggested_rules: suggested_rules.clone(),
                    };
                    match approver.ask(&request) {
                        Answer::AllowOnce => Decision::Allow { input: None, source: permissions::Source::User },
                        Answer::Deny(reason) => Decision::Deny { message: reason, source: permissions::Source::User },
                    }
                }
                None => {
                    // Name the least permissive mode that would run the call.
                    let mut allowing = None;
                    for mode in [PermissionMode::AcceptEdits, PermissionMode::BypassPermissions] {
                        let check = check_in(mode, store)?;
                        let f = Facts { mode, check, ..facts.clone() };
                        if matches!(permissions::decide(&f), Decision::Allow { .. }) {
                            allowing = Some(mode);
                            break;
                        }
                    }
                    let hint = match allowing {
                        Some(m) => format!(" To allow it, run toolhost with `--mode {m}`."),
                        None => String::new(),
                    };
                    Decision::Deny {
                        message: format!(
                            "{message} toolhost could not ask for approval: no interactive prompt is available.{hint}"
                        ),
                        source: permissions::Source::Mode(inner.mode),
                    }
                }
            };
        }
        match decision {
            Decision::Allow { input, source } => {
                span.record("decision", field::display(format_args!("allow ({source})")));
                // What the call may start: a call allowed only because it reads
                // can start only what the host classifies as read-only.
                store.data_mut().scope.approval = match source {
                    permissions::Source::Mode(mode) if read_only && mode != PermissionMode::BypassPermissions => {
                        Approval::ReadOnly
                    }
                    permissions::Source::Mode(_) | permissions::Source::Tool | permissions::Source::User => {
                        Approval::Any
                    }
                };
                if let Some(updated) = input {
                    if let Err(message) = tool.input_schema().check(name, &updated) {
                        return Ok(ToolResult::error(id, format!("<tool_use_error>{message}</tool_use_error>")));
                    }
                    input_text = updated.to_string();
                }
            }
            Decision::Deny { message, source } => {
                span.record("decision", field::display(format_args!("deny ({source})")));
                return Ok(ToolResult::error(id, format!("Permission to use {name} was denied. {message}")));
            }
            Decision::Ask { .. } => unreachable!("asks were resolved above"),
        }

        // 6. Call.
        let output = guest.call_call(&mut *store, &input_text, ctx)?;

        // 7. PostToolUse hooks: issue #4.

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
    tracing::warn!(tool = name, id, error = %format!("{e:#}"), "tool call failed in the guest");
    ToolResult::error(id, message)
}
