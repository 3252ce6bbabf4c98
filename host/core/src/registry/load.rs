//! Loading components: reading a file's header, compiling (through the
//! cache), checking the shape and the grants, linking, and asking the tool
//! to describe itself once.

use super::builtins;
use super::cache;
use super::pool::Registry;
use super::tool::{
    Hints, InputRoles, LinkLater, Linked, LoadError, LoadedTool, Origin, PathAccess, PathField, ToolSpec, WasmSource,
};
use crate::contract::ToolPre;
use crate::contract::bindings::toolhost::tool::types as wit;
use crate::contract::bindings::{InterruptBehavior, ToolInfo};
use crate::contract::{self, Capability, Version};
use crate::fsx::Dirs;
use crate::grants::{Allowance, FileAccess, Grants};
use crate::imports::{CallScope, Namespace};
use crate::sandbox::{CallLimits, Captured, GuestFault, HostState, Sandbox};
use crate::session::Session;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::Component;

/// Loads components into a registry.
pub(crate) struct Loader<'a> {
    pub sandbox: &'a Sandbox,
    /// Where compiled components (and built-ins' descriptions) are cached.
    pub cache_dir: Option<&'a Path>,
    /// The session loading calls see.
    pub session: &'a Arc<Session>,
    /// What the operator grants each third-party tool (`toolGrants`).
    pub grants: &'a BTreeMap<String, Allowance>,
    /// The project directory requested and granted paths are relative to.
    pub project: &'a Path,
    /// Told about compiles that take long (see [`CompileProgress`]).
    pub progress: Option<&'a CompileSink>,
    /// Whether a tool whose compiled form and description are both cached
    /// is linked at its first use instead of now: a host's start. Not a
    /// reload (its new tools are ready when announced), nor a check (which
    /// links to find what fails).
    pub link_later: bool,
    /// A plugin component of at least this many bytes whose optimized
    /// compile is not cached loads compiled by the quick engine (`None`:
    /// every component compiles optimized). Needs a cache directory.
    pub quick_above: Option<usize>,
    /// Where a quick load asks for its optimized compile (`None`: it stays
    /// quick, e.g. for a one-shot command, which would not live to use it).
    pub optimizer: Option<&'a super::optimize::Optimizer>,
}

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
const REPORT_AFTER: Duration = Duration::from_secs(1);

impl Loader<'_> {
    /// Loads the built-in tools embedded in the binary. A built-in that does
    /// not load is a fault of the build: its name and why.
    pub(crate) fn builtins(&self, registry: &mut Registry) -> Result<(), (String, LoadError)> {
        let loaded = in_parallel(builtins::EMBEDDED, |embedded| {
            let fail = |e: LoadError| (embedded.crate_dir.to_string(), e);
            let source = format!("built-in {}", embedded.crate_dir);
            let (wasm, from) = (Cow::Borrowed(embedded.wasm), WasmSource::Embedded(embedded.wasm));
            let requests = contract::requests::read(embedded.wasm).map_err(|e| fail(e.into()))?;
            let mut tool = self.load(&source, wasm, from, embedded.sha256, Origin::Builtin, requests).map_err(fail)?;
            // Its requests are granted as a third-party tool's are, on top
            // of what a built-in gets by default.
            let mut granted = builtins::granted(&tool.requests);
            if let Some(more) = self.grants.get(&tool.spec.name) {
                granted.add(more);
            }
            self.grant(&mut tool, &granted).map_err(fail)?;
            Ok(tool)
        });
        for (embedded, tool) in builtins::EMBEDDED.iter().zip(loaded) {
            let tool = tool.unwrap_or_else(|| {
                Err((embedded.crate_dir.to_string(), LoadError::Compile("its loader thread stopped".into())))
            })?;
            registry.add(tool, &format!("builtin:{}", embedded.crate_dir));
        }
        Ok(())
    }

    /// [`Loader::component_file`] of every path, on up to one thread per
    /// core, with each file's content hash (none if it could not be read).
    /// A path may come with the hash of its bytes as an earlier scan read
    /// them (its stamp unchanged since): if the cache holds that
    /// component's compiled form and description, the file is not read.
    pub(super) fn files_in_parallel(
        &self,
        paths: &[(PathBuf, Option<String>)],
    ) -> Vec<(Option<String>, Result<LoadedTool, LoadError>)> {
        in_parallel(paths, |(path, hash)| {
            if let Some(hash) = hash
                && let Some(mut tool) = self.cached(hash, Origin::Plugin(path.clone()), WasmSource::File(path.clone()))
            {
                let granted = self.grants.get(&tool.spec.name).cloned().unwrap_or_default();
                return (Some(hash.clone()), self.grant(&mut tool, &granted).map(|()| tool));
            }
            self.read_and_load(path)
        })
        .into_iter()
        .map(|outcome| outcome.unwrap_or_else(|| (None, Err(LoadError::Compile("its loader thread stopped".into())))))
        .collect()
    }

    /// Loads a third-party component file: size and header check, compile
    /// (cached, within [`COMPILE_TIMEOUT`]), shape check, link, describe. A
    /// third-party tool is granted what it requested and the operator granted.
    pub(crate) fn component_file(&self, path: &Path) -> Result<LoadedTool, LoadError> {
        self.read_and_load(path).1
    }

    /// [`Loader::component_file`] granting the tool everything it requests,
    /// whatever `toolGrants` say: the most an operator can grant it, for
    /// reviewing a component before granting it anything. A component that
    /// imports a capability it does not request is still refused (no grant
    /// could ever load it).
    pub(crate) fn component_file_as_requested(&self, path: &Path) -> Result<LoadedTool, LoadError> {
        self.read_and(path, true).1
    }

    /// [`Loader::component_file`], with the hash of the bytes it read.
    fn read_and_load(&self, path: &Path) -> (Option<String>, Result<LoadedTool, LoadError>) {
        self.read_and(path, false)
    }

    fn read_and(&self, path: &Path, as_requested: bool) -> (Option<String>, Result<LoadedTool, LoadError>) {
        let cannot_read = |e: std::io::Error| LoadError::Compile(format!("cannot read {}: {e}", path.display()));
        let size = match std::fs::metadata(path) {
            Ok(meta) => meta.len(),
            Err(e) => return (None, Err(cannot_read(e))),
        };
        if size > MAX_COMPONENT_BYTES {
            return (
                None,
                Err(LoadError::TooLarge(format!(
                    "is {} MiB; components of at most {} MiB are loaded",
                    size >> 20,
                    MAX_COMPONENT_BYTES >> 20
                ))),
            );
        }
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => return (None, Err(cannot_read(e))),
        };
        let hash = cache::content_hash(&bytes);
        let outcome = self.component_bytes(path, bytes, &hash, as_requested);
        (Some(hash), outcome)
    }

    fn component_bytes(
        &self,
        path: &Path,
        bytes: Vec<u8>,
        hash: &str,
        as_requested: bool,
    ) -> Result<LoadedTool, LoadError> {
        contract::check_header(&bytes)?;
        // What it imports and which contract it serves, before compiling.
        contract::scan::check(&contract::scan::outline(&bytes)?)?;
        let requests = contract::requests::read(&bytes)?;
        let (source, from) = (path.display().to_string(), WasmSource::File(path.to_path_buf()));
        let origin = Origin::Plugin(path.to_path_buf());
        let mut tool = self.load(&source, Cow::Owned(bytes), from, hash, origin, requests)?;
        // What it gets: requested ∩ granted, granted by its name.
        let none = Allowance::default();
        let granted = match as_requested {
            true => &tool.requests.clone(),
            false => self.grants.get(&tool.spec.name).unwrap_or(&none),
        };
        self.grant(&mut tool, granted)?;
        Ok(tool)
    }

    /// Gives `tool` what it requested and `granted` grants, and refuses it
    /// if it imports a capability it was not granted.
    fn grant(&self, tool: &mut LoadedTool, granted: &Allowance) -> Result<(), LoadError> {
        let (grants, missing) = crate::grants::intersect(&tool.requests, granted, self.project);
        for cap in &tool.shape.capabilities {
            let granted = match cap {
                Capability::Progress
                | Capability::Session
                | Capability::Output
                | Capability::Shell
                | Capability::Policy => true,
                Capability::Files => grants.files == FileAccess::ReadWrite,
                Capability::Process => grants.process,
                Capability::Search => grants.reads_files(),
            };
            if !granted {
                return Err(LoadError::NotGranted(*cap));
            }
        }
        tool.grants = grants;
        tool.missing = missing;
        Ok(())
    }

    /// The tool whose component has the content hash `content`, linked at
    /// its first use, when [`Loader::link_later`] and the cache holds its
    /// compiled form and its description (with its shape and requests):
    /// neither the component nor its compiled form is read.
    fn cached(&self, content: &str, origin: Origin, from: WasmSource) -> Option<LoadedTool> {
        let dir = self.cache_dir.filter(|_| self.link_later)?;
        let engine = self.sandbox.engine();
        let known = known_description(&cache::spec_path(dir, engine, content))?;
        if !Version::HOST.supports(known.shape.version) || !cache::has_compiled(engine, content, dir) {
            return None;
        }
        let cache::Described { spec, warnings, shape, requests } = known;
        let version = shape.version;
        let later = LinkLater { cache_dir: dir.to_path_buf(), hash: content.to_string(), version, wasm: from };
        Some(LoadedTool::new(spec, origin, requests, shape, Linked::later(later), warnings))
    }

    /// Compiles (through the cache), checks, links and describes the
    /// component `wasm`, whose content hash is `content`. Its description
    /// depends only on its bytes: one saved beside its compiled form by an
    /// earlier load (and checked again) is used without instantiating it;
    /// otherwise it is asked, and saved. With both in the cache and
    /// [`Loader::link_later`], the tool is linked at its first use.
    fn load(
        &self,
        source: &str,
        wasm: Cow<'static, [u8]>,
        from: WasmSource,
        content: &str,
        origin: Origin,
        requests: Allowance,
    ) -> Result<LoadedTool, LoadError> {
        if let Some(tool) = self.cached(content, origin.clone(), from) {
            return Ok(tool);
        }
        let engine = self.sandbox.engine();
        let spec_file = self.cache_dir.map(|d| cache::spec_path(d, engine, content));
        let known = spec_file.as_deref().and_then(known_description);
        let quick_ok = origin != Origin::Builtin;
        let (component, quick) = self.compile(source, wasm, content, COMPILE_TIMEOUT, quick_ok)?;
        let shape = contract::inspect(component.engine(), &component)?;
        let pre = link(self.sandbox, &component, shape.version)?;
        let (spec, warnings) = match known {
            Some(known) => (known.spec, known.warnings),
            None => {
                let (spec, warnings) = self.describe(&pre)?;
                // A new description's schemas compile before it is kept (the
                // built-ins' are known good, and compiled at first use).
                if origin != Origin::Builtin {
                    spec.compile_input().map_err(LoadError::Invalid)?;
                    spec.compile_output().map_err(LoadError::Invalid)?;
                }
                if let Some(file) = &spec_file {
                    let (spec, warnings, shape) = (spec.clone(), warnings.clone(), shape.clone());
                    cache::write_spec(file, &cache::Described { spec, warnings, shape, requests: requests.clone() });
                }
                (spec, warnings)
            }
        };
        let mut tool = LoadedTool::new(spec, origin, requests, shape, Linked::now(pre), warnings);
        tool.quick = quick;
        Ok(tool)
    }

    /// Instantiates the tool once, without capabilities, to read its `info`
    /// and `is-enabled`, within [`DESCRIBE_TIMEOUT`] and the call memory
    /// limit.
    fn describe(&self, pre: &ToolPre<crate::sandbox::HostState>) -> Result<(ToolSpec, Vec<String>), LoadError> {
        // Describing itself gets a short leash: no files, a few seconds.
        let limits = self.sandbox.limits();
        let limits = CallLimits { timeout: limits.timeout.min(DESCRIBE_TIMEOUT), ..limits };
        let scope = CallScope::new(
            "(loading)".into(),
            "load".into(),
            Arc::clone(self.session),
            Namespace::Private("load/".into()),
            Arc::new(Dirs::default()),
            Arc::default(),
        );
        let (mut store, captured) = crate::sandbox::store(pre.engine(), &Grants::default(), scope, limits);
        // One line per problem: the limit or the trap, and what the tool
        // printed last (a panic message), without wasmtime's backtrace.
        let describe = |e: wasmtime::Error, captured: &Captured| {
            let what = match GuestFault::of(&e) {
                GuestFault::Timeout(limit) => format!("timed out after {} ms and was stopped", limit.as_millis()),
                GuestFault::Memory(limit) => format!("exceeded its memory limit of {} MiB", limit >> 20),
                GuestFault::Trap(trap) => format!("crashed ({trap})"),
                GuestFault::Cancelled | GuestFault::Other => e.to_string(),
            };
            let stderr = captured.last_stderr_lines(3).replace('\n', "; ");
            LoadError::Describe(if stderr.is_empty() { what } else { format!("{what}: {stderr}") })
        };
        let _running = self.sandbox.running();
        let guest = pre.instantiate(&mut store).map_err(|e| describe(e, &captured))?;
        let info = guest.info(&mut store).map_err(|e| describe(e, &captured))?;
        let enabled = guest.is_enabled(&mut store).map_err(|e| describe(e, &captured))?;
        tracing::debug!(tool = %info.name, "described by its component");
        parse_info(info, enabled)
    }
}

/// Largest component file loaded.
pub(crate) const MAX_COMPONENT_BYTES: u64 = 256 << 20;
/// How long compiling one component may take before it is skipped (the
/// compile goes on in the background and lands in the cache).
pub(crate) const COMPILE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a tool may take to instantiate and describe itself.
pub(crate) const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(5);
/// Most aliases a tool keeps; more are dropped with a warning.
pub(crate) const MAX_ALIASES: usize = 8;
/// Longest one-line description, in characters; longer ones are cut.
pub(crate) const MAX_DESCRIPTION: usize = 1_024;
/// Longest model-facing prompt, in characters; longer ones are cut.
pub(crate) const MAX_PROMPT: usize = 32_768;
/// Longest search hint, in characters; longer ones are cut.
pub(crate) const MAX_SEARCH_HINT: usize = 256;
/// Largest input or output schema, in bytes of JSON; larger ones are refused.
pub(crate) const MAX_SCHEMA_BYTES: usize = 64 << 10;
/// Deepest nesting of an input or output schema; deeper ones are refused.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 32;

impl Loader<'_> {
    /// The component compiled (through the cache), and whether by the quick
    /// engine: a plugin (`quick_ok`) of at least [`Loader::quick_above`]
    /// bytes whose optimized form is not cached compiles quick, and its
    /// optimized compile is asked of [`Loader::optimizer`]. A compile that
    /// takes long is reported to [`Loader::progress`] and the log.
    fn compile(
        &self,
        source: &str,
        wasm: Cow<'static, [u8]>,
        hash: &str,
        timeout: Duration,
        quick_ok: bool,
    ) -> Result<(Component, bool), LoadError> {
        // A compiled form in the cache is read here; only a compile needs a
        // thread of its own (and the bytes copied to it).
        let optimizing = self.sandbox.engine();
        if let Some(component) = self.cached_on(optimizing, hash) {
            return Ok((component, false));
        }
        let quick = match (self.quick_above, self.sandbox.quick_engine(), self.cache_dir) {
            (Some(above), Some(quick), Some(_)) if quick_ok && wasm.len() >= above => Some(quick),
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
    fn cached_on(&self, engine: &wasmtime::Engine, hash: &str) -> Option<Component> {
        cache::cached(engine, hash, self.cache_dir?)
    }

    /// [`compile_within`] on `engine` (its cache entry known to be missing),
    /// reporting a compile that takes long.
    fn compile_on(
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

/// Compiles `wasm` (through the cache) on a thread of its own, waiting at
/// most `timeout`, calling `tick` with the time so far every `every`. Compiling cannot be interrupted: a compile that takes too long
/// goes on in the background (and is cached for the next start) while the
/// component is reported as skipped.
fn compile_within(
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
/// contract `version`.
fn link(sandbox: &Sandbox, component: &Component, version: Version) -> Result<ToolPre<HostState>, LoadError> {
    let linker = sandbox.linker_for(component.engine());
    let pre = linker.instantiate_pre(component).map_err(|e| LoadError::Link(format!("{e:#}")))?;
    ToolPre::new(version, pre).map_err(|e| LoadError::Link(format!("{e:#}")))
}

/// Links a tool loaded with [`Linked::later`]: its compiled form from the
/// cache, or, if that went missing or stale since, compiled again from its
/// bytes (a file's only while they still have the hash it was loaded with).
pub(super) fn link_later(sandbox: &Sandbox, later: &LinkLater) -> Result<ToolPre<HostState>, LoadError> {
    let engine = sandbox.engine();
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
    link(sandbox, &component, later.version)
}

/// `f` of every item, on up to one thread per core, in the items' order
/// (`None` for an item whose thread panicked).
fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<Option<R>> {
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

/// `text` cut to `max` characters, noting the cut in `warnings`.
fn capped(text: String, max: usize, what: &str, warnings: &mut Vec<String>) -> String {
    match text.char_indices().nth(max) {
        None => text,
        Some((at, _)) => {
            warnings.push(format!("its {what} has {} characters; it was cut to {max}", text.chars().count()));
            text[..at].to_string()
        }
    }
}

/// A declared schema, parsed within [`MAX_SCHEMA_BYTES`] and [`MAX_SCHEMA_DEPTH`].
fn schema(text: &str, what: &str) -> Result<Value, LoadError> {
    if text.len() > MAX_SCHEMA_BYTES {
        return Err(LoadError::TooLarge(format!(
            "its {what} is {} KiB; at most {} KiB are accepted",
            text.len() >> 10,
            MAX_SCHEMA_BYTES >> 10
        )));
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| LoadError::Invalid(format!("{what} is not JSON: {e}")))?;
    if depth(&value) > MAX_SCHEMA_DEPTH {
        return Err(LoadError::TooLarge(format!("its {what} nests deeper than {MAX_SCHEMA_DEPTH} levels")));
    }
    Ok(value)
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

pub(crate) fn parse_info(info: ToolInfo, enabled: bool) -> Result<(ToolSpec, Vec<String>), LoadError> {
    let invalid = LoadError::Invalid;
    check_name(&info.name).map_err(invalid)?;
    let mut warnings = Vec::new();
    let mut aliases = info.aliases;
    if aliases.len() > MAX_ALIASES {
        warnings.push(format!("it declares {} aliases; the first {MAX_ALIASES} are kept", aliases.len()));
        aliases.truncate(MAX_ALIASES);
    }
    for alias in &aliases {
        check_name(alias).map_err(|e| LoadError::Invalid(format!("alias: {e}")))?;
    }
    let input_schema = schema(&info.input_schema, "input schema")?;
    if input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(LoadError::Invalid("input schema must describe a JSON object (`\"type\": \"object\"`)".into()));
    }
    let inputs = input_roles(info.input_roles)?;
    let output_schema = info.output_schema.as_deref().map(|s| schema(s, "output schema")).transpose()?;
    let description = capped(info.description, MAX_DESCRIPTION, "description", &mut warnings);
    let prompt = capped(info.prompt, MAX_PROMPT, "prompt", &mut warnings);
    let search_hint = info.search_hint.map(|h| capped(h, MAX_SEARCH_HINT, "search hint", &mut warnings));
    let spec = ToolSpec {
        name: info.name,
        aliases,
        description,
        prompt,
        search_hint,
        input_schema,
        output_schema,
        max_result_size_chars: info.max_result_size_chars,
        should_defer: info.should_defer,
        always_load: info.always_load,
        cancel_on_interrupt: match info.interrupt_behavior {
            InterruptBehavior::Cancel => true,
            InterruptBehavior::Block => false,
        },
        enabled,
        hints: Hints {
            read_only: info.read_only_hint,
            destructive: info.destructive_hint,
            concurrency_safe: info.concurrency_safe_hint,
        },
        inputs,
        cancels_siblings: info.cancels_siblings_on_failure,
        reuse_instance: info.reuse_instance,
        validates_input: info.validates_input,
        checks_permissions: info.checks_permissions,
    };
    Ok((spec, warnings))
}

/// A saved description that still holds what loading guarantees (a valid
/// name, the caps on what it declares, bounded schemas): one that does not,
/// or does not read, is described afresh, never trusted.
fn known_description(path: &Path) -> Option<cache::Described> {
    let known = cache::read_spec(path)?;
    match recheck(&known.spec) {
        Ok(()) => Some(known),
        Err(why) => {
            tracing::warn!(path = %path.display(), why, "ignoring a saved description");
            None
        }
    }
}

/// The checks [`parse_info`] made, on a spec read back from the cache.
pub(crate) fn recheck(spec: &ToolSpec) -> Result<(), String> {
    let within = |text: &str, max: usize| text.char_indices().nth(max).is_none();
    check_name(&spec.name)?;
    if spec.aliases.len() > MAX_ALIASES {
        return Err("too many aliases".into());
    }
    for alias in &spec.aliases {
        check_name(alias)?;
    }
    let texts = [(&spec.description, MAX_DESCRIPTION), (&spec.prompt, MAX_PROMPT)];
    if !texts.iter().all(|(t, max)| within(t, *max))
        || !spec.search_hint.as_deref().is_none_or(|h| within(h, MAX_SEARCH_HINT))
    {
        return Err("a text beyond its cap".into());
    }
    for s in std::iter::once(&spec.input_schema).chain(&spec.output_schema) {
        schema(&s.to_string(), "schema").map_err(|e| e.to_string())?;
    }
    if spec.input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("input schema is not an object schema".into());
    }
    let roles = &spec.inputs;
    if roles.paths.len() + roles.addresses.len() + usize::from(roles.command.is_some()) > MAX_ROLE_FIELDS {
        return Err("too many input roles".into());
    }
    Ok(())
}

/// Most fields a tool may declare for the policy.
const MAX_ROLE_FIELDS: usize = 32;

/// The declared input roles, checked: each field a property name or a JSON
/// Pointer, at most [`MAX_ROLE_FIELDS`] of them.
fn input_roles(roles: wit::InputRoles) -> Result<InputRoles, LoadError> {
    let count = roles.paths.len() + roles.addresses.len() + usize::from(roles.command.is_some());
    if count > MAX_ROLE_FIELDS {
        return Err(LoadError::Invalid(format!(
            "input roles: {count} fields declared, at most {MAX_ROLE_FIELDS} are allowed"
        )));
    }
    let check = |field: &str| -> Result<(), LoadError> {
        if field.is_empty() || field.len() > 256 || field.contains('\0') {
            return Err(LoadError::Invalid(format!("input roles: `{field}` is not a field name or JSON Pointer")));
        }
        Ok(())
    };
    let mut paths = Vec::with_capacity(roles.paths.len());
    for p in roles.paths {
        check(&p.field)?;
        let access = match p.access {
            wit::PathAccess::Read => PathAccess::Read,
            wit::PathAccess::Search => PathAccess::Search,
            wit::PathAccess::Edit => PathAccess::Edit,
        };
        paths.push(PathField { field: p.field, access });
    }
    for f in roles.command.iter().chain(&roles.addresses) {
        check(f)?;
    }
    Ok(InputRoles { paths, command: roles.command, addresses: roles.addresses })
}

/// Tool names follow the Messages API's rule: 1–64 of `A-Z a-z 0-9 _ -`.
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok { Ok(()) } else { Err(format!("`{name}` is not a valid tool name (1-64 characters from A-Z a-z 0-9 _ -)")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compile_past_its_limit_is_reported_not_waited_for() {
        let engine = wasmtime::Engine::new(&crate::sandbox::base_config()).unwrap();
        let wasm = builtins::EMBEDDED[0].wasm.to_vec();
        match compile_within(&engine, Arc::new(wasm), "no-cache", None, Duration::ZERO, REPORT_AFTER, &mut |_| {}) {
            Err(LoadError::TimedOut(message)) => assert!(message.contains("to compile and was skipped"), "{message}"),
            other => panic!("expected a timeout, got {:?}", other.map(|_| "a component")),
        }
    }

    #[test]
    fn a_long_compile_is_told_while_it_runs() {
        let engine = wasmtime::Engine::new(&crate::sandbox::base_config()).unwrap();
        let largest = builtins::EMBEDDED.iter().max_by_key(|e| e.wasm.len()).unwrap();
        let mut ticks = Vec::new();
        let every = Duration::from_millis(1);
        let wasm = Arc::new(largest.wasm.to_vec());
        let out = compile_within(&engine, wasm, "x", None, COMPILE_TIMEOUT, every, &mut |t| ticks.push(t));
        assert!(out.is_ok());
        assert!(!ticks.is_empty(), "a compile of {} bytes took under a millisecond", largest.wasm.len());
        assert!(ticks.windows(2).all(|w| w[0] <= w[1]), "{ticks:?}");
    }

    /// A component whose core module makes a tail call: Cranelift compiles
    /// it, Winch does not.
    fn with_a_tail_call() -> Vec<u8> {
        use wasm_encoder::{CodeSection, Function, FunctionSection, Instruction, Module, TypeSection};
        let mut module = Module::new();
        let mut types = TypeSection::new();
        types.ty().function([], []);
        module.section(&types);
        let mut functions = FunctionSection::new();
        functions.function(0);
        functions.function(0);
        module.section(&functions);
        let mut code = CodeSection::new();
        let mut f = Function::new([]);
        f.instruction(&Instruction::ReturnCall(1));
        f.instruction(&Instruction::End);
        code.function(&f);
        let mut g = Function::new([]);
        g.instruction(&Instruction::End);
        code.function(&g);
        module.section(&code);
        let mut component = wasm_encoder::Component::new();
        component.section(&wasm_encoder::ModuleSection(&module));
        component.finish()
    }

    #[test]
    fn what_the_quick_compiler_cannot_compile_is_compiled_optimized() {
        let limits = CallLimits { memory: 64 << 20, timeout: Duration::from_secs(5) };
        let sandbox = Sandbox::new(crate::sandbox::Allocator::OnDemand, limits, 0, 1, 0).unwrap();
        assert!(sandbox.quick_engine().is_some(), "this machine runs Winch");
        let cache = tempfile::tempdir().unwrap();
        let session = Arc::new(Session::ephemeral(cache.path()));
        let grants = BTreeMap::new();
        let loader = Loader {
            sandbox: &sandbox,
            cache_dir: Some(cache.path()),
            session: &session,
            grants: &grants,
            project: cache.path(),
            progress: None,
            link_later: false,
            quick_above: Some(0),
            optimizer: None,
        };
        let tail = with_a_tail_call();
        let engine = wasmtime::Engine::new(&crate::sandbox::quick_config()).unwrap();
        assert!(Component::new(&engine, &tail).is_err(), "Winch compiled a tail call");
        let compile = |wasm: &[u8], quick_ok| {
            let hash = cache::content_hash(wasm);
            loader.compile("test", Cow::Owned(wasm.to_vec()), &hash, COMPILE_TIMEOUT, quick_ok).map(|(_, quick)| quick)
        };
        assert!(!compile(&tail, true).unwrap(), "compiled optimized after Winch refused it");
        let plain = builtins::EMBEDDED[0].wasm;
        assert!(compile(plain, true).unwrap(), "compiled quick");
        assert!(!compile(plain, false).unwrap(), "a built-in is never quick");
    }

    #[test]
    fn declarations_are_capped() {
        let mut warnings = Vec::new();
        assert_eq!(capped("héllo".into(), 2, "description", &mut warnings), "hé");
        assert_eq!(warnings, ["its description has 5 characters; it was cut to 2"]);
        assert_eq!(capped("ok".into(), 2, "prompt", &mut warnings), "ok");
        assert_eq!(warnings.len(), 1);
        let deep = (0..40).fold(String::from("1"), |inner, _| format!("[{inner}]"));
        assert!(matches!(schema(&deep, "input schema"), Err(LoadError::TooLarge(_))));
        assert!(schema(r#"{"type":"object"}"#, "input schema").is_ok());
    }

    #[test]
    fn names_follow_the_api_rule() {
        check_name("Read").unwrap();
        check_name("my_tool-2").unwrap();
        for bad in ["", "has space", "dots.no", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
