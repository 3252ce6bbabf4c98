//! A hook's answer (its exit code, and the JSON object on its stdout) read
//! for its event, and the answers of every hook that ran combined into one
//! outcome: fail-closed before a call, a note for the model after one.

use super::Hook;
use super::HookEvent;
pub(super) use crate::config::hooks::clip;
use serde::Deserialize;
use serde_json::Value;
use std::time::Duration;

/// Characters of stdout quoted when it is not a JSON object.
pub(super) const QUOTE_MAX: usize = 200;

/// Characters kept of a reason or context text taken from a hook's output.
pub(super) const TEXT_MAX: usize = 10_000;

/// Lines of stderr quoted in a failure message.
pub(super) const STDERR_LINES: usize = 5;

/// Characters of stderr quoted in a failure message.
pub(super) const STDERR_MAX: usize = 500;

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

/// Permission levels, weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Level {
    Allow,
    Ask,
    Deny,
}

/// One hook's answer, read for its event.
#[derive(Debug, Default)]
pub(super) struct Reply {
    /// PreToolUse only.
    pub(super) decision: Option<(Level, Option<String>)>,
    /// PreToolUse only.
    pub(super) updated_input: Option<Value>,
    pub(super) context: Vec<String>,
    pub(super) stop: Option<String>,
}

/// The reply of a hook that failed with `message`: a deny before a call, a
/// note for the model after one.
pub(super) fn failure_reply(event: HookEvent, hook: &Hook, message: String) -> Reply {
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
pub(super) struct Exit {
    pub(super) code: i32,
    pub(super) stdout: Vec<u8>,
    pub(super) stderr: Vec<u8>,
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
pub(super) fn interpret(event: HookEvent, hook: &Hook, exit: Exit) -> Result<Reply, String> {
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
pub(super) struct RawOutput {
    #[serde(rename = "continue")]
    continue_: Option<bool>,
    stop_reason: Option<String>,
    decision: Option<String>,
    reason: Option<String>,
    hook_specific_output: Option<RawSpecific>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawSpecific {
    hook_event_name: Option<String>,
    permission_decision: Option<String>,
    permission_decision_reason: Option<String>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
}

/// Reads the stdout of a hook that exited 0; `Err` says why it is unusable.
pub(super) fn parse_output(event: HookEvent, hook: &Hook, stdout: &[u8]) -> Result<Reply, String> {
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
pub(super) fn combine<'h>(replies: impl Iterator<Item = (&'h Hook, Reply, Duration)>) -> Outcome {
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

/// ` (stderr: …)` with the last lines of `stderr`, or nothing.
pub(super) fn stderr_tail(stderr: &[u8]) -> String {
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
