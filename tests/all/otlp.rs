//! An OTLP receiver for the tests: what a Collector's `otlp` receiver
//! accepts, over HTTP/protobuf (`POST /v1/traces`, `/v1/metrics`) or gRPC
//! (the collector services), decoded with the official OpenTelemetry
//! protobuf definitions (`opentelemetry-proto`), and kept for assertions.

use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{ExportMetricsServiceRequest, ExportMetricsServiceResponse};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message as _;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One received span, flattened.
#[derive(Clone, Debug)]
pub struct Span {
    pub service: String,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    pub name: String,
    /// The protobuf's `SpanKind` (2 server, 3 client, 1 internal).
    pub kind: i32,
    pub attributes: BTreeMap<String, String>,
    /// The status code (2 is error).
    pub status: i32,
}

impl Span {
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

#[derive(Default)]
struct Received {
    spans: Vec<Span>,
    /// Metric name → the attributes of each data point received.
    metrics: BTreeMap<String, Vec<BTreeMap<String, String>>>,
    requests: usize,
}

/// The receiver; it stops with the test.
#[derive(Clone, Default)]
pub struct Receiver {
    received: Arc<Mutex<Received>>,
}

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter().map(|kv| (kv.key.clone(), text(kv.value.as_ref()))).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Receiver {
    fn take_traces(&self, request: ExportTraceServiceRequest) {
        let mut received = self.received.lock().unwrap();
        received.requests += 1;
        for resource_spans in request.resource_spans {
            let resource = resource_spans.resource.map(|r| attributes(&r.attributes)).unwrap_or_default();
            let service = resource.get("service.name").cloned().unwrap_or_default();
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    received.spans.push(Span {
                        service: service.clone(),
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_span_id: hex(&span.parent_span_id),
                        name: span.name,
                        kind: span.kind,
                        attributes: attributes(&span.attributes),
                        status: span.status.map_or(0, |s| s.code),
                    });
                }
            }
        }
    }

    fn take_metrics(&self, request: ExportMetricsServiceRequest) {
        let mut received = self.received.lock().unwrap();
        received.requests += 1;
        for resource_metrics in request.resource_metrics {
            for scope in resource_metrics.scope_metrics {
                for metric in scope.metrics {
                    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
                    let points: Vec<BTreeMap<String, String>> = match &metric.data {
                        Some(Data::Sum(sum)) => sum.data_points.iter().map(|p| attributes(&p.attributes)).collect(),
                        Some(Data::Gauge(gauge)) => {
                            gauge.data_points.iter().map(|p| attributes(&p.attributes)).collect()
                        }
                        Some(Data::Histogram(h)) => h.data_points.iter().map(|p| attributes(&p.attributes)).collect(),
                        _ => Vec::new(),
                    };
                    received.metrics.entry(metric.name).or_default().extend(points);
                }
            }
        }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.received.lock().unwrap().spans.clone()
    }

    /// The names of the metrics received so far.
    pub fn metric_names(&self) -> Vec<String> {
        self.received.lock().unwrap().metrics.keys().cloned().collect()
    }

    /// The values attribute `key` had in the data points of `metric`.
    pub fn metric_values(&self, metric: &str, key: &str) -> Vec<String> {
        let received = self.received.lock().unwrap();
        let points = received.metrics.get(metric).into_iter().flatten();
        let mut values: Vec<String> = points.filter_map(|p| p.get(key).cloned()).collect();
        values.sort();
        values.dedup();
        values
    }

    /// Waits until `ready` holds of the spans, or fails saying what came.
    #[track_caller]
    pub fn wait_for(&self, what: &str, within: Duration, ready: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let until = Instant::now() + within;
        loop {
            let spans = self.spans();
            if ready(&spans) {
                return spans;
            }
            assert!(Instant::now() < until, "{what}: not among the {} spans received:\n{spans:#?}", spans.len());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Serves OTLP over HTTP/protobuf on a port of its own; the endpoint to
    /// give `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn http() -> (Receiver, String) {
        let receiver = Receiver::default();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let serving = receiver.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let receiver = serving.clone();
                std::thread::spawn(move || receiver.serve_connection(stream));
            }
        });
        (receiver, endpoint)
    }

    /// One HTTP/1.1 connection: requests with a `Content-Length`, each
    /// answered `200` with an empty export response.
    fn serve_connection(&self, stream: std::net::TcpStream) {
        use std::io::{BufRead as _, Read as _, Write as _};
        let mut reader = std::io::BufReader::new(stream.try_clone().expect("clone"));
        let mut writer = stream;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let path = line.split_whitespace().nth(1).unwrap_or_default().to_string();
            let mut length = 0;
            loop {
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                if line.trim().is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.trim().eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                return;
            }
            let reply = match path.as_str() {
                "/v1/traces" => {
                    let request = ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP trace export");
                    self.take_traces(request);
                    ExportTraceServiceResponse::default().encode_to_vec()
                }
                "/v1/metrics" => {
                    let request = ExportMetricsServiceRequest::decode(body.as_slice()).expect("an OTLP metric export");
                    self.take_metrics(request);
                    ExportMetricsServiceResponse::default().encode_to_vec()
                }
                other => panic!("an OTLP export to an unknown path: {other}"),
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: {}\r\n\r\n",
                reply.len()
            );
            if writer.write_all(head.as_bytes()).and_then(|()| writer.write_all(&reply)).is_err() {
                return;
            }
        }
    }

    /// Serves OTLP over gRPC (the collector's services as tonic generates
    /// them, on HTTP/2) on a port of its own; the endpoint to give
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn grpc() -> (Receiver, String) {
        let receiver = Receiver::default();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        listener.set_nonblocking(true).unwrap();
        let (traces, metrics) =
            (TraceServiceServer::new(receiver.clone()), MetricsServiceServer::new(receiver.clone()));
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let Ok((stream, _)) = listener.accept().await else { continue };
                    let (traces, metrics) = (traces.clone(), metrics.clone());
                    // Each request to the service its path names.
                    let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                        use tower_service::Service as _;
                        let (mut traces, mut metrics) = (traces.clone(), metrics.clone());
                        async move {
                            if request.uri().path().starts_with("/opentelemetry.proto.collector.trace.") {
                                traces.call(request).await
                            } else {
                                metrics.call(request).await
                            }
                        }
                    });
                    tokio::spawn(async move {
                        let io = hyper_util::rt::TokioIo::new(stream);
                        let _ = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                            .serve_connection(io, service)
                            .await;
                    });
                }
            });
        });
        (receiver, endpoint)
    }
}

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.take_traces(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        self.take_metrics(request.into_inner());
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}
