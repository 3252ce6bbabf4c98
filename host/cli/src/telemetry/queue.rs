//! A span processor that never blocks a call: ended spans go into a bounded
//! queue, a thread of its own exports them in batches, and a span that
//! finds the queue full is dropped and counted
//! (`toolhost_telemetry_spans_dropped_total`). The SDK's batch processor
//! drops the same way but keeps the count to itself.

use opentelemetry::Context;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How the queue is sized and emptied (the SDK's `OTEL_BSP_*` settings).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sizes {
    pub capacity: usize,
    pub batch: usize,
    pub delay: Duration,
}

impl Sizes {
    /// From `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` and
    /// `OTEL_BSP_SCHEDULE_DELAY` (ms), each with the specification's default.
    pub(crate) fn from_env() -> Sizes {
        let number = |name: &str, default: u64| {
            std::env::var(name).ok().and_then(|v| v.trim().parse::<u64>().ok()).filter(|n| *n > 0).unwrap_or(default)
        };
        let capacity = number("OTEL_BSP_MAX_QUEUE_SIZE", 2048) as usize;
        Sizes {
            capacity,
            batch: (number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512) as usize).min(capacity),
            delay: Duration::from_millis(number("OTEL_BSP_SCHEDULE_DELAY", 5000)),
        }
    }
}

#[derive(Default)]
struct State {
    spans: VecDeque<SpanData>,
    /// Flushes asked for (each answered once the queue was exported).
    flushes: u64,
    flushed: u64,
    shutdown: bool,
    stopped: bool,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the exporting thread (a full batch, a flush, the end).
    work: Condvar,
    /// Wakes those waiting for a flush or the end.
    done: Condvar,
    sizes: Sizes,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The processor (see the module's documentation).
#[derive(Clone)]
pub(crate) struct Queue {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").field("sizes", &self.shared.sizes).finish()
    }
}

impl Queue {
    /// Starts the exporting thread; `export` sends one batch (it may block).
    pub(crate) fn start<E: SpanExporter + 'static>(exporter: E, sizes: Sizes) -> std::io::Result<Queue> {
        let shared =
            Arc::new(Shared { state: Mutex::new(State::default()), work: Condvar::new(), done: Condvar::new(), sizes });
        let worker = Arc::clone(&shared);
        std::thread::Builder::new().name("otel-spans".into()).spawn(move || export_loop(&worker, exporter))?;
        Ok(Queue { shared })
    }

    /// Asks the exporting thread for `ask` and waits until `done` holds of
    /// the state, or `timeout`.
    fn wait(&self, timeout: Duration, ask: impl FnOnce(&mut State), done: impl Fn(&State) -> bool) -> OTelSdkResult {
        let until = Instant::now() + timeout;
        let mut state = self.shared.lock();
        ask(&mut state);
        self.shared.work.notify_one();
        while !done(&state) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(OTelSdkError::Timeout(timeout));
            }
            state = self.shared.done.wait_timeout(state, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        Ok(())
    }

    /// Waits until every span queued before now was exported, or `timeout`.
    fn wait_flushed(&self, timeout: Duration) -> OTelSdkResult {
        let ticket = std::cell::Cell::new(0);
        self.wait(
            timeout,
            |state| {
                state.flushes += 1;
                ticket.set(state.flushes);
            },
            |state| state.flushed >= ticket.get() || state.stopped,
        )
    }
}

fn export_loop<E: SpanExporter>(shared: &Shared, exporter: E) {
    let sizes = shared.sizes;
    loop {
        let (batch, flush_ticket, shutdown) = {
            let mut state = shared.lock();
            let deadline = Instant::now() + sizes.delay;
            while state.spans.len() < sizes.batch && state.flushes == state.flushed && !state.shutdown {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                state = shared.work.wait_timeout(state, left).unwrap_or_else(|e| e.into_inner()).0;
            }
            let take = state.spans.len().min(sizes.batch);
            let batch: Vec<SpanData> = state.spans.drain(..take).collect();
            // A flush or the end is answered once everything is out.
            let all_out = state.spans.is_empty();
            (batch, all_out.then_some(state.flushes), state.shutdown && all_out)
        };
        if !batch.is_empty()
            && let Err(e) = futures_executor(exporter.export(batch))
        {
            tracing::debug!(error = %e, "could not export spans");
        }
        let mut state = shared.lock();
        if let Some(ticket) = flush_ticket {
            state.flushed = state.flushed.max(ticket);
            shared.done.notify_all();
        }
        if shutdown {
            drop(state);
            let _ = exporter.shutdown();
            let mut state = shared.lock();
            state.stopped = true;
            shared.done.notify_all();
            return;
        }
    }
}

/// Runs an export to its end on this thread (the exporters block or use
/// a runtime of their own).
fn futures_executor<F: std::future::Future>(future: F) -> F::Output {
    futures::executor::block_on(future)
}

impl SpanProcessor for Queue {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        let mut state = self.shared.lock();
        if state.shutdown {
            return;
        }
        if state.spans.len() >= self.shared.sizes.capacity {
            drop(state);
            toolhost::count_dropped_spans(1);
            return;
        }
        state.spans.push_back(span);
        if state.spans.len() >= self.shared.sizes.batch {
            self.shared.work.notify_one();
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.wait_flushed(Duration::from_secs(5))
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.wait(timeout, |state| state.shutdown = true, |state| state.stopped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanContext, SpanKind, Status, TraceFlags, TraceState};
    use opentelemetry_sdk::trace::{SpanEvents, SpanLinks};
    use std::borrow::Cow;
    use std::time::SystemTime;

    /// An exporter that holds each batch until told, counting what it got.
    #[derive(Debug, Clone, Default)]
    struct Gate {
        exported: Arc<Mutex<usize>>,
        open: Arc<(Mutex<bool>, Condvar)>,
    }

    impl SpanExporter for Gate {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            let (open, turn) = &*self.open;
            let mut open = open.lock().unwrap();
            while !*open {
                open = turn.wait(open).unwrap();
            }
            *self.exported.lock().unwrap() += batch.len();
            Ok(())
        }
    }

    fn span() -> SpanData {
        SpanData {
            span_context: SpanContext::new(
                opentelemetry::trace::TraceId::from(1u128),
                opentelemetry::trace::SpanId::from(1u64),
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id: opentelemetry::trace::SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Borrowed("s"),
            start_time: SystemTime::now(),
            end_time: SystemTime::now(),
            attributes: Vec::new(),
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: Status::Unset,
            instrumentation_scope: Default::default(),
        }
    }

    #[test]
    fn a_full_queue_drops_without_blocking_and_a_flush_sends_the_rest() {
        let gate = Gate::default();
        let sizes = Sizes { capacity: 4, batch: 2, delay: Duration::from_secs(60) };
        let queue = Queue::start(gate.clone(), sizes).unwrap();
        // The exporter is stuck on the first batch: the queue fills, and the
        // rest is dropped at once.
        let started = Instant::now();
        for _ in 0..20 {
            queue.on_end(span());
        }
        assert!(started.elapsed() < Duration::from_secs(5), "on_end blocked");
        {
            let (open, turn) = &*gate.open;
            *open.lock().unwrap() = true;
            turn.notify_all();
        }
        queue.force_flush().unwrap();
        let exported = *gate.exported.lock().unwrap();
        // The four the queue holds, and the two of the stuck batch if the
        // exporter took them before the queue filled.
        assert!((4..=6).contains(&exported), "exported {exported}");
        queue.on_end(span());
        queue.shutdown_with_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(*gate.exported.lock().unwrap(), exported + 1, "shutdown sends what is queued");
        queue.on_end(span());
    }
}
