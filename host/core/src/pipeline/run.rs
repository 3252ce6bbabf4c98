//! One call's way through steps 3 to 8 on its live instance: the tool's
//! own validation, the PreToolUse hooks, the call, the Post hooks and the
//! result. Step 5, the permission decision, is `permission.rs`.

use super::call::Pipeline;
use super::permission::tool_check;
use super::result::{self, Content, ToolResult};
use super::warm::{self};
use crate::contract::bindings::toolhost::tool::types::{ToolError as WitToolError, ToolOutput};
use crate::contract::bindings::{CallContext, PermissionDecision, PermissionMode as WitMode};
use crate::policy::hooks::{EventInput, HookDecision, HookEvent, Outcome};
use crate::policy::rules::RuleSet;
use crate::policy::{Approver, Decision, PermissionMode, Source, ToolCheck};
use crate::registry::LoadedTool;
use crate::sandbox::{CallLimits, GuestFault, Instance};
use crate::session::Session;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// One call's state while it goes through the steps.
pub(super) struct Run<'p> {
    pub(super) pipeline: &'p Pipeline,
    pub(super) session: &'p Arc<Session>,
    pub(super) tool: &'p LoadedTool,
    pub(super) id: &'p str,
    pub(super) span: &'p tracing::Span,
    /// The tool's live instance; none for a tool another program serves.
    pub(super) instance: Option<Instance>,
    /// Where the call's progress goes, and its cancellation (for a remote
    /// tool; a component's instance holds its own).
    pub(super) progress: Option<crate::imports::ProgressSink>,
    pub(super) cancel: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// The tool's limits for this call.
    pub(super) limits: CallLimits,
    pub(super) ctx: CallContext,
    /// The input as the tool gets it (after a hook's or the tool's rewrite),
    /// and as JSON text.
    pub(super) input: Value,
    pub(super) input_text: String,
    /// The rules the call is decided by.
    pub(super) rules: Arc<RuleSet>,
    /// The tool's `call` ran (so the Post hooks run).
    pub(super) called: bool,
    /// Hooks' additional context, appended to the result.
    pub(super) context: Vec<String>,
    /// A hook's `continue: false`.
    pub(super) stop: Option<String>,
    /// Who answers an ask: the call's own approver, else the host's.
    pub(super) approver: Option<Arc<dyn Approver>>,
    /// Who asked for the call, for the audit log.
    pub(super) identity: Option<Arc<str>>,
    /// The call that made this one (a Script call), for the audit log.
    pub(super) parent: Option<Arc<str>>,
    /// For ToolSearch: the deferred tools, added to its input at `call`.
    pub(super) catalog: Option<Value>,
    /// What the instance is kept for afterwards, for a tool that declares
    /// `reuse-instance` (none once the call changed its grants).
    pub(super) warm: Option<warm::Key>,
    /// The guest failed (trapped, timed out, was cancelled, ...): its
    /// instance is not kept.
    pub(super) faulted: bool,
}

impl Run<'_> {
    pub(super) fn name(&self) -> &str {
        &self.tool.spec.name
    }

    pub(super) fn error(&self, message: impl Into<String>) -> ToolResult {
        ToolResult::error(self.id, message)
    }

    /// Steps 3 to 6 and 8 on the live instance.
    pub(super) fn steps(&mut self) -> wasmtime::Result<ToolResult> {
        // 3. The tool's own validation.
        if let Err(e) = self.validate(&self.input_text.clone())? {
            return Ok(self.error(format!("<tool_use_error>{}</tool_use_error>", e.message)));
        }
        // 4. PreToolUse hooks.
        let decision_started = Instant::now();
        let pre = self.pre_hooks();
        if let Some(pre) = &pre
            && let Some(result) = self.take_pre_hooks(pre, decision_started)?
        {
            return Ok(result);
        }
        // 5. Permission.
        if let Some(refused) = self.permission(pre.as_ref(), decision_started)? {
            return Ok(refused);
        }
        // 6. Call.
        self.called = true;
        if let Some(remote) = self.tool.remote.clone() {
            return Ok(self.call_remote(&remote));
        }
        let output = self.call_guest()?;
        // 8. Result.
        Ok(match output {
            Ok(output) => self.output(output),
            Err(e) => match self.grant_and_retry(&e.message)? {
                Some(retried) => retried,
                None if self.missing().is_empty() => self.error(e.message),
                // The tool failed, and it lacks something it asked for: name
                // the exact grants, for the model to pass on.
                None => self.error(format!(
                    "{}\n\n{} requested what it was not granted: {}. If the call needs it, the operator can grant \
                     it under toolGrants.{} in a settings file.",
                    e.message,
                    self.name(),
                    self.missing().join("; "),
                    self.name()
                )),
            },
        })
    }

    /// The guest's `call`, with the whole time limit from now: hooks and the
    /// prompt do not count against it.
    pub(super) fn call_guest(&mut self) -> wasmtime::Result<Result<ToolOutput, WitToolError>> {
        // The guest's own work, a child of the call's span (its imports'
        // work, a child process included, under it).
        let span = tracing::info_span!("guest_call", otel.name = %format_args!("guest_call {}", self.tool.spec.name));
        let _entered = span.enter();
        let limit = self.limits.timeout;
        let instance = wasm(&mut self.instance)?;
        instance.store.data_mut().call.deadline = Some((Instant::now() + limit, limit));
        if let (Some(catalog), Value::Object(input)) = (&self.catalog, &self.input) {
            let mut input = input.clone();
            input.insert("deferred".into(), catalog.clone());
            let text = Value::Object(input).to_string();
            let instance = self.instance.as_mut().expect("checked above");
            return instance.guest.call(&mut instance.store, &text, &self.ctx);
        }
        let instance = self.instance.as_mut().expect("checked above");
        instance.guest.call(&mut instance.store, &self.input_text, &self.ctx)
    }

    /// A tool's output as its result.
    pub(super) fn output(&mut self, output: ToolOutput) -> ToolResult {
        let streamed = match self.instance.as_mut() {
            Some(instance) => {
                let call = &mut instance.store.data_mut().call;
                result::Streamed { text: std::mem::take(&mut call.streamed), cut: call.streamed_cut }
            }
            None => result::Streamed::default(),
        };
        result::from_output(self.name(), self.id, streamed, output, self.tool.output_schema())
    }

    pub(super) fn validate(&mut self, input: &str) -> wasmtime::Result<Result<(), WitToolError>> {
        if !self.tool.spec.validates_input {
            return Ok(Ok(()));
        }
        let Some(instance) = self.instance.as_mut() else { return Ok(Ok(())) };
        instance.guest.validate_input(&mut instance.store, input, &self.ctx)
    }

    pub(super) fn hook_input<'a>(&'a self, tool_input: &'a Value) -> EventInput<'a> {
        EventInput {
            session_id: self.session.id(),
            cwd: &self.pipeline.cwd_text,
            permission_mode: self.pipeline.mode.as_str(),
            tool_name: self.name(),
            tool_input,
            tool_use_id: self.id,
            tool_response: None,
            error: None,
        }
    }

    /// Runs the PreToolUse hooks that match, if any.
    pub(super) fn pre_hooks(&self) -> Option<Outcome> {
        let hooks = &self.pipeline.policy.hooks;
        hooks
            .any(HookEvent::PreToolUse, self.name())
            .then(|| hooks.run(HookEvent::PreToolUse, &self.hook_input(&self.input)))
    }

    /// Applies what the PreToolUse hooks said: their context, a stop, a
    /// rewritten input (validated again). A result ends the call.
    pub(super) fn take_pre_hooks(
        &mut self,
        pre: &Outcome,
        decision_started: Instant,
    ) -> wasmtime::Result<Option<ToolResult>> {
        self.context.extend(pre.additional_context.iter().map(|c| format!("[PreToolUse hook] {c}")));
        if let Some(reason) = &pre.stop {
            self.stop = Some(reason.clone());
            super::trace::record_decision(self.span, super::trace::Verdict::Stopped, "a PreToolUse hook");
            // A refusal that cannot be recorded is still a refusal (and
            // the failure is in the log).
            let _ = self.audit(
                &Decision::Deny {
                    message: format!("stopped: {reason}"),
                    source: Source::Hook("PreToolUse (continue: false)".into()),
                },
                false,
                decision_started,
            );
            return Ok(Some(self.error(format!("A PreToolUse hook stopped the call: {reason}"))));
        }
        let denied = matches!(pre.decision, Some(HookDecision::Deny { .. }));
        if let (Some(updated), false) = (&pre.updated_input, denied) {
            if let Err(message) = self.tool.input_schema().check(self.name(), updated) {
                return Ok(Some(self.error(format!(
                    "<tool_use_error>A PreToolUse hook rewrote the input into one that is not valid: {message}</tool_use_error>"
                ))));
            }
            let text = updated.to_string();
            if let Err(e) = self.validate(&text)? {
                return Ok(Some(self.error(format!(
                    "<tool_use_error>A PreToolUse hook rewrote the input into one the tool refuses: {}</tool_use_error>",
                    e.message
                ))));
            }
            self.input = updated.clone();
            self.input_text = text;
        }
        Ok(None)
    }

    /// The tool's own permission view, in `mode`.
    pub(super) fn check_in(&mut self, mode: PermissionMode) -> wasmtime::Result<ToolCheck> {
        let decision = if !self.tool.spec.checks_permissions || self.instance.is_none() {
            PermissionDecision::Passthrough
        } else if mode == self.pipeline.mode {
            let instance = wasm(&mut self.instance)?;
            let (guest, store) = (&instance.guest, &mut instance.store);
            guest.check_permissions(store, &self.input_text, &self.ctx)?
        } else {
            let ctx = CallContext { mode: wit_mode(mode), ..self.ctx.clone() };
            let instance = wasm(&mut self.instance)?;
            instance.guest.check_permissions(&mut instance.store, &self.input_text, &ctx)?
        };
        Ok(tool_check(decision, self.tool.trusted()))
    }

    /// Step 7 (the Post hooks, for calls that ran) and the last of step 8:
    /// hooks' context appended, an oversized result persisted.
    pub(super) fn finish(self, mut result: ToolResult) -> ToolResult {
        let Run {
            pipeline, session, tool, id, mut instance, input, called, mut context, mut stop, warm, faulted, ..
        } = self;
        // Before anything sees the result (hooks, the audit log, a persisted
        // copy): the values of the tool's secrets, masked.
        if let Some(remote) = tool.remote.as_ref().filter(|r| !r.secrets.is_empty()) {
            result.mask(&remote.secrets);
        }
        if let Some(instance) = &mut instance {
            let secrets = std::mem::take(&mut instance.store.data_mut().call.secrets);
            if !secrets.is_empty() {
                result.mask(&secrets);
            }
            if called {
                instance.last_call = Some(std::time::Instant::now());
            }
        }
        match (warm, instance) {
            (Some(key), Some(instance)) if !faulted => pipeline.warm.put(key, instance, &pipeline.registry()),
            (_, instance) => drop(instance),
        }
        let name = tool.spec.name.as_str();
        let event = if result.is_error { HookEvent::PostToolUseFailure } else { HookEvent::PostToolUse };
        let hooks = &pipeline.policy.hooks;
        if called && hooks.any(event, name) {
            let response = result.to_json()["content"].take();
            let error = result.is_error.then(|| result.text());
            let outcome = hooks.run(
                event,
                &EventInput {
                    session_id: session.id(),
                    cwd: &pipeline.cwd_text,
                    permission_mode: pipeline.mode.as_str(),
                    tool_name: name,
                    tool_input: &input,
                    tool_use_id: id,
                    tool_response: (!result.is_error).then_some(&response),
                    error: error.as_deref(),
                },
            );
            context.extend(outcome.additional_context.into_iter().map(|c| format!("[{event} hook] {c}")));
            stop = stop.or(outcome.stop);
        }
        for text in context {
            result.content.push(Content::Text(text));
        }
        result.stop = stop;
        // Errors too: a failed command's output can be as long as a good one's.
        super::persisted::persist_if_oversized(&mut result, tool.spec.max_result_size_chars, session);
        result
    }
}

/// A component's instance (a remote tool has none).
pub(super) fn wasm(instance: &mut Option<Instance>) -> wasmtime::Result<&mut Instance> {
    instance.as_mut().ok_or_else(|| wasmtime::Error::msg("the tool has no instance"))
}

pub(super) fn wit_mode(mode: PermissionMode) -> WitMode {
    match mode {
        PermissionMode::Default => WitMode::Default,
        PermissionMode::Plan => WitMode::Plan,
        PermissionMode::AcceptEdits => WitMode::AcceptEdits,
        PermissionMode::DontAsk => WitMode::DontAsk,
        PermissionMode::BypassPermissions => WitMode::BypassPermissions,
    }
}

/// The result for a call that failed inside the guest: timeout, cancellation,
/// memory limit, trap (a panic included), or output the host could not read.
pub(super) fn fault_result(name: &str, id: &str, e: &wasmtime::Error, instance: &Instance) -> ToolResult {
    let fault = GuestFault::of(e);
    let message = match fault {
        GuestFault::Timeout(limit) => format!("{name} timed out after {} ms and was stopped.", limit.as_millis()),
        GuestFault::Cancelled => format!("{name} was cancelled."),
        GuestFault::Memory(limit) => {
            format!("{name} exceeded its memory limit of {} MiB and was stopped.", limit >> 20)
        }
        GuestFault::Trap(trap) => {
            let stderr = instance.captured.last_stderr_lines(4);
            let detail = if stderr.is_empty() { String::new() } else { format!("\nThe tool's last output:\n{stderr}") };
            let why = match trap {
                // The component-model async ABI's states that cannot end.
                wasmtime::Trap::CannotBlockSyncTask => {
                    " (a synchronous export waited on a future, stream or task of its own, which nothing outside \
                     it could complete)"
                }
                wasmtime::Trap::AsyncDeadlock => " (every task it started was waiting, and none could go on)",
                _ => "",
            };
            format!("{name} crashed ({trap}){why}. This is a bug in the tool; the host keeps serving.{detail}")
        }
        GuestFault::Handles => format!(
            "{name} held more futures, streams, resources and tasks at once than a call may, and was stopped. \
             This is a bug in the tool; the host keeps serving."
        ),
        GuestFault::Other => {
            format!("{name} returned malformed output: {e:#}. This is a bug in the tool; the host keeps serving.")
        }
    };
    match fault {
        GuestFault::Cancelled => tracing::debug!(tool = name, id, "tool call cancelled"),
        _ => {
            // A panic's text can hold what the tool was given.
            let error = crate::secrets::mask(&format!("{e:#}"), &instance.store.data().call.secrets);
            tracing::warn!(tool = name, id, error = %error, "tool call failed in the guest")
        }
    }
    ToolResult::error(id, message)
}
