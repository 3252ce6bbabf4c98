//! The threads an executor runs its jobs on (calls, and asking whether a
//! call is concurrency-safe): started as jobs need them and kept idle for
//! the next, ending with the executor.
//!
//! Two things keep a call from waiting on a thread hand-off:
//! - A call started by a worker as it records its own call's end (the next
//!   one a non-safe call held back) runs next on that same thread
//!   ([`Workers::finishing`], [`Workers::start`]).
//! - A worker counts itself idle while its job still holds the executor's
//!   lock that records the end, so a call added as soon as that result is
//!   out finds it rather than starting a thread.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, MutexGuard};

/// One piece of work for a worker.
pub(super) type Job = Box<dyn FnOnce() + Send>;

thread_local! {
    /// Set while a worker records the end of its job: a job that this
    /// starts runs next on the same thread.
    static FINISHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static CARRIED: std::cell::RefCell<Option<Job>> = const { std::cell::RefCell::new(None) };
    /// Set when a worker counted itself idle as its job recorded its end.
    static COUNTED_IDLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// An executor's worker threads.
pub(super) struct Workers {
    /// Where jobs go; `None` once the executor is gone (the workers end).
    jobs: Mutex<Option<Sender<Job>>>,
    taken: Arc<Mutex<Receiver<Job>>>,
    counts: Arc<Mutex<Counts>>,
}

#[derive(Default)]
struct Counts {
    /// Workers waiting for a job, or about to.
    idle: usize,
    /// Worker threads alive.
    alive: usize,
}

/// Held by a worker thread: its end is counted.
struct Leaving(Arc<Mutex<Counts>>);

impl Drop for Leaving {
    fn drop(&mut self) {
        lock(&self.0).alive -= 1;
    }
}

fn lock(counts: &Mutex<Counts>) -> MutexGuard<'_, Counts> {
    counts.lock().unwrap_or_else(|e| e.into_inner())
}

impl Workers {
    pub(super) fn new() -> Workers {
        let (tx, rx) = channel::<Job>();
        Workers { jobs: Mutex::new(Some(tx)), taken: Arc::new(Mutex::new(rx)), counts: Default::default() }
    }

    /// Runs `job`: next on this thread if it is a worker recording its job's
    /// end ([`Workers::finishing`]) with nothing carried yet, else as
    /// [`Workers::submit`] does.
    pub(super) fn start(&self, job: Job) {
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
            self.submit(job);
        }
    }

    /// Hands `job` to an idle worker, or starts one.
    pub(super) fn submit(&self, job: Job) {
        let sent = match &*self.jobs.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(tx) => tx.send(job).is_ok(),
            None => false,
        };
        if !sent {
            return;
        }
        let mut counts = lock(&self.counts);
        if counts.idle > 0 {
            counts.idle -= 1;
            return;
        }
        let (taken, mine) = (Arc::clone(&self.taken), Arc::clone(&self.counts));
        let spawned = std::thread::Builder::new().name("toolhost-call".into()).spawn(move || {
            // However the thread ends (a job that panics too).
            let _leaving = Leaving(Arc::clone(&mine));
            loop {
                let job = taken.lock().unwrap_or_else(|e| e.into_inner()).recv();
                let Ok(job) = job else { return };
                job();
                while let Some(next) = CARRIED.with(|slot| slot.borrow_mut().take()) {
                    next();
                }
                // Back to idle, if the job's end did not count it.
                if !COUNTED_IDLE.replace(false) {
                    lock(&mine).idle += 1;
                }
            }
        });
        match spawned {
            Ok(_) => counts.alive += 1,
            Err(e) => tracing::error!(error = %e, "could not start a worker thread"),
        }
    }

    /// Runs `end`, a job's last step (recording its end under the
    /// executor's lock): a job `end` starts runs next on this thread; then
    /// counts this worker idle, unless it has such a job to run.
    pub(super) fn finishing<T>(&self, end: impl FnOnce() -> T) -> T {
        FINISHING.set(true);
        let out = end();
        FINISHING.set(false);
        if CARRIED.with(|slot| slot.borrow().is_none()) {
            lock(&self.counts).idle += 1;
            COUNTED_IDLE.set(true);
        }
        out
    }

    /// Worker threads alive.
    pub(super) fn alive(&self) -> usize {
        lock(&self.counts).alive
    }

    /// No more jobs: each worker ends once its job does.
    pub(super) fn close(&self) {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}
