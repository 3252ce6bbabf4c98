//! A tool built against the frozen contract 1.1.0 (`wit/v1.1.0`), the way a
//! component published before 1.2.0 was: the host must keep loading it with
//! what 1.1.0 declares (its input roles), and running it.

wit_bindgen::generate!({ world: "plugin", path: "../../../wit/v1.1.0" });

use exports::toolhost::tool::tool::{CallContext, Guest, PermissionDecision};
use toolhost::tool::types::{
    ContentBlock, InputRoles, InterruptBehavior, PathAccess, PathField, ToolError, ToolInfo, ToolOutput,
};
use toolhost::tool::{progress, session};

struct Legacy11;

impl Guest for Legacy11 {
    fn info() -> ToolInfo {
        ToolInfo {
            name: "Legacy11".into(),
            aliases: vec![],
            description: "Counts its calls; built against contract 1.1.0.".into(),
            prompt: "Counts its calls.".into(),
            search_hint: None,
            input_schema: r#"{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}"#.into(),
            output_schema: None,
            max_result_size_chars: None,
            should_defer: false,
            always_load: false,
            interrupt_behavior: InterruptBehavior::Cancel,
            read_only_hint: Some(true),
            destructive_hint: None,
            input_roles: InputRoles {
                paths: vec![PathField { field: "path".into(), access: PathAccess::Read }],
                command: None,
                addresses: vec![],
            },
            cancels_siblings_on_failure: false,
        }
    }
    fn is_enabled() -> bool {
        true
    }
    fn is_concurrency_safe(_: String) -> bool {
        false
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
        progress::report("legacy 1.1 progress", None);
        let calls = session::get("calls").and_then(|c| c.parse::<u32>().ok()).unwrap_or(0) + 1;
        let _ = session::set("calls", &calls.to_string());
        Ok(ToolOutput { content: vec![ContentBlock::Text(format!("call {calls}"))], structured: None, is_error: false })
    }
}

export!(Legacy11);
