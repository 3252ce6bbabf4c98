//! The pipeline's shared state (the sandbox, the registry as it is now, the
//! policy, the directories, what was granted at runtime, the warm
//! instances), what a call takes (`ToolUse`, `CallOptions`), and each call's
//! start: steps 1 and 2 (find the tool, validate and confine its input),
//! then its instance and `run::Run` for the rest.

use super::instance::{Next, Setup};
use super::result::ToolResult;
use super::run::{Run, fault_result, wit_mode};
use super::spare::Spares;
use super::trace::Verdict;
use super::warm::Warm;
use crate::contract::bindings::CallContext;
use crate::fsx::{Dirs, normalize};
use crate::grants::Grants;
use crate::imports::{CallScope, ProgressSink, ScriptCalls};
use crate::policy::{Approver, PermissionMode, Policy};
use crate::process::{BackgroundRegistry, Confinement};
use crate::registry::{InputRoles, LoadedTool, PathAccess, Registry, Role};
use crate::sandbox::Sandbox;
use crate::session::Session;
use serde_json::Value;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use toolhost_primitives::path::{Containment, containment, is_inside};

/// A `tool_use` block from the model.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolUse {
    /// The id of the model's `tool_use` block, echoed in the result.
    pub id: String,
    /// The tool's name (or one of its aliases).
    pub name: String,
    /// The tool's input, as the model wrote it.
    pub input: Value,
}

/// The longest a tool may take to say whether a call is concurrency-safe.
pub const CLASSIFY_TIMEOUT: Duration = Duration::from_secs(1);

/// Per-call options.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Receives progress while the call runs.
    pub progress: Option<ProgressSink>,
    /// Set to stop the call; it ends with a "cancelled" error result.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Told, as soon as the tool's instance exists, whether the call is
    /// concurrency-safe (the scheduler starts a call before it knows, when
    /// nothing else runs).
    pub on_concurrency_safe: Option<Arc<dyn Fn(bool) + Send + Sync>>,
    /// Who answers this call's asks, instead of the host's approver (an MCP
    /// session asks its own client).
    pub approver: Option<Arc<dyn Approver>>,
    /// The W3C `traceparent` of the request that made the call (an MCP
    /// client's `_meta`), recorded in the call's span.
    pub traceparent: Option<String>,
    /// Who asked for the call (an HTTP client's credential name), recorded
    /// in the call's span and its audit lines.
    pub identity: Option<Arc<str>>,
    /// The call that made this one (a Script call's id), recorded in the
    /// call's span and its audit lines.
    pub parent: Option<Arc<str>>,
    /// The span the call's span belongs under when it is not the one current
    /// where the call runs (an MCP request's span, on the request's thread).
    pub span: Option<tracing::Span>,
}

/// What a [`Pipeline`] is built from.
pub(crate) struct Parts {
    pub sandbox: Sandbox,
    pub registry: Registry,
    pub policy: Policy,
    pub dirs: Dirs,
    pub background: Arc<BackgroundRegistry>,
    /// A session for calls that belong to none (loading, scheduling).
    pub scratch_session: Arc<Session>,
    pub mode: PermissionMode,
    pub approver: Option<Arc<dyn Approver>>,
    pub confinement: Confinement,
    /// Third-party tools offered in full before the rest are deferred.
    pub defer_after: usize,
    /// Tools whose instances take this long to make get spares.
    pub spares_above: Option<std::time::Duration>,
    /// What each identity may spend.
    pub quotas: crate::quotas::Quotas,
    /// Each call's arguments and result recorded in its span.
    pub trace_content: bool,
}

/// Everything one call needs, built once per host.
pub(crate) struct Pipeline {
    pub(super) sandbox: Sandbox,
    /// The tools as they are now; a reload swaps it whole, and a call keeps
    /// the one it started with.
    pub(super) registry: RwLock<Arc<Registry>>,
    pub(super) policy: Policy,
    pub(super) dirs: Arc<Dirs>,
    /// The working directory and directories as a call's context shows them.
    pub(super) cwd_text: String,
    pub(super) working_text: Vec<String>,
    pub(super) background: Arc<BackgroundRegistry>,
    pub(super) scratch_session: Arc<Session>,
    pub(super) mode: PermissionMode,
    pub(super) approver: Option<Arc<dyn Approver>>,
    pub(super) confinement: Confinement,
    /// What the user granted tools while the host runs ("allow always" at a
    /// capability fault), in place of their grants from loading.
    pub(super) granted: RwLock<HashMap<String, Arc<Grants>>>,
    pub(super) defer_after: usize,
    /// Instances kept for the next call of tools that declare
    /// `reuse-instance`.
    pub(super) warm: Warm,
    /// Fresh instances made ahead for tools slow to instantiate.
    pub(super) spares: Spares,
    pub(super) metrics: crate::metrics::Metrics,
    /// What each identity may spend, counted before each call runs.
    pub(super) quotas: crate::quotas::Quotas,
    /// Each call's arguments and result recorded in its span (the
    /// operator's opt-in).
    pub(super) trace_content: bool,
    /// Makes the calls of a Script program (set by the host once it
    /// exists: they run on its scheduler).
    pub(super) scripts: std::sync::OnceLock<super::ScriptStarter>,
}

impl Pipeline {
    pub(crate) fn new(parts: Parts) -> Pipeline {
        let metrics = crate::metrics::Metrics::default();
        metrics.observe_slots(parts.sandbox.slot_reader());
        Pipeline {
            cwd_text: parts.dirs.cwd.to_string_lossy().into_owned(),
            working_text: parts.dirs.working.iter().map(|d| d.to_string_lossy().into_owned()).collect(),
            dirs: Arc::new(parts.dirs),
            sandbox: parts.sandbox,
            registry: RwLock::new(Arc::new(parts.registry)),
            policy: parts.policy,
            background: parts.background,
            scratch_session: parts.scratch_session,
            mode: parts.mode,
            approver: parts.approver,
            confinement: parts.confinement,
            granted: RwLock::new(HashMap::new()),
            defer_after: parts.defer_after,
            warm: Warm::default(),
            spares: Spares::new(parts.spares_above, metrics.busy()),
            metrics,
            quotas: parts.quotas,
            trace_content: parts.trace_content,
            scripts: std::sync::OnceLock::new(),
        }
    }

    /// Sets what makes the calls of Script programs.
    pub(crate) fn set_scripts(&self, starter: super::ScriptStarter) {
        let _ = self.scripts.set(starter);
    }

    /// The host's counters, as OpenMetrics text.
    pub(crate) fn metrics_text(&self) -> String {
        self.metrics.text(self.sandbox.slots())
    }

    pub(crate) fn metrics(&self) -> &crate::metrics::Metrics {
        &self.metrics
    }

    /// The tools of `registry` offered by name only.
    pub(crate) fn deferred<'r>(&self, registry: &'r Registry) -> &'r std::collections::BTreeSet<String> {
        registry.deferred(self.defer_after)
    }

    /// What the tool that loads deferred tools searches: each deferred
    /// tool's name, one-line description, search hint, full description and
    /// input schema; with a tool that runs programs offered, also its
    /// declaration for those programs.
    pub(super) fn deferred_catalog(&self, registry: &Registry) -> Value {
        let deferred = self.deferred(registry);
        let script = registry.playing(Role::RunsPrograms).is_some();
        let tools = registry.pool().into_iter().filter(|t| deferred.contains(&t.spec.name)).map(|t| {
            let mut entry = serde_json::json!({
                "name": t.spec.name,
                "description": t.spec.description,
                "prompt": t.spec.prompt,
                "search_hint": t.spec.search_hint,
                "input_schema": t.spec.input_schema,
            });
            if script {
                entry["declaration"] = Value::String(crate::registry::declarations::declaration(&t.spec, ""));
            }
            entry
        });
        Value::Array(tools.collect())
    }

    /// What the user granted `tool` since the host started, if anything.
    pub(super) fn granted_since_start(&self, tool: &str) -> Option<Arc<Grants>> {
        self.granted.read().unwrap_or_else(|e| e.into_inner()).get(tool).cloned()
    }

    pub(crate) fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The tools as they are now.
    pub(crate) fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Puts `registry` in place of the tools, in one step: calls that
    /// started keep the tools they started with. The rules learn what the
    /// new tools' inputs are; what the user granted a tool that `changed`
    /// (replaced or removed) is forgotten.
    pub(crate) fn swap_registry(&self, registry: Registry, changed: &[String]) {
        self.policy.set_catalog(crate::policy::catalog(&registry));
        *self.registry.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(registry);
        let mut granted = self.granted.write().unwrap_or_else(|e| e.into_inner());
        for name in changed {
            granted.remove(name);
        }
    }

    pub(crate) fn policy(&self) -> &Policy {
        &self.policy
    }

    pub(crate) fn dirs(&self) -> &Dirs {
        &self.dirs
    }

    pub(crate) fn mode(&self) -> PermissionMode {
        self.mode
    }

    pub(crate) fn background(&self) -> &BackgroundRegistry {
        &self.background
    }

    /// A scope for asking `tool` something outside any call (scheduling,
    /// benchmarks): the scratch session, the working directories.
    pub(super) fn scratch_scope(&self, tool: &LoadedTool, tool_use_id: String) -> CallScope {
        self.scope(tool, tool_use_id, &self.scratch_session, Arc::clone(&self.dirs))
    }

    /// The scope of `tool` serving `tool_use_id` in `session`, with `dirs`.
    pub(super) fn scope(
        &self,
        tool: &LoadedTool,
        tool_use_id: String,
        session: &Arc<Session>,
        dirs: Arc<Dirs>,
    ) -> CallScope {
        CallScope::new(
            Arc::from(tool.spec.name.as_str()),
            tool_use_id,
            Arc::clone(session),
            tool.namespace(),
            dirs,
            Arc::clone(&self.background),
        )
    }

    /// Runs one call through the whole pipeline.
    pub(crate) fn call(&self, session: &Arc<Session>, tool_use: &ToolUse, options: &CallOptions) -> ToolResult {
        let started = Instant::now();
        let span = super::trace::call_span(tool_use, options);
        let _entered = span.enter();
        // What other processes sharing the session saved since (a Read on
        // another server) counts for this call.
        if session.is_persistent()
            && let Err(e) = session.refresh()
        {
            tracing::warn!(error = %e, "could not bring the session's state up to date; going on with what this process has");
        }
        let cpu_before = crate::sandbox::thread_cpu_time();
        let mut next = None;
        // 2, first part: slips in the input repaired, as Claude Code does.
        let repaired = self.repair(tool_use);
        let tool_use = repaired.as_ref().map_or(tool_use, |(repaired, _)| repaired);
        let known = self.registry().resolve(&tool_use.name).map(|t| t.spec.name.clone());
        let tool_name = known.as_deref().unwrap_or(crate::metrics::UNKNOWN_TOOL);
        // Over a quota of its identity, the call is refused before anything
        // of it runs.
        let (admitted, mut result) = match self.admit(session, tool_use, tool_name, options, &span) {
            Err(refusal) => (None, ToolResult::error(&tool_use.id, refusal.to_string())),
            // A fault of the host (a panic anywhere in the call's path: an
            // import, a library, the pipeline itself) ends this call with an
            // error result, never the thread or the stream that runs it.
            Ok(admitted) => {
                // Running from here: a refused call never ran.
                let _running = self.metrics.started();
                let run = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    self.run(session, tool_use, options, &span, &mut next)
                }));
                let result = run.unwrap_or_else(|panic| {
                    next = None;
                    let why = panic_message(&*panic);
                    tracing::error!(panic = %why, "toolhost failed while running the call; the call ends with an error and later calls go on");
                    ToolResult::error(&tool_use.id, host_failed(&tool_use.name, &why))
                });
                (Some(admitted), result)
            }
        };
        if let Some((_, Some(note))) = &repaired {
            result.append_note(note);
        }
        // The next call's fresh instance, made while none runs.
        if let Some((key, make)) = next {
            self.spares.order(key, &self.registry(), make);
        }
        let took = started.elapsed();
        let micros = took.as_micros() as u64;
        self.metrics.finished(tool_name, result.is_error, took);
        let output_bytes = result.content_bytes();
        let usage = result.usage.get_or_insert_with(Default::default);
        usage.output_bytes = output_bytes;
        usage.wall_us = micros;
        usage.cpu_us = crate::sandbox::thread_cpu_time().saturating_sub(cpu_before).as_micros() as u64;
        if let Some(admitted) = admitted {
            admitted.finish(usage.cpu_us);
        }
        self.policy.audit_usage(session.id(), &tool_use.name, &tool_use.id, usage);
        self.metrics.used(tool_name, usage);
        let usage = *usage;
        super::trace::record_end(&span, tool_use, &result, &usage, self.trace_content);
        tracing::debug!(is_error = result.is_error, duration_us = micros, "call finished");
        result
    }

    /// Whether a user interrupt cancels calls of `tool` (its interrupt
    /// behavior is `cancel`); unknown tools: yes.
    pub(crate) fn cancels_on_interrupt(&self, tool: &str) -> bool {
        self.registry().resolve(tool).is_none_or(|t| t.spec.cancel_on_interrupt)
    }

    /// `tool_use` with the slips in its input repaired ([`super::repair`]),
    /// and the note for the model that goes with the repair, if any; `None`
    /// when nothing changes (an unknown tool included).
    pub(super) fn repair(&self, tool_use: &ToolUse) -> Option<(ToolUse, Option<String>)> {
        let registry = self.registry();
        let tool = registry.resolve(&tool_use.name)?;
        let repaired =
            super::repair::repair(&tool.spec.name, tool.repairs(), tool.input_schema(), tool_use, &self.cwd_text)?;
        Some((ToolUse { id: tool_use.id.clone(), name: tool_use.name.clone(), input: repaired.input }, repaired.note))
    }

    /// Forgets the warm instances kept for `session` (it ended).
    pub(crate) fn end_session(&self, session: &Session) {
        self.warm.forget(session);
    }

    /// The directories of a call: the working ones, and this session's
    /// persisted results (once there are any) to read.
    pub(super) fn call_dirs(&self, results: Option<std::path::PathBuf>) -> Arc<Dirs> {
        match results {
            None => Arc::clone(&self.dirs),
            Some(r) => Arc::new(Dirs { read_only: vec![r], ..(*self.dirs).clone() }),
        }
    }

    /// Instantiates `tool` in a fresh Store with no capabilities, calls its
    /// cheapest export (`is-enabled`) and drops everything: the floor of a
    /// call's cost.
    pub(crate) fn bare_call(&self, tool: &str) -> Option<bool> {
        let registry = self.registry();
        let tool = registry.resolve(tool)?;
        let scope = self.scratch_scope(tool, String::new());
        let _running = self.sandbox.running();
        let pre = tool.pre(&self.sandbox).ok()?;
        let mut instance = self.sandbox.instantiate(pre, &Grants::default(), scope, self.sandbox.limits()).ok()?;
        instance.guest.is_enabled(&mut instance.store).ok()
    }

    /// Steps 1 and 2 (find the tool, check its input), its instance, then
    /// the rest of the steps on it ([`Run::steps`]).
    pub(super) fn run(
        &self,
        session: &Arc<Session>,
        tool_use: &ToolUse,
        options: &CallOptions,
        span: &tracing::Span,
        next: &mut Next,
    ) -> ToolResult {
        let id = tool_use.id.as_str();
        // The tools and the rules as they are when the call starts: it
        // finishes on them whatever a reload does meanwhile.
        let registry = self.registry();
        let rules = self.policy.rules();
        let results = session.existing_results_dir();
        let checked = self
            .look_up(&registry, &rules, session, &tool_use.name, span)
            .and_then(|tool| self.check_input(tool, &tool_use.input, results.as_deref()).map(|()| tool));
        let tool = match checked {
            Ok(tool) => tool,
            Err(message) => return ToolResult::error(id, format!("<tool_use_error>{message}</tool_use_error>")),
        };
        if tool.remote.is_some() {
            return self.run_remote(session, tool, tool_use, options, span);
        }
        let name = tool.spec.name.as_str();
        // The tool that runs programs: a slot among those such calls may
        // hold (so the calls their programs wait on always find one), and
        // what makes those calls.
        let runs_programs = tool.role() == Some(Role::RunsPrograms);
        let _program_slot = match runs_programs.then(|| self.sandbox.admit_script()) {
            Some(None) => {
                return ToolResult::error(
                    id,
                    format!(
                        "{name} needs at least two instance slots (one for the program, one for the calls it \
                         makes); this host runs with one (--instances)."
                    ),
                );
            }
            slot => slot.flatten(),
        };
        let script = match runs_programs {
            true => match self.program_calls(session, id, options) {
                Some(calls) => Some(calls),
                None => return ToolResult::error(id, format!("{name} cannot run: the host is shutting down.")),
            },
            false => None,
        };
        let _slot = self.sandbox.admit();
        let _running = self.sandbox.running();
        // What the tool was granted (at load, or by the user since), and its
        // own limits, where it requested and was granted them.
        let since = self.granted_since_start(name);
        let limits = since.as_deref().unwrap_or(&tool.grants).limits(self.sandbox.limits());
        let dirs = self.call_dirs(results.clone());
        let setup =
            Setup { pipeline: self, registry: &registry, tool, session, id, options, dirs, since, limits, script };
        let made = setup.instance(span, next).and_then(|(i, warm)| Ok((setup.classify(i, &tool_use.input)?, warm)));
        let (instance, warm) = match made {
            Ok(made) => made,
            Err(message) => return ToolResult::error(id, message),
        };
        let ctx = CallContext {
            tool_use_id: id.to_string(),
            session_id: session.id().to_string(),
            cwd: self.cwd_text.clone(),
            working_dirs: self.working_text.clone(),
            read_only_dirs: results.iter().map(|d| d.to_string_lossy().into_owned()).collect(),
            mode: wit_mode(self.mode),
        };
        let loads_tools = tool.role() == Some(Role::LoadsTools);
        let mut run = Run {
            pipeline: self,
            session,
            tool,
            id,
            span,
            instance: Some(instance),
            progress: None,
            cancel: None,
            limits,
            ctx,
            input_text: tool_use.input.to_string(),
            input: tool_use.input.clone(),
            rules,
            called: false,
            context: Vec::new(),
            stop: None,
            approver: options.approver.clone().or_else(|| self.approver.clone()),
            identity: options.identity.clone(),
            parent: options.parent.clone(),
            catalog: loads_tools.then(|| self.deferred_catalog(&registry)),
            warm,
            faulted: false,
        };
        let outcome = run.steps();
        run.faulted = outcome.is_err();
        let instance = run.instance.as_ref().expect("a component's call has its instance");
        instance.captured.log(name, id, &instance.store.data().call.secrets);
        // An `Err` is a failure inside the guest (trap, timeout, malformed
        // output), as opposed to an error the tool returned.
        let mut result = outcome.unwrap_or_else(|e| fault_result(name, id, &e, instance));
        let peak = instance.store.data().limits.used as u64;
        result.usage = Some(super::Usage { peak_memory_bytes: peak, ..Default::default() });
        // What the tool that loads tools found is callable from now on in
        // this session.
        if loads_tools && !result.is_error {
            let matches = result.structured.as_ref().and_then(|s| s["matches"].as_array());
            let names: Vec<String> =
                matches.into_iter().flatten().filter_map(|n| n.as_str().map(String::from)).collect();
            session.discover(&names);
        }
        run.finish(result)
    }

    /// Step 1: the enabled tool `name` names (disabled tools are not in the
    /// pool, so not callable), unless the rules remove it or it is deferred
    /// and not loaded in this session; else the error result's message.
    fn look_up<'r>(
        &self,
        registry: &'r Registry,
        rules: &crate::policy::rules::RuleSet,
        session: &Session,
        name: &str,
        span: &tracing::Span,
    ) -> Result<&'r Arc<LoadedTool>, String> {
        let Some(tool) = registry.resolve(name).filter(|t| t.spec.enabled) else {
            return Err(format!("Error: No such tool available: {name}"));
        };
        let name = tool.spec.name.as_str();
        if let Some(rule) = rules.denies_tool(name) {
            super::trace::record_decision(span, Verdict::Deny, "not in the pool");
            return Err(format!("Error: No such tool available: {name} (the {rule} removes it)"));
        }
        // A deferred tool is called once its definition was loaded (without
        // it, the model guessed its parameters).
        if self.deferred(registry).contains(name) && !session.is_discovered(name) {
            super::trace::record_decision(span, Verdict::Deny, "deferred, not loaded");
            let how = match registry.playing(Role::LoadsTools) {
                Some(loader) => format!("call {} with query \"select:{name}\"", loader.spec.name),
                None => "load it with the tool that loads deferred tools".to_string(),
            };
            return Err(format!(
                "{name} is a deferred tool: its definition has not been loaded in this conversation, so its \
                 parameters are not known to you. Load it first: {how}, then call {name} again."
            ));
        }
        Ok(tool)
    }

    /// Step 2: `input` against the tool's schema, and the paths it declares
    /// inside the directories it may use, as written and as resolved.
    fn check_input(&self, tool: &LoadedTool, input: &Value, results: Option<&Path>) -> Result<(), String> {
        tool.input_schema().check(&tool.spec.name, input).map_err(|e| e.to_string())?;
        self.confine(&tool.spec.inputs, input, results)
    }

    /// What makes the calls of the program the call `id` runs, in `session`
    /// (none once the host is shutting down).
    fn program_calls(&self, session: &Arc<Session>, id: &str, options: &CallOptions) -> Option<ScriptCalls> {
        let start = super::ScriptStart {
            session: Arc::clone(session),
            parent: id.to_string(),
            progress: options.progress.clone(),
            approver: options.approver.clone().or_else(|| self.approver.clone()),
            identity: options.identity.clone(),
        };
        self.scripts.get().and_then(|starter| starter(start))
    }

    /// Refuses a path the call names outside the directories the tool may
    /// use for it: the working directories, and for reading also the
    /// read-only ones (`results`); checked as written and as resolved.
    pub(super) fn confine(&self, roles: &InputRoles, input: &Value, results: Option<&Path>) -> Result<(), String> {
        let working = &self.dirs.working;
        for (written, access) in roles.paths_in(input) {
            let path = normalize(&self.dirs.cwd.join(written));
            let allowed = |p: &Path| is_inside(p, working) || (access != PathAccess::Edit && is_inside(p, results));
            let dirs = self.working_text.join(", ");
            let real = match containment(&path, allowed) {
                Containment::Inside => continue,
                Containment::ResolvesOutside(real) => real,
                Containment::Outside => {
                    return Err(format!(
                        "{} is outside the working directories ({dirs}). File tools can only reach files inside them; \
                     use a path inside, or ask the user to run toolhost with that directory as the workspace \
                     or an additional directory.",
                        path.display()
                    ));
                }
            };
            return Err(format!(
                "{} resolves outside the working directories ({dirs}) through a symlink, to {}. File tools can \
                 only reach files inside them.",
                path.display(),
                real.display()
            ));
        }
        Ok(())
    }
}

/// What a panic says, from its payload (`panic!` with a message or a
/// formatted one; anything else is named so).
pub(super) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_owned(),
        (None, Some(s)) => s.clone(),
        (None, None) => "a panic without a message".to_owned(),
    }
}

/// The error result of a call that a fault of the host ended.
fn host_failed(tool: &str, why: &str) -> String {
    format!(
        "<tool_use_error>toolhost itself failed while running this {tool} call ({why}). This is a fault of the \
         host, not of the input: the call was stopped, nothing more of it ran, and later calls are answered as \
         usual. Calling again may meet the same fault.</tool_use_error>"
    )
}
