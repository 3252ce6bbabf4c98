//! Compiling a component under limits: through the on-disk cache, on the
//! quick engine (Winch) for a large first load or the optimizing one, in a
//! thread that gives up at a deadline, with progress told while it runs; and
//! linking the result against the contract.

use super::cache;
use super::load::Loader;
use super::tool::{LinkLater, LoadError, WasmSource};
use crate::contract::{ToolPre, Version};
use crate::sandbox::{HostState, Sandbox};
use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::Component;

/// The size from which a plugin's first load compiles quick: Cranelift
/// takes about a second per megabyte on two cores, Winch a quarter of that.
pub(crate) const QUICK_ABOVE: usize = 1 << 20;

/// A compile that takes long (the first load of a large component): told
/// once a second while it runs, and once when it is done.
#[derive(Clone, Debug)]
pub struct CompileProgress {
    /// The file, or `built-in NAME`.
    pub source: String,
    /// The component's size.
    pub bytes: usize,
    /// Time since the compile started.
    pub elapsed: Duration,
    /// Whether it has finished.
    pub done: bool,
}

/// Receives [`CompileProgress`].
pub(crate) type CompileSink = Arc<dyn Fn(&CompileProgress) + Send + Sync>;

/// A compile shorter than this is not reported.
pub(super) const REPORT_AFTER: Duration = Duration::from_secs(1);

impl Loader<'_> {
    /// The component compiled (through the cache), and whether by the quick
    /// engine: a plugin (`quick_ok`) of at least [`Loader::quick_above`]
    /// bytes whose optimized form is not cached compiles quick, and its
    /// optimized compile is asked of [`Loader::optimizer`]. A compile that
    /// takes long is reported to [`Loader::progress`] and the log. A
    /// component on the async ABI (`concurrent`) compiles on the concurrent
    /// engine, never quick.
    pub(super) fn compile(
        &self,
        source: &str,
        wasm: Cow<'static, [u8]>,
        hash: &str,
        timeout: Duration,
        (quick_ok, concurrent): (bool, bool),
    ) -> Result<(Component, bool), LoadError> {
        // A compiled form in the cache is read here; only a compile needs a
        // thread of its own (and the bytes copied to it).
        let optimizing = self.sandbox.engine_for(concurrent);
        if let Some(component) = self.cached_on(optimizing, hash) {
            return Ok((component, false));
        }
        let quick = match (self.quick_above, self.sandbox.quick_engine(), self.cache_dir) {
            (Some(above), Some(quick), Some(_)) if quick_ok && !concurrent && wasm.len() >= above => Some(quick),
            _ => None,
        };
        let wasm = Arc::new(wasm.into_owned());
        let Some(quick) = quick else {
            return self.compile_on(optimizing, source, &wasm, hash, timeout).map(|c| (c, false));
        };
        let compiled = match self.cached_on(quick, hash) {
            Some(component) => Ok(component),
            None => self.compile_on(quick, source, &wasm, hash, timeout),
        };
        let component = match compiled {
            Ok(component) => component,
            // What Winch does not compile (tail calls, exceptions, relaxed
            // SIMD, GC, an instruction it lacks), Cranelift may.
            Err(LoadError::Compile(why)) => {
                tracing::info!(source, why, "the quick compiler cannot compile it; compiling it optimized");
                return self.compile_on(optimizing, source, &wasm, hash, timeout).map(|c| (c, false));
            }
            Err(e) => return Err(e),
        };
        tracing::info!(source, "loaded compiled quick (Winch)");
        if let Some(optimizer) = self.optimizer {
            optimizer.request(hash, source, wasm);
        }
        Ok((component, true))
    }

    /// The compiled form `engine` made of the component `hash`, if the cache
    /// holds a usable one.
    pub(super) fn cached_on(&self, engine: &wasmtime::Engine, hash: &str) -> Option<Component> {
        cache::cached(engine, hash, self.cache_dir?)
    }

    /// [`compile_within`] on `engine` (its cache entry known to be missing),
    /// reporting a compile that takes long.
    pub(super) fn compile_on(
        &self,
        engine: &wasmtime::Engine,
        source: &str,
        wasm: &Arc<Vec<u8>>,
        hash: &str,
        timeout: Duration,
    ) -> Result<Component, LoadError> {
        let bytes = wasm.len();
        let started = std::time::Instant::now();
        let mut reported = false;
        let mut tick = |elapsed: Duration| {
            if !reported {
                tracing::info!(source, bytes, "compiling (only its first load compiles)");
                reported = true;
            }
            if let Some(sink) = self.progress {
                sink(&CompileProgress { source: source.to_string(), bytes, elapsed, done: false });
            }
        };
        let out = compile_within(engine, Arc::clone(wasm), hash, self.cache_dir, timeout, REPORT_AFTER, &mut tick);
        if reported {
            tracing::info!(source, took_ms = started.elapsed().as_millis() as u64, ok = out.is_ok(), "compiled");
            if let Some(sink) = self.progress {
                sink(&CompileProgress { source: source.to_string(), bytes, elapsed: started.elapsed(), done: true });
            }
        }
        out
    }
}

/// Runs `work` (loading `bytes` of components, `what`), telling `progress`
/// every second once it took [`REPORT_AFTER`], and when it is done if it
/// was told before.
pub(super) fn reporting<T>(progress: Option<&CompileSink>, what: &str, bytes: usize, work: impl FnOnce() -> T) -> T {
    let Some(sink) = progress else { return work() };
    let started = std::time::Instant::now();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let reporter = scope.spawn(move || {
            let mut told = false;
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(REPORT_AFTER) {
                told = true;
                sink(&CompileProgress { source: what.to_string(), bytes, elapsed: started.elapsed(), done: false });
            }
            told
        });
        let out = work();
        drop(done);
        if reporter.join().unwrap_or(false) {
            tracing::info!(what, took_ms = started.elapsed().as_millis() as u64, "compiled");
            sink(&CompileProgress { source: what.to_string(), bytes, elapsed: started.elapsed(), done: true });
        }
        out
    })
}

/// Compiles `wasm` (through the cache) on a thread of its own, waiting at
/// most `timeout`, calling `tick` with the time so far every `every`. Compiling cannot be interrupted: a compile that takes too long
/// goes on in the background (and is cached for the next start) while the
/// component is reported as skipped.
pub(super) fn compile_within(
    engine: &wasmtime::Engine,
    wasm: Arc<Vec<u8>>,
    hash: &str,
    dir: Option<&Path>,
    timeout: Duration,
    every: Duration,
    tick: &mut dyn FnMut(Duration),
) -> Result<Component, LoadError> {
    use std::sync::mpsc::RecvTimeoutError;
    let (engine, dir, hash) = (engine.clone(), dir.map(Path::to_path_buf), hash.to_string());
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("toolhost-compile".into())
        .spawn(move || {
            let out = cache::compile(&engine, &wasm, &hash, dir.as_deref());
            let _ = tx.send(out);
        })
        .map_err(|e| LoadError::Compile(format!("could not start a compile thread: {e}")))?;
    let started = std::time::Instant::now();
    loop {
        let left = timeout.saturating_sub(started.elapsed());
        match rx.recv_timeout(every.min(left)) {
            Ok(out) => return out.map_err(|e| LoadError::Compile(format!("{e:#}"))),
            Err(RecvTimeoutError::Timeout) if started.elapsed() < timeout => tick(started.elapsed()),
            Err(RecvTimeoutError::Timeout) => {
                return Err(LoadError::TimedOut(format!(
                    "took longer than {} s to compile and was skipped; the compile goes on and is cached, so the next \
                     start may load it",
                    timeout.as_secs()
                )));
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(LoadError::Compile("the compiler stopped without an answer".into()));
            }
        }
    }
}

/// `component` linked against the sandbox's linker, as a tool serving the
/// contract `version`, `concurrent` if it uses the async ABI.
pub(super) fn link(
    sandbox: &Sandbox,
    component: &Component,
    version: Version,
    concurrent: bool,
) -> Result<ToolPre<HostState>, LoadError> {
    let linker = sandbox.linker_for(component.engine());
    let pre = linker.instantiate_pre(component).map_err(|e| LoadError::Link(format!("{e:#}")))?;
    ToolPre::new(version, concurrent, pre).map_err(|e| LoadError::Link(format!("{e:#}")))
}

/// Links a tool loaded with [`Linked::later`]: its compiled form from the
/// cache, or, if that went missing or stale since, compiled again from its
/// bytes (a file's only while they still have the hash it was loaded with).
pub(super) fn link_later(sandbox: &Sandbox, later: &LinkLater) -> Result<ToolPre<HostState>, LoadError> {
    let engine = sandbox.engine_for(later.concurrent);
    let component = match cache::cached(engine, &later.hash, &later.cache_dir) {
        Some(component) => component,
        None => {
            let bytes = match &later.wasm {
                WasmSource::Embedded(bytes) => Cow::Borrowed(*bytes),
                WasmSource::File(path) => {
                    let bytes = std::fs::read(path)
                        .map_err(|e| LoadError::Compile(format!("cannot read {}: {e}", path.display())))?;
                    if cache::content_hash(&bytes) != later.hash {
                        return Err(LoadError::Compile(format!(
                            "{} changed since it was loaded; it is loaded again when the plugins directory is next read",
                            path.display()
                        )));
                    }
                    Cow::Owned(bytes)
                }
            };
            cache::compile(engine, &bytes, &later.hash, Some(&later.cache_dir))
                .map_err(|e| LoadError::Compile(format!("{e:#}")))?
        }
    };
    tracing::debug!(hash = %later.hash, "linked at first use");
    link(sandbox, &component, later.version, later.concurrent)
}

/// `f` of every item, on up to one thread per core, in the items' order
/// (`None` for an item whose thread panicked).
pub(super) fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<Option<R>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len());
    if threads <= 1 {
        return items.iter().map(|item| Some(f(item))).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<R>>> = items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = items.get(i) else { return };
                    let out = f(item);
                    *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(out);
                }
            });
        }
    });
    slots.into_iter().map(|slot| slot.into_inner().unwrap_or_else(|e| e.into_inner())).collect()
}

#[cfg(test)]
mod reporting_tests {
    use super::*;
    use std::sync::Mutex;

    /// What a sink was told: each report's source and whether it was done.
    type Seen = Arc<Mutex<Vec<(String, bool)>>>;

    fn recorder() -> (CompileSink, Seen) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = Arc::clone(&seen);
        let sink: CompileSink = Arc::new(move |p: &CompileProgress| {
            into.lock().unwrap().push((p.source.clone(), p.done));
        });
        (sink, seen)
    }

    #[test]
    fn long_work_is_told_each_second_and_when_done_short_work_not_at_all() {
        let (sink, seen) = recorder();
        assert_eq!(reporting(Some(&sink), "quick", 10, || 7), 7);
        assert!(seen.lock().unwrap().is_empty(), "under a second: nothing shown");
        let out = reporting(Some(&sink), "the built-in tools", 10, || {
            std::thread::sleep(REPORT_AFTER + Duration::from_millis(300));
            8
        });
        assert_eq!(out, 8);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.first(), Some(&("the built-in tools".to_string(), false)), "{seen:?}");
        assert_eq!(seen.last(), Some(&("the built-in tools".to_string(), true)), "{seen:?}");
        assert_eq!(seen.iter().filter(|(_, done)| *done).count(), 1);
        assert_eq!(reporting(None, "nobody told", 10, || 9), 9);
    }
}
