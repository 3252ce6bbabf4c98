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
//! The module's parts: the configuration is the settings' (`settings/hooks.rs`:
//! the `hooks` objects as written, what is wrong with one, and all of them
//! compiled, matchers built); this file runs the hooks of an event that match
//! a tool together, `process` one hook, and `output` reads a hook's answer
//! and combines the answers.

mod output;
mod process;

pub(crate) use crate::config::hooks::{Hook, Hooks};
pub(crate) use crate::config::hooks::{HookConfigError, HookEvent};
pub(crate) use output::Outcome;
pub use output::{HookDecision, outcome_of_exits};
use output::{Reply, combine, failure_reply};
use process::run_hook;
use serde_json::{Map, Value};
use std::time::Duration;

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

impl Hooks {
    /// Runs every hook of `event` matching `input.tool_name`, concurrently
    /// (one thread each), and combines their answers.
    pub(crate) fn run(&self, event: HookEvent, input: &EventInput<'_>) -> Outcome {
        let hooks = self.matching(event, input.tool_name);
        if hooks.is_empty() {
            return Outcome::default();
        }
        let stdin = input.json(event).to_string().into_bytes();
        let cwd = input.cwd;
        // Each hook's span is a child of the call's, on whichever thread.
        let call = &tracing::Span::current();
        let replies: Vec<(Reply, Duration)> = if let [hook] = hooks.as_slice() {
            vec![run_hook(event, hook, &stdin, cwd, call)]
        } else {
            std::thread::scope(|scope| {
                let pending: Vec<_> = hooks
                    .iter()
                    .map(|&hook| {
                        let stdin = &stdin;
                        let spawned = std::thread::Builder::new()
                            .name("hook".into())
                            .spawn_scoped(scope, move || run_hook(event, hook, stdin, cwd, call));
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
                        Err(_) => run_hook(event, hook, &stdin, cwd, call),
                    })
                    .collect()
            })
        };
        combine(hooks.iter().zip(replies).map(|(hook, (reply, took))| (*hook, reply, took)))
    }
}

#[cfg(test)]
mod tests;
