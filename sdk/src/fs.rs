//! Helpers for tools that work on files: resolving and confining paths, turning
//! I/O errors into messages a model can act on, atomic replacement through the
//! host, and the read-before-write record shared by the built-in file tools.
//!
//! Paths a tool receives are host paths: the host preopens each working
//! directory at its own absolute path, so `/home/me/project/src/main.rs` means
//! the same file to the model, the tool and the user.

use crate::bindings::toolhost::tool::files;
use crate::{Context, Mode, Permission, ToolError};
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

pub use toolhost_hidden_paths::HiddenPaths;

/// The paths the permission rules keep from the current call's reads (deny
/// and ask rules such as `Read(./.env)`): a tool that walks directories skips
/// them, since the host checked only the path the tool was given.
pub fn hidden_paths() -> HiddenPaths {
    HiddenPaths::new(&crate::bindings::toolhost::tool::policy::hidden_paths())
}

/// How a tool means to use a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// `path` made absolute against the working directory and cleaned of `.` and
/// `..` without touching the filesystem (symlinks are the sandbox's business).
pub fn absolute(ctx: &Context, path: &str) -> PathBuf {
    toolhost_primitives::path::absolute(Path::new(ctx.cwd()), Path::new(path))
}

/// Lexical normalization: drops `.`, resolves `..` against the preceding
/// component, never climbs above `/` (the host's own, from
/// `toolhost-primitives`).
pub use toolhost_primitives::path::normalize;

/// Whether `path` (absolute, normalized) is inside one of the directories the
/// context allows for `access`.
pub fn is_allowed(ctx: &Context, path: &Path, access: Access) -> bool {
    let inside = |dirs: &[String]| toolhost_primitives::path::is_inside(path, dirs);
    match access {
        Access::Read => inside(ctx.working_dirs()) || inside(ctx.read_only_dirs()),
        Access::Write => inside(ctx.working_dirs()),
    }
}

/// Resolves `path` and refuses it unless it lies inside the allowed directories.
pub fn confine(ctx: &Context, path: &str, access: Access) -> Result<PathBuf, ToolError> {
    let abs = absolute(ctx, path);
    if is_allowed(ctx, &abs, access) { Ok(abs) } else { Err(outside(ctx, &abs)) }
}

/// The error for a path outside the working directories.
pub fn outside(ctx: &Context, path: &Path) -> ToolError {
    ToolError::permission_denied(format!(
        "{} is outside the working directories ({}). File tools can only reach files inside them; \
         use a path inside, or ask the user to run toolhost with that directory as the workspace \
         or an additional directory.",
        path.display(),
        ctx.working_dirs().join(", ")
    ))
}

/// Turns an I/O error on `path` into a message the model can act on.
pub fn io_error(ctx: &Context, path: &Path, err: &io::Error) -> ToolError {
    match err.kind() {
        io::ErrorKind::NotFound => ToolError::not_found(format!(
            "File does not exist: {}. Current working directory: {}",
            path.display(),
            ctx.cwd()
        )),
        io::ErrorKind::IsADirectory => ToolError::invalid_input(format!(
            "{} is a directory, not a file. Use Glob to list files or Bash `ls` to see its contents.",
            path.display()
        )),
        io::ErrorKind::NotADirectory => {
            ToolError::not_found(format!("A component of {} is not a directory.", path.display()))
        }
        // WASI reports an escape from a preopen (a symlink or `..` leading out)
        // as "not permitted": say so plainly.
        io::ErrorKind::PermissionDenied => ToolError::permission_denied(format!(
            "Access to {} was refused: it resolves outside the working directories (through a \
             symlink or `..`), or the file's permissions forbid it.",
            path.display()
        )),
        _ => ToolError::io(format!("Cannot access {}: {err}", path.display())),
    }
}

/// Atomically replaces (or creates) the file at `path` with `contents`, through
/// the host: a failure leaves the old file untouched, and the file keeps its
/// permission bits. Needs the `files` capability (Write and Edit have it).
pub fn replace(path: &Path, contents: &[u8]) -> Result<(), ToolError> {
    files::replace(&path.to_string_lossy(), contents).map_err(|e| match e {
        files::FilesError::NotPermitted(p) => ToolError::permission_denied(format!(
            "Writing {p} was refused: it is outside the working directories or resolves outside them through a symlink."
        )),
        files::FilesError::NotFound(m) => ToolError::not_found(m),
        files::FilesError::Io(m) => ToolError::io(format!("Could not write {}: {m}", path.display())),
    })
}

/// What the built-in file tools remember about a read, under [`read_key`].
///
/// Claude Code keeps the same per file: the modification time (whole
/// milliseconds) when it was read, the range a Read asked for, whether the
/// Read gave only the start of the file (a partial view), and the text seen.
/// A file counts as changed when its modification time is later than the
/// recorded one; a record that is a *full view* (2.1.328's `s$`: from the
/// first line, not partial, to the end of the file) also counts a file whose
/// time moved but whose text is the same as unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadRecord {
    /// Modification time in nanoseconds since the epoch when the file was read.
    pub mtime_ns: u128,
    /// Size in bytes when the file was read.
    pub size: u64,
    /// The `offset` of the Read that made the record (`None` for Edit and Write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// The `limit` of the Read that made the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// [`content_hash`] of the whole text seen: set by Edit and Write, and by
    /// a Read that was a full view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<u64>,
    /// The Read gave only the start of the file (over its token cap): Write
    /// refuses with [`PARTIAL_VIEW`], Edit takes the file as not read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

impl ReadRecord {
    /// The record of a Read of the whole file (Read's `offset` defaults to 1)
    /// with metadata `meta`, its text not remembered.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        ReadRecord {
            mtime_ns: mtime_ns(meta),
            size: meta.len(),
            offset: Some(1),
            limit: None,
            content_hash: None,
            partial: false,
        }
    }

    /// The recorded modification time in whole milliseconds.
    pub fn mtime_ms(&self) -> u128 {
        self.mtime_ns / 1_000_000
    }

    /// Whether the record is a full view whose text is known: then an
    /// unchanged text makes a newer time harmless.
    pub fn is_full(&self) -> bool {
        !self.partial && self.offset.unwrap_or(1) <= 1 && self.content_hash.is_some()
    }

    /// Whether the file, with metadata `meta` now, has a modification time
    /// later than the recorded one (in whole milliseconds, as Claude Code compares).
    pub fn is_older_than(&self, meta: &std::fs::Metadata) -> bool {
        mtime_ns(meta) / 1_000_000 > self.mtime_ms()
    }

    /// Whether a full record saw exactly `text` (line endings normalized to
    /// `\n`; a byte-order mark is not part of the text).
    pub fn saw(&self, text: &str) -> bool {
        self.is_full() && self.content_hash == Some(view_hash(text))
    }
}

/// [`content_hash`] of a file's text as the records compare it: without a
/// leading byte-order mark.
pub fn view_hash(text: &str) -> u64 {
    content_hash(text.strip_prefix('\u{feff}').unwrap_or(text))
}

/// Modification time of `meta` in nanoseconds since the epoch (0 if unknown).
pub fn mtime_ns(meta: &std::fs::Metadata) -> u128 {
    meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos())
}

/// A stable 64-bit hash (FNV-1a) of `text`, for [`ReadRecord::content_hash`].
pub fn content_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The session key under which a read of `path` is recorded.
pub fn read_key(path: &Path) -> String {
    format!("read:{}", path.display())
}

/// Records that `path` was read whole in this session with `meta` (as a Read
/// without `offset` and `limit` does), its text not remembered.
pub fn record_read(ctx: &Context, path: &Path, meta: &std::fs::Metadata) -> Result<(), ToolError> {
    ctx.session().set_json(&read_key(path), &ReadRecord::of(meta))
}

/// Records a Read of `path` with the range it asked for (`offset` 1 when not
/// given), and for a full view the text it saw (`Some` of [`view_hash`]).
pub fn record_read_range(
    ctx: &Context,
    path: &Path,
    meta: &std::fs::Metadata,
    offset: u64,
    limit: Option<u64>,
    full_view: Option<u64>,
) -> Result<(), ToolError> {
    let record = ReadRecord { offset: Some(offset), limit, content_hash: full_view, ..ReadRecord::of(meta) };
    ctx.session().set_json(&read_key(path), &record)
}

/// Records a Read that gave only the first `lines` lines of `path` (the
/// token cap's partial view).
pub fn record_partial_read(ctx: &Context, path: &Path, meta: &std::fs::Metadata, lines: u64) -> Result<(), ToolError> {
    let record = ReadRecord { limit: Some(lines), partial: true, ..ReadRecord::of(meta) };
    ctx.session().set_json(&read_key(path), &record)
}

/// Records that Edit or Write left `text` in `path` (metadata `meta` after the write).
pub fn record_write(ctx: &Context, path: &Path, meta: &std::fs::Metadata, text: &str) -> Result<(), ToolError> {
    let record = ReadRecord {
        mtime_ns: mtime_ns(meta),
        size: meta.len(),
        offset: None,
        limit: None,
        content_hash: Some(view_hash(text)),
        partial: false,
    };
    ctx.session().set_json(&read_key(path), &record)
}

/// The record of the last read (or write) of `path` in this session.
pub fn read_record(ctx: &Context, path: &Path) -> Option<ReadRecord> {
    ctx.session().get_json::<ReadRecord>(&read_key(path))
}

/// Claude Code's refusal of a write to a file not read in the session.
pub const NOT_READ_YET: &str = "File has not been read yet. Read it first before writing to it.";
/// Claude Code's refusal (at validation) of a write to a file changed since it was read.
pub const MODIFIED_SINCE_READ: &str = "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it.";
/// Claude Code's error when the file changed between validation and the write.
pub const UNEXPECTEDLY_MODIFIED: &str = "File content has changed since it was last read. This commonly happens when \
     a linter or formatter run via Bash rewrites the file. Call Read on this file to refresh, then retry the edit.";
/// Claude Code's refusal of a Write over a file a Read gave only the start of.
pub const PARTIAL_VIEW: &str = "You were given only the start of this file, and nothing shows that you have since \
     read all of it in one call, so a Write could lose the rest. To change part of it, use Edit. To replace it whole, \
     first Read it in one call with no offset or limit. If Read returns only a page or says the file is too large, \
     Read it again with allow_large: true. If even that cannot return all of it, use Edit.";
/// The suffix of Edit's and Write's success texts when the model's view of
/// the file is now its whole current text.
pub const STATE_IS_CURRENT: &str = " (file state is current in your context — no need to Read it back)";

/// Why a file's bytes are not text the editing tools can write back
/// (2.1.328's `notText`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotText {
    /// Invalid UTF-8.
    NotUtf8,
    /// A NUL byte in the first 8000 bytes.
    Nul,
    /// Starts with `FE FF`.
    Utf16Be,
}

impl NotText {
    /// What Claude Code says the file is.
    pub fn why(self) -> &'static str {
        match self {
            NotText::NotUtf8 => {
                "is not valid UTF-8: it uses a legacy encoding such as Windows-1252, Shift-JIS or GBK, or it is binary"
            }
            NotText::Nul => {
                "has NUL bytes in its first 8 KB: binary data, UTF-16/UTF-32 without a byte-order mark, or text with \
                 embedded NULs"
            }
            NotText::Utf16Be => "is UTF-16 big-endian (it starts FE FF), which these tools cannot write",
        }
    }

    /// Edit's, Write's and NotebookEdit's refusal of such a file.
    pub fn refusal(self) -> String {
        format!(
            "File {}. These tools write UTF-8 (or UTF-16LE behind its byte-order mark) and never convert a file's \
             encoding on their own, so nothing was written. If the file is text, make the change with a shell \
             command that reads and writes it in its own encoding (iconv, or PowerShell Get-Content/Set-Content \
             -Encoding), or ask the user whether to convert it to UTF-8 first. To replace the whole file with new \
             UTF-8 text anyway, delete it first, then Write it.",
            self.why()
        )
    }

    /// The note Read appends to such a file's text.
    pub fn read_note(self) -> String {
        let extra = match self {
            NotText::NotUtf8 => " Its undecodable bytes show above as U+FFFD.",
            NotText::Nul | NotText::Utf16Be => "",
        };
        format!(
            "[This file {}.{extra} Edit and Write will refuse it: change it with a shell command that keeps its \
             encoding, or ask the user whether to convert it to UTF-8.]",
            self.why()
        )
    }
}

/// Whether a file whose bytes are `bytes` is text the editing tools write
/// back, as 2.1.328 decides (`Zot`): a UTF-16LE byte-order mark makes it
/// text; then `FE FF`, a NUL in the first 8000 bytes, invalid UTF-8.
pub fn not_text(bytes: &[u8]) -> Option<NotText> {
    if bytes.starts_with(b"\xFF\xFE") {
        return None;
    }
    if bytes.starts_with(b"\xFE\xFF") {
        return Some(NotText::Utf16Be);
    }
    if bytes[..bytes.len().min(8000)].contains(&0) {
        return Some(NotText::Nul);
    }
    match std::str::from_utf8(bytes) {
        Ok(_) => None,
        Err(_) => Some(NotText::NotUtf8),
    }
}
/// What Claude Code's not-found messages say before the working directory.
pub const CWD_NOTE: &str = "Note: your current working directory is";

/// How a text file is stored, as Claude Code tells them apart: UTF-16LE when
/// it starts with the bytes `FF FE`, UTF-8 otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16Le,
}

/// A text file as the editing tools see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextFile {
    /// The text with every `\r\n` turned into `\n` (a byte-order mark stays).
    pub text: String,
    pub encoding: Encoding,
    /// Whether the file's first 4096 characters hold more `\r\n` than lone `\n`:
    /// a file written back then gets `\r\n` everywhere.
    pub crlf: bool,
    /// Whether the bytes decoded without loss (valid UTF-8 or UTF-16).
    pub lossless: bool,
}

impl TextFile {
    /// Decodes `bytes` as Claude Code does (invalid sequences become U+FFFD,
    /// and [`TextFile::lossless`] says so).
    pub fn decode(bytes: &[u8]) -> TextFile {
        let (raw, encoding, lossless) = if bytes.len() >= 2 && bytes[0] == 0xff && bytes[1] == 0xfe {
            let units: Vec<u16> = bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
            let lossless =
                bytes.len().is_multiple_of(2) && char::decode_utf16(units.iter().copied()).all(|c| c.is_ok());
            (String::from_utf16_lossy(&units), Encoding::Utf16Le, lossless)
        } else {
            match std::str::from_utf8(bytes) {
                Ok(s) => (s.to_owned(), Encoding::Utf8, true),
                Err(_) => (String::from_utf8_lossy(bytes).into_owned(), Encoding::Utf8, false),
            }
        };
        let crlf = has_crlf_endings(&raw);
        let text = if raw.contains("\r\n") { raw.replace("\r\n", "\n") } else { raw };
        TextFile { text, encoding, crlf, lossless }
    }

    /// `text` encoded for this file: its encoding, and `\r\n` line endings
    /// throughout when the file had them.
    pub fn encode(&self, text: &str) -> Vec<u8> {
        let text = if self.crlf { text.replace("\r\n", "\n").replace('\n', "\r\n") } else { text.to_owned() };
        encode_as(&text, self.encoding)
    }
}

/// `text` in `encoding` (UTF-16LE without an added byte-order mark).
pub fn encode_as(text: &str, encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Utf8 => text.as_bytes().to_vec(),
        Encoding::Utf16Le => text.encode_utf16().flat_map(u16::to_le_bytes).collect(),
    }
}

/// Claude Code's line-ending sniff: among the first 4096 UTF-16 units, more
/// `\n` preceded by `\r` than not.
fn has_crlf_endings(text: &str) -> bool {
    let (mut crlf, mut lf, mut units, mut prev) = (0usize, 0usize, 0usize, '\0');
    for c in text.chars() {
        if units >= 4096 {
            break;
        }
        units += c.len_utf16();
        if c == '\n' {
            if prev == '\r' { crlf += 1 } else { lf += 1 }
        }
        prev = c;
    }
    crlf > lf
}

/// Whether `c` is whitespace to JavaScript (`\s`, `trim`).
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// Removes whitespace at the end of every line, keeping the line endings
/// (`\r\n`, `\n` or a lone `\r`): what Claude Code does to the text a model
/// writes, except into Markdown files (see [`keeps_trailing_whitespace`]).
pub fn strip_trailing_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let end = rest.find(['\r', '\n']).unwrap_or(rest.len());
        out.push_str(rest[..end].trim_end_matches(is_js_whitespace));
        if end == rest.len() {
            return out;
        }
        let ending = if rest[end..].starts_with("\r\n") { 2 } else { 1 };
        out.push_str(&rest[end..end + ending]);
        rest = &rest[end + ending..];
    }
}

/// Whether trailing whitespace matters in `path`: Markdown (`.md`, `.mdx`,
/// any case), where two trailing spaces are a line break.
pub fn keeps_trailing_whitespace(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".md") || lower.ends_with(".mdx")
}

/// A file size as Claude Code prints it: `512 bytes`, `1.5KB`, `2MB`, `1GB`
/// (one decimal, rounded half up, a trailing `.0` dropped).
pub fn format_file_size(bytes: u64) -> String {
    const UNITS: [(&str, u32); 3] = [("KB", 1), ("MB", 2), ("GB", 3)];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let (unit, power) = UNITS.iter().find(|(_, p)| *p == 3 || u128::from(bytes) < 1024u128.pow(p + 1)).unwrap();
    let scale = 1024u128.pow(*power);
    // Tenths, rounded half up: JavaScript's toFixed(1) on the exact quotient.
    let tenths = (u128::from(bytes) * 20 + scale) / (scale * 2);
    if tenths % 10 == 0 { format!("{}{unit}", tenths / 10) } else { format!("{}.{}{unit}", tenths / 10, tenths % 10) }
}

/// Node's `path.extname` of a file name (no slashes): from the last `.` on,
/// unless nothing but dots precedes it (`.bashrc`, `..`).
fn extname(name: &str) -> &str {
    let bytes = name.as_bytes();
    let (mut start_dot, mut pre_dot_state) = (None::<usize>, 0i8);
    for i in (0..bytes.len()).rev() {
        if bytes[i] == b'.' {
            if start_dot.is_none() {
                start_dot = Some(i);
            } else if pre_dot_state != 1 {
                pre_dot_state = 1;
            }
        } else if start_dot.is_some() {
            pre_dot_state = -1;
        }
    }
    match start_dot {
        None => "",
        Some(_) if pre_dot_state == 0 => "",
        Some(dot) if pre_dot_state == 1 && dot + 1 == bytes.len() && dot == 1 => "",
        Some(dot) => &name[dot..],
    }
}

/// Claude Code's hint for a missing file: another entry of the same
/// directory with the same name but another extension (the first in byte order).
pub fn find_similar_file(path: &Path) -> Option<String> {
    let dir = path.parent()?;
    let name = path.file_name()?.to_str()?;
    let stem = &name[..name.len() - extname(name).len()];
    let mut names: Vec<String> =
        std::fs::read_dir(dir).ok()?.flatten().filter_map(|e| e.file_name().into_string().ok()).collect();
    names.sort();
    names.into_iter().find(|n| n != name && &n[..n.len() - extname(n).len()] == stem)
}

/// Claude Code's hint for a path that dropped the project's directory: when
/// `path` (absolute) lies under the working directory's parent but not under
/// the working directory, the same relative path under the working directory,
/// if that exists (and may be read).
pub fn suggest_path_under_cwd(ctx: &Context, path: &Path) -> Option<PathBuf> {
    let cwd = Path::new(ctx.cwd());
    let parent = cwd.parent()?;
    if !path.starts_with(parent) || path.starts_with(cwd) {
        return None;
    }
    let corrected = cwd.join(path.strip_prefix(parent).ok()?);
    (is_allowed(ctx, &corrected, Access::Read) && std::fs::metadata(&corrected).is_ok()).then_some(corrected)
}

/// Claude Code's not-found text: `{what} {path}. Note: your current working
/// directory is {cwd}.`, and ` Did you mean {suggestion}?` when
/// [`suggest_path_under_cwd`] finds one.
pub fn not_found_message(ctx: &Context, what: &str, shown: &str, path: &Path) -> String {
    let mut message = format!("{what} {shown}. {CWD_NOTE} {}.", ctx.cwd());
    if let Some(suggestion) = suggest_path_under_cwd(ctx, path) {
        message.push_str(&format!(" Did you mean {}?", suggestion.display()));
    }
    message
}

/// Node's `path.resolve(cwd, path)` on POSIX, as text: absolute, without
/// `.`, `..`, repeated or trailing slashes.
fn node_resolve(cwd: &str, path: &str) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    let joined = if path.starts_with('/') { path.to_owned() } else { format!("{cwd}/{path}") };
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p.to_owned()),
        }
    }
    parts
}

/// Claude Code's `toRelativePath`: `path` relative to the working directory
/// `cwd` (Node's `path.relative`), unless that would start with `..`, when
/// `path` is returned as given.
pub fn to_relative_path(cwd: &str, path: &str) -> String {
    let from = node_resolve(cwd, "");
    let to = node_resolve(cwd, path);
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; from.len() - common];
    parts.extend(to[common..].iter().map(String::as_str));
    let relative = parts.join("/");
    if relative.starts_with("..") { path.to_owned() } else { relative }
}

/// Orders two strings as JavaScript's `localeCompare` does in the root
/// locale, for the characters paths are made of: punctuation before digits
/// before letters, letters compared without case first (`a` < `B` < `b`...
/// then lower case before upper case). Characters outside ASCII come after
/// and compare by code point.
pub fn locale_compare(a: &str, b: &str) -> std::cmp::Ordering {
    const ORDER: &str = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789";
    fn primary(c: char) -> u32 {
        if c.is_ascii_alphabetic() {
            return 100 + u32::from(c.to_ascii_lowercase() as u8 - b'a');
        }
        match ORDER.find(c) {
            Some(i) => i as u32,
            None if c.is_ascii_control() => 0,
            None => 1000 + u32::from(c),
        }
    }
    let key = |s: &str| s.chars().filter(|c| !c.is_ascii_control()).map(primary).collect::<Vec<u32>>();
    key(a).cmp(&key(b)).then_with(|| {
        let case =
            |s: &str| s.chars().filter(|c| !c.is_ascii_control()).map(|c| c.is_ascii_uppercase()).collect::<Vec<_>>();
        case(a).cmp(&case(b))
    })
}

/// Whether `bytes` (the start of a file) look binary: a NUL byte in the first 8 KiB.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

/// `cat -n` style rendering of `lines`, numbered from `first` (1-based):
/// the number right-aligned in six columns, a tab, the line.
pub fn number_lines<'a>(lines: impl IntoIterator<Item = &'a str>, first: usize, out: &mut String) {
    use std::fmt::Write;
    for (i, line) in lines.into_iter().enumerate() {
        let _ = writeln!(out, "{:>6}\t{}", first + i, line);
    }
}

/// The permission view shared by the tools that edit files: in `acceptEdits`
/// mode an edit inside the working directories is allowed; otherwise the host's
/// mode decides. (A path outside them never gets this far: `validate-input`
/// refuses it, since the sandbox could not reach it anyway.)
pub fn edit_permission(ctx: &Context) -> Permission {
    match ctx.mode() {
        Mode::AcceptEdits => Permission::Allow(None),
        Mode::Default | Mode::Plan | Mode::DontAsk | Mode::BypassPermissions => Permission::Passthrough,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mode;

    #[test]
    fn normalizes_lexically() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/../../etc")), PathBuf::from("/etc"));
        assert_eq!(normalize(Path::new("/ws/x/../../etc/passwd")), PathBuf::from("/etc/passwd"));
    }

    #[test]
    fn confines_to_working_dirs() {
        let ctx = Context::for_tests("/ws", Mode::Default);
        assert_eq!(confine(&ctx, "src/a.rs", Access::Read).unwrap(), PathBuf::from("/ws/src/a.rs"));
        assert!(confine(&ctx, "/ws/../etc/passwd", Access::Read).is_err());
        assert!(confine(&ctx, "/wsx/a", Access::Read).is_err(), "a sibling with a common prefix is outside");
        assert!(confine(&ctx, "/etc/passwd", Access::Write).is_err());
    }

    #[test]
    fn file_sizes_read_as_in_claude_code() {
        assert_eq!(format_file_size(0), "0 bytes");
        assert_eq!(format_file_size(1023), "1023 bytes");
        assert_eq!(format_file_size(1024), "1KB");
        assert_eq!(format_file_size(1280), "1.3KB", "an exact half rounds up, as toFixed does");
        assert_eq!(format_file_size(1536), "1.5KB");
        assert_eq!(format_file_size(1024 * 1024 - 1), "1024KB");
        assert_eq!(format_file_size(5 * 1024 * 1024 + 100 * 1024), "5.1MB");
        assert_eq!(format_file_size(1024 * 1024 * 1024), "1GB");
        assert_eq!(format_file_size(3 * 1024 * 1024 * 1024 / 2), "1.5GB");
        assert_eq!(format_file_size(2048 * 1024 * 1024 * 1024), "2048GB");
    }

    #[test]
    fn trailing_whitespace_goes_line_by_line() {
        assert_eq!(strip_trailing_whitespace("a  \nb\t\r\nc \rd\u{a0}"), "a\nb\r\nc\rd");
        assert_eq!(strip_trailing_whitespace("  \n\n x "), "\n\n x");
        assert_eq!(strip_trailing_whitespace(""), "");
        assert!(keeps_trailing_whitespace("/w/README.MD") && keeps_trailing_whitespace("a.mdx"));
        assert!(!keeps_trailing_whitespace("a.md.txt"));
    }

    #[test]
    fn paths_relative_to_the_working_directory() {
        assert_eq!(to_relative_path("/ws", "/ws/src/a.rs"), "src/a.rs");
        assert_eq!(to_relative_path("/ws", "/other/a.rs"), "/other/a.rs", "outside stays absolute");
        assert_eq!(to_relative_path("/ws", "/ws/../ws/x"), "x");
        assert_eq!(to_relative_path("/ws", "/ws/..hidden"), "/ws/..hidden", "starts with `..`: kept as given");
        assert_eq!(to_relative_path("/ws", "12"), "12", "a relative string resolves against the cwd");
        assert_eq!(to_relative_path("/ws", "/ws"), "");
        assert_eq!(to_relative_path("/", "/a/b"), "a/b");
    }

    #[test]
    fn locale_order_of_paths() {
        use std::cmp::Ordering::*;
        // Checked against Node's localeCompare.
        let mut names = vec!["ab", "Ab", "a9", "a10", "a0", "a/b", "a.b", "a-b", "a_b", "aB"];
        names.sort_by(|a, b| locale_compare(a, b));
        assert_eq!(names, ["a_b", "a-b", "a.b", "a/b", "a0", "a10", "a9", "ab", "aB", "Ab"]);
        assert_eq!(locale_compare("ab", "Aa"), Greater);
        assert_eq!(locale_compare("a", "a"), Equal);
        assert_eq!(locale_compare("B", "a"), Greater);
    }

    #[test]
    fn extensions_as_node_sees_them() {
        for (name, ext) in [
            ("a.b.c", ".c"),
            (".bashrc", ""),
            ("..a", ".a"),
            ("..", ""),
            ("a.", "."),
            ("a", ""),
            ("...", "."),
            ("a..", "."),
        ] {
            assert_eq!(extname(name), ext, "{name}");
        }
    }

    #[test]
    fn text_files_keep_their_encoding_and_line_endings() {
        let f = TextFile::decode(b"a\r\nb\r\nc\n");
        assert_eq!((f.text.as_str(), f.crlf, f.encoding, f.lossless), ("a\nb\nc\n", true, Encoding::Utf8, true));
        assert_eq!(f.encode("x\ny\r\n"), b"x\r\ny\r\n");
        let lf = TextFile::decode(b"a\r\nb\nc\n");
        assert!(!lf.crlf, "more lone LF than CRLF");
        assert_eq!(lf.encode("a\nb"), b"a\nb");
        let utf16: Vec<u8> = [0xff, 0xfe, b'h', 0, b'i', 0, b'\r', 0, b'\n', 0].to_vec();
        let f = TextFile::decode(&utf16);
        assert_eq!((f.text.as_str(), f.encoding), ("\u{feff}hi\n", Encoding::Utf16Le));
        assert_eq!(f.encode("\u{feff}hi\n"), utf16);
        let bad = TextFile::decode(b"caf\xe9");
        assert_eq!((bad.text.as_str(), bad.lossless), ("caf\u{fffd}", false));
    }

    #[test]
    fn records_compare_times_in_milliseconds() {
        let dir = std::env::temp_dir().join(format!("fs-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f");
        std::fs::write(&file, "x").unwrap();
        let at = |ns: u64| {
            let f = std::fs::File::options().write(true).open(&file).unwrap();
            f.set_modified(UNIX_EPOCH + std::time::Duration::from_nanos(ns)).unwrap();
            std::fs::metadata(&file).unwrap()
        };
        let record = ReadRecord::of(&at(5_000_000_100));
        assert!(!record.is_older_than(&at(5_000_000_900)), "the same millisecond");
        assert!(!record.is_older_than(&at(4_000_000_000)), "an older time is not a change");
        assert!(record.is_older_than(&at(5_001_000_000)));
        assert!(!record.saw("x"), "a Read's record without its text");
        let full = ReadRecord { content_hash: Some(view_hash("x")), ..record.clone() };
        assert!(full.saw("x") && full.saw("\u{feff}x") && !full.saw("y"), "a full view, byte-order mark aside");
        assert!(!ReadRecord { offset: Some(2), ..full.clone() }.saw("x"), "from a later line");
        assert!(!ReadRecord { partial: true, ..full.clone() }.saw("x"), "a partial view");
        let written = ReadRecord { offset: None, ..full };
        assert!(written.saw("x") && !written.saw("y"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn files_that_are_not_text_are_told_apart() {
        assert_eq!(not_text(b"plain \xC3\xA9"), None);
        assert_eq!(not_text(b"\xFF\xFEa\0"), None, "UTF-16LE behind its mark");
        assert_eq!(not_text(b"\xFE\xFF\0a"), Some(NotText::Utf16Be));
        assert_eq!(not_text(b"a\0b"), Some(NotText::Nul));
        let mut late = vec![b'a'; 8000];
        late.push(0);
        assert_eq!(not_text(&late), None, "a NUL after the first 8000 bytes");
        assert_eq!(not_text(b"caf\xE9"), Some(NotText::NotUtf8));
        assert!(NotText::NotUtf8.read_note().contains(" Its undecodable bytes show above as U+FFFD. Edit"));
        assert!(NotText::Nul.read_note().contains("embedded NULs. Edit and Write"));
    }

    #[test]
    fn numbers_lines_like_cat_n() {
        let mut out = String::new();
        number_lines(["a", "b"], 9, &mut out);
        assert_eq!(out, "     9\ta\n    10\tb\n");
    }
}
