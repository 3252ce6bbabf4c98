//! The HTTP front's answer to a `tools/call` over a quota of its identity:
//! `429 Too Many Requests`, with `Retry-After` and a JSON-RPC error that
//! says which quota and when to try again, before the call starts. (The
//! call itself is counted against the quotas when it runs, wherever it
//! came from: over stdio, or a request that got in just before the quota
//! was spent, it is refused with an error result saying the same.)

use bytes::Bytes;
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use toolhost::Host;

/// The largest request body read to look for a call (what rmcp reads too).
pub(crate) const MAX_BODY: usize = 4 << 20;

/// The JSON-RPC error code of a refusal (in the range left to servers).
const OVER_QUOTA: i64 = -32029;

/// The tool and request id of `body`, if it is one `tools/call` request.
fn tool_call(body: &[u8]) -> Option<(String, Value)> {
    let message: Value = serde_json::from_slice(body).ok()?;
    if message.get("method")?.as_str()? != "tools/call" {
        return None;
    }
    let tool = message.get("params")?.get("name")?.as_str()?.to_string();
    Some((tool, message.get("id").cloned().unwrap_or(Value::Null)))
}

/// The answer to `body` from `who`, if it calls a tool over one of `who`'s
/// quotas.
pub(crate) async fn refusal(
    host: &Host,
    who: &str,
    session: Option<&str>,
    body: &Bytes,
) -> Option<http::Response<crate::http::Body>> {
    let (tool, id) = tool_call(body)?;
    let (host, who, session) = (host.clone(), who.to_string(), session.unwrap_or("-").to_string());
    let request_id = match &id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    // The quotas' store may be Redis: asked off the async threads.
    let refusal = crate::blocking(move || Ok(host.quota_refusal(Some(&who), &tool, &session, &request_id)))
        .await
        .ok()
        .flatten()?;
    let secs = refusal.retry_after_secs();
    let message = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": OVER_QUOTA,
            "message": refusal.to_string(),
            "data": {"quota": refusal.kind.setting(), "limit": refusal.limit, "retryAfterSeconds": secs},
        },
    });
    let mut response = http::Response::new(http_body_util::Full::new(Bytes::from(message.to_string())).boxed());
    *response.status_mut() = http::StatusCode::TOO_MANY_REQUESTS;
    let headers = response.headers_mut();
    headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    headers.insert(http::header::RETRY_AFTER, http::HeaderValue::from(secs));
    Some(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_single_tools_call_names_a_tool() {
        let call = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"Read","arguments":{}}}"#;
        assert_eq!(tool_call(call), Some(("Read".into(), json!(7))));
        for other in [
            &br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#[..],
            br#"[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"Read"}}]"#,
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":3}}"#,
            b"not json",
            b"",
        ] {
            assert_eq!(tool_call(other), None, "{}", String::from_utf8_lossy(other));
        }
    }
}
