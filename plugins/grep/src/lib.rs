//! The `Grep` tool: ripgrep's search (its own crates) over the working
//! directories, with the flags, output and texts of Claude Code's Grep,
//! which runs `rg --hidden --glob '!.git' … --max-columns 500` and
//! post-processes its output: 2.1.88's, with 2.1.328's changes where they
//! are made here (a missing path is an error of the call; count mode
//! always names the file and lists files in path order; context lines are
//! relative like match lines).

use serde::Deserializer;
use std::path::{Path, PathBuf};
use toolhost_sdk::fs::{self, Access};
use toolhost_sdk::search;
use toolhost_sdk::{Context, Deserialize, JsonSchema, Output, PathAccess, Tool, ToolError, export_tool, serde_json};

/// Lines or entries returned when the model gives no `head_limit`.
pub const DEFAULT_HEAD_LIMIT: usize = 250;
/// Longer lines are replaced by a note, as `rg --max-columns 500` does.
pub const MAX_COLUMNS: u32 = 500;
/// Directories of version control systems, never searched.
pub const VCS_DIRECTORIES: [&str; 6] = [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];

/// What the search returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum OutputMode {
    // Matching lines, with context lines when asked.
    #[serde(rename = "content")]
    Content,
    // Paths of files that match (the default).
    #[default]
    #[serde(rename = "files_with_matches")]
    FilesWithMatches,
    // Number of matching lines per file.
    #[serde(rename = "count")]
    Count,
}

impl OutputMode {
    fn name(self) -> &'static str {
        match self {
            OutputMode::Content => "content",
            OutputMode::FilesWithMatches => "files_with_matches",
            OutputMode::Count => "count",
        }
    }
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
    #[serde(rename = "-B", default, deserialize_with = "lenient_number")]
    #[schemars(with = "Option<f64>")]
    pub before: Option<f64>,
    /// Number of lines to show after each match (rg -A). Requires output_mode: "content", ignored otherwise.
    #[serde(rename = "-A", default, deserialize_with = "lenient_number")]
    #[schemars(with = "Option<f64>")]
    pub after: Option<f64>,
    /// Alias for context.
    #[serde(rename = "-C", default, deserialize_with = "lenient_number")]
    #[schemars(with = "Option<f64>")]
    pub context_short: Option<f64>,
    /// Number of lines to show before and after each match (rg -C). Requires output_mode: "content", ignored otherwise.
    #[serde(default, deserialize_with = "lenient_number")]
    #[schemars(with = "Option<f64>")]
    pub context: Option<f64>,
    /// Show line numbers in output (rg -n). Requires output_mode: "content", ignored otherwise. Defaults to true.
    #[serde(rename = "-n", default, deserialize_with = "lenient_bool")]
    #[schemars(with = "Option<bool>")]
    pub line_numbers: Option<bool>,
    /// Case insensitive search (rg -i)
    #[serde(rename = "-i", default, deserialize_with = "lenient_bool")]
    #[schemars(with = "Option<bool>")]
    pub case_insensitive: Option<bool>,
    /// Print only the matched (non-empty) parts of each matching line, one match per output line (rg -o / --only-matching). Requires output_mode: "content", ignored otherwise. Defaults to false.
    #[serde(rename = "-o", default, deserialize_with = "lenient_bool")]
    #[schemars(with = "Option<bool>")]
    pub only_matching: Option<bool>,
    /// File type to search (rg --type). Common types: js, py, rust, go, java, etc. More efficient than include for standard file types.
    #[serde(rename = "type")]
    pub file_type: Option<String>,
    /// Limit output to first N lines/entries, equivalent to "| head -N". Works across all output modes: content (limits output lines), files_with_matches (limits file paths), count (limits count entries). Defaults to 250 when unspecified. Pass 0 for unlimited (use sparingly — large result sets waste context).
    #[serde(default, deserialize_with = "lenient_number")]
    #[schemars(with = "Option<f64>")]
    pub head_limit: Option<f64>,
    /// Skip first N lines/entries before applying head_limit, equivalent to "| tail -n +N | head -N". Works across all output modes. Defaults to 0.
    #[serde(default, deserialize_with = "lenient_number")]
    #[schemars(with = "Option<f64>")]
    pub offset: Option<f64>,
    /// Enable multiline mode where . matches newlines and patterns can span lines (rg -U --multiline-dotall). Default: false.
    #[serde(default, deserialize_with = "lenient_bool")]
    #[schemars(with = "Option<bool>")]
    pub multiline: Option<bool>,
}

impl GrepInput {
    /// The `path` the model gave, when it gave a non-empty one.
    fn given_path(&self) -> Option<&str> {
        self.path.as_deref().filter(|p| !p.is_empty())
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Lenient<T> {
    Value(T),
    Text(String),
}

/// A number that also accepts a decimal literal in a string (`"30"`,
/// `"-5"`, `"2.5"`), as Claude Code's schema does.
fn lenient_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    match Option::<Lenient<f64>>::deserialize(d)? {
        None => Ok(None),
        Some(Lenient::Value(n)) => Ok(Some(n)),
        Some(Lenient::Text(t)) => {
            let digits = t.strip_prefix('-').unwrap_or(&t);
            let (int, frac) = digits.split_once('.').unwrap_or((digits, "1"));
            let decimal = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            match t.parse::<f64>() {
                Ok(n) if decimal(int) && decimal(frac) && n.is_finite() => Ok(Some(n)),
                _ => Err(serde::de::Error::custom(format!("expected a number, got the string {t:?}"))),
            }
        }
    }
}

/// A boolean that also accepts the strings `"true"` and `"false"`.
fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    match Option::<Lenient<bool>>::deserialize(d)? {
        None => Ok(None),
        Some(Lenient::Value(b)) => Ok(Some(b)),
        Some(Lenient::Text(t)) if t == "true" => Ok(Some(true)),
        Some(Lenient::Text(t)) if t == "false" => Ok(Some(false)),
        Some(Lenient::Text(t)) => Err(serde::de::Error::custom(format!("expected a boolean, got the string {t:?}"))),
    }
}

pub struct Grep;

impl Tool for Grep {
    type Input = GrepInput;
    const NAME: &'static str = "Grep";
    const PATH_FIELDS: &'static [(&'static str, PathAccess)] = &[("path", PathAccess::Search)];
    const READ_ONLY_HINT: Option<bool> = Some(true);
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(true);
    const CHECKS_PERMISSIONS: bool = false;
    const MAX_RESULT_SIZE_CHARS: Option<u64> = Some(20_000);
    const DESCRIPTION: &'static str = "A powerful search tool built on ripgrep.";

    fn prompt() -> String {
        include_str!("prompt.md").to_string()
    }
    fn search_hint() -> Option<String> {
        Some("search file contents with regex (ripgrep)".into())
    }
    fn validate_input(input: &GrepInput, ctx: &Context) -> Result<(), ToolError> {
        // 2.1.328 takes only whole numbers of 0 or more for paging.
        for (name, value) in [("head_limit", input.head_limit), ("offset", input.offset)] {
            if let Some(v) = value.filter(|v| !(v.fract() == 0.0 && *v >= 0.0)) {
                let unlimited = if name == "head_limit" { " Pass 0 for unlimited." } else { "" };
                return Err(ToolError::invalid_input(format!(
                    "{name} must be a whole number of 0 or more, got {}.{unlimited}",
                    js_number(v)
                )));
            }
        }
        if let Some(given) = input.given_path() {
            fs::confine(ctx, given, Access::Read)?;
        }
        Ok(())
    }

    fn call(input: GrepInput, ctx: &Context) -> Result<Output, ToolError> {
        let root = match input.given_path() {
            Some(given) => fs::confine(ctx, given, Access::Read)?,
            None => PathBuf::from(ctx.cwd()),
        };
        // 2.1.328 checks the path in the call: its error is plain.
        if let Err(e) = std::fs::metadata(&root) {
            let given = input.given_path().unwrap_or_default();
            return Err(match e.kind() {
                std::io::ErrorKind::NotFound => {
                    ToolError::not_found(fs::not_found_message(ctx, "Path does not exist:", given, &root))
                }
                _ => fs::io_error(ctx, &root, &e),
            });
        }
        // The host's search skips what the permission rules hide.
        let result = search_in(Path::new(ctx.cwd()), &root, &input, &fs::HiddenPaths::default())?;
        let mode = input.output_mode.unwrap_or_default();
        let mut structured = serde_json::json!({
            "mode": mode.name(),
            "numFiles": result.files,
            "filenames": result.filenames,
        });
        if let Some(limit) = result.applied_limit {
            structured["appliedLimit"] = serde_json::json!(limit);
        }
        if let Some(offset) = input.offset.filter(|o| *o > 0.0) {
            structured["appliedOffset"] = serde_json::json!(offset);
        }
        Ok(Output::text(result.text).with_structured(structured))
    }
}

/// The outcome of [`search`].
#[derive(Debug, PartialEq)]
pub struct SearchResult {
    /// What the model sees.
    pub text: String,
    /// Files listed (files_with_matches) or counted (count); 0 in content mode.
    pub files: usize,
    /// The paths listed in files_with_matches mode.
    pub filenames: Vec<String>,
    /// `head_limit` left entries out: the limit in force.
    pub applied_limit: Option<f64>,
    /// Whether entries were left out by `head_limit`.
    pub truncated: bool,
}

/// Searches `root` (a file or a directory) as `input` asks, with paths shown
/// relative to `root` (a directory) or its directory. Runs unchanged in the
/// component and natively (benchmarks).
pub fn search(root: &Path, input: &GrepInput, hidden: &fs::HiddenPaths) -> Result<SearchResult, ToolError> {
    let cwd = if root.is_dir() { root } else { root.parent().unwrap_or(root) };
    search_in(cwd, root, input, hidden)
}

/// Searches `root` as Claude Code's Grep does from the working directory
/// `cwd`: ripgrep's output lines, paged by `head_limit`/`offset`, paths made
/// relative to `cwd`, and the texts around them. A pattern, glob, type or
/// context ripgrep refuses is an error quoting ripgrep's explanation.
pub fn search_in(
    cwd: &Path,
    root: &Path,
    input: &GrepInput,
    hidden: &fs::HiddenPaths,
) -> Result<SearchResult, ToolError> {
    let mode = input.output_mode.unwrap_or_default();
    let cwd_text = cwd.to_string_lossy();
    let offset = input.offset.unwrap_or(0.0);
    let page = Page::new(input.head_limit, offset);
    let relative = |p: &str| fs::to_relative_path(&cwd_text, p);
    let limit_info = |applied: Option<f64>| {
        let mut parts = Vec::new();
        if let Some(limit) = applied {
            parts.push(format!("limit: {limit}"));
        }
        if offset > 0.0 {
            parts.push(format!("offset: {offset}"));
        }
        parts.join(", ")
    };
    // Entries before paging, for "No entries at this offset".
    let mut total = 0;
    let (items, applied_limit) = match mode {
        OutputMode::Content if input.only_matching == Some(true) => {
            // Every line is needed: a line gives any number of matches.
            let lines = ripgrep(cwd, root, input, hidden, mode, None)?;
            let lines = numbered_lines::binary_file(root, input, lines);
            let lines = numbered_lines::parts(lines, input, root.is_file());
            total = lines.len();
            page.apply(relativize_content(lines, &relative))
        }
        OutputMode::Content => {
            let lines = ripgrep(cwd, root, input, hidden, mode, page.enough())?;
            let lines = numbered_lines::binary_file(root, input, lines);
            let lines = numbered_lines::shown_lines(lines, input, root.is_file());
            total = lines.len();
            page.apply(relativize_content(lines, &relative))
        }
        OutputMode::Count => {
            let lines = ripgrep(cwd, root, input, hidden, mode, None)?;
            // `path:count`: the path is what precedes the last colon. A
            // single file searched gives a bare count: 2.1.328 names it too.
            let mut counts: Vec<(String, String)> = lines
                .into_iter()
                .map(|l| match l.rfind(':') {
                    Some(i) if i > 0 => (relative(&l[..i]), l[i..].to_string()),
                    _ => (relative(&root.to_string_lossy()), format!(":{l}")),
                })
                .collect();
            // In path order, as 2.1.328 sorts them.
            counts.sort_by(|a, b| a.0.cmp(&b.0));
            let (items, applied) = page.apply(counts.into_iter().map(|(path, count)| path + &count).collect());
            (items, applied)
        }
        OutputMode::FilesWithMatches => {
            let mut dated: Vec<(f64, String)> = ripgrep(cwd, root, input, hidden, mode, None)?
                .into_iter()
                .map(|p| (mtime_ms(Path::new(&p)), p))
                .collect();
            // Newest first; equal times in locale order of the path.
            dated.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| fs::locale_compare(&a.1, &b.1)));
            total = dated.len();
            let (items, applied) = page.apply(dated.into_iter().map(|(_, p)| p).collect());
            (items.iter().map(|p| relative(p)).collect(), applied)
        }
    };
    let info = limit_info(applied_limit);
    let (text, files) = match mode {
        OutputMode::Content => {
            let content = match (items.is_empty(), offset > 0.0 && total > 0) {
                (false, _) => items.join("\n"),
                (true, true) => "No entries at this offset".to_string(),
                (true, false) => "No matches found".to_string(),
            };
            let text = if info.is_empty() {
                content
            } else {
                format!("{content}\n\n[Showing results with pagination = {info}]")
            };
            (text, 0)
        }
        OutputMode::Count => {
            let (mut matches, mut files) = (0u64, 0usize);
            for line in &items {
                if let Some(i) = line.rfind(':').filter(|i| *i > 0)
                    && let Some(n) = parse_int(&line[i + 1..])
                {
                    matches += n;
                    files += 1;
                }
            }
            let content = if items.is_empty() { "No matches found".to_string() } else { items.join("\n") };
            let pagination = if info.is_empty() { String::new() } else { format!(" with pagination = {info}") };
            let text = format!(
                "{content}\n\nFound {matches} total {} across {files} {}.{pagination}",
                if matches == 1 { "occurrence" } else { "occurrences" },
                if files == 1 { "file" } else { "files" }
            );
            (text, files)
        }
        OutputMode::FilesWithMatches => {
            let n = items.len();
            let text = if n == 0 && offset > 0.0 && total > 0 {
                format!("No entries at this offset. [Showing results with pagination = {info}]")
            } else if n == 0 {
                "No files found".to_string()
            } else {
                let info = if info.is_empty() { String::new() } else { format!(" {info}") };
                format!("Found {n} {}{info}\n{}", if n == 1 { "file" } else { "files" }, items.join("\n"))
            };
            (text, n)
        }
    };
    let filenames = if mode == OutputMode::FilesWithMatches { items } else { Vec::new() };
    Ok(SearchResult { text, files, filenames, applied_limit, truncated: applied_limit.is_some() })
}

/// Content lines with their paths relative, match lines (`path:…`) and,
/// as 2.1.328 shows them, context lines (`path-…`) alike. A context line's
/// path is that of a match line of its group (the lines between `--`
/// separators, which context always brings, come from one file), so a `-`
/// in a name does not mislead.
fn relativize_content(lines: Vec<String>, relative: &dyn Fn(&str) -> String) -> Vec<String> {
    // `path:…`: the path of a match line is what precedes its first colon.
    let match_path = |l: &str| l.find(':').filter(|&i| i > 0).map(|i| l[..i].to_string());
    let mut out = Vec::with_capacity(lines.len());
    for group in lines.split(|l| l == "--") {
        if !out.is_empty() {
            out.push("--".to_string());
        }
        let paths = GroupPaths::new(group.iter().filter_map(|l| match_path(l)));
        for line in group {
            let path = paths.context_path(line).map(str::to_string).or_else(|| match_path(line));
            out.push(match path {
                Some(path) => format!("{}{}", relative(&path), &line[path.len()..]),
                None => line.clone(),
            });
        }
    }
    out
}

/// The match lines' paths of one group of content lines, for telling a
/// context line's path (`path-…`): the longest of them the line starts
/// with, a `-` following. Looked up by the line's own dashes, so a group
/// of many matches (20,000 lines of one file, or one line in each of
/// 20,000 files) costs a few lookups a line, not one comparison per path.
struct GroupPaths<P> {
    paths: std::collections::HashSet<P>,
    longest: usize,
}

impl<P: std::borrow::Borrow<str> + std::hash::Hash + Eq> GroupPaths<P> {
    fn new(paths: impl IntoIterator<Item = P>) -> Self {
        let paths: std::collections::HashSet<P> = paths.into_iter().collect();
        let longest = paths.iter().map(|p| p.borrow().len()).max().unwrap_or(0);
        GroupPaths { paths, longest }
    }

    /// The longest path `p` of the group with `line` starting `p-`.
    fn context_path<'l>(&self, line: &'l str) -> Option<&'l str> {
        let head = &line.as_bytes()[..line.len().min(self.longest + 1)];
        head.iter()
            .enumerate()
            .rev()
            .filter(|&(i, &b)| b == b'-' && i > 0)
            .map(|(i, _)| &line[..i])
            .find(|prefix| self.paths.contains(*prefix))
    }
}

/// A number as JavaScript prints it, for the numbers a model sends (an
/// integer without a fraction part).
fn js_number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "Infinity".into() } else { "-Infinity".into() }
    } else {
        v.to_string()
    }
}

/// JavaScript's `parseInt(s, 10)` for what follows a count's colon:
/// leading digits, `None` when there are none.
fn parse_int(s: &str) -> Option<u64> {
    let s = s.trim_start_matches(fs::is_js_whitespace);
    let digits: &str = &s[..s.bytes().take_while(u8::is_ascii_digit).count()];
    digits.parse().ok()
}

/// Modification time in milliseconds as Node reports it (`mtimeMs`), 0 when
/// the file cannot be examined.
fn mtime_ms(path: &Path) -> f64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs() as f64 * 1000.0 + f64::from(d.subsec_nanos()) / 1e6)
}

/// Claude Code's `head_limit`/`offset` paging of a list, with JavaScript's
/// `slice` on the numbers given.
#[derive(Clone, Copy, Debug)]
struct Page {
    limit: Option<f64>,
    offset: f64,
}

impl Page {
    fn new(head_limit: Option<f64>, offset: f64) -> Page {
        Page { limit: head_limit, offset }
    }

    /// How many lines are enough to page exactly as with all of them (the
    /// search may stop there), or `None` when all are needed.
    fn enough(&self) -> Option<usize> {
        let limit = self.limit.unwrap_or(DEFAULT_HEAD_LIMIT as f64);
        let end = self.offset + limit;
        (limit > 0.0 && self.offset >= 0.0 && end.is_finite() && end < 1e15).then(|| end.floor() as usize + 1)
    }

    /// The page of `items`, and the limit applied when it left entries out.
    fn apply(&self, items: Vec<String>) -> (Vec<String>, Option<f64>) {
        let len = items.len();
        if self.limit == Some(0.0) {
            let (start, end) = js_slice(len, self.offset, None);
            return (items.into_iter().skip(start).take(end - start).collect(), None);
        }
        let limit = self.limit.unwrap_or(DEFAULT_HEAD_LIMIT as f64);
        let (start, end) = js_slice(len, self.offset, Some(self.offset + limit));
        let truncated = len as f64 - self.offset > limit;
        (items.into_iter().skip(start).take(end - start).collect(), truncated.then_some(limit))
    }
}

/// The bounds JavaScript's `Array.prototype.slice(start, end)` takes of `len` items.
fn js_slice(len: usize, start: f64, end: Option<f64>) -> (usize, usize) {
    let at = |x: f64| {
        let x = if x.is_nan() { 0.0 } else { x.trunc() };
        if x < 0.0 { (len as f64 + x).max(0.0) as usize } else { x.min(len as f64) as usize }
    };
    let (s, e) = (at(start), end.map_or(len, at));
    (s, e.max(s))
}

/// The lines ripgrep prints for `input` (see [`search_in`]), as Claude Code
/// reads them: the whole output trimmed, split at newlines, a trailing `\r`
/// dropped from each line, empty lines left out. With `enough`, the search
/// stops at the first file after which more lines than that were printed.
fn ripgrep(
    cwd: &Path,
    root: &Path,
    input: &GrepInput,
    hidden: &fs::HiddenPaths,
    mode: OutputMode,
    enough: Option<usize>,
) -> Result<Vec<String>, ToolError> {
    let stdout = engine::run(ripgrep_query(cwd, root, input, mode, enough)?, hidden)?;
    Ok(String::from_utf8_lossy(&stdout)
        .trim_matches(fs::is_js_whitespace)
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect())
}

/// A context length as ripgrep parses the number Claude Code passes it (in
/// JavaScript's decimal form): a whole number of 0 or more (a very large one
/// covers any file, so it is held at `u32::MAX`); anything else is refused
/// with ripgrep's message for `flag`.
fn context_len(n: Option<f64>, flag: &str) -> Result<u32, ToolError> {
    match n {
        None => Ok(0),
        // From 1e21 on, JavaScript writes a number with an exponent.
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n < 1e21 => Ok(n.min(f64::from(u32::MAX)) as u32),
        Some(_) => Err(search::refused(&format!(
            "rg: error parsing flag {flag}: value is not a valid number: invalid digit found in string"
        ))),
    }
}

/// The arguments Claude Code's Grep gives `rg` for `input`, or the error
/// ripgrep gives for a number it refuses before searching.
fn ripgrep_query(
    cwd: &Path,
    root: &Path,
    input: &GrepInput,
    mode: OutputMode,
    enough: Option<usize>,
) -> Result<search::Query, ToolError> {
    let only_matching = mode == OutputMode::Content && input.only_matching == Some(true);
    // -C/context win over -B/-A; context over -C.
    let (before, after) = match mode {
        OutputMode::Content => match input.context.or(input.context_short) {
            Some(c) => (context_len(Some(c), "-C")?, context_len(Some(c), "-C")?),
            // Passed in this order: the first refused is the one reported.
            None => (context_len(input.before, "-B")?, context_len(input.after, "-A")?),
        },
        OutputMode::FilesWithMatches | OutputMode::Count => (0, 0),
    };
    Ok(search::Query {
        pattern: input.pattern.clone(),
        root: root.to_string_lossy().into_owned(),
        cwd: cwd.to_string_lossy().into_owned(),
        mode: match mode {
            OutputMode::Content => search::SearchMode::Content,
            OutputMode::Count => search::SearchMode::Count,
            OutputMode::FilesWithMatches => search::SearchMode::FilesWithMatches,
        },
        case_insensitive: input.case_insensitive.unwrap_or(false),
        multiline: input.multiline.unwrap_or(false),
        // Content lines come numbered, to be taken apart (numbers are
        // dropped after where not asked for), matched parts whole, other
        // lines cut by ripgrep only where they are surely over the limit: a
        // UTF-16 unit is at most three bytes.
        line_numbers: mode == OutputMode::Content,
        before,
        after,
        globs: split_globs(input.glob.as_deref().unwrap_or("")).into_iter().map(str::to_owned).collect(),
        file_type: input.file_type.clone().filter(|t| !t.is_empty()),
        max_columns: (!only_matching).then_some(3 * MAX_COLUMNS),
        enough_lines: enough.map(|e| e as u64),
    })
}

/// In the component: the host's `search` capability (ripgrep natively, on
/// every core, skipping what the permission rules hide).
#[cfg(target_arch = "wasm32")]
mod engine {
    use toolhost_sdk::{ToolError, fs, search};

    pub fn run(query: search::Query, _hidden: &fs::HiddenPaths) -> Result<Vec<u8>, ToolError> {
        search::run(&query)
    }
}

/// Natively (unit tests, benchmarks): the engine the host runs, in process,
/// given the query and answering as the host's capability does.
#[cfg(not(target_arch = "wasm32"))]
mod engine {
    use toolhost_sdk::{ToolError, fs, search};
    use toolhost_search::{Confinement, Options};

    toolhost_search::contract_mapping!(search);

    pub fn run(query: search::Query, hidden: &fs::HiddenPaths) -> Result<Vec<u8>, ToolError> {
        let hidden = hidden.clone();
        let options = Options {
            threads: Options::cores(),
            max_output: 64 << 20,
            max_buffer: 64 << 20,
            confinement: Confinement::Ambient,
            skip: std::sync::Arc::new(move |path, is_dir| hidden.contains(path, is_dir)),
            stop: &|| false,
        };
        search::answer(toolhost_search::run(&query_from_contract(query), &options).map_err(error_to_contract))
    }
}

/// `-o`: the matched parts of each match line, one per line, as 2.1.328
/// prints them (`path:N:part`; a part spanning lines gives one line per
/// line it spans). ripgrep's lines come whole and numbered; the pattern is
/// compiled again here, as ripgrep compiles it (the same regex engine, `^`
/// and `$` at line ends), and run over each match line, or in multiline
/// mode over each run of adjacent match lines.
mod numbered_lines {
    use super::{GrepInput, GroupPaths, MAX_COLUMNS};

    /// A line of ripgrep's numbered content output, taken apart.
    struct Line<'a> {
        /// `path` and its separator, or nothing for a single file.
        path: &'a str,
        number: u64,
        is_match: bool,
        text: &'a str,
    }

    /// `path:N:text` (a match) or `path-N-text` (context); `N:text` and
    /// `N-text` for a single file. A path is what precedes the first
    /// `:N:`, or a match path of the group followed by `-N-`.
    fn split<'a>(line: &'a str, single_file: bool, match_paths: &GroupPaths<&str>) -> Option<Line<'a>> {
        let numbered = |rest: &'a str, sep: char| -> Option<(u64, &'a str)> {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let after = rest[digits..].strip_prefix(sep)?;
            Some((rest[..digits].parse().ok()?, after))
        };
        if single_file {
            let digits = line.bytes().take_while(u8::is_ascii_digit).count();
            let is_match = line[digits..].starts_with(':');
            let (number, text) = numbered(line, if is_match { ':' } else { '-' })?;
            return Some(Line { path: "", number, is_match, text });
        }
        if let Some(path) = match_path(line) {
            let (number, text) = numbered(&line[path.len() + 1..], ':')?;
            return Some(Line { path, number, is_match: true, text });
        }
        let path = match_paths.context_path(line)?;
        let (number, text) = numbered(&line[path.len() + 1..], '-')?;
        Some(Line { path, number, is_match: false, text })
    }

    /// The path of a match line: before the first colon that a line
    /// number and a colon follow.
    fn match_path(line: &str) -> Option<&str> {
        let mut from = 0;
        while let Some(i) = line[from..].find(':').map(|i| from + i) {
            let rest = &line[i + 1..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if i > 0 && digits > 0 && rest[digits..].starts_with(':') {
                return Some(&line[..i]);
            }
            from = i + 1;
        }
        None
    }

    /// 2.1.328's note for a part or context line over 500 characters
    /// (counted as JavaScript counts them).
    fn shown(text: &str, is_match: bool) -> &str {
        if text.encode_utf16().count() <= MAX_COLUMNS as usize {
            text
        } else if is_match {
            "[Omitted long matching line]"
        } else {
            "[Omitted long context line]"
        }
    }

    /// `path:N:text` or the like, `N` left out unless line numbers were asked for.
    fn format(numbers: bool, path: &str, number: u64, sep: char, text: &str) -> String {
        let path = if path.is_empty() { String::new() } else { format!("{path}{sep}") };
        if numbers { format!("{path}{number}{sep}{text}") } else { format!("{path}{text}") }
    }

    /// Content lines as 2.1.328 shows them (ripgrep's lines come numbered,
    /// and cut by ripgrep only past three times the limit, in bytes): a
    /// line over 500 characters replaced by its note, line numbers dropped
    /// when not asked for.
    /// ripgrep's warning after the matches of a file it stopped searching
    /// at a NUL byte, as 2.1.328 words it (from ripgrep's JSON):
    /// `path:binary file matches (found "\0" byte around offset N)`.
    fn binary_note(line: &str) -> Option<String> {
        // A file searched on its own: the note as ripgrep prints it.
        if line.starts_with(BINARY_MATCHES) {
            return Some(line.to_string());
        }
        const WARNING: &str = ": WARNING: stopped searching binary file after match (found \"\\0\" byte around offset ";
        let at = line.rfind(WARNING)?;
        let offset = line[at + WARNING.len()..].strip_suffix(')')?;
        if offset.is_empty() || !offset.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(format!("{}:binary file matches (found \"\\0\" byte around offset {offset})", &line[..at]))
    }

    /// What ripgrep prints for a file it was given that holds a NUL byte.
    const BINARY_MATCHES: &str = "binary file matches (found \"\\0\" byte around offset ";

    /// ripgrep's lines for `root`, where `root` is one file that holds a
    /// NUL and ripgrep printed only its note: the file's matching lines
    /// that hold no NUL, numbered, then the note, as 2.1.328 shows them
    /// (from ripgrep's JSON, which reports every match of such a file).
    /// Without context lines, outside multiline mode and for files of at
    /// most 16 MiB only (the file is read whole); else, and for anything
    /// else, the lines as they are.
    pub(super) fn binary_file(root: &std::path::Path, input: &GrepInput, lines: Vec<String>) -> Vec<String> {
        const MAX_READ: u64 = 16 << 20;
        let plain = input.context.or(input.context_short).or(input.before).or(input.after).is_none_or(|n| n == 0.0)
            && input.multiline != Some(true);
        let small = std::fs::metadata(root).is_ok_and(|m| m.is_file() && m.len() <= MAX_READ);
        if !(plain && lines.len() == 1 && lines[0].starts_with(BINARY_MATCHES) && small) {
            return lines;
        }
        let (Ok(bytes), Ok(regex)) = (
            std::fs::read(root),
            regex::RegexBuilder::new(&input.pattern)
                .case_insensitive(input.case_insensitive.unwrap_or(false))
                .multi_line(true)
                .build(),
        ) else {
            return lines;
        };
        let mut out: Vec<String> = bytes
            .split(|&b| b == b'\n')
            .enumerate()
            .filter(|(_, line)| !line.contains(&0))
            .filter_map(|(i, line)| {
                let text = String::from_utf8_lossy(line.strip_suffix(b"\r").unwrap_or(line)).into_owned();
                regex.is_match(&text).then(|| format!("{}:{text}", i + 1))
            })
            .collect();
        out.extend(lines);
        out
    }

    pub(super) fn shown_lines(lines: Vec<String>, input: &GrepInput, single_file: bool) -> Vec<String> {
        let numbers = input.line_numbers.unwrap_or(true);
        let mut out = Vec::with_capacity(lines.len());
        for group in lines.split(|l| l == "--") {
            if !out.is_empty() {
                out.push("--".to_string());
            }
            let match_paths = GroupPaths::new(group.iter().filter_map(|l| match_path(l)));
            for line in group {
                out.push(match split(line, single_file, &match_paths) {
                    Some(l) => {
                        let text = shown(l.text, l.is_match);
                        if numbers && text.len() == l.text.len() {
                            line.clone()
                        } else {
                            format(numbers, l.path, l.number, if l.is_match { ':' } else { '-' }, text)
                        }
                    }
                    None => binary_note(line).unwrap_or_else(|| line.clone()),
                });
            }
        }
        out
    }

    pub(super) fn parts(lines: Vec<String>, input: &GrepInput, single_file: bool) -> Vec<String> {
        let multiline = input.multiline.unwrap_or(false);
        let Ok(regex) = regex::RegexBuilder::new(&input.pattern)
            .case_insensitive(input.case_insensitive.unwrap_or(false))
            .multi_line(true)
            .dot_matches_new_line(multiline)
            .build()
        else {
            // ripgrep refused it first: there are no lines.
            return Vec::new();
        };
        let numbers = input.line_numbers.unwrap_or(true);
        let format = |path: &str, number: u64, sep: char, text: &str| format(numbers, path, number, sep, text);
        let mut out = Vec::new();
        for group in lines.split(|l| l == "--") {
            let mut shown_lines = Vec::new();
            let match_paths = GroupPaths::new(group.iter().filter_map(|l| match_path(l)));
            // A line is a numbered line, or the note on a binary file.
            let parsed: Vec<Result<Line, String>> = group
                .iter()
                .filter_map(|l| split(l, single_file, &match_paths).map(Ok).or_else(|| binary_note(l).map(Err)))
                .collect();
            let mut i = 0;
            while i < parsed.len() {
                let line = match &parsed[i] {
                    Ok(line) => line,
                    Err(note) => {
                        shown_lines.push(note.clone());
                        i += 1;
                        continue;
                    }
                };
                if !line.is_match {
                    shown_lines.push(format(line.path, line.number, '-', shown(line.text, false)));
                    i += 1;
                    continue;
                }
                // In multiline mode a match may span adjacent match lines.
                let mut end = i + 1;
                let mut last = line.number;
                while multiline
                    && let Some(Ok(next)) = parsed.get(end)
                    && next.is_match
                    && next.path == line.path
                    && next.number == last + 1
                {
                    last = next.number;
                    end += 1;
                }
                let text = parsed[i..end].iter().flatten().map(|l| l.text).collect::<Vec<_>>().join("\n");
                for found in regex.find_iter(&text).filter(|m| !m.is_empty()) {
                    let first = line.number + text[..found.start()].matches('\n').count() as u64;
                    for (k, piece) in found.as_str().split('\n').enumerate() {
                        let piece = piece.strip_suffix('\r').unwrap_or(piece);
                        shown_lines.push(format(line.path, first + k as u64, ':', shown(piece, true)));
                    }
                }
                i = end;
            }
            if !shown_lines.is_empty() {
                if !out.is_empty() {
                    out.push("--".to_string());
                }
                out.append(&mut shown_lines);
            }
        }
        out
    }
}

/// Claude Code's reading of the `glob` argument: split at whitespace; a
/// piece holding both `{` and `}` stays whole, any other is split at commas.
pub fn split_globs(glob: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for piece in glob.split(fs::is_js_whitespace) {
        if piece.contains('{') && piece.contains('}') {
            out.push(piece);
        } else {
            out.extend(piece.split(',').filter(|g| !g.is_empty()));
        }
    }
    out.retain(|g| !g.is_empty());
    out
}

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests).
toolhost_sdk::requests!(r#"{"workspace": "read-only"}"#);

export_tool!(Grep);

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("grep-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join(".gitignore"), "skip.txt\n").unwrap();
        std::fs::write(dir.join("skip.txt"), "needle\n").unwrap();
        std::fs::write(dir.join("src/a.rs"), "fn main() {\n    let needle = 1;\n}\n").unwrap();
        std::fs::write(dir.join("src/b.py"), "needle = 2\nNEEDLE = 3\n").unwrap();
        std::fs::write(dir.join("bin.dat"), b"needle\0binary").unwrap();
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::write(dir.join(".git/HEAD"), "needle\n").unwrap();
        let at = |name: &str, secs: u64| {
            let f = std::fs::File::options().write(true).open(dir.join(name)).unwrap();
            f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)).unwrap();
        };
        at("src/a.rs", 2_000_000);
        at("src/b.py", 1_000_000);
        dir
    }

    fn run(dir: &Path, input: GrepInput) -> String {
        search(dir, &input, &fs::HiddenPaths::default()).unwrap().text
    }

    fn content(pattern: &str) -> GrepInput {
        GrepInput { pattern: pattern.into(), output_mode: Some(OutputMode::Content), ..Default::default() }
    }

    #[test]
    fn a_context_line_takes_the_longest_match_path_a_dash_follows() {
        let paths = GroupPaths::new(["a", "a-b", "a-b-c.txt", "x:y"]);
        assert_eq!(paths.context_path("a-b-c.txt-4-text"), Some("a-b-c.txt"));
        assert_eq!(paths.context_path("a-b-7-text"), Some("a-b"));
        assert_eq!(paths.context_path("a-b-c.tx-1-text"), Some("a-b"));
        assert_eq!(paths.context_path("a-9-text"), Some("a"));
        assert_eq!(paths.context_path("x:y-2-text"), Some("x:y"));
        assert_eq!(paths.context_path("ab-1-text"), None);
        assert_eq!(paths.context_path("-1-text"), None);
        assert_eq!(paths.context_path("a"), None);
        assert_eq!(GroupPaths::<&str>::new([]).context_path("a-1-text"), None);
        // Non-ASCII before the dash: sliced at the dash, a char boundary.
        assert_eq!(GroupPaths::new(["ü"]).context_path("ü-1-é"), Some("ü"));
    }

    #[test]
    fn a_group_of_many_matches_is_shown_whole_with_its_context() {
        // One file matching on every other line with context: one group of
        // 4,000 lines (each was once compared with every path of its group).
        let dir = tree("many");
        let body: String =
            (0..4_000).map(|i| if i % 2 == 0 { format!("hit {i}\n") } else { format!("gap {i}\n") }).collect();
        std::fs::write(dir.join("src/many-hits.txt"), body).unwrap();
        let input = GrepInput { context: Some(1.0), head_limit: Some(0.0), ..content("^hit") };
        let text = run(&dir, input);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4_000, "{}", &text[..300]);
        assert_eq!(lines[0], "src/many-hits.txt:1:hit 0");
        assert_eq!(lines[1], "src/many-hits.txt-2-gap 1");
        assert_eq!(lines[3_999], "src/many-hits.txt-4000-gap 3999");
    }

    #[test]
    fn files_newest_first_relative() {
        let dir = tree("files");
        assert_eq!(
            run(&dir, GrepInput { pattern: "needle".into(), ..Default::default() }),
            "Found 2 files\nsrc/a.rs\nsrc/b.py"
        );
        let paged = run(&dir, GrepInput { pattern: "needle".into(), head_limit: Some(1.0), ..Default::default() });
        assert_eq!(paged, "Found 1 file limit: 1\nsrc/a.rs");
        let paged = run(
            &dir,
            GrepInput { pattern: "needle".into(), head_limit: Some(1.0), offset: Some(1.0), ..Default::default() },
        );
        assert_eq!(paged, "Found 1 file offset: 1\nsrc/b.py");
        assert_eq!(run(&dir, GrepInput { pattern: "nothing here".into(), ..Default::default() }), "No files found");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn content_lines_and_context() {
        let dir = tree("content");
        let text = run(&dir, GrepInput { file_type: Some("rust".into()), ..content("needle") });
        assert_eq!(text, "src/a.rs:2:    let needle = 1;");
        let text = run(&dir, GrepInput { before: Some(1.0), glob: Some("*.rs".into()), ..content("let") });
        // 2.1.328 shows context lines relative too.
        assert_eq!(text, "src/a.rs-1-fn main() {\nsrc/a.rs:2:    let needle = 1;");
        std::fs::write(dir.join("src/c.ts"), "let x: number;\nfind me\n").unwrap();
        let text = run(&dir, GrepInput { before: Some(1.0), glob: Some("*.ts".into()), ..content("find") });
        assert_eq!(text, "src/c.ts-1-let x: number;\nsrc/c.ts:2:find me", "a colon in a context line");
        std::fs::write(dir.join("src/d-1-e.ts"), "first\nfind me too\n").unwrap();
        let text = run(&dir, GrepInput { before: Some(1.0), glob: Some("d-*.ts".into()), ..content("find") });
        assert_eq!(text, "src/d-1-e.ts-1-first\nsrc/d-1-e.ts:2:find me too", "a dash in a name");
        let text = run(&dir, GrepInput { line_numbers: Some(false), ..content("NEEDLE") });
        assert_eq!(text, "src/b.py:NEEDLE = 3");
        // Context lines between files are separated, as in ripgrep.
        let text = run(&dir, GrepInput { context: Some(0.0), context_short: Some(5.0), ..content("^needle|let") });
        assert_eq!(text.matches("\n--\n").count(), 0, "context wins over -C: {text}");
        let text =
            run(&dir, GrepInput { context_short: Some(1.0), case_insensitive: Some(true), ..content("needle =") });
        assert!(text.contains("\n--\n"), "{text}");
        // A single file: no path.
        let text = run(&dir.join("src/a.rs"), content("needle"));
        assert_eq!(text, "2:    let needle = 1;");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn count_mode_and_summary() {
        let dir = tree("count");
        let text = run(
            &dir,
            GrepInput { output_mode: Some(OutputMode::Count), case_insensitive: Some(true), ..content("needle") },
        );
        assert_eq!(text, "src/a.rs:1\nsrc/b.py:2\n\nFound 3 total occurrences across 2 files.");
        let text =
            run(&dir, GrepInput { output_mode: Some(OutputMode::Count), head_limit: Some(1.0), ..content("needle") });
        assert_eq!(text, "src/a.rs:1\n\nFound 1 total occurrence across 1 file. with pagination = limit: 1");
        let text = run(&dir, GrepInput { output_mode: Some(OutputMode::Count), ..content("zzz") });
        assert_eq!(text, "No matches found\n\nFound 0 total occurrences across 0 files.");
        // One file: 2.1.328 names it and counts it.
        let text = run(&dir.join("src/b.py"), GrepInput { output_mode: Some(OutputMode::Count), ..content("needle") });
        assert_eq!(text, "b.py:1\n\nFound 1 total occurrence across 1 file.");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn paging_like_claude_code() {
        let dir = tree("paging");
        let body: String = (1..=300).map(|i| format!("hit {i}\n")).collect();
        std::fs::write(dir.join("many.txt"), body).unwrap();
        let text = run(&dir, content("hit"));
        assert_eq!(text.lines().count(), 250 + 2);
        assert!(text.ends_with("many.txt:250:hit 250\n\n[Showing results with pagination = limit: 250]"), "{text}");
        let text = run(&dir, GrepInput { head_limit: Some(0.0), ..content("hit") });
        assert_eq!(text.lines().count(), 300);
        let text = run(&dir, GrepInput { head_limit: Some(2.0), offset: Some(298.0), ..content("hit") });
        assert_eq!(
            text,
            "many.txt:299:hit 299\nmany.txt:300:hit 300\n\n[Showing results with pagination = offset: 298]"
        );
        let text = run(&dir, GrepInput { offset: Some(400.0), ..content("hit") });
        assert_eq!(text, "No entries at this offset\n\n[Showing results with pagination = offset: 400]");
        let text = run(&dir, GrepInput { offset: Some(400.0), ..content("nothing") });
        assert_eq!(text, "No matches found\n\n[Showing results with pagination = offset: 400]");
        let files = GrepInput { pattern: "hit".into(), offset: Some(5.0), ..Default::default() };
        assert_eq!(run(&dir, files), "No entries at this offset. [Showing results with pagination = offset: 5]");
        // Only whole numbers of 0 or more page.
        let ctx = toolhost_sdk::Context::for_tests("/", toolhost_sdk::Mode::Default);
        let check = |input: GrepInput| Grep::validate_input(&input, &ctx).map_err(|e| e.message);
        assert_eq!(
            check(GrepInput { head_limit: Some(-2.5), ..content("x") }),
            Err("head_limit must be a whole number of 0 or more, got -2.5. Pass 0 for unlimited.".into())
        );
        assert_eq!(
            check(GrepInput { offset: Some(-1.0), ..content("x") }),
            Err("offset must be a whole number of 0 or more, got -1.".into())
        );
        assert_eq!(check(GrepInput { head_limit: Some(0.0), offset: Some(3.0), ..content("x") }), Ok(()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn long_lines_are_omitted() {
        let dir = tree("long");
        std::fs::write(dir.join("long.txt"), format!("{}needle\nshort needle\n", "x".repeat(600))).unwrap();
        let text = run(&dir, GrepInput { glob: Some("long.txt".into()), ..content("needle") });
        assert_eq!(text, "long.txt:1:[Omitted long matching line]\nlong.txt:2:short needle");
        // Counted in UTF-16 units as 2.1.328 counts them, not in bytes: 300
        // two-byte characters are shown; 501 characters are not, context
        // lines with their own note; numbers dropped when not asked for.
        let wide = "é".repeat(300);
        std::fs::write(
            dir.join("wide.txt"),
            format!(
                "{wide} needle
{}
needle {}
",
                "c".repeat(501),
                "m".repeat(501)
            ),
        )
        .unwrap();
        let input = || GrepInput { glob: Some("wide.txt".into()), context: Some(1.0), ..content("needle") };
        assert_eq!(
            run(&dir, input()),
            format!(
                "wide.txt:1:{wide} needle\nwide.txt-2-[Omitted long context line]\nwide.txt:3:[Omitted long matching line]"
            )
        );
        assert_eq!(
            run(&dir, GrepInput { line_numbers: Some(false), ..input() }),
            format!(
                "wide.txt:{wide} needle\nwide.txt-[Omitted long context line]\nwide.txt:[Omitted long matching line]"
            )
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_binary_file_stopped_after_a_match_gets_its_note() {
        let dir = tree("binary");
        let mut bytes = b"needle first\n".to_vec();
        bytes.extend(std::iter::repeat_n(b'x', 200_000));
        bytes.extend_from_slice(b"\n\0tail needle\n");
        std::fs::write(dir.join("late.dat"), bytes).unwrap();
        let note = "late.dat:binary file matches (found \"\\0\" byte around offset 200014)";
        let input = || GrepInput { glob: Some("*.dat".into()), ..content("needle") };
        assert_eq!(run(&dir, input()), format!("late.dat:1:needle first\n{note}"));
        assert_eq!(run(&dir, GrepInput { only_matching: Some(true), ..input() }), format!("late.dat:1:needle\n{note}"));
        assert_eq!(
            run(&dir, GrepInput { line_numbers: Some(false), ..input() }),
            format!("late.dat:needle first\n{note}")
        );
        // A file given as the path: its matching lines without a NUL, then ripgrep's note.
        std::fs::write(dir.join("b.dat"), b"needle one\n\0binary needle\nlast needle\n").unwrap();
        let one = |input: GrepInput| {
            search(&dir.join("b.dat"), &GrepInput { path: Some("b.dat".into()), ..input }, &fs::HiddenPaths::default())
                .unwrap()
                .text
        };
        let note = "binary file matches (found \"\\0\" byte around offset 11)";
        assert_eq!(one(content("needle")), format!("1:needle one\n3:last needle\n{note}"));
        assert_eq!(
            one(GrepInput { only_matching: Some(true), ..content("needle") }),
            format!("1:needle\n3:needle\n{note}")
        );
        assert_eq!(one(GrepInput { context: Some(1.0), ..content("needle") }), note, "with context: the note alone");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_matching_parts() {
        let dir = tree("only");
        std::fs::write(dir.join("o.txt"), "id=1 id=22\nnone\nID=333\n").unwrap();
        let o =
            |input: GrepInput| run(&dir, GrepInput { glob: Some("o.txt".into()), only_matching: Some(true), ..input });
        assert_eq!(o(content(r"id=\d+")), "o.txt:1:id=1\no.txt:1:id=22");
        let ci = GrepInput { case_insensitive: Some(true), ..content(r"id=\d+") };
        assert_eq!(o(ci), "o.txt:1:id=1\no.txt:1:id=22\no.txt:3:ID=333");
        let bare = GrepInput { line_numbers: Some(false), ..content(r"id=\d+") };
        assert_eq!(o(bare), "o.txt:id=1\no.txt:id=22");
        // Context lines stay whole; a `:N:` in them does not make them matches.
        let ctx = GrepInput { before: Some(1.0), ..content("ID=3+") };
        assert_eq!(o(ctx), "o.txt-2-none\no.txt:3:ID=333");
        // The parts are what is paged.
        let paged = GrepInput { head_limit: Some(1.0), ..content(r"id=\d+") };
        assert_eq!(o(paged), "o.txt:1:id=1\n\n[Showing results with pagination = limit: 1]");
        // Lines that match only with empty parts print nothing.
        assert_eq!(o(content("z*")), "No matches found");
        // A single file: no path.
        let one = run(&dir.join("o.txt"), GrepInput { only_matching: Some(true), ..content(r"\d+") });
        assert_eq!(one, "1:1\n1:22\n3:333");
        // A long line's parts are shown; a part over 500 characters is not.
        std::fs::write(dir.join("long.txt"), format!("{} needle\n", "x".repeat(600))).unwrap();
        let long = |pattern: &str| {
            run(&dir, GrepInput { glob: Some("long.txt".into()), only_matching: Some(true), ..content(pattern) })
        };
        assert_eq!(long("needle"), "long.txt:1:needle");
        assert_eq!(long("x+"), "long.txt:1:[Omitted long matching line]");
        // Multiline: a part spanning lines gives a line for each.
        std::fs::write(dir.join("m.rs"), "struct A {\n  field: u8,\n}\nfn f() {}\n").unwrap();
        let multi = GrepInput {
            glob: Some("m.rs".into()),
            only_matching: Some(true),
            multiline: Some(true),
            ..content(r"struct \{?\w+ \{[\s\S]*?field")
        };
        assert_eq!(run(&dir, multi), "m.rs:1:struct A {\nm.rs:2:  field");
        // Outside content mode it changes nothing.
        let count = GrepInput { output_mode: Some(OutputMode::Count), ..content(r"id=\d+") };
        let plain = run(&dir, GrepInput { glob: Some("o.txt".into()), ..count });
        let count = GrepInput { output_mode: Some(OutputMode::Count), ..content(r"id=\d+") };
        assert_eq!(o(count), plain);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refused_arguments_are_errors_quoting_ripgrep() {
        let dir = tree("refused");
        let refused = |input: GrepInput| search(&dir, &input, &fs::HiddenPaths::default()).unwrap_err().message;
        let lead = "Search failed — ripgrep rejected the pattern, glob, or file type without searching:\n";
        // ripgrep 14.1.1's messages, for the arguments Claude Code passes.
        assert_eq!(
            refused(GrepInput { pattern: "(".into(), ..Default::default() }),
            format!("{lead}rg: regex parse error:\n    (?:()\n    ^\nerror: unclosed group")
        );
        assert_eq!(
            refused(GrepInput { pattern: "(".into(), file_type: Some("nosuchtype".into()), ..Default::default() }),
            format!("{lead}rg: unrecognized file type: nosuchtype")
        );
        assert_eq!(
            refused(GrepInput { before: Some(-1.0), after: Some(1.5), ..content("(") }),
            format!("{lead}rg: error parsing flag -B: value is not a valid number: invalid digit found in string")
        );
        assert_eq!(
            refused(GrepInput { after: Some(1.5), ..content("needle") }),
            format!("{lead}rg: error parsing flag -A: value is not a valid number: invalid digit found in string")
        );
        // Context is passed only in content mode.
        let count = GrepInput { after: Some(1.5), output_mode: Some(OutputMode::Count), ..content("needle") };
        assert!(search(&dir, &count, &fs::HiddenPaths::default()).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn splits_glob_lists_as_claude_code() {
        assert_eq!(split_globs("*.{ts,tsx}"), vec!["*.{ts,tsx}"]);
        assert_eq!(split_globs("*.rs,*.toml  *.md"), vec!["*.rs", "*.toml", "*.md"]);
        assert_eq!(split_globs("*.ts,{a,b}"), vec!["*.ts,{a,b}"]);
        assert_eq!(split_globs(" ,"), Vec::<&str>::new());
    }

    #[test]
    fn numbers_and_booleans_may_be_strings() {
        let input: GrepInput =
            serde_json::from_value(serde_json::json!({"pattern": "x", "-A": "3", "head_limit": "-2.5", "-i": "true"}))
                .unwrap();
        assert_eq!((input.after, input.head_limit, input.case_insensitive), (Some(3.0), Some(-2.5), Some(true)));
        assert!(serde_json::from_value::<GrepInput>(serde_json::json!({"pattern": "x", "-A": "3e2"})).is_err());
        assert!(serde_json::from_value::<GrepInput>(serde_json::json!({"pattern": "x", "-n": "yes"})).is_err());
    }

    #[test]
    fn schema_is_claude_codes() {
        let schema = toolhost_sdk::schema::generate::<GrepInput>();
        let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "pattern",
                "path",
                "glob",
                "output_mode",
                "-B",
                "-A",
                "-C",
                "context",
                "-n",
                "-i",
                "-o",
                "type",
                "head_limit",
                "offset",
                "multiline"
            ]
        );
        assert_eq!(schema["required"], serde_json::json!(["pattern"]));
        assert_eq!(
            schema["properties"]["output_mode"]["enum"],
            serde_json::json!(["content", "files_with_matches", "count"])
        );
        assert_eq!(schema["properties"]["output_mode"]["type"], "string");
        for number in ["-B", "-A", "-C", "context", "head_limit", "offset"] {
            assert_eq!(schema["properties"][number]["type"], "number", "{number}");
        }
        assert_eq!(schema["properties"]["-C"]["description"], "Alias for context.");
    }
}
