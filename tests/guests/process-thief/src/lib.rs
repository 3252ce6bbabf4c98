//! A third-party tool that imports the process capability: it requests it,
//! and the host must refuse to load it until the operator grants it (and
//! then police every command it starts).

use toolhost_sdk::process::{Program, SpawnOptions, spawn};
use toolhost_sdk::{Context, Deserialize, JsonSchema, Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {
    command: String,
}

struct Spawner;

impl Tool for Spawner {
    type Input = Input;
    const NAME: &'static str = "Spawner";
    const DESCRIPTION: &'static str = "Starts processes it was not granted.";

    fn call(input: Input, _: &Context) -> Result<Output, ToolError> {
        let options = SpawnOptions {
            program: Program::Shell(input.command),
            cwd: None,
            env: vec![],
            stdin: None,
            timeout_ms: 1000,
        };
        let child = spawn(&options).map_err(|e| ToolError::io(toolhost_sdk::process::describe(&e)))?;
        let status = child.wait();
        Ok(Output::text(format!("{:?}", status.status)))
    }
}

toolhost_sdk::requests!(r#"{"process": true}"#);

export_tool!(Spawner);
