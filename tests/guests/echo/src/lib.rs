//! The trivial tool: echoes its input. Third-party in tests and benchmarks.

use toolhost_sdk::{Context, Deserialize, JsonSchema, Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EchoInput {
    /// Text to echo back.
    text: String,
    /// Progress events to send first.
    #[serde(default)]
    progress: u32,
    /// Count this call in session state and report the count.
    #[serde(default)]
    count: bool,
}

struct Echo;

impl Tool for Echo {
    type Input = EchoInput;
    const NAME: &'static str = "Echo";
    const DESCRIPTION: &'static str = "Echoes its input.";
    const MAX_RESULT_SIZE_CHARS: Option<u64> = Some(1000);

    fn aliases() -> Vec<String> {
        vec!["Parrot".into()]
    }
    fn is_read_only(_: &EchoInput) -> bool {
        true
    }
    fn is_concurrency_safe(_: &EchoInput) -> bool {
        true
    }

    fn call(input: EchoInput, ctx: &Context) -> Result<Output, ToolError> {
        for i in 0..input.progress {
            ctx.progress(&format!("step {i}"));
        }
        if input.count {
            let n = ctx.session().get("calls").and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) + 1;
            ctx.session().set("calls", &n.to_string())?;
            return Ok(Output::text(format!("{} (call {n}; keys {:?})", input.text, ctx.session().keys(""))));
        }
        Ok(Output::text(input.text))
    }
}

export_tool!(Echo);
