//! One call through the pipeline's steps, on the parts of a host.

use super::result::{self, Content, ToolResult};
use super::warm::{self, Warm};
use crate::contract::bindings::toolhost::tool::types::{ToolError as WitToolError, ToolOutput};
use crate::contract::bindings::{CallContext, PermissionDecision, PermissionMode as WitMode};
use crate::fsx::{Dirs, normalize, resolve};
use crate::grants::{Allowance, DirRequest, Grants};
use crate::imports::{CallScope, ProgressSink};
use crate::policy::hooks::{EventInput, HookDecision, HookEvent, Outcome};
use crate::policy::rules::{RuleSet, Subject};
use crate::policy::{
    self, Answer, Approver, AskRequest, AuditRecord, Decision, Facts, PermissionMode, Policy, Source, ToolCheck,
};
use crate::process::{Approval, BackgroundRegistry, Confinement};
use crate::registry::{InputRoles, LoadedTool, Origin, PathAccess, Registry, TOOL_SEARCH};
use crate::sandbox::{CallLimits, GuestFault, Instance, Sandbox};
use crate::session::Session;
use crate::shell;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tracing::field;

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
}

/// Everything one call needs, built once per host.
pub(crate) struct Pipeline {
    sandbox: Sandbox,
    /// The tools as they are now; a reload swaps it whole, and a call keeps
    /// the one it started with.
    registry: RwLock<Arc<Registry>>,
    policy: Policy,
    dirs: Arc<Dirs>,
    /// The working directory and directories as a call's context shows them.
    cwd_text: String,
    working_text: Vec<String>,
    background: Arc<BackgroundRegistry>,
    scratch_session: Arc<Session>,
    mode: PermissionMode,
    approver: Option<Arc<dyn Approver>>,
    confinement: Confinement,
    /// What the user granted tools while the host runs ("allow always" at a
    /// capability fault), in place of their grants from loading.
    granted: RwLock<HashMap<String, Arc<Grants>>>,
    defer_after: usize,
    /// Instances kept for the next call of tools that declare
    /// `reuse-instance`.
    warm: Warm,
}

impl Pipeline {
    pub(crate) fn new(parts: Parts) -> Pipeline {
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
        }
    }

    /// The tools of `registry` offered by name only.
    pub(crate) fn deferred<'r>(&self, registry: &'r Registry) -> &'r std::collections::BTreeSet<String> {
        registry.deferred(self.defer_after)
    }

    /// What ToolSearch searches: each deferred tool's name, one-line
    /// description, search hint, full description and input schema.
    fn deferred_catalog(&self, registry: &Registry) -> Value {
        let deferred = self.deferred(registry);
        let tools = registry.pool().into_iter().filter(|t| deferred.contains(&t.spec.name)).map(|t| {
            serde_json::json!({
                "name": t.spec.name,
                "description": t.spec.description,
                "prompt": t.spec.prompt,
                "search_hint": t.spec.search_hint,
                "input_schema": t.spec.input_schema,
            })
        });
        Value::Array(tools.collect())
    }

    /// What the user granted `tool` since the host started, if anything.
    fn granted_since_start(&self, tool: &str) -> Option<Arc<Grants>> {
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
    fn scratch_scope(&self, tool: &LoadedTool, tool_use_id: String) -> CallScope {
        self.scope(tool, tool_use_id, &self.scratch_session, Arc::clone(&self.dirs))
    }

    /// The scope of `tool` serving `tool_use_id` in `session`, with `dirs`.
    fn scope(&self, tool: &LoadedTool, tool_use_id: String, session: &Arc<Session>, dirs: Arc<Dirs>) -> CallScope {
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
        let span = tracing::info_span!(
            "tool_call",
            tool = %tool_use.name,
            id = %tool_use.id,
            decision = field::Empty,
            instance = field::Empty,
            is_error = field::Empty,
            duration_us = field::Empty,
        );
        let _entered = span.enter();
        let cpu_before = crate::sandbox::thread_cpu_time();
        let mut result = self.run(session, tool_use, options, &span);
        let micros = started.elapsed().as_micros() as u64;
        let output_bytes = result.content_bytes();
        let usage = result.usage.get_or_insert_with(Default::default);
        usage.output_bytes = output_bytes;
        usage.wall_us = micros;
        usage.cpu_us = crate::sandbox::thread_cpu_time().saturating_sub(cpu_before).as_micros() as u64;
        self.policy.audit_usage(session.id(), &tool_use.name, &tool_use.id, usage);
        span.record("is_error", result.is_error);
        span.record("duration_us", micros);
        tracing::debug!(is_error = result.is_error, duration_us = micros, "call finished");
        result
    }

    /// Whether a user interrupt cancels calls of `tool` (its interrupt
    /// behavior is `cancel`); unknown tools: yes.
    pub(crate) fn cancels_on_interrupt(&self, tool: &str) -> bool {
        self.registry().resolve(tool).is_none_or(|t| t.spec.cancel_on_interrupt)
    }

    /// Whether a call may run beside other concurrency-safe calls. A tool
    /// that is unknown, input that fails the schema and a tool that cannot
    /// answer within [`CLASSIFY_TIMEOUT`] are not concurrency-safe.
    pub(crate) fn is_concurrency_safe(&self, tool_use: &ToolUse) -> bool {
        self.classify(None, tool_use)
    }

    /// [`Pipeline::is_concurrency_safe`] for a call of `session`: a tool that
    /// declares `reuse-instance` answers in the session's warm instance.
    pub(crate) fn is_concurrency_safe_in(&self, session: &Arc<Session>, tool_use: &ToolUse) -> bool {
        self.classify(Some(session), tool_use)
    }

    fn classify(&self, session: Option<&Arc<Session>>, tool_use: &ToolUse) -> bool {
        let registry = self.registry();
        let Some(tool) = registry.resolve(&tool_use.name).filter(|t| t.spec.enabled) else {
            return false;
        };
        if tool.input_schema().check(&tool.spec.name, &tool_use.input).is_err() {
            return false;
        }
        if let Some(declared) = tool.spec.hints.concurrency_safe {
            return declared;
        }
        let _running = self.sandbox.running();
        let since = self.granted_since_start(&tool.spec.name);
        let grants = since.as_deref().unwrap_or(&tool.grants);
        let base = grants.limits(self.sandbox.limits());
        let limits = CallLimits { timeout: base.timeout.min(CLASSIFY_TIMEOUT), ..base };
        let text = tool_use.input.to_string();
        let Some(session) = session.filter(|_| tool.spec.reuse_instance) else {
            let scope = self.scratch_scope(tool, tool_use.id.clone());
            return tool
                .pre(&self.sandbox)
                .and_then(|pre| self.sandbox.instantiate(pre, grants, scope, limits))
                .and_then(|mut i| i.guest.is_concurrency_safe(&mut i.store, &text))
                .unwrap_or(false);
        };
        let dirs = self.call_dirs(session.existing_results_dir());
        let key = warm::Key::new(session, &registry, &tool.spec.name, since.as_ref(), &dirs);
        let scope = self.scope(tool, tool_use.id.clone(), session, dirs);
        let instance = match self.warm.take(&key, &registry) {
            Some(mut kept) => {
                kept.renew(grants, scope, limits);
                Ok(kept)
            }
            None => tool.pre(&self.sandbox).and_then(|pre| self.sandbox.instantiate(pre, grants, scope, limits)),
        };
        let Ok(mut instance) = instance else { return false };
        match instance.guest.is_concurrency_safe(&mut instance.store, &text) {
            Ok(safe) => {
                self.warm.put(key, instance, &registry);
                safe
            }
            Err(_) => false,
        }
    }

    /// Forgets the warm instances kept for `session` (it ended).
    pub(crate) fn end_session(&self, session: &Session) {
        self.warm.forget(session);
    }

    /// The directories of a call: the working ones, and this session's
    /// persisted results (once there are any) to read.
    fn call_dirs(&self, results: Option<std::path::PathBuf>) -> Arc<Dirs> {
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

    fn run(
        &self,
        session: &Arc<Session>,
        tool_use: &ToolUse,
        options: &CallOptions,
        span: &tracing::Span,
    ) -> ToolResult {
        let id = tool_use.id.as_str();
        // 1. Lookup (disabled tools are not in the pool, so not callable),
        // in the tools as they are when the call starts: it finishes on
        // that version whatever a reload does meanwhile.
        let registry = self.registry();
        let Some(tool) = registry.resolve(&tool_use.name).filter(|t| t.spec.enabled) else {
            return ToolResult::error(
                id,
                format!("<tool_use_error>Error: No such tool available: {}</tool_use_error>", tool_use.name),
            );
        };
        let name = tool.spec.name.as_str();
        // The rules as they are now, for the whole call.
        let rules = self.policy.rules();
        if let Some(rule) = rules.denies_tool(name) {
            span.record("decision", "deny (not in the pool)");
            return ToolResult::error(
                id,
                format!(
                    "<tool_use_error>Error: No such tool available: {name} (the {rule} removes it)</tool_use_error>"
                ),
            );
        }
        // A deferred tool is called once ToolSearch loaded its definition
        // (without it, the model guessed its parameters).
        if self.deferred(&registry).contains(name) && !session.is_discovered(name) {
            span.record("decision", "deny (deferred, not loaded)");
            return ToolResult::error(
                id,
                format!(
                    "<tool_use_error>{name} is a deferred tool: its definition has not been loaded in this \
                     conversation, so its parameters are not known to you. Load it first: call {TOOL_SEARCH} with \
                     query \"select:{name}\", then call {name} again.</tool_use_error>"
                ),
            );
        }
        // 2. Schema, and the paths the tool declares: inside the directories
        // it may use, as written and as resolved.
        if let Err(message) = tool.input_schema().check(name, &tool_use.input) {
            return ToolResult::error(id, format!("<tool_use_error>{message}</tool_use_error>"));
        }
        let results = session.existing_results_dir();
        if let Err(message) = self.confine(&tool.spec.inputs, &tool_use.input, results.as_deref()) {
            return ToolResult::error(id, format!("<tool_use_error>{message}</tool_use_error>"));
        }

        let _slot = self.sandbox.admit();
        let _running = self.sandbox.running();
        let dirs = self.call_dirs(results.clone());
        // What the tool was granted (at load, or by the user since), and its
        // own limits, where it requested and was granted them.
        let since = self.granted_since_start(name);
        let grants = since.as_deref().unwrap_or(&tool.grants);
        let limits = grants.limits(self.sandbox.limits());
        let scope = || {
            let mut scope = self.scope(tool, id.to_string(), session, Arc::clone(&dirs));
            scope.progress = options.progress.clone();
            scope.cancel = options.cancel.clone();
            scope.confinement = self.confinement;
            scope
        };
        let instantiate = || {
            tool.pre(&self.sandbox).and_then(|pre| self.sandbox.instantiate(pre, grants, scope(), limits)).map_err(
                |e| {
                    tracing::error!(error = %format!("{e:#}"), "could not instantiate");
                    format!("toolhost could not start {name}: {e}. The host keeps serving; try again.")
                },
            )
        };
        // A tool that declares `reuse-instance`: the session's warm instance,
        // if one was kept for these grants and directories.
        let warm = tool.spec.reuse_instance.then(|| warm::Key::new(session, &registry, name, since.as_ref(), &dirs));
        let kept = warm.as_ref().and_then(|key| self.warm.take(key, &registry));
        span.record("instance", if kept.is_some() { "warm" } else { "fresh" });
        let mut instance = match kept {
            Some(mut kept) => {
                kept.renew(grants, scope(), limits);
                kept
            }
            None => match instantiate() {
                Ok(i) => i,
                Err(message) => return ToolResult::error(id, message),
            },
        };
        if let (Some(report), Some(declared)) = (&options.on_concurrency_safe, tool.spec.hints.concurrency_safe) {
            report(declared);
        } else if let Some(report) = &options.on_concurrency_safe {
            // Asked within the same limit as in a separate instance; a tool
            // stopped there has a broken instance, and the call gets a
            // fresh one.
            let call = &mut instance.store.data_mut().call;
            call.deadline = Some((Instant::now() + CLASSIFY_TIMEOUT.min(limits.timeout), CLASSIFY_TIMEOUT));
            let text = tool_use.input.to_string();
            let answer = instance.guest.is_concurrency_safe(&mut instance.store, &text);
            report(answer.as_ref().is_ok_and(|safe| *safe));
            match answer {
                Ok(_) => {
                    instance.store.data_mut().call.deadline = Some((Instant::now() + limits.timeout, limits.timeout))
                }
                Err(_) => {
                    instance = match instantiate() {
                        Ok(i) => i,
                        Err(message) => return ToolResult::error(id, message),
                    }
                }
            }
        }
        let ctx = CallContext {
            tool_use_id: id.to_string(),
            session_id: session.id().to_string(),
            cwd: self.cwd_text.clone(),
            working_dirs: self.working_text.clone(),
            read_only_dirs: results.iter().map(|d| d.to_string_lossy().into_owned()).collect(),
            mode: wit_mode(self.mode),
        };
        let mut run = Run {
            pipeline: self,
            session,
            tool,
            id,
            span,
            instance,
            limits,
            ctx,
            input_text: tool_use.input.to_string(),
            input: tool_use.input.clone(),
            rules,
            called: false,
            context: Vec::new(),
            stop: None,
            approver: options.approver.clone().or_else(|| self.approver.clone()),
            catalog: (tool.origin == Origin::Builtin && name == TOOL_SEARCH).then(|| self.deferred_catalog(&registry)),
            warm,
            faulted: false,
        };
        let outcome = run.steps();
        run.faulted = outcome.is_err();
        run.instance.captured.log(name, id);
        // An `Err` is a failure inside the guest (trap, timeout, malformed
        // output), as opposed to an error the tool returned.
        let mut result = outcome.unwrap_or_else(|e| fault_result(name, id, &e, &run.instance));
        let peak = run.instance.store.data().limits.used as u64;
        result.usage = Some(super::Usage { peak_memory_bytes: peak, ..Default::default() });
        // What ToolSearch loaded is callable from now on in this session.
        if run.catalog.is_some() && !result.is_error {
            let matches = result.structured.as_ref().and_then(|s| s["matches"].as_array());
            let names: Vec<String> =
                matches.into_iter().flatten().filter_map(|n| n.as_str().map(String::from)).collect();
            session.discover(&names);
        }
        run.finish(result)
    }

    /// Refuses a path the call names outside the directories the tool may
    /// use for it: the working directories, and for reading also the
    /// read-only ones (`results`); checked as written and as resolved.
    fn confine(&self, roles: &InputRoles, input: &Value, results: Option<&Path>) -> Result<(), String> {
        let working = &self.dirs.working;
        for (written, access) in roles.paths_in(input) {
            let path = normalize(&self.dirs.cwd.join(written));
            let allowed = |p: &Path| {
                working.iter().any(|w| p.starts_with(w))
                    || (access != PathAccess::Edit && results.is_some_and(|r| p.starts_with(r)))
            };
            let dirs = self.working_text.join(", ");
            if !allowed(&path) {
                return Err(format!(
                    "{} is outside the working directories ({dirs}). File tools can only reach files inside them; \
                     use a path inside, or ask the user to run toolhost with that directory as the workspace \
                     or an additional directory.",
                    path.display()
                ));
            }
            if let Some(real) = resolve(&path).filter(|r| *r != path && !allowed(r)) {
                return Err(format!(
                    "{} resolves outside the working directories ({dirs}) through a symlink, to {}. File tools \
                     can only reach files inside them.",
                    path.display(),
                    real.display()
                ));
            }
        }
        Ok(())
    }
}

/// One call's state while it goes through the steps.
struct Run<'p> {
    pipeline: &'p Pipeline,
    session: &'p Arc<Session>,
    tool: &'p LoadedTool,
    id: &'p str,
    span: &'p tracing::Span,
    instance: Instance,
    /// The tool's limits for this call.
    limits: CallLimits,
    ctx: CallContext,
    /// The input as the tool gets it (after a hook's or the tool's rewrite),
    /// and as JSON text.
    input: Value,
    input_text: String,
    /// The rules the call is decided by.
    rules: Arc<RuleSet>,
    /// The tool's `call` ran (so the Post hooks run).
    called: bool,
    /// Hooks' additional context, appended to the result.
    context: Vec<String>,
    /// A hook's `continue: false`.
    stop: Option<String>,
    /// Who answers an ask: the call's own approver, else the host's.
    approver: Option<Arc<dyn Approver>>,
    /// For ToolSearch: the deferred tools, added to its input at `call`.
    catalog: Option<Value>,
    /// What the instance is kept for afterwards, for a tool that declares
    /// `reuse-instance` (none once the call changed its grants).
    warm: Option<warm::Key>,
    /// The guest failed (trapped, timed out, was cancelled, ...): its
    /// instance is not kept.
    faulted: bool,
}

impl Run<'_> {
    fn name(&self) -> &str {
        &self.tool.spec.name
    }

    fn error(&self, message: impl Into<String>) -> ToolResult {
        ToolResult::error(self.id, message)
    }

    /// Steps 3 to 6 and 8 on the live instance.
    fn steps(&mut self) -> wasmtime::Result<ToolResult> {
        // 3. The tool's own validation.
        if let Err(e) = self.validate(&self.input_text.clone())? {
            return Ok(self.error(format!("<tool_use_error>{}</tool_use_error>", e.message)));
        }
        // 4. PreToolUse hooks.
        let decision_started = Instant::now();
        let pre = self.pre_hooks();
        if let Some(pre) = &pre
            && let Some(result) = self.take_pre_hooks(pre, decision_started)?
        {
            return Ok(result);
        }
        // 5. Permission.
        if let Some(refused) = self.permission(pre.as_ref(), decision_started)? {
            return Ok(refused);
        }
        // 6. Call.
        self.called = true;
        let output = self.call_guest()?;
        // 8. Result.
        Ok(match output {
            Ok(output) => self.output(output),
            Err(e) => match self.grant_and_retry(&e.message)? {
                Some(retried) => retried,
                None if self.missing().is_empty() => self.error(e.message),
                // The tool failed, and it lacks something it asked for: name
                // the exact grants, for the model to pass on.
                None => self.error(format!(
                    "{}\n\n{} requested what it was not granted: {}. If the call needs it, the operator can grant \
                     it under toolGrants.{} in a settings file.",
                    e.message,
                    self.name(),
                    self.missing().join("; "),
                    self.name()
                )),
            },
        })
    }

    /// What the tool requested and lacks (nothing once the user granted it
    /// while the host runs).
    fn missing(&self) -> &[String] {
        match self.pipeline.granted_since_start(self.name()) {
            Some(_) => &[],
            None => &self.tool.missing,
        }
    }

    /// A capability fault becomes a question: the tool failed and lacks
    /// directories, hosts or variables it requested, so the user is asked to
    /// grant them (once, or always: written under `toolGrants` in the local
    /// settings) and the call runs again, in a fresh instance with the
    /// grant. `None` when there is nobody to ask, nothing to grant, or the
    /// user said no.
    fn grant_and_retry(&mut self, failure: &str) -> wasmtime::Result<Option<ToolResult>> {
        let Some(approver) = self.approver.clone() else { return Ok(None) };
        // dontAsk and plan never ask; neither mode grants anything either.
        let asks = !matches!(self.pipeline.mode, PermissionMode::DontAsk | PermissionMode::Plan);
        if !asks || self.pipeline.granted_since_start(self.name()).is_some() {
            return Ok(None);
        }
        let name = self.tool.spec.name.clone();
        let current = &self.tool.grants;
        let (wanted, _) = crate::grants::intersect(&self.tool.requests, &self.tool.requests, &self.pipeline.dirs.cwd);
        let more = Allowance {
            workspace: wanted.files.workspace().filter(|_| wanted.files != current.files),
            process: wanted.process && !current.process,
            directories: (wanted.dirs.iter().filter(|d| !current.dirs.contains(d)))
                .map(|(path, access)| DirRequest { path: path.display().to_string(), access: *access })
                .collect(),
            hosts: wanted.hosts.iter().filter(|h| !current.hosts.contains(h)).cloned().collect(),
            env: wanted.env.iter().filter(|v| !current.env.contains(v)).cloned().collect(),
            ..Allowance::default()
        };
        if more.is_empty() {
            return Ok(None);
        }
        let failed = failure.lines().next().unwrap_or_default();
        let what = more.describe();
        let request = AskRequest {
            tool: name.clone(),
            tool_use_id: self.id.to_string(),
            input: self.input.clone(),
            message: format!(
                "It failed ({failed}), and it requested what it was not granted: {what}. Grant it and run the call \
                 again?"
            ),
            suggested_rules: vec![format!("toolGrants.{name}: {}", serde_json::to_string(&more).unwrap_or_default())],
        };
        let grants = Grants {
            files: wanted.files,
            process: wanted.process,
            dirs: wanted.dirs,
            hosts: wanted.hosts,
            env: wanted.env,
            ..current.clone()
        };
        match approver.ask(&request) {
            Answer::Deny(_) => return Ok(None),
            Answer::AllowOnce => tracing::info!(tool = %name, grant = %what, "granted once by the user"),
            Answer::AllowAlways(_) => {
                tracing::info!(tool = %name, grant = %what, "granted always by the user");
                if let Err(e) = self.pipeline.policy.grant_always(&name, &more) {
                    tracing::warn!(tool = %name, error = %e, "could not keep the grant");
                }
                let mut granted = self.pipeline.granted.write().unwrap_or_else(|e| e.into_inner());
                granted.insert(name.clone(), Arc::new(grants.clone()));
            }
        }
        // Again, from the start of the call, in a fresh instance.
        self.instance.captured.log(&name, self.id);
        let scope = self.instance.store.data().call.again();
        let limits = grants.limits(self.pipeline.sandbox.limits());
        let pre = self.tool.pre(&self.pipeline.sandbox)?;
        self.instance = self.pipeline.sandbox.instantiate(pre, &grants, scope, limits)?;
        self.limits = limits;
        // Made for other grants than the ones the call started with.
        self.warm = None;
        let output = self.call_guest()?;
        Ok(Some(match output {
            Ok(output) => self.output(output),
            Err(e) => self.error(e.message),
        }))
    }

    /// The guest's `call`, with the whole time limit from now: hooks and the
    /// prompt do not count against it.
    fn call_guest(&mut self) -> wasmtime::Result<Result<ToolOutput, WitToolError>> {
        let limit = self.limits.timeout;
        self.instance.store.data_mut().call.deadline = Some((Instant::now() + limit, limit));
        if let (Some(catalog), Value::Object(input)) = (&self.catalog, &self.input) {
            let mut input = input.clone();
            input.insert("deferred".into(), catalog.clone());
            let text = Value::Object(input).to_string();
            return self.instance.guest.call(&mut self.instance.store, &text, &self.ctx);
        }
        self.instance.guest.call(&mut self.instance.store, &self.input_text, &self.ctx)
    }

    /// A tool's output as its result.
    fn output(&mut self, output: ToolOutput) -> ToolResult {
        let call = &mut self.instance.store.data_mut().call;
        let streamed = result::Streamed { text: std::mem::take(&mut call.streamed), cut: call.streamed_cut };
        result::from_output(self.name(), self.id, streamed, output, self.tool.output_schema())
    }

    fn validate(&mut self, input: &str) -> wasmtime::Result<Result<(), WitToolError>> {
        if !self.tool.spec.validates_input {
            return Ok(Ok(()));
        }
        self.instance.guest.validate_input(&mut self.instance.store, input, &self.ctx)
    }

    fn hook_input<'a>(&'a self, tool_input: &'a Value) -> EventInput<'a> {
        EventInput {
            session_id: self.session.id(),
            cwd: &self.pipeline.cwd_text,
            permission_mode: self.pipeline.mode.as_str(),
            tool_name: self.name(),
            tool_input,
            tool_use_id: self.id,
            tool_response: None,
            error: None,
        }
    }

    /// Runs the PreToolUse hooks that match, if any.
    fn pre_hooks(&self) -> Option<Outcome> {
        let hooks = &self.pipeline.policy.hooks;
        hooks
            .any(HookEvent::PreToolUse, self.name())
            .then(|| hooks.run(HookEvent::PreToolUse, &self.hook_input(&self.input)))
    }

    /// Applies what the PreToolUse hooks said: their context, a stop, a
    /// rewritten input (validated again). A result ends the call.
    fn take_pre_hooks(&mut self, pre: &Outcome, decision_started: Instant) -> wasmtime::Result<Option<ToolResult>> {
        self.context.extend(pre.additional_context.iter().map(|c| format!("[PreToolUse hook] {c}")));
        if let Some(reason) = &pre.stop {
            self.stop = Some(reason.clone());
            self.span.record("decision", "stopped (hook)");
            // A refusal that cannot be recorded is still a refusal (and
            // the failure is in the log).
            let _ = self.audit(
                &Decision::Deny {
                    message: format!("stopped: {reason}"),
                    source: Source::Hook("PreToolUse (continue: false)".into()),
                },
                false,
                decision_started,
            );
            return Ok(Some(self.error(format!("A PreToolUse hook stopped the call: {reason}"))));
        }
        let denied = matches!(pre.decision, Some(HookDecision::Deny { .. }));
        if let (Some(updated), false) = (&pre.updated_input, denied) {
            if let Err(message) = self.tool.input_schema().check(self.name(), updated) {
                return Ok(Some(self.error(format!(
                    "<tool_use_error>A PreToolUse hook rewrote the input into one that is not valid: {message}</tool_use_error>"
                ))));
            }
            let text = updated.to_string();
            if let Err(e) = self.validate(&text)? {
                return Ok(Some(self.error(format!(
                    "<tool_use_error>A PreToolUse hook rewrote the input into one the tool refuses: {}</tool_use_error>",
                    e.message
                ))));
            }
            self.input = updated.clone();
            self.input_text = text;
        }
        Ok(None)
    }

    /// The tool's own permission view, in `mode`.
    fn check_in(&mut self, mode: PermissionMode) -> wasmtime::Result<ToolCheck> {
        let (guest, store) = (&self.instance.guest, &mut self.instance.store);
        let decision = if !self.tool.spec.checks_permissions {
            PermissionDecision::Passthrough
        } else if mode == self.pipeline.mode {
            guest.check_permissions(store, &self.input_text, &self.ctx)?
        } else {
            let ctx = CallContext { mode: wit_mode(mode), ..self.ctx.clone() };
            guest.check_permissions(store, &self.input_text, &ctx)?
        };
        Ok(tool_check(decision, self.tool.trusted()))
    }

    /// Step 5: decides (asking when needed), audits, and sets what the call
    /// may start; a result when the call is refused.
    fn permission(&mut self, pre: Option<&Outcome>, decision_started: Instant) -> wasmtime::Result<Option<ToolResult>> {
        let read_only = match self.tool.spec.hints.read_only {
            Some(declared) => declared,
            None => self.instance.guest.is_read_only(&mut self.instance.store, &self.input_text)?,
        };
        let check = self.check_in(self.pipeline.mode)?;
        let tool: &LoadedTool = self.tool;
        let rules = Arc::clone(&self.rules);
        let input = self.input.clone();
        let roles = &tool.spec.inputs;
        let command = roles.command_in(&input);
        let parsed = command.map(shell::parse);
        let subject = Subject::of(&tool.spec.name, roles, &input, parsed.as_ref());
        // A command that reads outside the working directories is not one the
        // mode runs unasked.
        let outside = parsed.as_ref().and_then(|p| rules.path_outside(p));
        if let Some(word) = outside {
            tracing::debug!(word, "the command names a path outside the working directories");
        }
        let facts = Facts {
            tool: &tool.spec.name,
            mode: self.pipeline.mode,
            read_only: read_only && outside.is_none(),
            check,
            rules: rules.check(&subject),
            hook: pre.and_then(|p| p.decision.as_ref()),
            sensitive: policy::sensitive_write(&subject, rules.places()),
        };
        let mut decision = policy::decide(&facts);
        let mut asked = false;
        if let Decision::Ask { message, suggested_rules, .. } = &decision {
            let suggestions = match policy::rules::suggest(&subject, rules.places()) {
                s if s.is_empty() => suggested_rules.clone(),
                s => s,
            };
            decision = match self.approver.clone() {
                Some(approver) => {
                    asked = true;
                    // "Allow always" only with a rule that would allow the call.
                    let offered =
                        if self.rules_would_allow(&facts, &subject, &suggestions) { suggestions } else { Vec::new() };
                    let request = AskRequest {
                        tool: tool.spec.name.clone(),
                        tool_use_id: self.id.to_string(),
                        input: input.clone(),
                        message: message.clone(),
                        suggested_rules: offered,
                    };
                    match approver.ask(&request) {
                        Answer::AllowOnce => Decision::Allow { input: None, source: Source::User },
                        Answer::AllowAlways(rule) => {
                            if let Err(e) = self.pipeline.policy.allow_always(&rule) {
                                tracing::warn!(rule, error = %e, "could not keep the rule");
                            }
                            Decision::Allow { input: None, source: Source::User }
                        }
                        Answer::Deny(reason) => Decision::Deny { message: reason, source: Source::User },
                    }
                }
                None => {
                    let hint = self.how_to_allow(&facts, &subject, &suggestions)?;
                    Decision::Deny {
                        message: format!(
                            "{message} toolhost could not ask for approval: no interactive prompt is available.{hint}"
                        ),
                        source: Source::Mode(self.pipeline.mode),
                    }
                }
            };
        } else if let Decision::Deny { message, source: source @ Source::Mode(_) } = &decision {
            // Plan and dontAsk refuse what would ask: say what would allow it.
            let suggestions = policy::rules::suggest(&subject, rules.places());
            let hint = self.how_to_allow(&facts, &subject, &suggestions)?;
            decision = Decision::Deny { message: format!("{message}{hint}"), source: source.clone() };
        }
        if let Err(why) = self.audit(&decision, asked, decision_started)
            && matches!(decision, Decision::Allow { .. })
        {
            // No call runs unrecorded.
            self.span.record("decision", "deny (audit log)");
            return Ok(Some(self.error(format!(
                "{} was not run: its permission decision could not be recorded ({why}). Calls are refused until \
                 the audit log can be written.",
                self.name()
            ))));
        }
        match decision {
            Decision::Allow { input: rewritten, source } => {
                self.span.record("decision", field::display(format_args!("allow ({source})")));
                // What the call may start: a call allowed only because it reads
                // can start only what the host classifies as read-only, one
                // allowed by a rule what the rules allow, one the user approved
                // that command. Deny rules hold whatever allowed the call.
                let approval = match source {
                    Source::Mode(mode) if read_only && mode != PermissionMode::BypassPermissions => Approval::ReadOnly,
                    Source::Rule { .. } => Approval::Rules,
                    Source::User | Source::Hook(_) | Source::Safety => match command {
                        Some(command) => Approval::Command(command.to_string()),
                        None => Approval::Any,
                    },
                    Source::Mode(_) | Source::Tool => Approval::Any,
                };
                let call = &mut self.instance.store.data_mut().call;
                call.rules = Some(Policy::for_call(Arc::clone(&rules), &tool.spec.name, roles));
                call.approval = approval;
                if let Some(updated) = rewritten {
                    if let Err(message) = self.tool.input_schema().check(self.name(), &updated) {
                        return Ok(Some(self.error(format!("<tool_use_error>{message}</tool_use_error>"))));
                    }
                    self.input_text = updated.to_string();
                    self.input = updated;
                }
                Ok(None)
            }
            Decision::Deny { message, source } => {
                self.span.record("decision", field::display(format_args!("deny ({source})")));
                Ok(Some(self.error(format!("Permission to use {} was denied. {message}", self.name()))))
            }
            Decision::Ask { .. } => unreachable!("asks were resolved above"),
        }
    }

    fn audit(&self, decision: &Decision, asked: bool, started: Instant) -> Result<(), String> {
        self.pipeline.policy.audit(&AuditRecord {
            session: self.session.id(),
            tool: self.name(),
            tool_use_id: self.id,
            mode: self.pipeline.mode.as_str(),
            decision,
            asked,
            duration: started.elapsed(),
        })
    }

    /// Whether adding `suggestions` to the allow rules would allow the call
    /// in the current mode (so "allow always" and hints offer only rules
    /// that work).
    fn rules_would_allow(&self, facts: &Facts<'_>, subject: &Subject<'_>, suggestions: &[String]) -> bool {
        if suggestions.is_empty() {
            return false;
        }
        let Some(set) = self.pipeline.policy.allow_rules(suggestions) else { return false };
        let Some(allow) = set.check(subject).allow else { return false };
        let with_rule =
            Facts { rules: policy::rules::Verdicts { allow: Some(allow), ..facts.rules.clone() }, ..facts.clone() };
        matches!(policy::decide(&with_rule), Decision::Allow { .. })
    }

    /// " To allow it, …": the narrowest rule that would allow the call, or
    /// the least permissive mode that would; empty when neither would.
    fn how_to_allow(
        &mut self,
        facts: &Facts<'_>,
        subject: &Subject<'_>,
        suggestions: &[String],
    ) -> wasmtime::Result<String> {
        let mut hints = Vec::new();
        if self.rules_would_allow(facts, subject, suggestions) {
            let list = suggestions.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ");
            let args = suggestions.iter().map(|r| format!("--allow '{r}'")).collect::<Vec<_>>().join(" ");
            let file = self
                .pipeline
                .policy
                .local_file()
                .map_or_else(|| "a settings file".to_string(), |f| f.display().to_string());
            hints.push(format!("add {list} to permissions.allow in {file} (or pass {args})"));
        }
        for mode in [PermissionMode::AcceptEdits, PermissionMode::BypassPermissions] {
            if mode == facts.mode {
                continue;
            }
            let f = Facts { mode, check: self.check_in(mode)?, ..facts.clone() };
            if matches!(policy::decide(&f), Decision::Allow { .. }) {
                hints.push(format!("run toolhost with `--mode {mode}`"));
                break;
            }
        }
        Ok(if hints.is_empty() { String::new() } else { format!(" To allow it, {}.", hints.join("; or ")) })
    }

    /// Step 7 (the Post hooks, for calls that ran) and the last of step 8:
    /// hooks' context appended, an oversized result persisted.
    fn finish(self, mut result: ToolResult) -> ToolResult {
        let Run {
            pipeline, session, tool, id, mut instance, input, called, mut context, mut stop, warm, faulted, ..
        } = self;
        if called {
            instance.last_call = Some(std::time::Instant::now());
        }
        match warm {
            Some(key) if !faulted => pipeline.warm.put(key, instance, &pipeline.registry()),
            _ => drop(instance),
        }
        let name = tool.spec.name.as_str();
        let event = if result.is_error { HookEvent::PostToolUseFailure } else { HookEvent::PostToolUse };
        let hooks = &pipeline.policy.hooks;
        if called && hooks.any(event, name) {
            let response = result.to_json()["content"].take();
            let error = result.is_error.then(|| result.text());
            let outcome = hooks.run(
                event,
                &EventInput {
                    session_id: session.id(),
                    cwd: &pipeline.cwd_text,
                    permission_mode: pipeline.mode.as_str(),
                    tool_name: name,
                    tool_input: &input,
                    tool_use_id: id,
                    tool_response: (!result.is_error).then_some(&response),
                    error: error.as_deref(),
                },
            );
            context.extend(outcome.additional_context.into_iter().map(|c| format!("[{event} hook] {c}")));
            stop = stop.or(outcome.stop);
        }
        for text in context {
            result.content.push(Content::Text(text));
        }
        result.stop = stop;
        // Errors too: a failed command's output can be as long as a good one's.
        super::persisted::persist_if_oversized(&mut result, tool.spec.max_result_size_chars, session);
        result
    }
}

fn wit_mode(mode: PermissionMode) -> WitMode {
    match mode {
        PermissionMode::Default => WitMode::Default,
        PermissionMode::Plan => WitMode::Plan,
        PermissionMode::AcceptEdits => WitMode::AcceptEdits,
        PermissionMode::DontAsk => WitMode::DontAsk,
        PermissionMode::BypassPermissions => WitMode::BypassPermissions,
    }
}

/// The tool's decision as the host will weigh it: an `allow` from an untrusted
/// tool counts for nothing (it cannot grant itself permission), and an updated
/// input that is not JSON is refused.
pub(crate) fn tool_check(decision: PermissionDecision, trusted: bool) -> ToolCheck {
    match decision {
        PermissionDecision::Allow(_) if !trusted => ToolCheck::Passthrough,
        PermissionDecision::Allow(None) => ToolCheck::Allow(None),
        PermissionDecision::Allow(Some(text)) => match serde_json::from_str(&text) {
            Ok(v) => ToolCheck::Allow(Some(v)),
            Err(e) => ToolCheck::Deny(format!("the tool rewrote the input into invalid JSON ({e})")),
        },
        PermissionDecision::Deny(reason) => ToolCheck::Deny(reason),
        PermissionDecision::Ask(req) => ToolCheck::Ask { message: req.message, suggested_rules: req.suggested_rules },
        PermissionDecision::Passthrough => ToolCheck::Passthrough,
    }
}

/// The result for a call that failed inside the guest: timeout, cancellation,
/// memory limit, trap (a panic included), or output the host could not read.
fn fault_result(name: &str, id: &str, e: &wasmtime::Error, instance: &Instance) -> ToolResult {
    let fault = GuestFault::of(e);
    let message = match fault {
        GuestFault::Timeout(limit) => format!("{name} timed out after {} ms and was stopped.", limit.as_millis()),
        GuestFault::Cancelled => format!("{name} was cancelled."),
        GuestFault::Memory(limit) => {
            format!("{name} exceeded its memory limit of {} MiB and was stopped.", limit >> 20)
        }
        GuestFault::Trap(trap) => {
            let stderr = instance.captured.last_stderr_lines(4);
            let detail = if stderr.is_empty() { String::new() } else { format!("\nThe tool's last output:\n{stderr}") };
            format!("{name} crashed ({trap}). This is a bug in the tool; the host keeps serving.{detail}")
        }
        GuestFault::Other => {
            format!("{name} returned malformed output: {e:#}. This is a bug in the tool; the host keeps serving.")
        }
    };
    match fault {
        GuestFault::Cancelled => tracing::debug!(tool = name, id, "tool call cancelled"),
        _ => tracing::warn!(tool = name, id, error = %format!("{e:#}"), "tool call failed in the guest"),
    }
    ToolResult::error(id, message)
}
