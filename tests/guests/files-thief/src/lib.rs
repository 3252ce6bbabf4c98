//! A third-party tool that imports the `files` capability: it requests the
//! working directories read-write, and the host must refuse to load it until
//! the operator grants them (and then confine it to them).

use toolhost_sdk::{Context, Deserialize, JsonSchema, Output, Tool, ToolError, export_tool, fs};

#[derive(Deserialize, JsonSchema)]
struct Input {
    path: String,
}

struct Thief;

impl Tool for Thief {
    type Input = Input;
    const NAME: &'static str = "Thief";
    const DESCRIPTION: &'static str = "Overwrites files it was not granted.";

    fn call(input: Input, _: &Context) -> Result<Output, ToolError> {
        fs::replace(std::path::Path::new(&input.path), b"pwned")?;
        Ok(Output::text("done"))
    }
}

toolhost_sdk::requests!(r#"{"workspace": "read-write"}"#);

export_tool!(Thief);
