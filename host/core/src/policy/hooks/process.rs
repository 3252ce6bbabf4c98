//! Running one hook: `sh -c COMMAND` in a process group of its own, the
//! event on its stdin, its output read through capped buffers, the whole
//! group killed at its timeout.

use super::Hook;
use super::HookEvent;
use super::output::{Exit, Reply, failure_reply, interpret, stderr_tail};
use crate::process::{Child, Status, Stream};
use std::process::Command;
use std::time::{Duration, Instant};

/// Bytes kept of each of a hook's output streams; the rest is discarded.
pub(super) const OUTPUT_CAP: usize = 1 << 20;

/// Runs one hook and reads its answer; failures are turned into their
/// fail-closed reply. Its span (`hook {event}`) is a child of `call`'s.
pub(super) fn run_hook(
    event: HookEvent,
    hook: &Hook,
    stdin: &[u8],
    cwd: &str,
    call: &tracing::Span,
) -> (Reply, Duration) {
    let span = tracing::info_span!(
        parent: call,
        "hook",
        otel.name = %format_args!("hook {}", event.as_str()),
        otel.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
        toolhost.hook.event = event.as_str(),
        toolhost.hook.command = %hook.label,
    );
    let _entered = span.enter();
    let started = Instant::now();
    let result = execute(hook, stdin, cwd).and_then(|exit| interpret(event, hook, exit));
    let took = started.elapsed();
    let reply = match result {
        Ok(reply) => reply,
        Err(message) => {
            span.record("otel.status_code", "error");
            span.record("error.type", "hook_failed");
            failure_reply(event, hook, message)
        }
    };
    tracing::debug!(?took, "hook ran");
    (reply, took)
}

/// Runs `hook` to its end or its timeout (then its whole process group is
/// killed). `Err` is the whole failure message.
pub(super) fn execute(hook: &Hook, stdin: &[u8], cwd: &str) -> Result<Exit, String> {
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
