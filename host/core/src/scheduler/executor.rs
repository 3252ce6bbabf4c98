//! The streaming executor: calls added while the model is still streaming,
//! started as the start rule allows, handed out as updates.

use crate::contract::{Progress, ProgressSink};
use crate::host::Host;
use crate::pipeline::{CallOptions, ToolResult, ToolUse};
use crate::policy::Approver;
use crate::session::Session;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// The default number of calls running at once.
pub const DEFAULT_MAX_CONCURRENCY: usize = 10;

/// What the executor hands out.
#[derive(Clone, Debug)]
pub enum Update {
    /// Progress of a running call, as it happens.
    Progress(Progress),
    /// A call's result, in the order the calls were added.
    Result(ToolResult),
}

/// The streaming executor of one session. Cheap to share: clone the `Arc`.
pub struct Executor {
    shared: Arc<Shared>,
}

struct Shared {
    host: Host,
    session: Arc<Session>,
    max: usize,
    ordered: bool,
    approver: Option<Arc<dyn Approver>>,
    state: Mutex<State>,
    changed: Condvar,
    notify: tokio::sync::Notify,
    jobs: Mutex<Option<Sender<Job>>>,
    job_rx: Arc<Mutex<Receiver<Job>>>,
}

type Job = Box<dyn FnOnce() + Send>;

thread_local! {
    /// Set while a worker records the end of its call: a call that this
    /// starts runs next on the same thread (no hand-off to another worker).
    static FINISHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static CARRIED: std::cell::RefCell<Option<Job>> = const { std::cell::RefCell::new(None) };
}

#[derive(Default)]
struct State {
    /// The calls not yet handed out, and before them, until compacted, some
    /// that were; `tools[0]` is call number `base` (indexes below are call
    /// numbers: a long session keeps only what is still going on).
    tools: VecDeque<Tracked>,
    base: usize,
    /// Every result before this call number was handed out (in order: the
    /// next one).
    next_result: usize,
    /// Results handed out.
    handed_out: usize,
    /// Progress not handed out yet.
    progress: VecDeque<Progress>,
    /// No more calls will be added.
    closed: bool,
    /// `discard()` was called.
    discarded: bool,
    /// A Bash call failed: what it was.
    errored: Option<String>,
    /// Every call before this index has started (or ended).
    queue_from: usize,
    /// Calls running, and how many of them are not concurrency-safe.
    running: usize,
    running_unsafe: usize,
    /// Workers waiting for a job.
    idle: usize,
}

impl State {
    /// Call number `index`.
    fn at(&mut self, index: usize) -> &mut Tracked {
        let base = self.base;
        &mut self.tools[index - base]
    }

    fn get(&self, index: usize) -> Option<&Tracked> {
        self.tools.get(index.checked_sub(self.base)?)
    }

    /// The number the next call added gets.
    fn end(&self) -> usize {
        self.base + self.tools.len()
    }

    /// Forgets the calls at the front that were handed out.
    fn compact(&mut self) {
        while self.base < self.next_result.min(self.queue_from) {
            self.tools.pop_front();
            self.base += 1;
        }
    }
}

struct Tracked {
    tool_use: ToolUse,
    /// Whether it may run beside others; `None` until known (a call started
    /// while nothing ran learns it from its own instance).
    safe: Option<bool>,
    /// Counted among the running calls that are not concurrency-safe.
    counted_unsafe: bool,
    cancel_on_interrupt: bool,
    status: Status,
    result: Option<ToolResult>,
    cancel: Arc<AtomicBool>,
    /// Why the call was cancelled: its result becomes this error.
    cancelled: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Queued,
    Running,
    Done,
}

/// How an [`Executor`] runs and hands out calls.
#[derive(Clone)]
pub struct Config {
    /// Calls running at once (at least 1).
    pub max_concurrency: usize,
    /// Results in the order the calls were added (`true`, a model's turn), or
    /// each as soon as it is ready (`false`: independent requests, e.g. MCP).
    pub ordered: bool,
    /// Who answers the calls' asks, instead of the host's approver.
    pub approver: Option<Arc<dyn Approver>>,
}

impl Default for Config {
    fn default() -> Self {
        Config { max_concurrency: DEFAULT_MAX_CONCURRENCY, ordered: true, approver: None }
    }
}

impl Executor {
    /// An executor running calls of `session` on `host`, at most
    /// `max_concurrency` at once, results in order.
    pub fn new(host: Host, session: Arc<Session>, max_concurrency: usize) -> Executor {
        Self::with_config(host, session, Config { max_concurrency, ..Config::default() })
    }

    /// An executor with the given [`Config`].
    pub fn with_config(host: Host, session: Arc<Session>, config: Config) -> Executor {
        let (tx, rx) = channel::<Job>();
        Executor {
            shared: Arc::new(Shared {
                host,
                session,
                max: config.max_concurrency.max(1),
                ordered: config.ordered,
                approver: config.approver,
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
                notify: tokio::sync::Notify::new(),
                jobs: Mutex::new(Some(tx)),
                job_rx: Arc::new(Mutex::new(rx)),
            }),
        }
    }

    /// Adds a call; it starts at once if the start rule allows. Whether it is
    /// concurrency-safe is asked of the tool first (unknown tools and input
    /// failing the schema are not).
    pub fn add_tool(&self, tool_use: ToolUse) {
        let host = &self.shared.host;
        // Whether the call is concurrency-safe matters only if it could run
        // beside another: not when nothing runs or waits (it starts at once
        // and its own instance tells), nor with one call at a time.
        let alone = {
            let state = self.shared.lock();
            self.shared.max == 1 || (state.running == 0 && state.queue_from >= state.end())
        };
        let safe = if alone { None } else { Some(host.is_concurrency_safe(&tool_use)) };
        let tracked = Tracked {
            cancel_on_interrupt: host.cancels_on_interrupt(&tool_use.name),
            tool_use,
            safe,
            counted_unsafe: false,
            status: Status::Queued,
            result: None,
            cancel: Arc::new(AtomicBool::new(false)),
            cancelled: None,
        };
        let mut state = self.shared.lock();
        if state.discarded {
            return;
        }
        // A failed Bash call cancels what runs or waits beside it; once all of
        // that has ended, a new call starts a new group (the next turn of a
        // long `toolhost run`).
        if state.errored.is_some() && state.tools.iter().all(|t| t.status == Status::Done) {
            state.errored = None;
        }
        if let Some(what) = state.errored.clone() {
            // A Bash call already failed: later siblings do not start.
            let id = tracked.tool_use.id.clone();
            state.tools.push_back(Tracked {
                status: Status::Done,
                result: Some(ToolResult::error(&id, sibling_error(&what))),
                ..tracked
            });
        } else {
            state.tools.push_back(tracked);
        }
        Shared::process_queue(&self.shared, &mut state);
        drop(state);
        self.shared.wake();
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
            status: Status::Done,
            result: Some(ToolResult::error(id, message)),
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
    /// the results that are next in order.
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
            state = self.shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
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

    /// How many calls the executor still keeps a record of (those not
    /// handed out, and any before them). For tests.
    #[doc(hidden)]
    pub fn kept(&self) -> usize {
        self.shared.lock().tools.len()
    }

    /// Cancels the call `id` (running or queued), whatever its interrupt
    /// behavior: its result becomes an error saying `why`. Nothing happens
    /// if it has ended.
    pub fn cancel(&self, id: &str, why: &str) {
        let mut state = self.shared.lock();
        for t in state.tools.iter_mut().filter(|t| t.status != Status::Done && t.tool_use.id == id) {
            cancel(t, why.to_string());
        }
        Shared::process_queue(&self.shared, &mut state);
        drop(state);
        self.shared.wake();
    }

    /// A user interrupt: calls whose tool cancels on interrupt stop (running
    /// or queued) with a synthetic error; the others run to completion.
    pub fn interrupt(&self) {
        let mut state = self.shared.lock();
        for t in state.tools.iter_mut().filter(|t| t.status != Status::Done && t.cancel_on_interrupt) {
            cancel(t, "Interrupted by user: the call was cancelled before it finished.".to_string());
        }
        Shared::process_queue(&self.shared, &mut state);
        drop(state);
        self.shared.wake();
    }

    /// Drops everything: running calls are cancelled, queued ones never
    /// start, no further update is handed out.
    pub fn discard(&self) {
        let mut state = self.shared.lock();
        state.discarded = true;
        state.progress.clear();
        for t in state.tools.iter_mut().filter(|t| t.status != Status::Done) {
            cancel(t, "Discarded.".to_string());
        }
        drop(state);
        self.shared.wake();
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        // Running calls are cancelled; the workers end with the job queue.
        self.discard();
        self.shared.jobs.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// Marks `t` cancelled: a queued call is done at once, a running one is told
/// to stop (epoch interruption for wasm, a killed process group for Bash).
fn cancel(t: &mut Tracked, why: String) {
    if t.cancelled.is_some() {
        return;
    }
    t.cancel.store(true, Ordering::SeqCst);
    match t.status {
        Status::Queued => {
            t.result = Some(ToolResult::error(&t.tool_use.id, why.clone()));
            t.status = Status::Done;
        }
        Status::Running | Status::Done => {}
    }
    t.cancelled = Some(why);
}

fn sibling_error(what: &str) -> String {
    format!("Cancelled: parallel tool call {what} errored")
}

/// `Tool(the first 40 characters of its command, address or path…)`.
fn describe(host: &Host, tool_use: &ToolUse) -> String {
    let label = host.tool(&tool_use.name).and_then(|t| t.spec.inputs.label_in(&tool_use.input)).unwrap_or("");
    let short: String = label.chars().take(40).collect();
    let ellipsis = if label.chars().count() > 40 { "…" } else { "" };
    format!("{}({short}{ellipsis})", tool_use.name)
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next update to hand out: pending progress, then a result (the
    /// next in order, or any ready one when unordered).
    fn take_one(&self, state: &mut State) -> Option<Update> {
        if state.discarded {
            return None;
        }
        if let Some(p) = state.progress.pop_front() {
            return Some(Update::Progress(p));
        }
        let from = state.next_result;
        let index = match self.ordered {
            true => (state.get(from)?.status == Status::Done).then_some(from)?,
            false => {
                let skip = from - state.base;
                from + state.tools.iter().skip(skip).position(|t| t.status == Status::Done && t.result.is_some())?
            }
        };
        let t = state.at(index);
        let result = t.result.take();
        // What the call was is no longer needed.
        t.tool_use.input = serde_json::Value::Null;
        state.handed_out += 1;
        while state.get(state.next_result).is_some_and(|t| t.status == Status::Done && t.result.is_none()) {
            state.next_result += 1;
        }
        state.compact();
        result.map(Update::Result)
    }

    fn wake(&self) {
        self.changed.notify_all();
        self.notify.notify_waiters();
        self.notify.notify_one();
    }

    /// Starts every queued call the start rule allows, in order. The first
    /// queued call that cannot start stops the scan: if it is not
    /// concurrency-safe it blocks the queue behind it, and if it is, what
    /// stops it (a non-safe call running, or the maximum reached) stops every
    /// later call too.
    fn process_queue(this: &Arc<Shared>, state: &mut State) {
        if state.discarded {
            return;
        }
        while state.get(state.queue_from).is_some_and(|t| t.status != Status::Queued) {
            state.queue_from += 1;
        }
        for i in state.queue_from..state.end() {
            if state.at(i).status != Status::Queued {
                continue;
            }
            // Not known yet counts as not safe.
            let safe = state.at(i).safe == Some(true);
            let can_start = state.running < this.max && (state.running == 0 || (safe && state.running_unsafe == 0));
            if !can_start {
                break;
            }
            state.running += 1;
            if !safe {
                state.running_unsafe += 1;
                state.at(i).counted_unsafe = true;
            }
            Self::start(this, state, i);
        }
    }

    fn start(this: &Arc<Shared>, state: &mut State, index: usize) {
        let t = state.at(index);
        t.status = Status::Running;
        let tool_use = t.tool_use.clone();
        let cancel = Arc::clone(&t.cancel);
        // With one call at a time, whether it is safe does not matter.
        let learn = t.safe.is_none() && this.max > 1;
        let shared = Arc::clone(this);
        let job: Job = Box::new(move || {
            let sink_shared = Arc::clone(&shared);
            let progress: ProgressSink = Arc::new(move |p: Progress| {
                let mut state = sink_shared.lock();
                if !state.discarded {
                    state.progress.push_back(p);
                    drop(state);
                    sink_shared.wake();
                }
            });
            let weak = Arc::downgrade(&shared);
            let on_concurrency_safe: Option<Arc<dyn Fn(bool) + Send + Sync>> = learn.then(|| {
                let report: Arc<dyn Fn(bool) + Send + Sync> = Arc::new(move |safe: bool| {
                    let Some(shared) = weak.upgrade() else { return };
                    let mut state = shared.lock();
                    let t = state.at(index);
                    t.safe = Some(safe);
                    // Calls it no longer blocks may start (no update for
                    // readers, so nobody to wake).
                    if safe && t.counted_unsafe && t.status == Status::Running {
                        t.counted_unsafe = false;
                        state.running_unsafe -= 1;
                        Self::process_queue(&shared, &mut state);
                    }
                });
                report
            });
            let options = CallOptions {
                progress: Some(progress),
                cancel: Some(cancel),
                on_concurrency_safe,
                approver: shared.approver.clone(),
            };
            let result = shared.host.call(&shared.session, &tool_use, &options);
            let mut state = shared.lock();
            FINISHING.set(true);
            Self::finish(&shared, &mut state, index, result);
            FINISHING.set(false);
            drop(state);
            shared.wake();
        });
        // Started by a worker ending its call: that worker runs it next.
        let job = match FINISHING.get() {
            true => CARRIED.with(|slot| {
                let mut slot = slot.borrow_mut();
                match *slot {
                    None => {
                        *slot = Some(job);
                        None
                    }
                    Some(_) => Some(job),
                }
            }),
            false => Some(job),
        };
        if let Some(job) = job {
            Self::submit(this, state, job);
        }
    }

    /// Hands `job` to an idle worker, or starts one (at most `max`).
    fn submit(this: &Arc<Shared>, state: &mut State, job: Job) {
        let sent = match &*this.jobs.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(tx) => tx.send(job).is_ok(),
            None => false,
        };
        if !sent {
            return;
        }
        if state.idle > 0 {
            state.idle -= 1;
            return;
        }
        let rx = Arc::clone(&this.job_rx);
        let shared = Arc::downgrade(this);
        let spawned = std::thread::Builder::new().name("toolhost-call".into()).spawn(move || {
            loop {
                let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                let Ok(job) = job else { return };
                job();
                while let Some(next) = CARRIED.with(|slot| slot.borrow_mut().take()) {
                    next();
                }
                // Back to idle; gone when the executor is.
                let Some(shared) = shared.upgrade() else { return };
                shared.lock().idle += 1;
            }
        });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "could not start a worker thread");
        }
    }

    fn finish(this: &Arc<Shared>, state: &mut State, index: usize, result: ToolResult) {
        let t = state.at(index);
        t.status = Status::Done;
        let counted_unsafe = std::mem::take(&mut t.counted_unsafe);
        state.running -= 1;
        if counted_unsafe {
            state.running_unsafe -= 1;
        }
        let t = state.at(index);
        let cancels_siblings = this.host.tool(&t.tool_use.name).is_some_and(|tool| tool.spec.cancels_siblings);
        t.result = Some(match &t.cancelled {
            Some(why) => ToolResult::error(&t.tool_use.id, why.clone()),
            None => result,
        });
        let failed = t.cancelled.is_none() && t.result.as_ref().is_some_and(|r| r.is_error);
        if failed && cancels_siblings && state.errored.is_none() {
            let what = describe(&this.host, &state.at(index).tool_use);
            let message = sibling_error(&what);
            let base = state.base;
            for (i, sibling) in state.tools.iter_mut().enumerate() {
                if base + i != index && sibling.status != Status::Done {
                    cancel(sibling, message.clone());
                }
            }
            state.errored = Some(what);
        }
        Self::process_queue(this, state);
    }
}
