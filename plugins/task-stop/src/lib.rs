//! The `TaskStop` tool (Claude Code's name; `KillShell` and `KillBash` are
//! older ones): stops a command Bash started in the background, with every
//! process it started. Its texts are Claude Code's (2.1.88 `TaskStopTool.ts`,
//! `tasks/stopTask.ts`, unchanged in 2.1.328): a task that already ended is
//! an error.

use toolhost_sdk::process::{self, BackgroundTask, ProcessError};
use toolhost_sdk::{
    Context, Deserialize, ErrorKind, JsonSchema, Output, Permission, Serialize, Tool, ToolError, export_tool,
    serde_json,
};

/// Input of `TaskStop`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskStopInput {
    /// The ID of the background task to stop
    pub task_id: Option<String>,
    /// Deprecated: use task_id instead
    pub shell_id: Option<String>,
}

impl TaskStopInput {
    /// `task_id`, else `shell_id` (an empty `task_id` counts as given).
    fn id(&self) -> &str {
        self.task_id.as_deref().or(self.shell_id.as_deref()).unwrap_or_default()
    }
}

/// The result, as Claude Code prints it (JSON, in this order).
#[derive(Serialize)]
struct Stopped<'a> {
    message: String,
    task_id: &'a str,
    task_type: &'static str,
    command: &'a str,
}

pub struct TaskStop;

impl Tool for TaskStop {
    type Input = TaskStopInput;
    const NAME: &'static str = "TaskStop";
    const READ_ONLY_HINT: Option<bool> = Some(false);
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(true);
    // Listed by name until ToolSearch loads it, as in Claude Code.
    const SHOULD_DEFER: bool = true;
    const DESCRIPTION: &'static str = "Stops a command running in the background, by its ID.";

    fn prompt() -> String {
        include_str!("prompt.md").to_string()
    }
    fn aliases() -> Vec<String> {
        // Claude Code 2.1.328's aliases (chunk-m98q9c66.js `q7t`).
        vec!["KillShell".into(), "KillBash".into()]
    }
    fn search_hint() -> Option<String> {
        Some("kill stop a running background task shell command".into())
    }

    fn validate_input(input: &TaskStopInput, ctx: &Context) -> Result<(), ToolError> {
        let id = input.id();
        if id.is_empty() {
            return Err(ToolError::invalid_input("Missing required parameter: task_id"));
        }
        let task = read(ctx, id)?;
        if !task.is_running() {
            return Err(not_running(&task));
        }
        Ok(())
    }

    // Stopping what this session itself started in the background needs no
    // approval; the host only knows this session's shells.
    fn check_permissions(_: &TaskStopInput, _: &Context) -> Permission {
        Permission::Allow(None)
    }

    fn call(input: TaskStopInput, ctx: &Context) -> Result<Output, ToolError> {
        let id = input.id();
        if id.is_empty() {
            return Err(ToolError::invalid_input("Missing required parameter: task_id"));
        }
        // It may have ended since the input was checked.
        let mut task = read(ctx, id)?;
        if !task.is_running() {
            return Err(not_running(&task));
        }
        process::kill_background(id).map_err(|e| unknown_or(e, id))?;
        task.mark_stopped(ctx);
        Ok(Output::text(stopped_text(&task)))
    }
}

/// The task `id`, as the host knows it now.
fn read(ctx: &Context, id: &str) -> Result<BackgroundTask, ToolError> {
    BackgroundTask::refresh(ctx, id).map_err(|e| unknown_or(e, id))
}

fn unknown_or(e: ProcessError, id: &str) -> ToolError {
    match e {
        ProcessError::UnknownId(m) => ToolError::not_found(process::no_task(id, &m)),
        e => ToolError::new(ErrorKind::PermissionDenied, process::describe(&e)),
    }
}

fn not_running(task: &BackgroundTask) -> ToolError {
    ToolError::conflict(format!("Task {} is not running (status: {})", task.id, task.status()))
}

fn stopped_text(task: &BackgroundTask) -> String {
    let stopped = Stopped {
        message: format!("Successfully stopped task: {} ({})", task.id, task.command),
        task_id: &task.id,
        task_type: "local_bash",
        command: &task.command,
    };
    serde_json::to_string(&stopped).unwrap_or_default()
}

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests).
toolhost_sdk::requests!(r#"{"process": true}"#);

export_tool!(TaskStop);

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_sdk::process::{BackgroundOutput, ExitStatus};
    use toolhost_sdk::serde_json::json;

    #[test]
    fn texts() {
        let mut task = BackgroundTask::new("b0k1t2s3p", "sleep 600 && echo \"done\"");
        assert_eq!(
            stopped_text(&task),
            r#"{"message":"Successfully stopped task: b0k1t2s3p (sleep 600 && echo \"done\")","task_id":"b0k1t2s3p","task_type":"local_bash","command":"sleep 600 && echo \"done\""}"#
        );
        task.absorb(&BackgroundOutput {
            stdout: vec![],
            stderr: vec![],
            dropped: 0,
            status: Some(ExitStatus::Exited(0)),
        });
        assert_eq!(not_running(&task).message, "Task b0k1t2s3p is not running (status: completed)");
    }

    #[test]
    fn the_schema_requires_nothing() {
        let schema: serde_json::Value = serde_json::from_str(&toolhost_sdk::input_schema::<TaskStop>()).unwrap();
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "task_id": {"description": "The ID of the background task to stop", "type": "string"},
                    "shell_id": {"description": "Deprecated: use task_id instead", "type": "string"}
                },
                "additionalProperties": false
            })
        );
        let id = |t: Option<&str>, s: Option<&str>| {
            TaskStopInput { task_id: t.map(String::from), shell_id: s.map(String::from) }.id().to_string()
        };
        assert_eq!(
            (id(Some("a"), Some("b")), id(None, Some("b")), id(Some(""), Some("b"))),
            ("a".into(), "b".into(), "".into())
        );
    }
}
