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

use crate::process::{Child, Status, Stream};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::process::Command;
use std::time::{Duration, Instant};

/// Seconds a hook may run when its configuration names no `timeout`.
pub(crate) const DEFAULT_TIMEOUT_SECS: f64 = 60.0;
/// Longest `timeout` accepted, in seconds (one day).
pub(crate) const MAX_TIMEOUT_SECS: f64 = 86_400.0;
/// Bytes kept of each of a hook's output streams; the rest is discarded.
const OUTPUT_CAP: usize = 1 << 20;
/// Characters of a command kept when naming a hook in messages.
const LABEL_MAX: usize = 80;
/// Characters of stdout quoted when it is not a JSON object.
const QUOTE_MAX: usize = 200;
/// Characters kept of a reason or context text taken from a hook's output.
const TEXT_MAX: usize = 10_000;
/// Lines of stderr quoted in a failure message.
const STDERR_LINES: usize = 5;
/// Characters of stderr quoted in a failure message.
const STDERR_MAX: usize = 500;

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

    fn index(self) -> usize {
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

/// The combined answer of every hook that ran.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// Combined permission decision (PreToolUse): deny > ask > allow; `None`
    /// when no hook expressed one.
    pub decision: Option<HookDecision>,
    /// The last `updatedInput` given by a hook that did not deny (PreToolUse);
    /// `None` when the combined decision is a deny.
    pub updated_input: Option<Value>,
    /// Every `additionalContext` (and, for Post events, `decision: "block"`
    /// reasons, exit-2 stderr and failure notes), in hook order.
    pub additional_context: Vec<String>,
    /// `continue: false`: stop, with `stopReason` (or a default text naming
    /// the hook). The first hook's, in hook order.
    pub stop: Option<String>,
    /// Which hooks ran (their clipped command) and how long they took.
    pub ran: Vec<(String, Duration)>,
}

/// A permission decision expressed by hooks. `hook` names the hook(s) (their
/// command, clipped to about 80 characters; several are joined with `, `).
#[derive(Clone, Debug, PartialEq)]
pub enum HookDecision {
    /// Allow the call (a deny rule still beats it).
    Allow {
        /// Why, if the hook said.
        reason: Option<String>,
        /// Which hook(s).
        hook: String,
    },
    /// Refuse the call. Several denying hooks' reasons are joined with `; `.
    Deny {
        /// Why.
        reason: String,
        /// Which hook(s).
        hook: String,
    },
    /// Ask the user.
    Ask {
        /// Why, if the hook said.
        reason: Option<String>,
        /// Which hook(s).
        hook: String,
    },
}

/// A hooks configuration that cannot be used; each names where it is.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum HookConfigError {
    #[error("{origin}: hooks: unknown event `{event}` (toolhost runs PreToolUse, PostToolUse and PostToolUseFailure)")]
    UnknownEvent { origin: String, event: String },
    #[error("{at}: invalid matcher `{matcher}`: {reason}")]
    Matcher { at: String, matcher: String, reason: String },
    #[error("{at}: {problem}")]
    Hook { at: String, problem: HookProblem },
}

/// What is wrong with one hook's configuration.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum HookProblem {
    #[error("unsupported hook type `{0}` (the only supported type is \"command\")")]
    UnsupportedType(String),
    #[error("empty command")]
    EmptyCommand,
    #[error("timeout must be a positive number of seconds up to {MAX_TIMEOUT_SECS}, not {0}")]
    Timeout(f64),
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

/// Permission levels, weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Allow,
    Ask,
    Deny,
}

/// One hook's answer, read for its event.
#[derive(Debug, Default)]
struct Reply {
    /// PreToolUse only.
    decision: Option<(Level, Option<String>)>,
    /// PreToolUse only.
    updated_input: Option<Value>,
    context: Vec<String>,
    stop: Option<String>,
}

/// Runs one hook and reads its answer; failures are turned into their
/// fail-closed reply.
fn run_hook(event: HookEvent, hook: &Hook, stdin: &[u8], cwd: &str) -> (Reply, Duration) {
    let started = Instant::now();
    let result = execute(hook, stdin, cwd).and_then(|exit| interpret(event, hook, exit));
    let took = started.elapsed();
    let reply = match result {
        Ok(reply) => reply,
        Err(message) => failure_reply(event, hook, message),
    };
    tracing::debug!(event = event.as_str(), hook = %hook.label, ?took, "hook ran");
    (reply, took)
}

/// The reply of a hook that failed with `message`: a deny before a call, a
/// note for the model after one.
fn failure_reply(event: HookEvent, hook: &Hook, message: String) -> Reply {
    tracing::warn!(event = event.as_str(), hook = %hook.label, "{message}");
    match event {
        HookEvent::PreToolUse => Reply {
            decision: Some((Level::Deny, Some(format!("{message} — the call is not allowed on its say-so")))),
            ..Reply::default()
        },
        HookEvent::PostToolUse | HookEvent::PostToolUseFailure => Reply { context: vec![message], ..Reply::default() },
    }
}

/// How a hook that ran to its end exited.
struct Exit {
    code: i32,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// What hooks that exited as `exits` (code, stdout, stderr) give for
/// `event`, read and combined as [`Hooks::run`] reads and combines them,
/// without running anything: the entry of the fuzz target for hook output.
#[doc(hidden)]
pub fn outcome_of_exits(event: HookEvent, exits: Vec<(i32, Vec<u8>, Vec<u8>)>) -> Outcome {
    let hooks: Vec<Hook> = (0..exits.len())
        .map(|i| Hook {
            command: format!("hook{i}"),
            label: format!("hook{i}"),
            timeout: Duration::from_secs(1),
            timeout_secs: 1.0,
        })
        .collect();
    let replies = hooks.iter().zip(exits).map(|(hook, (code, stdout, stderr))| {
        let reply = match interpret(event, hook, Exit { code, stdout, stderr }) {
            Ok(reply) => reply,
            Err(message) => failure_reply(event, hook, message),
        };
        (hook, reply, Duration::ZERO)
    });
    combine(replies)
}

/// Reads an exit: 0 = JSON (or nothing), 2 = block, anything else = failure.
fn interpret(event: HookEvent, hook: &Hook, exit: Exit) -> Result<Reply, String> {
    match exit.code {
        0 => parse_output(event, hook, &exit.stdout)
            .map_err(|why| format!("hook `{}` failed: {why}{}", hook.label, stderr_tail(&exit.stderr))),
        2 => {
            let stderr = clip(String::from_utf8_lossy(&exit.stderr).trim(), TEXT_MAX);
            Ok(match event {
                HookEvent::PreToolUse => {
                    let reason = if stderr.is_empty() { format!("blocked by hook `{}`", hook.label) } else { stderr };
                    Reply { decision: Some((Level::Deny, Some(reason))), ..Reply::default() }
                }
                HookEvent::PostToolUse | HookEvent::PostToolUseFailure => {
                    let note = if stderr.is_empty() {
                        format!("hook `{}` objected to the result (exit code 2) without saying why", hook.label)
                    } else {
                        stderr
                    };
                    Reply { context: vec![note], ..Reply::default() }
                }
            })
        }
        code => Err(format!("hook `{}` failed: exit code {code}{}", hook.label, stderr_tail(&exit.stderr))),
    }
}

/// A hook's JSON answer.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawOutput {
    #[serde(rename = "continue")]
    continue_: Option<bool>,
    stop_reason: Option<String>,
    decision: Option<String>,
    reason: Option<String>,
    hook_specific_output: Option<RawSpecific>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSpecific {
    hook_event_name: Option<String>,
    permission_decision: Option<String>,
    permission_decision_reason: Option<String>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
}

/// Reads the stdout of a hook that exited 0; `Err` says why it is unusable.
fn parse_output(event: HookEvent, hook: &Hook, stdout: &[u8]) -> Result<Reply, String> {
    let text = String::from_utf8_lossy(stdout);
    let text = text.trim();
    if text.is_empty() {
        return Ok(Reply::default());
    }
    let value = match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => value,
        Ok(_) | Err(_) => return Err(format!("printed output that is not a JSON object: {}", clip(text, QUOTE_MAX))),
    };
    let raw: RawOutput = serde_json::from_value(value).map_err(|e| format!("printed invalid output: {e}"))?;
    let pre = event == HookEvent::PreToolUse;
    let mut reply = Reply::default();
    let text_of = |s: Option<String>| s.map(|s| clip(s.trim(), TEXT_MAX)).filter(|s| !s.is_empty());

    if raw.continue_ == Some(false) {
        reply.stop =
            Some(text_of(raw.stop_reason).unwrap_or_else(|| format!("hook `{}` stopped the agent", hook.label)));
    }
    let reason = text_of(raw.reason);
    match raw.decision.as_deref() {
        None => {}
        Some("block") if pre => {
            let reason = reason.unwrap_or_else(|| format!("blocked by hook `{}`", hook.label));
            reply.decision = Some((Level::Deny, Some(reason)));
        }
        Some("block") => reply
            .context
            .push(reason.unwrap_or_else(|| format!("hook `{}` objected to the result without saying why", hook.label))),
        Some("approve") if pre => reply.decision = Some((Level::Allow, reason)),
        // Meaningless after the call.
        Some("approve") => {}
        Some(other) => return Err(format!("unknown `decision` {other:?} (expected \"block\" or \"approve\")")),
    }
    if let Some(specific) = raw.hook_specific_output {
        if let Some(name) = specific.hook_event_name.as_deref()
            && name != event.as_str()
        {
            return Err(format!("answered for event {name:?} in a {event} hook"));
        }
        let reason = text_of(specific.permission_decision_reason);
        let level = match specific.permission_decision.as_deref() {
            None => None,
            Some("allow") => Some(Level::Allow),
            Some("ask") => Some(Level::Ask),
            Some("deny") => Some(Level::Deny),
            Some(other) => {
                return Err(format!(
                    "unknown `permissionDecision` {other:?} (expected \"allow\", \"deny\" or \"ask\")"
                ));
            }
        };
        if let Some(level) = level
            && pre
        {
            let reason = match level {
                Level::Deny => Some(reason.unwrap_or_else(|| format!("denied by hook `{}`", hook.label))),
                Level::Allow | Level::Ask => reason,
            };
            // Within one hook, the stronger of `decision` and `permissionDecision`.
            if reply.decision.as_ref().is_none_or(|(l, _)| level >= *l) {
                reply.decision = Some((level, reason));
            }
        }
        match specific.updated_input {
            None => {}
            Some(input @ Value::Object(_)) if pre => reply.updated_input = Some(input),
            // Too late to rewrite the call.
            Some(Value::Object(_)) => {}
            Some(_) => return Err("gave an `updatedInput` that is not a JSON object".into()),
        }
        if let Some(context) = text_of(specific.additional_context) {
            reply.context.push(context);
        }
    }
    Ok(reply)
}

/// Combines the replies of the hooks that ran, in hook order.
fn combine<'h>(replies: impl Iterator<Item = (&'h Hook, Reply, Duration)>) -> Outcome {
    let mut outcome = Outcome::default();
    // Per level: (reasons, hooks).
    let mut levels: [(Vec<String>, Vec<&str>); 3] = Default::default();
    let mut updated_input = None;
    for (hook, reply, took) in replies {
        outcome.ran.push((hook.label.clone(), took));
        let denied = match reply.decision {
            Some((level, reason)) => {
                let (reasons, hooks) = &mut levels[level as usize];
                reasons.extend(reason);
                hooks.push(&hook.label);
                level == Level::Deny
            }
            None => false,
        };
        if !denied && reply.updated_input.is_some() {
            updated_input = reply.updated_input;
        }
        outcome.additional_context.extend(reply.context);
        if outcome.stop.is_none() {
            outcome.stop = reply.stop;
        }
    }
    let [allow, ask, deny] = levels;
    let joined = |reasons: Vec<String>| Some(reasons.join("; ")).filter(|r| !r.is_empty());
    outcome.decision = if !deny.1.is_empty() {
        let hook = deny.1.join(", ");
        let reason = joined(deny.0).unwrap_or_else(|| format!("denied by hook `{hook}`"));
        Some(HookDecision::Deny { reason, hook })
    } else if !ask.1.is_empty() {
        Some(HookDecision::Ask { reason: joined(ask.0), hook: ask.1.join(", ") })
    } else if !allow.1.is_empty() {
        Some(HookDecision::Allow { reason: joined(allow.0), hook: allow.1.join(", ") })
    } else {
        None
    };
    if !matches!(outcome.decision, Some(HookDecision::Deny { .. })) {
        outcome.updated_input = updated_input;
    }
    outcome
}

/// Runs `hook` to its end or its timeout (then its whole process group is
/// killed). `Err` is the whole failure message.
fn execute(hook: &Hook, stdin: &[u8], cwd: &str) -> Result<Exit, String> {
    let deadline = Instant::now() + hook.timeout;
    let fail = |why: String| format!("hook `{}` failed: {why}", hook.label);
    let timed_out = || format!("hook `{}` timed out after {} s", hook.label, hook.timeout_secs);
    let mut command = Command::new("sh");
    command.arg("-c").arg(&hook.command);
    if cwd.is_empty() {
        command.env_remove("TOOLHOST_PROJECT_DIR");
    } else {
        command.current_dir(cwd).env("TOOLHOST_PROJECT_DIR", cwd);
    }
    let mut child = Child::start(&mut command, Some(stdin.to_vec()))
        .map_err(|e| fail(format!("could not start `sh` in `{cwd}`: {e}")))?;
    // Everything is read (the first OUTPUT_CAP bytes of each stream kept), so
    // a chatty hook never blocks; a process it left behind that holds the
    // pipes open makes it time out.
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    while let Some(chunks) = child.read(deadline) {
        for (stream, data) in chunks {
            let kept = match stream {
                Stream::Stdout => &mut stdout,
                Stream::Stderr => &mut stderr,
            };
            let room = OUTPUT_CAP.saturating_sub(kept.len());
            kept.extend_from_slice(&data[..data.len().min(room)]);
        }
        if Instant::now() >= deadline {
            return Err(timed_out());
        }
    }
    if !child.wait_exit(deadline, &mut || false) {
        return Err(timed_out());
    }
    match child.reap() {
        Status::Exited(code) => Ok(Exit { code, stdout, stderr }),
        Status::Signaled(signal) => Err(fail(format!("killed by signal {signal}{}", stderr_tail(&stderr)))),
    }
}

/// ` (stderr: …)` with the last lines of `stderr`, or nothing.
fn stderr_tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = lines[lines.len().saturating_sub(STDERR_LINES)..].join(" / ");
    let chars = tail.chars().count();
    let tail = if chars > STDERR_MAX {
        let skipped: String = tail.chars().skip(chars - STDERR_MAX).collect();
        format!("…{skipped}")
    } else {
        tail
    };
    format!(" (stderr: {tail})")
}

/// `text` cut to `max` characters, with `…` when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;

    const ORIGIN: &str = "/home/u/.toolhost/settings.json";

    /// A temporary directory holding the scripts and what they write.
    struct Dir(tempfile::TempDir);

    impl Dir {
        fn new() -> Dir {
            Dir(tempfile::tempdir().expect("a temp dir"))
        }

        fn path(&self, name: &str) -> PathBuf {
            self.0.path().join(name)
        }

        fn cwd(&self) -> &str {
            self.0.path().to_str().expect("a UTF-8 temp dir")
        }

        /// Writes a shell script and returns the command running it (through
        /// `sh`, so that no executable file is open for writing while another
        /// test thread forks).
        fn script(&self, name: &str, body: &str) -> String {
            let path = self.path(name);
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write the script");
            format!("sh '{}'", path.display())
        }

        fn read(&self, name: &str) -> String {
            std::fs::read_to_string(self.path(name)).expect("read what the hook wrote")
        }
    }

    fn compile(config: Value) -> Hooks {
        let config: HooksConfig = serde_json::from_value(config).expect("a valid configuration");
        Hooks::compile(&[(config, ORIGIN.into())]).expect("compiles")
    }

    fn compile_err(config: Value) -> String {
        let config: HooksConfig = serde_json::from_value(config).expect("deserializes");
        Hooks::compile(&[(config, ORIGIN.into())]).expect_err("a configuration error").to_string()
    }

    /// PreToolUse hooks for every tool, each `(command, timeout)`.
    fn pre_hooks(commands: &[(&str, f64)]) -> Hooks {
        let hooks: Vec<Value> =
            commands.iter().map(|(c, t)| json!({"type": "command", "command": c, "timeout": t})).collect();
        compile(json!({"PreToolUse": [{"hooks": hooks}]}))
    }

    fn input<'a>(cwd: &'a str, tool_input: &'a Value) -> EventInput<'a> {
        EventInput {
            session_id: "sess-1",
            cwd,
            permission_mode: "default",
            tool_name: "Bash",
            tool_input,
            tool_use_id: "toolu_01",
            tool_response: None,
            error: None,
        }
    }

    fn run_pre(hooks: &Hooks, dir: &Dir) -> Outcome {
        let tool_input = json!({"command": "rm -rf /"});
        hooks.run(HookEvent::PreToolUse, &input(dir.cwd(), &tool_input))
    }

    /// A hook printing `output` as its JSON answer.
    fn answering(dir: &Dir, name: &str, output: Value) -> String {
        dir.script(name, &format!("cat >/dev/null\ncat <<'JSON'\n{output}\nJSON"))
    }

    fn deny_reason(outcome: &Outcome) -> &str {
        match &outcome.decision {
            Some(HookDecision::Deny { reason, .. }) => reason,
            other => panic!("expected a deny, got {other:?}"),
        }
    }

    #[test]
    fn allow_via_json() {
        let dir = Dir::new();
        let cmd = answering(
            &dir,
            "allow.sh",
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                   "permissionDecisionReason": "looks fine"}}),
        );
        let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
        assert_eq!(
            outcome.decision,
            Some(HookDecision::Allow { reason: Some("looks fine".into()), hook: cmd.clone() })
        );
        assert_eq!(outcome.updated_input, None);
        assert_eq!(outcome.stop, None);
        assert_eq!(outcome.ran.len(), 1);
        assert_eq!(outcome.ran[0].0, cmd);
    }

    #[test]
    fn deny_via_json() {
        let dir = Dir::new();
        let cmd = answering(
            &dir,
            "deny.sh",
            json!({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no rm"}}),
        );
        let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
        assert_eq!(outcome.decision, Some(HookDecision::Deny { reason: "no rm".into(), hook: cmd }));
    }

    #[test]
    fn ask_via_json() {
        let dir = Dir::new();
        let cmd = answering(&dir, "ask.sh", json!({"hookSpecificOutput": {"permissionDecision": "ask"}}));
        let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
        assert_eq!(outcome.decision, Some(HookDecision::Ask { reason: None, hook: cmd }));
    }

    #[test]
    fn legacy_decisions() {
        let dir = Dir::new();
        let approve = answering(&dir, "approve.sh", json!({"decision": "approve", "reason": "ok"}));
        let outcome = run_pre(&pre_hooks(&[(&approve, 10.0)]), &dir);
        assert_eq!(outcome.decision, Some(HookDecision::Allow { reason: Some("ok".into()), hook: approve }));
        let block = answering(&dir, "block.sh", json!({"decision": "block"}));
        let outcome = run_pre(&pre_hooks(&[(&block, 10.0)]), &dir);
        assert_eq!(deny_reason(&outcome), format!("blocked by hook `{block}`"));
    }

    #[test]
    fn updated_input() {
        let dir = Dir::new();
        let cmd = answering(
            &dir,
            "rewrite.sh",
            json!({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "ls"}}}),
        );
        let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
        assert!(matches!(outcome.decision, Some(HookDecision::Allow { .. })));
        assert_eq!(outcome.updated_input, Some(json!({"command": "ls"})));
    }

    #[test]
    fn exit_2_blocks_with_stderr() {
        let dir = Dir::new();
        let cmd = dir.script("block.sh", "echo 'first line' >&2\necho '  rm is not allowed here  ' >&2\nexit 2");
        let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
        assert_eq!(
            outcome.decision,
            Some(HookDecision::Deny { reason: "first line\n  rm is not allowed here".into(), hook: cmd })
        );

        let silent = dir.script("silent.sh", "exit 2");
        let outcome = run_pre(&pre_hooks(&[(&silent, 10.0)]), &dir);
        assert_eq!(deny_reason(&outcome), format!("blocked by hook `{silent}`"));
    }

    #[test]
    fn timeout_kills_the_process_group() {
        let dir = Dir::new();
        let cmd = dir.script("slow.sh", "echo $$ > shell.pid\nsleep 30 &\necho $! > sleep.pid\nwait");
        let started = Instant::now();
        let outcome = run_pre(&pre_hooks(&[(&cmd, 0.5)]), &dir);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(5), "took {took:?}");
        let reason = deny_reason(&outcome);
        assert!(reason.contains(&format!("hook `{cmd}` timed out after 0.5 s")), "{reason}");
        assert!(reason.contains("not allowed on its say-so"), "{reason}");
        for file in ["shell.pid", "sleep.pid"] {
            let pid: libc::pid_t = dir.read(file).trim().parse().expect("a pid");
            assert!(toolhost_tests::wait_gone(pid, Duration::from_secs(3)), "{file}: {pid} is still running");
        }
    }

    #[test]
    fn output_left_open_by_a_background_process_times_out() {
        let dir = Dir::new();
        let cmd = dir.script("leak.sh", "sleep 30 &\necho $! > sleep.pid\necho '{}'");
        let started = Instant::now();
        let outcome = run_pre(&pre_hooks(&[(&cmd, 0.5)]), &dir);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(deny_reason(&outcome).contains("timed out"), "{outcome:?}");
        let pid: libc::pid_t = dir.read("sleep.pid").trim().parse().expect("a pid");
        assert!(toolhost_tests::wait_gone(pid, Duration::from_secs(3)), "{pid} is still running");
    }

    #[test]
    fn crash_fails_closed() {
        let dir = Dir::new();
        let cmd = dir.script("crash.sh", "echo 'noise' >&2\necho 'jq: command not found' >&2\nexit 1");
        let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
        assert_eq!(
            deny_reason(&outcome),
            format!(
                "hook `{cmd}` failed: exit code 1 (stderr: noise / jq: command not found) \
                 — the call is not allowed on its say-so"
            )
        );
    }

    #[test]
    fn killed_by_signal_fails_closed() {
        let dir = Dir::new();
        let outcome = run_pre(&pre_hooks(&[("kill -9 $$", 10.0)]), &dir);
        let reason = deny_reason(&outcome);
        assert!(reason.starts_with("hook `kill -9 $$` failed: killed by signal 9"), "{reason}");
    }

    #[test]
    fn garbage_output_fails_closed() {
        let dir = Dir::new();
        let cmd = dir.script("garbage.sh", "echo 'hello world'");
        let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
        let reason = deny_reason(&outcome);
        assert!(reason.contains("printed output that is not a JSON object: hello world"), "{reason}");
    }

    #[test]
    fn non_object_json_fails_closed() {
        let dir = Dir::new();
        for (i, output) in ["[1, 2]", "\"allow\"", "true"].iter().enumerate() {
            let cmd = dir.script(&format!("json{i}.sh"), &format!("echo '{output}'"));
            let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
            let reason = deny_reason(&outcome);
            assert!(reason.contains(&format!("not a JSON object: {output}")), "{reason}");
        }
    }

    #[test]
    fn unknown_permission_decision_fails_closed() {
        let dir = Dir::new();
        let cmd = answering(&dir, "maybe.sh", json!({"hookSpecificOutput": {"permissionDecision": "maybe"}}));
        let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
        let reason = deny_reason(&outcome);
        assert!(reason.contains("unknown `permissionDecision` \"maybe\""), "{reason}");
    }

    #[test]
    fn malformed_fields_fail_closed() {
        let dir = Dir::new();
        let outputs = [
            json!({"continue": "no"}),
            json!({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": "ls"}}),
            json!({"hookSpecificOutput": {"additionalContext": 3}}),
            json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "allow"}}),
            json!({"decision": "perhaps"}),
        ];
        for (i, output) in outputs.into_iter().enumerate() {
            let cmd = answering(&dir, &format!("bad{i}.sh"), output.clone());
            let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
            let reason = deny_reason(&outcome);
            assert!(reason.starts_with(&format!("hook `{cmd}` failed: ")), "{output}: {reason}");
            assert_eq!(outcome.updated_input, None);
        }
    }

    #[test]
    fn spawn_failure_fails_closed() {
        let hooks = pre_hooks(&[("true", 10.0)]);
        let tool_input = json!({});
        let outcome = hooks.run(HookEvent::PreToolUse, &input("/nonexistent/toolhost-hooks-test", &tool_input));
        assert!(deny_reason(&outcome).contains("could not start"), "{outcome:?}");
    }

    #[test]
    fn decisions_combine_deny_over_ask_over_allow() {
        let dir = Dir::new();
        let allow = answering(
            &dir,
            "allow.sh",
            json!({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "ls"}}}),
        );
        let ask = answering(
            &dir,
            "ask.sh",
            json!({"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "unsure"}}),
        );
        let deny = answering(
            &dir,
            "deny.sh",
            json!({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}}),
        );
        let deny2 = dir.script("deny2.sh", "echo 'never' >&2; exit 2");

        let outcome = run_pre(&pre_hooks(&[(&allow, 10.0), (&ask, 10.0), (&deny, 10.0)]), &dir);
        assert_eq!(outcome.decision, Some(HookDecision::Deny { reason: "no".into(), hook: deny.clone() }));
        assert_eq!(outcome.updated_input, None, "a deny discards updated input");
        assert_eq!(outcome.ran.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>(), [&allow, &ask, &deny]);

        let outcome = run_pre(&pre_hooks(&[(&allow, 10.0), (&ask, 10.0)]), &dir);
        assert_eq!(outcome.decision, Some(HookDecision::Ask { reason: Some("unsure".into()), hook: ask.clone() }));
        assert_eq!(outcome.updated_input, Some(json!({"command": "ls"})));

        let outcome = run_pre(&pre_hooks(&[(&deny, 10.0), (&allow, 10.0), (&deny2, 10.0)]), &dir);
        assert_eq!(
            outcome.decision,
            Some(HookDecision::Deny { reason: "no; never".into(), hook: format!("{deny}, {deny2}") })
        );
    }

    #[test]
    fn hooks_run_concurrently() {
        let dir = Dir::new();
        // Each hook marks its start, then waits (up to 10 s) for the other's
        // mark: run one after the other, the first would give up and fail.
        let rendezvous = |me: &str, other: &str| {
            format!(
                "touch {me}.started\ni=0\nwhile [ ! -e {other}.started ]; do\n  i=$((i+1))\n  \
                 [ $i -gt 200 ] && {{ echo 'alone' >&2; exit 1; }}\n  sleep 0.05\ndone\n\
                 echo '{{\"hookSpecificOutput\": {{\"permissionDecision\": \"allow\"}}}}'"
            )
        };
        let a = dir.script("a.sh", &rendezvous("a", "b"));
        let b = dir.script("b.sh", &rendezvous("b", "a"));
        let outcome = run_pre(&pre_hooks(&[(&a, 30.0), (&b, 30.0)]), &dir);
        assert_eq!(outcome.decision, Some(HookDecision::Allow { reason: None, hook: format!("{a}, {b}") }));
        assert_eq!(outcome.ran.len(), 2);
    }

    #[test]
    fn event_json_sent_to_the_hook() {
        let dir = Dir::new();
        let cmd = dir.script(
            "record.sh",
            "cat > \"$0.event.json\"\npwd -P > \"$0.cwd\"\nprintf %s \"$TOOLHOST_PROJECT_DIR\" > \"$0.env\"",
        );
        let hooks = compile(json!({
            "PreToolUse": [{"hooks": [{"type": "command", "command": cmd}]}],
            "PostToolUse": [{"hooks": [{"type": "command", "command": cmd}]}],
            "PostToolUseFailure": [{"hooks": [{"type": "command", "command": cmd}]}],
        }));
        let tool_input = json!({"command": "ls", "timeout": 5});
        let response = json!({"content": [{"type": "text", "text": "a\nb"}]});
        let base = input(dir.cwd(), &tool_input);
        let cases = [
            (HookEvent::PreToolUse, base, json!({})),
            (
                HookEvent::PostToolUse,
                EventInput { tool_response: Some(&response), ..base },
                json!({"tool_response": response}),
            ),
            (
                HookEvent::PostToolUseFailure,
                EventInput { error: Some("exit status 1"), ..base },
                json!({"error": "exit status 1"}),
            ),
        ];
        let event_file = format!("{}.event.json", dir.path("record.sh").display());
        for (event, input, extra) in cases {
            let outcome = hooks.run(event, &input);
            assert_eq!(outcome.ran.len(), 1);
            let got: Value = serde_json::from_str(&std::fs::read_to_string(&event_file).expect("the event file"))
                .expect("the hook got JSON");
            let mut want = json!({
                "session_id": "sess-1",
                "cwd": dir.cwd(),
                "permission_mode": "default",
                "hook_event_name": event.as_str(),
                "tool_name": "Bash",
                "tool_input": {"command": "ls", "timeout": 5},
                "tool_use_id": "toolu_01",
            });
            if let (Value::Object(want), Value::Object(extra)) = (&mut want, extra) {
                want.extend(extra);
            }
            assert_eq!(got, want, "{event}");
        }
        let canonical = std::fs::canonicalize(dir.cwd()).expect("canonical cwd");
        assert_eq!(dir.read("record.sh.cwd").trim(), canonical.to_str().expect("UTF-8"));
        assert_eq!(dir.read("record.sh.env"), dir.cwd());
    }

    #[test]
    fn matchers() {
        let hook = json!([{"type": "command", "command": "true"}]);
        let only = |matcher: Value| {
            let group = match matcher {
                Value::Null => json!({"hooks": hook}),
                m => json!({"matcher": m, "hooks": hook}),
            };
            compile(json!({"PreToolUse": [group]}))
        };
        let bash_write = only(json!("Bash|Write"));
        assert!(bash_write.any(HookEvent::PreToolUse, "Bash"));
        assert!(bash_write.any(HookEvent::PreToolUse, "Write"));
        assert!(!bash_write.any(HookEvent::PreToolUse, "Read"));
        assert!(!bash_write.any(HookEvent::PreToolUse, "BashOutput"));
        assert!(!bash_write.any(HookEvent::PostToolUse, "Bash"));

        let bas = only(json!("Bas"));
        assert!(!bas.any(HookEvent::PreToolUse, "Bash"));
        assert!(bas.any(HookEvent::PreToolUse, "Bas"));

        let mcp = only(json!("mcp__.*"));
        assert!(mcp.any(HookEvent::PreToolUse, "mcp__github__search"));
        assert!(!mcp.any(HookEvent::PreToolUse, "Read"));

        for all in [json!("*"), json!(""), Value::Null] {
            let hooks = only(all.clone());
            assert!(hooks.any(HookEvent::PreToolUse, "Bash"), "{all}");
            assert!(hooks.any(HookEvent::PreToolUse, "mcp__x__y"), "{all}");
        }

        let empty = Hooks::compile(&[(HooksConfig::default(), ORIGIN.into())]).expect("compiles");
        assert!(empty.is_empty());
        assert!(!bash_write.is_empty());

        // A hook that does not match does not run.
        let dir = Dir::new();
        let tool_input = json!({});
        let outcome =
            bash_write.run(HookEvent::PreToolUse, &EventInput { tool_name: "Read", ..input(dir.cwd(), &tool_input) });
        assert_eq!(outcome, Outcome::default());
    }

    #[test]
    fn the_same_command_runs_once() {
        let dir = Dir::new();
        let cmd = dir.script("count.sh", "echo run >> \"$0.count\"");
        let hooks = compile(json!({"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": cmd}]},
            {"hooks": [{"type": "command", "command": cmd}]},
        ]}));
        let outcome = run_pre(&hooks, &dir);
        assert_eq!(outcome.ran.len(), 1);
        assert_eq!(dir.read("count.sh.count"), "run\n");
    }

    #[test]
    fn configuration_errors_name_the_origin() {
        let err =
            compile_err(json!({"PostToolUse": [{"matcher": "Bash(", "hooks": [{"type": "command", "command": "x"}]}]}));
        assert!(err.starts_with(&format!("{ORIGIN}: hooks.PostToolUse[0]: invalid matcher `Bash(`")), "{err}");

        let err =
            compile_err(json!({"PreToolUse": [{"matcher": "a)|(b", "hooks": [{"type": "command", "command": "x"}]}]}));
        assert!(err.contains("invalid matcher `a)|(b`"), "{err}");

        let err = compile_err(json!({"PreToolUse": [
            {"hooks": [{"type": "command", "command": "x"}]},
            {"hooks": [{"type": "command", "command": "x"}, {"type": "prompt", "command": "y"}]},
        ]}));
        assert!(
            err.starts_with(&format!("{ORIGIN}: hooks.PreToolUse[1].hooks[1]: unsupported hook type `prompt`")),
            "{err}"
        );

        for timeout in [json!(0), json!(-1), json!(1e9)] {
            let err = compile_err(
                json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": timeout}]}]}),
            );
            assert!(err.contains("timeout must be a positive number"), "{err}");
        }
        let err = compile_err(json!({"PreToolUse": [{"hooks": [{"type": "command", "command": " "}]}]}));
        assert!(err.ends_with("empty command"), "{err}");

        // The second file is the bad one.
        let good: HooksConfig =
            serde_json::from_value(json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "x"}]}]}))
                .expect("deserializes");
        let bad: HooksConfig =
            serde_json::from_value(json!({"PreToolUse": [{"matcher": "[", "hooks": []}]})).expect("deserializes");
        let err = Hooks::compile(&[(good, "/a/settings.json".into()), (bad, "/b/settings.json".into())])
            .expect_err("an error")
            .to_string();
        assert!(err.starts_with("/b/settings.json: "), "{err}");
    }

    #[test]
    fn configuration_shape() {
        // Claude Code's other events are accepted and never run; typos are errors.
        let foreign: HooksConfig = serde_json::from_value(json!({"Stop": [], "SessionStart": []})).unwrap();
        assert!(Hooks::compile(&[(foreign, "f".into())]).unwrap().is_empty());
        let typo: HooksConfig = serde_json::from_value(json!({"PreToolUSE": []})).unwrap();
        let err = Hooks::compile(&[(typo, "f".into())]).unwrap_err().to_string();
        assert!(err.contains("PreToolUSE") && err.contains("PostToolUseFailure"), "{err}");
        assert!(serde_json::from_value::<HooksConfig>(json!({"PreToolUse": [{"hooks": [{"command": "x"}]}]})).is_err());
        assert!(
            serde_json::from_value::<HooksConfig>(json!({"PreToolUse": [{"hooks": [{"type": "command"}]}]})).is_err()
        );
        // Unknown keys of a group are tolerated.
        let config: HooksConfig = serde_json::from_value(json!({"PostToolUse": [
            {"matcher": "Edit", "comment": "format after edits", "hooks": [{"type": "command", "command": "fmt", "timeout": 2.5}]}
        ]}))
        .expect("deserializes");
        assert_eq!(
            config.post_tool_use,
            [MatcherGroup {
                matcher: Some("Edit".into()),
                hooks: vec![HookCommand { r#type: "command".into(), command: "fmt".into(), timeout: Some(2.5) }],
            }]
        );
    }

    #[test]
    fn continue_false_stops() {
        let dir = Dir::new();
        let first = answering(&dir, "stop1.sh", json!({"continue": false, "stopReason": "budget exhausted"}));
        let second = answering(&dir, "stop2.sh", json!({"continue": false}));
        let outcome = run_pre(&pre_hooks(&[(&first, 10.0), (&second, 10.0)]), &dir);
        assert_eq!(outcome.stop.as_deref(), Some("budget exhausted"));
        assert_eq!(outcome.decision, None);

        let outcome = run_pre(&pre_hooks(&[(&second, 10.0)]), &dir);
        assert_eq!(outcome.stop, Some(format!("hook `{second}` stopped the agent")));
    }

    #[test]
    fn post_tool_use_context_and_block() {
        let dir = Dir::new();
        let context = answering(
            &dir,
            "context.sh",
            json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "lint: 2 warnings"}}),
        );
        let block = answering(&dir, "block.sh", json!({"decision": "block", "reason": "tests now fail"}));
        let exit2 = dir.script("exit2.sh", "echo 'formatting changed the file' >&2; exit 2");
        let crash = dir.script("crash.sh", "exit 3");
        let hooks = compile(json!({"PostToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": context},
            {"type": "command", "command": block},
            {"type": "command", "command": exit2},
            {"type": "command", "command": crash},
        ]}]}));
        let tool_input = json!({"command": "ls"});
        let response = json!("a\nb");
        let outcome = hooks.run(
            HookEvent::PostToolUse,
            &EventInput { tool_response: Some(&response), ..input(dir.cwd(), &tool_input) },
        );
        assert_eq!(outcome.decision, None);
        assert_eq!(
            outcome.additional_context,
            [
                "lint: 2 warnings".to_string(),
                "tests now fail".into(),
                "formatting changed the file".into(),
                format!("hook `{crash}` failed: exit code 3"),
            ]
        );
        assert_eq!(outcome.ran.len(), 4);
    }

    #[test]
    fn floods_of_output_do_not_hang() {
        let dir = Dir::new();
        let stdout = dir.script("stdout.sh", "head -c 5000000 /dev/zero | tr '\\000' a");
        let outcome = run_pre(&pre_hooks(&[(&stdout, 30.0)]), &dir);
        let reason = deny_reason(&outcome);
        assert!(reason.contains("not a JSON object: aaaa"), "{}", clip(reason, 300));
        assert!(reason.len() < 1000);

        let stderr = dir.script(
            "stderr.sh",
            "head -c 5000000 /dev/zero | tr '\\000' e >&2\necho '{\"hookSpecificOutput\": {\"permissionDecision\": \"allow\"}}'",
        );
        let outcome = run_pre(&pre_hooks(&[(&stderr, 30.0)]), &dir);
        assert_eq!(outcome.decision, Some(HookDecision::Allow { reason: None, hook: stderr }));
    }

    #[test]
    fn long_commands_are_clipped_in_messages() {
        let long = format!("true {}", "x".repeat(200));
        let hooks = pre_hooks(&[(&long, 10.0)]);
        let dir = Dir::new();
        let outcome = run_pre(&hooks, &dir);
        assert_eq!(outcome.ran[0].0.chars().count(), LABEL_MAX + 1);
        assert!(outcome.ran[0].0.ends_with('…'));
    }
}
