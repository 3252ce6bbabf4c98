//! The host: engine, linker, registry and configuration, built once.

use crate::builtins;
use crate::cache;
use crate::contract;
use crate::engine::{Allocator, PoolSizes, Runtime};
use crate::permissions::{Approver, PermissionMode};
use crate::policy::Policy;
use crate::registry::{Problem, Registry};
use crate::sandbox::{CallLimits, Dirs, Grants};
use crate::session::{Session, SessionError};
use crate::settings::Settings;
use crate::state::HostState;
use crate::tool::{self, Description, LoadError, LoadedTool, Origin};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use wasmtime::component::Linker;

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
    Workspace { path: PathBuf, source: std::io::Error },
    #[error("could not create the wasm engine: {0}")]
    Engine(String),
    #[error("could not load built-in tool `{name}`: {message}")]
    Builtin { name: String, message: String },
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("settings: {0}")]
    Settings(String),
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
    confinement: crate::confine::Mode,
    settings: Option<Settings>,
}

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
    pub fn child_confinement(mut self, mode: crate::confine::Mode) -> Self {
        self.confinement = mode;
        self
    }
    /// Who answers when a call needs approval. Default: nobody, so such calls
    /// are refused with a message naming the mode that would allow them.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Permission rules, hooks, the audit log, the mode and more working
    /// directories, from settings files (see [`crate::settings::load`]).
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
            return Err(HostError::Settings(
                "bypassPermissions mode is disabled by the managed settings (disableBypassPermissionsMode)".into(),
            ));
        }
        let mut working = Vec::new();
        for dir in std::iter::once(&workspace).chain(&self.additional_dirs).chain(&settings.additional_dirs) {
            add_dir_forms(&mut working, dir)?;
        }
        let cwd = working[0].clone();
        let places = crate::rules::Places { cwd: cwd.clone(), working: working.clone(), home: std::env::home_dir() };
        let policy = Policy::new(&settings, places).map_err(HostError::Settings)?;
        let limits = CallLimits {
            memory: self.memory.unwrap_or(DEFAULT_MEMORY),
            timeout: self.timeout.unwrap_or(DEFAULT_TIMEOUT),
        };
        let instances = self.instances.unwrap_or(DEFAULT_INSTANCES);
        let sizes = PoolSizes { instances, max_memory: limits.memory.next_multiple_of(64 << 10) };
        let runtime = Runtime::new(self.allocator, sizes).map_err(|e| HostError::Engine(format!("{e:#}")))?;
        let mut linker = Linker::new(&runtime.engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(|e| HostError::Engine(format!("{e:#}")))?;
        crate::bindings::Full::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(&mut linker, |s| s)
            .map_err(|e| HostError::Engine(format!("{e:#}")))?;
        let data_dir = self.data_dir.unwrap_or_else(default_data_dir);
        let cache_dir = self.cache_dir.unwrap_or_else(|| Some(default_cache_dir()));
        let load_session = Arc::new(Session::ephemeral(&data_dir));

        let mut registry = Registry::default();
        for embedded in builtins::EMBEDDED {
            let component = cache::compile(&runtime.engine, embedded.wasm, embedded.sha256, cache_dir.as_deref())
                .map_err(|e| HostError::Builtin { name: embedded.crate_dir.into(), message: format!("{e:#}") })?;
            let grants = builtins::grants(embedded.crate_dir);
            // A built-in's description depends only on its code: kept beside
            // its compiled form, it spares instantiating every built-in at
            // every start.
            let spec_file = cache_dir.as_deref().map(|d| cache::spec_path(d, &runtime.engine, embedded.sha256));
            let known = spec_file.as_deref().and_then(cache::read_spec);
            let described = known.is_none();
            let description = match known {
                Some(spec) => Description::Known(Box::new(spec)),
                None => Description::Ask { limits, session: &load_session },
            };
            let tool = tool::load(&runtime.engine, &linker, &component, Origin::Builtin, grants, description)
                .map_err(|e| HostError::Builtin { name: embedded.crate_dir.into(), message: e.to_string() })?;
            if let (true, Some(file)) = (described, &spec_file) {
                cache::write_spec(file, &tool.spec);
            }
            registry.add(tool, &format!("builtin:{}", embedded.crate_dir));
        }
        if let Some(dir) = &self.plugins_dir {
            load_plugins(&runtime, &linker, &mut registry, dir, cache_dir.as_deref(), limits, &load_session);
        }

        Ok(Host {
            inner: Arc::new(Inner {
                gate: Gate::new(instances as usize),
                runtime,
                linker,
                registry,
                dir_strings: DirStrings {
                    cwd: cwd.to_string_lossy().into_owned(),
                    working: working.iter().map(|d| d.to_string_lossy().into_owned()).collect(),
                },
                dirs: Arc::new(Dirs { cwd, working, read_only: Vec::new() }),
                background: Arc::default(),
                scratch_session: load_session,
                data_dir,
                mode,
                limits,
                approver: self.approver,
                confinement: self.confinement,
                policy,
            }),
        })
    }
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
    for form in [canonical, crate::sandbox::normalize(&absolute)] {
        if !out.contains(&form) {
            out.push(form);
        }
    }
    Ok(())
}

fn load_plugins(
    runtime: &Runtime,
    linker: &Linker<HostState>,
    registry: &mut Registry,
    dir: &Path,
    cache_dir: Option<&Path>,
    limits: CallLimits,
    session: &Arc<Session>,
) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            registry.problem(&dir.display().to_string(), format!("cannot read the plugins directory: {e}"));
            return;
        }
    };
    let mut paths: Vec<PathBuf> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "wasm")).collect();
    paths.sort();
    for path in paths {
        let source = path.display().to_string();
        match load_component_file(runtime, linker, &path, cache_dir, limits, session) {
            Ok(tool) => registry.add(tool, &source),
            Err(e) => registry.problem(&source, e.to_string()),
        }
    }
}

/// Loads a third-party component file: header check, compile (cached), shape
/// check, link, describe. A third-party tool is granted nothing.
fn load_component_file(
    runtime: &Runtime,
    linker: &Linker<HostState>,
    path: &Path,
    cache_dir: Option<&Path>,
    limits: CallLimits,
    session: &Arc<Session>,
) -> Result<LoadedTool, LoadError> {
    let bytes = std::fs::read(path).map_err(|e| LoadError::Compile(format!("cannot read {}: {e}", path.display())))?;
    contract::check_header(&bytes)?;
    let component = cache::compile(&runtime.engine, &bytes, &cache::content_hash(&bytes), cache_dir)
        .map_err(|e| LoadError::Compile(format!("{e:#}")))?;
    let description = Description::Ask { limits, session };
    tool::load(&runtime.engine, linker, &component, Origin::Plugin(path.to_path_buf()), Grants::default(), description)
}

/// `$TOOLHOST_DATA_DIR`, else `$XDG_DATA_HOME/toolhost`, else `~/.local/share/toolhost`.
pub fn default_data_dir() -> PathBuf {
    xdg("TOOLHOST_DATA_DIR", "XDG_DATA_HOME", ".local/share")
}

/// `$TOOLHOST_CACHE_DIR`, else `$XDG_CACHE_HOME/toolhost`, else `~/.cache/toolhost`.
pub fn default_cache_dir() -> PathBuf {
    xdg("TOOLHOST_CACHE_DIR", "XDG_CACHE_HOME", ".cache")
}

/// `$TOOLHOST_PLUGINS`, else `$XDG_CONFIG_HOME/toolhost/plugins`, else `~/.config/toolhost/plugins`.
pub fn default_plugins_dir() -> PathBuf {
    match std::env::var_os("TOOLHOST_PLUGINS") {
        Some(dir) => PathBuf::from(dir),
        None => config_dir().join("plugins"),
    }
}

/// `$TOOLHOST_CONFIG_DIR`, else `$XDG_CONFIG_HOME/toolhost`, else `~/.config/toolhost`:
/// user settings and plugins.
pub fn config_dir() -> PathBuf {
    xdg("TOOLHOST_CONFIG_DIR", "XDG_CONFIG_HOME", ".config")
}

fn xdg(own: &str, xdg_var: &str, home_rel: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os(own).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os(xdg_var)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::home_dir().map(|h| h.join(home_rel)))
        .unwrap_or_else(std::env::temp_dir);
    base.join("toolhost")
}

/// The working directories as strings, for call contexts.
pub(crate) struct DirStrings {
    pub cwd: String,
    pub working: Vec<String>,
}

/// A running host. Cheap to clone; share it across threads.
#[derive(Clone)]
pub struct Host {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub runtime: Runtime,
    pub linker: Linker<HostState>,
    pub registry: Registry,
    pub dirs: Arc<Dirs>,
    /// Background processes started by calls; killed when the host ends.
    pub background: Arc<crate::process::BackgroundRegistry>,
    /// `dirs` as the strings of a call's context, made once.
    pub dir_strings: DirStrings,
    /// A session for calls that belong to none (loading, benchmarks).
    pub scratch_session: Arc<Session>,
    pub data_dir: PathBuf,
    pub mode: PermissionMode,
    pub limits: CallLimits,
    pub approver: Option<Arc<dyn Approver>>,
    pub confinement: crate::confine::Mode,
    pub policy: Policy,
    pub gate: Gate,
}

impl Inner {
    /// A scope for asking `tool` something outside any call (loading,
    /// scheduling, benchmarks): the scratch session, the working directories.
    pub(crate) fn scratch_scope(&self, tool: &LoadedTool, tool_use_id: String) -> crate::state::Scope {
        crate::state::Scope::new(
            Arc::from(tool.spec.name.as_str()),
            tool_use_id,
            Arc::clone(&self.scratch_session),
            tool.namespace(),
            Arc::clone(&self.dirs),
            Arc::clone(&self.background),
        )
    }
}

impl Host {
    /// A builder with every default.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// The pool offered to the model, in its stable order: enabled tools
    /// that no deny rule names wholesale.
    pub fn pool(&self) -> Vec<Arc<LoadedTool>> {
        let rules = self.inner.policy.rules();
        let mut pool = self.inner.registry.pool();
        pool.retain(|t| rules.denies_tool(&t.spec.name).is_none());
        pool
    }

    /// The tool called `name` (or with that alias), enabled or not.
    pub fn tool(&self, name: &str) -> Option<&Arc<LoadedTool>> {
        self.inner.registry.resolve(name)
    }

    /// Plugins that could not be loaded, and why.
    pub fn problems(&self) -> &[Problem] {
        self.inner.registry.problems()
    }

    /// The working directories (absolute; the workspace first).
    pub fn working_dirs(&self) -> &[PathBuf] {
        &self.inner.dirs.working
    }

    /// The permission mode.
    pub fn mode(&self) -> PermissionMode {
        self.inner.mode
    }

    /// The instance allocator in use.
    pub fn allocator(&self) -> Allocator {
        self.inner.runtime.allocator
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
    /// killed, and their output is forgotten. For a long-running front
    /// (`serve`) when a client's session ends; the host's end kills them all.
    pub fn end_session(&self, session: &Session) {
        self.inner.background.end_session(session.id());
    }

    /// Instantiates `tool` in a fresh Store with no capabilities, calls its
    /// cheapest export (`is-enabled`) and drops everything: the floor of a
    /// call's cost. For benchmarks.
    #[doc(hidden)]
    pub fn bare_call(&self, tool: &str) -> Option<bool> {
        let tool = self.inner.registry.resolve(tool)?;
        let scope = self.inner.scratch_scope(tool, String::new());
        let _running = self.inner.runtime.running();
        let (mut store, _captured) =
            crate::sandbox::store(&self.inner.runtime.engine, &Grants::default(), scope, self.inner.limits);
        let plugin = tool.pre.instantiate(&mut store).ok()?;
        plugin.toolhost_tool_tool().call_is_enabled(&mut store).ok()
    }

    /// Loads a component file the way a plugin would be loaded, without
    /// registering it: what `toolhost check` reports.
    pub fn check_component(&self, path: &Path) -> Result<LoadedTool, LoadError> {
        let session = self.ephemeral_session();
        load_component_file(&self.inner.runtime, &self.inner.linker, path, None, self.inner.limits, &session)
    }
}

/// Admission in front of the instance pool: a call waits for a slot instead
/// of failing when the pool is full.
pub(crate) struct Gate {
    free: Mutex<usize>,
    freed: Condvar,
}

impl Gate {
    fn new(slots: usize) -> Gate {
        Gate { free: Mutex::new(slots), freed: Condvar::new() }
    }

    pub fn enter(&self) -> GateGuard<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        GateGuard { gate: self }
    }
}

pub(crate) struct GateGuard<'a> {
    gate: &'a Gate,
}

impl Drop for GateGuard<'_> {
    fn drop(&mut self) {
        *self.gate.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.gate.freed.notify_one();
    }
}
