//! Building a host: the limits, the directories, the settings, the engine,
//! the built-ins and the plugins, in that order.

use crate::config::Settings;
use crate::fsx::{self, Dirs};
use crate::pipeline::{Parts, Pipeline};
use crate::policy::rules::Places;
use crate::policy::{Approver, PermissionMode, Policy, PolicyError};
use crate::process::{BackgroundRegistry, Confinement};
use crate::registry::{CompileSink, LoadError, Loader, Optimizer, PluginSet, QUICK_ABOVE, Registry};
use crate::sandbox::{Allocator, CallLimits, Sandbox};
use crate::session::{FileStore, Session, SessionError, StateStore};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use super::reload::{CHANGES_KEPT, link_in_background, start_optimizer, watch};
use super::{Host, Inner};

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
    /// wasmtime refused the engine configuration (its reason, with the
    /// causes).
    Engine(String),
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
    state: Option<Arc<dyn StateStore>>,
    instance: Option<String>,
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
    spares_above: Option<Option<Duration>>,
    remote: Option<Arc<dyn crate::registry::RemoteSource>>,
    /// `None`: the settings' `codeMode`, else off.
    code_mode: Option<bool>,
    trace_content: bool,
}

/// Reads the operator's `toolGrants` afresh (see
/// [`HostBuilder::tool_grants_source`]).
pub type GrantsSource = Arc<dyn Fn() -> Result<ToolGrants, String> + Send + Sync>;
pub(super) type ToolGrants = std::collections::BTreeMap<String, crate::grants::Allowance>;

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
    /// Where sessions and persisted results live. Default: [`default_data_dir`](crate::default_data_dir).
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }
    /// Where persistent sessions' state is kept ([`Host::session`]).
    /// Default: files under the data directory ([`FileStore`]); a store
    /// several hosts share lets each of them serve any session.
    pub fn state_store(mut self, store: Arc<dyn StateStore>) -> Self {
        self.state = Some(store);
        self
    }
    /// This host's name among several serving the same sessions (through a
    /// shared [`state_store`](Self::state_store)): a call for a background
    /// process another instance runs says which. Default: the machine's
    /// host name (a Kubernetes pod's name).
    pub fn instance(mut self, name: impl Into<String>) -> Self {
        self.instance = Some(name.into());
        self
    }
    /// Where compiled components (built-ins and plugins) are cached, so only
    /// the first start compiles them. Default: [`default_cache_dir`](crate::default_cache_dir); `None`
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

    /// Offer the Script tool (code mode: a JavaScript program that calls the
    /// other tools, each call through the whole pipeline). Default: the
    /// settings' `codeMode`, else off.
    pub fn code_mode(mut self, on: bool) -> Self {
        self.code_mode = Some(on);
        self
    }

    /// Record each call's arguments and result in its span (OpenTelemetry's
    /// opt-in `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`; a
    /// result as the model gets it, a tool's secrets masked). They may hold
    /// whatever the files and commands they touch hold. Default: no.
    pub fn trace_content(mut self, on: bool) -> Self {
        self.trace_content = on;
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
    /// at once. Default: 1 MiB.
    pub fn quick_compile_above(mut self, bytes: Option<usize>) -> Self {
        self.quick_above = Some(bytes);
        self
    }

    /// A tool whose fresh instance took at least `took` to make gets the
    /// instance of its next call made ahead, on another thread, still fresh
    /// and used by that one call only (see `docs/sandbox.md`). `None`: every
    /// call makes its own. Default: 250 µs (an interpreter's instance, not a
    /// small Rust tool's).
    pub fn spare_instances_above(mut self, took: Option<Duration>) -> Self {
        self.spares_above = Some(took);
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

    /// Tools other programs serve (MCP servers', through `toolhost-mcp`'s
    /// client), offered beside the components and called through the same
    /// pipeline. The host reads them at build and whenever
    /// [`Host::reload_remote`] is called. Default: none.
    pub fn remote_tools(mut self, source: Arc<dyn crate::registry::RemoteSource>) -> Self {
        self.remote = Some(source);
        self
    }

    /// Permission rules, hooks, the audit log, the mode and more working
    /// directories, from settings files (see [`crate::config::load`]).
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
        let mut settings = self.settings.unwrap_or_default();
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
        let kept = crate::pipeline::WARM_INSTANCES + crate::pipeline::SPARE_INSTANCES;
        let sandbox = Sandbox::new(self.allocator, limits, most_memory, instances, kept)
            .map_err(|e| HostError::Engine(format!("{e:#}")))?;
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
        // The built-in that runs programs only in code mode (else its name is free).
        if !self.code_mode.or(settings.code_mode).unwrap_or(false) {
            registry = registry.without_role(crate::registry::Role::RunsPrograms);
        }
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
        if let Some(remote) = &self.remote {
            registry.add_remote(&**remote);
        }
        let places = Places { cwd: cwd.clone(), working: working.clone(), home: std::env::home_dir() };
        let policy = Policy::new(&settings, places, crate::policy::catalog(&registry))?;
        let pipeline = Pipeline::new(Parts {
            sandbox,
            registry,
            policy,
            dirs: Dirs { cwd, working, read_only: Vec::new() },
            background: Arc::new(BackgroundRegistry::new(self.instance.unwrap_or_else(default_instance))),
            scratch_session: Arc::clone(&scratch_session),
            mode,
            approver: self.approver,
            confinement: self.confinement,
            defer_after: settings.defer_tools_after.unwrap_or(crate::registry::DEFAULT_DEFER_AFTER),
            spares_above: self.spares_above.unwrap_or(Some(crate::pipeline::SPARE_ABOVE)),
            // Counted in the store the host was given (shared by a fleet),
            // else in this process.
            quotas: crate::quotas::Quotas::new(std::mem::take(&mut settings.quotas), self.state.as_ref()),
            trace_content: self.trace_content,
        });
        let state = self.state.unwrap_or_else(|| Arc::new(FileStore::new(&data_dir)));
        let inner = Arc::new(Inner {
            pipeline,
            state,
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
            remote: self.remote,
        });
        let weak = Host { inner: Arc::clone(&inner) }.downgrade();
        inner.pipeline.set_scripts(Arc::new(move |start| {
            let host = weak.upgrade()?;
            Some(Arc::new(super::script::ScriptRun::new(host, start)) as crate::imports::ScriptCalls)
        }));
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

/// The machine's host name, else `toolhost-PID`.
fn default_instance() -> String {
    let mut name = [0u8; 256];
    // SAFETY: `name` is valid for writes of its length.
    let r = unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len()) };
    let end = name.iter().position(|&b| b == 0).unwrap_or(0);
    match std::str::from_utf8(&name[..end]) {
        Ok(host) if r == 0 && !host.is_empty() => host.to_string(),
        _ => format!("toolhost-{}", std::process::id()),
    }
}
