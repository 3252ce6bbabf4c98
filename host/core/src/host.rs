//! The host: built once from a [`HostBuilder`] (engine, built-ins, plugins,
//! settings; `builder`), then shared; every call goes through the pipeline.
//! It keeps up with its plugins directory (`reload`, `watch`).

mod batch;
mod builder;
mod reload;
mod script;
mod watch;

pub use batch::run_batch;
pub use script::MAX_SCRIPT_CALLS;

use builder::ToolGrants;
pub use builder::{DEFAULT_INSTANCES, DEFAULT_MEMORY, DEFAULT_TIMEOUT, GrantsSource, HostBuilder, HostError};

use crate::pipeline::{CallOptions, Pipeline, ToolResult, ToolUse};
use crate::policy::PermissionMode;
use crate::registry::{CompileSink, LoadError, LoadedTool, Loader, Optimizer, PluginSet, Problem, Role, ToolsChanged};
use crate::sandbox::Allocator;
use crate::session::{Session, SessionError, StateStore};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

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
    /// Where persistent sessions' state is kept.
    state: Arc<dyn StateStore>,
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
    /// Tools other programs serve (MCP servers'), if any.
    remote: Option<Arc<dyn crate::registry::RemoteSource>>,
}

/// A [`Host`] that does not keep it alive (for callbacks the host holds).
#[derive(Clone)]
pub struct WeakHost {
    inner: std::sync::Weak<Inner>,
}

impl WeakHost {
    /// The host, if it is still running.
    pub fn upgrade(&self) -> Option<Host> {
        self.inner.upgrade().map(|inner| Host { inner })
    }
}

impl Host {
    /// A reference that does not keep the host alive.
    pub fn downgrade(&self) -> WeakHost {
        WeakHost { inner: Arc::downgrade(&self.inner) }
    }

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

    /// Whether `tool_use` is concurrency-safe when no instance needs to be
    /// asked ([`Host::is_concurrency_safe_in`] is then not needed): its tool
    /// declares it for every input, or the call is refused before it starts.
    pub fn declared_concurrency_safe(&self, tool_use: &ToolUse) -> Option<bool> {
        self.inner.pipeline.declared_concurrency_safe(tool_use)
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
        self.pool_declaring(false)
    }

    /// [`Host::pool`] as a front that lists every tool in full offers it
    /// (MCP, whose sessions may call deferred tools at once): the Script
    /// tool's prompt declares the deferred tools too.
    pub fn pool_in_full(&self) -> Vec<Arc<LoadedTool>> {
        self.pool_declaring(true)
    }

    fn pool_declaring(&self, deferred_too: bool) -> Vec<Arc<LoadedTool>> {
        let pipeline = &self.inner.pipeline;
        let rules = pipeline.policy().rules();
        let registry = pipeline.registry();
        let searching = !pipeline.deferred(&registry).is_empty();
        let mut pool = registry.pool();
        pool.retain(|t| rules.denies_tool(&t.spec.name).is_none() && (searching || t.role() != Some(Role::LoadsTools)));
        // The prompt of the tool that runs programs declares the tools its
        // programs can call.
        let script = pool.iter().position(|t| t.role() == Some(Role::RunsPrograms));
        if let Some(i) = script {
            let deferred = pipeline.deferred(&registry);
            let later_one = |name: &str| !deferred_too && deferred.contains(name);
            let others = || pool.iter().filter(|t| t.role() != Some(Role::RunsPrograms));
            let callable: Vec<&crate::registry::ToolSpec> = others()
                .filter(|t| t.role() != Some(Role::LoadsTools) && !later_one(&t.spec.name))
                .map(|t| &t.spec)
                .collect();
            let later: Vec<&str> = others().filter(|t| later_one(&t.spec.name)).map(|t| t.spec.name.as_str()).collect();
            let loader = pool.iter().find(|t| t.role() == Some(Role::LoadsTools));
            let loader = loader.map_or("the tool that loads deferred tools", |t| t.spec.name.as_str());
            let prompt = crate::registry::declarations::script_prompt(&pool[i].spec.prompt, &callable, &later, loader);
            let spec = crate::registry::ToolSpec { prompt, ..pool[i].spec.clone() };
            pool[i] = Arc::new(pool[i].with_spec(spec));
        }
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

    /// Opens (or creates) the persistent session `id`, in the host's state
    /// store ([`HostBuilder::state_store`]).
    pub fn session(&self, id: &str) -> Result<Arc<Session>, SessionError> {
        Session::in_store(&self.inner.data_dir, id, Arc::clone(&self.inner.state)).map(Arc::new)
    }

    /// The host's counters (calls by tool and outcome, durations,
    /// decisions, calls running, instance slots and the calls waiting for
    /// one, reloads) in the OpenMetrics text format Prometheus scrapes.
    pub fn metrics_text(&self) -> String {
        self.inner.pipeline.metrics_text()
    }

    /// Whether any quota is set (`quotas` in the settings).
    pub fn has_quotas(&self) -> bool {
        self.inner.pipeline.has_quotas()
    }

    /// Whether a call of `tool` by `identity` is over one of its quotas
    /// now, and why: for a front to refuse a request before it starts the
    /// call (an HTTP front answers 429 with the refusal's `Retry-After`).
    /// Nothing is counted (the call itself is counted, or refused, when it
    /// runs); a refusal is logged, counted and audited under `session` and
    /// the request's `id`.
    pub fn quota_refusal(
        &self,
        identity: Option<&str>,
        tool: &str,
        session: &str,
        id: &str,
    ) -> Option<crate::quotas::Refusal> {
        self.inner.pipeline.quota_refusal(identity, tool, (session, id))
    }

    /// How many calls are running now (a draining server waits for none).
    pub fn calls_running(&self) -> usize {
        self.inner.pipeline.metrics().running_now()
    }

    /// Where persistent sessions' state is kept: a front keeps its own
    /// records there too, when the store is shared between instances.
    pub fn state_store(&self) -> &Arc<dyn StateStore> {
        &self.inner.state
    }

    /// Forgets the persistent session `id`'s state, in the host's store.
    pub fn forget_session(&self, id: &str) -> Result<(), SessionError> {
        self.inner.state.remove(id)
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
    /// registering it: what `toolhost check` reports. One tool for a
    /// component exporting the contract, one per function for a plain one.
    /// Compiles through the cache, like a start.
    pub fn check_component(&self, path: &Path) -> Result<Vec<LoadedTool>, LoadError> {
        let grants = self.inner.tool_grants.read().unwrap_or_else(|e| e.into_inner()).clone();
        self.inner.loader(&grants, false).component_file(path)
    }

    /// Loads a component file the way a plugin would be loaded, through the
    /// host's compile cache (so the next start finds it compiled and
    /// described), granting it everything it requests whatever the settings
    /// grant, without registering it: what `toolhost install` shows the
    /// operator before they grant anything. A component importing a
    /// capability it does not request is refused: no grant could load it.
    pub fn review_component(&self, path: &Path) -> Result<Vec<LoadedTool>, LoadError> {
        let grants = self.inner.tool_grants.read().unwrap_or_else(|e| e.into_inner()).clone();
        self.inner.loader(&grants, false).component_file_as_requested(path)
    }
}

impl Inner {
    /// A loader for a reload or a check; `link_later` is for a start only.
    /// `registry` (built-ins and plugins) with the remote tools as they are now.
    fn with_remote(&self, mut registry: crate::registry::Registry) -> crate::registry::Registry {
        if let Some(remote) = &self.remote {
            registry.add_remote(&**remote);
        }
        registry
    }

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

impl crate::pipeline::Caller for Host {
    fn call(&self, session: &Arc<Session>, tool_use: &ToolUse, options: &CallOptions) -> ToolResult {
        Host::call(self, session, tool_use, options)
    }
    fn cancels_on_interrupt(&self, tool: &str) -> bool {
        Host::cancels_on_interrupt(self, tool)
    }
    fn declared_concurrency_safe(&self, tool_use: &ToolUse) -> Option<bool> {
        Host::declared_concurrency_safe(self, tool_use)
    }
    fn is_concurrency_safe_in(&self, session: &Arc<Session>, tool_use: &ToolUse) -> bool {
        Host::is_concurrency_safe_in(self, session, tool_use)
    }
    fn tool(&self, name: &str) -> Option<Arc<LoadedTool>> {
        Host::tool(self, name)
    }
}

impl crate::scheduler::Executor {
    /// An executor running calls of `session` on `host`, at most
    /// `max_concurrency` at once, as one model turn.
    pub fn new(host: Host, session: Arc<Session>, max_concurrency: usize) -> crate::scheduler::Executor {
        let config = crate::scheduler::Config { max_concurrency, ..Default::default() };
        Self::with_config(host, session, config)
    }

    /// An executor with the given [`Config`](crate::scheduler::Config).
    pub fn with_config(
        host: Host,
        session: Arc<Session>,
        config: crate::scheduler::Config,
    ) -> crate::scheduler::Executor {
        Self::with_caller(Arc::new(host), session, config)
    }
}
