//! The calls a Script program makes: each goes through the whole pipeline
//! as if the model had made it, on an executor of their own (the
//! scheduler's rules: concurrency-safe calls started together run
//! together, the others one at a time), in the script's session, asking
//! whoever answers the script's asks. Their progress goes out as the
//! script's; each result reaches the script once.

use super::Host;
use crate::imports::{Finished, InnerCalls, Progress, ProgressSink, Waited};
use crate::pipeline::{ScriptStart, ToolUse};
use crate::policy::Approver;
use crate::registry::Role;
use crate::scheduler::{CallSetup, Calls, Config, DEFAULT_MAX_CONCURRENCY, Executor, Update};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The most tool calls one run of a script may start.
pub const MAX_SCRIPT_CALLS: usize = 1000;

/// The most calls of one script running at once (the scheduler's rules
/// decide which may run together).
const MAX_CONCURRENCY: usize = DEFAULT_MAX_CONCURRENCY;

/// The calls of one run of a script.
pub(crate) struct ScriptRun {
    host: Host,
    executor: Executor,
    /// The Script call's id: its calls' ids are `<id>/<n>`.
    parent: Arc<str>,
    progress: Option<ProgressSink>,
    approver: Option<Arc<dyn Approver>>,
    identity: Option<Arc<str>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    started: usize,
    /// Calls started and not yet handed to the script: id → (number, tool).
    going: HashMap<String, (u32, String)>,
}

impl ScriptRun {
    pub(crate) fn new(host: Host, start: ScriptStart) -> ScriptRun {
        let ScriptStart { session, parent, progress, approver, identity } = start;
        let config = Config { max_concurrency: MAX_CONCURRENCY, calls: Calls::Independent, approver: approver.clone() };
        let executor = Executor::with_config(host.clone(), session, config);
        ScriptRun {
            host,
            executor,
            parent: Arc::from(parent.as_str()),
            progress,
            approver,
            identity,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the script is handed for `result` of a call of `tool`: its text,
    /// and its structured content where the tool declares an output schema.
    fn finished(&self, number: u32, tool: &str, result: crate::pipeline::ToolResult) -> Finished {
        let declares = self.host.tool(tool).is_some_and(|t| t.spec.output_schema.is_some());
        let structured = match (&result.structured, declares && !result.is_error) {
            (Some(value), true) => Some(value.to_string()),
            _ => None,
        };
        Finished { id: number, is_error: result.is_error, text: result.text(), structured }
    }
}

impl InnerCalls for ScriptRun {
    fn start(&self, name: &str, input: &str) -> Result<u32, String> {
        if let Some(tool) = self.host.tool(name).filter(|t| t.role() == Some(Role::RunsPrograms)) {
            let name = &tool.spec.name;
            return Err(format!(
                "A script cannot call {name}: call the tools directly, in this script (use functions and \
                 Promise.all to structure the work)."
            ));
        }
        let input = serde_json::from_str(input).map_err(|e| format!("the input of {name} is not JSON: {e}"))?;
        let mut state = self.lock();
        if state.started >= MAX_SCRIPT_CALLS {
            return Err(format!(
                "This script already started {MAX_SCRIPT_CALLS} tool calls, the most one run may. Do the rest in \
                 another Script call, or with fewer, larger calls (a Grep over a directory instead of one per file)."
            ));
        }
        state.started += 1;
        let number = state.started as u32;
        let id = format!("{}/{number}", self.parent);
        state.going.insert(id.clone(), (number, name.to_string()));
        drop(state);
        // Its progress goes out as the script's, naming the call.
        let progress = self.progress.clone().map(|sink| -> ProgressSink {
            let (parent, tool) = (self.parent.to_string(), name.to_string());
            Arc::new(move |p: Progress| {
                let data = serde_json::json!({"tool": tool, "tool_use_id": p.tool_use_id, "data": p.data});
                sink(Progress {
                    tool_use_id: parent.clone(),
                    message: format!("{tool}: {}", p.message),
                    data: Some(data),
                })
            })
        });
        let setup = CallSetup {
            progress,
            approver: self.approver.clone(),
            traceparent: None,
            identity: self.identity.clone(),
            parent: Some(Arc::clone(&self.parent)),
            // The Script call's span, current on the thread running its
            // program.
            span: Some(tracing::Span::current()),
        };
        self.executor.add_tool_with(ToolUse { id, name: name.to_string(), input }, setup);
        Ok(number)
    }

    fn next(&self, wait: Duration) -> Waited {
        if self.lock().going.is_empty() {
            return Waited::Idle;
        }
        loop {
            match self.executor.next_within(wait) {
                Ok(Some(Update::Result(result))) => {
                    let Some((number, tool)) = self.lock().going.remove(&result.tool_use_id) else { continue };
                    return Waited::Finished(self.finished(number, &tool, result));
                }
                // Progress goes to the script's sink as it happens.
                Ok(Some(Update::Progress(_))) => continue,
                Ok(None) => return Waited::Idle,
                Err(_) => return Waited::Pending,
            }
        }
    }

    fn stop(&self) {
        self.executor.discard();
        self.lock().going.clear();
    }
}

impl Drop for ScriptRun {
    fn drop(&mut self) {
        // A script that ended without awaiting every call: those still
        // going on are stopped with it.
        self.executor.discard();
    }
}
