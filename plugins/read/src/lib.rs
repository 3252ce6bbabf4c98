//! The `Read` tool: a file's lines in `cat -n` form, or an image.

use toolhost_sdk::fs::{self, Access};
use toolhost_sdk::{Content, Context, Deserialize, JsonSchema, Output, Tool, ToolError, export_tool};

/// Lines shown when the model gives no `limit`.
pub const DEFAULT_LIMIT: usize = 2000;
/// Characters kept of a longer line.
pub const MAX_LINE_CHARS: usize = 2000;
/// Largest image returned as an image block.
const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// Input of `Read`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    /// The absolute path to the file to read
    pub file_path: String,
    /// The line number to start reading from. Only provide if the file is too large to read at once
    #[schemars(range(min = 0))]
    pub offset: Option<u64>,
    /// The number of lines to read. Only provide if the file is too large to read at once.
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

pub struct Read;

impl Tool for Read {
    type Input = ReadInput;
    const NAME: &'static str = "Read";
    const DESCRIPTION: &'static str = "Reads a file from the local filesystem.";
    // Read bounds its own output; persisting it would invite a Read-the-preview loop.
    const MAX_RESULT_SIZE_CHARS: Option<u64> = None;

    fn prompt() -> String {
        PROMPT.to_string()
    }
    fn search_hint() -> Option<String> {
        Some("read file contents cat view open".into())
    }
    fn is_concurrency_safe(_: &ReadInput) -> bool {
        true
    }
    fn is_read_only(_: &ReadInput) -> bool {
        true
    }

    fn validate_input(input: &ReadInput, ctx: &Context) -> Result<(), ToolError> {
        fs::confine(ctx, &input.file_path, Access::Read).map(drop)
    }

    fn call(input: ReadInput, ctx: &Context) -> Result<Output, ToolError> {
        let path = fs::confine(ctx, &input.file_path, Access::Read)?;
        let meta = std::fs::metadata(&path).map_err(|e| fs::io_error(ctx, &path, &e))?;
        if meta.is_dir() {
            return Err(fs::io_error(ctx, &path, &std::io::ErrorKind::IsADirectory.into()));
        }
        if let Some(media_type) = image_type(&path) {
            if meta.len() > MAX_IMAGE_BYTES {
                return Err(ToolError::new(
                    toolhost_sdk::ErrorKind::TooLarge,
                    format!("{} is an image of {} bytes; images larger than {MAX_IMAGE_BYTES} bytes are not returned.", path.display(), meta.len()),
                ));
            }
            let data = std::fs::read(&path).map_err(|e| fs::io_error(ctx, &path, &e))?;
            fs::record_read(ctx, &path, &meta)?;
            return Ok(Output { content: vec![Content::Image { media_type: media_type.into(), data }], ..Output::default() });
        }
        let bytes = std::fs::read(&path).map_err(|e| fs::io_error(ctx, &path, &e))?;
        if fs::looks_binary(&bytes) {
            return Err(ToolError::unsupported(format!(
                "{} appears to be a binary file ({} bytes); Read only shows text files and images. \
                 Use Bash with a suitable command (e.g. `xxd`, `file`) to inspect it.",
                path.display(),
                bytes.len()
            )));
        }
        let text = String::from_utf8_lossy(&bytes);
        let out = render(&text, input.offset, input.limit);
        fs::record_read(ctx, &path, &meta)?;
        Ok(Output::text(out))
    }
}

/// The text the model sees for a file's contents: the selected lines numbered
/// `cat -n` style, with a note when lines were left out, or a warning when there
/// is nothing to show. The same function runs natively in the benchmarks.
pub fn render(text: &str, offset: Option<u64>, limit: Option<u64>) -> String {
    if text.is_empty() {
        return "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>".into();
    }
    // `offset` is a 1-based line number; 0 means the start as well.
    let start = offset.map_or(0, |o| (o as usize).saturating_sub(1));
    let limit = limit.map_or(DEFAULT_LIMIT, |l| usize::try_from(l).unwrap_or(usize::MAX));
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut out = String::with_capacity(body.len().min(limit.saturating_mul(80)) + body.len() / 8);
    let mut shown = 0;
    let mut total = 0;
    for (i, line) in body.split('\n').enumerate() {
        total = i + 1;
        if i < start || shown >= limit {
            continue;
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        let line = truncate_chars(line, MAX_LINE_CHARS);
        fs::number_lines([line.as_ref()], i + 1, &mut out);
        shown += 1;
    }
    if shown == 0 {
        return format!(
            "<system-reminder>Warning: the file exists but is shorter than the provided offset ({}). The file has {total} lines.</system-reminder>",
            start + 1
        );
    }
    if start + shown < total {
        out.push_str(&format!(
            "\n(Showing lines {}-{} of {total}. Use offset and limit to read other parts.)\n",
            start + 1,
            start + shown
        ));
    }
    out
}

fn truncate_chars(line: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}... [line truncated, {} characters in all]", &line[..cut], line.chars().count()).into(),
        None => line.into(),
    }
}

fn image_type(path: &std::path::Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

const PROMPT: &str = "Reads a file from the local filesystem. You can access any file directly by using this tool.
Assume this tool is able to read all files on the machine. If the User provides a path to a file assume that path is valid. It is okay to read a file that does not exist; an error will be returned.

Usage:
- The file_path parameter must be an absolute path, not a relative path
- By default, it reads up to 2000 lines starting from the beginning of the file
- You can optionally specify a line offset and limit (especially handy for long files), but it's recommended to read the whole file by not providing these parameters
- Any lines longer than 2000 characters will be truncated
- Results are returned using cat -n format, with line numbers starting at 1
- This tool can read images (PNG, JPG, GIF, WebP); the contents are presented visually
- This tool can only read files, not directories. To read a directory, use an ls command via the Bash tool.
- Binary files other than images are refused.
- If you read a file that exists but has empty contents you will receive a system reminder warning in place of file contents.";

export_tool!(Read);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_numbered_lines() {
        assert_eq!(render("a\nb\n", None, None), "     1\ta\n     2\tb\n");
        assert_eq!(render("a\r\nb", None, None), "     1\ta\n     2\tb\n");
    }

    #[test]
    fn offset_and_limit_select_lines() {
        let text = "1\n2\n3\n4\n5\n";
        assert_eq!(render(text, Some(2), Some(2)), "     2\t2\n     3\t3\n\n(Showing lines 2-3 of 5. Use offset and limit to read other parts.)\n");
        assert!(render(text, Some(9), None).contains("shorter than the provided offset (9). The file has 5 lines"));
    }

    #[test]
    fn long_lines_are_cut_and_empty_files_warned() {
        let long = "x".repeat(MAX_LINE_CHARS + 5);
        assert!(render(&long, None, None).contains("[line truncated, 2005 characters in all]"));
        assert!(render("", None, None).contains("contents are empty"));
    }
}
