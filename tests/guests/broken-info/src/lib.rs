//! A tool that panics while describing itself: the host must leave it out and
//! keep serving the others.

use toolhost_sdk::{Context, Deserialize, JsonSchema, Output, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
struct Input {}

struct Broken;

impl Tool for Broken {
    type Input = Input;
    const NAME: &'static str = "Broken";
    const DESCRIPTION: &'static str = "Cannot describe itself.";

    fn prompt() -> String {
        panic!("broken on purpose while describing itself")
    }

    fn call(_: Input, _: &Context) -> Result<Output, ToolError> {
        Ok(Output::text("unreachable"))
    }
}

export_tool!(Broken);
