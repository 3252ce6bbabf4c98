//! Loading components: reading a file's header, compiling (through the
//! cache), checking the shape and the grants, linking, and asking the tool
//! to describe itself once.

use super::builtins;
use super::cache;
use super::compile::{CompileSink, in_parallel, link};
use super::declare::{parse_info, recheck};
use super::pool::Registry;
use super::tool::{LinkLater, Linked, LoadError, LoadedTool, Origin, ToolSpec, WasmSource};
use crate::contract::ToolPre;
use crate::contract::{self, Capability, Shape, Version};
use crate::fsx::Dirs;
use crate::grants::{Allowance, FileAccess, Grants};
use crate::imports::{CallScope, Namespace};
use crate::sandbox::{CallLimits, Captured, GuestFault, Sandbox};
use crate::session::Session;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// What loading one component file gives: its tools (one for a component
/// exporting the contract, one per function for a plain one), or why none.
pub(crate) type Loaded = Result<Vec<LoadedTool>, LoadError>;

/// Loads components into a registry.
#[derive(Clone, Copy)]
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

impl Loader<'_> {
    /// Loads the built-in tools embedded in the binary. A built-in that does
    /// not load is a fault of the build: its name and why.
    pub(crate) fn builtins(&self, registry: &mut Registry) -> Result<(), (String, LoadError)> {
        // Each compiles in under a second, together (a first start, with
        // nothing cached) for several: reported as one.
        let quiet = Loader { progress: None, ..*self };
        let bytes = builtins::EMBEDDED.iter().map(|e| e.wasm.len()).sum();
        let loaded =
            super::compile::reporting(self.progress, "the built-in tools", bytes, || quiet.builtins_in_parallel());
        for (embedded, tool) in builtins::EMBEDDED.iter().zip(loaded) {
            let tool = tool.unwrap_or_else(|| {
                Err((embedded.crate_dir.to_string(), LoadError::Compile("its loader thread stopped".into())))
            })?;
            registry.add(tool, &format!("builtin:{}", embedded.crate_dir));
        }
        Ok(())
    }

    fn builtins_in_parallel(&self) -> Vec<Option<Result<LoadedTool, (String, LoadError)>>> {
        in_parallel(builtins::EMBEDDED, |embedded| {
            let fail = |e: LoadError| (embedded.crate_dir.to_string(), e);
            let source = format!("built-in {}", embedded.crate_dir);
            let (wasm, from) = (Cow::Borrowed(embedded.wasm), WasmSource::Embedded(embedded.wasm));
            let mut tool = match self.cached(embedded.sha256, Origin::Builtin, WasmSource::Embedded(embedded.wasm)) {
                Some(tool) => tool,
                // Not compiled yet (a first start): listed from the description
                // built into the binary, compiled at its first use.
                None => match self.described_builtin(embedded) {
                    Some(tool) => tool,
                    None => {
                        let requests = contract::requests::read(embedded.wasm).map_err(|e| fail(e.into()))?;
                        // The built-ins are synchronous (no async ABI).
                        let origin = (Origin::Builtin, false);
                        self.load(&source, wasm, from, embedded.sha256, origin, requests).map_err(fail)?
                    }
                },
            };
            tool.declared = Some(builtins::declared(embedded.crate_dir));
            // Its requests are granted as a third-party tool's are, on top
            // of what a built-in gets by default.
            let mut granted = builtins::granted(&tool.requests);
            if let Some(more) = self.grants.get(&tool.spec.name) {
                granted.add(more);
            }
            self.grant(&mut tool, &granted).map_err(fail)?;
            Ok(tool)
        })
    }

    /// [`Loader::component_file`] of every path, on up to one thread per
    /// core, with each file's content hash (none if it could not be read).
    /// A path may come with the hash of its bytes as an earlier scan read
    /// them (its stamp unchanged since): if the cache holds that
    /// component's compiled form and description, the file is not read.
    pub(super) fn files_in_parallel(&self, paths: &[(PathBuf, Option<String>)]) -> Vec<(Option<String>, Loaded)> {
        in_parallel(paths, |(path, hash)| {
            if let Some(hash) = hash
                && let Some(mut tool) = self.cached(hash, Origin::Plugin(path.clone()), WasmSource::File(path.clone()))
            {
                let granted = self.grants.get(&tool.spec.name).cloned().unwrap_or_default();
                return (Some(hash.clone()), self.grant(&mut tool, &granted).map(|()| vec![tool]));
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
    /// A component exporting the contract is one tool; one exporting plain
    /// functions is one tool per function (`contract::plain`).
    pub(crate) fn component_file(&self, path: &Path) -> Result<Vec<LoadedTool>, LoadError> {
        self.read_and_load(path).1
    }

    /// [`Loader::component_file`] granting the tool everything it requests,
    /// whatever `toolGrants` say: the most an operator can grant it, for
    /// reviewing a component before granting it anything. A component that
    /// imports a capability it does not request is still refused (no grant
    /// could ever load it).
    pub(crate) fn component_file_as_requested(&self, path: &Path) -> Result<Vec<LoadedTool>, LoadError> {
        self.read_and(path, true).1
    }

    /// [`Loader::component_file`], with the hash of the bytes it read.
    fn read_and_load(&self, path: &Path) -> (Option<String>, Loaded) {
        self.read_and(path, false)
    }

    fn read_and(&self, path: &Path, as_requested: bool) -> (Option<String>, Loaded) {
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
    ) -> Result<Vec<LoadedTool>, LoadError> {
        contract::check_header(&bytes)?;
        // What it imports and which contract it serves, before compiling.
        let outline = contract::scan::outline(&bytes)?;
        let requests = contract::requests::read(&bytes)?;
        let mut tools = match outline.exports_contract() {
            true => {
                contract::scan::check(&outline)?;
                let (source, from) = (path.display().to_string(), WasmSource::File(path.to_path_buf()));
                let origin = (Origin::Plugin(path.to_path_buf()), outline.concurrent());
                vec![self.load(&source, Cow::Owned(bytes), from, hash, origin, requests)?]
            }
            false => self.plain(path, bytes, hash, &outline, requests)?,
        };
        for tool in &mut tools {
            // What it gets: requested ∩ granted, granted by its name.
            let none = Allowance::default();
            let granted = match as_requested {
                true => &tool.requests.clone(),
                false => self.grants.get(&tool.spec.name).unwrap_or(&none),
            };
            self.grant(tool, granted)?;
        }
        Ok(tools)
    }

    /// Loads a component that does not export the contract: each function
    /// it exports is a tool (`contract::plain`), the functions a tool call
    /// cannot carry left out with one line each (in the first tool's
    /// notes). Its description depends on its types alone, read from the
    /// compiled form (cached like any other) at every load; nothing of it
    /// runs until it is called.
    fn plain(
        &self,
        path: &Path,
        bytes: Vec<u8>,
        hash: &str,
        outline: &contract::scan::Outline,
        requests: Allowance,
    ) -> Result<Vec<LoadedTool>, LoadError> {
        contract::scan::check_imports(outline)?;
        // A Wassette policy file beside it: more of what it requests.
        let policy = crate::grants::wassette::beside(path);
        let mut requests = requests;
        let mut notes = Vec::new();
        match std::fs::read_to_string(&policy) {
            Ok(text) => {
                let read = crate::grants::wassette::read(&text)
                    .map_err(|why| LoadError::Policy(policy.display().to_string(), why))?;
                requests.add(&read.requests);
                notes = read.not_mapped.into_iter().map(|l| format!("its policy file's {l} (not requested)")).collect();
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LoadError::PolicyUnreadable(policy.display().to_string(), e)),
        }
        let docs = contract::plain::Docs::read(&bytes);
        let concurrent = outline.concurrent();
        let source = path.display().to_string();
        let (component, quick) = self.compile(&source, Cow::Owned(bytes), hash, COMPILE_TIMEOUT, (true, concurrent))?;
        let shape = Shape { concurrent, ..contract::inspect_plain(component.engine(), &component)? };
        let found = contract::plain::functions(&component, &docs);
        if found.tools.is_empty() && found.command.is_none() {
            let exports = outline.exports.clone();
            return Err(contract::ShapeError::NoFunctions { exports, left_out: found.left_out }.into());
        }
        let manifest = super::manifest::read_beside(path)?;
        let linker = self.sandbox.linker_for(component.engine());
        let pre = linker.instantiate_pre(&component).map_err(|e| LoadError::Link(format!("{e:#}")))?;
        let mut notes: Vec<String> = found.left_out.iter().cloned().chain(notes).collect();
        let mut specs: Vec<_> = found
            .tools
            .into_iter()
            .map(|f| (super::plain::spec(f.name, &f.function, f.doc.as_deref()), f.function))
            .collect();
        match (found.command, manifest) {
            (Some(function), manifest) => {
                let manifest = manifest.unwrap_or_default();
                let name = manifest.name.unwrap_or_else(|| super::manifest::name_of_file(path));
                match specs.iter().find(|(spec, _)| spec.name == name) {
                    Some((_, taken)) => notes.push(format!(
                        "its program (`{}`) is left out: its tool name `{name}` is taken by `{}`; name it in {}",
                        function.interface.as_deref().unwrap_or_default(),
                        taken.signature(),
                        super::manifest::beside(path).display()
                    )),
                    None => specs.push((super::plain::command_spec(name, manifest.description.as_deref()), function)),
                }
            }
            (None, Some(_)) => notes.push(format!(
                "its manifest {} is not used: it names a WASI command, and this component is none",
                super::manifest::beside(path).display()
            )),
            (None, None) => {}
        }
        let mut tools = Vec::with_capacity(specs.len());
        for (spec, function) in specs {
            spec.compile_input().map_err(LoadError::Invalid)?;
            spec.compile_output().map_err(LoadError::Invalid)?;
            let command = function.is_command();
            let linked = Linked::now(ToolPre::plain(pre.clone(), function, concurrent));
            let origin = Origin::Plugin(path.to_path_buf());
            let (requests, shape) = (requests.clone(), shape.clone());
            let mut tool = LoadedTool::new(spec, origin, requests, shape, linked, Vec::new());
            tool.command = command;
            tool.notes = std::mem::take(&mut notes);
            tool.quick = quick;
            tools.push(tool);
        }
        Ok(tools)
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
                // Calling other tools: the built-in that runs programs only.
                Capability::Tools => tool.role() == Some(super::Role::RunsPrograms),
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
        let path = cache::spec_path(dir, engine, content);
        let known = cache::read_spec(&path).and_then(|known| rechecked(known, &path.display()))?;
        if !cache::has_compiled(self.sandbox.engine_for(known.shape.concurrent), content, dir) {
            return None;
        }
        linked_later(known, dir, content, origin, from)
    }

    /// A built-in whose compiled form is not cached, from the description
    /// built into the binary (`builtins.json`, kept current by a test), to be
    /// compiled and linked at its first use; `None` where that cannot be (no
    /// cache directory, a loader that links now, no usable description).
    fn described_builtin(&self, embedded: &builtins::EmbeddedTool) -> Option<LoadedTool> {
        let dir = self.cache_dir.filter(|_| self.link_later)?;
        let source = format!("the built-in {}'s description in the binary", embedded.crate_dir);
        let known = rechecked(builtins::description(embedded.crate_dir)?, &source)?;
        linked_later(known, dir, embedded.sha256, Origin::Builtin, WasmSource::Embedded(embedded.wasm))
    }

    /// Compiles (through the cache), checks, links and describes the
    /// component `wasm`, whose content hash is `content`. Its description
    /// depends only on its bytes: one saved beside its compiled form by an
    /// earlier load (and checked again) is used without instantiating it;
    /// otherwise it is asked, and saved. With both in the cache and
    /// [`Loader::link_later`], the tool is linked at its first use. With its
    /// origin comes whether it uses the async ABI (`concurrent`, from the
    /// outline its caller read).
    fn load(
        &self,
        source: &str,
        wasm: Cow<'static, [u8]>,
        from: WasmSource,
        content: &str,
        (origin, concurrent): (Origin, bool),
        requests: Allowance,
    ) -> Result<LoadedTool, LoadError> {
        if let Some(tool) = self.cached(content, origin.clone(), from) {
            return Ok(tool);
        }
        let engine = self.sandbox.engine();
        let spec_file = self.cache_dir.map(|d| cache::spec_path(d, engine, content));
        let known = spec_file.as_deref().and_then(known_description);
        let quick_ok = origin != Origin::Builtin;
        let (component, quick) = self.compile(source, wasm, content, COMPILE_TIMEOUT, (quick_ok, concurrent))?;
        let shape = Shape { concurrent, ..contract::inspect(component.engine(), &component)? };
        let pre = link(self.sandbox, &component, shape.version, concurrent)?;
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
                GuestFault::Cancelled | GuestFault::Handles | GuestFault::Other => e.to_string(),
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

/// A saved description that still holds what loading guarantees (a valid
/// name, the caps on what it declares, bounded schemas): one that does not,
/// or does not read, is described afresh, never trusted.
fn known_description(path: &Path) -> Option<cache::Described> {
    rechecked(cache::read_spec(path)?, &path.display())
}

/// A saved description (from `source`), if it passes the loader's checks.
fn rechecked(known: cache::Described, source: &dyn std::fmt::Display) -> Option<cache::Described> {
    match recheck(&known.spec) {
        Ok(()) => Some(known),
        Err(why) => {
            tracing::warn!(%source, why, "ignoring a saved description");
            None
        }
    }
}

/// The tool `known` describes, whose component has the hash `content`,
/// linked at its first use (compiled into `dir` then, if it is not there);
/// `None` if this host does not serve its contract version.
fn linked_later(
    known: cache::Described,
    dir: &Path,
    content: &str,
    origin: Origin,
    from: WasmSource,
) -> Option<LoadedTool> {
    if !Version::HOST.supports(known.shape.version) {
        return None;
    }
    let cache::Described { spec, warnings, shape, requests } = known;
    let later = LinkLater {
        cache_dir: dir.to_path_buf(),
        hash: content.to_string(),
        version: shape.version,
        concurrent: shape.concurrent,
        wasm: from,
    };
    Some(LoadedTool::new(spec, origin, requests, shape, Linked::later(later), warnings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::compile::*;
    use crate::registry::declare::*;
    use wasmtime::component::Component;

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
        // The smallest built-in still takes many ticks of a millisecond.
        let wasm = crate::registry::small_builtin_wasm_for_tests();
        let mut ticks = Vec::new();
        let every = Duration::from_millis(1);
        let out =
            compile_within(&engine, Arc::new(wasm.to_vec()), "x", None, COMPILE_TIMEOUT, every, &mut |t| ticks.push(t));
        assert!(out.is_ok());
        assert!(!ticks.is_empty(), "a compile of {} bytes took under a millisecond", wasm.len());
        assert!(ticks.windows(2).all(|w| w[0] <= w[1]), "{ticks:?}");
    }

    /// A component whose core module makes a tail call: Cranelift compiles
    /// it, Winch does not.
    fn with_a_tail_call() -> Vec<u8> {
        use wasm_encoder::Instruction::{End, ReturnCall};
        crate::sandbox::core_component(&[&[ReturnCall(1), End], &[End]], false)
    }

    /// `f` with a loader that links now, over a sandbox and an empty cache
    /// directory of its own.
    fn with_loader<R>(quick_above: Option<usize>, f: impl FnOnce(&Loader<'_>) -> R) -> R {
        let limits = CallLimits { memory: 64 << 20, timeout: Duration::from_secs(5) };
        let sandbox = Sandbox::new(crate::sandbox::Allocator::OnDemand, limits, 0, 1, 0).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let session = Arc::new(Session::ephemeral(cache.path()));
        let grants = BTreeMap::new();
        f(&Loader {
            sandbox: &sandbox,
            cache_dir: Some(cache.path()),
            session: &session,
            grants: &grants,
            project: cache.path(),
            progress: None,
            link_later: false,
            quick_above,
            optimizer: None,
        })
    }

    #[test]
    fn what_the_quick_compiler_cannot_compile_is_compiled_optimized() {
        with_loader(Some(0), |loader| {
            assert!(loader.sandbox.quick_engine().is_some(), "this machine runs Winch");
            let tail = with_a_tail_call();
            let engine = wasmtime::Engine::new(&crate::sandbox::quick_config()).unwrap();
            assert!(Component::new(&engine, &tail).is_err(), "Winch compiled a tail call");
            let compile = |wasm: &[u8], quick_ok| {
                let hash = cache::content_hash(wasm);
                loader
                    .compile("test", Cow::Owned(wasm.to_vec()), &hash, COMPILE_TIMEOUT, (quick_ok, false))
                    .map(|(_, quick)| quick)
            };
            assert!(!compile(&tail, true).unwrap(), "compiled optimized after Winch refused it");
            let plain = builtins::EMBEDDED[0].wasm;
            assert!(compile(plain, true).unwrap(), "compiled quick");
            assert!(!compile(plain, false).unwrap(), "a built-in is never quick");
        });
    }

    /// `builtins.json` holds what loading each built-in describes; with
    /// `TOOLHOST_BLESS=1` this test writes it.
    #[test]
    fn the_built_in_descriptions_in_the_binary_are_current() {
        with_loader(None, |loader| {
            let cache = loader.cache_dir.unwrap();
            // The file holds every built-in of every feature set; this build
            // checks (and blesses) the ones it embeds.
            let mut file: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(builtins::DESCRIPTIONS).unwrap();
            let mut stale = Vec::new();
            for embedded in builtins::EMBEDDED {
                let requests = contract::requests::read(embedded.wasm).unwrap();
                let from = WasmSource::Embedded(embedded.wasm);
                let wasm = Cow::Borrowed(embedded.wasm);
                loader
                    .load(embedded.crate_dir, wasm, from, embedded.sha256, (Origin::Builtin, false), requests)
                    .unwrap();
                let saved = cache::read_spec(&cache::spec_path(cache, loader.sandbox.engine(), embedded.sha256));
                let described = serde_json::to_value(saved.unwrap()).unwrap();
                if file.get(embedded.crate_dir) != Some(&described) {
                    stale.push(embedded.crate_dir);
                    file.insert(embedded.crate_dir.to_string(), described);
                }
            }
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/registry/builtins.json");
            if std::env::var_os("TOOLHOST_BLESS").is_some() {
                let text = serde_json::to_string_pretty(&serde_json::Value::Object(file)).unwrap();
                std::fs::write(&path, text + "\n").unwrap();
                return;
            }
            assert!(
                stale.is_empty(),
                "{} does not hold what {stale:?} describe now: run `TOOLHOST_BLESS=1 cargo test --release -p toolhost \
                 --features http --lib the_built_in_descriptions` and commit it",
                path.display()
            );
            for embedded in builtins::EMBEDDED {
                assert!(builtins::description(embedded.crate_dir).is_some(), "{} reads", embedded.crate_dir);
            }
        });
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
