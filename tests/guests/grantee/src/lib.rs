//! A third-party tool that requests directories, variables, memory and time
//! (in its `toolhost:requests` section) and tries to use them, and more:
//! tests grant part of it and check it gets exactly requested ∩ granted.

use toolhost_sdk::{Context, Deserialize, JsonSchema, Output, Tool, ToolError, export_tool, requests};

requests!(
    r#"{
    "directories": [
        {"path": "data", "access": "read-only"},
        {"path": "out", "access": "read-write"}
    ],
    "hosts": ["example.com:443"],
    "env": ["GREETING", "NOT_GRANTED"],
    "secrets": ["API_TOKEN"],
    "memory_mib": 48,
    "timeout_ms": 1500
}"#
);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GranteeInput {
    /// `read`, `write`, `list`, `env`, `sleep` or `alloc`.
    action: String,
    /// The file or directory to act on.
    #[serde(default)]
    path: String,
    /// Mebibytes for `alloc`, milliseconds for `sleep`.
    #[serde(default)]
    amount: u64,
}

struct Grantee;

impl Tool for Grantee {
    type Input = GranteeInput;
    const NAME: &'static str = "Grantee";
    const DESCRIPTION: &'static str = "Uses what it was granted.";

    fn call(input: GranteeInput, _ctx: &Context) -> Result<Output, ToolError> {
        let report = |r: std::io::Result<String>| match r {
            Ok(s) => Ok(Output::text(s)),
            Err(e) => Err(ToolError::io(format!("refused: {e}"))),
        };
        match input.action.as_str() {
            "read" => report(std::fs::read_to_string(&input.path)),
            "write" => report(std::fs::write(&input.path, "written by Grantee").map(|()| "wrote".into())),
            "list" => report(std::fs::read_dir(&input.path).map(|entries| {
                let mut names: Vec<String> =
                    entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
                names.sort();
                names.join(",")
            })),
            "env" => {
                let mut vars: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
                vars.sort();
                Ok(Output::text(format!("env: [{}]", vars.join(","))))
            }
            "sleep" => {
                std::thread::sleep(std::time::Duration::from_millis(input.amount));
                Ok(Output::text("slept"))
            }
            "alloc" => {
                let block = vec![7u8; (input.amount as usize) << 20];
                Ok(Output::text(format!("allocated {} MiB", block.len() >> 20)))
            }
            other => Err(ToolError::invalid_input(format!("unknown action `{other}`"))),
        }
    }
}

export_tool!(Grantee);
