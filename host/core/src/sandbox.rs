//! The sandbox: the one wasmtime engine (pooling allocator, epoch ticker),
//! the linker of the contract, and one fresh, bounded Store per call with
//! the capabilities a tool was granted and nothing else.

mod bounded;
mod engine;
mod instance;
pub(crate) mod network;
mod output;
mod stdio;
mod store;
mod usage;

pub(crate) use crate::epoch::RunningGuard;
pub(crate) use crate::grants::CallLimits;
pub use engine::Allocator;
pub(crate) use engine::PoolSizes;
#[cfg(test)]
pub(crate) use engine::{base_config, quick_config};
pub(crate) use instance::{Gate, GateGuard, Instance};
pub(crate) use store::{CAPTURED_OUTPUT, Captured, GuestFault, HostState, store};
pub use usage::Usage;
pub(crate) use usage::thread_cpu_time;

use crate::contract::ToolPre;
use crate::grants::Grants;
use crate::imports::CallScope;
use std::sync::Arc;
use wasmtime::Engine;
use wasmtime::component::Linker;

/// Reads the instance slots: all, taken, and calls waiting for one.
pub(crate) type SlotReader = Arc<dyn Fn() -> (usize, usize, usize) + Send + Sync>;

/// The engines, their linkers and the admission gate, built once per host.
pub(crate) struct Sandbox {
    runtime: engine::Runtime,
    linker: Linker<HostState>,
    /// The quick engine's, when there is one.
    quick_linker: Option<Linker<HostState>>,
    /// The concurrent engine's.
    concurrent_linker: Linker<HostState>,
    limits: CallLimits,
    /// Shared with the host's metrics, which read it when exported.
    gate: Arc<Gate>,
    /// The slots Script calls may hold: half of them at most, so the calls
    /// a script waits on always find one; `None` with a single slot.
    script_gate: Option<Gate>,
}

/// The linker of the contract on `engine`: WASI and the toolhost interfaces,
/// and WASI 0.3 with `wasi_03` (an engine with concurrency support only).
fn contract_linker(engine: &Engine, wasi_03: bool) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    // The same WASI context as 0.2 serves 0.3: the same directories,
    // network checks, variables and captured output. Its waits are host
    // futures the call's `Stop` bounds (`contract::Bounds`).
    if wasi_03 {
        wasmtime_wasi::p3::add_to_linker(&mut linker)?;
    }
    // Waiting in WASI ends at the call's deadline or cancellation.
    bounded::add_to_linker(&mut linker)?;
    // A command's arguments are its call's.
    stdio::add_to_linker(&mut linker, wasi_03)?;
    // Outgoing HTTP, policed by the call's network (refused to a tool
    // granted no host).
    #[cfg(feature = "http")]
    wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker)?;
    // And wasi:http 0.3's client, sending through the same hooks (the same
    // network checks and caps).
    #[cfg(feature = "http")]
    if wasi_03 {
        wasmtime_wasi_http::p3::add_to_linker(&mut linker)?;
    }
    crate::imports::add_to_linker(&mut linker, HostState::call_view)?;
    Ok(linker)
}

impl Sandbox {
    /// An engine with `allocator`, sized for `instances` calls at once of at
    /// most `most_memory` each (at least `limits.memory`: more for tools
    /// granted more), and the linker with WASI and the toolhost interfaces.
    /// The pool also holds `warm` instances kept warm between calls.
    pub(crate) fn new(
        allocator: Allocator,
        limits: CallLimits,
        most_memory: usize,
        instances: u32,
        warm: u32,
    ) -> wasmtime::Result<Sandbox> {
        let max_memory = most_memory.max(limits.memory).next_multiple_of(64 << 10);
        // The calls' slots, and the warm instances' beside them.
        let sizes = PoolSizes { instances: instances + warm, max_memory };
        let runtime = engine::Runtime::new(allocator, sizes)?;
        let linker = contract_linker(&runtime.engine, false)?;
        let quick_linker = runtime.quick.as_ref().map(|quick| contract_linker(quick, false)).transpose()?;
        let concurrent_linker = contract_linker(&runtime.concurrent, true)?;
        let script_gate = (instances >= 2).then(|| Gate::new(instances as usize / 2));
        Ok(Sandbox {
            runtime,
            linker,
            quick_linker,
            concurrent_linker,
            limits,
            gate: Arc::new(Gate::new(instances as usize)),
            script_gate,
        })
    }

    /// The optimizing engine.
    pub(crate) fn engine(&self) -> &Engine {
        &self.runtime.engine
    }

    /// The quick-compiling engine, if this machine has one.
    pub(crate) fn quick_engine(&self) -> Option<&Engine> {
        self.runtime.quick.as_ref()
    }

    /// The engine of the components that use the component-model async
    /// ABI (optimizing; with concurrency support, which the others go
    /// without).
    pub(crate) fn concurrent_engine(&self) -> &Engine {
        &self.runtime.concurrent
    }

    /// The engine a component compiles on, for good: the concurrent one if
    /// it uses the async ABI.
    pub(crate) fn engine_for(&self, concurrent: bool) -> &Engine {
        if concurrent { self.concurrent_engine() } else { self.engine() }
    }

    /// The linker for components compiled by `engine` (one of this sandbox's).
    pub(crate) fn linker_for(&self, engine: &Engine) -> &Linker<HostState> {
        if Engine::same(&self.runtime.concurrent, engine) {
            return &self.concurrent_linker;
        }
        match (&self.runtime.quick, &self.quick_linker) {
            (Some(quick), Some(linker)) if Engine::same(quick, engine) => linker,
            _ => &self.linker,
        }
    }

    /// The limits of one call.
    pub(crate) fn limits(&self) -> CallLimits {
        self.limits
    }

    /// The instance allocator in use (after any fallback).
    pub(crate) fn allocator(&self) -> Allocator {
        self.runtime.allocator
    }

    /// Keeps the epoch ticking while the guard lives (so deadlines fire).
    pub(crate) fn running(&self) -> RunningGuard {
        self.runtime.running()
    }

    /// Waits for an instance slot.
    pub(crate) fn admit(&self) -> GateGuard<'_> {
        self.gate.enter()
    }

    /// Waits for a slot among those Script calls may hold (taken before
    /// the call's instance slot); `None` when the host has a single slot.
    pub(crate) fn admit_script(&self) -> Option<GateGuard<'_>> {
        self.script_gate.as_ref().map(Gate::enter)
    }

    /// Instance slots in all, taken, and calls waiting for one.
    pub(crate) fn slots(&self) -> (usize, usize, usize) {
        self.gate.use_now()
    }

    /// Reads the slots as [`Sandbox::slots`] does, from anywhere, for as
    /// long as the sandbox lives (then all zero).
    pub(crate) fn slot_reader(&self) -> SlotReader {
        let gate = Arc::downgrade(&self.gate);
        Arc::new(move || gate.upgrade().map_or((0, 0, 0), |g| g.use_now()))
    }

    /// A fresh instance of `pre` with `grants`, serving `scope`, within `limits`.
    pub(crate) fn instantiate(
        &self,
        pre: &ToolPre<HostState>,
        grants: &Grants,
        scope: CallScope,
        limits: CallLimits,
    ) -> wasmtime::Result<Instance> {
        Instance::new(pre.engine(), pre, grants, scope, limits)
    }
}

/// A component holding one core module of `bodies`, functions of no
/// parameters and no results (each body ends with its own `End`). With
/// `start`, the first is the module's start function and the component
/// instantiates the module, so it runs while the component is instantiated.
#[cfg(test)]
pub(crate) fn core_component(bodies: &[&[wasm_encoder::Instruction<'_>]], start: bool) -> Vec<u8> {
    use wasm_encoder::{CodeSection, Function, FunctionSection, Module, ModuleArg, TypeSection};
    let mut module = Module::new();
    let mut types = TypeSection::new();
    types.ty().function([], []);
    module.section(&types);
    let mut functions = FunctionSection::new();
    let mut code = CodeSection::new();
    for body in bodies {
        functions.function(0);
        let mut f = Function::new([]);
        for instruction in *body {
            f.instruction(instruction);
        }
        code.function(&f);
    }
    module.section(&functions);
    if start {
        module.section(&wasm_encoder::StartSection { function_index: 0 });
    }
    module.section(&code);
    let mut component = wasm_encoder::Component::new();
    component.section(&wasm_encoder::ModuleSection(&module));
    if start {
        let mut instances = wasm_encoder::InstanceSection::new();
        instances.instantiate(0, Vec::<(&str, ModuleArg)>::new());
        component.section(&instances);
    }
    component.finish()
}
