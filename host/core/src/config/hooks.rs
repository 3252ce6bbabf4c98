//! The `hooks` objects of settings files, as written, what is wrong with
//! one that cannot be used, and all of them compiled ([`Hooks`]: matchers
//! built, which hooks of an event match a tool). Running them is the
//! policy's (`policy/hooks.rs`).

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

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
const FOREIGN_EVENTS: &[&str] = &[
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

/// Characters of a command kept when naming a hook in messages.
pub(crate) const LABEL_MAX: usize = 80;

/// Hooks compiled once (matchers built), from all settings files together.
#[derive(Clone, Debug, Default)]
pub(crate) struct Hooks {
    /// Groups per event, indexed by [`HookEvent::index`], in configuration order.
    events: [Vec<Group>; 3],
}

#[derive(Clone, Debug)]
struct Group {
    /// `None` matches every tool.
    matcher: Option<Regex>,
    hooks: Vec<Hook>,
}

impl Group {
    fn matches(&self, tool: &str) -> bool {
        self.matcher.as_ref().is_none_or(|m| m.is_match(tool))
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Hook {
    pub(crate) command: String,
    /// The command clipped, for messages.
    pub(crate) label: String,
    pub(crate) timeout: Duration,
    /// The timeout as configured, for messages.
    pub(crate) timeout_secs: f64,
}

impl Hooks {
    /// Whether no hook is configured at all.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.events.iter().all(Vec::is_empty)
    }

    /// Compiles the `hooks` objects of every settings file; `origin` names
    /// where each came from (a settings file path) and appears in errors.
    ///
    /// Errors: an invalid matcher regex, a hook `type` other than `"command"`,
    /// an empty command, or a timeout that is not a positive number of
    /// seconds up to [`MAX_TIMEOUT_SECS`].
    pub(crate) fn compile(configs: &[(HooksConfig, String)]) -> Result<Hooks, HookConfigError> {
        let mut compiled = Hooks::default();
        for (config, origin) in configs {
            for event in config.other.keys() {
                if FOREIGN_EVENTS.contains(&event.as_str()) {
                    tracing::warn!(origin, event, "toolhost has no such hook event; these hooks never run");
                } else {
                    return Err(HookConfigError::UnknownEvent { origin: origin.clone(), event: event.clone() });
                }
            }
            for event in HookEvent::ALL {
                for (g, group) in config.groups(event).iter().enumerate() {
                    let at = format!("{origin}: hooks.{event}[{g}]");
                    let matcher = compile_matcher(group.matcher.as_deref()).map_err(|e| HookConfigError::Matcher {
                        at: at.clone(),
                        matcher: group.matcher.clone().unwrap_or_default(),
                        reason: e.to_string(),
                    })?;
                    let mut hooks = Vec::with_capacity(group.hooks.len());
                    for (h, hook) in group.hooks.iter().enumerate() {
                        hooks.push(
                            compile_hook(hook)
                                .map_err(|problem| HookConfigError::Hook { at: format!("{at}.hooks[{h}]"), problem })?,
                        );
                    }
                    if !hooks.is_empty() {
                        compiled.events[event.index()].push(Group { matcher, hooks });
                    }
                }
            }
        }
        Ok(compiled)
    }

    /// Whether any hook of `event` matches `tool` (so the pipeline can skip
    /// building the event when none does).
    pub(crate) fn any(&self, event: HookEvent, tool: &str) -> bool {
        self.events[event.index()].iter().any(|g| g.matches(tool))
    }

    /// The hooks of `event` that match `tool`, in configuration order, each
    /// command once (the first occurrence wins).
    pub(crate) fn matching(&self, event: HookEvent, tool: &str) -> Vec<&Hook> {
        let mut hooks: Vec<&Hook> = Vec::new();
        for group in self.events[event.index()].iter().filter(|g| g.matches(tool)) {
            for hook in &group.hooks {
                if !hooks.iter().any(|h| h.command == hook.command) {
                    hooks.push(hook);
                }
            }
        }
        hooks
    }
}

/// Builds a matcher anchored on the whole tool name; `None` matches all.
fn compile_matcher(matcher: Option<&str>) -> Result<Option<Regex>, regex::Error> {
    match matcher {
        None | Some("" | "*") => Ok(None),
        Some(m) => {
            // Parsed alone first, so that `a)|(b` cannot escape the anchors.
            Regex::new(m)?;
            Regex::new(&format!("^(?:{m})$")).map(Some)
        }
    }
}

fn compile_hook(hook: &HookCommand) -> Result<Hook, HookProblem> {
    if hook.r#type != "command" {
        return Err(HookProblem::UnsupportedType(hook.r#type.clone()));
    }
    if hook.command.trim().is_empty() {
        return Err(HookProblem::EmptyCommand);
    }
    let secs = hook.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS);
    let timeout = Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|t| !t.is_zero() && secs <= MAX_TIMEOUT_SECS)
        .ok_or(HookProblem::Timeout(secs))?;
    Ok(Hook { command: hook.command.clone(), label: clip(&hook.command, LABEL_MAX), timeout, timeout_secs: secs })
}

/// `text` cut to `max` characters, with `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
