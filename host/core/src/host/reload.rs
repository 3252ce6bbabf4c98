//! A host keeping up with its plugins: reloading the directory (by hand or
//! from the watcher), linking lazily loaded tools in the background, and
//! swapping in optimized compiles of quickly compiled ones.

use crate::registry::{LoadedTool, PluginSet, Registry, ToolsChanged};
use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::Instant;

use super::{Host, Inner, watch};

/// Reload events kept for a subscriber that falls behind (it then learns it
/// missed some, and reads the tools afresh).
pub(super) const CHANGES_KEPT: usize = 64;
/// Links every tool of the registry not linked yet, on a thread of its own
/// (one that stops if the host goes away). A call meanwhile links its own
/// tool, or waits for this thread to finish linking it.
pub(super) fn link_in_background(inner: &Arc<Inner>) {
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
pub(super) fn start_optimizer(inner: &Arc<Inner>) {
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
pub(super) fn watch(inner: &Arc<Inner>, dir: &Path) -> Result<notify::RecommendedWatcher, String> {
    let host: Weak<Inner> = Arc::downgrade(inner);
    watch::watch(dir, move || {
        let Some(inner) = host.upgrade() else { return false };
        Host { inner }.reload_plugins();
        true
    })
}

/// Puts `registry` in place of `before` when a reload changed the tools
/// offered or the problems: what the user granted a removed or replaced
/// tool is forgotten, and every subscriber is told. `None`: nothing changed.
fn swap_in(
    inner: &Inner,
    before: &Registry,
    registry: Registry,
    change: ToolsChanged,
    started: Instant,
    what: &str,
) -> Option<ToolsChanged> {
    if !change.tools_changed() && registry.problems() == before.problems() {
        return None;
    }
    let forget: Vec<String> = change.removed.iter().chain(&change.replaced).cloned().collect();
    inner.pipeline.swap_registry(registry, &forget);
    inner.pipeline.metrics().reloaded();
    tracing::info!(
        added = ?change.added,
        removed = ?change.removed,
        replaced = ?change.replaced,
        took_ms = started.elapsed().as_millis() as u64,
        "{what}"
    );
    let _ = inner.changes.send(change.clone());
    Some(change)
}

/// A remote tool is described anew at each reading: it counts as replaced
/// only when its description changed.
fn keep_remote_unreplaced(change: &mut ToolsChanged, before: &Registry, after: &Registry) {
    change.replaced.retain(|name| {
        let (old, new) = (before.resolve(name), after.resolve(name));
        old.zip(new).is_some_and(|(o, n)| o.served_by().is_none() || o.spec != n.spec || o.served_by() != n.served_by())
    });
}

impl Host {
    /// Loads the plugins directory again and swaps the tools in one step:
    /// a new component is added, a changed one replaced, a removed one is
    /// no longer offered (new calls of it get the no-such-tool error); calls
    /// already running finish on the version they started with. A changed
    /// component that no longer loads is rejected, and the version loaded
    /// before keeps serving. Unchanged files are not read again.
    ///
    /// What changed, when anything did; it also goes to every
    /// [`Host::tools_changed`] subscriber. A watching host
    /// ([`HostBuilder::watch_plugins`](crate::HostBuilder::watch_plugins)) calls this itself.
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
        let registry = inner.with_remote(registry);
        let mut change = crate::registry::diff(&before, &registry, &plugins, &fresh);
        keep_remote_unreplaced(&mut change, &before, &registry);
        *plugins = fresh;
        swap_in(inner, &before, registry, change, started, "reloaded the plugins directory")
    }

    /// Reads the remote tools again (an MCP server said its tools changed,
    /// or it was started again) and swaps the tools in one step, as
    /// [`Host::reload_plugins`] does; what changed goes to every
    /// [`Host::tools_changed`] subscriber.
    pub fn reload_remote(&self) -> Option<ToolsChanged> {
        let inner = &self.inner;
        inner.remote.as_ref()?;
        // Reloads take turns.
        let plugins = inner.plugins.lock().unwrap_or_else(|e| e.into_inner());
        let started = Instant::now();
        let before = inner.pipeline.registry();
        let mut registry = before.builtins_only();
        plugins.register(&mut registry);
        let registry = inner.with_remote(registry);
        let mut change = crate::registry::diff(&before, &registry, &plugins, &plugins);
        keep_remote_unreplaced(&mut change, &before, &registry);
        swap_in(inner, &before, registry, change, started, "reloaded the MCP servers' tools")
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
        inner.pipeline.swap_registry(inner.with_remote(registry), &[]);
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
}
