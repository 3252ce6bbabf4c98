//! A tool for scheduler tests: how long it runs, whether it is
//! concurrency-safe and whether it fails come from its input, and it reports
//! when it started and ended (wall clock, microseconds since the epoch), so
//! tests check overlap from the tool's own timestamps.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use toolhost_sdk::{Context, Deserialize, JsonSchema, Output, Tool, ToolError, export_tool, serde_json};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SleeperInput {
    /// A name for the call, echoed in the result.
    label: String,
    /// How long to run, in milliseconds.
    #[serde(default)]
    ms: u64,
    /// Whether the call may run beside others.
    #[serde(default)]
    safe: bool,
    /// End with an error instead of a result.
    #[serde(default)]
    fail: bool,
    /// Report progress every this many milliseconds (0: never).
    #[serde(default)]
    progress_ms: u64,
}

struct Sleeper;

fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

impl Tool for Sleeper {
    type Input = SleeperInput;
    const NAME: &'static str = "Sleeper";
    const DESCRIPTION: &'static str = "Sleeps as long as asked and reports when it ran.";

    fn is_read_only(input: &SleeperInput) -> bool {
        input.safe
    }
    fn is_concurrency_safe(input: &SleeperInput) -> bool {
        input.safe
    }

    fn call(input: SleeperInput, ctx: &Context) -> Result<Output, ToolError> {
        let start_us = now_us();
        let started = Instant::now();
        let total = Duration::from_millis(input.ms);
        let mut next_progress = Duration::from_millis(input.progress_ms);
        // Short sleeps, so a cancellation (checked when the guest runs) stops
        // it within about a millisecond.
        while started.elapsed() < total {
            std::thread::sleep(Duration::from_millis(1).min(total.saturating_sub(started.elapsed())));
            if input.progress_ms > 0 && started.elapsed() >= next_progress {
                ctx.progress(&format!("{} at {} ms", input.label, started.elapsed().as_millis()));
                next_progress += Duration::from_millis(input.progress_ms);
            }
        }
        let end_us = now_us();
        let report = serde_json::json!({"label": input.label, "start_us": start_us, "end_us": end_us});
        if input.fail {
            return Err(ToolError::invalid_input(format!("{} failed as asked: {report}", input.label)));
        }
        Ok(Output::text(report.to_string()).with_structured(report))
    }
}

export_tool!(Sleeper);
