//! A third-party tool that declares path fields: it "moves" `source` (which
//! it reads) to `destination` (which it edits). It is granted no files, so it
//! only says what it would do; the host checks the paths it declares.

use toolhost_sdk::{Context, Deserialize, JsonSchema, Output, PathAccess, Tool, ToolError, export_tool};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct MoverInput {
    /// The file to move.
    source: String,
    /// Where it goes.
    destination: String,
}

struct Mover;

impl Tool for Mover {
    type Input = MoverInput;
    const NAME: &'static str = "Mover";
    const DESCRIPTION: &'static str = "Moves a file (says what it would do).";
    const PATH_FIELDS: &'static [(&'static str, PathAccess)] =
        &[("source", PathAccess::Read), ("destination", PathAccess::Edit)];

    fn call(input: MoverInput, _ctx: &Context) -> Result<Output, ToolError> {
        Ok(Output::text(format!("would move {} to {}", input.source, input.destination)))
    }
}

export_tool!(Mover);
