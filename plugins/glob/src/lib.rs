//! The `Glob` tool: the files matching a glob, as Claude Code 2.1.328 lists
//! them with `rg --files --glob PATTERN --sort=modified --no-ignore --hidden`:
//! ignore files not consulted, hidden files included, oldest first, at most
//! 100 with a line giving the exact total, paths relative to the working
//! directory. A missing `path` is an error of the call (not of validation).

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

impl GlobInput {
    /// The `path` the model gave, when it gave a non-empty one.
    fn given_path(&self) -> Option<&str> {
        self.path.as_deref().filter(|p| !p.is_empty())
    }
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
        include_str!("prompt.md").to_string()
    }
    fn search_hint() -> Option<String> {
        Some("find files by name pattern or wildcard".into())
    }
    fn validate_input(input: &GlobInput, ctx: &Context) -> Result<(), ToolError> {
        if let Some(given) = input.given_path() {
            fs::confine(ctx, given, Access::Read)?;
        }
        let (root, _) = search_root(ctx, input);
        if fs::is_allowed(ctx, &root, Access::Read) { Ok(()) } else { Err(fs::outside(ctx, &root)) }
    }

    fn call(input: GlobInput, ctx: &Context) -> Result<Output, ToolError> {
        // 2.1.328 checks the directory in the call: its errors are plain.
        if let Some(given) = input.given_path() {
            let dir = fs::confine(ctx, given, Access::Read)?;
            match std::fs::metadata(&dir) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => return Err(ToolError::invalid_input(format!("Path is not a directory: {given}"))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(ToolError::not_found(fs::not_found_message(
                        ctx,
                        "Directory does not exist:",
                        given,
                        &dir,
                    )));
                }
                Err(e) => return Err(fs::io_error(ctx, &dir, &e)),
            }
        }
        let (root, pattern) = search_root(ctx, &input);
        if !fs::is_allowed(ctx, &root, Access::Read) {
            return Err(fs::outside(ctx, &root));
        }
        let found = find(Path::new(ctx.cwd()), &root, &pattern, &fs::hidden_paths())?;
        let filenames: Vec<String> =
            found.paths.iter().map(|p| fs::to_relative_path(ctx.cwd(), &p.to_string_lossy())).collect();
        let mut text = if filenames.is_empty() { "No files found".to_string() } else { filenames.join("\n") };
        if !filenames.is_empty() && found.truncated {
            text.push_str(&format!(
                "\n(Showing {} of {} matching files; {} more are not listed. Narrow the pattern or path to see the \
                 rest.)",
                filenames.len(),
                found.total,
                found.total - filenames.len()
            ));
        }
        Ok(Output::text(text).with_structured(serde_json::json!({
            "numFiles": filenames.len(),
            "filenames": filenames,
            "truncated": found.truncated,
            "totalMatches": found.total,
            "countIsComplete": true,
        })))
    }
}

/// The directory searched and the pattern matched there: the given `path`
/// (else the working directory) with the pattern as given, except that an
/// absolute pattern is split at its literal directory (see [`split_absolute`]).
fn search_root(ctx: &Context, input: &GlobInput) -> (PathBuf, String) {
    let dir = input.given_path().map_or_else(|| PathBuf::from(ctx.cwd()), |p| fs::absolute(ctx, p));
    if input.pattern.starts_with('/')
        && let Some((base, rest)) = split_absolute(&input.pattern)
    {
        return (fs::normalize(Path::new(&base)), rest);
    }
    let pattern = repair_prefix(&input.pattern, &dir)
        .map(|anchored| match dir.strip_prefix(ctx.cwd()) {
            // Anchored at the directory searched, as the glob's root is the working directory.
            Ok(rel) if rel.as_os_str().is_empty() => anchored,
            Ok(rel) => format!("/{}{anchored}", rel.display()),
            Err(_) => anchored[1..].to_string(),
        })
        .unwrap_or_else(|| input.pattern.clone());
    (dir, pattern)
}

/// 2.1.328's repair of a pattern that repeats the end of the directory
/// searched (`src/**/*.ts` in `…/src`): its leading literal segments that
/// equal the directory's last ones are dropped and the rest anchored at the
/// directory (`/**/*.ts`), unless those segments name directories that do
/// exist there (`…/src/src`). `None` when nothing is repaired.
pub fn repair_prefix(pattern: &str, dir: &Path) -> Option<String> {
    let segments: Vec<&str> = pattern.split('/').collect();
    let literal = segments[..segments.len() - 1]
        .iter()
        .take_while(|s| !s.is_empty() && !s.contains(['*', '?', '[', ']', '{', '}', '!']))
        .count();
    let dir_text = dir.to_string_lossy();
    let tail: Vec<&str> = dir_text.split('/').filter(|s| !s.is_empty()).collect();
    let repeated = (1..=literal).rev().find(|&n| tail.len() >= n && segments[..n] == tail[tail.len() - n..])?;
    // Those directories under `dir`, real ones (not links): the pattern meant them.
    let mut at = dir.to_path_buf();
    let exist = segments[..repeated].iter().all(|s| {
        at.push(s);
        std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir())
    });
    (!exist).then(|| format!("/{}", segments[repeated..].join("/")))
}

/// Splits an absolute pattern as Claude Code does before handing it to
/// ripgrep: at the last `/` before the first of `*?[{` (the directory is
/// what precedes it, `/` for the root); without such a character, into the
/// pattern's directory and its last component. `None` when nothing precedes
/// the split.
pub fn split_absolute(pattern: &str) -> Option<(String, String)> {
    let Some(first_meta) = pattern.find(['*', '?', '[', '{']) else {
        // Node's dirname and basename (trailing slashes ignored).
        let trimmed = pattern.trim_end_matches('/');
        if trimmed.is_empty() {
            return Some(("/".into(), String::new()));
        }
        let (dir, name) = match trimmed.rfind('/') {
            Some(0) => ("/".to_string(), &trimmed[1..]),
            Some(i) => (trimmed[..i].trim_end_matches('/').to_string(), &trimmed[i + 1..]),
            None => (".".to_string(), trimmed),
        };
        let dir = if dir.is_empty() { "/".to_string() } else { dir };
        return Some((dir, name.to_string()));
    };
    let last_slash = pattern[..first_meta].rfind('/')?;
    let base = if last_slash == 0 { "/".to_string() } else { pattern[..last_slash].to_string() };
    Some((base, pattern[last_slash + 1..].to_string()))
}

/// The matches of one search.
#[derive(Debug, PartialEq, Eq)]
pub struct Found {
    /// Oldest first, at most [`MAX_RESULTS`].
    pub paths: Vec<PathBuf>,
    /// More files matched than were returned.
    pub truncated: bool,
    /// How many files matched.
    pub total: usize,
}

/// Lists the files under `root` that `pattern` matches as a ripgrep `--glob`
/// given in `cwd` (gitignore syntax: a pattern without a slash matches a
/// name at any depth, one with a slash is anchored at `cwd`), no ignore files
/// consulted, hidden files included, symlinks not followed, `hidden` paths
/// skipped; sorted by modification time, oldest first. A pattern ripgrep
/// refuses is an error quoting ripgrep's explanation, as 2.1.328 reports it.
pub fn find(cwd: &Path, root: &Path, pattern: &str, hidden: &fs::HiddenPaths) -> Result<Found, ToolError> {
    let mut overrides = ignore::overrides::OverrideBuilder::new(cwd);
    let overrides = overrides
        .add(pattern)
        .and_then(|o| o.build())
        .map_err(|e| toolhost_sdk::search::refused(&format!("rg: {e}")))?;
    let hidden = hidden.clone();
    let walker = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .overrides(overrides)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |e| !hidden.contains(e.path(), e.file_type().is_some_and(|t| t.is_dir())))
        .build();
    let mut hits: Vec<(Option<SystemTime>, PathBuf)> = walker
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| (e.metadata().ok().and_then(|m| m.modified().ok()), e.into_path()))
        .collect();
    // Stable: equal times keep the walk's order. Unknown times go last.
    hits.sort_by(|a, b| match (a.0, b.0) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let total = hits.len();
    let truncated = total > MAX_RESULTS;
    hits.truncate(MAX_RESULTS);
    Ok(Found { paths: hits.into_iter().map(|(_, p)| p).collect(), truncated, total })
}

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests).
toolhost_sdk::requests!(r#"{"workspace": "read-only"}"#);

export_tool!(Glob);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_absolute_patterns_like_claude_code() {
        let s = split_absolute;
        assert_eq!(s("/ws/src/**/*.rs"), Some(("/ws/src".into(), "**/*.rs".into())));
        assert_eq!(s("/*.txt"), Some(("/".into(), "*.txt".into())));
        assert_eq!(s("/ws/a.txt"), Some(("/ws".into(), "a.txt".into())));
        assert_eq!(s("/ws/dir/"), Some(("/ws".into(), "dir".into())));
        assert_eq!(s("/ws/sr*/x"), Some(("/ws".into(), "sr*/x".into())));
    }

    fn tree(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("glob-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn at(dir: &Path, name: &str, secs: u64) {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let file = std::fs::File::create(path).unwrap();
        file.set_modified(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs)).unwrap();
    }

    #[test]
    fn lists_oldest_first_ignoring_nothing() {
        let dir = tree("order");
        std::fs::write(dir.join(".gitignore"), "ignored.rs\n").unwrap();
        at(&dir, "src/new.rs", 3_000_000);
        at(&dir, "src/ignored.rs", 2_000_000);
        at(&dir, "top.rs", 1_000_000);
        at(&dir, ".hidden/h.rs", 1_500_000);
        at(&dir, ".git/x.rs", 2_500_000);
        let none = fs::HiddenPaths::default();
        let found = find(&dir, &dir, "**/*.rs", &none).unwrap();
        let names: Vec<_> = found.paths.iter().map(|p| p.strip_prefix(&dir).unwrap().to_str().unwrap()).collect();
        assert_eq!(names, ["top.rs", ".hidden/h.rs", "src/ignored.rs", ".git/x.rs", "src/new.rs"]);
        // No slash: a name at any depth.
        assert_eq!(find(&dir, &dir, "new.rs", &none).unwrap().paths, [dir.join("src/new.rs")]);
        assert_eq!(find(&dir, &dir, "*.rs", &none).unwrap().paths.len(), 5);
        // A slash anchors at the working directory, even when searching below it.
        assert_eq!(find(&dir, &dir.join("src"), "src/*.rs", &none).unwrap().paths.len(), 2);
        assert!(find(&dir, &dir.join("src"), "*.txt", &none).unwrap().paths.is_empty());
        // A pattern ripgrep refuses: its message (ripgrep 14.1.1's).
        assert_eq!(
            find(&dir, &dir, "{a", &none).unwrap_err().message,
            "Search failed — ripgrep rejected the pattern, glob, or file type without searching:\nrg: error parsing \
             glob '{a': unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn repairs_a_pattern_that_repeats_the_directory() {
        let dir = tree("repair");
        std::fs::create_dir_all(dir.join("pkg/src")).unwrap();
        assert_eq!(repair_prefix("src/**/*.ts", &dir.join("pkg/src")), Some("/**/*.ts".into()));
        assert_eq!(repair_prefix("pkg/src/*.ts", &dir.join("pkg/src")), Some("/*.ts".into()));
        assert_eq!(repair_prefix("lib/*.ts", &dir.join("pkg/src")), None);
        assert_eq!(repair_prefix("*.ts", &dir.join("pkg/src")), None);
        assert_eq!(repair_prefix("src", &dir.join("pkg/src")), None, "the last segment is the name matched");
        // `src/src` exists: the pattern means it.
        std::fs::create_dir_all(dir.join("pkg/src/src")).unwrap();
        assert_eq!(repair_prefix("src/**/*.ts", &dir.join("pkg/src")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn keeps_the_oldest_hundred() {
        let dir = tree("cap");
        for i in 0..105u64 {
            at(&dir, &format!("f{i:03}.txt"), 1_000_000 + i);
        }
        let found = find(&dir, &dir, "*.txt", &fs::HiddenPaths::default()).unwrap();
        assert!(found.truncated);
        assert_eq!(found.total, 105);
        assert_eq!(found.paths.len(), MAX_RESULTS);
        assert_eq!(found.paths[0], dir.join("f000.txt"));
        assert_eq!(found.paths[99], dir.join("f099.txt"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
