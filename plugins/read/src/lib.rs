//! The `Read` tool, as Claude Code 2.1.328 presents it to a model
//! (tools/FileReadTool): a text file's lines numbered `N\tline`, images as
//! image blocks, Jupyter notebooks cell by cell with their outputs, PDFs as
//! document blocks; the same caps, checks and texts.
//!
//! A whole-file read over the token cap gives a partial view (see
//! [`partial`]) whose banner follows the text as a `<system-reminder>` block
//! (Claude Code sends it as a separate message after the result). Toolhost
//! knows nothing of the context left in the model's turn, so `allow_large`
//! raises no cap: it behaves as 2.1.328 where that room is unavailable.

pub mod notebook;
pub mod partial;
pub mod pdf;
pub mod text;

use std::io::Read as _;
use std::path::Path;
use text::{Outcome, Selection, TokenCap};
use toolhost_sdk::fs::{self, Access, format_file_size};
use toolhost_sdk::{
    Content, Context, Deserialize, ErrorKind, JsonSchema, Output, PathAccess, Tool, ToolError, export_tool,
};

/// Largest file read without a `limit` (`MAX_OUTPUT_SIZE`, 256 KB): a read
/// without one is refused over it, whatever the `offset`.
pub const MAX_SIZE_BYTES: u64 = 256 * 1024;
/// Files from this size on are streamed by Claude Code, and its size check
/// counts the first streamed chunk instead of the file.
const STREAMED_FROM: u64 = 10 * 1024 * 1024;
/// The chunk Claude Code streams a large file in.
const STREAMED_CHUNK: usize = 512 * 1024;
/// Bytes of rendered text handed to the host at a time.
pub const STREAM_CHUNK: usize = 256 * 1024;
/// Largest image sent, in base64 (`API_IMAGE_MAX_BASE64_SIZE`).
const MAX_IMAGE_BASE64: u64 = 5 * 1024 * 1024;
/// Largest image side (`IMAGE_MAX_WIDTH`, `IMAGE_MAX_HEIGHT`).
const MAX_IMAGE_SIDE: u32 = 2000;

/// Input of `Read`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    /// Absolute path of the file to read
    pub file_path: String,
    /// Line number to start reading at (the first line is 1). Give it only for a file too large to read in one go
    #[schemars(range(min = 0))]
    pub offset: Option<u64>,
    /// How many lines to read. Give it only for a file too large to read in one go.
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
    /// Pages of a PDF to read, such as "3", "1-5" or "10-20" (numbered from 1). For PDF files only; at most 20 pages per request.
    #[serde(default, deserialize_with = "blank_is_absent")]
    pub pages: Option<String>,
    /// Set to true to read a text file, or a line range of one, that is over the usual size limits, up to what still fits in your context. Only use this when you genuinely need all of it or the user asked for the whole file; otherwise read it in parts with offset and limit, or search it.
    pub allow_large: Option<bool>,
}

/// `pages` as 2.1.328 takes it: an empty or blank string is no `pages`.
fn blank_is_absent<'de, D: toolhost_sdk::serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let pages = Option::<String>::deserialize(d)?;
    Ok(pages.filter(|p| !p.trim_matches(fs::is_js_whitespace).is_empty()))
}

/// What size errors and banners add when the model asked for `allow_large`:
/// toolhost has no measure of the context left, so it cannot raise the caps.
const ALLOW_LARGE_UNAVAILABLE: &str =
    " allow_large is not available where this read runs; read it in parts with offset and limit.";

impl ReadInput {
    /// The hint a size error or a banner ends with.
    fn allow_large_hint(&self) -> &'static str {
        if self.allow_large.is_some_and(|a| a) { ALLOW_LARGE_UNAVAILABLE } else { "" }
    }
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
        Some("read file contents cat view open image pdf notebook".into())
    }

    /// Claude Code's `validateInput`, in its order: the page range, then (the
    /// path confined to the working directories) binary extensions and
    /// devices, all without reading the file.
    fn validate_input(input: &ReadInput, ctx: &Context) -> Result<(), ToolError> {
        if let Some(pages) = &input.pages {
            let range = pdf::parse_page_range(pages).ok_or_else(|| invalid(pdf::invalid_pages(pages)))?;
            if range.pages() > pdf::MAX_PAGES_PER_READ {
                return Err(invalid(pdf::too_many_pages_requested(pages)));
            }
        }
        let path = fs::confine(ctx, &input.file_path, Access::Read)?;
        let path_text = path.to_string_lossy();
        let ext = extname(&path_text).to_ascii_lowercase();
        if has_binary_extension(&path_text) && ext != ".pdf" && !is_image_extension(&ext) {
            return Err(invalid(format!(
                "This tool cannot read binary files. The file appears to be a binary {ext} file. Use a skill for \
                 this file type if one is available, or a shell command or script that can read the format."
            )));
        }
        match device_kind(&path_text) {
            None => Ok(()),
            Some(Device::File) => Err(invalid(format!(
                "Cannot read '{}': this path names a device or process file that this tool does not read.",
                input.file_path
            ))),
            Some(Device::Link) => Err(invalid(format!(
                "Cannot read '{}': it is or leads to a path through a /proc or /dev link that this tool does not \
                 follow; give the file's own path.",
                input.file_path
            ))),
        }
    }

    fn call(input: ReadInput, ctx: &Context) -> Result<Output, ToolError> {
        let path = fs::confine(ctx, &input.file_path, Access::Read)?;
        let path_text = path.to_string_lossy().into_owned();
        let ext = extname(&path_text).to_ascii_lowercase();
        match ext.as_str() {
            ".ipynb" => read_notebook(&input, ctx, &path),
            ".pdf" => match &input.pages {
                Some(pages) => read_pdf_pages(ctx, &path, pages),
                None => read_pdf(ctx, &path),
            },
            _ if is_image_extension(&ext) => read_image(ctx, &path),
            // 2.1.328: a file without an extension whose first bytes are an
            // image's is read as that image.
            "" if starts_like_an_image(&path) => read_image(ctx, &path),
            _ => read_text(&input, ctx, &path, &ext),
        }
    }
}

fn invalid(message: String) -> ToolError {
    ToolError::invalid_input(message)
}

fn too_large(message: String) -> ToolError {
    ToolError::new(ErrorKind::TooLarge, message)
}

/// A text file: the selected lines, streamed out once they cannot go over
/// the token cap.
fn read_text(input: &ReadInput, ctx: &Context, path: &Path, ext: &str) -> Result<Output, ToolError> {
    let meta = std::fs::metadata(path).map_err(|e| io_error(ctx, path, &e))?;
    if meta.is_dir() {
        return Err(invalid(format!("EISDIR: illegal operation on a directory, read '{}'", path.display())));
    }
    let mut file = std::fs::File::open(path).map_err(|e| io_error(ctx, path, &e))?;
    // The size cap applies to reads without a limit, on the whole file.
    if input.limit.is_none() {
        let size = if meta.len() < STREAMED_FROM {
            meta.len()
        } else {
            let first = first_streamed_chunk(&mut file).map_err(|e| io_error(ctx, path, &e))?;
            file = std::fs::File::open(path).map_err(|e| io_error(ctx, path, &e))?;
            first
        };
        if size > MAX_SIZE_BYTES {
            return Err(too_large(file_too_large(size, input.allow_large_hint())));
        }
    }
    let cap = TokenCap::for_extension(ext.trim_start_matches('.'));
    let selection = Selection { offset: input.offset, limit: input.limit };
    // Claude Code looks at the whole file's bytes when it holds them (under
    // 10 MB): for the note on text that is not UTF-8, and to remember the
    // text of a read that saw all of it. They are read once, and the lines
    // shown come from the same bytes.
    let bytes = match meta.len() < STREAMED_FROM {
        true => {
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            file.read_to_end(&mut bytes).map_err(|e| io_error(ctx, path, &e))?;
            Some(bytes)
        }
        false => None,
    };
    // A range of a file larger than the range cap is measured before any of
    // it is shown.
    if input.limit.is_some() && meta.len() > text::MAX_SELECTED_BYTES {
        let over = match &bytes {
            Some(b) => text::selection_exceeds(&b[..], selection, text::MAX_SELECTED_BYTES),
            None => text::selection_exceeds(&mut file, selection, text::MAX_SELECTED_BYTES),
        }
        .map_err(|e| io_error(ctx, path, &e))?;
        if over {
            return Err(too_large(range_too_large(input.allow_large_hint())));
        }
        if bytes.is_none() {
            file = std::fs::File::open(path).map_err(|e| io_error(ctx, path, &e))?;
        }
    }
    let mut stream = ctx.output();
    let mut sink = |t: &str| stream.append(t);
    let outcome = match &bytes {
        Some(b) => text::render(&b[..], selection, Some(cap), Some(meta.len()), STREAM_CHUNK, &mut sink),
        None => text::render(file, selection, Some(cap), Some(meta.len()), STREAM_CHUNK, &mut sink),
    }
    .map_err(|e| io_error(ctx, path, &e))?;
    let note = bytes.as_deref().and_then(fs::not_text).map(|n| format!("\n\n{}", n.read_note())).unwrap_or_default();
    let offset = input.offset.unwrap_or(1);
    let mut text = match outcome {
        Outcome::Lines(text) | Outcome::Reminder(text) => text,
        // Only a whole-file read becomes a partial view; a range stays refused.
        Outcome::TooManyTokens(tokens) if offset <= 1 && input.limit.is_none() && input.pages.is_none() => {
            let Some(bytes) = &bytes else { return Err(too_large(too_many_tokens(tokens, input.allow_large_hint()))) };
            let view = partial::partial_view(
                &whole_text(bytes),
                tokens,
                cap.max_tokens,
                &path.display().to_string(),
                input.allow_large_hint(),
            );
            fs::record_partial_read(ctx, path, &meta, view.lines)?;
            let mut shown = String::with_capacity(view.text.len() + view.text.len() / 8);
            for (i, line) in view.text.split('\n').enumerate() {
                if i > 0 {
                    shown.push('\n');
                }
                shown.push_str(&format!("{}\t{}", i + 1, line.strip_suffix('\r').unwrap_or(line)));
            }
            return Ok(Output::text(shown + &note + &partial::reminder(&view.banner)));
        }
        Outcome::TooManyTokens(tokens) => return Err(too_large(too_many_tokens(tokens, input.allow_large_hint()))),
    };
    // A read from the first line that reached the end of the file is a full
    // view: its text is remembered, so a later change of time alone does not
    // make Edit and Write refuse.
    let full_view = bytes.as_deref().filter(|b| offset <= 1 && reaches_end(b, input.limit)).map(|b| {
        let file = fs::TextFile::decode(b);
        fs::view_hash(&file.text)
    });
    fs::record_read_range(ctx, path, &meta, offset, input.limit, full_view)?;
    text.push_str(&note);
    Ok(Output::text(text))
}

/// The whole file's text as Claude Code reads a file in one piece: decoded
/// (invalid UTF-8 as U+FFFD), no byte-order mark, `\r\n` as `\n`, a last `\r`
/// dropped.
fn whole_text(bytes: &[u8]) -> String {
    let mut text = String::from_utf8_lossy(bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)).replace("\r\n", "\n");
    if text.ends_with('\r') {
        text.pop();
    }
    text
}

/// Whether a read with `limit` of a file whose bytes are `bytes` shows every
/// line and some text (2.1.328's `s$`: fewer lines read than the limit).
fn reaches_end(bytes: &[u8], limit: Option<u64>) -> bool {
    match limit {
        None => true,
        Some(limit) => !bytes.is_empty() && (memchr::memchr_iter(b'\n', bytes).count() as u64) + 1 < limit,
    }
}

/// The size check's error, with the `allow_large` hint.
pub fn file_too_large(size: u64, hint: &str) -> String {
    format!(
        "File content ({}) exceeds maximum allowed size ({}). Use offset and limit parameters to read specific \
         portions of the file, or search for specific content instead of reading the whole file.{hint}",
        format_file_size(size),
        format_file_size(MAX_SIZE_BYTES)
    )
}

/// The error for a line range over the range cap, with the `allow_large` hint.
pub fn range_too_large(hint: &str) -> String {
    format!(
        "The requested line range contains over {} of text, more than a read can return. Use a smaller limit — or, \
         if a single line is this large, no limit will fit it: search for specific content instead.{hint}",
        format_file_size(text::MAX_SELECTED_BYTES)
    )
}

/// The token cap's error, with the `allow_large` hint.
pub fn too_many_tokens(tokens: u64, hint: &str) -> String {
    format!(
        "File content ({tokens} tokens) exceeds maximum allowed tokens ({}). Use offset and limit parameters to \
         read specific portions of the file, or search for specific content instead of reading the whole file.{hint}",
        text::MAX_TOKENS
    )
}

/// The bytes Claude Code counts when it streams a large file and stops at
/// the first chunk: 512 KiB decoded as UTF-8 (an incomplete character at the
/// end waits for the next chunk, a byte order mark is dropped), measured
/// again in UTF-8.
fn first_streamed_chunk(file: &mut std::fs::File) -> std::io::Result<u64> {
    let mut chunk = Vec::with_capacity(STREAMED_CHUNK);
    file.by_ref().take(STREAMED_CHUNK as u64).read_to_end(&mut chunk)?;
    Ok(streamed_len(&chunk))
}

fn streamed_len(chunk: &[u8]) -> u64 {
    let chunk = chunk.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(chunk);
    // An incomplete sequence at the end is held back.
    let tail = chunk.len().saturating_sub(3);
    let keep = match std::str::from_utf8(&chunk[tail..]) {
        Err(e) if e.error_len().is_none() => tail + e.valid_up_to(),
        _ => chunk.len(),
    };
    String::from_utf8_lossy(&chunk[..keep]).len() as u64
}

/// A notebook: its cells and outputs, within the size and token caps.
fn read_notebook(input: &ReadInput, ctx: &Context, path: &Path) -> Result<Output, ToolError> {
    // A notebook is parsed whole: past 100 MB it is not read at all.
    let size = std::fs::metadata(path).map_err(|e| io_error(ctx, path, &e))?.len();
    if size > MAX_NOTEBOOK_BYTES {
        return Err(too_large(format!(
            "Notebook file exceeds the maximum size this tool can read ({}). {JQ_HINTS}",
            format_file_size(MAX_NOTEBOOK_BYTES)
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| io_error(ctx, path, &e))?;
    let cells = notebook::parse(&bytes).map_err(invalid)?;
    let json = notebook::cells_json(&cells);
    if json.len() as u64 > MAX_SIZE_BYTES {
        return Err(too_large(format!(
            "Notebook content ({}) exceeds maximum allowed size ({}). {JQ_HINTS}",
            format_file_size(json.len() as u64),
            format_file_size(MAX_SIZE_BYTES)
        )));
    }
    if let (true, tokens) = notebook::token_estimate(&json) {
        return Err(too_large(too_many_tokens(tokens, "")));
    }
    let meta = std::fs::metadata(path).map_err(|e| io_error(ctx, path, &e))?;
    fs::record_read_range(ctx, path, &meta, input.offset.unwrap_or(1), input.limit, None)?;
    Ok(Output { content: notebook::to_content(&cells), ..Output::default() })
}

/// The largest notebook read (2.1.328).
const MAX_NOTEBOOK_BYTES: u64 = 100 * 1024 * 1024;

/// How to read a notebook too large for Read in parts (2.1.328 names the
/// file with a placeholder, not its path).
const JQ_HINTS: &str = "Use Bash with jq to read specific portions:\n  \
     cat <notebook_path> | jq '.cells[:20]' # First 20 cells\n  \
     cat <notebook_path> | jq '.cells[100:120]' # Cells 100-120\n  \
     cat <notebook_path> | jq '.cells | length' # Count total cells\n  \
     cat <notebook_path> | jq '.cells[] | select(.cell_type==\"code\") | .source' # All code sources";

/// An image, sent as it is: Claude Code without an image processor. It
/// refuses what it could not send unresized.
fn read_image(ctx: &Context, path: &Path) -> Result<Output, ToolError> {
    let data = std::fs::read(path).map_err(|e| io_error(ctx, path, &e))?;
    if data.is_empty() {
        return Err(invalid(format!("Image file is empty: {}", path.display())));
    }
    let Some(media_type) = image_type(&data) else {
        return Err(invalid(format!(
            "File has an image extension but its content is not a valid PNG/JPEG/GIF/WebP. Detected: {}. This \
             usually means a download saved an error/login page instead of the image. Use `file \"{}\"` to confirm, \
             or read it as text with Bash (e.g. `head -c 500`).",
            describe_bytes(&data),
            path.display()
        )));
    };
    check_image(&data).map_err(too_large)?;
    Ok(Output { content: vec![Content::Image { media_type: media_type.to_string(), data }], ..Output::default() })
}

/// Whether the regular file at `path` starts with an image's magic bytes.
fn starts_like_an_image(path: &Path) -> bool {
    use std::io::Read as _;
    let Ok(file) = std::fs::File::open(path) else { return false };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = Vec::with_capacity(16);
    file.take(16).read_to_end(&mut head).is_ok() && image_type(&head).is_some()
}

/// What bytes that are not an image look like, as 2.1.328 words it: the
/// first 32 as Latin-1, unprintable ones as dots.
fn describe_bytes(data: &[u8]) -> String {
    let head = &data[..data.len().min(32)];
    let shown: String = head.iter().map(|&b| if (0x20..=0x7e).contains(&b) { b as char } else { '.' }).collect();
    let start: String = shown.chars().take(24).collect();
    let lower = shown.to_ascii_lowercase();
    if lower.contains("<!doctype") || lower.contains("<html") {
        format!("HTML document (starts with \"{start}\")")
    } else if lower.starts_with("<?xml") || lower.starts_with("<svg") {
        format!("XML/SVG document (starts with \"{start}\")")
    } else if lower.starts_with('{') || lower.starts_with('[') {
        format!("JSON/text (starts with \"{start}\")")
    } else if head.len() >= 4 && head[..4].eq_ignore_ascii_case(b"%pdf") {
        "PDF document".to_string()
    } else if head.starts_with(b"PK\x03\x04") {
        "ZIP archive (Office documents such as .pptx/.docx/.xlsx are ZIPs)".to_string()
    } else {
        let hex: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("unrecognized bytes (hex: {})", hex.join(" "))
    }
}

/// The limits on an image sent unresized: its base64 within 5 MB, and for a
/// PNG, sides of at most 2000 pixels.
fn check_image(data: &[u8]) -> Result<(), String> {
    let size = data.len() as u64;
    let base64_size = (size * 4).div_ceil(3);
    let side = |at: usize| u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
    let over_side =
        data.len() >= 24 && data.starts_with(b"\x89PNG") && (side(16) > MAX_IMAGE_SIDE || side(20) > MAX_IMAGE_SIDE);
    if over_side {
        return Err(format!(
            "Unable to resize image — dimensions exceed the {MAX_IMAGE_SIDE}x{MAX_IMAGE_SIDE}px limit and image \
             processing failed. Please resize the image to reduce its pixel dimensions."
        ));
    }
    if base64_size > MAX_IMAGE_BASE64 {
        return Err(format!(
            "Unable to resize image ({} raw, {} base64). The image exceeds the 5MB API limit and compression \
             failed. Please resize the image manually or use a smaller image.",
            format_file_size(size),
            format_file_size(base64_size)
        ));
    }
    Ok(())
}

/// The media type of an image from its first bytes, as 2.1.328 tells
/// them: PNG, JPEG, GIF87a/89a or WebP; `None` for anything else.
fn image_type(data: &[u8]) -> Option<&'static str> {
    if data.len() < 4 {
        return None;
    }
    if data.starts_with(b"\x89PNG") {
        Some("image/png")
    } else if data.starts_with(b"\xFF\xD8\xFF") {
        Some("image/jpeg")
    } else if data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if data.starts_with(b"RIFF") && data.get(8..12) == Some(b"WEBP") {
        Some("image/webp")
    } else {
        None
    }
}

/// A whole PDF: at most ten pages, sent as a document block.
fn read_pdf(ctx: &Context, path: &Path) -> Result<Output, ToolError> {
    let meta = std::fs::metadata(path).map_err(|e| io_error(ctx, path, &e))?;
    if meta.is_dir() {
        return Err(invalid(DIRECTORY_READ.into()));
    }
    let path_text = path.display().to_string();
    // Claude Code counts the pages first (when it can), then checks the file.
    let bytes = if meta.len() <= pdf::MAX_EXTRACT_SIZE {
        std::fs::read(path).map_err(|e| io_error(ctx, path, &e))?
    } else {
        Vec::new()
    };
    if let Some(count) = pdf::page_count(&bytes)
        && count > pdf::INLINE_PAGE_THRESHOLD
    {
        return Err(invalid(pdf::too_many_pages_to_inline(count)));
    }
    pdf::check_whole(&path_text, meta.len(), &bytes).map_err(invalid)?;
    Ok(Output {
        content: vec![
            Content::Text(pdf::read_text(&path_text, meta.len())),
            Content::Document { media_type: "application/pdf".into(), data: bytes },
        ],
        ..Output::default()
    })
}

/// Pages of a PDF, as a smaller PDF holding just them.
fn read_pdf_pages(ctx: &Context, path: &Path, pages: &str) -> Result<Output, ToolError> {
    let path_text = path.display().to_string();
    // Validated before the call.
    let range = pdf::parse_page_range(pages).ok_or_else(|| invalid(pdf::invalid_pages(pages)))?;
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        // Claude Code reports the failed stat as it is here, not as a missing file.
        std::io::ErrorKind::NotFound => {
            ToolError::not_found(format!("ENOENT: no such file or directory, stat '{path_text}'"))
        }
        _ => io_error(ctx, path, &e),
    })?;
    if meta.is_dir() {
        return Err(invalid(DIRECTORY_READ.into()));
    }
    pdf::check_extract(&path_text, meta.len()).map_err(too_large)?;
    let bytes = std::fs::read(path).map_err(|e| io_error(ctx, path, &e))?;
    let (data, count) = pdf::extract_pages(&bytes, range).map_err(invalid)?;
    Ok(Output {
        content: vec![
            Content::Text(pdf::pages_text(&path_text, count, meta.len())),
            Content::Document { media_type: "application/pdf".into(), data },
        ],
        ..Output::default()
    })
}

/// Node's error for reading a directory as a file.
const DIRECTORY_READ: &str = "EISDIR: illegal operation on a directory, read";

/// An I/O error on `path` as Claude Code reports it where it has its own
/// text (a missing file, a directory); toolhost's otherwise.
fn io_error(ctx: &Context, path: &Path, err: &std::io::Error) -> ToolError {
    match err.kind() {
        std::io::ErrorKind::NotFound => ToolError::not_found(not_found(ctx, path)),
        std::io::ErrorKind::IsADirectory => invalid(DIRECTORY_READ.into()),
        _ => fs::io_error(ctx, path, err),
    }
}

/// The missing-file error: the working directory, and a guess when there
/// is one (the same path under the working directory, for a path that left
/// out its directory; else a file of the same name with another extension).
fn not_found(ctx: &Context, path: &Path) -> String {
    let mut message = format!("File does not exist. {} {}.", fs::CWD_NOTE, ctx.cwd());
    let suggestion =
        fs::suggest_path_under_cwd(ctx, path).map(|p| p.display().to_string()).or_else(|| fs::find_similar_file(path));
    if let Some(suggestion) = suggestion {
        message.push_str(&format!(" Did you mean {suggestion}?"));
    }
    message
}

/// Node's `path.extname`: from the last `.` of the last component, unless
/// that dot starts the name (`.bashrc`) or the name is `..`; with the dot.
pub fn extname(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rfind('.') {
        Some(0) | None => "",
        Some(_) if name == ".." => "",
        Some(dot) => &path[path.len() - (name.len() - dot)..],
    }
}

/// Extensions of files Read refuses as binary (2.1.328's list, 27 more than
/// 2.1.88's); PDFs and the images Read shows are read all the same.
const BINARY_EXTENSIONS: &[&str] = &[
    ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".webp", ".tiff", ".tif", ".heic", ".heif", ".avif", ".mp4",
    ".mov", ".avi", ".mkv", ".webm", ".wmv", ".flv", ".m4v", ".mpeg", ".mpg", ".mp3", ".wav", ".ogg", ".flac", ".aac",
    ".m4a", ".wma", ".aiff", ".opus", ".zip", ".tar", ".gz", ".bz2", ".7z", ".rar", ".xz", ".z", ".tgz", ".iso",
    ".zst", ".lz4", ".whl", ".exe", ".dll", ".so", ".dylib", ".bin", ".o", ".a", ".obj", ".lib", ".app", ".msi",
    ".deb", ".rpm", ".dmg", ".apk", ".pdf", ".doc", ".docx", ".docm", ".dotx", ".dotm", ".xls", ".xlsx", ".xlsm",
    ".xlsb", ".xltx", ".xltm", ".ppt", ".pptx", ".pptm", ".ppsx", ".ppsm", ".potx", ".potm", ".odt", ".ods", ".odp",
    ".numbers", ".epub", ".ttf", ".otf", ".woff", ".woff2", ".eot", ".pyc", ".pyo", ".class", ".jar", ".war", ".ear",
    ".node", ".wasm", ".rlib", ".sqlite", ".sqlite3", ".db", ".mdb", ".idx", ".parquet", ".feather", ".npy", ".npz",
    ".pickle", ".psd", ".ai", ".eps", ".sketch", ".fig", ".xd", ".blend", ".3ds", ".max", ".swf", ".fla", ".lockb",
    ".dat", ".data",
];

/// Whether the text from the path's last `.` on (even across a `/`) is a
/// binary extension, as Claude Code tests it.
fn has_binary_extension(path: &str) -> bool {
    path.rfind('.').is_some_and(|dot| BINARY_EXTENSIONS.contains(&path[dot..].to_ascii_lowercase().as_str()))
}

/// Why a path is one Read does not open (2.1.328 `rO`, by the path only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Device {
    /// A device or process file: one that never ends, waits for input, or
    /// shows a process's memory or secrets.
    File,
    /// A path through a `/proc` or `/dev` link (`/proc/PID/cwd/…`, `/dev/fd/N/…`).
    Link,
}

/// Whether `path` (absolute, normalized) names a device or process file.
fn device_kind(path: &str) -> Option<Device> {
    const FILES: &[&str] = &[
        "/dev/zero",
        "/dev/random",
        "/dev/urandom",
        "/dev/full",
        "/dev/hwrng",
        "/dev/stdin",
        "/dev/tty",
        "/dev/console",
        "/proc/kmsg",
        "/dev/kmsg",
        "/proc/kcore",
        "/proc/vmcore",
        "/dev/core",
        "/dev/mem",
        "/dev/kmem",
        "/dev/port",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/fd/0",
        "/dev/fd/1",
        "/dev/fd/2",
    ];
    const PROCESS_FILES: &[&str] = &[
        "environ",
        "cmdline",
        "auxv",
        "maps",
        "smaps",
        "smaps_rollup",
        "numa_maps",
        "pagemap",
        "mem",
        "stat",
        "statm",
        "status",
        "syscall",
        "stack",
    ];
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = path.strip_prefix("/dev/") {
        let parts: Vec<&str> = rest.split('/').collect();
        let link = match parts.as_slice() {
            ["fd", n, _, ..] => digits(n),
            ["stdin" | "stdout" | "stderr", _, ..] => true,
            _ => false,
        };
        if link {
            return Some(Device::Link);
        }
        let terminal = match parts.as_slice() {
            ["pts", n] => digits(n) || *n == "ptmx",
            [name] => *name == "ptmx" || name.starts_with("tty"),
            _ => false,
        };
        return (FILES.contains(&path) || terminal).then_some(Device::File);
    }
    let rest = path.strip_prefix("/proc/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        // Its own working directory is the working directory, not a link.
        [pid, "cwd", _, ..] if *pid != "self" => return Some(Device::Link),
        [_, "fd", n, _, ..] if digits(n) => return Some(Device::Link),
        [_, "map_files", ..] => return Some(Device::File),
        [_, "fd", "0" | "1" | "2"] => return Some(Device::File),
        // Another process's open files.
        [pid, "fd", n] if *pid != "self" && digits(n) => return Some(Device::File),
        [_, name] if PROCESS_FILES.contains(name) => return Some(Device::File),
        _ => {}
    }
    FILES.contains(&path).then_some(Device::File)
}

/// Whether an extension (lower case, with the dot) is one of the images
/// Read shows (the media type comes from the file's first bytes).
fn is_image_extension(ext: &str) -> bool {
    matches!(ext, ".png" | ".jpg" | ".jpeg" | ".gif" | ".webp")
}

/// What Read shows for a text file, rendered whole and without the token
/// cap: the component's code natively, for benchmarks. `None` is never
/// returned (the signature is the benchmarks').
pub fn render_file(
    file: impl std::io::Read,
    offset: Option<u64>,
    limit: Option<u64>,
    flush_at: usize,
    sink: &mut dyn FnMut(&str),
) -> std::io::Result<Option<String>> {
    Ok(match text::render(file, Selection { offset, limit }, None, None, flush_at, sink)? {
        Outcome::Lines(text) | Outcome::Reminder(text) => Some(text),
        Outcome::TooManyTokens(_) => None,
    })
}

const PROMPT: &str = include_str!("prompt.md");

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests).
toolhost_sdk::requests!(r#"{"workspace": "read-only"}"#);

export_tool!(Read);

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_sdk::Mode;

    #[test]
    fn sizes_format_as_in_claude_code() {
        assert_eq!(format_file_size(1023), "1023 bytes");
        assert_eq!(format_file_size(1024), "1KB");
        // Ties round up, as toFixed does (1.25 → 1.3).
        assert_eq!(format_file_size(1280), "1.3KB");
        assert_eq!(format_file_size(262_144), "256KB");
        assert_eq!(format_file_size(300_000), "293KB");
        assert_eq!(format_file_size(1_048_575), "1024KB");
        assert_eq!(format_file_size(20 * 1024 * 1024), "20MB");
        assert_eq!(format_file_size(3 * 1024 * 1024 * 1024 / 2), "1.5GB");
    }

    #[test]
    fn cap_messages() {
        assert_eq!(
            file_too_large(300_000, ""),
            "File content (293KB) exceeds maximum allowed size (256KB). Use offset and limit parameters to read \
             specific portions of the file, or search for specific content instead of reading the whole file."
        );
        assert_eq!(
            too_many_tokens(25_001, ""),
            "File content (25001 tokens) exceeds maximum allowed tokens (25000). Use offset and limit parameters \
             to read specific portions of the file, or search for specific content instead of reading the whole file."
        );
        // The first 512 KiB streamed, less a byte order mark and a cut character.
        let mut chunk = b"\xEF\xBB\xBF".to_vec();
        chunk.extend(std::iter::repeat_n(b'a', STREAMED_CHUNK - 5));
        chunk.extend(b"\xE2\x82");
        assert_eq!(streamed_len(&chunk), STREAMED_CHUNK as u64 - 5);
        assert_eq!(streamed_len(b"a\xffb"), 5, "an invalid byte is three bytes of U+FFFD");
    }

    #[test]
    fn extensions_as_node_and_claude_code_read_them() {
        assert_eq!(extname("/w/a.tar.gz"), ".gz");
        assert_eq!(extname("/w/.bashrc"), "");
        assert_eq!(extname("/w/..foo"), ".foo");
        assert_eq!(extname("/w.d/Makefile"), "");
        assert_eq!(extname("/w/a."), ".");
        assert!(has_binary_extension("/w/app.EXE"));
        assert!(has_binary_extension("/w/.bin"), "a dot file named like an extension");
        assert!(!has_binary_extension("/w/dir.zip/notes"));
        assert!(!has_binary_extension("/w/main.rs"));
    }

    #[test]
    fn validation_refuses_bad_pages_binary_files_and_devices() {
        let ctx = Context::for_tests("/", Mode::Default);
        let check = |path: &str, pages: Option<&str>| {
            let input = ReadInput {
                file_path: path.into(),
                offset: None,
                limit: None,
                pages: pages.map(String::from),
                allow_large: None,
            };
            Read::validate_input(&input, &ctx).map_err(|e| e.message)
        };
        assert_eq!(check("/a.pdf", Some("0")), Err(pdf::invalid_pages("0")));
        assert_eq!(check("/a.pdf", Some("1-21")), Err(pdf::too_many_pages_requested("1-21")));
        assert_eq!(check("/a.pdf", Some("3-")), Err(pdf::too_many_pages_requested("3-")));
        assert_eq!(check("/a.pdf", Some("1-20")), Ok(()));
        assert_eq!(
            check("/w/app.exe", None),
            Err("This tool cannot read binary files. The file appears to be a binary .exe file. Use a skill for \
                 this file type if one is available, or a shell command or script that can read the format."
                .into())
        );
        assert!(check("/w/photo.heic", None).is_err(), "one of the 27 extensions 2.1.328 added");
        assert!(check("/w/data.parquet", None).is_err());
        assert_eq!(check("/w/a.PNG", None), Ok(()));
        assert_eq!(check("/w/a.pdf", None), Ok(()));
        assert_eq!(
            check("/dev/zero", None),
            Err("Cannot read '/dev/zero': this path names a device or process file that this tool does not read."
                .into())
        );
        assert!(check("/proc/self/fd/0", None).is_err());
        assert!(check("/proc/self/environ", None).is_err());
        assert!(check("/dev/pts/3", None).is_err());
        assert_eq!(
            check("/dev/fd/3/x", None),
            Err(
                "Cannot read '/dev/fd/3/x': it is or leads to a path through a /proc or /dev link that this tool does \
                 not follow; give the file's own path."
                    .into()
            )
        );
        assert_eq!(check("/proc/self/cwd/a.txt", None), Ok(()));
        assert_eq!(check("/dev/null", None), Ok(()));
        assert_eq!(check("/proc/cpuinfo", None), Ok(()));
    }

    #[test]
    fn images_within_the_limits_are_sent_as_they_are() {
        let png = |w: u32, h: u32| {
            let mut d = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
            d.extend(w.to_be_bytes());
            d.extend(h.to_be_bytes());
            d
        };
        assert_eq!(check_image(&png(2000, 2000)), Ok(()));
        assert!(check_image(&png(2001, 10)).unwrap_err().contains("dimensions exceed the 2000x2000px limit"));
        let big = vec![0u8; 3_932_161];
        assert_eq!(
            check_image(&big).unwrap_err(),
            "Unable to resize image (3.8MB raw, 5MB base64). The image exceeds the 5MB API limit and compression \
             failed. Please resize the image manually or use a smaller image."
        );
        assert_eq!(check_image(&big[1..]), Ok(()));
        assert_eq!(image_type(b"\xFF\xD8\xFF\xE0"), Some("image/jpeg"));
        assert_eq!(image_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_type(b"GIF89a"), Some("image/gif"));
        assert_eq!(image_type(&png(1, 1)), Some("image/png"));
        assert_eq!(image_type(b"GIF90a"), None);
        assert_eq!(image_type(b"????"), None);
    }

    #[test]
    fn what_is_not_an_image_is_named_as_2_1_328_names_it() {
        assert_eq!(
            describe_bytes(b"<!DOCTYPE html><html><head><title>Sign in</title>"),
            "HTML document (starts with \"<!DOCTYPE html><html><he\")"
        );
        assert_eq!(describe_bytes(b"<svg xmlns='x'/>"), "XML/SVG document (starts with \"<svg xmlns='x'/>\")");
        assert_eq!(describe_bytes(b"{\"error\":\n\"denied\"}"), "JSON/text (starts with \"{\"error\":.\"denied\"}\")");
        assert_eq!(describe_bytes(b"%PDF-1.7"), "PDF document");
        assert_eq!(
            describe_bytes(b"PK\x03\x04rest"),
            "ZIP archive (Office documents such as .pptx/.docx/.xlsx are ZIPs)"
        );
        assert_eq!(describe_bytes(b"\x00\x01\x02\xff"), "unrecognized bytes (hex: 00 01 02 ff)");
        // A file without an extension is an image when it starts like one.
        let dir = std::env::temp_dir().join(format!("read-sniff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("photo"), b"\xFF\xD8\xFF\xE0 jpeg data").unwrap();
        std::fs::write(dir.join("notes"), b"plain text").unwrap();
        assert!(starts_like_an_image(&dir.join("photo")));
        assert!(!starts_like_an_image(&dir.join("notes")));
        assert!(!starts_like_an_image(&dir), "a directory");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn schema_takes_pages() {
        let schema: toolhost_sdk::serde_json::Value =
            toolhost_sdk::serde_json::from_str(&toolhost_sdk::input_schema::<Read>()).unwrap();
        assert_eq!(schema["required"], toolhost_sdk::serde_json::json!(["file_path"]));
        assert!(schema["properties"]["pages"]["description"].as_str().unwrap().contains("20 pages"));
        assert_eq!(schema["properties"]["offset"]["minimum"], 0);
        assert_eq!(schema["properties"]["limit"]["minimum"], 1);
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["properties"]["allow_large"]["type"], "boolean");
        let blank: ReadInput =
            toolhost_sdk::serde_json::from_value(toolhost_sdk::serde_json::json!({"file_path": "/a", "pages": " "}))
                .unwrap();
        assert_eq!(blank.pages, None, "a blank pages is no pages");
    }

    #[test]
    fn full_views_reach_the_end() {
        assert!(reaches_end(b"a\nb", None));
        assert!(reaches_end(b"a\nb", Some(3)));
        assert!(!reaches_end(b"a\nb", Some(2)), "as many lines as the limit: maybe more");
        assert!(!reaches_end(b"", Some(5)), "nothing seen");
        assert_eq!(whole_text(b"\xEF\xBB\xBFa\r\nb\r"), "a\nb");
    }
}
