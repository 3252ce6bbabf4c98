//! What a host counts for its operator: calls by tool and outcome and how
//! long they took, permission decisions, calls running, instance slots and
//! the calls waiting for one, and reloads. [`crate::Host::metrics_text`]
//! writes them in the OpenMetrics text format Prometheus scrapes.
//!
//! The same counts go to OpenTelemetry's global meter ([`exported`]), which
//! an OTLP exporter the command installs sends on.
//!
//! Label values come from the host, never from a model: a call of a tool
//! the host does not have counts under `tool="(unknown)"`, so a model
//! naming tools at random cannot grow the series without bound.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

mod exported;

/// Spans the process's exporter dropped (its queue was full): one count for
/// the process, as its exporter is.
static SPANS_DROPPED: LazyLock<Counter> = LazyLock::new(Counter::default);

/// Counts `n` spans the process's OpenTelemetry exporter dropped, shown on
/// every host's `/metrics` as `toolhost_telemetry_spans_dropped_total`.
pub fn count_dropped_spans(n: u64) {
    SPANS_DROPPED.inc_by(n);
}

/// What the permission step decided.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) enum Decided {
    Allow,
    Deny,
    Ask,
}

impl Decided {
    fn label(self) -> &'static str {
        match self {
            Decided::Allow => "allow",
            Decided::Deny => "deny",
            Decided::Ask => "ask",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabel {
    decision: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QuotaLabels {
    quota: &'static str,
    /// An operator's credential name (never a model's text); empty for
    /// calls that come with none.
    identity: String,
}

/// Histogram buckets of seconds, 100 µs to about 100 s, a factor of 4 apart
/// (start, factor, count), on `/metrics` and over OTLP alike.
const SECOND_BUCKETS: (f64, f64, u16) = (0.0001, 4.0, 11);

/// Histogram buckets of bytes, 64 B to 1 GiB, a factor of 4 apart.
const BYTE_BUCKETS: (f64, f64, u16) = (64.0, 4.0, 13);

/// The bounds of `(start, factor, count)`.
fn buckets((start, factor, count): (f64, f64, u16)) -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(start, factor, count)
}

/// The tool label of a call naming no tool the host has (in every front's
/// metrics: a model's or a client's text never becomes a label).
pub const UNKNOWN_TOOL: &str = "(unknown)";

/// The counters of one host.
pub(crate) struct Metrics {
    calls: Family<CallLabels, Counter>,
    durations: Family<ToolLabel, Histogram>,
    decisions: Family<DecisionLabel, Counter>,
    running: Gauge,
    reloads: Counter,
    slots: Gauge,
    slots_taken: Gauge,
    waiting: Gauge,
    quota_refusals: Family<QuotaLabels, Counter>,
    quota_store_errors: Counter,
    cpu: Family<ToolLabel, Histogram>,
    memory: Family<ToolLabel, Histogram>,
    output: Family<ToolLabel, Histogram>,
    exported: exported::Instruments,
    registry: Registry,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let calls = Family::<CallLabels, Counter>::default();
        let seconds = || Histogram::new(buckets(SECOND_BUCKETS));
        let bytes = || Histogram::new(buckets(BYTE_BUCKETS));
        let durations = Family::<ToolLabel, Histogram>::new_with_constructor(seconds);
        let decisions = Family::<DecisionLabel, Counter>::default();
        let (running, reloads) = (Gauge::default(), Counter::default());
        let (slots, slots_taken, waiting) = (Gauge::default(), Gauge::default(), Gauge::default());
        let mut registry = Registry::with_prefix("toolhost");
        registry.register("calls", "Tool calls finished, by tool and outcome", calls.clone());
        registry.register("call_duration_seconds", "How long tool calls took, by tool", durations.clone());
        registry.register("decisions", "Permission decisions, by decision", decisions.clone());
        registry.register("calls_running", "Tool calls running now", running.clone());
        registry.register("reloads", "Reloads of the plugins directory that changed the tools", reloads.clone());
        registry.register("instance_slots", "Instance slots in all (calls with an instance at once)", slots.clone());
        registry.register("instance_slots_taken", "Instance slots taken now", slots_taken.clone());
        registry.register("calls_waiting_for_a_slot", "Calls waiting for an instance slot now", waiting.clone());
        let (quota_refusals, quota_store_errors) = (Family::<QuotaLabels, Counter>::default(), Counter::default());
        registry.register(
            "quota_refusals",
            "Calls refused over a quota, by quota and identity",
            quota_refusals.clone(),
        );
        registry.register(
            "quota_store_errors",
            "Calls that went on uncounted: the quotas' store could not be reached",
            quota_store_errors.clone(),
        );
        let cpu = Family::<ToolLabel, Histogram>::new_with_constructor(seconds);
        let memory = Family::<ToolLabel, Histogram>::new_with_constructor(bytes);
        let output = Family::<ToolLabel, Histogram>::new_with_constructor(bytes);
        registry.register("call_cpu_seconds", "CPU time of each tool call (guest and host), by tool", cpu.clone());
        registry.register(
            "call_memory_bytes",
            "Peak linear memory of each tool call's instance, by tool",
            memory.clone(),
        );
        registry.register("call_output_bytes", "Bytes each tool call returned, by tool", output.clone());
        registry.register(
            "telemetry_spans_dropped",
            "Spans the OpenTelemetry exporter dropped: its queue was full",
            SPANS_DROPPED.clone(),
        );
        Metrics {
            calls,
            durations,
            decisions,
            running,
            reloads,
            slots,
            slots_taken,
            waiting,
            quota_refusals,
            quota_store_errors,
            cpu,
            memory,
            output,
            exported: exported::Instruments::default(),
            registry,
        }
    }
}

/// Whether any call is running.
pub(crate) type Busy = Arc<dyn Fn() -> bool + Send + Sync>;

/// Counts a call as running while it lives.
pub(crate) struct Running<'m>(&'m Metrics);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.running.dec();
        self.0.exported.started(-1);
    }
}

impl Metrics {
    pub(crate) fn started(&self) -> Running<'_> {
        self.running.inc();
        self.exported.started(1);
        Running(self)
    }

    pub(crate) fn finished(&self, tool: &str, is_error: bool, took: Duration) {
        let outcome = if is_error { "error" } else { "ok" };
        self.calls.get_or_create(&CallLabels { tool: tool.to_string(), outcome }).inc();
        self.durations.get_or_create(&ToolLabel { tool: tool.to_string() }).observe(took.as_secs_f64());
        self.exported.finished(tool, outcome, took);
    }

    /// Exports the instance pool's gauges over OTLP, read from `slots`
    /// (`/metrics` reads them when written).
    pub(crate) fn observe_slots(&self, slots: crate::sandbox::SlotReader) {
        self.exported.observe_slots(slots);
    }

    /// What a finished call of `tool` used.
    pub(crate) fn used(&self, tool: &str, usage: &crate::sandbox::Usage) {
        let cpu = Duration::from_micros(usage.cpu_us);
        let label = ToolLabel { tool: tool.to_string() };
        self.cpu.get_or_create(&label).observe(cpu.as_secs_f64());
        self.memory.get_or_create(&label).observe(usage.peak_memory_bytes as f64);
        self.output.get_or_create(&label).observe(usage.output_bytes as f64);
        self.exported.used(tool, cpu, usage.peak_memory_bytes, usage.output_bytes);
    }

    pub(crate) fn decided(&self, decision: Decided) {
        self.decisions.get_or_create(&DecisionLabel { decision: decision.label() }).inc();
        self.exported.decided(decision.label());
    }

    /// Calls running now.
    pub(crate) fn running_now(&self) -> usize {
        self.running.get().max(0) as usize
    }

    /// Tells whether any call is running, from any thread.
    pub(crate) fn busy(&self) -> Busy {
        let running = self.running.clone();
        Arc::new(move || running.get() > 0)
    }

    /// A call of `identity` refused over its `quota`.
    pub(crate) fn refused_over(&self, quota: crate::quotas::QuotaKind, identity: Option<&str>) {
        let labels = QuotaLabels { quota: quota.label(), identity: identity.unwrap_or_default().to_string() };
        self.quota_refusals.get_or_create(&labels).inc();
        self.exported.refused_over(labels.quota, &labels.identity);
    }

    /// `n` counts against quotas the store failed to take.
    pub(crate) fn quota_store_failed(&self, n: usize) {
        self.quota_store_errors.inc_by(n as u64);
        if n > 0 {
            self.exported.quota_store_failed(n as u64);
        }
    }

    pub(crate) fn reloaded(&self) {
        self.reloads.inc();
        self.exported.reloaded();
    }

    /// Everything, as OpenMetrics text, with the slots as they are now.
    pub(crate) fn text(&self, (slots, taken, waiting): (usize, usize, usize)) -> String {
        self.slots.set(slots as i64);
        self.slots_taken.set(taken as i64);
        self.waiting.set(waiting as i64);
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_come_out_as_openmetrics_text() {
        let m = Metrics::default();
        {
            let _running = m.started();
            assert!(m.text((4, 1, 0)).contains("toolhost_calls_running 1\n"));
        }
        m.finished("Read", false, Duration::from_millis(3));
        m.finished("Read", true, Duration::from_millis(300));
        m.decided(Decided::Allow);
        m.reloaded();
        m.refused_over(crate::quotas::QuotaKind::CallsPerMinute, Some("alice"));
        m.quota_store_failed(2);
        let usage =
            crate::sandbox::Usage { cpu_us: 1_500, peak_memory_bytes: 1 << 20, output_bytes: 100, wall_us: 2_000 };
        m.used("Read", &usage);
        count_dropped_spans(3);
        let text = m.text((4, 2, 1));
        for line in [
            "toolhost_calls_total{tool=\"Read\",outcome=\"ok\"} 1",
            "toolhost_calls_total{tool=\"Read\",outcome=\"error\"} 1",
            "toolhost_call_duration_seconds_count{tool=\"Read\"} 2",
            "toolhost_decisions_total{decision=\"allow\"} 1",
            "toolhost_calls_running 0",
            "toolhost_reloads_total 1",
            "toolhost_instance_slots 4",
            "toolhost_instance_slots_taken 2",
            "toolhost_calls_waiting_for_a_slot 1",
            "toolhost_quota_refusals_total{quota=\"calls_per_minute\",identity=\"alice\"} 1",
            "toolhost_quota_store_errors_total 2",
            "toolhost_call_cpu_seconds_count{tool=\"Read\"} 1",
            "toolhost_call_cpu_seconds_sum{tool=\"Read\"} 0.0015",
            "toolhost_call_memory_bytes_bucket{le=\"1048576.0\",tool=\"Read\"} 1",
            "toolhost_call_output_bytes_sum{tool=\"Read\"} 100.0",
            "# EOF",
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
        }
        // Process-wide: other tests of this binary may count too.
        assert!(text.lines().any(|l| l.starts_with("toolhost_telemetry_spans_dropped_total ")), "{text}");
    }
}
