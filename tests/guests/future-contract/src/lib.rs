//! A tool built against contract 2.0.0, a major version this host does not run.

wit_bindgen::generate!({ world: "plugin", path: "wit" });

use exports::toolhost::tool::tool::{CallContext, Guest, PermissionDecision};
use toolhost::tool::types::{InterruptBehavior, ToolError, ToolInfo, ToolOutput};

struct Future;

impl Guest for Future {
    fn info() -> ToolInfo {
        ToolInfo {
            name: "Future".into(),
            aliases: vec![],
            description: "From the future.".into(),
            prompt: "From the future.".into(),
            search_hint: None,
            input_schema: r#"{"type":"object"}"#.into(),
            output_schema: None,
            max_result_size_chars: None,
            should_defer: false,
            always_load: false,
            interrupt_behavior: InterruptBehavior::Block,
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
    fn validate_input(_: String, _: CallContext) -> Result<(), ToolError> {
        Ok(())
    }
    fn check_permissions(_: String, _: CallContext) -> PermissionDecision {
        PermissionDecision::Passthrough
    }
    fn call(_: String, _: CallContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput { content: vec![], structured: None, is_error: false })
    }
}

export!(Future);
