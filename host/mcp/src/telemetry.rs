//! The MCP side of a trace, on OpenTelemetry's MCP conventions: a server
//! span per request (`tools/call {gen_ai.tool.name}`) that continues the
//! client's trace from the request's `_meta` (`traceparent`, `tracestate`,
//! `baggage`), a client span per call to an MCP server's tool that passes
//! the trace on in that call's `_meta`, and the `mcp.server.operation.duration`
//! and `mcp.client.operation.duration` histograms.
//!
//! Spans are `tracing`'s; the context goes through OpenTelemetry's global
//! propagator. Until the command installs a tracer and a propagator, nothing
//! is extracted or injected and the spans are log context only.

use opentelemetry::KeyValue;
use opentelemetry::metrics::Histogram;
use opentelemetry::propagation::{Extractor, Injector};
use rmcp::RoleServer;
use rmcp::model::RequestMetaObject;
use rmcp::service::RequestContext;
use std::sync::LazyLock;
use std::time::Duration;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The conventions' buckets for an MCP operation's duration, in seconds.
const DURATION_BUCKETS: [f64; 14] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// The `_meta` keys of W3C Trace Context and Baggage.
const CONTEXT_KEYS: [&str; 3] = ["traceparent", "tracestate", "baggage"];

struct Durations {
    server: Histogram<f64>,
    client: Histogram<f64>,
}

/// Made at first use, after the command set the global meter provider.
static DURATIONS: LazyLock<Durations> = LazyLock::new(|| {
    let meter = opentelemetry::global::meter("toolhost-mcp");
    let histogram = |name: &'static str, description: &'static str| {
        meter
            .f64_histogram(name)
            .with_unit("s")
            .with_description(description)
            .with_boundaries(DURATION_BUCKETS.to_vec())
            .build()
    };
    Durations {
        server: histogram("mcp.server.operation.duration", "How long the server took to answer an MCP request"),
        client: histogram("mcp.client.operation.duration", "How long an MCP server took to answer toolhost's request"),
    }
});

/// How a request reached this server.
#[derive(Clone, Copy)]
pub(crate) enum Transport {
    /// Standard input and output.
    Pipe,
    /// Streamable HTTP.
    Tcp,
}

impl Transport {
    fn of(context: &RequestContext<RoleServer>) -> Transport {
        match context.extensions.get::<::http::request::Parts>() {
            Some(_) => Transport::Tcp,
            None => Transport::Pipe,
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Transport::Pipe => "pipe",
            Transport::Tcp => "tcp",
        }
    }
}

/// One request this server answers: its span, and what its duration is
/// recorded under.
pub(crate) struct Served {
    pub(crate) span: tracing::Span,
    attributes: Vec<KeyValue>,
    started: std::time::Instant,
}

impl Served {
    /// The server span of `method` (of `tool`, for a call), continuing the
    /// trace the request's `_meta` carries. `known` says whether the host
    /// has that tool: the metric counts a name it has not as `(unknown)`,
    /// so a client naming tools at random cannot grow its series.
    pub(crate) fn start(
        method: &'static str,
        tool: Option<&str>,
        known: bool,
        context: &RequestContext<RoleServer>,
    ) -> Served {
        let transport = Transport::of(context);
        let version = context.protocol_version().map(|v| v.to_string());
        let session = context
            .extensions
            .get::<::http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let span = tracing::info_span!(
            "mcp_request",
            otel.name = %match tool {
                Some(tool) => format!("{method} {tool}"),
                None => method.to_string(),
            },
            otel.kind = "server",
            otel.status_code = Empty,
            mcp.method.name = method,
            gen_ai.tool.name = tool,
            gen_ai.operation.name = tool.map(|_| "execute_tool"),
            mcp.protocol.version = version.as_deref(),
            mcp.session.id = session.as_deref(),
            jsonrpc.request.id = %context.id,
            network.transport = transport.label(),
            error.type = Empty,
        );
        let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&MetaReader(&context.meta)));
        // Only a context that names a trace: otherwise the current one stays.
        if opentelemetry::trace::TraceContextExt::has_active_span(&parent) {
            let _ = span.set_parent(parent);
        }
        let mut attributes =
            vec![KeyValue::new("mcp.method.name", method), KeyValue::new("network.transport", transport.label())];
        if let Some(tool) = tool {
            let label = if known { tool.to_string() } else { toolhost::UNKNOWN_TOOL.to_string() };
            attributes.push(KeyValue::new("gen_ai.tool.name", label));
        }
        if let Some(version) = version {
            attributes.push(KeyValue::new("mcp.protocol.version", version));
        }
        Served { span, attributes, started: std::time::Instant::now() }
    }

    /// Records the end: `error` is the conventions' `error.type` of a
    /// failed request (`tool_error` for a call whose result is an error, a
    /// JSON-RPC error's code otherwise).
    pub(crate) fn end(mut self, error: Option<String>) {
        if let Some(error) = error {
            self.span.record("otel.status_code", "error");
            self.span.record("error.type", error.as_str());
            self.attributes.push(KeyValue::new("error.type", error));
        }
        DURATIONS.server.record(self.started.elapsed().as_secs_f64(), &self.attributes);
    }
}

/// The client span of a call to `tool` of the MCP server `server`: a child
/// of the span current here (the call's).
pub(crate) fn client_span(server: &str, tool: &str, transport: &'static str) -> tracing::Span {
    tracing::info_span!(
        "mcp_client_request",
        otel.name = %format_args!("tools/call {tool}"),
        otel.kind = "client",
        otel.status_code = Empty,
        mcp.method.name = "tools/call",
        gen_ai.tool.name = tool,
        gen_ai.operation.name = "execute_tool",
        network.transport = transport,
        server.address = server,
        error.type = Empty,
    )
}

/// Records the end of a client call of `tool` that took `took`.
pub(crate) fn client_end(
    span: &tracing::Span,
    tool: &str,
    transport: &'static str,
    took: Duration,
    error: Option<&str>,
) {
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", "tools/call"),
        KeyValue::new("gen_ai.tool.name", tool.to_string()),
        KeyValue::new("network.transport", transport),
    ];
    if let Some(error) = error {
        span.record("otel.status_code", "error");
        span.record("error.type", error);
        attributes.push(KeyValue::new("error.type", error.to_string()));
    }
    DURATIONS.client.record(took.as_secs_f64(), &attributes);
}

/// Writes `span`'s context into a request's `_meta`, for the server it
/// goes to to continue the trace.
pub(crate) fn inject(span: &tracing::Span, meta: &mut RequestMetaObject) {
    let context = span.context();
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&context, &mut MetaWriter(meta)));
}

/// Reads the trace context keys of a request's `_meta`.
struct MetaReader<'m>(&'m RequestMetaObject);

impl Extractor for MetaReader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.0.0.get(key).and_then(serde_json::Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        CONTEXT_KEYS.into_iter().filter(|k| self.0.0.0.contains_key(*k)).collect()
    }
}

struct MetaWriter<'m>(&'m mut RequestMetaObject);

impl Injector for MetaWriter<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.0.0.insert(key.to_string(), serde_json::Value::String(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::propagation::TextMapPropagator;
    use opentelemetry::trace::TraceContextExt;

    #[test]
    fn trace_context_goes_through_meta_both_ways() {
        let w3c = opentelemetry_sdk::propagation::TraceContextPropagator::new();
        let mut meta = RequestMetaObject::default();
        meta.0
            .0
            .insert("traceparent".into(), serde_json::json!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
        meta.0.0.insert("progressToken".into(), serde_json::json!(3));
        let context = w3c.extract(&MetaReader(&meta));
        let span = context.span();
        let ids = span.span_context();
        assert_eq!(ids.trace_id().to_string(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(MetaReader(&meta).keys(), ["traceparent"]);
        let mut out = RequestMetaObject::default();
        w3c.inject_context(&context, &mut MetaWriter(&mut out));
        assert_eq!(out.get_traceparent(), Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
    }
}
