//! The wasmtime [`Engine`]s: the optimizing one every tool runs on in the
//! end, and the quick one (Winch, a baseline compiler) a large component's
//! first load runs on until its optimized compile is done; their
//! configuration and instance allocator, and their epoch ticker
//! ([`crate::epoch`]).

use crate::epoch::{RunningGuard, Ticker};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig};

/// Which instance allocator to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Allocator {
    /// The pooling allocator, falling back to on-demand if its address-space
    /// reservation fails (e.g. under `ulimit -v`).
    #[default]
    Auto,
    /// The pooling allocator or nothing.
    Pooling,
    /// Plain mmap per instance: slower to instantiate, no up-front reservation.
    OnDemand,
}

impl std::str::FromStr for Allocator {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Allocator::Auto),
            "pooling" => Ok(Allocator::Pooling),
            "on-demand" | "ondemand" => Ok(Allocator::OnDemand),
            other => Err(format!("unknown allocator `{other}` (expected auto, pooling or on-demand)")),
        }
    }
}

/// Sizes of the instance pool.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PoolSizes {
    /// Tool instances alive at once (one per running call).
    pub instances: u32,
    /// Largest linear memory of one instance, in bytes.
    pub max_memory: usize,
}

/// The engines plus what keeps them ticking.
pub(super) struct Runtime {
    /// Optimizing (Cranelift), with the chosen allocator.
    pub engine: Engine,
    /// Quick to compile (Winch), slower code; the on-demand allocator (its
    /// instances are few and short-lived). `None` where Winch does not run.
    pub quick: Option<Engine>,
    /// Optimizing, with the component-model async ABI (for the components
    /// that use it); the on-demand allocator.
    pub concurrent: Engine,
    /// The allocator actually in use (after any fallback).
    pub allocator: Allocator,
    ticker: Ticker,
}

impl Runtime {
    /// Creates the engine with the requested allocator.
    pub(super) fn new(allocator: Allocator, sizes: PoolSizes) -> wasmtime::Result<Runtime> {
        let (engine, used) = match allocator {
            Allocator::OnDemand => (Engine::new(&base_config())?, Allocator::OnDemand),
            Allocator::Pooling => (Engine::new(&pooling_config(sizes))?, Allocator::Pooling),
            Allocator::Auto => match Engine::new(&pooling_config(sizes)) {
                Ok(engine) => (engine, Allocator::Pooling),
                Err(e) => {
                    tracing::warn!(error = %e, "pooling allocator unavailable; using the on-demand allocator");
                    (Engine::new(&base_config())?, Allocator::OnDemand)
                }
            },
        };
        let quick = match Engine::new(&quick_config()) {
            Ok(quick) => Some(quick),
            Err(e) => {
                tracing::debug!(error = %e, "no quick compiler here; every component compiles optimized");
                None
            }
        };
        let concurrent = Engine::new(&concurrent_config())?;
        let ticker = Ticker::start([&engine, &concurrent].into_iter().chain(&quick));
        Ok(Runtime { engine, quick, concurrent, allocator: used, ticker })
    }

    /// Marks a call as running until the guard drops; the ticker runs only
    /// while some call does.
    pub(super) fn running(&self) -> RunningGuard {
        self.ticker.enter()
    }
}

/// The compile-relevant configuration of every engine toolhost creates; the
/// instance allocator is chosen separately (it does not affect code, so cached
/// artifacts work with either).
pub(crate) fn base_config() -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    // Concurrency (the component-model async ABI) costs every Store and
    // call: 2.5 µs of a 15 µs call through the pipeline, measured. Only the
    // engine of the components that use it has it (`concurrent_config`).
    config.concurrency_support(false);
    // Stops a guest spinning in wasm: every Store gets a deadline, checked at
    // loop headers and function entries.
    config.epoch_interruption(true);
    // Copy-on-write images make a fresh instance's memory cheap to set up.
    config.memory_init_cow(true);
    config.cranelift_opt_level(OptLevel::Speed);
    config.parallel_compilation(true);
    config
}

/// [`base_config`] with the component-model async ABI: the engine of the
/// components that use it (futures, streams, subtasks), with the on-demand
/// allocator (they are few; the pool stays the synchronous tools').
pub(crate) fn concurrent_config() -> Config {
    let mut config = base_config();
    config.concurrency_support(true);
    config.wasm_component_model_async(true);
    config
}

/// [`base_config`] compiling with Winch: about four times faster to compile
/// than Cranelift, slower code.
pub(crate) fn quick_config() -> Config {
    let mut config = base_config();
    config.strategy(wasmtime::Strategy::Winch);
    // Winch leaves the trampolines (one per function a table or an export
    // reaches: thousands in an interpreter) to Cranelift; unoptimized,
    // they compile in a fraction of the time.
    config.cranelift_opt_level(OptLevel::None);
    config
}

fn pooling_config(sizes: PoolSizes) -> Config {
    let mut pool = PoolingAllocationConfig::new();
    let n = sizes.instances.max(1);
    pool.total_component_instances(n)
        // A wasip2 component holds a handful of core instances (the program,
        // the WASI adapter, shims), at most two memories, a few tables.
        .total_core_instances(n * 8)
        .total_memories(n * 2)
        .total_tables(n * 8)
        .total_stacks(n)
        .max_memory_size(sizes.max_memory)
        .max_core_instance_size(4 << 20)
        .max_component_instance_size(4 << 20)
        .max_tables_per_module(4)
        .max_memories_per_module(1)
        // Keeping the first pages of memories and tables resident makes teardown
        // cheap and avoids the cross-core TLB shootdowns of decommitting them.
        .linear_memory_keep_resident(2 << 20)
        .table_keep_resident(64 << 10)
        .max_unused_warm_slots(n);
    // With it, resetting a slot touches only the pages the guest dirtied
    // (measured: 1.5x faster calls than without).
    if PoolingAllocationConfig::is_pagemap_scan_available() {
        pool.pagemap_scan(Enabled::Yes);
    }
    let mut config = base_config();
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config
}
