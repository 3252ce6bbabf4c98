//! A tool built against the frozen contract 1.0.0 (`wit/v1.0.0`), the way a
//! component published before 1.1.0 was: the host must keep loading and
//! running it, its imports (progress, session, policy) included.

wit_bindgen::generate!({ world: "plugin", path: "../../../wit/v1.0.0" });

use exports::toolhost::tool::tool::{CallContext, Guest, PermissionDecision};
use toolhost::tool::types::{ContentBlock, ErrorKind, InterruptBehavior, ToolError, ToolInfo, ToolOutput};
use toolhost::tool::{policy, progress, session};

struct Legacy;

fn text_of(input: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(input).ok()?;
    value.get("text")?.as_str().map(str::to_owned)
}

impl Guest for Legacy {
    fn info() -> ToolInfo {
        ToolInfo {
            name: "Legacy".into(),
            aliases: vec![],
            description: "Echoes its text; built against contract 1.0.0.".into(),
            prompt: "Echoes its text.".into(),
            search_hint: None,
            input_schema: r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#.into(),
            output_schema: None,
            max_result_size_chars: Some(10_000),
            should_defer: false,
            always_load: false,
            interrupt_behavior: InterruptBehavior::Block,
            read_only_hint: Some(true),
            destructive_hint: None,
        }
    }
    fn is_enabled() -> bool {
        true
    }
    fn is_concurrency_safe(_: String) -> bool {
        true
    }
    fn is_read_only(_: String) -> bool {
        true
    }
    fn is_destructive(_: String) -> bool {
        false
    }
    fn validate_input(input: String, _: CallContext) -> Result<(), ToolError> {
        match text_of(&input) {
            Some(t) if t == "refuse" => {
                Err(ToolError { kind: ErrorKind::InvalidInput, message: "1.0.0 refuses this text".into() })
            }
            _ => Ok(()),
        }
    }
    fn check_permissions(_: String, _: CallContext) -> PermissionDecision {
        PermissionDecision::Passthrough
    }
    fn call(input: String, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let text = text_of(&input).unwrap_or_default();
        progress::report("legacy progress", None);
        let calls = session::get("calls").and_then(|c| c.parse::<u32>().ok()).unwrap_or(0) + 1;
        let _ = session::set("calls", &calls.to_string());
        let hidden = policy::hidden_paths().len();
        Ok(ToolOutput {
            content: vec![ContentBlock::Text(format!(
                "{text} (call {calls}, {hidden} hidden, id {})",
                ctx.tool_use_id
            ))],
            structured: None,
            is_error: false,
        })
    }
}

export!(Legacy);
