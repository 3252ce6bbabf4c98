//! The instance a call runs on: the session's warm one (a tool that
//! declares `reuse-instance`), a spare made ahead, or a fresh one; the next
//! call's spare ordered; and the tool asked whether the call is
//! concurrency-safe when the scheduler wants to know.

use super::call::{CallOptions, Pipeline};
use super::spare::{self, MAKING_TIMEOUT};
use super::warm;
use crate::fsx::Dirs;
use crate::grants::Grants;
use crate::imports::{CallScope, ScriptCalls};
use crate::registry::{LoadedTool, Registry};
use crate::sandbox::{CallLimits, Instance};
use crate::session::Session;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// What a call's instance is made with.
pub(super) struct Setup<'p> {
    pub pipeline: &'p Pipeline,
    pub registry: &'p Arc<Registry>,
    pub tool: &'p LoadedTool,
    pub session: &'p Arc<Session>,
    pub id: &'p str,
    pub options: &'p CallOptions,
    /// The directories of the call.
    pub dirs: Arc<Dirs>,
    /// What the user granted the tool since the host started, if anything
    /// (in place of its grants from loading).
    pub since: Option<Arc<Grants>>,
    /// The tool's limits for this call.
    pub limits: CallLimits,
    /// For the tool that runs programs: the calls its program makes.
    pub script: Option<ScriptCalls>,
}

/// The next call's fresh instance, to be made once this one ended.
pub(super) type Next = Option<(spare::Key, spare::Make<Instance>)>;

impl Setup<'_> {
    /// What the tool may use in this call.
    pub(super) fn grants(&self) -> &Grants {
        self.since.as_deref().unwrap_or(&self.tool.grants)
    }

    fn scope(&self) -> CallScope {
        let mut scope = self.pipeline.scope(self.tool, self.id.to_string(), self.session, Arc::clone(&self.dirs));
        scope.progress = self.options.progress.clone();
        scope.cancel = self.options.cancel.clone();
        scope.confinement = self.pipeline.confinement;
        scope.script = self.script.clone();
        scope
    }

    /// A fresh instance, or the error result's message.
    fn instantiate(&self) -> Result<Instance, String> {
        let sandbox = &self.pipeline.sandbox;
        let made =
            self.tool.pre(sandbox).and_then(|pre| sandbox.instantiate(pre, self.grants(), self.scope(), self.limits));
        made.map_err(|e| {
            tracing::error!(error = %format!("{e:#}"), "could not instantiate");
            format!("toolhost could not start {}: {e}. The host keeps serving; try again.", self.tool.spec.name)
        })
    }

    /// The call's instance and, for a tool that declares `reuse-instance`,
    /// what it is kept for afterwards; `next` gets the next call's spare to
    /// make, when the tool is slow enough to start to want one.
    pub(super) fn instance(
        &self,
        span: &tracing::Span,
        next: &mut Next,
    ) -> Result<(Instance, Option<warm::Key>), String> {
        let (pipeline, registry, name) = (self.pipeline, self.registry, self.tool.spec.name.as_str());
        // The session's warm instance, if one was kept for these grants and
        // directories.
        let warm = self
            .tool
            .spec
            .reuse_instance
            .then(|| warm::Key::new(self.session, registry, name, self.since.as_ref(), &self.dirs));
        let kept = warm.as_ref().and_then(|key| pipeline.warm.take(key, registry));
        // Otherwise a fresh instance: the spare made ahead for it, if any.
        let spare_key = warm.is_none().then(|| spare::Key::new(registry, name, self.since.as_ref(), &self.dirs));
        let spare = spare_key.as_ref().and_then(|key| pipeline.spares.take(key, registry));
        super::trace::record_instance(
            span,
            match (&kept, &spare) {
                (Some(_), _) => "warm",
                (None, Some(_)) => "spare",
                (None, None) => "fresh",
            },
        );
        // How long making this call's instance took, if it made one.
        let mut took = None;
        let instance = match kept.or(spare) {
            Some(mut kept) => {
                kept.renew(self.grants(), self.scope(), self.limits);
                kept
            }
            None => {
                let span = tracing::info_span!("create_instance", otel.name = %format_args!("create_instance {name}"));
                let _entered = span.enter();
                let began = Instant::now();
                let made = self.instantiate();
                took = Some(began.elapsed());
                made?
            }
        };
        if let Some(key) = spare_key
            && pipeline.spares.wants(name, took)
            && let Ok(pre) = self.tool.pre(&pipeline.sandbox)
        {
            let (pre, grants) = (pre.clone(), self.grants().clone());
            let placeholder =
                pipeline.scope(self.tool, String::new(), &pipeline.scratch_session, Arc::clone(&self.dirs));
            let running = pipeline.sandbox.running();
            // Bounded far below a call's deadline: a guest whose start
            // function spins is stopped there, and its tool gets no more.
            let making = CallLimits { timeout: self.limits.timeout.min(MAKING_TIMEOUT), ..self.limits };
            let make: spare::Make<Instance> = Box::new(move || {
                let _running = running;
                Instance::new(pre.engine(), &pre, &grants, placeholder, making)
            });
            *next = Some((key, make));
        }
        Ok((instance, warm))
    }

    /// Tells the scheduler whether the call is concurrency-safe, when it
    /// asked: the tool's declared answer, else the tool's own for `input`,
    /// asked within the same limit as in an instance of its own. A tool
    /// stopped there has a broken instance: the call gets a fresh one.
    pub(super) fn classify(&self, mut instance: Instance, input: &Value) -> Result<Instance, String> {
        let Some(report) = &self.options.on_concurrency_safe else { return Ok(instance) };
        if let Some(declared) = self.tool.spec.hints.concurrency_safe {
            report(declared);
            return Ok(instance);
        }
        let limit = super::CLASSIFY_TIMEOUT.min(self.limits.timeout);
        instance.store.data_mut().call.deadline = Some((Instant::now() + limit, super::CLASSIFY_TIMEOUT));
        let answer = instance.guest.is_concurrency_safe(&mut instance.store, &input.to_string());
        report(answer.as_ref().is_ok_and(|safe| *safe));
        match answer {
            Ok(_) => {
                let timeout = self.limits.timeout;
                instance.store.data_mut().call.deadline = Some((Instant::now() + timeout, timeout));
                Ok(instance)
            }
            Err(_) => self.instantiate(),
        }
    }
}
