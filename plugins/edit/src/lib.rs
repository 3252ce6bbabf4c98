//! The `Edit` tool: exact string replacement in a file that was read first,
//! with the checks, texts and text handling of Claude Code 2.1.328's Edit.
//!
//! 2.1.328 lets newer models edit a file they never read (when a Read of it
//! would be allowed without asking), and applies an edit to a file changed
//! since the Read when `old_string` still matches once; toolhost does not
//! know the model, so it keeps the read-before-write rule and the refusal
//! of a changed file for every model, as 2.1.328 does for the models it names.

use serde::Deserializer;
use std::path::Path;
use toolhost_sdk::fs::{self, Access, TextFile};
use toolhost_sdk::{
    Context, Deserialize, JsonSchema, Output, PathAccess, Permission, Tool, ToolError, export_tool, serde_json,
};

pub mod escapes;

/// Files larger than this (bytes on disk) are not edited.
pub const MAX_EDIT_FILE_SIZE: u64 = 1024 * 1024 * 1024;

/// Input of `Edit`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    /// The absolute path to the file to modify
    pub file_path: String,
    /// The text to replace
    pub old_string: String,
    /// The text to replace it with (must be different from old_string)
    pub new_string: String,
    /// Replace all occurrences of old_string (default false)
    #[serde(default, deserialize_with = "lenient_bool")]
    #[schemars(with = "bool")]
    pub replace_all: bool,
}

/// A boolean that also accepts the strings `"true"` and `"false"`, as Claude
/// Code's schema does for `replace_all`.
fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Lenient {
        Bool(bool),
        Text(String),
    }
    match Lenient::deserialize(d)? {
        Lenient::Bool(b) => Ok(b),
        Lenient::Text(t) if t == "true" => Ok(true),
        Lenient::Text(t) if t == "false" => Ok(false),
        Lenient::Text(t) => Err(serde::de::Error::custom(format!("expected a boolean, got the string {t:?}"))),
    }
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
        include_str!("prompt.md").to_string()
    }
    fn search_hint() -> Option<String> {
        Some("modify file contents in place".into())
    }

    fn validate_input(input: &EditInput, ctx: &Context) -> Result<(), ToolError> {
        let path = fs::absolute(ctx, &input.file_path);
        let input = normalize_input(input, &path);
        if input.old_string == input.new_string {
            return Err(ToolError::invalid_input(
                "No changes to make: old_string and new_string are exactly the same.",
            ));
        }
        let path = fs::confine(ctx, &input.file_path, Access::Write)?;
        let meta = match std::fs::metadata(&path) {
            Ok(meta) => Some(meta),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            // A path the sandbox cannot reach (a symlink out of the working
            // directories): the permission step decides, and the call reports it.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Ok(()),
            Err(e) => return Err(fs::io_error(ctx, &path, &e)),
        };
        if let Some(meta) = &meta
            && meta.len() > MAX_EDIT_FILE_SIZE
        {
            return Err(ToolError::new(
                toolhost_sdk::ErrorKind::TooLarge,
                format!(
                    "File is too large to edit ({}). Maximum editable file size is {}.",
                    fs::format_file_size(meta.len()),
                    fs::format_file_size(MAX_EDIT_FILE_SIZE)
                ),
            ));
        }
        let file = match &meta {
            None => None,
            // Reading a directory fails in Claude Code's validation with
            // Node's error, which reaches the model as a failed tool call.
            Some(meta) if meta.is_dir() => {
                return Err(ToolError::invalid_input(
                    "Error calling tool (Edit): EISDIR: illegal operation on a directory, read",
                ));
            }
            Some(meta) if !meta.is_file() => {
                return Err(ToolError::invalid_input(format!(
                    "{} exists but is not a regular file (a device, FIFO or socket). Edit only changes regular files.",
                    input.file_path
                )));
            }
            Some(_) => Some(read_text(ctx, &path)?),
        };
        let Some(file) = file else {
            // An empty old_string on a missing file creates it.
            if input.old_string.is_empty() {
                return Ok(());
            }
            let mut message = format!("File does not exist. {} {}.", fs::CWD_NOTE, ctx.cwd());
            if let Some(suggestion) = fs::suggest_path_under_cwd(ctx, &path) {
                message.push_str(&format!(" Did you mean {}?", suggestion.display()));
            } else if let Some(similar) = fs::find_similar_file(&path) {
                message.push_str(&format!(" Did you mean {similar}?"));
            }
            return Err(ToolError::not_found(message));
        };
        if input.old_string.is_empty() {
            if !file.text.text.trim_matches(fs::is_js_whitespace).is_empty() {
                return Err(ToolError::invalid_input("Cannot create new file - file already exists."));
            }
            return Ok(());
        }
        if path.to_string_lossy().ends_with(".ipynb") {
            return Err(ToolError::invalid_input(
                "File is a Jupyter Notebook. Use the NotebookEdit to edit this file.",
            ));
        }
        // A partial view (the start of the file only) counts as not read.
        let Some(record) = fs::read_record(ctx, &path).filter(|r| !r.partial) else {
            return Err(ToolError::conflict(fs::NOT_READ_YET));
        };
        let meta = meta.expect("the file exists");
        if record.is_older_than(&meta)
            && !record.saw(&file.text.text)
            && !recovers_stale(ctx, &path, &file.text.text, &input)
        {
            return Err(ToolError::conflict(fs::MODIFIED_SINCE_READ));
        }
        if let Some(not_text) = file.not_text {
            return Err(ToolError::unsupported(not_text.refusal()));
        }
        let Some(actual) = find_actual_string(&file.text.text, &input.old_string) else {
            return Err(ToolError::invalid_input(format!(
                "String to replace not found in file.\nString: {}{}",
                input.old_string,
                if has_escape_or_non_ascii(&input.old_string) { UNICODE_NOTE } else { "" }
            )));
        };
        let matches = file.text.text.matches(actual.as_str()).count();
        if matches > 1 && !input.replace_all {
            return Err(ToolError::invalid_input(format!(
                "Found {matches} matches of the string to replace, but replace_all is false. To replace all \
                 occurrences, set replace_all to true. To replace only one occurrence, please provide more context \
                 to uniquely identify the instance.\nString: {}",
                input.old_string
            )));
        }
        // Not a check of Claude Code's, which decodes a UTF-16LE file with
        // invalid units lossily and writes the replacement characters back:
        // refuse instead of corrupting the bytes that are not text.
        if !file.text.lossless {
            return Err(ToolError::unsupported(format!(
                "{} is not valid UTF-16 behind its byte-order mark; Edit only changes text files it can write back \
                 unchanged. Use Write to replace the whole file.",
                path.display()
            )));
        }
        Ok(())
    }

    fn check_permissions(_input: &EditInput, ctx: &Context) -> Permission {
        fs::edit_permission(ctx)
    }

    fn call(input: EditInput, ctx: &Context) -> Result<Output, ToolError> {
        let path = fs::confine(ctx, &input.file_path, Access::Write)?;
        let input = normalize_input(&input, &path);
        let (file, not_text, exists) = match std::fs::read(&path) {
            Ok(bytes) => (TextFile::decode(&bytes), fs::not_text(&bytes), true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (TextFile::decode(b""), None, false),
            Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => {
                return Err(ToolError::invalid_input("EISDIR: illegal operation on a directory, read"));
            }
            Err(e) => return Err(fs::io_error(ctx, &path, &e)),
        };
        // Whether the model's view of the file is all of its current text:
        // then the result says there is no need to read it back.
        let (mut in_view, mut stale) = (true, false);
        if exists {
            let meta = std::fs::metadata(&path).map_err(|e| fs::io_error(ctx, &path, &e))?;
            let Some(record) = fs::read_record(ctx, &path) else {
                return Err(ToolError::conflict(fs::NOT_READ_YET));
            };
            if record.is_older_than(&meta) && !record.saw(&file.text) {
                if !recovers_stale(ctx, &path, &file.text, &input) {
                    return Err(ToolError::conflict(fs::UNEXPECTEDLY_MODIFIED));
                }
                stale = true;
            }
            in_view = record.saw(&file.text);
        }
        if let Some(not_text) = not_text {
            return Err(ToolError::unsupported(not_text.refusal()));
        }
        let mut updated = apply(&file.text, &input)?;
        // An empty old_string replaces the whole text: the file's byte-order
        // mark stays.
        if input.old_string.is_empty()
            && file.text.starts_with('\u{feff}')
            && !updated.is_empty()
            && !updated.starts_with('\u{feff}')
        {
            updated.insert(0, '\u{feff}');
        }
        fs::replace(&path, &file.encode(&updated))?;
        let meta = std::fs::metadata(&path).map_err(|e| fs::io_error(ctx, &path, &e))?;
        fs::record_write(ctx, &path, &meta, &updated)?;
        let suffix = match (stale, in_view) {
            (true, _) => STALE_NOTE,
            (false, true) => fs::STATE_IS_CURRENT,
            (false, false) => "",
        };
        let text = if input.replace_all {
            format!(
                "The file {} has been updated. All occurrences were successfully replaced.{suffix}",
                input.file_path
            )
        } else {
            format!("The file {} has been updated successfully.{suffix}", input.file_path)
        };
        Ok(Output::text(text).with_structured(serde_json::json!({
            "filePath": input.file_path,
            "oldString": input.old_string,
            "newString": input.new_string,
            "replaceAll": input.replace_all,
            "userModified": false,
        })))
    }
}

/// A file as Edit's validation reads it: its text (see
/// [`TextFile::decode`]), and whether it is text Edit writes back.
struct EditedFile {
    text: TextFile,
    not_text: Option<fs::NotText>,
}

/// Reads `path` as Claude Code's Edit does.
fn read_text(ctx: &Context, path: &Path) -> Result<EditedFile, ToolError> {
    let bytes = std::fs::read(path).map_err(|e| fs::io_error(ctx, path, &e))?;
    Ok(EditedFile { text: TextFile::decode(&bytes), not_text: fs::not_text(&bytes) })
}

/// What ends the success text of an edit applied to a file that changed
/// since it was read (2.1.328's stale-read recovery), in place of the
/// "file state is current" suffix.
const STALE_NOTE: &str = " (note: the file had been modified on disk since you last read it — the edit applied \
     cleanly, but the file contains other changes not in your context. Read it before edits that depend on \
     surrounding content.)";

/// Whether an edit of a file changed since it was read goes on anyway, as
/// 2.1.328 lets it: `old_string` still finds exactly one place (or any, with
/// `replace_all`), and the model could read the file again without asking.
/// Toolhost's reading of the last condition: the file is inside the
/// directories reads may reach (the component does not see Read's rules;
/// the host has already checked the edit's own).
fn recovers_stale(ctx: &Context, path: &Path, text: &str, input: &EditInput) -> bool {
    applies(text, input) && fs::is_allowed(ctx, path, Access::Read)
}

/// Whether `input` would change `text` at a place it names unambiguously.
fn applies(text: &str, input: &EditInput) -> bool {
    if input.old_string.is_empty() {
        return false;
    }
    match find_actual_string(text, &input.old_string) {
        Some(actual) => input.replace_all || text.matches(actual.as_str()).nth(1).is_none(),
        None => false,
    }
}

/// What 2.1.328 adds to the not-found error when `old_string` holds a
/// `\uXXXX` escape or a character beyond ASCII.
const UNICODE_NOTE: &str = "\n(note: Edit also tried swapping \\uXXXX escapes and their characters; neither form \
     matched, so the mismatch is likely elsewhere in old_string. Re-read the file and copy the exact surrounding text.)";

/// Whether `s` holds a `\uXXXX` escape (four hex digits) or a character
/// beyond ASCII.
fn has_escape_or_non_ascii(s: &str) -> bool {
    !s.is_ascii() || escapes::has_escape(s)
}

/// Markup a model cannot write, restored in `old_string` when only the
/// restored form is in the file (the same restorations then apply to
/// `new_string`), in Claude Code's order.
const DESANITIZATIONS: [(&str, &str); 18] = [
    ("<fnr>", "<function_results>"),
    ("<n>", "<name>"),
    ("</n>", "</name>"),
    ("<o>", "<output>"),
    ("</o>", "</output>"),
    ("<e>", "<error>"),
    ("</e>", "</error>"),
    ("<s>", "<system>"),
    ("</s>", "</system>"),
    ("<r>", "<result>"),
    ("</r>", "</result>"),
    ("< META_START >", "<META_START>"),
    ("< META_END >", "<META_END>"),
    ("< EOT >", "<EOT>"),
    ("< META >", "<META>"),
    ("< SOS >", "<SOS>"),
    ("\n\nH:", "\n\nHuman:"),
    ("\n\nA:", "\n\nAssistant:"),
];

/// What Claude Code does to an Edit's input before anything else, when the
/// file can be read: trailing whitespace leaves every line of `new_string`
/// (not in Markdown files), and an `old_string` not in the file but present
/// once its markup is restored (see [`DESANITIZATIONS`]) is restored, with
/// the same restorations in `new_string`. A file that cannot be read (or is
/// no regular file) leaves the input as it is.
pub fn normalize_input(input: &EditInput, path: &Path) -> EditInput {
    // Only a regular file is read: a FIFO would block.
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return input.clone();
    }
    let Ok(bytes) = std::fs::read(path) else { return input.clone() };
    let text = TextFile::decode(&bytes).text;
    normalize_against(input, &text)
}

/// [`normalize_input`] against the file's text `text`.
pub fn normalize_against(input: &EditInput, text: &str) -> EditInput {
    let mut new_string = if fs::keeps_trailing_whitespace(&input.file_path) {
        input.new_string.clone()
    } else {
        fs::strip_trailing_whitespace(&input.new_string)
    };
    let mut old_string = input.old_string.clone();
    if !text.contains(&old_string) {
        let mut restored = old_string.clone();
        let mut applied = Vec::new();
        for (from, to) in DESANITIZATIONS {
            if restored.contains(from) {
                restored = restored.replace(from, to);
                applied.push((from, to));
            }
        }
        if text.contains(&restored) {
            old_string = restored;
            for (from, to) in applied {
                new_string = new_string.replace(from, to);
            }
        }
    }
    EditInput { old_string, new_string, ..input.clone() }
}

const LEFT_SINGLE: char = '\u{2018}';
const RIGHT_SINGLE: char = '\u{2019}';
const LEFT_DOUBLE: char = '\u{201c}';
const RIGHT_DOUBLE: char = '\u{201d}';

fn straighten(c: char) -> char {
    match c {
        LEFT_SINGLE | RIGHT_SINGLE => '\'',
        LEFT_DOUBLE | RIGHT_DOUBLE => '"',
        c => c,
    }
}

/// The text in `text` that `search` means: `search` itself when present,
/// else the first stretch of `text` equal to it once curly quotes in both
/// are made straight (a model writes straight quotes), else `search` with
/// its `\uXXXX` escapes decoded, else `search` with its characters beyond
/// ASCII written as escapes (see [`escapes`]).
pub fn find_actual_string(text: &str, search: &str) -> Option<String> {
    if text.contains(search) {
        return Some(search.to_owned());
    }
    let straight_text: String = text.chars().map(straighten).collect();
    let straight_search: String = search.chars().map(straighten).collect();
    if let Some(at) = straight_text.find(&straight_search) {
        // Straightening maps one character to one: count characters, not bytes.
        let start = straight_text[..at].chars().count();
        return Some(text.chars().skip(start).take(search.chars().count()).collect());
    }
    if escapes::has_escape(search)
        && let Some(decoded) = escapes::decode(search)
        && decoded != search
        && text.contains(&decoded)
    {
        return Some(decoded);
    }
    if !search.is_ascii() {
        if escapes::escaped_len(search) > text.encode_utf16().count() || !text.contains("\\u") {
            return None;
        }
        return escapes::find_escaped(search, text);
    }
    None
}

/// When `old` matched through straightened quotes (`actual` differs), the
/// curly quotes of the file in `new` too: a quote after whitespace, an
/// opening bracket, a dash or at the start opens, any other closes, and an
/// apostrophe between two letters is a right single quote.
pub fn preserve_quote_style(old: &str, actual: &str, new: &str) -> String {
    if old == actual {
        return new.to_owned();
    }
    let double = actual.contains([LEFT_DOUBLE, RIGHT_DOUBLE]);
    let single = actual.contains([LEFT_SINGLE, RIGHT_SINGLE]);
    if !double && !single {
        return new.to_owned();
    }
    let chars: Vec<char> = new.chars().collect();
    let opens = |i: usize| {
        i == 0 || matches!(chars[i - 1], ' ' | '\t' | '\n' | '\r' | '(' | '[' | '{' | '\u{2014}' | '\u{2013}')
    };
    let letter = |c: Option<&char>| c.is_some_and(|c| c.is_alphabetic());
    chars
        .iter()
        .enumerate()
        .map(|(i, &c)| match c {
            '"' if double => {
                if opens(i) {
                    LEFT_DOUBLE
                } else {
                    RIGHT_DOUBLE
                }
            }
            '\'' if single => {
                if letter(i.checked_sub(1).and_then(|j| chars.get(j))) && letter(chars.get(i + 1)) {
                    RIGHT_SINGLE
                } else if opens(i) {
                    LEFT_SINGLE
                } else {
                    RIGHT_SINGLE
                }
            }
            c => c,
        })
        .collect()
}

/// Replaces `old` by `new` in `text` (the first occurrence, or all): when
/// `new` is empty and `old` does not end with a newline but occurs followed
/// by one, that newline goes too, so deleting a line leaves no blank line.
pub fn apply_edit_to_file(text: &str, old: &str, new: &str, all: bool) -> String {
    let replace = |search: &str| if all { text.replace(search, new) } else { text.replacen(search, new, 1) };
    if !new.is_empty() {
        return replace(old);
    }
    let with_newline = format!("{old}\n");
    if !old.ends_with('\n') && text.contains(&with_newline) { replace(&with_newline) } else { replace(old) }
}

/// The file's new text after `input` (already normalized) on `text`, as
/// Claude Code's Edit computes it at the write, or its error.
pub fn apply(text: &str, input: &EditInput) -> Result<String, ToolError> {
    let actual = find_actual_string(text, &input.old_string).unwrap_or_else(|| input.old_string.clone());
    let new = escapes::match_style(
        &input.old_string,
        &actual,
        &preserve_quote_style(&input.old_string, &actual, &input.new_string),
    );
    if text.is_empty() && actual.is_empty() && new.is_empty() {
        return Ok(String::new());
    }
    let updated = if actual.is_empty() { new } else { apply_edit_to_file(text, &actual, &new, input.replace_all) };
    if updated == text {
        return Err(ToolError::invalid_input("String not found in file. Failed to apply edit."));
    }
    Ok(updated)
}

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
    fn replaces_the_first_or_every_occurrence() {
        assert_eq!(apply("a b c", &input("b", "B", false)).unwrap(), "a B c");
        assert_eq!(apply("a a", &input("a", "b", false)).unwrap(), "b a");
        assert_eq!(apply("a a", &input("a", "b", true)).unwrap(), "b b");
        assert_eq!(apply("$x", &input("$x", "$&$1", false)).unwrap(), "$&$1", "no replacement patterns");
        let e = apply("abc", &input("x", "y", false)).unwrap_err();
        assert_eq!(e.message, "String not found in file. Failed to apply edit.");
    }

    #[test]
    fn deleting_a_line_takes_its_newline() {
        assert_eq!(apply("one\ntwo\nthree\n", &input("two", "", false)).unwrap(), "one\nthree\n");
        assert_eq!(apply("one\ntwo\n", &input("two\n", "", false)).unwrap(), "one\n");
        assert_eq!(apply("a two", &input("two", "", false)).unwrap(), "a ");
        // With replace_all only the occurrences followed by a newline go.
        assert_eq!(apply("x\nax", &input("x", "", true)).unwrap(), "ax");
    }

    #[test]
    fn empty_old_string_replaces_the_whole_text() {
        assert_eq!(apply("", &input("", "new\n", false)).unwrap(), "new\n");
        assert_eq!(apply("  \n", &input("", "x", false)).unwrap(), "x");
        assert_eq!(apply("", &input("", "", false)).unwrap(), "");
    }

    #[test]
    fn curly_quotes_match_straight_ones_and_are_kept() {
        let text = "say \u{201c}hi\u{201d} and it\u{2019}s \u{2018}ok\u{2019}\n";
        assert_eq!(find_actual_string(text, "\"hi\"").unwrap(), "\u{201c}hi\u{201d}");
        assert_eq!(find_actual_string(text, "it's 'ok'").unwrap(), "it\u{2019}s \u{2018}ok\u{2019}");
        assert_eq!(find_actual_string(text, "\"nope\""), None);
        assert_eq!(
            apply(text, &input("\"hi\"", "\"bye\" (\"x\")", false)).unwrap(),
            "say \u{201c}bye\u{201d} (\u{201c}x\u{201d}) and it\u{2019}s \u{2018}ok\u{2019}\n"
        );
        assert_eq!(
            apply(text, &input("it's 'ok'", "don't 'go'", false)).unwrap(),
            "say \u{201c}hi\u{201d} and don\u{2019}t \u{2018}go\u{2019}\n"
        );
        // Exact matches leave the new text alone.
        assert_eq!(preserve_quote_style("\"a\"", "\"a\"", "\"b\""), "\"b\"");
    }

    #[test]
    fn normalization_strips_trailing_whitespace_and_restores_markup() {
        let n = normalize_against(&input("x", "y  \nz\t", false), "x\n");
        assert_eq!(n.new_string, "y\nz");
        let md = EditInput { file_path: "/notes.md".into(), ..input("x", "y  ", false) };
        assert_eq!(normalize_against(&md, "x").new_string, "y  ");
        let n = normalize_against(&input("<n>a</n>", "<n>b</n>", false), "<name>a</name>");
        assert_eq!((n.old_string.as_str(), n.new_string.as_str()), ("<name>a</name>", "<name>b</name>"));
        // Present as written: nothing restored.
        let n = normalize_against(&input("<n>", "<o>", false), "<n>");
        assert_eq!((n.old_string.as_str(), n.new_string.as_str()), ("<n>", "<o>"));
    }

    #[test]
    fn replace_all_accepts_string_booleans() {
        let parse = |v: serde_json::Value| serde_json::from_value::<EditInput>(v);
        let base = serde_json::json!({"file_path": "/f", "old_string": "a", "new_string": "b"});
        assert!(!parse(base.clone()).unwrap().replace_all);
        let mut v = base.clone();
        v["replace_all"] = "true".into();
        assert!(parse(v).unwrap().replace_all);
        let mut v = base;
        v["replace_all"] = "yes".into();
        assert!(parse(v).is_err());
    }

    #[test]
    fn schema_is_claude_codes() {
        let schema = toolhost_sdk::schema::generate::<EditInput>();
        assert_eq!(schema["required"], serde_json::json!(["file_path", "old_string", "new_string"]));
        assert_eq!(schema["properties"]["replace_all"]["type"], "boolean");
        assert_eq!(schema["properties"]["replace_all"]["default"], false);
        assert_eq!(schema["additionalProperties"], false);
    }
}
