//! The `Read` tool: a file's lines in `cat -n` form, or an image.

use toolhost_sdk::fs::{self, Access};
use toolhost_sdk::{Content, Context, Deserialize, JsonSchema, Output, PathAccess, Tool, ToolError, export_tool};

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
    const PATH_FIELDS: &'static [(&'static str, PathAccess)] = &[("file_path", PathAccess::Read)];
    const READ_ONLY_HINT: Option<bool> = Some(true);
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(true);
    const CHECKS_PERMISSIONS: bool = false;
    const DESCRIPTION: &'static str = "Reads a file from the local filesystem.";
    // Read bounds its own output; persisting it would invite a Read-the-preview loop.
    const MAX_RESULT_SIZE_CHARS: Option<u64> = None;

    fn prompt() -> String {
        PROMPT.to_string()
    }
    fn search_hint() -> Option<String> {
        Some("read file contents cat view open".into())
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
                    format!(
                        "{} is an image of {} bytes; images larger than {MAX_IMAGE_BYTES} bytes are not returned.",
                        path.display(),
                        meta.len()
                    ),
                ));
            }
            let data = std::fs::read(&path).map_err(|e| fs::io_error(ctx, &path, &e))?;
            fs::record_read(ctx, &path, &meta)?;
            return Ok(Output {
                content: vec![Content::Image { media_type: media_type.into(), data }],
                ..Output::default()
            });
        }
        let file = std::fs::File::open(&path).map_err(|e| fs::io_error(ctx, &path, &e))?;
        // Lines stream out to the host as they are rendered: the tool never
        // holds the file or the result whole.
        let mut stream = ctx.output();
        let rendered = render_file(file, input.offset, input.limit, STREAM_CHUNK, &mut |text| stream.append(text))
            .map_err(|e| fs::io_error(ctx, &path, &e))?;
        let Some(tail) = rendered else {
            return Err(ToolError::unsupported(format!(
                "{} appears to be a binary file ({} bytes); Read only shows text files and images. \
                 Use Bash with a suitable command (e.g. `xxd`, `file`) to inspect it.",
                path.display(),
                meta.len()
            )));
        };
        fs::record_read(ctx, &path, &meta)?;
        Ok(Output::text(tail))
    }
}

/// Bytes of rendered text handed to the sink at a time in the component.
pub const STREAM_CHUNK: usize = 256 * 1024;
/// Bytes read from the file at a time.
const READ_CHUNK: usize = 256 * 1024;

/// Reads `file` in chunks and renders what Read shows for it: the selected
/// lines go to `sink` whenever `flush_at` bytes of them are ready, and the
/// rest (the last lines, a note or a warning) is returned. `None` means the
/// file is binary. The same code runs natively in the benchmarks (with
/// `flush_at` set to `usize::MAX`, so everything is returned).
pub fn render_file(
    mut file: impl std::io::Read,
    offset: Option<u64>,
    limit: Option<u64>,
    flush_at: usize,
    sink: &mut dyn FnMut(&str),
) -> std::io::Result<Option<String>> {
    let mut render = Render::new(offset, limit, flush_at, sink);
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut first = true;
    loop {
        // Fill the buffer (after any carried partial line) up to a chunk.
        let want = buf.len() + READ_CHUNK;
        let eof = loop {
            let len = buf.len();
            if len >= want {
                break false;
            }
            buf.resize(want, 0);
            match file.read(&mut buf[len..]) {
                Ok(0) => {
                    buf.truncate(len);
                    break true;
                }
                Ok(n) => buf.truncate(len + n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => buf.truncate(len),
                Err(e) => return Err(e),
            }
        };
        if first {
            if fs::looks_binary(&buf) {
                return Ok(None);
            }
            first = false;
        }
        if eof {
            render.feed(&buf, true);
            return Ok(Some(render.finish()));
        }
        // Feed complete lines; a line cut by the chunk waits for the next.
        match memchr::memrchr(b'\n', &buf) {
            Some(last) => {
                render.feed(&buf[..=last], false);
                buf.drain(..=last);
            }
            None => continue,
        }
    }
}

/// What Read shows for bytes already in memory, or `None` for a binary file.
pub fn text_of(bytes: &[u8], offset: Option<u64>, limit: Option<u64>) -> Option<String> {
    render_file(bytes, offset, limit, usize::MAX, &mut |_| {}).ok().flatten()
}

/// Renders lines `cat -n` style as they are fed.
struct Render<'s> {
    start: usize,
    limit: usize,
    /// Lines seen so far.
    index: usize,
    shown: usize,
    out: String,
    flush_at: usize,
    sink: &'s mut dyn FnMut(&str),
}

impl<'s> Render<'s> {
    fn new(offset: Option<u64>, limit: Option<u64>, flush_at: usize, sink: &'s mut dyn FnMut(&str)) -> Self {
        Render {
            // `offset` is a 1-based line number; 0 means the start as well.
            start: offset.map_or(0, |o| usize::try_from(o).unwrap_or(usize::MAX).saturating_sub(1)),
            limit: limit.map_or(DEFAULT_LIMIT, |l| usize::try_from(l).unwrap_or(usize::MAX)),
            index: 0,
            shown: 0,
            out: String::new(),
            flush_at,
            sink,
        }
    }

    /// Feeds bytes made of whole lines (each ending in `\n`), or, at the end of
    /// the file, whatever is left (a last line without `\n`).
    fn feed(&mut self, bytes: &[u8], at_end: bool) {
        if bytes.is_empty() {
            return;
        }
        if self.shown == self.limit {
            // Only the count of lines is still needed.
            self.index += memchr::memchr_iter(b'\n', bytes).count() + usize::from(at_end && !bytes.ends_with(b"\n"));
            return;
        }
        // Cut at `\n`, so no UTF-8 sequence is split; SIMD validation, and only
        // invalid text pays for a lossy copy.
        let text = match simdutf8::basic::from_utf8(bytes) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(bytes),
        };
        let body = text.strip_suffix('\n').unwrap_or(&text);
        if self.out.capacity() == 0 {
            let estimate = body.len().min(self.limit.saturating_mul(128)) + body.len() / 8;
            self.out.reserve(estimate.min(self.flush_at.saturating_add(4096)));
        }
        let mut line_start = 0;
        let mut ends = memchr::memchr_iter(b'\n', body.as_bytes()).chain(std::iter::once(body.len()));
        for end in ends.by_ref() {
            if self.index >= self.start {
                let line = &body[line_start..end];
                push_numbered(&mut self.out, self.index + 1, line.strip_suffix('\r').unwrap_or(line));
                self.shown += 1;
                if self.out.len() >= self.flush_at {
                    (self.sink)(&self.out);
                    self.out.clear();
                }
            }
            self.index += 1;
            line_start = end + 1;
            if self.shown == self.limit {
                self.index += ends.count();
                return;
            }
        }
    }

    /// The text not yet handed to the sink, with the closing note or warning.
    fn finish(mut self) -> String {
        let total = self.index;
        if total == 0 {
            return "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>".into();
        }
        if self.shown == 0 {
            return format!(
                "<system-reminder>Warning: the file exists but is shorter than the provided offset ({}). The file has {total} lines.</system-reminder>",
                self.start + 1
            );
        }
        if self.start + self.shown < total {
            self.out.push_str(&format!(
                "\n(Showing lines {}-{} of {total}. Use offset and limit to read other parts.)\n",
                self.start + 1,
                self.start + self.shown
            ));
        }
        self.out
    }
}

/// The text the model sees for a file's contents, all at once.
pub fn render(text: &str, offset: Option<u64>, limit: Option<u64>) -> String {
    text_of(text.as_bytes(), offset, limit).unwrap_or_default()
}

/// Appends `number` right-aligned in six columns, a tab, and `line` (cut at
/// [`MAX_LINE_CHARS`]), without the formatting machinery: this loop is most of
/// Read's time on large files.
fn push_numbered(out: &mut String, number: usize, line: &str) {
    let mut digits = [b' '; 20];
    let mut n = number;
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let width = (digits.len() - i).max(6);
    // SAFETY: `digits` holds only ASCII spaces and digits.
    out.push_str(unsafe { std::str::from_utf8_unchecked(&digits[digits.len() - width..]) });
    out.push('\t');
    if line.len() > MAX_LINE_CHARS && line.chars().count() > MAX_LINE_CHARS {
        let cut = line.char_indices().nth(MAX_LINE_CHARS).map_or(line.len(), |(i, _)| i);
        out.push_str(&line[..cut]);
        out.push_str(&format!("... [line truncated, {} characters in all]", line.chars().count()));
    } else {
        out.push_str(line);
    }
    out.push('\n');
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

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests).
toolhost_sdk::requests!(r#"{"workspace": "read-only"}"#);

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
        assert_eq!(
            render(text, Some(2), Some(2)),
            "     2\t2\n     3\t3\n\n(Showing lines 2-3 of 5. Use offset and limit to read other parts.)\n"
        );
        assert!(render(text, Some(9), None).contains("shorter than the provided offset (9). The file has 5 lines"));
    }

    #[test]
    fn wide_line_numbers_and_invalid_utf8() {
        let mut out = String::new();
        push_numbered(&mut out, 1_234_567, "x");
        assert_eq!(out, "1234567\tx\n");
        assert_eq!(text_of(b"caf\xe9\n", None, None).unwrap(), "     1\tcaf\u{fffd}\n");
        assert_eq!(text_of(b"\0\x01", None, None), None);
    }

    #[test]
    fn long_lines_are_cut_and_empty_files_warned() {
        let long = "x".repeat(MAX_LINE_CHARS + 5);
        assert!(render(&long, None, None).contains("[line truncated, 2005 characters in all]"));
        assert!(render("", None, None).contains("contents are empty"));
    }
}
