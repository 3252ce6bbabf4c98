//! Whether a call may run beside others (SPEC §7's start rule): declared by
//! its tool for every input, or asked of the tool for this input in an
//! instance of its own (a session's warm one, for a tool that reuses
//! instances), within [`CLASSIFY_TIMEOUT`].

use super::call::{CLASSIFY_TIMEOUT, Pipeline, ToolUse, panic_message};
use super::warm;
use crate::sandbox::CallLimits;
use crate::session::Session;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

impl Pipeline {
    /// Whether a call may run beside other concurrency-safe calls. A tool
    /// that is unknown, input that fails the schema and a tool that cannot
    /// answer within [`CLASSIFY_TIMEOUT`] are not concurrency-safe.
    pub(crate) fn is_concurrency_safe(&self, tool_use: &ToolUse) -> bool {
        self.classify(None, tool_use)
    }

    /// [`Pipeline::is_concurrency_safe`] for a call of `session`: a tool that
    /// declares `reuse-instance` answers in the session's warm instance.
    pub(crate) fn is_concurrency_safe_in(&self, session: &Arc<Session>, tool_use: &ToolUse) -> bool {
        self.classify(Some(session), tool_use)
    }

    /// Whether `tool_use` is concurrency-safe, when that needs no instance:
    /// its tool declares the answer for every input, or the call is refused
    /// before it starts (unknown or disabled tool, input its schema rejects).
    /// `None`: its tool answers per input.
    pub(crate) fn declared_concurrency_safe(&self, tool_use: &ToolUse) -> Option<bool> {
        let repaired = self.repair(tool_use);
        let tool_use = repaired.as_ref().map_or(tool_use, |(repaired, _)| repaired);
        let registry = self.registry();
        let Some(tool) = registry.resolve(&tool_use.name).filter(|t| t.spec.enabled) else {
            return Some(false);
        };
        if tool.input_schema().check(&tool.spec.name, &tool_use.input).is_err() {
            return Some(false);
        }
        tool.spec.hints.concurrency_safe
    }

    pub(super) fn classify(&self, session: Option<&Arc<Session>>, tool_use: &ToolUse) -> bool {
        // A fault of the host while the tool answers: not concurrency-safe
        // (the call then runs alone, and meets the fault again, as an error).
        std::panic::catch_unwind(AssertUnwindSafe(|| self.classify_unguarded(session, tool_use))).unwrap_or_else(|panic| {
            tracing::error!(panic = %panic_message(&*panic), tool = %tool_use.name, "toolhost failed while asking whether the call is concurrency-safe; taken as not");
            false
        })
    }

    fn classify_unguarded(&self, session: Option<&Arc<Session>>, tool_use: &ToolUse) -> bool {
        let repaired = self.repair(tool_use);
        let tool_use = repaired.as_ref().map_or(tool_use, |(repaired, _)| repaired);
        if let Some(declared) = self.declared_concurrency_safe(tool_use) {
            return declared;
        }
        let registry = self.registry();
        let Some(tool) = registry.resolve(&tool_use.name) else { return false };
        let _running = self.sandbox.running();
        let since = self.granted_since_start(&tool.spec.name);
        let grants = since.as_deref().unwrap_or(&tool.grants);
        let base = grants.limits(self.sandbox.limits());
        let limits = CallLimits { timeout: base.timeout.min(CLASSIFY_TIMEOUT), ..base };
        let text = tool_use.input.to_string();
        let Some(session) = session.filter(|_| tool.spec.reuse_instance) else {
            let scope = self.scratch_scope(tool, tool_use.id.clone());
            return tool
                .pre(&self.sandbox)
                .and_then(|pre| self.sandbox.instantiate(pre, grants, scope, limits))
                .and_then(|mut i| i.guest.is_concurrency_safe(&mut i.store, &text))
                .unwrap_or(false);
        };
        let dirs = self.call_dirs(session.existing_results_dir());
        let key = warm::Key::new(session, &registry, &tool.spec.name, since.as_ref(), &dirs);
        let scope = self.scope(tool, tool_use.id.clone(), session, dirs);
        let instance = match self.warm.take(&key, &registry) {
            Some(mut kept) => {
                kept.renew(grants, scope, limits);
                Ok(kept)
            }
            None => tool.pre(&self.sandbox).and_then(|pre| self.sandbox.instantiate(pre, grants, scope, limits)),
        };
        let Ok(mut instance) = instance else { return false };
        match instance.guest.is_concurrency_safe(&mut instance.store, &text) {
            Ok(safe) => {
                self.warm.put(key, instance, &registry);
                safe
            }
            Err(_) => false,
        }
    }
}
