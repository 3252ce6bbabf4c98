//! Quotas in the pipeline: each call counted against its identity's
//! quotas before it runs, or refused and the refusal recorded; and the
//! same question asked by a front before it starts a call.

use super::call::{CallOptions, Pipeline, ToolUse};
use crate::quotas::{Admitted, Refusal};
use crate::session::Session;
use std::time::Duration;

impl Pipeline {
    /// Counts the call against its identity's quotas, or refuses it (the
    /// refusal recorded: [`Pipeline::refused_over_quota`]).
    pub(super) fn admit(
        &self,
        session: &Session,
        tool_use: &ToolUse,
        tool: &str,
        options: &CallOptions,
        span: &tracing::Span,
    ) -> Result<Admitted, Refusal> {
        if !self.quotas.any() {
            return Ok(Admitted::default());
        }
        let identity = options.identity.as_deref();
        match self.quotas.admit(identity, tool, options.parent.is_none()) {
            Ok(admitted) => {
                self.metrics.quota_store_failed(admitted.store_errors);
                Ok(admitted)
            }
            Err(refusal) => {
                let source = crate::policy::Source::Quota(refusal.kind);
                super::trace::record_decision(span, super::trace::Verdict::Deny, &source);
                let call = (session.id(), tool_use.name.as_str(), tool_use.id.as_str());
                self.refused_over_quota(call, identity, options.parent.as_deref(), &refusal);
                Err(refusal)
            }
        }
    }

    /// Records a call refused over a quota: a log line, the counters, and a
    /// decision in the audit log. `call`: its session, tool (as named) and
    /// id.
    pub(crate) fn refused_over_quota(
        &self,
        (session, tool, id): (&str, &str, &str),
        identity: Option<&str>,
        parent: Option<&str>,
        refusal: &Refusal,
    ) {
        let quota = refusal.kind.setting();
        tracing::info!(quota, identity, tool, retry_after_s = refusal.retry_after_secs(), "refused over a quota");
        self.metrics.decided(crate::metrics::Decided::Deny);
        self.metrics.refused_over(refusal.kind, identity);
        let decision = crate::policy::Decision::Deny {
            message: refusal.to_string(),
            source: crate::policy::Source::Quota(refusal.kind),
        };
        // A refusal that cannot be recorded is still a refusal.
        let _ = self.policy.audit(&crate::policy::AuditRecord {
            session,
            identity,
            parent,
            tool,
            tool_use_id: id,
            mode: self.mode.as_str(),
            decision: &decision,
            asked: false,
            duration: Duration::ZERO,
        });
    }

    /// Whether a call of `tool` by `identity` is over a quota now (nothing
    /// counted): the refusal, recorded under `session` and request `id`.
    pub(crate) fn quota_refusal(
        &self,
        identity: Option<&str>,
        tool: &str,
        (session, id): (&str, &str),
    ) -> Option<Refusal> {
        if !self.quotas.any() {
            return None;
        }
        let known = self.registry().resolve(tool).map(|t| t.spec.name.clone());
        let refusal = self.quotas.would_refuse(identity, known.as_deref().unwrap_or(crate::metrics::UNKNOWN_TOOL))?;
        self.refused_over_quota((session, tool, id), identity, None, &refusal);
        Some(refusal)
    }

    /// Whether any quota is set.
    pub(crate) fn has_quotas(&self) -> bool {
        self.quotas.any()
    }
}
