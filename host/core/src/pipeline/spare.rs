//! Spare instances: a tool whose instances are slow to make (an interpreter
//! compiled to wasm: tens of thousands of table entries, megabytes of
//! memory image) gets the instance of its next call made ahead, on a thread
//! of its own, when its call ends and no call is running (while the model
//! or the client prepares the next one). Not beside a running call: each
//! copy-on-write fault of that call would then need a TLB shootdown on the
//! other core, and it would lose more than the spare saves (measured: 1.1 ms
//! calls of a Python tool back to back took 1.45 ms with spares made beside
//! them).
//!
//! Isolation does not change: a spare is a fresh instance that no call has
//! used, handed to exactly one call and dropped after it, as an instance
//! made at the start of the call would be. It is made for what its call will
//! have (the same tools, the same grants, the same directories, so the same
//! WASI preopens, variables and limits); the call's own scope (its id,
//! session, progress, cancellation, deadline) replaces the placeholder one
//! before the guest runs any export. What a guest's start function saw
//! (the clock) is from when the spare was made.
//!
//! Making a spare is bounded by [`MAKING_TIMEOUT`] and the call's memory
//! limit.
//!
//! Only tools whose last instantiation took at least the threshold get
//! spares (ordering one costs a thread hand-off, more than making a small
//! Rust tool's instance); a tool whose spare failed to instantiate gets no
//! more. At most [`SPARE_INSTANCES`] are ready or being made at once, their
//! pool slots set aside beside the calls' and the warm instances'; one
//! unused for [`IDLE`] is dropped.

use crate::metrics::Busy;
use crate::registry::Registry;
use crate::sandbox::Instance;
use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Spares ready or being made at most, across tools.
pub(crate) const SPARE_INSTANCES: u32 = 2;
/// A tool gets spares once making one of its instances took this long.
pub(crate) const SPARE_ABOVE: Duration = Duration::from_micros(250);
/// How long a spare nobody took is kept.
const IDLE: Duration = Duration::from_secs(60);
/// Longest the making of one spare may take (the call's own timeout if
/// shorter): a thousand times what an interpreter's instance takes. A guest
/// that runs longer while being made (a start function that spins) is
/// stopped there, and its tool gets no more spares.
pub(super) const MAKING_TIMEOUT: Duration = Duration::from_secs(1);

/// What a spare is made for.
pub(super) use super::warm::Made as Key;

/// Makes one spare (on the spares' thread).
pub(super) type Make<I> = Box<dyn FnOnce() -> wasmtime::Result<I> + Send>;

struct Order<I> {
    number: u64,
    key: Key,
    make: Make<I>,
}

struct Ready<I> {
    key: Key,
    instance: I,
    since: Instant,
}

struct State<I> {
    ready: Vec<Ready<I>>,
    /// Orders being made: their numbers and keys.
    pending: Vec<(u64, Key)>,
    ordered: u64,
    /// How long making each tool's instance last took.
    costs: HashMap<String, Duration>,
    /// Tools whose spare could not be made.
    refused: HashSet<String>,
}

/// The spares, and the thread making them.
pub(super) struct Spares<I = Instance> {
    above: Option<Duration>,
    busy: Busy,
    state: Arc<Mutex<State<I>>>,
    orders: Mutex<Option<Sender<Order<I>>>>,
}

impl<I: Send + 'static> Spares<I> {
    /// Spares for tools whose instances take at least `above` to make
    /// (`None`: no spares), made while `busy` says no call runs.
    pub(super) fn new(above: Option<Duration>, busy: Busy) -> Spares<I> {
        let state = State {
            ready: Vec::new(),
            pending: Vec::new(),
            ordered: 0,
            costs: HashMap::new(),
            refused: HashSet::new(),
        };
        Spares { above, busy, state: Arc::new(Mutex::new(state)), orders: Mutex::new(None) }
    }

    fn lock(&self) -> MutexGuard<'_, State<I>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The spare made for `key`, if one is ready (taken out: it serves one
    /// call).
    pub(super) fn take(&self, key: &Key, current: &Arc<Registry>) -> Option<I> {
        self.above?;
        let mut state = self.lock();
        prune(&mut state.ready, current);
        let at = state.ready.iter().position(|r| r.key.matches(key))?;
        Some(state.ready.remove(at).instance)
    }

    /// Whether `tool`'s next call gets a spare, recording first that making
    /// an instance of it took `took` (when this call made one).
    pub(super) fn wants(&self, tool: &str, took: Option<Duration>) -> bool {
        let Some(above) = self.above else { return false };
        let mut state = self.lock();
        if let Some(took) = took {
            match state.costs.get_mut(tool) {
                Some(cost) => *cost = took,
                None => {
                    state.costs.insert(tool.to_string(), took);
                }
            }
        }
        !state.refused.contains(tool) && state.costs.get(tool).is_some_and(|cost| *cost >= above)
    }

    /// Has a spare made for `key` by `make`, unless one is ready or being
    /// made for it, or there are as many spares as allowed (the oldest
    /// ready one for another use makes room).
    pub(super) fn order(&self, key: Key, current: &Arc<Registry>, make: Make<I>) {
        let mut state = self.lock();
        prune(&mut state.ready, current);
        if state.ready.iter().any(|r| r.key.matches(&key)) || state.pending.iter().any(|(_, k)| k.matches(&key)) {
            return;
        }
        if state.ready.len() + state.pending.len() >= SPARE_INSTANCES as usize {
            if state.ready.is_empty() {
                return;
            }
            state.ready.remove(0);
        }
        state.ordered += 1;
        let number = state.ordered;
        state.pending.push((number, key.clone()));
        drop(state);
        let order = Order { number, key, make };
        let mut orders = self.orders.lock().unwrap_or_else(|e| e.into_inner());
        let order = match orders.as_ref() {
            None => order,
            Some(tx) => match tx.send(order) {
                Ok(()) => return,
                // The thread is gone (it does not panic: this is in case).
                Err(e) => e.0,
            },
        };
        let (tx, rx) = channel::<Order<I>>();
        let state = Arc::downgrade(&self.state);
        let busy = Arc::clone(&self.busy);
        let spawned = std::thread::Builder::new().name("toolhost-spare".into()).spawn(move || {
            for order in rx {
                // A call started meanwhile: the next call's end orders again.
                let began = Instant::now();
                let made = (!busy()).then(order.make);
                let took = began.elapsed();
                let Some(state) = state.upgrade() else { return };
                let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
                state.pending.retain(|(n, _)| *n != order.number);
                match made {
                    None => {}
                    Some(Ok(instance)) => {
                        // What it cost decides the next order: a tool whose
                        // instance was slow once (a cold first start) and is
                        // quick since gets no more.
                        if let Some(cost) = state.costs.get_mut(&order.key.tool) {
                            *cost = took;
                        }
                        state.ready.push(Ready { key: order.key, instance, since: Instant::now() });
                    }
                    Some(Err(e)) => {
                        tracing::debug!(tool = %order.key.tool, error = %format!("{e:#}"), "no spare instances");
                        state.refused.insert(order.key.tool);
                    }
                }
            }
        });
        match spawned.and_then(|_| tx.send(order).map_err(|_| std::io::Error::other("the spares' thread ended"))) {
            Ok(()) => *orders = Some(tx),
            Err(e) => {
                tracing::warn!(error = %e, "could not start the spares' thread");
                self.lock().pending.retain(|(n, _)| *n != number);
            }
        }
    }
}

fn prune<I>(ready: &mut Vec<Ready<I>>, current: &Arc<Registry>) {
    ready.retain(|r| !r.key.reloaded(current) && r.since.elapsed() < IDLE);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsx::Dirs;
    use crate::grants::Grants;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn key(registry: &Arc<Registry>, tool: &str) -> Key {
        Key::new(registry, tool, None, &Dirs::default())
    }

    fn idle() -> Busy {
        Arc::new(|| false)
    }

    /// Waits until nothing is being made.
    fn settle<I: Send + 'static>(spares: &Spares<I>) {
        let until = Instant::now() + Duration::from_secs(10);
        while !spares.lock().pending.is_empty() {
            assert!(Instant::now() < until, "a spare is still being made");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn only_slow_tools_get_spares_and_each_serves_one_call() {
        let spares: Spares<u32> = Spares::new(Some(Duration::from_millis(1)), idle());
        let registry = Arc::new(Registry::default());
        assert!(!spares.wants("Slow", None), "never made: no cost known");
        assert!(!spares.wants("Quick", Some(Duration::from_micros(10))));
        assert!(spares.wants("Slow", Some(Duration::from_millis(3))));
        assert!(spares.wants("Slow", None), "served by a spare: the last cost counts");
        let made = Arc::new(AtomicU32::new(0));
        let make = |made: &Arc<AtomicU32>| -> Make<u32> {
            let made = Arc::clone(made);
            Box::new(move || Ok(made.fetch_add(1, Ordering::SeqCst) + 1))
        };
        spares.order(key(&registry, "Slow"), &registry, make(&made));
        // One per use: a second order while one is made or ready is ignored.
        spares.order(key(&registry, "Slow"), &registry, make(&made));
        settle(&spares);
        assert_eq!(made.load(Ordering::SeqCst), 1);
        assert_eq!(spares.take(&key(&registry, "Slow"), &registry), Some(1));
        assert_eq!(spares.take(&key(&registry, "Slow"), &registry), None, "a spare serves one call");
        assert_eq!(spares.take(&key(&registry, "Other"), &registry), None);
    }

    #[test]
    fn a_tool_slow_to_instantiate_once_gets_no_more_spares_once_they_are_quick_to_make() {
        let spares: Spares<u32> = Spares::new(Some(Duration::from_millis(5)), idle());
        let registry = Arc::new(Registry::default());
        // A cold first start was slow; every spare since took microseconds.
        assert!(spares.wants("Read", Some(Duration::from_millis(20))));
        spares.order(key(&registry, "Read"), &registry, Box::new(|| Ok(1)));
        settle(&spares);
        assert!(!spares.wants("Read", None), "the spare's own cost counts");
        // One that stays slow keeps them.
        assert!(spares.wants("Python", Some(Duration::from_millis(20))));
        spares.order(
            key(&registry, "Python"),
            &registry,
            Box::new(|| {
                std::thread::sleep(Duration::from_millis(10));
                Ok(2)
            }),
        );
        settle(&spares);
        assert!(spares.wants("Python", None));
    }

    #[test]
    fn a_reload_or_other_grants_or_directories_do_not_get_the_spare() {
        let spares: Spares<u32> = Spares::new(Some(Duration::ZERO), idle());
        let registry = Arc::new(Registry::default());
        spares.order(key(&registry, "T"), &registry, Box::new(|| Ok(7)));
        settle(&spares);
        let granted = Arc::new(Grants::default());
        assert_eq!(spares.take(&Key::new(&registry, "T", Some(&granted), &Dirs::default()), &registry), None);
        let elsewhere = Dirs { cwd: "/elsewhere".into(), ..Dirs::default() };
        assert_eq!(spares.take(&Key::new(&registry, "T", None, &elsewhere), &registry), None);
        let reloaded = Arc::new(Registry::default());
        assert_eq!(spares.take(&key(&registry, "T"), &reloaded), None, "made for the tools before the reload");
        assert_eq!(spares.take(&key(&registry, "T"), &registry), None, "dropped once stale");
    }

    #[test]
    fn at_most_so_many_and_a_failed_spare_stops_them_for_its_tool() {
        let spares: Spares<u32> = Spares::new(Some(Duration::ZERO), idle());
        let registry = Arc::new(Registry::default());
        for (n, tool) in ["A", "B", "C"].into_iter().enumerate() {
            spares.order(key(&registry, tool), &registry, Box::new(move || Ok(n as u32)));
            settle(&spares);
        }
        assert_eq!(spares.lock().ready.len(), SPARE_INSTANCES as usize);
        assert_eq!(spares.take(&key(&registry, "A"), &registry), None, "the oldest made room");
        assert_eq!(spares.take(&key(&registry, "C"), &registry), Some(2));
        assert!(spares.wants("Bad", Some(Duration::from_millis(1))));
        spares.order(key(&registry, "Bad"), &registry, Box::new(|| Err(wasmtime::Error::msg("trapped in start"))));
        settle(&spares);
        assert!(!spares.wants("Bad", None));
        assert_eq!(spares.take(&key(&registry, "Bad"), &registry), None);
    }

    #[test]
    fn nothing_is_made_while_a_call_runs() {
        let running = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let busy: Busy = {
            let running = Arc::clone(&running);
            Arc::new(move || running.load(Ordering::SeqCst))
        };
        let spares: Spares<u32> = Spares::new(Some(Duration::ZERO), busy);
        let registry = Arc::new(Registry::default());
        spares.order(key(&registry, "T"), &registry, Box::new(|| Ok(1)));
        settle(&spares);
        assert_eq!(spares.take(&key(&registry, "T"), &registry), None);
        running.store(false, Ordering::SeqCst);
        spares.order(key(&registry, "T"), &registry, Box::new(|| Ok(2)));
        settle(&spares);
        assert_eq!(spares.take(&key(&registry, "T"), &registry), Some(2), "ordered again once idle");
    }

    #[test]
    fn no_threshold_no_spares() {
        let spares: Spares<u32> = Spares::new(None, idle());
        assert!(!spares.wants("Slow", Some(Duration::from_secs(1))));
    }

    /// A component whose core module's start function never returns:
    /// guest code that runs while an instance is being made (toolchains'
    /// components run none; a hand-made one can).
    fn spinning_at_start() -> Vec<u8> {
        use wasm_encoder::{BlockType, Instruction::*};
        crate::sandbox::core_component(&[&[Loop(BlockType::Empty), Br(0), End, End]], true)
    }

    #[test]
    fn making_a_spare_whose_start_function_spins_is_stopped_at_the_making_timeout() {
        use crate::imports::{CallScope, Namespace};
        use crate::sandbox::{Allocator, CallLimits, GuestFault, Sandbox};
        let limits = CallLimits { memory: 64 << 20, timeout: Duration::from_secs(120) };
        let sandbox = Sandbox::new(Allocator::OnDemand, limits, 0, 1, 0).unwrap();
        let component = wasmtime::component::Component::new(sandbox.engine(), spinning_at_start()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let scope = CallScope::new(
            "Spinner".into(),
            String::new(),
            Arc::new(crate::session::Session::ephemeral(dir.path())),
            Namespace::Private("spare/".into()),
            Arc::new(Dirs::default()),
            Arc::default(),
        );
        // As the pipeline makes a spare: the call's limits, the timeout
        // cut to the making's, the epoch ticker running.
        let making = CallLimits { timeout: limits.timeout.min(MAKING_TIMEOUT), ..limits };
        let (mut store, _) = crate::sandbox::store(sandbox.engine(), &Grants::default(), scope, making);
        let _running = sandbox.running();
        let started = Instant::now();
        let made = wasmtime::component::Linker::new(sandbox.engine()).instantiate(&mut store, &component);
        let took = started.elapsed();
        let e = made.expect_err("a start function that spins never makes an instance");
        assert!(matches!(GuestFault::of(&e), GuestFault::Timeout(t) if t == MAKING_TIMEOUT), "{e:#}");
        assert!(took >= MAKING_TIMEOUT && took < MAKING_TIMEOUT * 5, "stopped after {took:?}");
    }
}
