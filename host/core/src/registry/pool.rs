//! The registry: every loaded tool by name and alias, and the pool (what the
//! model is offered, in a byte-stable order).

use super::tool::{LoadedTool, Origin, Role};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Third-party tools offered in full before the rest are deferred, unless
/// the settings' `deferToolsAfter` says otherwise.
pub(crate) const DEFAULT_DEFER_AFTER: usize = 30;

/// A component that could not be registered, and why; or one registered
/// with part of its declaration cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The file (or `builtin:NAME`).
    pub source: String,
    pub message: String,
}

/// Every loaded tool.
#[derive(Default)]
pub(crate) struct Registry {
    tools: Vec<Arc<LoadedTool>>,
    names: HashMap<String, usize>,
    problems: Vec<Problem>,
    /// The deferred tools, worked out on first use (the registry does not
    /// change once built; a reload builds a new one).
    deferred: std::sync::OnceLock<(usize, BTreeSet<String>)>,
}

impl Registry {
    /// Registers `tool`. Names are unique: the first holder keeps a name (the
    /// built-ins are registered first, so on a clash the built-in wins); a
    /// clashing alias is dropped with a problem noted.
    pub(crate) fn add(&mut self, tool: LoadedTool, source: &str) {
        self.add_shared(Arc::new(tool), source);
    }

    /// [`Registry::add`] of a tool another registry may hold too (a reload
    /// keeps the tools whose files did not change).
    pub(crate) fn add_shared(&mut self, tool: Arc<LoadedTool>, source: &str) {
        if let Some(&i) = self.names.get(&tool.spec.name) {
            let holder = &self.tools[i];
            let holder_is = match &holder.origin {
                Origin::Builtin => format!("the built-in `{}`", holder.spec.name),
                Origin::Plugin(path) => format!("the tool `{}` of {}", holder.spec.name, path.display()),
                Origin::Mcp(server) => format!("the tool `{}` of the MCP server {server}", holder.spec.name),
            };
            self.problem(source, format!("its name `{}` is already taken by {holder_is}, which wins", tool.spec.name));
            return;
        }
        let index = self.tools.len();
        self.names.insert(tool.spec.name.clone(), index);
        for alias in &tool.spec.aliases {
            if self.names.contains_key(alias) {
                self.problem(
                    source,
                    format!("alias `{alias}` of `{}` is already taken; the alias is ignored", tool.spec.name),
                );
            } else {
                self.names.insert(alias.clone(), index);
            }
        }
        for warning in &tool.warnings {
            self.problem(source, format!("`{}` is loaded, but {warning}", tool.spec.name));
        }
        self.tools.push(tool);
    }

    /// Registers the tools `source` offers now, and its problems.
    pub(crate) fn add_remote(&mut self, source: &dyn super::remote::RemoteSource) {
        let (tools, problems) = source.tools();
        for tool in tools {
            let label = format!("mcp:{}", tool.remote.server);
            self.add(LoadedTool::remote(tool), &label);
        }
        for (source, message) in problems {
            self.problem(&source, message);
        }
    }

    /// Notes a component that could not be loaded.
    pub(crate) fn problem(&mut self, source: &str, message: String) {
        tracing::warn!(source, "{message}");
        self.problems.push(Problem { source: source.to_string(), message });
    }

    /// The tool called `name` (or with that alias).
    /// The same tools and problems but the built-in playing `role` (its
    /// name then free for a plugin).
    pub(crate) fn without_role(self, role: Role) -> Registry {
        let mut registry = Registry { problems: self.problems, ..Registry::default() };
        for tool in self.tools.into_iter().filter(|t| t.role() != Some(role)) {
            let source = format!("builtin:{}", tool.spec.name);
            registry.add_shared(tool, &source);
        }
        registry
    }

    pub(crate) fn resolve(&self, name: &str) -> Option<&Arc<LoadedTool>> {
        self.names.get(name).map(|&i| &self.tools[i])
    }

    /// The enabled built-in playing `role`, if there is one.
    pub(crate) fn playing(&self, role: Role) -> Option<&Arc<LoadedTool>> {
        self.tools.iter().find(|t| t.role() == Some(role) && t.spec.enabled)
    }

    /// A registry of the built-ins of this one (what a reload starts from).
    pub(crate) fn builtins_only(&self) -> Registry {
        let mut registry = Registry::default();
        for tool in self.tools.iter().filter(|t| t.origin == Origin::Builtin) {
            registry.add_shared(Arc::clone(tool), &format!("builtin:{}", tool.spec.name));
        }
        registry
    }

    /// Every registered tool, enabled or not, in registration order.
    pub(crate) fn all(&self) -> &[Arc<LoadedTool>] {
        &self.tools
    }

    pub(crate) fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The tools offered to the model by name only, for ToolSearch to load:
    /// those that ask to be deferred (`should-defer`), and the third-party
    /// tools after the first `after` in pool order; never one that asks to
    /// be always loaded (`always-load`), nor the one that loads them.
    pub(crate) fn deferred(&self, after: usize) -> &BTreeSet<String> {
        let (known_after, known) = self.deferred.get_or_init(|| (after, self.work_out_deferred(after)));
        debug_assert_eq!(*known_after, after, "one host defers after one count");
        known
    }

    fn work_out_deferred(&self, after: usize) -> BTreeSet<String> {
        let mut third_party = 0;
        let mut out = BTreeSet::new();
        for tool in self.pool() {
            let spec = &tool.spec;
            if spec.always_load || tool.role() == Some(Role::LoadsTools) {
                continue;
            }
            let beyond = tool.origin != Origin::Builtin && {
                third_party += 1;
                third_party > after
            };
            if spec.should_defer || beyond {
                out.insert(spec.name.clone());
            }
        }
        out
    }

    /// The pool offered to the model: enabled tools, the built-ins sorted by
    /// name as a stable prefix, then third-party tools sorted by name.
    pub(crate) fn pool(&self) -> Vec<Arc<LoadedTool>> {
        let mut pool: Vec<Arc<LoadedTool>> = self.tools.iter().filter(|t| t.spec.enabled).cloned().collect();
        pool.sort_by(|a, b| {
            let rank = |t: &LoadedTool| u8::from(t.origin != Origin::Builtin);
            rank(a).cmp(&rank(b)).then_with(|| a.spec.name.cmp(&b.spec.name))
        });
        pool
    }
}
