//! A call's span, on OpenTelemetry's GenAI conventions: `execute_tool
//! {gen_ai.tool.name}`, with the tool, the call's id, the permission
//! decision and what decided it, the identity, and the call's use of the
//! machine. It is a `tracing` span: a log line's context under `RUST_LOG`,
//! and an exported span when the command installs an OpenTelemetry layer
//! (the core itself knows no exporter).
//!
//! Its parent is the span the caller names ([`CallOptions::span`]: an MCP
//! request's, on another thread) or else the one current where the call
//! runs (a hook's process, a Script's inner call and the guest's work are
//! its children the same way).

use super::call::{CallOptions, ToolUse};
use super::result::ToolResult;
use crate::sandbox::Usage;
use std::fmt::Display;
use tracing::field::{Empty, display};

/// The decisions a call's span records (`toolhost.decision`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Verdict {
    Allow,
    Deny,
    Ask,
    /// A PreToolUse hook stopped the session.
    Stopped,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Deny => "deny",
            Verdict::Ask => "ask",
            Verdict::Stopped => "stopped",
        }
    }
}

/// The span of one call of `tool_use`, not yet entered.
pub(super) fn call_span(tool_use: &ToolUse, options: &CallOptions) -> tracing::Span {
    let parent = match &options.span {
        Some(span) => span.id(),
        None => tracing::Span::current().id(),
    };
    let span = tracing::info_span!(
        parent: parent,
        "execute_tool",
        otel.name = %format_args!("execute_tool {}", tool_use.name),
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool_use.name,
        gen_ai.tool.call.id = %tool_use.id,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        error.type = Empty,
        toolhost.decision = Empty,
        toolhost.decision.source = Empty,
        toolhost.instance = Empty,
        toolhost.identity = Empty,
        toolhost.parent_call = Empty,
        toolhost.cpu_us = Empty,
        toolhost.peak_memory_bytes = Empty,
        toolhost.output_bytes = Empty,
        traceparent = Empty,
        is_error = Empty,
        duration_us = Empty,
    );
    if let Some(traceparent) = &options.traceparent {
        span.record("traceparent", traceparent.as_str());
    }
    if let Some(identity) = &options.identity {
        span.record("toolhost.identity", &**identity);
    }
    if let Some(parent) = &options.parent {
        span.record("toolhost.parent_call", &**parent);
    }
    span
}

/// Records what the permission step (or a step before it) decided, and
/// what decided it: a rule, the mode, a hook, the user, a quota.
pub(crate) fn record_decision(span: &tracing::Span, verdict: Verdict, source: impl Display) {
    span.record("toolhost.decision", verdict.label());
    span.record("toolhost.decision.source", display(source));
}

/// Records how an instance was had: warm, spare, fresh or remote.
pub(super) fn record_instance(span: &tracing::Span, how: &'static str) {
    span.record("toolhost.instance", how);
}

/// Records the end of a call: its outcome, its use of the machine and, when
/// the operator opted in, its arguments and result (the result as the
/// model gets it: a tool's secrets already masked).
pub(super) fn record_end(span: &tracing::Span, tool_use: &ToolUse, result: &ToolResult, usage: &Usage, content: bool) {
    span.record("is_error", result.is_error);
    span.record("duration_us", usage.wall_us);
    span.record("toolhost.cpu_us", usage.cpu_us);
    span.record("toolhost.peak_memory_bytes", usage.peak_memory_bytes);
    span.record("toolhost.output_bytes", usage.output_bytes);
    if result.is_error {
        // The conventions' value for a failure without a more precise type
        // (a denial says so in `toolhost.decision`).
        span.record("otel.status_code", "error");
        span.record("error.type", "tool_error");
    }
    if content {
        span.record("gen_ai.tool.call.arguments", display(&tool_use.input));
        span.record("gen_ai.tool.call.result", result.text().as_str());
    }
}
