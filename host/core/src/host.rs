//! The host: built once from a [`HostBuilder`] (engine, built-ins, plugins,
//! settings), then shared; every call goes through the pipeline.

use crate::fsx::{self, Dirs};
use crate::pipeline::{CallOptions, Parts, Pipeline, ToolResult, ToolUse};
use crate::policy::rules::{Catalog, ContentKind, Places};
use crate::policy::settings::Settings;
use crate::policy::{Approver, PermissionMode, Policy, PolicyError};
use crate::process::Confinement;
use crate::registry::{LoadError, LoadedTool, Loader, Problem, Registry};
use crate::sandbox::{Allocator, CallLimits, Sandbox};
use crate::session::{Session, SessionError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

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
    Engine(#[source] wasmtime::Error),
    #[error("could not load built-in tool `{name}`: {source}")]
    Builtin { name: String, source: LoadError },
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("settings: {0}")]
    Settings(#[from] PolicyError),
    #[error("bypassPermissions mode is disabled by the managed settings (disableBypassPermissionsMode)")]
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
        let sandbox = Sandbox::new(self.allocator, limits, most_memory, instances).map_err(HostError::Engine)?;
        let data_dir = self.data_dir.unwrap_or_else(fsx::default_data_dir);
        let cache_dir = self.cache_dir.unwrap_or_else(|| Some(fsx::default_cache_dir()));
        let scratch_session = Arc::new(Session::ephemeral(&data_dir));

        let mut registry = Registry::default();
        let loader = Loader {
            sandbox: &sandbox,
            cache_dir: cache_dir.as_deref(),
            session: &scratch_session,
            grants: &settings.tool_grants,
            project: &cwd,
        };
        loader.builtins(&mut registry).map_err(|(name, source)| HostError::Builtin { name, source })?;
        if let Some(dir) = &self.plugins_dir {
            loader.plugins_dir(&mut registry, dir);
        }
        let places = Places { cwd: cwd.clone(), working: working.clone(), home: std::env::home_dir() };
        let policy = Policy::new(&settings, places, catalog(&registry))?;
        let pipeline = Pipeline::new(Parts {
            sandbox,
            registry,
            policy,
            dirs: Dirs { cwd, working, read_only: Vec::new() },
            background: Arc::default(),
            scratch_session,
            mode,
            approver: self.approver,
            confinement: self.confinement,
        });
        Ok(Host { inner: Arc::new(Inner { pipeline, data_dir, cache_dir, tool_grants: settings.tool_grants }) })
    }
}

/// What each loaded tool's rule contents mean (by name and alias).
fn catalog(registry: &Registry) -> Catalog {
    let mut catalog = Catalog::new();
    for tool in registry.all() {
        let kind = ContentKind::of(&tool.spec.inputs);
        for name in std::iter::once(&tool.spec.name).chain(&tool.spec.aliases) {
            catalog.entry(name.clone()).or_insert(kind);
        }
    }
    catalog
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
    /// `toolGrants` from the settings, for `check_component`.
    tool_grants: std::collections::BTreeMap<String, crate::contract::Requests>,
    /// Where sessions and persisted results live.
    data_dir: PathBuf,
    /// Where compiled components are cached, for `review_component`.
    cache_dir: Option<PathBuf>,
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

    /// Whether a user interrupt cancels calls of `tool` (its interrupt
    /// behavior is `cancel`); unknown tools: yes.
    pub fn cancels_on_interrupt(&self, tool: &str) -> bool {
        self.inner.pipeline.cancels_on_interrupt(tool)
    }

    /// The pool offered to the model, in its stable order: enabled tools
    /// that no deny rule names wholesale.
    pub fn pool(&self) -> Vec<Arc<LoadedTool>> {
        let pipeline = &self.inner.pipeline;
        let rules = pipeline.policy().rules();
        let mut pool = pipeline.registry().pool();
        pool.retain(|t| rules.denies_tool(&t.spec.name).is_none());
        pool
    }

    /// The tool called `name` (or with that alias), enabled or not.
    pub fn tool(&self, name: &str) -> Option<&Arc<LoadedTool>> {
        self.inner.pipeline.registry().resolve(name)
    }

    /// Plugins that could not be loaded, and why.
    pub fn problems(&self) -> &[Problem] {
        self.inner.pipeline.registry().problems()
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
    /// killed, and their output is forgotten. For a long-running front
    /// (`serve`) when a client's session ends; the host's end kills them all.
    pub fn end_session(&self, session: &Session) {
        self.inner.pipeline.background().end_session(session.id());
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
    pub fn check_component(&self, path: &Path) -> Result<LoadedTool, LoadError> {
        let session = self.ephemeral_session();
        let loader = Loader {
            sandbox: self.inner.pipeline.sandbox(),
            cache_dir: None,
            session: &session,
            grants: &self.inner.tool_grants,
            project: &self.inner.pipeline.dirs().cwd,
        };
        loader.component_file(path)
    }

    /// Loads a component file the way a plugin would be loaded, through the
    /// host's compile cache (so the next start finds it compiled and
    /// described), granting it everything it requests whatever the settings
    /// grant, without registering it: what `toolhost install` shows the
    /// operator before they grant anything. A component importing a
    /// capability it does not request is refused: no grant could load it.
    pub fn review_component(&self, path: &Path) -> Result<LoadedTool, LoadError> {
        let session = self.ephemeral_session();
        let loader = Loader {
            sandbox: self.inner.pipeline.sandbox(),
            cache_dir: self.inner.cache_dir.as_deref(),
            session: &session,
            grants: &self.inner.tool_grants,
            project: &self.inner.pipeline.dirs().cwd,
        };
        loader.component_file_as_requested(path)
    }
}
