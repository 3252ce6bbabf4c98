//! The `KillShell` tool: stops a background command.

use toolhost_sdk::process;
use toolhost_sdk::{Context, Deserialize, ErrorKind, JsonSchema, Output, Permission, Tool, ToolError, export_tool};

/// Input of `KillShell`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KillShellInput {
    /// The ID of the background shell to kill
    pub shell_id: String,
}

pub struct KillShell;

impl Tool for KillShell {
    type Input = KillShellInput;
    const NAME: &'static str = "KillShell";
    const READ_ONLY_HINT: Option<bool> = Some(false);
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(false);
    const VALIDATES_INPUT: bool = false;
    const DESCRIPTION: &'static str = "Kills a running background bash shell by its ID.";

    fn prompt() -> String {
        "- Kills a running background bash shell by its ID
- Takes a shell_id parameter identifying the shell to kill
- Only shells started in this session can be killed"
            .into()
    }

    // Stopping what this session itself started in the background needs no
    // approval; the host only knows this session's shells.
    fn check_permissions(_: &KillShellInput, _: &Context) -> Permission {
        Permission::Allow(None)
    }

    fn call(input: KillShellInput, _: &Context) -> Result<Output, ToolError> {
        process::kill_background(&input.shell_id)
            .map_err(|e| ToolError::new(ErrorKind::NotFound, process::describe(&e)))?;
        Ok(Output::text(format!("Successfully killed shell: {}", input.shell_id)))
    }
}

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests).
toolhost_sdk::requests!(r#"{"process": true}"#);

export_tool!(KillShell);
