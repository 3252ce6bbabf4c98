//! A live instance serving one call, and the admission gate in front of the
//! instance pool.

use super::store::{Captured, HostState, renew, store};
use crate::contract::{Guest, ToolPre};
use crate::grants::CallLimits;
use crate::grants::Grants;
use crate::imports::CallScope;
use std::sync::{Condvar, Mutex};
use wasmtime::{Engine, Store};

/// A live instance serving one call.
pub(crate) struct Instance {
    pub store: Store<HostState>,
    pub guest: Guest,
    pub captured: Captured,
    /// When it was made.
    pub born: std::time::Instant,
    /// When it last served a call (its `call` export ran), if ever: of two
    /// instances kept for the same use, the one that served the latest
    /// call stays (see the pipeline's warm instances).
    pub last_call: Option<std::time::Instant>,
}

impl Instance {
    /// Instantiates `pre` in a fresh Store with `grants`, `scope` and `limits`.
    pub(crate) fn new(
        engine: &Engine,
        pre: &ToolPre<HostState>,
        grants: &Grants,
        scope: CallScope,
        limits: CallLimits,
    ) -> wasmtime::Result<Instance> {
        let (mut store, captured) = store(engine, grants, scope, limits);
        let guest = pre.instantiate(&mut store)?;
        Ok(Instance { store, guest, captured, born: std::time::Instant::now(), last_call: None })
    }

    /// Makes a warm instance (made with the same grants and directories)
    /// serve another call: `scope`, within `limits`.
    pub(crate) fn renew(&mut self, grants: &Grants, scope: CallScope, limits: CallLimits) {
        renew(&mut self.store, &mut self.captured, grants, scope, limits);
    }
}

/// Admission in front of the instance pool: a call waits for a slot instead
/// of failing when the pool is full.
pub(crate) struct Gate {
    slots: usize,
    free: Mutex<usize>,
    freed: Condvar,
    waiting: std::sync::atomic::AtomicUsize,
}

impl Gate {
    pub(crate) fn new(slots: usize) -> Gate {
        Gate { slots, free: Mutex::new(slots), freed: Condvar::new(), waiting: Default::default() }
    }

    /// Waits for a free slot; it is freed when the guard drops.
    pub(crate) fn enter(&self) -> GateGuard<'_> {
        use std::sync::atomic::Ordering::Relaxed;
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if *free == 0 {
            self.waiting.fetch_add(1, Relaxed);
            while *free == 0 {
                free = self.freed.wait(free).unwrap_or_else(|e| e.into_inner());
            }
            self.waiting.fetch_sub(1, Relaxed);
        }
        *free -= 1;
        GateGuard { gate: self }
    }

    /// Slots in all, slots taken, and calls waiting for one.
    pub(crate) fn use_now(&self) -> (usize, usize, usize) {
        let free = *self.free.lock().unwrap_or_else(|e| e.into_inner());
        (self.slots, self.slots - free, self.waiting.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// A slot of the [`Gate`], held while a call has an instance.
pub(crate) struct GateGuard<'a> {
    gate: &'a Gate,
}

impl Drop for GateGuard<'_> {
    fn drop(&mut self) {
        *self.gate.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.gate.freed.notify_one();
    }
}
