//! OpenTelemetry export, configured the standard way and off unless asked
//! for: traces when `OTEL_EXPORTER_OTLP_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, metrics when it or
//! `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` is (`OTEL_TRACES_EXPORTER=none`,
//! `OTEL_METRICS_EXPORTER=none` or `OTEL_SDK_DISABLED=true` turn either
//! off). Over `http/protobuf` (the default) or `grpc`
//! (`OTEL_EXPORTER_OTLP_PROTOCOL` and its per-signal forms); the exporters
//! read the endpoint, headers, timeout and TLS settings, the SDK the sampler
//! (`OTEL_TRACES_SAMPLER`) and the resource (`OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`; the service is `toolhost` unless they name
//! one). Context comes in and goes out as `OTEL_PROPAGATORS` says
//! (default `tracecontext,baggage`).
//!
//! Spans go through a bounded queue that drops rather than blocks
//! ([`queue`]); metrics are read every `OTEL_METRIC_EXPORT_INTERVAL` ms
//! (default 60 s). Both are flushed when the command ends (a drained
//! server included).

mod queue;

use anyhow::Context as _;
use opentelemetry::propagation::TextMapCompositePropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, SpanExporter};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::time::Duration;
use tracing_subscriber::filter::{LevelFilter, Targets};

/// The environment variable that opts in to each call's arguments and
/// result in its span (the GenAI instrumentations' name for it).
pub(crate) const CAPTURE_CONTENT: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// How long the end of the command waits for the last export.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// What was exported how; dropped at the end of the command (see
/// [`Telemetry::shutdown`]).
pub(crate) struct Telemetry {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
    /// Runs the gRPC exporters' connections.
    _runtime: Option<tokio::runtime::Runtime>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Protocol {
    HttpProtobuf,
    Grpc,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

/// Whether `signal` (`TRACES`, `METRICS`) is to be exported.
fn wanted(signal: &str) -> bool {
    let exporter = var(&format!("OTEL_{signal}_EXPORTER"));
    let endpoint = var(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")).or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"));
    endpoint.is_some() && exporter.is_none_or(|e| e.eq_ignore_ascii_case("otlp"))
}

fn protocol(signal: &str) -> anyhow::Result<Protocol> {
    let name = format!("OTEL_EXPORTER_OTLP_{signal}_PROTOCOL");
    match var(&name).or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL")).as_deref() {
        None | Some("http/protobuf") => Ok(Protocol::HttpProtobuf),
        Some("grpc") => Ok(Protocol::Grpc),
        Some(other) => anyhow::bail!(
            "OTLP protocol `{other}` is not supported: use `http/protobuf` or `grpc` (OTEL_EXPORTER_OTLP_PROTOCOL)"
        ),
    }
}

/// The resource every span and metric is reported under.
fn resource() -> Resource {
    let named = var("OTEL_SERVICE_NAME").is_some()
        || var("OTEL_RESOURCE_ATTRIBUTES")
            .is_some_and(|a| a.split(',').any(|kv| kv.trim().starts_with("service.name=")));
    let mut builder = Resource::builder();
    if !named {
        builder = builder.with_service_name("toolhost");
    }
    builder.with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION"))).build()
}

/// The propagators `OTEL_PROPAGATORS` names (`tracecontext`, `baggage`,
/// `none`; others are warned about and left out).
fn propagator() -> TextMapCompositePropagator {
    let names = var("OTEL_PROPAGATORS").unwrap_or_else(|| "tracecontext,baggage".into());
    let mut chosen: Vec<Box<dyn opentelemetry::propagation::TextMapPropagator + Send + Sync>> = Vec::new();
    for name in names.split(',').map(str::trim) {
        match name {
            "tracecontext" => chosen.push(Box::new(TraceContextPropagator::new())),
            "baggage" => chosen.push(Box::new(BaggagePropagator::new())),
            "none" | "" => {}
            other => tracing::warn!(propagator = other, "OTEL_PROPAGATORS names a propagator toolhost does not have"),
        }
    }
    TextMapCompositePropagator::new(chosen)
}

impl Telemetry {
    /// Sets up what the environment asks for; `None` when it asks for
    /// nothing. Call before any host is built (its instruments come from
    /// the global meter).
    pub(crate) fn from_env() -> anyhow::Result<Option<Telemetry>> {
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let (traces, metrics) = (wanted("TRACES"), wanted("METRICS"));
        if !traces && !metrics {
            return Ok(None);
        }
        let protocols = (protocol("TRACES")?, protocol("METRICS")?);
        // The tonic exporters connect from a runtime; the HTTP ones block
        // on a thread of their own.
        let runtime = if (traces && protocols.0 == Protocol::Grpc) || (metrics && protocols.1 == Protocol::Grpc) {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("otel-grpc")
                .enable_all()
                .build()
                .context("starting the OTLP exporter's runtime")?;
            Some(runtime)
        } else {
            None
        };
        let _entered = runtime.as_ref().map(tokio::runtime::Runtime::enter);
        // A collector over https: the TLS provider every client here uses.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let resource = resource();
        let tracer = if traces {
            let mut exporter = match protocols.0 {
                Protocol::Grpc => SpanExporter::builder().with_tonic().build(),
                Protocol::HttpProtobuf => SpanExporter::builder().with_http().build(),
            }
            .context("setting up the OTLP span exporter")?;
            // The provider tells its processors the resource; this one's
            // exporter lives on the queue's thread, so it is told here.
            opentelemetry_sdk::trace::SpanExporter::set_resource(&mut exporter, &resource);
            let queue =
                queue::Queue::start(exporter, queue::Sizes::from_env()).context("starting the span exporter")?;
            let provider =
                SdkTracerProvider::builder().with_span_processor(queue).with_resource(resource.clone()).build();
            opentelemetry::global::set_text_map_propagator(propagator());
            Some(provider)
        } else {
            None
        };
        let meter = if metrics {
            let exporter = match protocols.1 {
                Protocol::Grpc => MetricExporter::builder().with_tonic().build(),
                Protocol::HttpProtobuf => MetricExporter::builder().with_http().build(),
            }
            .context("setting up the OTLP metric exporter")?;
            let provider = SdkMeterProvider::builder()
                .with_reader(PeriodicReader::builder(exporter).build())
                .with_resource(resource)
                .build();
            opentelemetry::global::set_meter_provider(provider.clone());
            Some(provider)
        } else {
            None
        };
        drop(_entered);
        Ok(Some(Telemetry { tracer, meter, _runtime: runtime }))
    }

    /// The layer that turns toolhost's spans into exported ones, if traces
    /// are exported: the spans of the host and the MCP front, whatever
    /// `RUST_LOG` shows.
    pub(crate) fn layer<S>(&self) -> Option<impl tracing_subscriber::Layer<S> + use<S>>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        use tracing_subscriber::Layer as _;
        let tracer = self.tracer.as_ref()?.tracer("toolhost");
        let ours = Targets::new()
            .with_target("toolhost", LevelFilter::INFO)
            .with_target("toolhost_mcp", LevelFilter::INFO)
            .with_default(LevelFilter::OFF);
        Some(
            tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_tracked_inactivity(false)
                .with_threads(false)
                .with_location(false)
                .with_filter(ours),
        )
    }

    /// Sends what is still queued and stops the exporters, waiting at most
    /// a few seconds for each.
    pub(crate) fn shutdown(self) {
        if let Some(tracer) = &self.tracer
            && let Err(e) = tracer.shutdown_with_timeout(FLUSH_TIMEOUT)
        {
            tracing::warn!(error = %e, "could not send the last spans");
        }
        if let Some(meter) = &self.meter
            && let Err(e) = meter.shutdown_with_timeout(FLUSH_TIMEOUT)
        {
            tracing::warn!(error = %e, "could not send the last metrics");
        }
    }
}

/// Whether the operator opted in to arguments and results in spans: a
/// boolean as the command's other variables take them (clap's boolish
/// values); anything else is no.
pub(crate) fn capture_content() -> bool {
    use clap::builder::TypedValueParser as _;
    let Some(value) = std::env::var_os(CAPTURE_CONTENT) else { return false };
    let command = clap::Command::new("toolhost");
    clap::builder::BoolishValueParser::new().parse_ref(&command, None, &value).unwrap_or(false)
}
