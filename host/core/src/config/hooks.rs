//! The `hooks` objects of settings files, as written, and what is wrong
//! with one that cannot be used.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// Seconds a hook may run when its configuration names no `timeout`.
pub(crate) const DEFAULT_TIMEOUT_SECS: f64 = 60.0;

/// Longest `timeout` accepted, in seconds (one day).
pub(crate) const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// One `hooks` object of one settings file, as written.
///
/// Events of Claude Code that toolhost has no place for (`Stop`,
/// `SessionStart`, …) are accepted and never run, with a warning, so one
/// settings file can serve both; any other name is a configuration error.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HooksConfig {
    /// Hooks run before a call, after its input was validated.
    #[serde(rename = "PreToolUse", default, skip_serializing_if = "Vec::is_empty")]
    pub pre_tool_use: Vec<MatcherGroup>,
    /// Hooks run after a call succeeded.
    #[serde(rename = "PostToolUse", default, skip_serializing_if = "Vec::is_empty")]
    pub post_tool_use: Vec<MatcherGroup>,
    /// Hooks run after a call failed.
    #[serde(rename = "PostToolUseFailure", default, skip_serializing_if = "Vec::is_empty")]
    pub post_tool_use_failure: Vec<MatcherGroup>,
    /// Any other event, as written.
    #[serde(flatten, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub other: std::collections::BTreeMap<String, Value>,
}

/// Claude Code's hook events that toolhost does not have.
pub(super) const FOREIGN_EVENTS: &[&str] = &[
    "PermissionRequest",
    "UserPromptSubmit",
    "Notification",
    "Stop",
    "SubagentStop",
    "SubagentStart",
    "PreCompact",
    "SessionStart",
    "SessionEnd",
];

impl HooksConfig {
    /// The groups configured for `event`.
    pub fn groups(&self, event: HookEvent) -> &[MatcherGroup] {
        match event {
            HookEvent::PreToolUse => &self.pre_tool_use,
            HookEvent::PostToolUse => &self.post_tool_use,
            HookEvent::PostToolUseFailure => &self.post_tool_use_failure,
        }
    }
}

/// Hooks that apply to the tools a matcher selects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MatcherGroup {
    /// A regex matched against the whole tool name; absent, `""` or `"*"`
    /// match every tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The commands to run.
    pub hooks: Vec<HookCommand>,
}

/// One hook, as written.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HookCommand {
    /// Must be `"command"`.
    pub r#type: String,
    /// Run with `sh -c`.
    pub command: String,
    /// Seconds (may be fractional); [`DEFAULT_TIMEOUT_SECS`] when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
}

/// When a hook runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// Before a call: may decide allow/deny/ask, rewrite the input, or stop.
    PreToolUse,
    /// After a call succeeded: may add context for the model, or stop.
    PostToolUse,
    /// After a call failed: may add context for the model, or stop.
    PostToolUseFailure,
}

impl HookEvent {
    /// Every event, in order.
    pub const ALL: [HookEvent; 3] = [HookEvent::PreToolUse, HookEvent::PostToolUse, HookEvent::PostToolUseFailure];

    /// The name used in settings files and in `hook_event_name`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
        }
    }

    pub(super) fn index(self) -> usize {
        match self {
            HookEvent::PreToolUse => 0,
            HookEvent::PostToolUse => 1,
            HookEvent::PostToolUseFailure => 2,
        }
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A hooks configuration that cannot be used; each names where it is.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum HookConfigError {
    /// An event name that is neither toolhost's nor a known one of Claude
    /// Code's.
    #[error("{origin}: hooks: unknown event `{event}` (toolhost runs PreToolUse, PostToolUse and PostToolUseFailure)")]
    UnknownEvent {
        /// The settings file.
        origin: String,
        /// The event's name.
        event: String,
    },
    /// A matcher that is not a regular expression.
    #[error("{at}: invalid matcher `{matcher}`: {reason}")]
    Matcher {
        /// Where it is (file and key).
        at: String,
        /// The matcher.
        matcher: String,
        /// Why it does not compile.
        reason: String,
    },
    /// A hook that cannot run.
    #[error("{at}: {problem}")]
    Hook {
        /// Where it is (file and key).
        at: String,
        /// What is wrong with it.
        problem: HookProblem,
    },
}

/// What is wrong with one hook's configuration.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum HookProblem {
    /// A `type` other than `command`.
    #[error("unsupported hook type `{0}` (the only supported type is \"command\")")]
    UnsupportedType(String),
    /// The command is empty.
    #[error("empty command")]
    EmptyCommand,
    #[error("timeout must be a positive number of seconds up to {MAX_TIMEOUT_SECS}, not {0}")]
    /// A timeout that is not a positive number of seconds up to a day.
    Timeout(f64),
}
