//! What runs calls through the pipeline for those above it: the scheduler's
//! executors ([`Caller`], implemented by the host), and the Script tool's
//! programs, whose calls the host runs on an executor of their own
//! ([`ScriptCalls`], installed by the host once it exists).

use super::{CallOptions, ToolResult, ToolUse};
use crate::imports::{ProgressSink, ScriptCalls};
use crate::policy::Approver;
use crate::registry::LoadedTool;
use crate::session::Session;
use std::sync::Arc;

/// Runs calls through the whole pipeline, and answers what a scheduler
/// asks before starting them.
pub(crate) trait Caller: Send + Sync + 'static {
    /// Runs one call (blocking the calling thread while the tool runs).
    fn call(&self, session: &Arc<Session>, tool_use: &ToolUse, options: &CallOptions) -> ToolResult;
    /// Whether an interrupt cancels calls of `tool`.
    fn cancels_on_interrupt(&self, tool: &str) -> bool;
    /// Whether the call is concurrency-safe when that needs no instance.
    fn declared_concurrency_safe(&self, tool_use: &ToolUse) -> Option<bool>;
    /// Whether the call is concurrency-safe, asking the tool if it must.
    fn is_concurrency_safe_in(&self, session: &Arc<Session>, tool_use: &ToolUse) -> bool;
    /// The tool called `name` (or with that alias).
    fn tool(&self, name: &str) -> Option<Arc<LoadedTool>>;
}

/// What a Script call's program needs to make calls of its own.
pub(crate) struct ScriptStart {
    pub session: Arc<Session>,
    /// The Script call's id.
    pub parent: String,
    /// Where the Script call's progress goes.
    pub progress: Option<ProgressSink>,
    /// Who answers the Script call's asks.
    pub approver: Option<Arc<dyn Approver>>,
    pub identity: Option<Arc<str>>,
}

/// Makes the calls of one run of a Script program ([`ScriptCalls`]);
/// `None` once the host is gone.
pub(crate) type ScriptStarter = Arc<dyn Fn(ScriptStart) -> Option<ScriptCalls> + Send + Sync>;
