//! The `Write` tool: create a file, or overwrite one that was read first.

use toolhost_sdk::fs::{self, Access};
use toolhost_sdk::{Context, Deserialize, JsonSchema, Output, PathAccess, Permission, Tool, ToolError, export_tool};

/// Input of `Write`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteInput {
    /// The absolute path to the file to write (must be absolute, not relative)
    pub file_path: String,
    /// The content to write to the file
    pub content: String,
}

pub struct Write;

impl Tool for Write {
    type Input = WriteInput;
    const NAME: &'static str = "Write";
    const PATH_FIELDS: &'static [(&'static str, PathAccess)] = &[("file_path", PathAccess::Edit)];
    const READ_ONLY_HINT: Option<bool> = Some(false);
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(false);
    const DESCRIPTION: &'static str = "Writes a file to the local filesystem.";

    fn prompt() -> String {
        PROMPT.to_string()
    }
    fn search_hint() -> Option<String> {
        Some("write create file save overwrite".into())
    }
    fn is_destructive(input: &WriteInput) -> bool {
        // Overwriting replaces whatever was there; creating destroys nothing.
        std::fs::metadata(&input.file_path).is_ok()
    }

    fn validate_input(input: &WriteInput, ctx: &Context) -> Result<(), ToolError> {
        fs::confine(ctx, &input.file_path, Access::Write).map(drop)
    }

    fn check_permissions(_input: &WriteInput, ctx: &Context) -> Permission {
        fs::edit_permission(ctx)
    }

    fn call(input: WriteInput, ctx: &Context) -> Result<Output, ToolError> {
        let path = fs::confine(ctx, &input.file_path, Access::Write)?;
        let existing = match std::fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                return Err(fs::io_error(ctx, &path, &std::io::ErrorKind::IsADirectory.into()));
            }
            Ok(meta) => {
                fs::check_fresh(ctx, &path, &meta)?;
                Some(std::fs::read_to_string(&path).unwrap_or_default())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(fs::io_error(ctx, &path, &e)),
        };
        fs::replace(&path, input.content.as_bytes())?;
        let meta = std::fs::metadata(&path).map_err(|e| fs::io_error(ctx, &path, &e))?;
        fs::record_read(ctx, &path, &meta)?;
        Ok(Output::text(match existing {
            None => format!("File created successfully at: {}", path.display()),
            Some(old) => format!(
                "The file {} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n{}",
                path.display(),
                fs::snippet_of_change(&old, &input.content)
            ),
        }))
    }
}

const PROMPT: &str = "Writes a file to the local filesystem.

Usage:
- This tool will overwrite the existing file if there is one at the provided path.
- If this is an existing file, you MUST use the Read tool first to read the file's contents. This tool will fail if you did not read the file first, or if it changed on disk since you read it.
- ALWAYS prefer editing existing files in the codebase. NEVER write new files unless explicitly required.
- The write is atomic: on failure the old file is left untouched.";

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests).
toolhost_sdk::requests!(r#"{"workspace": "read-write"}"#);

export_tool!(Write);
