//! A call of an MCP server's tool, from the pipeline's thread (where the
//! call's span is current) to the client's runtime and back: bounded as a
//! whole, in a client span that the request carries on to the server.

use super::{START_TIMEOUT, Server};
use crate::telemetry;
use serde_json::Value;
use std::sync::{Arc, Weak};
use toolhost::remote::{RemoteCall, RemoteCaller};
use tracing::Instrument;

/// A server's calls, from the pipeline's thread to the client's runtime.
pub(super) struct Caller {
    pub(super) server: Weak<Server>,
}

impl RemoteCaller for Caller {
    fn call(&self, tool: &str, input: &Value, call: &RemoteCall) -> Result<Value, String> {
        let server = self.server.upgrade().ok_or("the host is shutting down")?;
        let shared = server.shared.get().and_then(Weak::upgrade).ok_or("the host is shutting down")?;
        let (tx, rx) = std::sync::mpsc::channel();
        let (tool, input, call) = (tool.to_string(), input.clone(), call.clone());
        let task = Arc::clone(&server);
        // A child of the call's span, here on the call's thread; the request
        // carries it on to the server.
        let transport = server.transport();
        let span = telemetry::client_span(&server.name, &tool, transport);
        let started = std::time::Instant::now();
        let traced = span.clone();
        let exchange = async move {
            // A bound on the whole call, starting the server and queueing the
            // request included (the call's own deadline starts once sent).
            let bound = call.timeout + START_TIMEOUT;
            let answer = match tokio::time::timeout(bound, task.call(&tool, input, &call)).await {
                Ok(answer) => answer,
                Err(_) => Err(format!(
                    "{tool} got no answer from the MCP server {} within {} s; the call was stopped.",
                    task.name,
                    bound.as_secs()
                )),
            };
            let failed = match &answer {
                Ok(result) if result.get("isError").and_then(Value::as_bool) == Some(true) => Some("tool_error"),
                Ok(_) => None,
                Err(_) => Some("no_answer"),
            };
            telemetry::client_end(&traced, &tool, transport, started.elapsed(), failed);
            let _ = tx.send(answer);
        };
        shared.runtime.spawn(exchange.instrument(span));
        rx.recv().unwrap_or_else(|_| Err(format!("the call to the MCP server {} was dropped", server.name)))
    }
}
