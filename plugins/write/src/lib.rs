//! The `Write` tool: create a file, or overwrite one that was read first,
//! with the checks and texts of Claude Code 2.1.328's Write.
//!
//! 2.1.328 lets newer models overwrite a file they never read, when a Read
//! of it would be allowed without asking; toolhost does not know the model,
//! so it keeps the read-before-write rule for every model, as 2.1.328 does
//! for the models it names.

use toolhost_sdk::fs::{self, Access, Encoding, TextFile};
use toolhost_sdk::{
    Context, Deserialize, JsonSchema, Output, PathAccess, Permission, Tool, ToolError, export_tool, serde_json,
};

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
        include_str!("prompt.md").to_string()
    }
    fn search_hint() -> Option<String> {
        Some("create or overwrite files".into())
    }
    fn is_destructive(input: &WriteInput) -> bool {
        // Overwriting replaces whatever was there; creating destroys nothing.
        std::fs::metadata(&input.file_path).is_ok()
    }

    fn validate_input(input: &WriteInput, ctx: &Context) -> Result<(), ToolError> {
        let path = fs::confine(ctx, &input.file_path, Access::Write)?;
        let meta = match std::fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            // A path the sandbox cannot reach (a symlink out of the working
            // directories): the permission step decides, and the call reports it.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Ok(()),
            // Claude Code's stat fails with Node's error, which reaches the
            // model as a failed tool call.
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                return Err(ToolError::invalid_input(format!(
                    "Error calling tool (Write): ENOTDIR: not a directory, stat '{}'",
                    path.display()
                )));
            }
            Err(e) => return Err(fs::io_error(ctx, &path, &e)),
        };
        if meta.is_dir() {
            return Err(ToolError::invalid_input(format!(
                "{} is a directory, not a file. To create a file inside it, include the file name in file_path.",
                input.file_path
            )));
        }
        if !meta.is_file() {
            return Err(ToolError::invalid_input(format!(
                "{} exists but is not a regular file (a device, FIFO or socket). Write only creates or overwrites \
                 regular files.",
                input.file_path
            )));
        }
        let Some(record) = fs::read_record(ctx, &path) else {
            return Err(ToolError::conflict(fs::NOT_READ_YET));
        };
        if record.partial {
            return Err(ToolError::conflict(fs::PARTIAL_VIEW));
        }
        // A newer time alone is no change when the record saw the whole text.
        if record.is_older_than(&meta) {
            let unchanged =
                record.is_full() && std::fs::read(&path).is_ok_and(|b| record.saw(&TextFile::decode(&b).text));
            if !unchanged {
                return Err(ToolError::conflict(fs::MODIFIED_SINCE_READ));
            }
        }
        Ok(())
    }

    fn check_permissions(_input: &WriteInput, ctx: &Context) -> Permission {
        fs::edit_permission(ctx)
    }

    fn call(input: WriteInput, ctx: &Context) -> Result<Output, ToolError> {
        let path = fs::confine(ctx, &input.file_path, Access::Write)?;
        let content = normalize_content(&input.file_path, &input.content);
        let old = match std::fs::read(&path) {
            Ok(bytes) => Some((TextFile::decode(&bytes), fs::not_text(&bytes))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => {
                return Err(ToolError::invalid_input("EISDIR: illegal operation on a directory, read"));
            }
            Err(e) => return Err(fs::io_error(ctx, &path, &e)),
        };
        if let Some((old, not_text)) = &old {
            let meta = std::fs::metadata(&path).map_err(|e| fs::io_error(ctx, &path, &e))?;
            let Some(record) = fs::read_record(ctx, &path) else {
                return Err(ToolError::conflict(fs::NOT_READ_YET));
            };
            if record.partial {
                return Err(ToolError::conflict(fs::PARTIAL_VIEW));
            }
            if record.is_older_than(&meta) && !record.saw(&old.text) {
                return Err(ToolError::conflict(fs::UNEXPECTEDLY_MODIFIED));
            }
            if let Some(not_text) = not_text {
                return Err(ToolError::unsupported(not_text.refusal()));
            }
        }
        // The content's own line endings are kept; the old file's encoding
        // is, and its UTF-8 byte-order mark.
        let content = match &old {
            Some((old, _))
                if old.text.starts_with('\u{feff}') && !content.is_empty() && !content.starts_with('\u{feff}') =>
            {
                format!("\u{feff}{content}")
            }
            _ => content,
        };
        let encoding = old.as_ref().map_or(Encoding::Utf8, |(f, _)| f.encoding);
        fs::replace(&path, &fs::encode_as(&content, encoding))?;
        let meta = std::fs::metadata(&path).map_err(|e| fs::io_error(ctx, &path, &e))?;
        fs::record_write(ctx, &path, &meta, &content)?;
        // An existing but empty file counts as created, as in Claude Code.
        let updated = old.is_some_and(|(f, _)| !f.text.is_empty());
        let text = if updated {
            format!("The file {} has been updated successfully.{}", input.file_path, fs::STATE_IS_CURRENT)
        } else {
            format!("File created successfully at: {}{}", input.file_path, fs::STATE_IS_CURRENT)
        };
        Ok(Output::text(text).with_structured(serde_json::json!({
            "type": if updated { "update" } else { "create" },
            "filePath": input.file_path,
        })))
    }
}

/// What Claude Code writes for `content`: trailing whitespace removed from
/// every line, except in Markdown files.
pub fn normalize_content(file_path: &str, content: &str) -> String {
    if fs::keeps_trailing_whitespace(file_path) { content.to_owned() } else { fs::strip_trailing_whitespace(content) }
}

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests).
toolhost_sdk::requests!(r#"{"workspace": "read-write"}"#);

export_tool!(Write);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_whitespace_is_dropped_outside_markdown() {
        assert_eq!(normalize_content("/w/a.rs", "fn a() {}  \n\tx\t\r\n"), "fn a() {}\n\tx\r\n");
        assert_eq!(normalize_content("/w/README.md", "line  \nnext\n"), "line  \nnext\n");
    }

    #[test]
    fn schema_is_claude_codes() {
        let schema = toolhost_sdk::schema::generate::<WriteInput>();
        assert_eq!(schema["required"], serde_json::json!(["file_path", "content"]));
        assert_eq!(schema["properties"]["content"]["type"], "string");
        assert_eq!(schema["additionalProperties"], false);
    }
}
