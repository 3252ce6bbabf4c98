//! `toolhost:script/tools`: the built-in Script tool's one capability,
//! starting calls of the other tools and waiting for them to end. Not part
//! of the contract (its WIT lives with the plugin); linked for every
//! component, imported only by that built-in (the loader refuses it from
//! any other). The calls themselves run through the pipeline, as
//! [`InnerCalls`] (the scheduler's `ScriptCalls`) runs them.

use super::CallView;
use crate::epoch::Interrupted;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod wit {
    wasmtime::component::bindgen!({
        path: "../../plugins/script/wit",
        world: "script-calls",
        imports: { default: trappable },
    });
}

use wit::toolhost::script::tools;

/// How a started call ended, for the script (the interface's record).
pub(crate) use wit::toolhost::script::tools::Finished;

/// What waiting for the script's calls gave.
pub(crate) enum Waited {
    Finished(Finished),
    /// No started call is left to end.
    Idle,
    /// The time given passed first.
    Pending,
}

/// The calls a running script started, as the pipeline runs them.
pub(crate) trait InnerCalls: Send + Sync {
    /// Starts a call of `name` with `input` (JSON text); its number, or
    /// why it was refused before it started.
    fn start(&self, name: &str, input: &str) -> Result<u32, String>;
    /// Waits up to `wait` for a started call to end.
    fn next(&self, wait: Duration) -> Waited;
    /// Stops every call still going on (the script was stopped).
    fn stop(&self);
}

/// How often a waiting script checks its deadline and cancellation.
const CHECK_EVERY: Duration = Duration::from_millis(50);

impl tools::Host for CallView<'_> {
    fn start(&mut self, name: String, input: String) -> wasmtime::Result<Result<u32, String>> {
        Ok(match &self.scope.script {
            Some(calls) => calls.start(&name, &input),
            None => Err("this component may not call tools".into()),
        })
    }

    fn next(&mut self) -> wasmtime::Result<Option<tools::Finished>> {
        let Some(calls) = self.scope.script.clone() else { return Ok(None) };
        let deadline = self.scope.deadline;
        let cancel = self.scope.cancel.clone();
        loop {
            // The script's own limits hold while it waits (no wasm runs, so
            // the epoch deadline cannot stop it here): its calls are stopped
            // with it.
            if let Some(why) = stopped(deadline, cancel.as_deref()) {
                calls.stop();
                return Err(wasmtime::Error::new(why));
            }
            let wait = deadline.map_or(CHECK_EVERY, |(at, _)| at.saturating_duration_since(Instant::now()));
            match calls.next(wait.min(CHECK_EVERY)) {
                Waited::Finished(f) => return Ok(Some(f)),
                Waited::Idle => return Ok(None),
                Waited::Pending => {}
            }
        }
    }
}

/// Why the call must stop now, if it must.
fn stopped(deadline: Option<(Instant, Duration)>, cancel: Option<&AtomicBool>) -> Option<Interrupted> {
    if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
        return Some(Interrupted::Cancelled);
    }
    match deadline {
        Some((at, limit)) if Instant::now() >= at => Some(Interrupted::Timeout(limit)),
        _ => None,
    }
}

/// Adds `toolhost:script/tools` to `linker`.
pub(crate) fn add_to_linker<T: 'static>(
    linker: &mut wasmtime::component::Linker<T>,
    view: fn(&mut T) -> CallView<'_>,
) -> wasmtime::Result<()> {
    tools::add_to_linker::<T, super::HasCall>(linker, view)
}

/// A shared handle to a script's calls.
pub(crate) type ScriptCalls = Arc<dyn InnerCalls>;
