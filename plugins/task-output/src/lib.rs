//! The `TaskOutput` tool (Claude Code 2.1.88's name; `BashOutput` is the
//! older one): the status and output of a command Bash started in the
//! background.
//!
//! Called with `task_id`, it answers as Claude Code 2.1.88 does: everything
//! the command printed so far (its beginning while it runs, its end once it
//! ended), waiting first for it to end when `block` is true. Called the old
//! way, with `bash_id`, it answers as Claude Code 2.0's `BashOutput` did:
//! what each stream printed since the last read, only the lines `filter`
//! matches when it is given (the others are gone for good).

pub mod render;

use render::Retrieval;
use std::time::{Duration, Instant, SystemTime};
use toolhost_sdk::process::{self, BackgroundTask, ProcessError};
use toolhost_sdk::{Context, Deserialize, ErrorKind, JsonSchema, Output, Tool, ToolError, export_tool};

/// How long `block` waits by default, and at most, in milliseconds.
pub const DEFAULT_WAIT_MS: f64 = 30_000.0;
pub const MAX_WAIT_MS: f64 = 600_000.0;
/// How often a blocked read looks again.
const POLL: Duration = Duration::from_millis(100);

/// Input of `TaskOutput`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskOutputInput {
    /// The task ID to get output from
    pub task_id: Option<String>,
    /// Whether to wait for completion
    #[schemars(extend("default" = true))]
    pub block: Option<bool>,
    /// Max wait time in ms
    #[schemars(range(min = 0, max = 600000), extend("default" = 30000))]
    pub timeout: Option<f64>,
    /// The ID of the background shell to read (the older name of task_id; with it, only the output
    /// printed since the last read is returned)
    pub bash_id: Option<String>,
    /// A regular expression: only the output lines that match it are returned. With bash_id, the
    /// lines that do not match are gone for good.
    pub filter: Option<String>,
}

impl TaskOutputInput {
    /// The old `BashOutput` way: `bash_id` and no `task_id`.
    fn legacy(&self) -> Option<&str> {
        match (&self.task_id, &self.bash_id) {
            (None, Some(id)) => Some(id),
            _ => None,
        }
    }
}

pub struct TaskOutput;

impl Tool for TaskOutput {
    type Input = TaskOutputInput;
    const NAME: &'static str = "TaskOutput";
    const READ_ONLY_HINT: Option<bool> = Some(true);
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(true);
    // Listed by name until ToolSearch loads it, as in Claude Code.
    const SHOULD_DEFER: bool = true;
    const DESCRIPTION: &'static str = "Reads the status and output of a command running in the background.";

    fn prompt() -> String {
        include_str!("prompt.md").to_string()
    }
    fn aliases() -> Vec<String> {
        // Claude Code 2.1.88's aliases, and the 2.0 name.
        ["BashOutput", "BashOutputTool", "AgentOutputTool"].map(String::from).to_vec()
    }
    fn search_hint() -> Option<String> {
        Some("read output logs status of a background task shell command".into())
    }

    fn validate_input(input: &TaskOutputInput, ctx: &Context) -> Result<(), ToolError> {
        if let Some(filter) = &input.filter {
            compile(filter)?;
        }
        // The old way is checked when it runs: reading the host here would
        // take the output the call must return.
        if input.legacy().is_some() {
            return Ok(());
        }
        let id = input.task_id.as_deref().unwrap_or_default();
        if id.is_empty() {
            return Err(ToolError::invalid_input("Task ID is required"));
        }
        match BackgroundTask::refresh(ctx, id) {
            Ok(_) => Ok(()),
            Err(ProcessError::UnknownId(m)) => Err(ToolError::not_found(process::no_task(id, &m))),
            Err(e) => Err(host_error(&e)),
        }
    }

    fn call(input: TaskOutputInput, ctx: &Context) -> Result<Output, ToolError> {
        let filter = input.filter.as_deref().map(compile).transpose()?;
        if let Some(id) = input.legacy() {
            return legacy(id, filter.as_ref(), ctx);
        }
        let id = input.task_id.as_deref().unwrap_or_default();
        let unknown = |e: ProcessError| match e {
            ProcessError::UnknownId(m) => ToolError::not_found(process::no_task(id, &m)),
            e => host_error(&e),
        };
        let (mut task, _) = BackgroundTask::refresh(ctx, id).map_err(unknown)?;
        let retrieval = if input.block == Some(false) {
            if task.is_running() { Retrieval::NotReady } else { Retrieval::Success }
        } else {
            let wait = input.timeout.unwrap_or(DEFAULT_WAIT_MS).clamp(0.0, MAX_WAIT_MS);
            let until = Instant::now() + Duration::from_millis(wait as u64);
            while task.is_running() && Instant::now() < until {
                std::thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
                task.update(ctx).map_err(unknown)?;
            }
            if task.is_running() { Retrieval::Timeout } else { Retrieval::Success }
        };
        Ok(Output::text(render::task_text(retrieval, &task, filter.as_ref())))
    }
}

/// The old `BashOutput`: what came since the last read.
fn legacy(id: &str, filter: Option<&regex::Regex>, ctx: &Context) -> Result<Output, ToolError> {
    let (task, fresh) = match BackgroundTask::refresh(ctx, id) {
        Ok(read) => read,
        // Claude Code 2.0 found an unknown id while validating: its text,
        // wrapped the same way.
        Err(ProcessError::UnknownId(_)) => {
            return Err(ToolError::not_found(format!("<tool_use_error>No shell found with ID: {id}</tool_use_error>")));
        }
        Err(e) => return Err(host_error(&e)),
    };
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let text = render::legacy_text(
        &task,
        &String::from_utf8_lossy(&fresh.stdout),
        &String::from_utf8_lossy(&fresh.stderr),
        filter,
        &render::iso_timestamp(now.as_secs(), now.subsec_millis()),
    );
    Ok(Output::text(text))
}

fn compile(filter: &str) -> Result<regex::Regex, ToolError> {
    regex::Regex::new(filter)
        .map_err(|e| ToolError::invalid_input(format!("Invalid regular expression /{filter}/: {e}")))
}

fn host_error(e: &ProcessError) -> ToolError {
    ToolError::new(ErrorKind::PermissionDenied, process::describe(e))
}

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests): the process capability, and
// time to wait for the longest `timeout`.
toolhost_sdk::requests!(r#"{"process": true, "timeout_ms": 630000}"#);

export_tool!(TaskOutput);

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_sdk::serde_json::{self, json};

    #[test]
    fn the_schema_is_claude_codes_with_the_old_fields_beside() {
        let schema: serde_json::Value = serde_json::from_str(&toolhost_sdk::input_schema::<TaskOutput>()).unwrap();
        let p = &schema["properties"];
        let names: Vec<&str> = p.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(names, ["task_id", "block", "timeout", "bash_id", "filter"]);
        assert_eq!(
            p["block"],
            json!({"description": "Whether to wait for completion", "type": "boolean", "default": true})
        );
        assert_eq!(
            p["timeout"],
            json!({"description": "Max wait time in ms", "type": "number", "minimum": 0, "maximum": 600000, "default": 30000})
        );
        assert_eq!(schema.get("required"), None, "no field is required: bash_id stands in for task_id");
        assert_eq!(schema["additionalProperties"], json!(false));
    }

    #[test]
    fn which_way_a_call_reads() {
        let input = |task: Option<&str>, bash: Option<&str>| TaskOutputInput {
            task_id: task.map(String::from),
            block: None,
            timeout: None,
            bash_id: bash.map(String::from),
            filter: None,
        };
        assert_eq!(input(None, Some("b1")).legacy(), Some("b1"));
        assert_eq!(input(Some("b2"), Some("b1")).legacy(), None);
        assert_eq!(input(Some("b2"), None).legacy(), None);
        assert!(compile("(").unwrap_err().message.starts_with("Invalid regular expression /(/"));
    }
}
