//! The sandbox: the one wasmtime engine (pooling allocator, epoch ticker),
//! the linker of the contract, and one fresh, bounded Store per call with
//! the capabilities a tool was granted and nothing else.

mod bounded;
mod engine;
mod grants;
mod instance;
pub mod network;
mod store;

pub use engine::{Allocator, EPOCH_TICK, PoolSizes, RunningGuard, base_config};
pub use grants::{FileAccess, Grants, intersect};
pub use instance::{Gate, GateGuard, Instance};
pub use store::{CAPTURED_OUTPUT, CallLimits, Captured, GuestFault, HostState, Interrupted, MemoryExceeded, store};

use crate::contract::CallScope;
use crate::contract::ToolPre;
use wasmtime::Engine;
use wasmtime::component::Linker;

/// The engine, the linker and the admission gate, built once per host.
pub struct Sandbox {
    runtime: engine::Runtime,
    linker: Linker<HostState>,
    limits: CallLimits,
    gate: Gate,
}

impl Sandbox {
    /// An engine with `allocator`, sized for `instances` calls at once of at
    /// most `most_memory` each (at least `limits.memory`: more for tools
    /// granted more), and the linker with WASI and the toolhost interfaces.
    /// The pool also holds the instances kept warm between calls.
    pub fn new(
        allocator: Allocator,
        limits: CallLimits,
        most_memory: usize,
        instances: u32,
    ) -> wasmtime::Result<Sandbox> {
        let max_memory = most_memory.max(limits.memory).next_multiple_of(64 << 10);
        // The calls' slots, and the warm instances' beside them.
        let sizes = PoolSizes { instances: instances + crate::pipeline::WARM_INSTANCES, max_memory };
        let runtime = engine::Runtime::new(allocator, sizes)?;
        let mut linker = Linker::new(&runtime.engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        // Waiting in WASI ends at the call's deadline or cancellation.
        bounded::add_to_linker(&mut linker)?;
        // Outgoing HTTP, policed by the call's network (refused to a tool
        // granted no host).
        #[cfg(feature = "http")]
        wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker)?;
        crate::contract::add_to_linker(&mut linker, HostState::call_view)?;
        Ok(Sandbox { runtime, linker, limits, gate: Gate::new(instances as usize) })
    }

    pub fn engine(&self) -> &Engine {
        &self.runtime.engine
    }

    pub fn linker(&self) -> &Linker<HostState> {
        &self.linker
    }

    /// The limits of one call.
    pub fn limits(&self) -> CallLimits {
        self.limits
    }

    /// The instance allocator in use (after any fallback).
    pub fn allocator(&self) -> Allocator {
        self.runtime.allocator
    }

    /// Keeps the epoch ticking while the guard lives (so deadlines fire).
    pub fn running(&self) -> RunningGuard {
        self.runtime.running()
    }

    /// Waits for an instance slot.
    pub fn admit(&self) -> GateGuard<'_> {
        self.gate.enter()
    }

    /// A fresh instance of `pre` with `grants`, serving `scope`, within `limits`.
    pub fn instantiate(
        &self,
        pre: &ToolPre<HostState>,
        grants: &Grants,
        scope: CallScope,
        limits: CallLimits,
    ) -> wasmtime::Result<Instance> {
        Instance::new(self.engine(), pre, grants, scope, limits)
    }
}
