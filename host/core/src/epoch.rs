//! The epoch ticker: a thread that advances wasmtime engines' epochs while
//! guests run, so deadlines and cancellation stop a guest spinning in wasm.
//! The tools' engines and the shell parser's engine each have one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};
use wasmtime::Engine;

/// Why a call was stopped from outside (its deadline, or its cancellation):
/// the error a guest's call ends with, whether it was spinning in wasm or
/// waiting in a host import.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Interrupted {
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("cancelled")]
    Cancelled,
}

/// How often the epoch advances while calls run: the resolution of timeouts
/// and cancellation for a guest spinning in wasm.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Advances the engines' epochs every [`EPOCH_TICK`] while calls run. Holds
/// the engines weakly: the thread ends when the first one is dropped. After a second
/// with no call running it parks, so an idle host does not wake up; a call
/// unparks it only in that case, so back-to-back calls cost no wake-up.
pub(crate) struct Ticker {
    shared: Arc<TickerShared>,
}

struct TickerShared {
    running: AtomicUsize,
    parked: AtomicBool,
    thread: std::sync::OnceLock<Thread>,
}

/// How long the ticker keeps ticking after the last call ended.
const LINGER: Duration = Duration::from_secs(1);

impl Ticker {
    pub(crate) fn start<'a>(engines: impl IntoIterator<Item = &'a Engine>) -> Ticker {
        let shared = Arc::new(TickerShared {
            running: AtomicUsize::new(0),
            parked: AtomicBool::new(false),
            thread: std::sync::OnceLock::new(),
        });
        let weak: Vec<_> = engines.into_iter().map(Engine::weak).collect();
        let inner = Arc::clone(&shared);
        let handle = thread::Builder::new().name("toolhost-epoch".into()).spawn(move || {
            let mut idle_since = Instant::now();
            loop {
                // SeqCst on `running` and `parked` (here and in `enter`): each
                // side stores one and loads the other, and at least one must
                // see the other's store.
                if inner.running.load(Ordering::SeqCst) > 0 {
                    idle_since = Instant::now();
                } else if idle_since.elapsed() >= LINGER {
                    inner.parked.store(true, Ordering::SeqCst);
                    // A call that started between the check and the store
                    // finds `parked` set and unparks us.
                    if inner.running.load(Ordering::SeqCst) == 0 {
                        thread::park();
                    }
                    inner.parked.store(false, Ordering::SeqCst);
                    idle_since = Instant::now();
                }
                thread::sleep(EPOCH_TICK);
                for engine in &weak {
                    match engine.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => return,
                    }
                }
            }
        });
        match handle {
            Ok(h) => {
                let _ = shared.thread.set(h.thread().clone());
            }
            // Without a ticker, deadlines cannot fire for guests spinning in
            // wasm; calls still run.
            Err(e) => tracing::error!(error = %e, "could not start the epoch ticker thread"),
        }
        Ticker { shared }
    }

    /// Ticks until the guard drops.
    pub(crate) fn enter(&self) -> RunningGuard {
        self.shared.running.fetch_add(1, Ordering::SeqCst);
        if self.shared.parked.load(Ordering::SeqCst)
            && let Some(t) = self.shared.thread.get()
        {
            t.unpark();
        }
        RunningGuard { shared: Arc::clone(&self.shared) }
    }
}

/// Keeps the ticker ticking until dropped ([`Ticker::enter`]).
pub(crate) struct RunningGuard {
    shared: Arc<TickerShared>,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.shared.running.fetch_sub(1, Ordering::AcqRel);
    }
}
