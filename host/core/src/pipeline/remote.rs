//! A call of a tool another program serves (an MCP server's): the same
//! steps as a component's — PreToolUse hooks, the permission decision and
//! its audit line, the Post hooks, an oversized result persisted — with the
//! call itself sent to the server under the call's deadline, cancellation
//! and progress, and the server's answer read into a result.

use super::call::{CallOptions, Pipeline, ToolUse};
use super::result::{Content, ToolResult};
use super::run::{Run, wit_mode};
use crate::contract::bindings::CallContext;
use crate::registry::{LoadedTool, Remote, RemoteCall};
use crate::session::Session;
use serde_json::Value;
use std::sync::Arc;

/// Most content blocks of one answer that are read; the rest are dropped
/// with a note.
const MAX_BLOCKS: usize = 1_000;

impl Pipeline {
    /// Steps 4 to 8 of a call of the remote `tool` (steps 1 and 2 are done).
    pub(super) fn run_remote(
        &self,
        session: &Arc<Session>,
        tool: &LoadedTool,
        tool_use: &ToolUse,
        options: &CallOptions,
        span: &tracing::Span,
    ) -> ToolResult {
        super::trace::record_instance(span, "remote");
        let limits = self.sandbox.limits();
        let ctx = CallContext {
            tool_use_id: tool_use.id.clone(),
            session_id: session.id().to_string(),
            cwd: self.cwd_text.clone(),
            working_dirs: self.working_text.clone(),
            read_only_dirs: Vec::new(),
            mode: wit_mode(self.mode),
        };
        let mut run = Run {
            pipeline: self,
            session,
            tool,
            id: &tool_use.id,
            span,
            instance: None,
            progress: options.progress.clone(),
            cancel: options.cancel.clone(),
            limits,
            ctx,
            input_text: tool_use.input.to_string(),
            input: tool_use.input.clone(),
            rules: self.policy.rules(),
            called: false,
            context: Vec::new(),
            stop: None,
            approver: options.approver.clone().or_else(|| self.approver.clone()),
            identity: options.identity.clone(),
            parent: options.parent.clone(),
            catalog: None,
            warm: None,
            faulted: false,
        };
        let result = run.steps().unwrap_or_else(|e| {
            ToolResult::error(&tool_use.id, format!("{} failed: {e:#}. The host keeps serving.", tool.spec.name))
        });
        run.finish(result)
    }
}

impl Run<'_> {
    /// Step 6 for a remote tool: the server's answer as a result.
    pub(super) fn call_remote(&mut self, remote: &Remote) -> ToolResult {
        let call = RemoteCall {
            tool_use_id: self.id.to_string(),
            timeout: self.limits.timeout,
            cancel: self.cancel.clone(),
            progress: self.progress.clone(),
        };
        match remote.caller.call(&remote.tool, &self.input, &call) {
            Ok(answer) => from_call_result(self.id, &answer),
            Err(why) => self.error(why),
        }
    }
}

/// An MCP `CallToolResult` (as JSON) as a result: text blocks as text,
/// images as images, PDFs as documents, embedded text resources as their
/// text, anything else named in a line of text; `structuredContent` as the
/// structured output (and as the text when nothing else was sent);
/// `isError` as the error flag. Whatever the server sends, the answer is a
/// result.
pub fn from_call_result(id: &str, answer: &Value) -> ToolResult {
    let mut content = Vec::new();
    let blocks = answer.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for block in blocks.iter().take(MAX_BLOCKS) {
        let field = |key: &str| block.get(key).and_then(Value::as_str);
        let mime = field("mimeType").unwrap_or("application/octet-stream");
        match field("type") {
            Some("text") => content.push(Content::Text(field("text").unwrap_or_default().to_string())),
            Some("image") if field("data").is_some() => content.push(Content::Image {
                media_type: mime.to_string(),
                data: field("data").unwrap_or_default().to_string(),
            }),
            Some("resource") => {
                let resource = block.get("resource").unwrap_or(&Value::Null);
                let part = |key: &str| resource.get(key).and_then(Value::as_str);
                let uri = part("uri").unwrap_or("(no uri)");
                let mime = part("mimeType").unwrap_or("application/octet-stream");
                match (part("text"), part("blob")) {
                    (Some(text), _) => content.push(Content::Text(text.to_string())),
                    (None, Some(blob)) if mime == "application/pdf" => {
                        content.push(Content::Document { media_type: mime.to_string(), data: blob.to_string() })
                    }
                    (None, Some(blob)) if mime.starts_with("image/") => {
                        content.push(Content::Image { media_type: mime.to_string(), data: blob.to_string() })
                    }
                    (None, blob) => content.push(Content::Text(format!(
                        "[resource {uri} ({mime}, {} bytes of base64) not shown]",
                        blob.map_or(0, str::len)
                    ))),
                }
            }
            Some("resource_link") => {
                let name = field("name").unwrap_or_default();
                let uri = field("uri").unwrap_or_default();
                content.push(Content::Text(format!("[resource link] {name} {uri}").trim_end().to_string()));
            }
            Some("audio") => content.push(Content::Text(format!(
                "[audio ({mime}, {} bytes of base64) not shown]",
                field("data").map_or(0, str::len)
            ))),
            other => content.push(Content::Text(format!(
                "[a content block of type {} not shown]",
                other.map_or_else(|| "(none)".to_string(), |t| format!("`{}`", t.chars().take(64).collect::<String>()))
            ))),
        }
    }
    if blocks.len() > MAX_BLOCKS {
        content.push(Content::Text(format!("[{} more content blocks not shown]", blocks.len() - MAX_BLOCKS)));
    }
    let structured = answer.get("structuredContent").filter(|s| !s.is_null()).cloned();
    if content.is_empty() {
        let text = match &structured {
            Some(s) => s.to_string(),
            None => "(the tool returned no content)".to_string(),
        };
        content.push(Content::Text(text));
    }
    let is_error = answer.get("isError").and_then(Value::as_bool).unwrap_or(false);
    ToolResult { tool_use_id: id.to_string(), content, is_error, structured, stop: None, usage: None }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_of_block_becomes_content() {
        let answer = json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
                {"type": "resource", "resource": {"uri": "file:///b", "blob": "aGk=", "mimeType": "application/zip"}},
                {"type": "resource_link", "uri": "file:///c", "name": "c"},
                {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
                {"type": "video"},
                {"no": "type"}
            ],
            "isError": true
        });
        let result = from_call_result("t1", &answer);
        assert!(result.is_error);
        assert_eq!(result.content.len(), 8);
        assert_eq!(result.content[0], Content::Text("hello".into()));
        assert!(matches!(&result.content[1], Content::Image { media_type, .. } if media_type == "image/png"));
        assert_eq!(result.content[2], Content::Text("inside".into()));
        assert!(result.text().contains("[resource file:///b (application/zip, 4 bytes of base64) not shown]"));
        assert!(result.text().contains("[resource link] c file:///c"));
        assert!(result.text().contains("type `video`") && result.text().contains("type (none)"));
    }

    #[test]
    fn structured_content_alone_is_the_text_and_anything_is_a_result() {
        let result = from_call_result("t", &json!({"content": [], "structuredContent": {"n": 1}}));
        assert_eq!((result.text().as_str(), result.structured), ("{\"n\":1}", Some(json!({"n": 1}))));
        for odd in [json!(null), json!([1]), json!({"content": "x"}), json!({"isError": "yes"})] {
            let result = from_call_result("t", &odd);
            assert!(!result.content.is_empty() && !result.is_error, "{odd}");
        }
    }
}
