//! The `Edit` tool: exact string replacement in a file that was read first.

use toolhost_sdk::fs::{self, Access};
use toolhost_sdk::{
    Context, Deserialize, JsonSchema, Output, PathAccess, Permission, Tool, ToolError, export_tool, serde_json,
};

/// Input of `Edit`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    /// The absolute path to the file to modify
    pub file_path: String,
    /// The text to replace
    pub old_string: String,
    /// The text to replace it with (must be different from old_string)
    pub new_string: String,
    /// Replace all occurrences of old_string (default false)
    #[serde(default)]
    pub replace_all: bool,
}

pub struct Edit;

impl Tool for Edit {
    type Input = EditInput;
    const NAME: &'static str = "Edit";
    const PATH_FIELDS: &'static [(&'static str, PathAccess)] = &[("file_path", PathAccess::Edit)];
    const READ_ONLY_HINT: Option<bool> = Some(false);
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(false);
    const DESCRIPTION: &'static str = "Performs exact string replacements in files.";

    fn prompt() -> String {
        PROMPT.to_string()
    }
    fn search_hint() -> Option<String> {
        Some("edit modify replace change string file".into())
    }

    fn validate_input(input: &EditInput, ctx: &Context) -> Result<(), ToolError> {
        if input.old_string == input.new_string {
            return Err(ToolError::invalid_input(
                "No changes to make: old_string and new_string are exactly the same.",
            ));
        }
        fs::confine(ctx, &input.file_path, Access::Write).map(drop)
    }

    fn check_permissions(_input: &EditInput, ctx: &Context) -> Permission {
        fs::edit_permission(ctx)
    }

    fn call(input: EditInput, ctx: &Context) -> Result<Output, ToolError> {
        let path = fs::confine(ctx, &input.file_path, Access::Write)?;
        let meta = match std::fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                return Err(fs::io_error(ctx, &path, &std::io::ErrorKind::IsADirectory.into()));
            }
            Ok(meta) => meta,
            // An empty old_string on a missing file creates it, as Claude Code does.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && input.old_string.is_empty() => {
                fs::replace(&path, input.new_string.as_bytes())?;
                let meta = std::fs::metadata(&path).map_err(|e| fs::io_error(ctx, &path, &e))?;
                fs::record_read(ctx, &path, &meta)?;
                return Ok(Output::text(format!("File created successfully at: {}", path.display())));
            }
            Err(e) => return Err(fs::io_error(ctx, &path, &e)),
        };
        fs::check_fresh(ctx, &path, &meta)?;
        let bytes = std::fs::read(&path).map_err(|e| fs::io_error(ctx, &path, &e))?;
        if fs::looks_binary(&bytes) {
            return Err(ToolError::unsupported(format!(
                "{} is a binary file; Edit only changes text files.",
                path.display()
            )));
        }
        let old = String::from_utf8(bytes).map_err(|_| {
            ToolError::unsupported(format!(
                "{} is not valid UTF-8; Edit only changes UTF-8 text files.",
                path.display()
            ))
        })?;
        let edit = apply(&old, &input)?;
        fs::replace(&path, edit.text.as_bytes())?;
        let meta = std::fs::metadata(&path).map_err(|e| fs::io_error(ctx, &path, &e))?;
        fs::record_read(ctx, &path, &meta)?;
        let message = if input.replace_all && edit.replacements > 1 {
            format!(
                "The file {} has been updated. All {} occurrences were replaced. Here's the result of running `cat -n` on a snippet of the edited file:\n{}",
                path.display(),
                edit.replacements,
                fs::snippet_of_change(&old, &edit.text)
            )
        } else {
            format!(
                "The file {} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n{}",
                path.display(),
                fs::snippet_of_change(&old, &edit.text)
            )
        };
        Ok(Output::text(message).with_structured(serde_json::json!({
            "filePath": path.display().to_string(),
            "replacements": edit.replacements,
        })))
    }
}

/// The result of applying an edit to a file's text.
#[derive(Debug, PartialEq, Eq)]
pub struct Applied {
    pub text: String,
    pub replacements: usize,
}

/// Applies `input`'s replacement to `text`, or says why it cannot.
/// When the file uses CRLF line endings and the strings use LF, the strings are
/// matched and inserted with CRLF, so models need not reproduce `\r`.
pub fn apply(text: &str, input: &EditInput) -> Result<Applied, ToolError> {
    let crlf = text.contains("\r\n") && !input.old_string.contains('\r');
    let (old, new) = if crlf {
        (input.old_string.replace('\n', "\r\n"), input.new_string.replace('\n', "\r\n"))
    } else {
        (input.old_string.clone(), input.new_string.clone())
    };
    if old.is_empty() {
        if text.is_empty() {
            return Ok(Applied { text: new, replacements: 1 });
        }
        return Err(ToolError::invalid_input(
            "Cannot create new file - file already exists and is not empty. Give an old_string to replace.",
        ));
    }
    let count = text.matches(old.as_str()).count();
    match count {
        0 => {
            Err(ToolError::invalid_input(format!("String to replace not found in file.\nString: {}", input.old_string)))
        }
        1 => Ok(Applied { text: text.replacen(old.as_str(), &new, 1), replacements: 1 }),
        n if input.replace_all => Ok(Applied { text: text.replace(old.as_str(), &new), replacements: n }),
        n => Err(ToolError::invalid_input(format!(
            "Found {n} matches of the string to replace, but replace_all is false. To replace all \
             occurrences, set replace_all to true. To replace only one occurrence, please provide \
             more context to uniquely identify the instance.\nString: {}",
            input.old_string
        ))),
    }
}

const PROMPT: &str = "Performs exact string replacements in files.

Usage:
- You must use your `Read` tool at least once in the conversation before editing. This tool will error if you attempt an edit without reading the file, or if the file changed on disk since you read it.
- When editing text from Read tool output, ensure you preserve the exact indentation (tabs/spaces) as it appears AFTER the line number prefix. The line number prefix format is: spaces + line number + tab. Everything after that tab is the actual file content to match. Never include any part of the line number prefix in the old_string or new_string.
- ALWAYS prefer editing existing files in the codebase. NEVER write new files unless explicitly required.
- The edit will FAIL if `old_string` is not unique in the file. Either provide a larger string with more surrounding context to make it unique or use `replace_all` to change every instance of `old_string`.
- Use `replace_all` for replacing and renaming strings across the file.
- The write is atomic: on failure the file is left untouched.";

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests).
toolhost_sdk::requests!(r#"{"workspace": "read-write"}"#);

export_tool!(Edit);

#[cfg(test)]
mod tests {
    use super::*;

    fn input(old: &str, new: &str, all: bool) -> EditInput {
        EditInput { file_path: "/f".into(), old_string: old.into(), new_string: new.into(), replace_all: all }
    }

    #[test]
    fn replaces_a_unique_string() {
        assert_eq!(apply("a b c", &input("b", "B", false)).unwrap(), Applied { text: "a B c".into(), replacements: 1 });
    }

    #[test]
    fn refuses_absent_and_ambiguous_strings() {
        assert!(
            apply("a b c", &input("x", "y", false)).unwrap_err().message.starts_with("String to replace not found")
        );
        let e = apply("a a", &input("a", "b", false)).unwrap_err();
        assert!(e.message.starts_with("Found 2 matches"), "{}", e.message);
        assert_eq!(apply("a a", &input("a", "b", true)).unwrap(), Applied { text: "b b".into(), replacements: 2 });
    }

    #[test]
    fn keeps_crlf_line_endings() {
        let out = apply("one\r\ntwo\r\n", &input("one\ntwo", "1\n2", false)).unwrap();
        assert_eq!(out.text, "1\r\n2\r\n");
    }
}
