//! The `Glob` tool: files matching a glob pattern, newest first.

use std::path::{Path, PathBuf};
use std::time::SystemTime;
use toolhost_sdk::fs::{self, Access};
use toolhost_sdk::{Context, Deserialize, JsonSchema, Output, PathAccess, Tool, ToolError, export_tool, serde_json};

/// Paths returned at most.
pub const MAX_RESULTS: usize = 100;

/// Input of `Glob`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobInput {
    /// The glob pattern to match files against
    pub pattern: String,
    /// The directory to search in. If not specified, the current working directory will be used. IMPORTANT: Omit this field to use the default directory. DO NOT enter "undefined" or "null" - simply omit it for the default behavior. Must be a valid directory path if provided.
    pub path: Option<String>,
}

pub struct Glob;

impl Tool for Glob {
    type Input = GlobInput;
    const NAME: &'static str = "Glob";
    const PATH_FIELDS: &'static [(&'static str, PathAccess)] = &[("path", PathAccess::Search)];
    const READ_ONLY_HINT: Option<bool> = Some(true);
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(true);
    const CHECKS_PERMISSIONS: bool = false;
    const DESCRIPTION: &'static str = "Fast file pattern matching tool that works with any codebase size.";

    fn prompt() -> String {
        PROMPT.to_string()
    }
    fn search_hint() -> Option<String> {
        Some("find files by name pattern glob list".into())
    }
    fn validate_input(input: &GlobInput, ctx: &Context) -> Result<(), ToolError> {
        let base = fs::confine(ctx, input.path.as_deref().unwrap_or(ctx.cwd()), Access::Read)?;
        let (root, _) = split_pattern(&base, &input.pattern);
        if fs::is_allowed(ctx, &root, Access::Read) { Ok(()) } else { Err(fs::outside(ctx, &root)) }
    }

    fn call(input: GlobInput, ctx: &Context) -> Result<Output, ToolError> {
        let base = fs::confine(ctx, input.path.as_deref().unwrap_or(ctx.cwd()), Access::Read)?;
        match std::fs::metadata(&base) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(ToolError::invalid_input(format!("Path is not a directory: {}", base.display()))),
            Err(e) => return Err(fs::io_error(ctx, &base, &e)),
        }
        let (root, pattern) = split_pattern(&base, &input.pattern);
        if !fs::is_allowed(ctx, &root, Access::Read) {
            return Err(fs::outside(ctx, &root));
        }
        let found = find(&root, &pattern, &fs::Hidden::of_call())?;
        let mut text = if found.paths.is_empty() {
            "No files found".to_string()
        } else {
            found.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join("\n")
        };
        if found.truncated {
            text.push_str("\n(Results are truncated. Consider using a more specific path or pattern.)");
        }
        Ok(Output::text(text).with_structured(serde_json::json!({
            "numFiles": found.paths.len(),
            "truncated": found.truncated,
        })))
    }
}

/// The matches of one search.
#[derive(Debug, PartialEq, Eq)]
pub struct Found {
    /// Newest first, at most [`MAX_RESULTS`].
    pub paths: Vec<PathBuf>,
    /// More files matched than were returned.
    pub truncated: bool,
}

/// Splits `pattern` into the directory to walk (`base` joined with the pattern's
/// literal leading components, or the pattern's own literal prefix when it is
/// absolute) and the rest of the pattern, relative to that directory.
pub fn split_pattern(base: &Path, pattern: &str) -> (PathBuf, String) {
    let is_meta = |s: &str| s.contains(['*', '?', '[', '{']);
    let mut root = if pattern.starts_with('/') { PathBuf::from("/") } else { base.to_path_buf() };
    let parts: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    let literal = parts.iter().take_while(|p| !is_meta(p)).count();
    // The last component is what is matched, even when it is literal.
    let literal = literal.min(parts.len().saturating_sub(1));
    for part in &parts[..literal] {
        root.push(part);
    }
    (fs::normalize(&root), parts[literal..].join("/"))
}

/// Walks `root` (respecting `.gitignore`, `.ignore` and hidden files included,
/// `.git` excluded) for files whose path relative to `root` matches `pattern`.
pub fn find(root: &Path, pattern: &str, hidden: &fs::Hidden) -> Result<Found, ToolError> {
    let glob = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| ToolError::invalid_input(format!("Invalid glob pattern `{pattern}`: {e}")))?
        .compile_matcher();
    let mut hits: Vec<(SystemTime, PathBuf)> = Vec::new();
    let hidden = hidden.clone();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(move |e| {
            e.file_name() != ".git" && !hidden.contains(e.path(), e.file_type().is_some_and(|t| t.is_dir()))
        })
        .build();
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else { continue };
        if glob.is_match(rel) {
            let mtime = entry.metadata().ok().and_then(|m| m.modified().ok()).unwrap_or(SystemTime::UNIX_EPOCH);
            hits.push((mtime, entry.into_path()));
        }
    }
    hits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let truncated = hits.len() > MAX_RESULTS;
    hits.truncate(MAX_RESULTS);
    Ok(Found { paths: hits.into_iter().map(|(_, p)| p).collect(), truncated })
}

const PROMPT: &str = "- Fast file pattern matching tool that works with any codebase size
- Supports glob patterns like \"**/*.js\" or \"src/**/*.ts\"
- Returns matching file paths sorted by modification time (newest first), at most 100
- Respects .gitignore; hidden files are included, .git is not
- Use this tool when you need to find files by name patterns";

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests).
toolhost_sdk::requests!(r#"{"workspace": "read-only"}"#);

export_tool!(Glob);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_literal_prefix() {
        let base = Path::new("/ws");
        assert_eq!(split_pattern(base, "src/**/*.rs"), (PathBuf::from("/ws/src"), "**/*.rs".into()));
        assert_eq!(split_pattern(base, "*.rs"), (PathBuf::from("/ws"), "*.rs".into()));
        assert_eq!(split_pattern(base, "a/b.txt"), (PathBuf::from("/ws/a"), "b.txt".into()));
        assert_eq!(split_pattern(base, "/etc/*.conf"), (PathBuf::from("/etc"), "*.conf".into()));
        assert_eq!(split_pattern(base, "../x/*"), (PathBuf::from("/x"), "*".into()));
    }

    #[test]
    fn finds_newest_first_and_respects_gitignore() {
        let dir = std::env::temp_dir().join(format!("glob-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src/deep")).unwrap();
        std::fs::write(dir.join(".gitignore"), "ignored.rs\n").unwrap();
        // Times set explicitly: files written in a row may or may not share
        // a timestamp, which decides the order of equals (by path).
        let at = |name: &str, secs: u64| {
            let file = std::fs::File::create(dir.join(name)).unwrap();
            file.set_modified(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs)).unwrap();
        };
        at("src/old.rs", 1_000_000);
        at("src/ignored.rs", 1_000_000);
        at("top.rs", 1_000_000);
        at("src/deep/new.rs", 2_000_000);
        let found = find(&dir, "**/*.rs", &fs::Hidden::default()).unwrap();
        assert_eq!(found.paths, vec![dir.join("src/deep/new.rs"), dir.join("src/old.rs"), dir.join("top.rs")]);
        assert_eq!(find(&dir, "*.rs", &fs::Hidden::default()).unwrap().paths, vec![dir.join("top.rs")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
