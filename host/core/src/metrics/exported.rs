//! The host's counts as OpenTelemetry instruments, for an OTLP exporter:
//! the same series as `/metrics` under the conventions' dotted names, from
//! the global meter. Until the command installs a meter provider, that meter
//! is a no-op and recording costs a few branches.

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, UpDownCounter};
use std::time::Duration;

/// The same buckets as `/metrics`.
fn second_buckets() -> Vec<f64> {
    super::buckets(super::SECOND_BUCKETS).collect()
}

fn byte_buckets() -> Vec<f64> {
    super::buckets(super::BYTE_BUCKETS).collect()
}

pub(super) struct Instruments {
    calls: Counter<u64>,
    duration: Histogram<f64>,
    cpu: Histogram<f64>,
    memory: Histogram<u64>,
    output: Histogram<u64>,
    decisions: Counter<u64>,
    running: UpDownCounter<i64>,
    reloads: Counter<u64>,
    quota_refusals: Counter<u64>,
    quota_store_errors: Counter<u64>,
}

impl Default for Instruments {
    fn default() -> Instruments {
        let meter = opentelemetry::global::meter("toolhost");
        Instruments {
            calls: meter
                .u64_counter("toolhost.calls")
                .with_description("Tool calls finished, by tool and outcome")
                .build(),
            duration: meter
                .f64_histogram("toolhost.call.duration")
                .with_unit("s")
                .with_description("How long tool calls took, by tool")
                .with_boundaries(second_buckets())
                .build(),
            cpu: meter
                .f64_histogram("toolhost.call.cpu_time")
                .with_unit("s")
                .with_description("CPU time of each tool call (guest and host), by tool")
                .with_boundaries(second_buckets())
                .build(),
            memory: meter
                .u64_histogram("toolhost.call.memory")
                .with_unit("By")
                .with_description("Peak linear memory of each tool call's instance, by tool")
                .with_boundaries(byte_buckets())
                .build(),
            output: meter
                .u64_histogram("toolhost.call.output")
                .with_unit("By")
                .with_description("Bytes each tool call returned, by tool")
                .with_boundaries(byte_buckets())
                .build(),
            decisions: meter.u64_counter("toolhost.decisions").with_description("Permission decisions").build(),
            running: meter.i64_up_down_counter("toolhost.calls.running").with_description("Tool calls running").build(),
            reloads: meter
                .u64_counter("toolhost.reloads")
                .with_description("Reloads of the plugins directory that changed the tools")
                .build(),
            quota_refusals: meter
                .u64_counter("toolhost.quota.refusals")
                .with_description("Calls refused over a quota, by quota and identity")
                .build(),
            quota_store_errors: meter
                .u64_counter("toolhost.quota.store_errors")
                .with_description("Calls that went on uncounted: the quotas' store could not be reached")
                .build(),
        }
    }
}

impl Instruments {
    /// Gauges of the instance pool, read from `slots` when exported.
    pub(super) fn observe_slots(&self, slots: crate::sandbox::SlotReader) {
        let meter = opentelemetry::global::meter("toolhost");
        let gauge = |name: &'static str, description: &'static str, pick: fn((usize, usize, usize)) -> usize| {
            let slots = std::sync::Arc::clone(&slots);
            meter
                .u64_observable_gauge(name)
                .with_description(description)
                .with_callback(move |observer| observer.observe(pick(slots()) as u64, &[]))
                .build()
        };
        // The callbacks stay with the meter provider; the handles are not needed.
        gauge("toolhost.instance_slots", "Instance slots in all (calls with an instance at once)", |s| s.0);
        gauge("toolhost.instance_slots.taken", "Instance slots taken now", |s| s.1);
        gauge("toolhost.calls.waiting_for_a_slot", "Calls waiting for an instance slot now", |s| s.2);
    }

    pub(super) fn started(&self, by: i64) {
        self.running.add(by, &[]);
    }

    pub(super) fn finished(&self, tool: &str, outcome: &'static str, took: Duration) {
        self.calls.add(1, &[KeyValue::new("tool", tool.to_string()), KeyValue::new("outcome", outcome)]);
        self.duration.record(took.as_secs_f64(), &[KeyValue::new("tool", tool.to_string())]);
    }

    pub(super) fn used(&self, tool: &str, cpu: Duration, memory: u64, output: u64) {
        let tool = [KeyValue::new("tool", tool.to_string())];
        self.cpu.record(cpu.as_secs_f64(), &tool);
        self.memory.record(memory, &tool);
        self.output.record(output, &tool);
    }

    pub(super) fn decided(&self, decision: &'static str) {
        self.decisions.add(1, &[KeyValue::new("decision", decision)]);
    }

    pub(super) fn reloaded(&self) {
        self.reloads.add(1, &[]);
    }

    pub(super) fn refused_over(&self, quota: &'static str, identity: &str) {
        self.quota_refusals.add(1, &[KeyValue::new("quota", quota), KeyValue::new("identity", identity.to_string())]);
    }

    pub(super) fn quota_store_failed(&self, n: u64) {
        self.quota_store_errors.add(n, &[]);
    }
}
