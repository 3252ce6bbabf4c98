//! A tool that misbehaves while it is loaded: in `info` it panics (as
//! built), or, once a test patches the mode in [`MODE`] inside the
//! component file, waits, spins, or declares more than the host accepts.
//! The host must leave it out (or cut it) and keep serving the others.

wit_bindgen::generate!({ world: "plugin", path: "../../../wit" });

use exports::toolhost::tool::tool::{CallContext, Guest, PermissionDecision};
use toolhost::tool::types::{ContentBlock, InputRoles, InterruptBehavior, ToolError, ToolInfo, ToolOutput};

/// The mode, six bytes after the marker, NUL-padded. Tests rewrite these
/// bytes in the built component (same length) to pick another mode.
#[used]
static MODE: [u8; 32] = *b"toolhost-broken-info-mode:panic\0";

fn mode() -> String {
    // Volatile, so the compiler cannot fold the constant into the code.
    let bytes: [u8; 32] = unsafe { core::ptr::read_volatile(&MODE) };
    String::from_utf8_lossy(&bytes[26..]).trim_end_matches('\0').to_string()
}

struct Broken;

fn nested(levels: usize) -> String {
    let mut schema = String::from(r#"{"type":"string"}"#);
    for _ in 0..levels {
        schema = format!(r#"{{"type":"object","properties":{{"x":{schema}}}}}"#);
    }
    schema
}

impl Guest for Broken {
    fn info() -> ToolInfo {
        let mut info = ToolInfo {
            name: "Broken".into(),
            aliases: vec![],
            description: "Cannot describe itself.".into(),
            prompt: "Cannot describe itself.".into(),
            search_hint: None,
            input_schema: r#"{"type":"object","properties":{}}"#.into(),
            output_schema: None,
            max_result_size_chars: None,
            should_defer: false,
            always_load: false,
            interrupt_behavior: InterruptBehavior::Block,
            read_only_hint: None,
            destructive_hint: None,
            input_roles: InputRoles { paths: vec![], command: None, addresses: vec![] },
            cancels_siblings_on_failure: false,
            reuse_instance: false,
            concurrency_safe_hint: None,
            validates_input: true,
            checks_permissions: true,
        };
        match mode().as_str() {
            "sleep" => std::thread::sleep(std::time::Duration::from_secs(3600)),
            "spin" => loop {
                std::hint::black_box(0u8);
            },
            "alloc" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 16 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            // 50 MB of description and prompt.
            "huge" => {
                info.description = "d".repeat(50 << 20);
                info.prompt = "p".repeat(1 << 20);
                info.search_hint = Some("h".repeat(10_000));
            }
            "alias" => info.aliases = (0..100).map(|i| format!("Broken{i}")).collect(),
            "deep" => info.input_schema = nested(40),
            "big" => {
                let props: Vec<String> = (0..5_000).map(|i| format!(r#""field{i}":{{"type":"string"}}"#)).collect();
                info.input_schema = format!(r#"{{"type":"object","properties":{{{}}}}}"#, props.join(","));
            }
            "name" => info.name = "has spaces and dots.".into(),
            "ok" => {}
            _ => panic!("broken on purpose while describing itself"),
        }
        info
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
        Ok(ToolOutput {
            content: vec![ContentBlock::Text(format!("loaded in mode {}", mode()))],
            structured: None,
            is_error: false,
        })
    }
}

export!(Broken);
