//! A tool written with the SDK's `AsyncTool`: its checks and call are async
//! Rust functions, exported as the contract's `async-tool`, and it waits on
//! WASI 0.3's clock. `ms` is how long to wait; `forever` waits on a clock
//! that never fires, which only the call's deadline ends.

use toolhost_sdk::{AsyncTool, Context, Deserialize, JsonSchema, Output, Permission, ToolError, export_async_tool};

/// Input of `SdkAsync`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitInput {
    /// How long to wait, in milliseconds (at most 60000).
    pub ms: u64,
    /// Wait with no end instead.
    #[serde(default)]
    pub forever: bool,
}

pub struct SdkAsync;

impl AsyncTool for SdkAsync {
    type Input = WaitInput;
    const NAME: &'static str = "SdkAsync";
    const DESCRIPTION: &'static str = "Waits a while, asynchronously.";
    const READ_ONLY_HINT: Option<bool> = Some(true);
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(true);

    async fn validate_input(input: &WaitInput, _ctx: &Context) -> Result<(), ToolError> {
        // Awaited like the call: a check may wait too.
        wasip3::clocks::monotonic_clock::wait_for(1_000_000).await;
        if input.ms > 60_000 {
            return Err(ToolError::invalid_input(format!("{} ms is longer than a minute", input.ms)));
        }
        Ok(())
    }

    async fn check_permissions(_input: &WaitInput, _ctx: &Context) -> Permission {
        Permission::Passthrough
    }

    async fn call(input: WaitInput, ctx: &Context) -> Result<Output, ToolError> {
        if input.forever {
            wasip3::clocks::monotonic_clock::wait_for(u64::MAX).await;
        }
        for step in 1..=2 {
            ctx.progress(&format!("step {step}"));
            wasip3::clocks::monotonic_clock::wait_for(input.ms * 500_000).await;
        }
        Ok(Output::text(format!("waited {} ms", input.ms)))
    }
}

export_async_tool!(SdkAsync);
