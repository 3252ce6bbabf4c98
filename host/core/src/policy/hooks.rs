//! PreToolUse / PostToolUse / PostToolUseFailure hooks (SPEC §5).
//!
//! Hooks are external commands configured in settings files and run around
//! tool calls, Claude-Code style. Each one receives the event as JSON on its
//! stdin and answers by its exit code (2 = block, stderr is the reason) or by
//! a JSON object on its stdout.
//!
//! What the host guarantees:
//! - every hook runs as `sh -c COMMAND` in its own process group, killed whole
//!   at its timeout;
//! - the matching hooks of one event run concurrently, one thread each;
//! - output is read through capped buffers (the rest is read and discarded, so
//!   a chatty hook never blocks);
//! - failures fail closed: a PreToolUse hook that crashes, times out or
//!   answers nonsense denies the call; a failing Post hook leaves a note for
//!   the model and a warning in the log.
//!
//! The module's parts: [`config`] (the `hooks` objects as written, and what
//! is wrong with one), this file (compiled once: matchers built, the hooks
//! of an event found and run together), `process` (running one hook) and
//! `output` (reading a hook's answer, and combining the answers).

mod config;
mod output;
mod process;

use config::FOREIGN_EVENTS;
pub(crate) use config::{DEFAULT_TIMEOUT_SECS, HookCommand, MAX_TIMEOUT_SECS};
pub use config::{HookConfigError, HookEvent, HookProblem, HooksConfig};
pub(crate) use output::Outcome;
pub use output::{HookDecision, outcome_of_exits};
use output::{Reply, clip, combine, failure_reply};
use process::run_hook;
use regex::Regex;
use serde_json::{Map, Value};
use std::time::Duration;

/// Characters of a command kept when naming a hook in messages.
const LABEL_MAX: usize = 80;

/// What a hook receives as JSON on its stdin.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EventInput<'a> {
    /// The session the call belongs to.
    pub session_id: &'a str,
    /// The working directory; also the hook's cwd and `TOOLHOST_PROJECT_DIR`.
    pub cwd: &'a str,
    /// The permission mode in force.
    pub permission_mode: &'a str,
    /// The tool called.
    pub tool_name: &'a str,
    /// The call's input.
    pub tool_input: &'a Value,
    /// The call's id.
    pub tool_use_id: &'a str,
    /// The call's result (PostToolUse only).
    pub tool_response: Option<&'a Value>,
    /// Why the call failed (PostToolUseFailure only).
    pub error: Option<&'a str>,
}

impl EventInput<'_> {
    /// The JSON object sent to the hooks of `event`.
    pub(crate) fn json(&self, event: HookEvent) -> Value {
        let mut map = Map::new();
        map.insert("session_id".into(), self.session_id.into());
        map.insert("cwd".into(), self.cwd.into());
        map.insert("permission_mode".into(), self.permission_mode.into());
        map.insert("hook_event_name".into(), event.as_str().into());
        map.insert("tool_name".into(), self.tool_name.into());
        map.insert("tool_input".into(), self.tool_input.clone());
        map.insert("tool_use_id".into(), self.tool_use_id.into());
        if let Some(response) = self.tool_response {
            map.insert("tool_response".into(), response.clone());
        }
        if let Some(error) = self.error {
            map.insert("error".into(), error.into());
        }
        Value::Object(map)
    }
}

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
struct Hook {
    command: String,
    /// The command clipped, for messages.
    label: String,
    timeout: Duration,
    /// The timeout as configured, for messages.
    timeout_secs: f64,
}

impl Hooks {
    /// Whether no hook is configured at all.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
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
    fn matching(&self, event: HookEvent, tool: &str) -> Vec<&Hook> {
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

    /// Runs every hook of `event` matching `input.tool_name`, concurrently
    /// (one thread each), and combines their answers.
    pub(crate) fn run(&self, event: HookEvent, input: &EventInput<'_>) -> Outcome {
        let hooks = self.matching(event, input.tool_name);
        if hooks.is_empty() {
            return Outcome::default();
        }
        let stdin = input.json(event).to_string().into_bytes();
        let cwd = input.cwd;
        let replies: Vec<(Reply, Duration)> = if let [hook] = hooks.as_slice() {
            vec![run_hook(event, hook, &stdin, cwd)]
        } else {
            std::thread::scope(|scope| {
                let pending: Vec<_> = hooks
                    .iter()
                    .map(|&hook| {
                        let stdin = &stdin;
                        let spawned = std::thread::Builder::new()
                            .name("hook".into())
                            .spawn_scoped(scope, move || run_hook(event, hook, stdin, cwd));
                        (hook, spawned)
                    })
                    .collect();
                pending
                    .into_iter()
                    .map(|(hook, spawned)| match spawned {
                        Ok(handle) => handle.join().unwrap_or_else(|_| {
                            (
                                failure_reply(
                                    event,
                                    hook,
                                    format!("hook `{}` failed: its runner panicked", hook.label),
                                ),
                                Duration::ZERO,
                            )
                        }),
                        // No thread to spare: run it here.
                        Err(_) => run_hook(event, hook, &stdin, cwd),
                    })
                    .collect()
            })
        };
        combine(hooks.iter().zip(replies).map(|(hook, (reply, took))| (*hook, reply, took)))
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

#[cfg(test)]
mod tests;
