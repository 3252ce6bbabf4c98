//! The host: built once from a [`HostBuilder`] (engine, built-ins, plugins,
//! settings), then shared; every call goes through the pipeline.

mod watch;

use crate::fsx::{self, Dirs};
use crate::pipeline::{CallOptions, Parts, Pipeline, ToolResult, ToolUse};
use crate::policy::rules::Places;
use crate::policy::settings::Settings;
use crate::policy::{Approver, PermissionMode, Policy, PolicyError};
use crate::process::Confinement;
use crate::registry::{
    CompileSink, LoadError, LoadedTool, Loader, Optimizer, PluginSet, Problem, QUICK_ABOVE, Registry, ToolsChanged,
};
use crate::sandbox::{Allocator, CallLimits, Sandbox};
use crate::session::{Session, SessionError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

/// Default memory limit of one call.
pub const DEFAULT_MEMORY: usize = 512 << 20;
/// Default wall-clock limit of one call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Default number of calls that may hold an instance at once.
pub const DEFAULT_INSTANCES: u32 = 64;

/// A failure to start the host.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("workspace {path}: {source}")]
    /// The workspace directory cannot be used.
    Workspace {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    #[error("could not create the wasm engine: {0}")]
    /// wasmtime refused the engine configuration.
    Engine(#[source] wasmtime::Error),
    #[error("could not load built-in tool `{name}`: {source}")]
    /// A built-in tool failed to load (a build problem, not a user one).
    Builtin {
        /// The tool.
        name: String,
        /// Why.
        source: LoadError,
    },
    #[error(transparent)]
    /// The session's state on disk cannot be opened.
    Session(#[from] SessionError),
    #[error("settings: {0}")]
    /// The settings files cannot be read or are invalid.
    Settings(#[from] PolicyError),
    #[error("bypassPermissions mode is disabled by the managed settings (disableBypassPermissionsMode)")]
    /// The managed settings forbid the mode asked for.
    BypassDisabled,
}

/// Builds a [`Host`]. Every setting has a default; see each method.
#[derive(Clone, Default)]
pub struct HostBuilder {
    workspace: Option<PathBuf>,
    additional_dirs: Vec<PathBuf>,
    plugins_dir: Option<PathBuf>,
    data_dir: Option<PathBuf>,
    cache_dir: Option<Option<PathBuf>>,
    mode: PermissionMode,
    allocator: Allocator,
    memory: Option<usize>,
    timeout: Option<Duration>,
    instances: Option<u32>,
    approver: Option<Arc<dyn Approver>>,
    confinement: Confinement,
    settings: Option<Settings>,
    watch: bool,
    link_in_background: bool,
    compile_progress: Option<CompileSink>,
    grants_source: Option<GrantsSource>,
    /// `None`: the default ([`QUICK_ABOVE`]).
    quick_above: Option<Option<usize>>,
    /// `None`: the default (yes).
    optimize: Option<bool>,
}

/// Reads the operator's `toolGrants` afresh (see
/// [`HostBuilder::tool_grants_source`]).
pub type GrantsSource = Arc<dyn Fn() -> Result<ToolGrants, String> + Send + Sync>;
type ToolGrants = std::collections::BTreeMap<String, crate::grants::Allowance>;

impl HostBuilder {
    /// The workspace: the directory file tools work in. Default: the current
    /// directory.
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }
    /// More directories file tools may use besides the workspace.
    pub fn additional_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.additional_dirs.push(dir.into());
        self
    }
    /// Where third-party components (`*.wasm`) are loaded from. Default: none.
    pub fn plugins_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.plugins_dir = dir;
        self
    }
    /// Where sessions and persisted results live. Default: [`default_data_dir`].
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }
    /// Where compiled components (built-ins and plugins) are cached, so only
    /// the first start compiles them. Default: [`default_cache_dir`]; `None`
    /// compiles at every start.
    pub fn cache_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.cache_dir = Some(dir);
        self
    }
    /// The permission mode. Default: `default`.
    pub fn mode(mut self, mode: PermissionMode) -> Self {
        self.mode = mode;
        self
    }
    /// The instance allocator. Default: pooling, falling back to on-demand.
    pub fn allocator(mut self, allocator: Allocator) -> Self {
        self.allocator = allocator;
        self
    }
    /// Memory limit of one call, in bytes. Default: 512 MiB.
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.memory = Some(bytes);
        self
    }
    /// Wall-clock limit of one call. Default: 120 s.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
    /// Calls that may hold an instance at once; more wait. Default: 64.
    pub fn max_instances(mut self, n: u32) -> Self {
        self.instances = Some(n.max(1));
        self
    }
    /// What to do when the kernel cannot confine the processes tools start
    /// (Landlock, network namespaces). Default: refuse to start them.
    pub fn child_confinement(mut self, mode: Confinement) -> Self {
        self.confinement = mode;
        self
    }
    /// Who answers when a call needs approval. Default: nobody, so such calls
    /// are refused with a message naming the mode that would allow them.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Watch the plugins directory and reload it when a component is added,
    /// changed or removed (see [`Host::reload_plugins`]). Default: no.
    pub fn watch_plugins(mut self, watch: bool) -> Self {
        self.watch = watch;
        self
    }

    /// Link the tools a start found compiled and described in the cache on
    /// a thread of their own after the start, instead of at each one's first
    /// use. A start reads neither such a component nor its compiled form
    /// (it costs a stat and a small file), so the first call of each would
    /// otherwise link it (half a millisecond for a small component, a few
    /// for an 18 MB Python one).
    /// Worth it for a long-running front; default: no.
    pub fn link_in_background(mut self, link: bool) -> Self {
        self.link_in_background = link;
        self
    }

    /// Told about compiles that take long (over a second: the first load of
    /// a large component, the built-ins at a first start): once a second
    /// while one runs, and when it is done. They are also logged (info).
    pub fn compile_progress(mut self, sink: CompileSink) -> Self {
        self.compile_progress = Some(sink);
        self
    }

    /// A plugin component of at least `bytes` whose optimized compile is not
    /// cached yet loads compiled by the quick engine (Winch: a quarter of
    /// the time, slower code), and is swapped for its optimized form when
    /// that is done in the background (see
    /// [`HostBuilder::optimize_in_background`]). `None`: always optimized,
    /// at once. Default: [`QUICK_ABOVE`] (1 MiB).
    pub fn quick_compile_above(mut self, bytes: Option<usize>) -> Self {
        self.quick_above = Some(bytes);
        self
    }

    /// Whether a tool loaded quick is compiled optimized in the background
    /// (into the cache) and then served by its optimized form. A one-shot
    /// command, which would end before, says no: its tools stay quick, and
    /// the next long-running host optimizes them. Default: yes.
    pub fn optimize_in_background(mut self, optimize: bool) -> Self {
        self.optimize = Some(optimize);
        self
    }

    /// Where a reload reads `toolGrants` again (the settings files), so a
    /// component installed with new grants while the host runs gets them.
    /// Default: the grants of [`HostBuilder::settings`], fixed.
    pub fn tool_grants_source(mut self, source: GrantsSource) -> Self {
        self.grants_source = Some(source);
        self
    }

    /// Permission rules, hooks, the audit log, the mode and more working
    /// directories, from settings files (see [`crate::policy::settings::load`]).
    /// The settings' mode, when they set one, wins over [`HostBuilder::mode`].
    /// Default: no settings.
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// Creates the engine, loads the built-ins and the plugins directory.
    /// A broken plugin does not stop the host: it is left out and listed in
    /// [`Host::problems`].
    pub fn build(self) -> Result<Host, HostError> {
        let workspace = match self.workspace {
            Some(w) => w,
            None => std::env::current_dir().map_err(|source| HostError::Workspace { path: ".".into(), source })?,
        };
        let settings = self.settings.unwrap_or_default();
        let mode = settings.mode.unwrap_or(self.mode);
        if mode == PermissionMode::BypassPermissions && settings.bypass_disabled {
            return Err(HostError::BypassDisabled);
        }
        let mut working = Vec::new();
        for dir in std::iter::once(&workspace).chain(&self.additional_dirs).chain(&settings.additional_dirs) {
            add_dir_forms(&mut working, dir)?;
        }
        let cwd = working[0].clone();
        let limits = CallLimits {
            memory: self.memory.unwrap_or(DEFAULT_MEMORY),
            timeout: self.timeout.unwrap_or(DEFAULT_TIMEOUT),
        };
        let instances = self.instances.unwrap_or(DEFAULT_INSTANCES);
        let most_memory = settings.tool_grants.values().filter_map(|g| g.memory_mib).max().unwrap_or(0);
        let most_memory = usize::try_from(most_memory.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
        let sandbox = Sandbox::new(self.allocator, limits, most_memory, instances, crate::pipeline::WARM_INSTANCES)
            .map_err(HostError::Engine)?;
        let data_dir = self.data_dir.unwrap_or_else(fsx::default_data_dir);
        let cache_dir = self.cache_dir.unwrap_or_else(|| Some(fsx::default_cache_dir()));
        crate::shell::cache_in(cache_dir.clone());
        crate::session::sweep_orphans(&data_dir);
        let scratch_session = Arc::new(Session::ephemeral(&data_dir));
        let quick_above = self.quick_above.unwrap_or(Some(QUICK_ABOVE));
        let optimizer = match self.optimize.unwrap_or(true) && quick_above.is_some() && cache_dir.is_some() {
            true => Some(Optimizer::default()),
            false => None,
        };

        let mut registry = Registry::default();
        let loader = Loader {
            sandbox: &sandbox,
            cache_dir: cache_dir.as_deref(),
            session: &scratch_session,
            grants: &settings.tool_grants,
            project: &cwd,
            progress: self.compile_progress.as_ref(),
            link_later: true,
            quick_above,
            optimizer: optimizer.as_ref(),
        };
        loader.builtins(&mut registry).map_err(|(name, source)| HostError::Builtin { name, source })?;
        let mut plugins = PluginSet::default();
        if let Some(dir) = &self.plugins_dir {
            match PluginSet::scan(&loader, dir, &plugins) {
                Ok(set) => plugins = set,
                Err(e) => {
                    registry.problem(&dir.display().to_string(), format!("cannot read the plugins directory: {e}"))
                }
            }
            plugins.register(&mut registry);
        }
        let places = Places { cwd: cwd.clone(), working: working.clone(), home: std::env::home_dir() };
        let policy = Policy::new(&settings, places, crate::policy::catalog(&registry))?;
        let pipeline = Pipeline::new(Parts {
            sandbox,
            registry,
            policy,
            dirs: Dirs { cwd, working, read_only: Vec::new() },
            background: Arc::default(),
            scratch_session: Arc::clone(&scratch_session),
            mode,
            approver: self.approver,
            confinement: self.confinement,
            defer_after: settings.defer_tools_after.unwrap_or(crate::registry::DEFAULT_DEFER_AFTER),
        });
        let inner = Arc::new(Inner {
            pipeline,
            data_dir,
            tool_grants: RwLock::new(settings.tool_grants),
            grants_source: self.grants_source,
            cache_dir,
            plugins_dir: self.plugins_dir,
            plugins: Mutex::new(plugins),
            scratch_session,
            changes: tokio::sync::broadcast::channel(CHANGES_KEPT).0,
            watcher: Mutex::new(None),
            compile_progress: self.compile_progress,
            quick_above,
            optimizer,
        });
        start_optimizer(&inner);
        if self.link_in_background {
            link_in_background(&inner);
        }
        if self.watch
            && let Some(dir) = &inner.plugins_dir
        {
            match watch(&inner, dir) {
                Ok(watcher) => *inner.watcher.lock().unwrap_or_else(|e| e.into_inner()) = Some(watcher),
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), error = %e, "cannot watch the plugins directory; it is loaded once")
                }
            }
        }
        Ok(Host { inner })
    }
}

/// Reload events kept for a subscriber that falls behind (it then learns it
/// missed some, and reads the tools afresh).
const CHANGES_KEPT: usize = 64;
/// Links every tool of the registry not linked yet, on a thread of its own
/// (one that stops if the host goes away). A call meanwhile links its own
/// tool, or waits for this thread to finish linking it.
fn link_in_background(inner: &Arc<Inner>) {
    let host: Weak<Inner> = Arc::downgrade(inner);
    let tools: Vec<Arc<LoadedTool>> = inner.pipeline.registry().pool().into_iter().filter(|t| !t.is_linked()).collect();
    if tools.is_empty() {
        return;
    }
    let spawned = std::thread::Builder::new().name("toolhost-link".into()).spawn(move || {
        let started = Instant::now();
        for tool in &tools {
            let Some(inner) = host.upgrade() else { return };
            if let Err(e) = tool.pre(inner.pipeline.sandbox()) {
                tracing::warn!(tool = %tool.spec.name, error = %e, "could not link a tool; its calls will fail");
            }
        }
        tracing::debug!(
            tools = tools.len(),
            took_ms = started.elapsed().as_millis() as u64,
            "linked in the background"
        );
    });
    if let Err(e) = spawned {
        tracing::debug!(error = %e, "no thread to link in the background; tools link at their first use");
    }
}

/// Starts the optimizer, if any: each tool it optimizes is then promoted.
fn start_optimizer(inner: &Arc<Inner>) {
    let (Some(optimizer), Some(cache_dir)) = (&inner.optimizer, &inner.cache_dir) else { return };
    let host: Weak<Inner> = Arc::downgrade(inner);
    let done = move |hash: &str| {
        if let Some(inner) = host.upgrade() {
            Host { inner }.promote(hash);
        }
    };
    let sandbox = inner.pipeline.sandbox();
    optimizer.start(sandbox.engine(), sandbox.quick_engine(), cache_dir.clone(), Box::new(done));
}

/// Watches the plugins directory `dir` for the host, reloading it after
/// each burst of changes (see [`watch::watch`]).
fn watch(inner: &Arc<Inner>, dir: &Path) -> Result<notify::RecommendedWatcher, String> {
    let host: Weak<Inner> = Arc::downgrade(inner);
    watch::watch(dir, move || {
        let Some(inner) = host.upgrade() else { return false };
        Host { inner }.reload_plugins();
        true
    })
}

/// Adds `dir` made absolute, and its canonical form when different (a
/// workspace reached through a symlink is known by both paths).
fn add_dir_forms(out: &mut Vec<PathBuf>, dir: &Path) -> Result<(), HostError> {
    let err = |source| HostError::Workspace { path: dir.to_path_buf(), source };
    let absolute = std::path::absolute(dir).map_err(err)?;
    let canonical = absolute.canonicalize().map_err(err)?;
    if !canonical.is_dir() {
        return Err(err(std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory")));
    }
    for form in [canonical, fsx::normalize(&absolute)] {
        if !out.contains(&form) {
            out.push(form);
        }
    }
    Ok(())
}

/// A running host. Cheap to clone; share it across threads.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

struct Inner {
    pipeline: Pipeline,
    /// `toolGrants` from the settings, for loading plugins.
    tool_grants: RwLock<ToolGrants>,
    grants_source: Option<GrantsSource>,
    /// Where sessions and persisted results live.
    data_dir: PathBuf,
    cache_dir: Option<PathBuf>,
    plugins_dir: Option<PathBuf>,
    /// The plugins directory as last loaded; held while a reload runs, so
    /// reloads take turns.
    plugins: Mutex<PluginSet>,
    /// The session loading calls see.
    scratch_session: Arc<Session>,
    /// Where reloads tell what changed.
    changes: tokio::sync::broadcast::Sender<ToolsChanged>,
    /// Watching the plugins directory, when asked to.
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
    compile_progress: Option<CompileSink>,
    quick_above: Option<usize>,
    /// Compiling optimized the tools loaded quick, when asked to.
    optimizer: Option<Optimizer>,
}

impl Host {
    /// A builder with every default.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// Runs one call through the whole pipeline. Blocks the calling thread
    /// while the tool runs (use a blocking-capable thread in async code).
    pub fn call(&self, session: &Arc<Session>, tool_use: &ToolUse, options: &CallOptions) -> ToolResult {
        self.inner.pipeline.call(session, tool_use, options)
    }

    /// Whether a call may run beside other concurrency-safe calls: the tool
    /// answers in a separate instance, within [`crate::CLASSIFY_TIMEOUT`].
    /// A tool that is unknown, input that fails the schema and a tool that
    /// cannot answer are not concurrency-safe.
    pub fn is_concurrency_safe(&self, tool_use: &ToolUse) -> bool {
        self.inner.pipeline.is_concurrency_safe(tool_use)
    }

    /// [`Host::is_concurrency_safe`] for a call of `session`: a tool that
    /// declares `reuse-instance` answers in the session's warm instance, as
    /// its call will run.
    pub fn is_concurrency_safe_in(&self, session: &Arc<Session>, tool_use: &ToolUse) -> bool {
        self.inner.pipeline.is_concurrency_safe_in(session, tool_use)
    }

    /// Whether a user interrupt cancels calls of `tool` (its interrupt
    /// behavior is `cancel`); unknown tools: yes.
    pub fn cancels_on_interrupt(&self, tool: &str) -> bool {
        self.inner.pipeline.cancels_on_interrupt(tool)
    }

    /// The pool offered to the model, in its stable order: enabled tools
    /// that no deny rule names wholesale.
    ///
    /// Deferred tools ([`Host::deferred_tools`]) are in it too: a front
    /// offering tools to a model gives those by name only, and lists
    /// ToolSearch (which is in the pool only while some tool is deferred).
    pub fn pool(&self) -> Vec<Arc<LoadedTool>> {
        let pipeline = &self.inner.pipeline;
        let rules = pipeline.policy().rules();
        let registry = pipeline.registry();
        let searching = !pipeline.deferred(&registry).is_empty();
        let mut pool = registry.pool();
        pool.retain(|t| {
            rules.denies_tool(&t.spec.name).is_none() && (searching || t.spec.name != crate::registry::TOOL_SEARCH)
        });
        pool
    }

    /// The tools of the pool offered to the model by name only (in pool
    /// order): those that ask to be deferred, and the third-party tools
    /// beyond `deferToolsAfter` (default 30). The model loads one with
    /// ToolSearch before calling it; calling one it has not loaded in its
    /// session is an error that says so.
    pub fn deferred_tools(&self) -> Vec<String> {
        let pipeline = &self.inner.pipeline;
        let registry = pipeline.registry();
        let deferred = pipeline.deferred(&registry);
        self.pool().into_iter().map(|t| t.spec.name.clone()).filter(|n| deferred.contains(n)).collect()
    }

    /// The tool called `name` (or with that alias), enabled or not.
    pub fn tool(&self, name: &str) -> Option<Arc<LoadedTool>> {
        self.inner.pipeline.registry().resolve(name).cloned()
    }

    /// Plugins that could not be loaded, and why.
    pub fn problems(&self) -> Vec<Problem> {
        self.inner.pipeline.registry().problems().to_vec()
    }

    /// Loads the plugins directory again and swaps the tools in one step:
    /// a new component is added, a changed one replaced, a removed one is
    /// no longer offered (new calls of it get the no-such-tool error); calls
    /// already running finish on the version they started with. A changed
    /// component that no longer loads is rejected, and the version loaded
    /// before keeps serving. Unchanged files are not read again.
    ///
    /// What changed, when anything did; it also goes to every
    /// [`Host::tools_changed`] subscriber. A watching host
    /// ([`HostBuilder::watch_plugins`]) calls this itself.
    pub fn reload_plugins(&self) -> Option<ToolsChanged> {
        let inner = &self.inner;
        let dir = inner.plugins_dir.as_deref()?;
        let mut plugins = inner.plugins.lock().unwrap_or_else(|e| e.into_inner());
        let started = Instant::now();
        if let Some(source) = &inner.grants_source {
            match source() {
                Ok(grants) => *inner.tool_grants.write().unwrap_or_else(|e| e.into_inner()) = grants,
                Err(e) => tracing::warn!(error = %e, "cannot read toolGrants again; the grants stay as they were"),
            }
        }
        let grants = inner.tool_grants.read().unwrap_or_else(|e| e.into_inner()).clone();
        // A reload links what it loads: the new tools are ready when told.
        let fresh = match PluginSet::scan(&inner.loader(&grants, false), dir, &plugins) {
            Ok(set) => set,
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot read the plugins directory; the tools stay as they were");
                return None;
            }
        };
        let before = inner.pipeline.registry();
        let mut registry = before.builtins_only();
        fresh.register(&mut registry);
        let change = crate::registry::diff(&before, &registry, &plugins, &fresh);
        let same_problems = registry.problems() == before.problems();
        *plugins = fresh;
        if !change.tools_changed() && same_problems {
            return None;
        }
        let forget: Vec<String> = change.removed.iter().chain(&change.replaced).cloned().collect();
        inner.pipeline.swap_registry(registry, &forget);
        tracing::info!(
            added = ?change.added,
            removed = ?change.removed,
            replaced = ?change.replaced,
            took_ms = started.elapsed().as_millis() as u64,
            "reloaded the plugins directory"
        );
        let _ = inner.changes.send(change.clone());
        Some(change)
    }

    /// Serves the plugins loaded quick from the component whose content hash
    /// is `hash` by their optimized form, now in the cache: each is loaded
    /// again (its file unchanged) and the registry swapped. Calls running
    /// finish on the quick code; the next ones start on the optimized code.
    /// The tools offered do not change, so nobody is told.
    fn promote(&self, hash: &str) {
        let inner = &self.inner;
        let Some(dir) = inner.plugins_dir.as_deref() else { return };
        let mut plugins = inner.plugins.lock().unwrap_or_else(|e| e.into_inner());
        let grants = inner.tool_grants.read().unwrap_or_else(|e| e.into_inner()).clone();
        let promoted = plugins.promote(&inner.loader(&grants, false), hash);
        if promoted.is_empty() {
            return;
        }
        let mut registry = inner.pipeline.registry().builtins_only();
        plugins.register(&mut registry);
        inner.pipeline.swap_registry(registry, &[]);
        tracing::info!(tools = ?promoted, dir = %dir.display(), "now served by their optimized compile");
    }

    /// A stream of what each reload changed (tools added, removed, replaced,
    /// components rejected). Receive with `recv().await`, or
    /// `blocking_recv()` outside async code; a subscriber that falls more
    /// than 64 reloads behind is told it lagged.
    pub fn tools_changed(&self) -> tokio::sync::broadcast::Receiver<ToolsChanged> {
        self.inner.changes.subscribe()
    }

    /// Whether the plugins directory is being watched.
    pub fn watching(&self) -> bool {
        self.inner.watcher.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// The working directories (absolute; the workspace first).
    pub fn working_dirs(&self) -> &[PathBuf] {
        &self.inner.pipeline.dirs().working
    }

    /// The permission mode.
    pub fn mode(&self) -> PermissionMode {
        self.inner.pipeline.mode()
    }

    /// The instance allocator in use.
    pub fn allocator(&self) -> Allocator {
        self.inner.pipeline.sandbox().allocator()
    }

    /// The default limits of one call (a tool granted more gets more).
    pub fn call_limits(&self) -> crate::sandbox::CallLimits {
        self.inner.pipeline.sandbox().limits()
    }

    /// Opens (or creates) the persistent session `id`.
    pub fn session(&self, id: &str) -> Result<Arc<Session>, SessionError> {
        Session::open(&self.inner.data_dir, id).map(Arc::new)
    }

    /// A new session kept in memory only.
    pub fn ephemeral_session(&self) -> Arc<Session> {
        Arc::new(Session::ephemeral(&self.inner.data_dir))
    }

    /// Ends `session`'s background processes: those still running are
    /// killed, and their output is forgotten; its warm instances are dropped. For a long-running front
    /// (`serve`) when a client's session ends; the host's end kills them all.
    pub fn end_session(&self, session: &Session) {
        self.inner.pipeline.background().end_session(session.id());
        self.inner.pipeline.end_session(session);
    }

    /// Instantiates `tool` in a fresh Store with no capabilities, calls its
    /// cheapest export (`is-enabled`) and drops everything: the floor of a
    /// call's cost. For benchmarks.
    #[doc(hidden)]
    pub fn bare_call(&self, tool: &str) -> Option<bool> {
        self.inner.pipeline.bare_call(tool)
    }

    /// Loads a component file the way a plugin would be loaded, without
    /// registering it: what `toolhost check` reports.
    /// Compiles through the cache, like a start.
    pub fn check_component(&self, path: &Path) -> Result<LoadedTool, LoadError> {
        let grants = self.inner.tool_grants.read().unwrap_or_else(|e| e.into_inner()).clone();
        self.inner.loader(&grants, false).component_file(path)
    }

    /// Loads a component file the way a plugin would be loaded, through the
    /// host's compile cache (so the next start finds it compiled and
    /// described), granting it everything it requests whatever the settings
    /// grant, without registering it: what `toolhost install` shows the
    /// operator before they grant anything. A component importing a
    /// capability it does not request is refused: no grant could load it.
    pub fn review_component(&self, path: &Path) -> Result<LoadedTool, LoadError> {
        let grants = self.inner.tool_grants.read().unwrap_or_else(|e| e.into_inner()).clone();
        self.inner.loader(&grants, false).component_file_as_requested(path)
    }
}

impl Inner {
    /// A loader for a reload or a check; `link_later` is for a start only.
    fn loader<'a>(&'a self, grants: &'a ToolGrants, link_later: bool) -> Loader<'a> {
        Loader {
            sandbox: self.pipeline.sandbox(),
            cache_dir: self.cache_dir.as_deref(),
            session: &self.scratch_session,
            grants,
            project: &self.pipeline.dirs().cwd,
            progress: self.compile_progress.as_ref(),
            link_later,
            quick_above: self.quick_above,
            optimizer: self.optimizer.as_ref(),
        }
    }
}
