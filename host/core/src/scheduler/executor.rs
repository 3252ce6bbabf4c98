//! The streaming executor: calls added while the model is still streaming,
//! started as the start rule allows, handed out as updates or through each
//! call's [`CallHandle`].
//!
//! Nothing a tool answers is asked on the thread adding calls: whether a call
//! is concurrency-safe is asked on a worker (or learned from the call's own
//! instance when it starts alone), so a reader of the model's stream or an
//! MCP protocol thread never waits on a tool.

pub use super::handle::CallHandle;
use super::slot::Slot;
use super::wakeup::Wakeup;
use super::workers::{Job, Workers};
use crate::imports::{Progress, ProgressSink};
use crate::pipeline::{CallOptions, Caller, ToolResult, ToolUse};
use crate::policy::Approver;
use crate::session::Session;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The default number of calls running at once.
pub const DEFAULT_MAX_CONCURRENCY: usize = 10;

/// What the executor hands out.
#[derive(Clone, Debug)]
pub enum Update {
    /// Progress of a running call, as it happens.
    Progress(Progress),
    /// A call's result: in the order the calls were added ([`Calls::Turn`]),
    /// or as soon as it is ready ([`Calls::Independent`]).
    Result(ToolResult),
}

/// How the calls of an executor relate to each other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Calls {
    /// One model turn: results in the order the calls came, and a failed
    /// call of a tool that cancels its siblings (Bash) cancels the calls
    /// running or waiting beside it.
    #[default]
    Turn,
    /// Independent requests (an MCP server's): each result as soon as it is
    /// ready, and no call is cancelled by another one's failure.
    Independent,
}

/// How an [`Executor`] runs and hands out calls.
#[derive(Clone)]
pub struct Config {
    /// Calls running at once (at least 1).
    pub max_concurrency: usize,
    /// One model turn, or independent requests.
    pub calls: Calls,
    /// Who answers the calls' asks, instead of the host's approver.
    pub approver: Option<Arc<dyn Approver>>,
}

impl Default for Config {
    fn default() -> Self {
        Config { max_concurrency: DEFAULT_MAX_CONCURRENCY, calls: Calls::Turn, approver: None }
    }
}

/// [`Executor::next_within`]'s time passed before an update came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedOut;

/// What one call brings besides its `tool_use`.
#[derive(Clone, Default)]
pub struct CallSetup {
    /// Receives this call's progress (instead of [`Executor::next`]).
    pub progress: Option<ProgressSink>,
    /// Answers this call's asks (instead of the executor's approver).
    pub approver: Option<Arc<dyn Approver>>,
    /// The W3C `traceparent` of the request that made the call, recorded in
    /// the call's span.
    pub traceparent: Option<String>,
    /// Who asked for the call (an HTTP client's credential name), recorded
    /// in the call's span and its audit lines.
    pub identity: Option<Arc<str>>,
    /// The call this one was made by (a Script call's id), recorded in its
    /// span and audit lines.
    pub parent: Option<Arc<str>>,
    /// The span the call's span belongs under (it runs on a worker thread,
    /// where no span of the caller's is current).
    pub span: Option<tracing::Span>,
}

/// The streaming executor of one session. Cheap to share: clone the `Arc`.
pub struct Executor {
    shared: Arc<Shared>,
}

pub(super) struct Shared {
    /// Runs the calls: the host.
    host: Arc<dyn Caller>,
    session: Arc<Session>,
    max: usize,
    calls: Calls,
    approver: Option<Arc<dyn Approver>>,
    state: Mutex<State>,
    changed: Wakeup,
    notify: tokio::sync::Notify,
    workers: Workers,
}

#[derive(Default)]
pub(super) struct State {
    /// The calls still going on or not handed out, and before them, until
    /// compacted, some that were; `tools[0]` is call number `base` (numbers
    /// below are call numbers: a long session keeps only what is going on).
    tools: VecDeque<Tracked>,
    base: usize,
    /// Where [`Executor::next`] looks for the next result: every call before
    /// it was handed out (or is claimed by its handle).
    cursor: usize,
    /// Results handed out (by `next`, or into a claiming handle).
    pub(super) handed_out: usize,
    /// Progress not handed out yet.
    progress: VecDeque<Progress>,
    /// No more calls will be added.
    closed: bool,
    /// `discard()` was called.
    pub(super) discarded: bool,
    /// A call whose failure cancels its siblings failed: what it was.
    errored: Option<String>,
    /// Every call before this number has started (or ended).
    queue_from: usize,
    /// Calls running, and how many of them are not concurrency-safe.
    running: usize,
    running_unsafe: usize,
    /// Calls whose concurrency-safety a worker is asking, and those waiting
    /// for a worker to ask.
    classifying: usize,
    to_classify: VecDeque<usize>,
}

impl State {
    /// Whether a call added now would be alone: nothing runs or waits.
    fn alone(&self) -> bool {
        self.running == 0 && self.queue_from >= self.end()
    }

    /// Call number `number`, which is still kept.
    fn at(&mut self, number: usize) -> &mut Tracked {
        let base = self.base;
        &mut self.tools[number - base]
    }

    fn get(&self, number: usize) -> Option<&Tracked> {
        self.tools.get(number.checked_sub(self.base)?)
    }

    pub(super) fn get_mut(&mut self, number: usize) -> Option<&mut Tracked> {
        self.tools.get_mut(number.checked_sub(self.base)?)
    }

    /// The number the next call added gets.
    fn end(&self) -> usize {
        self.base + self.tools.len()
    }

    /// Forgets the calls at the front that ended and whose result went out
    /// (handed out by `next`, or into the handle that claimed it).
    pub(super) fn compact(&mut self) {
        while self.tools.front().is_some_and(|t| t.stage == Stage::Done && t.result.is_none()) {
            self.tools.pop_front();
            self.base += 1;
        }
        self.cursor = self.cursor.max(self.base);
        self.queue_from = self.queue_from.max(self.base);
    }
}

pub(super) struct Tracked {
    tool_use: ToolUse,
    /// Whether it may run beside others; `None` until known (asked on a
    /// worker, or learned from its own instance when it starts alone).
    safe: Option<bool>,
    /// Counted among the running calls that are not concurrency-safe.
    counted_unsafe: bool,
    cancel_on_interrupt: bool,
    pub(super) stage: Stage,
    /// The result, until handed out by `next` (never set for a claimed call).
    pub(super) result: Option<ToolResult>,
    /// Where the result goes when the call's handle claimed it.
    pub(super) claim: Option<Arc<Slot>>,
    /// Taken when the call starts.
    setup: CallSetup,
    cancel: Arc<AtomicBool>,
    /// Why the call was cancelled: its result becomes this error.
    cancelled: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    Queued,
    Running,
    Done,
}

impl Executor {
    /// An executor running calls of `session` through `host` (the host's
    /// `Executor::new` and `Executor::with_config` give it itself).
    pub(crate) fn with_caller(host: Arc<dyn Caller>, session: Arc<Session>, config: Config) -> Executor {
        Executor {
            shared: Arc::new(Shared {
                host,
                session,
                max: config.max_concurrency.max(1),
                calls: config.calls,
                approver: config.approver,
                state: Mutex::new(State::default()),
                changed: Wakeup::default(),
                notify: tokio::sync::Notify::new(),
                workers: Workers::new(),
            }),
        }
    }

    /// Adds a call; it starts at once if the start rule allows. Returns at
    /// once: whether it is concurrency-safe is asked of the tool on a worker
    /// (unknown tools and input failing the schema are not).
    pub fn add_tool(&self, tool_use: ToolUse) -> CallHandle {
        self.add_tool_with(tool_use, CallSetup::default())
    }

    /// [`Executor::add_tool`] with a progress sink and an approver of its own.
    pub fn add_tool_with(&self, tool_use: ToolUse, setup: CallSetup) -> CallHandle {
        let shared = &self.shared;
        let cancel_on_interrupt = shared.host.cancels_on_interrupt(&tool_use.name);
        let id = tool_use.id.clone();
        // Whether its tool declares the call concurrency-safe, asked outside
        // the lock (a schema check, at a tool's first call its compile), and
        // only when it will likely matter (see `alone` below); a call found
        // alone after all does not use it, and one found not alone without
        // it is asked on a worker.
        let declared = (shared.max > 1 && !shared.lock().alone())
            .then(|| shared.host.declared_concurrency_safe(&tool_use))
            .flatten();
        let mut state = shared.lock();
        let number = state.end();
        let handle = CallHandle { shared: Arc::clone(shared), number, id, slot: std::sync::OnceLock::new() };
        if state.discarded {
            return handle;
        }
        // Whether the call is concurrency-safe matters only if it could run
        // beside another: not when nothing runs or waits (it starts at once
        // and its own instance tells), nor with one call at a time.
        let alone = shared.max == 1 || state.alone();
        // A failed call cancels what runs or waits beside it; once all of
        // that has ended, a new call starts a new group (the next turn of a
        // long `toolhost run`).
        if state.errored.is_some() && state.tools.iter().all(|t| t.stage == Stage::Done) {
            state.errored = None;
        }
        let mut tracked = Tracked {
            cancel_on_interrupt,
            safe: None,
            counted_unsafe: false,
            stage: Stage::Queued,
            result: None,
            claim: None,
            setup,
            cancel: Arc::new(AtomicBool::new(false)),
            cancelled: None,
            tool_use,
        };
        if let Some(what) = state.errored.clone() {
            // A sibling already failed: this call does not start.
            tracked.stage = Stage::Done;
            tracked.result = Some(ToolResult::error(&handle.id, sibling_error(&what)));
        } else if !alone {
            // A tool that declares the answer is not asked on a worker.
            match declared {
                Some(safe) => tracked.safe = Some(safe),
                None => state.to_classify.push_back(number),
            }
        }
        state.tools.push_back(tracked);
        Shared::process_queue(shared, &mut state);
        drop(state);
        shared.wake();
        handle
    }

    /// Adds a call that already failed (its input could not be read): its
    /// error result takes its place in the order.
    pub fn add_failed(&self, id: &str, message: String) {
        let mut state = self.shared.lock();
        if state.discarded {
            return;
        }
        state.tools.push_back(Tracked {
            tool_use: ToolUse { id: id.to_string(), name: String::new(), input: serde_json::Value::Null },
            safe: Some(false),
            counted_unsafe: false,
            cancel_on_interrupt: true,
            stage: Stage::Done,
            result: Some(ToolResult::error(id, message)),
            claim: None,
            setup: CallSetup::default(),
            cancel: Arc::new(AtomicBool::new(false)),
            cancelled: None,
        });
        drop(state);
        self.shared.wake();
    }

    /// No more calls will be added: the updates end after the last result.
    pub fn close(&self) {
        self.shared.lock().closed = true;
        self.shared.wake();
    }

    /// The updates available now, without waiting: pending progress, then
    /// the results that are ready to go out.
    pub fn completed(&self) -> Vec<Update> {
        let mut state = self.shared.lock();
        std::iter::from_fn(|| self.shared.take_one(&mut state)).collect()
    }

    fn finished(state: &State) -> bool {
        state.discarded || (state.closed && state.handed_out == state.end() && state.progress.is_empty())
    }

    /// The next update, waiting for it; `None` once the executor is closed
    /// and every result was handed out (or after `discard`).
    pub fn next_blocking(&self) -> Option<Update> {
        let mut state = self.shared.lock();
        loop {
            if let Some(u) = self.shared.take_one(&mut state) {
                return Some(u);
            }
            if Self::finished(&state) {
                return None;
            }
            state = self.shared.changed.wait(state);
        }
    }

    /// [`Executor::next_blocking`], waiting at most `wait`: `Err(TimedOut)`
    /// when it passed first.
    pub fn next_within(&self, wait: std::time::Duration) -> Result<Option<Update>, TimedOut> {
        let until = std::time::Instant::now() + wait;
        let mut state = self.shared.lock();
        loop {
            if let Some(u) = self.shared.take_one(&mut state) {
                return Ok(Some(u));
            }
            if Self::finished(&state) {
                return Ok(None);
            }
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(TimedOut);
            }
            state = self.shared.changed.wait_timeout(state, left);
        }
    }

    /// [`Executor::next_blocking`] for async code (any runtime).
    pub async fn next(&self) -> Option<Update> {
        loop {
            let notified = self.shared.notify.notified();
            {
                let mut state = self.shared.lock();
                if let Some(u) = self.shared.take_one(&mut state) {
                    return Some(u);
                }
                if Self::finished(&state) {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// How many calls the executor still keeps a record of (those going on
    /// or not handed out, and any before them). For tests.
    #[doc(hidden)]
    pub fn kept(&self) -> usize {
        self.shared.lock().tools.len()
    }

    /// How many worker threads the executor has. For tests.
    #[doc(hidden)]
    pub fn worker_threads(&self) -> usize {
        self.shared.workers.alive()
    }

    /// Cancels every call `id` names (running or queued), whatever its
    /// interrupt behavior: its result becomes an error saying `why`. Nothing
    /// happens to calls that have ended.
    pub fn cancel(&self, id: &str, why: &str) {
        let mut state = self.shared.lock();
        let delivered = state
            .tools
            .iter_mut()
            .filter(|t| t.stage != Stage::Done && t.tool_use.id == id)
            .map(|t| cancel(t, why.to_string()))
            .filter(|&delivered| delivered)
            .count();
        state.handed_out += delivered;
        Shared::process_queue(&self.shared, &mut state);
        drop(state);
        self.shared.wake();
    }

    /// A user interrupt: calls whose tool cancels on interrupt stop (running
    /// or queued) with a synthetic error; the others run to completion.
    pub fn interrupt(&self) {
        let mut state = self.shared.lock();
        let why = "Interrupted by user: the call was cancelled before it finished.";
        let delivered = state
            .tools
            .iter_mut()
            .filter(|t| t.stage != Stage::Done && t.cancel_on_interrupt)
            .map(|t| cancel(t, why.to_string()))
            .filter(|&delivered| delivered)
            .count();
        state.handed_out += delivered;
        Shared::process_queue(&self.shared, &mut state);
        drop(state);
        self.shared.wake();
    }

    /// Drops everything: running calls are cancelled, queued ones never
    /// start, no further update is handed out (handles get `None`).
    pub fn discard(&self) {
        let mut state = self.shared.lock();
        state.discarded = true;
        state.progress.clear();
        for t in state.tools.iter_mut() {
            if t.stage != Stage::Done {
                // Nothing is handed out after a discard: no count to keep.
                let _ = cancel(t, "Discarded.".to_string());
            }
            if let Some(slot) = &t.claim {
                slot.close();
            }
        }
        drop(state);
        self.shared.wake();
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        // Running calls are cancelled; the workers end with the job queue.
        self.discard();
        self.shared.workers.close();
    }
}

/// Marks `t` cancelled: a queued call is done at once, a running one is told
/// to stop (epoch interruption for wasm, a killed process group for Bash).
/// Whether its result went out at once, to the handle that claimed it.
pub(super) fn cancel(t: &mut Tracked, why: String) -> bool {
    if t.cancelled.is_some() {
        return false;
    }
    t.cancel.store(true, Ordering::SeqCst);
    let mut delivered = false;
    if t.stage == Stage::Queued {
        t.stage = Stage::Done;
        let result = ToolResult::error(&t.tool_use.id, why.clone());
        match &t.claim {
            Some(slot) => {
                slot.put(result);
                delivered = true;
            }
            None => t.result = Some(result),
        }
    }
    t.cancelled = Some(why);
    delivered
}

fn sibling_error(what: &str) -> String {
    format!("Cancelled: parallel tool call {what} errored")
}

/// `Tool(the first 40 characters of its command, address or path…)`.
fn describe(host: &dyn Caller, tool_use: &ToolUse) -> String {
    let tool = host.tool(&tool_use.name);
    let label = tool.as_ref().and_then(|t| t.spec.inputs.label_in(&tool_use.input)).unwrap_or("");
    let short: String = label.chars().take(40).collect();
    let ellipsis = if label.chars().count() > 40 { "…" } else { "" };
    format!("{}({short}{ellipsis})", tool_use.name)
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next update to hand out: pending progress, then a result (the
    /// next in order for a turn, any ready one for independent calls);
    /// claimed calls are skipped.
    fn take_one(&self, state: &mut State) -> Option<Update> {
        if state.discarded {
            return None;
        }
        if let Some(p) = state.progress.pop_front() {
            return Some(Update::Progress(p));
        }
        let skippable = |t: &Tracked| t.claim.is_some() || (t.stage == Stage::Done && t.result.is_none());
        while state.get(state.cursor).is_some_and(skippable) {
            state.cursor += 1;
        }
        let number = match self.calls {
            Calls::Turn => (state.get(state.cursor)?.stage == Stage::Done).then_some(state.cursor)?,
            Calls::Independent => {
                let skip = state.cursor - state.base;
                state.cursor + state.tools.iter().skip(skip).position(|t| t.result.is_some())?
            }
        };
        let t = state.at(number);
        let result = t.result.take();
        // What the call was is no longer needed.
        t.tool_use.input = serde_json::Value::Null;
        state.handed_out += 1;
        while state.get(state.cursor).is_some_and(skippable) {
            state.cursor += 1;
        }
        state.compact();
        result.map(Update::Result)
    }

    pub(super) fn wake(&self) {
        self.changed.notify_all();
        self.notify.notify_waiters();
        self.notify.notify_one();
    }

    /// Starts every queued call the start rule allows, in order, and asks
    /// on workers whether waiting calls are concurrency-safe. The first
    /// queued call that cannot start stops the scan: if it is not
    /// concurrency-safe (or not known to be) it blocks the queue behind it,
    /// and if it is, what stops it (a non-safe call running, or the maximum
    /// reached) stops every later call too.
    pub(super) fn process_queue(this: &Arc<Shared>, state: &mut State) {
        if state.discarded {
            return;
        }
        while state.get(state.queue_from).is_some_and(|t| t.stage != Stage::Queued) {
            state.queue_from += 1;
        }
        for number in state.queue_from..state.end() {
            if state.at(number).stage != Stage::Queued {
                continue;
            }
            // Not known yet counts as not safe.
            let safe = state.at(number).safe == Some(true);
            let can_start = state.running < this.max && (state.running == 0 || (safe && state.running_unsafe == 0));
            if !can_start {
                break;
            }
            state.running += 1;
            if !safe {
                state.running_unsafe += 1;
                state.at(number).counted_unsafe = true;
            }
            Self::start(this, state, number);
        }
        Self::classify(this, state);
    }

    /// Asks, on workers, whether the calls waiting for it are
    /// concurrency-safe (at most `max` at a time).
    fn classify(this: &Arc<Shared>, state: &mut State) {
        while state.classifying < this.max {
            let Some(number) = state.to_classify.pop_front() else { return };
            let Some(t) = state.get(number).filter(|t| t.stage == Stage::Queued && t.safe.is_none()) else {
                continue;
            };
            let tool_use = t.tool_use.clone();
            state.classifying += 1;
            let shared = Arc::clone(this);
            let job: Job = Box::new(move || {
                let safe = shared.host.is_concurrency_safe_in(&shared.session, &tool_use);
                let mut state = shared.lock();
                state.classifying -= 1;
                // A call this lets start runs next on this worker.
                shared.workers.finishing(|| Self::learned(&shared, &mut state, number, safe));
            });
            this.workers.submit(job);
        }
    }

    /// Records whether call `number` is concurrency-safe, and starts what
    /// that allows.
    fn learned(this: &Arc<Shared>, state: &mut State, number: usize, safe: bool) {
        if let Some(t) = state.get_mut(number).filter(|t| t.safe.is_none()) {
            t.safe = Some(safe);
            // A running call it no longer blocks.
            if safe && t.counted_unsafe && t.stage == Stage::Running {
                t.counted_unsafe = false;
                state.running_unsafe -= 1;
            }
        }
        Self::process_queue(this, state);
    }

    fn start(this: &Arc<Shared>, state: &mut State, number: usize) {
        let t = state.at(number);
        t.stage = Stage::Running;
        let tool_use = t.tool_use.clone();
        let cancel = Arc::clone(&t.cancel);
        let setup = std::mem::take(&mut t.setup);
        // With one call at a time, whether it is safe does not matter.
        let learn = t.safe.is_none() && this.max > 1;
        let shared = Arc::clone(this);
        let job: Job = Box::new(move || {
            let progress: ProgressSink = setup.progress.unwrap_or_else(|| {
                let sink_shared = Arc::clone(&shared);
                Arc::new(move |p: Progress| {
                    let mut state = sink_shared.lock();
                    if !state.discarded {
                        state.progress.push_back(p);
                        drop(state);
                        sink_shared.wake();
                    }
                })
            });
            let weak = Arc::downgrade(&shared);
            let on_concurrency_safe: Option<Arc<dyn Fn(bool) + Send + Sync>> = learn.then(|| {
                let report: Arc<dyn Fn(bool) + Send + Sync> = Arc::new(move |safe: bool| {
                    let Some(shared) = weak.upgrade() else { return };
                    let mut state = shared.lock();
                    // Calls it no longer blocks may start (no update for
                    // readers, so nobody to wake).
                    Self::learned(&shared, &mut state, number, safe);
                });
                report
            });
            let options = CallOptions {
                progress: Some(progress),
                cancel: Some(cancel),
                on_concurrency_safe,
                approver: setup.approver.or_else(|| shared.approver.clone()),
                traceparent: setup.traceparent,
                identity: setup.identity,
                parent: setup.parent,
                span: setup.span,
            };
            let result = shared.host.call(&shared.session, &tool_use, &options);
            // Before the result is handed on: whoever waits for it may end
            // next what made the call (its span among it, which a tracing
            // span closes only once every handle is gone).
            drop(options);
            let mut state = shared.lock();
            shared.workers.finishing(|| Self::finish(&shared, &mut state, number, result));
            drop(state);
            shared.wake();
        });
        // Started by a worker ending its call: that worker runs it next.
        this.workers.start(job);
    }

    fn finish(this: &Arc<Shared>, state: &mut State, number: usize, result: ToolResult) {
        let t = state.at(number);
        t.stage = Stage::Done;
        let counted_unsafe = std::mem::take(&mut t.counted_unsafe);
        let result = match &t.cancelled {
            Some(why) => ToolResult::error(&t.tool_use.id, why.clone()),
            None => result,
        };
        let failed = t.cancelled.is_none() && result.is_error;
        match &t.claim {
            Some(slot) => slot.put(result),
            None => t.result = Some(result),
        }
        let claimed = t.claim.is_some();
        state.running -= 1;
        if counted_unsafe {
            state.running_unsafe -= 1;
        }
        if claimed {
            state.handed_out += 1;
        }
        // Sibling abort belongs to one model turn.
        let cancels_siblings = this.calls == Calls::Turn
            && failed
            && state.errored.is_none()
            && this.host.tool(&state.at(number).tool_use.name).is_some_and(|tool| tool.spec.cancels_siblings);
        if cancels_siblings {
            let what = describe(&*this.host, &state.at(number).tool_use);
            let message = sibling_error(&what);
            let base = state.base;
            let delivered = (state.tools.iter_mut().enumerate())
                .filter(|(i, sibling)| base + i != number && sibling.stage != Stage::Done)
                .map(|(_, sibling)| cancel(sibling, message.clone()))
                .filter(|&delivered| delivered)
                .count();
            state.handed_out += delivered;
            state.errored = Some(what);
        }
        state.compact();
        Self::process_queue(this, state);
    }
}
