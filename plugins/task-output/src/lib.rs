//! The `BashOutput` tool: what a background command printed since last asked.

use toolhost_sdk::process::{self, ExitStatus};
use toolhost_sdk::{Context, Deserialize, ErrorKind, JsonSchema, Output, Tool, ToolError, export_tool};

/// Input of `BashOutput`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashOutputInput {
    /// The ID of the background shell to retrieve output from
    pub bash_id: String,
}

pub struct BashOutput;

impl Tool for BashOutput {
    type Input = BashOutputInput;
    const NAME: &'static str = "BashOutput";
    const READ_ONLY_HINT: Option<bool> = Some(true);
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(true);
    const VALIDATES_INPUT: bool = false;
    const CHECKS_PERMISSIONS: bool = false;
    const DESCRIPTION: &'static str = "Retrieves output from a running or completed background bash shell.";

    fn prompt() -> String {
        "- Retrieves output from a running or completed background bash shell
- Takes a bash_id parameter identifying the shell
- Always returns only new output since the last check
- Returns stdout and stderr output along with shell status
- Shell IDs are given by Bash when run_in_background is true"
            .into()
    }
    fn call(input: BashOutputInput, _: &Context) -> Result<Output, ToolError> {
        let out = process::read_background(&input.bash_id)
            .map_err(|e| ToolError::new(ErrorKind::NotFound, process::describe(&e)))?;
        let (status, code) = match out.status {
            None => ("running", None),
            Some(ExitStatus::Exited(0)) => ("completed", Some(0)),
            Some(ExitStatus::Exited(c)) => ("failed", Some(c)),
            Some(ExitStatus::Signaled(s)) => ("killed", Some(128 + s)),
        };
        let mut text = format!("<status>{status}</status>\n");
        if let Some(code) = code {
            text.push_str(&format!("<exit_code>{code}</exit_code>\n"));
        }
        if !out.stdout.is_empty() {
            text.push_str(&format!("<stdout>\n{}\n</stdout>\n", String::from_utf8_lossy(&out.stdout).trim_end()));
        }
        if !out.stderr.is_empty() {
            text.push_str(&format!("<stderr>\n{}\n</stderr>\n", String::from_utf8_lossy(&out.stderr).trim_end()));
        }
        if out.dropped > 0 {
            text.push_str(&format!(
                "<note>{} bytes were dropped because they were not read in time</note>\n",
                out.dropped
            ));
        }
        Ok(Output::text(text.trim_end().to_string()))
    }
}

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests).
toolhost_sdk::requests!(r#"{"process": true}"#);

export_tool!(BashOutput);
