//! The `Grep` tool: ripgrep's search (its own crates) over the working directories.

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use toolhost_sdk::fs::{self, Access};
use toolhost_sdk::{Context, Deserialize, JsonSchema, Output, PathAccess, Tool, ToolError, export_tool, serde_json};

/// Lines or entries returned when the model gives no `head_limit`.
pub const DEFAULT_HEAD_LIMIT: usize = 250;
/// Longer lines are replaced by a note, as `rg --max-columns 500` does.
pub const MAX_COLUMNS: u64 = 500;

/// What the search returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Matching lines, with context lines when asked.
    Content,
    /// Paths of files that match (the default).
    #[default]
    FilesWithMatches,
    /// Number of matching lines per file.
    Count,
}

/// Input of `Grep`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct GrepInput {
    /// The regular expression pattern to search for in file contents
    pub pattern: String,
    /// File or directory to search in (rg PATH). Defaults to current working directory.
    pub path: Option<String>,
    /// Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}") - maps to rg --glob
    pub glob: Option<String>,
    /// Output mode: "content" shows matching lines (supports -A/-B/-C context, -n line numbers, head_limit), "files_with_matches" shows file paths (supports head_limit), "count" shows match counts (supports head_limit). Defaults to "files_with_matches".
    pub output_mode: Option<OutputMode>,
    /// Number of lines to show before each match (rg -B). Requires output_mode: "content", ignored otherwise.
    #[serde(rename = "-B")]
    pub before: Option<u64>,
    /// Number of lines to show after each match (rg -A). Requires output_mode: "content", ignored otherwise.
    #[serde(rename = "-A")]
    pub after: Option<u64>,
    /// Number of lines to show before and after each match (rg -C). Requires output_mode: "content", ignored otherwise.
    #[serde(rename = "-C")]
    pub context_short: Option<u64>,
    /// Alias for -C.
    pub context: Option<u64>,
    /// Show line numbers in output (rg -n). Requires output_mode: "content", ignored otherwise. Defaults to true.
    #[serde(rename = "-n")]
    pub line_numbers: Option<bool>,
    /// Case insensitive search (rg -i)
    #[serde(rename = "-i")]
    pub case_insensitive: Option<bool>,
    /// File type to search (rg --type). Common types: js, py, rust, go, java, etc. More efficient than include for standard file types.
    #[serde(rename = "type")]
    pub file_type: Option<String>,
    /// Limit output to first N lines/entries, equivalent to "| head -N". Works across all output modes. Defaults to 250 when unspecified. Pass 0 for unlimited.
    pub head_limit: Option<u64>,
    /// Skip first N lines/entries before applying head_limit, equivalent to "| tail -n +N | head -N". Defaults to 0.
    pub offset: Option<u64>,
    /// Enable multiline mode where . matches newlines and patterns can span lines (rg -U --multiline-dotall). Default: false.
    pub multiline: Option<bool>,
}

pub struct Grep;

impl Tool for Grep {
    type Input = GrepInput;
    const NAME: &'static str = "Grep";
    const PATH_FIELDS: &'static [(&'static str, PathAccess)] = &[("path", PathAccess::Search)];
    const READ_ONLY_HINT: Option<bool> = Some(true);
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(true);
    const CHECKS_PERMISSIONS: bool = false;
    const DESCRIPTION: &'static str = "A powerful search tool built on ripgrep.";

    fn prompt() -> String {
        PROMPT.to_string()
    }
    fn search_hint() -> Option<String> {
        Some("search file contents regex ripgrep rg find text".into())
    }
    fn validate_input(input: &GrepInput, ctx: &Context) -> Result<(), ToolError> {
        fs::confine(ctx, input.path.as_deref().unwrap_or(ctx.cwd()), Access::Read).map(drop)
    }

    fn call(input: GrepInput, ctx: &Context) -> Result<Output, ToolError> {
        let root = fs::confine(ctx, input.path.as_deref().unwrap_or(ctx.cwd()), Access::Read)?;
        std::fs::metadata(&root).map_err(|e| fs::io_error(ctx, &root, &e))?;
        let result = search(&root, &input, &fs::Hidden::of_call())?;
        Ok(Output::text(result.text).with_structured(serde_json::json!({
            "mode": match input.output_mode.unwrap_or_default() {
                OutputMode::Content => "content",
                OutputMode::FilesWithMatches => "files_with_matches",
                OutputMode::Count => "count",
            },
            "numFiles": result.files,
            "truncated": result.truncated,
        })))
    }
}

/// The outcome of [`search`].
#[derive(Debug, PartialEq, Eq)]
pub struct SearchResult {
    /// What the model sees.
    pub text: String,
    /// Files with at least one match (among those searched before stopping).
    pub files: usize,
    /// Entries were left out by `head_limit`.
    pub truncated: bool,
}

/// Searches `root` (a file or a directory) as `input` asks. Runs unchanged in
/// the component and natively (benchmarks).
/// Searches `root` as ripgrep would, skipping `hidden` paths.
pub fn search(root: &Path, input: &GrepInput, hidden: &fs::Hidden) -> Result<SearchResult, ToolError> {
    let mode = input.output_mode.unwrap_or_default();
    let multiline = input.multiline.unwrap_or(false);
    let mut matcher = RegexMatcherBuilder::new();
    matcher.case_insensitive(input.case_insensitive.unwrap_or(false)).multi_line(true);
    if multiline {
        matcher.dot_matches_new_line(true);
    } else {
        matcher.line_terminator(Some(b'\n'));
    }
    let matcher = matcher
        .build(&input.pattern)
        .map_err(|e| ToolError::invalid_input(format!("Invalid regular expression `{}`: {e}", input.pattern)))?;

    let context = input.context_short.or(input.context);
    let (before, after) = match mode {
        OutputMode::Content => (input.before.or(context).unwrap_or(0), input.after.or(context).unwrap_or(0)),
        OutputMode::FilesWithMatches | OutputMode::Count => (0, 0),
    };
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(mode == OutputMode::Content && input.line_numbers.unwrap_or(true))
        .before_context(usize::try_from(before).unwrap_or(usize::MAX))
        .after_context(usize::try_from(after).unwrap_or(usize::MAX))
        .multi_line(multiline)
        .build();

    let limit = match input.head_limit {
        None => DEFAULT_HEAD_LIMIT,
        Some(0) => usize::MAX,
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
    };
    let skip = input.offset.map_or(0, |o| usize::try_from(o).unwrap_or(usize::MAX));
    let wanted = skip.saturating_add(limit);
    let single_file = root.is_file();

    let mut files = 0usize;
    let mut entries: Vec<String> = Vec::new();
    let mut dated: Vec<(SystemTime, PathBuf)> = Vec::new();
    let mut total_count = 0u64;
    let mut stopped_early = false;
    let mut buf = Vec::new();
    for path in walk(root, input, hidden)? {
        match mode {
            OutputMode::Content => {
                buf.clear();
                let mut printer = grep_printer::StandardBuilder::new()
                    .path(!single_file)
                    .max_columns(Some(MAX_COLUMNS))
                    .max_columns_preview(true)
                    .build_no_color(&mut buf);
                let mut sink = printer.sink_with_path(&matcher, &path);
                if searcher.search_path(&matcher, &path, &mut sink).is_err() || !sink.has_match() {
                    continue;
                }
                drop(printer);
                files += 1;
                entries.extend(String::from_utf8_lossy(&buf).lines().map(str::to_owned));
                if entries.len() > wanted {
                    stopped_early = true;
                    break;
                }
            }
            OutputMode::Count => {
                let mut sink = CountLines(0);
                if searcher.search_path(&matcher, &path, &mut sink).is_ok() && sink.0 > 0 {
                    files += 1;
                    total_count += sink.0;
                    entries.push(if single_file {
                        sink.0.to_string()
                    } else {
                        format!("{}:{}", path.display(), sink.0)
                    });
                }
            }
            OutputMode::FilesWithMatches => {
                let mut sink = FirstMatch(false);
                if searcher.search_path(&matcher, &path, &mut sink).is_ok() && sink.0 {
                    files += 1;
                    let mtime = std::fs::metadata(&path).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH);
                    dated.push((mtime, path));
                }
            }
        }
    }
    if mode == OutputMode::FilesWithMatches {
        dated.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        entries = dated.into_iter().map(|(_, p)| p.display().to_string()).collect();
    }

    let available = entries.len();
    let page: Vec<String> = entries.into_iter().skip(skip).take(limit).collect();
    let truncated = stopped_early || skip.saturating_add(page.len()) < available;
    let pagination = if truncated || skip > 0 {
        format!(
            "\n\n[Showing results with pagination = limit: {}, offset: {skip}]",
            input.head_limit.unwrap_or(DEFAULT_HEAD_LIMIT as u64)
        )
    } else {
        String::new()
    };
    let text = match mode {
        OutputMode::Content if page.is_empty() => "No matches found".to_string(),
        OutputMode::Content => format!("{}{pagination}", page.join("\n")),
        OutputMode::FilesWithMatches if page.is_empty() => "No files found".to_string(),
        OutputMode::FilesWithMatches => {
            format!("Found {files} file{}\n{}{pagination}", if files == 1 { "" } else { "s" }, page.join("\n"))
        }
        OutputMode::Count if page.is_empty() => "No matches found".to_string(),
        OutputMode::Count => format!(
            "{}\n\nFound {total_count} total occurrence{} across {files} file{}.{pagination}",
            page.join("\n"),
            if total_count == 1 { "" } else { "s" },
            if files == 1 { "" } else { "s" }
        ),
    };
    Ok(SearchResult { text, files, truncated })
}

/// The files to search under `root`, in a stable order: `.gitignore`/`.ignore`
/// respected (inside a git repository or not), hidden files included, version
/// control directories skipped, then `glob` and `type` filters as in ripgrep.
fn walk(root: &Path, input: &GrepInput, hidden: &fs::Hidden) -> Result<impl Iterator<Item = PathBuf>, ToolError> {
    let hidden = hidden.clone();
    let mut builder = ignore::WalkBuilder::new(root);
    builder.hidden(false).require_git(false).sort_by_file_name(|a, b| a.cmp(b)).filter_entry(move |e| {
        !matches!(e.file_name().to_str(), Some(".git" | ".svn" | ".hg" | ".bzr" | ".jj"))
            && !hidden.contains(e.path(), e.file_type().is_some_and(|t| t.is_dir()))
    });
    if let Some(glob) = &input.glob {
        let mut overrides = ignore::overrides::OverrideBuilder::new(root);
        // Like Claude Code, a space- or comma-free list is one glob; braces work.
        for g in split_globs(glob) {
            overrides.add(g).map_err(|e| ToolError::invalid_input(format!("Invalid glob `{g}`: {e}")))?;
        }
        builder
            .overrides(overrides.build().map_err(|e| ToolError::invalid_input(format!("Invalid glob `{glob}`: {e}")))?);
    }
    if let Some(ty) = &input.file_type {
        let mut types = ignore::types::TypesBuilder::new();
        types.add_defaults();
        types.select(ty);
        let types = types.build().map_err(|e| ToolError::invalid_input(format!("Unknown file type `{ty}`: {e}")))?;
        builder.types(types);
    }
    Ok(builder
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(ignore::DirEntry::into_path))
}

/// Splits a `glob` argument on whitespace and on commas outside braces.
fn split_globs(glob: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in glob.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' | ' ' | '\t' if depth == 0 => {
                if start < i {
                    out.push(&glob[start..i]);
                }
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    if start < glob.len() {
        out.push(&glob[start..]);
    }
    out
}

/// Stops at the first match.
struct FirstMatch(bool);

impl Sink for FirstMatch {
    type Error = std::io::Error;
    fn matched(&mut self, _: &Searcher, _: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.0 = true;
        Ok(false)
    }
}

/// Counts matching lines, as `rg --count` does.
struct CountLines(u64);

impl Sink for CountLines {
    type Error = std::io::Error;
    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.0 += m.lines().count().max(1) as u64;
        Ok(true)
    }
}

const PROMPT: &str = "A powerful search tool built on ripgrep

  Usage:
  - ALWAYS use Grep for search tasks. NEVER invoke `grep` or `rg` as a Bash command.
  - Supports full regex syntax (e.g., \"log.*Error\", \"function\\s+\\w+\")
  - Filter files with glob parameter (e.g., \"*.js\", \"**/*.tsx\") or type parameter (e.g., \"js\", \"py\", \"rust\")
  - Output modes: \"content\" shows matching lines, \"files_with_matches\" shows only file paths (default), \"count\" shows match counts
  - Pattern syntax: Uses ripgrep (not grep) - literal braces need escaping (use `interface\\{\\}` to find `interface{}` in Go code)
  - Multiline matching: By default patterns match within single lines only. For cross-line patterns like `struct \\{[\\s\\S]*?field`, use `multiline: true`
  - Respects .gitignore; hidden files are searched, version-control directories are not; binary files are skipped
";

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests).
toolhost_sdk::requests!(r#"{"workspace": "read-only"}"#);

export_tool!(Grep);

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("grep-test-{}-{:?}", std::process::id(), std::thread::current().id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join(".gitignore"), "skip.txt\n").unwrap();
        std::fs::write(dir.join("skip.txt"), "needle\n").unwrap();
        std::fs::write(dir.join("src/a.rs"), "fn main() {\n    let needle = 1;\n}\n").unwrap();
        std::fs::write(dir.join("src/b.py"), "needle = 2\nNEEDLE = 3\n").unwrap();
        std::fs::write(dir.join("bin.dat"), b"needle\0binary").unwrap();
        dir
    }

    fn run(dir: &Path, input: GrepInput) -> String {
        search(dir, &input, &fs::Hidden::default()).unwrap().text
    }

    #[test]
    fn modes_and_flags() {
        let dir = tree();
        let files = run(&dir, GrepInput { pattern: "needle".into(), ..Default::default() });
        assert!(files.starts_with("Found 2 files\n"), "{files}");
        assert!(!files.contains("skip.txt") && !files.contains("bin.dat"), "{files}");

        let content = run(
            &dir,
            GrepInput {
                pattern: "needle".into(),
                output_mode: Some(OutputMode::Content),
                file_type: Some("rust".into()),
                ..Default::default()
            },
        );
        assert_eq!(content, format!("{}:2:    let needle = 1;", dir.join("src/a.rs").display()));

        let ctx = run(
            &dir,
            GrepInput {
                pattern: "let".into(),
                output_mode: Some(OutputMode::Content),
                before: Some(1),
                glob: Some("*.rs".into()),
                ..Default::default()
            },
        );
        assert_eq!(ctx, format!("{0}-1-fn main() {{\n{0}:2:    let needle = 1;", dir.join("src/a.rs").display()));

        let count = run(
            &dir,
            GrepInput {
                pattern: "needle".into(),
                output_mode: Some(OutputMode::Count),
                case_insensitive: Some(true),
                ..Default::default()
            },
        );
        assert!(count.contains(&format!("{}:2", dir.join("src/b.py").display())), "{count}");
        assert!(count.ends_with("Found 3 total occurrences across 2 files."), "{count}");

        let paged = run(
            &dir,
            GrepInput {
                pattern: "needle".into(),
                output_mode: Some(OutputMode::Content),
                case_insensitive: Some(true),
                head_limit: Some(1),
                offset: Some(1),
                ..Default::default()
            },
        );
        assert!(paged.ends_with("[Showing results with pagination = limit: 1, offset: 1]"), "{paged}");
        assert_eq!(paged.lines().count(), 3, "{paged}");

        let multi = run(
            &dir,
            GrepInput { pattern: r"main\(\) \{.*needle".into(), multiline: Some(true), ..Default::default() },
        );
        assert!(multi.starts_with("Found 1 file\n"), "{multi}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_patterns_are_model_errors() {
        let dir = tree();
        let e =
            search(&dir, &GrepInput { pattern: "(".into(), ..Default::default() }, &fs::Hidden::default()).unwrap_err();
        assert!(e.message.starts_with("Invalid regular expression"), "{}", e.message);
        let e = search(
            &dir,
            &GrepInput { pattern: "x".into(), file_type: Some("nosuchtype".into()), ..Default::default() },
            &fs::Hidden::default(),
        )
        .unwrap_err();
        assert!(e.message.contains("Unknown file type"), "{}", e.message);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn splits_glob_lists() {
        assert_eq!(split_globs("*.{ts,tsx}"), vec!["*.{ts,tsx}"]);
        assert_eq!(split_globs("*.rs, *.toml"), vec!["*.rs", "*.toml"]);
    }
}
