//! The `Script` tool (code mode): the model writes one JavaScript program
//! that calls the other tools (`await tools.Read({...})`) and returns only
//! what matters. The program runs here, in this component, with one
//! capability: starting calls of the other tools, which the host runs
//! through its whole pipeline. The TypeScript declarations of the callable
//! tools are added to the prompt by the host, which knows the pool.

pub mod engine;

use engine::{Calls, Finished, Outcome, Value};
use toolhost_sdk::{
    Context, Deserialize, InterruptBehavior, JsonSchema, Output, Permission, Tool, ToolError, export_tool, serde_json,
};

/// Input of `Script`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptInput {
    /// The JavaScript program to run. Call tools as `await tools.NAME({...})`; the value it returns (or its last expression) is the result.
    pub code: String,
}

pub struct Script;

impl Tool for Script {
    type Input = ScriptInput;
    const NAME: &'static str = "Script";
    const DESCRIPTION: &'static str =
        "Runs a JavaScript program that calls the other tools and returns only what it computes from their results.";
    const READ_ONLY_HINT: Option<bool> = Some(false);
    // What it may do is what its inner calls may do, each checked on its own.
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(false);
    const INTERRUPT_BEHAVIOR: InterruptBehavior = InterruptBehavior::Cancel;
    const VALIDATES_INPUT: bool = false;

    fn prompt() -> String {
        include_str!("prompt.md").into()
    }

    fn search_hint() -> Option<String> {
        Some("run a program that calls several tools at once (code mode)".into())
    }

    // Running the program needs no approval: it can do nothing but call
    // tools, and each call is approved (or not) on its own.
    fn check_permissions(_: &ScriptInput, _: &Context) -> Permission {
        Permission::Allow(None)
    }

    fn call(input: ScriptInput, _: &Context) -> Result<Output, ToolError> {
        let (outcome, _) = engine::run(&input.code, Box::new(HostCalls));
        answer(outcome)
    }
}

/// The model's view of an outcome: the result (text as it is, anything else
/// as JSON), then what the script printed.
pub fn answer(outcome: Outcome) -> Result<Output, ToolError> {
    let mut console = outcome.console;
    if outcome.console_cut {
        console.push_str(&format!("\n[console output cut at {} KiB]\n", engine::MAX_CONSOLE >> 10));
    }
    let with_console = |text: String| {
        if console.is_empty() { text } else { format!("{text}\n\nConsole output:\n{}", console.trim_end()) }
    };
    match outcome.result {
        Ok(value) => {
            let (text, structured) = match value {
                None => (
                    "The script finished without a result (return a value, or end with an expression).".into(),
                    serde_json::Value::Null,
                ),
                Some(Value::Text(text)) => (text.clone(), serde_json::Value::String(text)),
                Some(Value::Json(json)) => (serde_json::to_string_pretty(&json).unwrap_or_default(), json),
            };
            let structured = serde_json::json!({"result": structured, "console": console});
            Ok(Output::text(with_console(text)).with_structured(structured))
        }
        Err(message) => Err(ToolError::new(toolhost_sdk::ErrorKind::InvalidInput, with_console(message))),
    }
}

/// The host's `toolhost:script/tools`.
struct HostCalls;

#[cfg(target_arch = "wasm32")]
mod bindings {
    wit_bindgen::generate!({ world: "script-calls", path: "wit" });
}

#[cfg(target_arch = "wasm32")]
impl Calls for HostCalls {
    fn start(&mut self, name: &str, input: &str) -> Result<u32, String> {
        bindings::toolhost::script::tools::start(name, input)
    }

    fn next(&mut self) -> Option<Finished> {
        bindings::toolhost::script::tools::next().map(|f| Finished {
            id: f.id,
            is_error: f.is_error,
            text: f.text,
            structured: f.structured,
        })
    }
}

/// Natively there is no host: every call is refused.
#[cfg(not(target_arch = "wasm32"))]
impl Calls for HostCalls {
    fn start(&mut self, _: &str, _: &str) -> Result<u32, String> {
        Err("no host to call tools natively".into())
    }

    fn next(&mut self) -> Option<Finished> {
        None
    }
}

// Nothing but what the host links for it; the host's call limits (time,
// memory) bound the whole program, each inner call also its own tool's.
toolhost_sdk::requests!(r#"{}"#);

export_tool!(Script);
