//! Optimized compiles in the background. A large component's first load
//! compiles it with the quick engine (Winch) so that it serves within a
//! second or two; its optimized compile (Cranelift) then runs here, one
//! component at a time, into the cache, and the host is told, so that it
//! swaps the tool for its optimized form (see `Host`'s promotion).

use super::cache;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

/// Told the content hash of each component whose optimized form is now in
/// the cache.
pub(super) type Optimized = Box<dyn Fn(&str) + Send + 'static>;

struct Job {
    hash: String,
    source: String,
    wasm: Arc<Vec<u8>>,
}

/// The queue of optimized compiles. Allowance made before
/// [`Optimizer::start`] wait for it (a host's first scan runs before the
/// host exists to be told).
#[derive(Default)]
pub(crate) struct Optimizer {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Hashes queued or compiling: each is compiled once.
    asked: HashSet<String>,
    waiting: Vec<Job>,
    worker: Option<mpsc::Sender<Job>>,
}

impl Optimizer {
    /// Queues the optimized compile of `wasm` (whose content hash is `hash`).
    pub(crate) fn request(&self, hash: &str, source: &str, wasm: Arc<Vec<u8>>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !state.asked.insert(hash.to_string()) {
            return;
        }
        let job = Job { hash: hash.to_string(), source: source.to_string(), wasm };
        match &state.worker {
            Some(worker) => {
                if let Err(mpsc::SendError(job)) = worker.send(job) {
                    tracing::debug!(source = %job.source, "the optimizer has stopped; this component stays quick");
                }
            }
            None => state.waiting.push(job),
        }
    }

    /// Starts compiling, with `engine` into `cache_dir`, on a thread of its
    /// own that ends when the optimizer is dropped; `done` is told each
    /// component compiled, and the `quick` engine's compile of it leaves the
    /// cache. A second call does nothing.
    pub(crate) fn start(
        &self,
        engine: &wasmtime::Engine,
        quick: Option<&wasmtime::Engine>,
        cache_dir: PathBuf,
        done: Optimized,
    ) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.worker.is_some() {
            return;
        }
        let (tx, rx) = mpsc::channel::<Job>();
        let engine = engine.weak();
        let quick = quick.cloned();
        let spawned = std::thread::Builder::new().name("toolhost-optimize".into()).spawn(move || {
            while let Ok(job) = rx.recv() {
                let Some(engine) = engine.upgrade() else { return };
                let started = std::time::Instant::now();
                tracing::info!(source = %job.source, bytes = job.wasm.len(), "optimizing in the background");
                match cache::compile(&engine, &job.wasm, &job.hash, Some(&cache_dir)) {
                    Ok(_) => {
                        tracing::info!(
                            source = %job.source,
                            took_ms = started.elapsed().as_millis() as u64,
                            "optimized; its calls move to the optimized code"
                        );
                        drop(engine);
                        if let Some(quick) = &quick {
                            cache::remove(quick, &job.hash, &cache_dir);
                        }
                        done(&job.hash);
                    }
                    Err(e) => {
                        tracing::warn!(source = %job.source, error = %format!("{e:#}"), "the optimized compile failed; the tool stays quick")
                    }
                }
            }
        });
        match spawned {
            Ok(_) => {
                for job in state.waiting.drain(..) {
                    let _ = tx.send(job);
                }
                state.worker = Some(tx);
            }
            Err(e) => tracing::warn!(error = %e, "no thread to optimize on; quick components stay quick"),
        }
    }
}
