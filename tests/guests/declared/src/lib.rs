//! A tool that declares every per-call answer in `tool-info`
//! (`concurrency-safe-hint`, `read-only-hint`, `validates-input: false`,
//! `checks-permissions: false`) and traps in each export it thereby tells
//! the host not to call: any call the host makes anyway fails.

wit_bindgen::generate!({ world: "plugin", path: "../../../wit" });

use exports::toolhost::tool::tool::{CallContext, Guest, PermissionDecision};
use toolhost::tool::types::{ContentBlock, InputRoles, InterruptBehavior, ToolError, ToolInfo, ToolOutput};

struct Declared;

fn asked(export: &str) -> ! {
    panic!("the host called {export}, which this tool declared it need not")
}

impl Guest for Declared {
    fn info() -> ToolInfo {
        ToolInfo {
            name: "Declared".into(),
            aliases: vec![],
            description: "Answers every per-call question once, in its info.".into(),
            prompt: "Echoes `text`.".into(),
            search_hint: None,
            input_schema: r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#.into(),
            output_schema: None,
            max_result_size_chars: None,
            should_defer: false,
            always_load: false,
            interrupt_behavior: InterruptBehavior::Cancel,
            read_only_hint: Some(true),
            concurrency_safe_hint: Some(true),
            destructive_hint: Some(false),
            input_roles: InputRoles { paths: vec![], command: None, addresses: vec![] },
            cancels_siblings_on_failure: false,
            reuse_instance: false,
            validates_input: false,
            checks_permissions: false,
        }
    }
    fn is_enabled() -> bool {
        true
    }
    fn is_concurrency_safe(_: String) -> bool {
        asked("is-concurrency-safe")
    }
    fn is_read_only(_: String) -> bool {
        asked("is-read-only")
    }
    fn is_destructive(_: String) -> bool {
        asked("is-destructive")
    }
    fn validate_input(_: String, _: CallContext) -> Result<(), ToolError> {
        asked("validate-input")
    }
    fn check_permissions(_: String, _: CallContext) -> PermissionDecision {
        asked("check-permissions")
    }
    fn call(input: String, _: CallContext) -> Result<ToolOutput, ToolError> {
        let value: serde_json::Value = serde_json::from_str(&input).unwrap_or_default();
        let text = value.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_string();
        Ok(ToolOutput { content: vec![ContentBlock::Text(text)], structured: None, is_error: false })
    }
}

export!(Declared);
