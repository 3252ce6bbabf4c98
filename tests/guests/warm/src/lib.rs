//! A tool that declares `reuse-instance` and that it validates its input and
//! checks its permissions, so the host must keep asking both on every call
//! (here they refuse and deny on request) and keep its warm instance between
//! calls (its module-state counter shows it).

wit_bindgen::generate!({ world: "plugin", path: "../../../wit" });

use exports::toolhost::tool::tool::{CallContext, Guest, PermissionDecision};
use std::sync::atomic::{AtomicU32, Ordering};
use toolhost::tool::types::{ContentBlock, ErrorKind, InputRoles, InterruptBehavior, ToolError, ToolInfo, ToolOutput};

struct Warm;

/// Calls this instance served: kept in module state on purpose, to show
/// whether an instance was reused.
static SERVED: AtomicU32 = AtomicU32::new(0);

fn text(input: &str) -> String {
    serde_json::from_str::<serde_json::Value>(input)
        .ok()
        .and_then(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_owned))
        .unwrap_or_default()
}

impl Guest for Warm {
    fn info() -> ToolInfo {
        ToolInfo {
            name: "Warm".into(),
            aliases: vec![],
            description: "Counts the calls its instance served.".into(),
            prompt: "Counts the calls its instance served.".into(),
            search_hint: None,
            input_schema: r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#.into(),
            output_schema: None,
            max_result_size_chars: None,
            should_defer: false,
            always_load: false,
            interrupt_behavior: InterruptBehavior::Cancel,
            read_only_hint: Some(true),
            destructive_hint: None,
            input_roles: InputRoles { paths: vec![], command: None, addresses: vec![] },
            cancels_siblings_on_failure: false,
            reuse_instance: true,
            concurrency_safe_hint: None,
            validates_input: true,
            checks_permissions: true,
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
    fn validate_input(input: String, _: CallContext) -> Result<(), ToolError> {
        match text(&input).as_str() {
            "refuse" => Err(ToolError { kind: ErrorKind::InvalidInput, message: "validated away".into() }),
            _ => Ok(()),
        }
    }
    fn check_permissions(input: String, _: CallContext) -> PermissionDecision {
        match text(&input).as_str() {
            "deny" => PermissionDecision::Deny("denied by the tool".into()),
            _ => PermissionDecision::Passthrough,
        }
    }
    fn call(_: String, _: CallContext) -> Result<ToolOutput, ToolError> {
        let served = SERVED.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(ToolOutput {
            content: vec![ContentBlock::Text(format!("served {served}"))],
            structured: None,
            is_error: false,
        })
    }
}

export!(Warm);
