//! `progress`: progress reports delivered to the caller as the call runs,
//! and log lines for the host's log.

use super::CallView;
use crate::contract::bindings::toolhost::tool::progress;
use std::sync::Arc;

/// Longest progress or log message kept, in bytes.
const MAX_MESSAGE: usize = 16 * 1024;
/// Most progress events one call may send; later ones are dropped.
const MAX_PROGRESS_EVENTS: u32 = 10_000;

/// The log line that makes the `log` import panic, in a build with the
/// `fault-injection` feature (the test suite's).
#[cfg(feature = "fault-injection")]
pub(crate) const FAULT_INJECTION_PANIC: &str = "toolhost:fault-injection:panic";

/// A progress report from a running call.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// The call reporting it.
    pub tool_use_id: String,
    /// What the tool says it is doing.
    pub message: String,
    /// Optional JSON data from the tool.
    pub data: Option<serde_json::Value>,
}

/// Where progress goes; called on the thread running the call, in order.
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

fn clip(mut s: String) -> String {
    if s.len() > MAX_MESSAGE {
        let mut cut = MAX_MESSAGE;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

impl progress::Host for CallView<'_> {
    fn report(&mut self, message: String, data: Option<String>) {
        let scope = &mut *self.scope;
        let Some(sink) = &scope.progress else { return };
        if scope.progress_sent >= MAX_PROGRESS_EVENTS {
            return;
        }
        scope.progress_sent += 1;
        let mut data: Option<serde_json::Value> = data.and_then(|d| serde_json::from_str(&d).ok());
        let message = if scope.secrets.is_empty() {
            message
        } else {
            if let Some(data) = &mut data {
                crate::secrets::mask_json(data, &scope.secrets);
            }
            crate::secrets::mask(&message, &scope.secrets)
        };
        sink(Progress { tool_use_id: scope.tool_use_id.clone(), message: clip(message), data });
    }

    fn log(&mut self, level: progress::LogLevel, message: String) {
        // Test builds only: a host function that fails, to show a fault of
        // the host ends one call and nothing else.
        #[cfg(feature = "fault-injection")]
        if message == FAULT_INJECTION_PANIC {
            panic!("fault injection: the log import panicked on purpose");
        }
        let message = clip(crate::secrets::mask(&message, &self.scope.secrets));
        let (tool, id) = (&*self.scope.tool, &self.scope.tool_use_id);
        match level {
            progress::LogLevel::Trace => tracing::trace!(tool, id, "{message}"),
            progress::LogLevel::Debug => tracing::debug!(tool, id, "{message}"),
            progress::LogLevel::Info => tracing::info!(tool, id, "{message}"),
            progress::LogLevel::Warn => tracing::warn!(tool, id, "{message}"),
            progress::LogLevel::Error => tracing::error!(tool, id, "{message}"),
        }
    }
}
