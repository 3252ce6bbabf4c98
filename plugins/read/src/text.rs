//! Text files: the selected lines, numbered, in one pass over the file, with
//! the token cap decided before any text leaves the tool.
//!
//! What Claude Code 2.1.88 shows for a text file (tools/FileReadTool and
//! utils/readFileInRange.ts, utils/file.ts `addLineNumbers`):
//! - lines are cut at `\n`, a UTF-8 byte order mark at the start is dropped,
//!   one `\r` is dropped from the end of each line; whatever follows the last
//!   `\n` is one more line, even when empty (so `a\n` has two lines);
//! - lines `[offset - 1, offset - 1 + limit)` are selected (`offset` 0 means the
//!   start too), all of them when there is no `limit`;
//! - each is shown as `N\tline`, `N` counting from `offset` as given (1 when
//!   absent), joined with `\n`, nothing after the last line; a line that still
//!   ends in `\r` loses it too, unless it is the last one shown;
//! - the token estimate of the selected text (its length in UTF-16 units over
//!   the bytes-per-token of the file type, rounded) must not exceed the cap;
//! - when the selected text is empty, a reminder stands in its place (2.1.328:
//!   "the contents are empty" for an empty file, the numbered empty line for
//!   an empty line of a longer file, "shorter than the provided offset" past
//!   the end).

use std::borrow::Cow;
use std::io::{self, Read as _};

/// Largest estimated token count one read may return (`DEFAULT_MAX_OUTPUT_TOKENS`).
pub const MAX_TOKENS: u64 = 25_000;

/// Bytes read from the file at a time.
const READ_CHUNK: usize = 256 * 1024;

/// How Claude Code estimates the tokens of a text: its length in UTF-16 code
/// units over a ratio that depends on the file type, rounded half up
/// (services/tokenEstimation.ts `roughTokenCountEstimationForFileType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenCap {
    pub max_tokens: u64,
    pub bytes_per_token: u64,
}

impl TokenCap {
    /// The cap for a file whose extension (lower case, without the dot) is `ext`.
    pub fn for_extension(ext: &str) -> TokenCap {
        let bytes_per_token = match ext {
            "json" | "jsonl" | "jsonc" => 2,
            _ => 4,
        };
        TokenCap { max_tokens: MAX_TOKENS, bytes_per_token }
    }

    /// The estimate for a text of `units` UTF-16 code units.
    pub fn estimate(&self, units: u64) -> u64 {
        (2 * units + self.bytes_per_token) / (2 * self.bytes_per_token)
    }

    /// Whether a text of `units` code units is over the cap.
    pub fn exceeded_by(&self, units: u64) -> bool {
        self.estimate(units) > self.max_tokens
    }
}

/// Which lines to show: `offset` and `limit` as the model gave them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    pub offset: Option<u64>,
    pub limit: Option<u64>,
}

/// The result of rendering a text file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The numbered lines not yet handed to the sink.
    Lines(String),
    /// The selection is empty: the reminder to show instead.
    Reminder(String),
    /// The selected text is over the token cap: its estimate.
    TooManyTokens(u64),
}

/// Reads `file` in chunks and renders what Read shows for it. Rendered text
/// goes to `sink` whenever `flush_at` bytes of it are ready and the cap can no
/// longer be exceeded (known from `total_size`, the bytes the file holds: the
/// text of a byte is at most one code unit), and the rest is returned. With
/// a `cap` and no `total_size`, nothing is streamed.
pub fn render(
    mut file: impl io::Read,
    selection: Selection,
    cap: Option<TokenCap>,
    total_size: Option<u64>,
    flush_at: usize,
    sink: &mut dyn FnMut(&str),
) -> io::Result<Outcome> {
    let mut render = Renderer::new(selection, cap, total_size, flush_at, sink);
    // A small file gets a buffer of its size: memory a call touches is memory
    // the instance must fault in and the host must reset after it.
    let chunk =
        total_size.map_or(READ_CHUNK, |size| usize::try_from(size).unwrap_or(READ_CHUNK).clamp(1, READ_CHUNK - 1) + 1);
    let mut buf: Vec<u8> = Vec::with_capacity(chunk);
    let mut first = true;
    loop {
        // Append up to a chunk (after any carried partial line), into the
        // buffer's spare capacity: nothing is zeroed first.
        let read = (&mut file).take(chunk as u64).read_to_end(&mut buf)?;
        let eof = read < chunk;
        let mut skip = 0;
        if first {
            first = false;
            if buf.starts_with(b"\xEF\xBB\xBF") {
                skip = 3;
            }
        }
        if eof {
            render.feed(&buf[skip..], true);
            return Ok(render.finish());
        }
        // Feed complete lines; a line cut by the chunk waits for the next.
        if let Some(last) = memchr::memrchr(b'\n', &buf[skip..]) {
            let end = skip + last + 1;
            if render.feed(&buf[skip..end], false) == Flow::Done {
                return Ok(render.finish());
            }
            buf.drain(..end);
        } else if skip > 0 {
            buf.drain(..skip);
        }
    }
}

/// Whether the renderer needs more of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    More,
    Done,
}

struct Renderer<'s> {
    /// Index (0-based) of the first selected line, and one past the last.
    start: u64,
    end: u64,
    /// The number shown for the first selected line.
    first_number: u64,
    /// Lines seen so far.
    index: u64,
    /// Lines selected so far.
    shown: u64,
    first_line_empty: bool,
    /// The selected text's UTF-16 code units, plus one per line (counted
    /// only under a cap).
    units: u64,
    /// The last line shown had a second `\r` left out, to be put back if it
    /// stays the last.
    pending_cr: bool,
    /// Over the cap: lines are counted, no longer rendered.
    over: bool,
    cap: Option<TokenCap>,
    total_size: Option<u64>,
    /// Bytes of the file fed so far.
    consumed: u64,
    out: String,
    flush_at: usize,
    sink: &'s mut dyn FnMut(&str),
}

impl<'s> Renderer<'s> {
    fn new(
        selection: Selection,
        cap: Option<TokenCap>,
        total_size: Option<u64>,
        flush_at: usize,
        sink: &'s mut dyn FnMut(&str),
    ) -> Self {
        let offset = selection.offset.unwrap_or(1);
        let start = offset.saturating_sub(1);
        Renderer {
            start,
            end: selection.limit.map_or(u64::MAX, |l| start.saturating_add(l)),
            first_number: offset,
            index: 0,
            shown: 0,
            first_line_empty: false,
            units: 0,
            pending_cr: false,
            over: false,
            cap,
            total_size,
            consumed: 0,
            out: String::new(),
            flush_at,
            sink,
        }
    }

    /// Whether the selected text is empty so far.
    fn content_empty(&self) -> bool {
        self.shown == 0 || (self.shown == 1 && self.first_line_empty)
    }

    /// Whether text may leave now: the whole selection is sure to fit the cap.
    fn may_flush(&self) -> bool {
        match (self.cap, self.total_size) {
            (None, _) => true,
            (Some(cap), Some(total)) => !cap.exceeded_by(self.units + total.saturating_sub(self.consumed)),
            (Some(_), None) => false,
        }
    }

    /// Feeds bytes made of whole lines (each ending in `\n`), or, at the end of
    /// the file, whatever is left (its last line has no `\n`, and may be empty).
    fn feed(&mut self, bytes: &[u8], at_end: bool) -> Flow {
        // Safe at the start of the piece is safe for all of it: its text
        // adds at most one code unit per byte.
        let may_flush = self.may_flush();
        self.consumed += bytes.len() as u64;
        // Lines are found in the bytes as read: a `\n` is never part of an
        // invalid sequence, so decoding moves no line boundary, and only the
        // lines shown are decoded.
        let mut from = 0;

        // Lines before the selection are only counted.
        if self.index < self.start {
            let need = self.start - self.index;
            match after_nth_line(bytes, need) {
                Ok(end) => from = end,
                Err(seen) => {
                    self.index += seen + u64::from(at_end);
                    return if at_end { Flow::Done } else { Flow::More };
                }
            }
            self.index = self.start;
        }

        // Over the cap, selected lines are only measured, piece by piece.
        if self.over && self.index < self.end {
            let rest = &bytes[from..];
            let (len, lines, last_line) = match after_nth_line(rest, self.end - self.index) {
                Ok(end) => (end, self.end - self.index, false),
                Err(seen) => (rest.len(), seen + u64::from(at_end), at_end),
            };
            let region = &rest[..len];
            let counts = measure(region);
            // Text with no byte over 127 is ASCII, valid as it is; other text
            // is checked, and invalid text measured as it decodes.
            let units = if counts.high == 0 || simdutf8::basic::from_utf8(region).is_ok() {
                counts.units
            } else {
                measure(String::from_utf8_lossy(region).as_bytes()).units
            };
            // One `\r` is dropped before each `\n`, and from the end of the file.
            let stripped = if counts.carriage_returns == 0 {
                0
            } else {
                memchr::memmem::find_iter(region, b"\r\n").count() as u64
                    + u64::from(last_line && region.ends_with(b"\r"))
            };
            self.units += units - stripped + u64::from(last_line);
            self.shown += lines;
            self.index += lines;
            // Either the selection ends in this piece or the piece was all selection.
            return if last_line || self.index == self.end { Flow::Done } else { Flow::More };
        }

        // Cut at `\n`, so no UTF-8 sequence is split; SIMD validation, and only
        // invalid text pays for a lossy copy (U+FFFD for each maximal invalid
        // subpart, as Node decodes it).
        let text = match simdutf8::basic::from_utf8(&bytes[from..]) {
            Ok(text) => Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(&bytes[from..]),
        };
        let b = text.as_bytes();
        let mut pos = 0;

        // The selected lines (not over the cap: that returned above).
        if self.index < self.end {
            let region = pos;
            if self.out.capacity() == 0 {
                // Room for this piece's lines and their numbers, within reason.
                let rest = b.len() - pos;
                let lines = usize::try_from(self.end - self.index).unwrap_or(usize::MAX);
                let estimate = rest.min(lines.saturating_mul(128)) + rest / 8;
                self.out.reserve(estimate.min(self.flush_at.saturating_add(4096)));
            }
            let mut stripped = 0u64;
            let mut last_line = false;
            while self.index < self.end {
                let line_end = match memchr::memchr(b'\n', &b[pos..]) {
                    Some(i) => pos + i,
                    None if at_end => {
                        last_line = true;
                        b.len()
                    }
                    None => break,
                };
                let mut line = &text[pos..line_end];
                if let Some(l) = line.strip_suffix('\r') {
                    line = l;
                    stripped += 1;
                }
                if self.shown == 0 {
                    self.first_line_empty = line.is_empty();
                }
                self.push_line(line);
                if may_flush && self.out.len() >= self.flush_at && !self.pending_cr && !self.content_empty() {
                    (self.sink)(&self.out);
                    self.out.clear();
                }
                self.shown += 1;
                self.index += 1;
                if last_line {
                    pos = b.len();
                    break;
                }
                pos = line_end + 1;
            }
            if let Some(cap) = self.cap {
                self.units += utf16_len(&text[region..pos]) - stripped + u64::from(last_line);
                if cap.exceeded_by(self.units.saturating_sub(1)) {
                    self.over = true;
                    self.out = String::new();
                }
            }
            if last_line || (self.index == self.end && !self.content_empty()) {
                return Flow::Done;
            }
        }

        // Lines after the selection count only for the reminder.
        self.index += memchr::memchr_iter(b'\n', &b[pos..]).count() as u64 + u64::from(at_end);
        if at_end { Flow::Done } else { Flow::More }
    }

    /// Appends one selected line, `N\t` before it, `\n` between lines.
    #[inline]
    fn push_line(&mut self, line: &str) {
        if self.shown > 0 {
            self.out.push('\n');
        }
        push_number(&mut self.out, self.first_number.saturating_add(self.shown));
        self.out.push('\t');
        // Numbering splits the joined text at `\r?\n`: a line still ending in
        // `\r` loses it, unless it is the last.
        match line.strip_suffix('\r') {
            Some(l) => {
                self.out.push_str(l);
                self.pending_cr = true;
            }
            None => {
                self.out.push_str(line);
                self.pending_cr = false;
            }
        }
    }

    fn finish(mut self) -> Outcome {
        if self.over
            && let Some(cap) = self.cap
        {
            return Outcome::TooManyTokens(cap.estimate(self.units.saturating_sub(1)));
        }
        if self.content_empty() {
            // The selection's text is empty (nothing, or one empty line):
            // an empty line of a longer file is shown numbered; an empty
            // file gets its own reminder; a selection past the end the other.
            return match (self.shown, self.index) {
                (1.., 2..) => Outcome::Lines(format!("{}\t", self.first_number)),
                (1.., _) | (_, 0) => Outcome::Reminder(EMPTY_FILE.to_string()),
                (0, total) => Outcome::Reminder(empty_reminder(self.first_number, total)),
            };
        }
        if self.pending_cr {
            self.out.push('\r');
        }
        Outcome::Lines(self.out)
    }
}

/// Most bytes of text a read with a `limit` may select, in UTF-8 with `\n`
/// between lines (2.1.328: 128 bytes for each token of the cap, 3.2 MB).
pub const MAX_SELECTED_BYTES: u64 = MAX_TOKENS * 128;

/// Whether the lines `selection` picks from `file` hold more than `max`
/// bytes of text, counted as Claude Code counts them while it reads: each
/// selected line's bytes once decoded (an invalid sequence as U+FFFD, three
/// bytes), without the `\r` before its `\n`, plus one for each `\n` between
/// them. It stops at the first byte over, so a huge line is never held whole.
pub fn selection_exceeds(mut file: impl io::Read, selection: Selection, max: u64) -> io::Result<bool> {
    let start = selection.offset.unwrap_or(1).saturating_sub(1);
    let end = selection.limit.map_or(u64::MAX, |l| start.saturating_add(l));
    let mut buf = vec![0u8; READ_CHUNK];
    // Bytes carried from the last chunk: an incomplete UTF-8 sequence.
    let mut carry = 0usize;
    let (mut index, mut selected, mut line, mut first) = (0u64, 0u64, 0u64, true);
    let mut line_ends_in_cr = false;
    loop {
        let read = file.read(&mut buf[carry..])?;
        let eof = read == 0;
        let mut data = &buf[..carry + read];
        if first && !eof && data.len() < 3 {
            // Not yet enough to tell whether a byte order mark starts the file.
            carry = data.len();
            continue;
        }
        if first {
            first = false;
            data = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
        }
        // Count only what decodes now: an incomplete sequence at the end
        // waits for the next read, unless the file ends there.
        let whole = if eof { data.len() } else { complete_prefix(data) };
        let mut rest = &data[..whole];
        while !rest.is_empty() && index < end {
            let (piece, ends_line) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..i], true),
                None => (rest, false),
            };
            if index >= start {
                let bytes = decoded_len(piece);
                if !piece.is_empty() {
                    line_ends_in_cr = piece.ends_with(b"\r");
                }
                line += bytes;
                let separator = u64::from(index > start);
                // A `\r` that a `\n` may still follow is not counted yet.
                let cr = u64::from(line_ends_in_cr && (ends_line || !eof));
                if selected + separator + line - cr > max {
                    return Ok(true);
                }
                if ends_line {
                    selected += separator + line - cr;
                }
            }
            if ends_line {
                index += 1;
                line = 0;
                line_ends_in_cr = false;
                rest = &rest[piece.len() + 1..];
            } else {
                rest = &[];
            }
        }
        if eof {
            // The last line, with nothing after it, keeps its `\r`.
            let separator = u64::from(index > start);
            return Ok(index >= start && index < end && selected + separator + line > max);
        }
        if index >= end {
            return Ok(false);
        }
        let left = data.len() - whole;
        let from = carry + read - left;
        buf.copy_within(from..carry + read, 0);
        carry = left;
    }
}

/// The length of `data` without a UTF-8 sequence its end cuts short.
fn complete_prefix(data: &[u8]) -> usize {
    for back in 1..=data.len().min(3) {
        let at = data.len() - back;
        let lead = data[at];
        if lead & 0xC0 != 0x80 {
            let need = match lead {
                0xF0.. => 4,
                0xE0.. => 3,
                0xC0.. => 2,
                _ => 1,
            };
            return if need > back { at } else { data.len() };
        }
    }
    data.len()
}

/// The length in bytes of `bytes` once decoded, invalid sequences as U+FFFD.
fn decoded_len(bytes: &[u8]) -> u64 {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(_) => bytes.len() as u64,
        Err(_) => String::from_utf8_lossy(bytes).len() as u64,
    }
}

/// What stands in place of an empty file (2.1.328; 2.1.88 showed the
/// shorter-than-offset reminder, with 1 line).
pub const EMPTY_FILE: &str = "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>";

/// What stands in place of a selection past the end of the file.
pub fn empty_reminder(offset: u64, total_lines: u64) -> String {
    format!(
        "<system-reminder>Warning: the file exists but is shorter than the provided offset ({offset}). \
         The file has {total_lines} lines.</system-reminder>"
    )
}

/// The length of `s` in UTF-16 code units, as JavaScript counts a string:
/// one per character, one more for each of four bytes (a surrogate pair).
pub fn utf16_len(s: &str) -> u64 {
    measure(s.as_bytes()).units
}

/// What one pass over some bytes finds.
struct Counts {
    /// Their length in UTF-16 code units, if they are valid UTF-8.
    units: u64,
    /// How many are over 127 (none: the text is ASCII).
    high: u64,
    carriage_returns: u64,
}

/// Measures `bytes` in one pass: every byte but a continuation byte starts a
/// character, and the lead byte of a four-byte character starts a surrogate
/// pair. Counted in blocks small enough for byte counters and a whole number
/// of vectors long, which the compiler turns into vector code (a count per
/// byte is three times slower).
fn measure(bytes: &[u8]) -> Counts {
    let (mut continuations, mut pairs, mut high, mut carriage_returns) = (0u64, 0u64, 0u64, 0u64);
    for block in bytes.chunks(240) {
        let (mut c, mut p, mut h, mut r) = (0u8, 0u8, 0u8, 0u8);
        for &b in block {
            c += u8::from((b as i8) < -0x40);
            p += u8::from(b >= 0xF0);
            h += u8::from(b >= 0x80);
            r += u8::from(b == b'\r');
        }
        continuations += u64::from(c);
        pairs += u64::from(p);
        high += u64::from(h);
        carriage_returns += u64::from(r);
    }
    Counts { units: bytes.len() as u64 - continuations + pairs, high, carriage_returns }
}

/// Where the `n`th line of `bytes` ends (just past its `\n`), or, when
/// `bytes` holds fewer than `n` newlines, how many it holds. Counting
/// first keeps the common case (the line is in a later piece) to one
/// vectorised pass.
fn after_nth_line(bytes: &[u8], n: u64) -> Result<usize, u64> {
    if n == 0 {
        return Ok(0);
    }
    let count = memchr::memchr_iter(b'\n', bytes).count() as u64;
    if count < n {
        return Err(count);
    }
    let newline = memchr::memchr_iter(b'\n', bytes).nth((n - 1) as usize).expect("counted");
    Ok(newline + 1)
}

/// Appends `number` in decimal, without the formatting machinery: this runs
/// once per line shown.
#[inline]
fn push_number(out: &mut String, number: u64) {
    let mut digits = [0u8; 20];
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
    // SAFETY: `digits[i..]` holds only ASCII digits.
    out.push_str(unsafe { std::str::from_utf8_unchecked(&digits[i..]) });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(bytes: &[u8], offset: Option<u64>, limit: Option<u64>) -> Outcome {
        let cap = Some(TokenCap::for_extension("txt"));
        render(bytes, Selection { offset, limit }, cap, Some(bytes.len() as u64), usize::MAX, &mut |_| {}).unwrap()
    }

    fn lines(bytes: &[u8], offset: Option<u64>, limit: Option<u64>) -> String {
        match show(bytes, offset, limit) {
            Outcome::Lines(text) => text,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn compact_prefix_joined_without_a_trailing_newline() {
        assert_eq!(lines(b"one\ntwo", None, None), "1\tone\n2\ttwo");
        // The text after the last newline is a line, even when empty.
        assert_eq!(lines(b"one\ntwo\n", None, None), "1\tone\n2\ttwo\n3\t");
        assert_eq!(lines(b"\n", None, None), "1\t\n2\t");
    }

    #[test]
    fn carriage_returns_and_byte_order_mark() {
        assert_eq!(lines(b"a\r\nb\r\n", None, None), "1\ta\n2\tb\n3\t");
        // A second `\r` is lost between lines, kept on the last one shown.
        assert_eq!(lines(b"a\r\r\nb", None, None), "1\ta\n2\tb");
        assert_eq!(lines(b"a\r\r\nb", None, Some(1)), "1\ta\r");
        // A lone `\r` does not end a line.
        assert_eq!(lines(b"a\rb\n", None, Some(1)), "1\ta\rb");
        assert_eq!(lines(b"\xEF\xBB\xBFhi", None, None), "1\thi");
        assert_eq!(lines(b"caf\xe9\n", None, Some(1)), "1\tcaf\u{fffd}");
        // No sniffing for binary content: NUL bytes are text.
        assert_eq!(lines(b"\0\x01", None, None), "1\t\0\x01");
    }

    #[test]
    fn offset_and_limit_select_and_number_lines() {
        let text = b"1\n2\n3\n4\n5\n";
        assert_eq!(lines(text, Some(2), Some(2)), "2\t2\n3\t3");
        assert_eq!(lines(text, Some(5), None), "5\t5\n6\t");
        // Offset 0 starts at the first line, numbered 0.
        assert_eq!(lines(text, Some(0), Some(2)), "0\t1\n1\t2");
        // No line is cut, however long.
        let long = "x".repeat(5000);
        assert_eq!(lines(long.as_bytes(), None, None), format!("1\t{long}"));
    }

    #[test]
    fn empty_selections_get_the_reminder() {
        let reminder = |o, n| Outcome::Reminder(empty_reminder(o, n));
        let empty = Outcome::Reminder(EMPTY_FILE.to_string());
        assert_eq!(show(b"", None, None), empty);
        assert_eq!(show(b"", Some(0), None), empty);
        assert_eq!(show(b"", Some(2), None), reminder(2, 1), "past the end of an empty file");
        assert_eq!(show(b"a\nb\n", Some(10), None), reminder(10, 3));
        // The last line of `a\n` is empty: selected alone, it is shown numbered.
        assert_eq!(show(b"a\n", Some(2), Some(5)), Outcome::Lines("2\t".into()));
        assert_eq!(show(b"\n\n\n", Some(1), Some(1)), Outcome::Lines("1\t".into()));
        assert_eq!(
            empty_reminder(9, 5),
            "<system-reminder>Warning: the file exists but is shorter than the provided offset (9). The file has 5 lines.</system-reminder>"
        );
    }

    #[test]
    fn token_cap_on_the_selected_text() {
        let cap = TokenCap::for_extension("txt");
        assert_eq!((cap.estimate(100_001), cap.estimate(100_002)), (25_000, 25_001));
        assert_eq!(TokenCap::for_extension("json").estimate(50_001), 25_001);
        assert_eq!(cap.estimate(2), 1, "rounded half up");
        // 100,001 units (line text and the newlines between lines) fit.
        let fits = "x".repeat(99_999) + "\n";
        assert!(matches!(show(fits.as_bytes(), None, None), Outcome::Lines(_)));
        let over = "x".repeat(100_001) + "\n";
        assert_eq!(show(over.as_bytes(), None, None), Outcome::TooManyTokens(25_001));
        // Only the selection counts; a limit keeps it under.
        let many: String = (0..50_000).map(|_| "abcdefghi\n").collect();
        assert_eq!(show(many.as_bytes(), None, None), Outcome::TooManyTokens(125_000));
        assert!(matches!(show(many.as_bytes(), Some(10), Some(100)), Outcome::Lines(_)));
        // Characters count in UTF-16 units: é one, 😀 two.
        assert_eq!(utf16_len("é😀a"), 4);
    }

    #[test]
    fn streams_only_what_cannot_go_over_the_cap() {
        // CRLF lines: the text shown is 2,000 units shorter than the file.
        let body: String = (0..2000).map(|i| format!("line {i}\r\n")).collect();
        let units = body.len() as u64 - 2000;
        let run = |cap: Option<TokenCap>, total: Option<u64>, flush_at: usize| {
            let mut streamed = String::new();
            let out =
                render(body.as_bytes(), Selection::default(), cap, total, flush_at, &mut |t| streamed.push_str(t))
                    .unwrap();
            (streamed, out)
        };
        let Outcome::Lines(expected) = run(None, None, usize::MAX).1 else { panic!() };
        let size = Some(body.len() as u64);
        let (streamed, out) = run(Some(TokenCap::for_extension("txt")), size, 1024);
        assert!(!streamed.is_empty());
        assert_eq!(out, Outcome::Lines(expected[streamed.len()..].to_string()));
        assert!(expected.starts_with(&streamed));
        // Unknown size, or a file whose bytes could be over the cap though
        // its text is not: held to the end.
        let (streamed, out) = run(Some(TokenCap::for_extension("txt")), None, 1024);
        assert_eq!((streamed.as_str(), out), ("", Outcome::Lines(expected.clone())));
        let tight = TokenCap { max_tokens: units / 4 + 1, bytes_per_token: 4 };
        assert!(!tight.exceeded_by(units) && tight.exceeded_by(units + 2000));
        let (streamed, out) = run(Some(tight), size, 1024);
        assert_eq!((streamed.as_str(), out), ("", Outcome::Lines(expected)));
        // Over the cap, nothing leaves, and the estimate counts the whole selection.
        let (streamed, out) = run(Some(TokenCap { max_tokens: 100, bytes_per_token: 4 }), size, 16);
        assert_eq!((streamed.as_str(), out), ("", Outcome::TooManyTokens((units + 2) / 4)));
    }

    /// The estimate as Claude Code makes it, from the whole text at once:
    /// lines cut at `\n`, one `\r` dropped from each, the selection joined
    /// with `\n`, measured in UTF-16.
    fn reference_estimate(bytes: &[u8], selection: Selection, cap: TokenCap) -> u64 {
        let text = String::from_utf8_lossy(bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes));
        let lines: Vec<&str> = text.split('\n').collect();
        let start = usize::try_from(selection.offset.unwrap_or(1).saturating_sub(1)).unwrap().min(lines.len());
        let end = selection.limit.map_or(lines.len(), |l| (start + l as usize).min(lines.len()));
        let joined: Vec<&str> = lines[start..end].iter().map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
        cap.estimate(joined.join("\n").encode_utf16().count() as u64)
    }

    #[test]
    fn estimates_over_the_cap_match_the_whole_text_across_pieces() {
        // Texts of several 256 KiB pieces, with CRLF, stray `\r`s, characters
        // of every width, invalid bytes and long lines; a cap small enough to
        // be passed in the first piece, so later pieces are only measured.
        const PARTS: [&[u8]; 9] = [
            b"plain words ",
            b"\r\n",
            b"\n",
            b"\r",
            b"\xC3\xA9",
            b"\xE2\x82\xAC",
            b"\xF0\x9F\x98\x80",
            b"\xFF\xC3",
            b"\r\r\n",
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..12 {
            let size = 300_000 + (next() % 500_000) as usize;
            let mut bytes = if round % 3 == 0 { b"\xEF\xBB\xBF".to_vec() } else { Vec::new() };
            while bytes.len() < size {
                let part = PARTS[(next() % PARTS.len() as u64) as usize];
                if round % 2 == 0 && part.contains(&b'\r') {
                    continue; // half the texts have no `\r` at all
                }
                let times = if next() % 50 == 0 { 2000 } else { 1 + next() % 4 };
                for _ in 0..times {
                    bytes.extend_from_slice(part);
                }
            }
            if round % 4 == 1 {
                bytes.push(b'\r'); // a last line that ends in `\r`
            }
            let total = bytes.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
            // One byte per token: the estimate is the exact count of units.
            let cap = TokenCap { max_tokens: 4000, bytes_per_token: 1 };
            for selection in [
                Selection::default(),
                Selection { offset: Some(2), limit: Some(total / 2) },
                Selection { offset: Some(total / 3), limit: None },
                Selection { offset: Some(10), limit: Some(total - 10) },
                Selection { offset: Some(10), limit: Some(total - 9) },
            ] {
                let got =
                    render(&bytes[..], selection, Some(cap), Some(bytes.len() as u64), 4096, &mut |_| {}).unwrap();
                let expected = reference_estimate(&bytes, selection, cap);
                assert!(expected > cap.max_tokens, "round {round}: the cap is passed");
                assert_eq!(got, Outcome::TooManyTokens(expected), "round {round}, {selection:?}");
            }
        }
    }

    #[test]
    fn chunked_reads_match_whole_reads() {
        // Lines across the 256 KiB chunks, CRLF, a BOM and a long line.
        let mut body = String::from("\u{feff}");
        for i in 0..40_000 {
            body.push_str(&format!("line {i} é 😀\r\n"));
        }
        body.push_str(&"y".repeat(300_000));
        let reader = |limit| {
            struct Slow<'a>(&'a [u8]);
            impl io::Read for Slow<'_> {
                fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                    let n = out.len().min(self.0.len()).min(7919);
                    out[..n].copy_from_slice(&self.0[..n]);
                    self.0 = &self.0[n..];
                    Ok(n)
                }
            }
            render(Slow(body.as_bytes()), Selection { offset: Some(3), limit }, None, None, usize::MAX, &mut |_| {})
                .unwrap()
        };
        let whole = body.trim_start_matches('\u{feff}').split('\n').skip(2);
        let expected: Vec<String> =
            whole.enumerate().map(|(i, l)| format!("{}\t{}", i + 3, l.strip_suffix('\r').unwrap_or(l))).collect();
        assert_eq!(reader(None), Outcome::Lines(expected.join("\n")));
        assert_eq!(reader(Some(2)), Outcome::Lines(expected[..2].join("\n")));
    }

    #[test]
    fn the_range_cap_counts_selected_text_as_decoded() {
        struct Slow<'a>(&'a [u8], usize);
        impl io::Read for Slow<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = out.len().min(self.0.len()).min(self.1);
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        // A BOM, CRLF, characters of two to four bytes, an invalid byte, and a
        // last line without `\n` that ends in `\r`.
        let body = b"\xEF\xBB\xBFab\r\n\xC3\xA9\xF0\x9F\x98\x80\n\xFFx\n\nlast\r";
        // The selected lines' bytes as decoded, `\r` dropped before `\n`.
        let reference = |offset: u64, limit: u64| -> u64 {
            let text = String::from_utf8_lossy(&body[3..]).into_owned();
            let lines: Vec<&str> = text.split('\n').collect();
            let last = lines.len() - 1;
            let picked: Vec<u64> = (0..lines.len())
                .skip(offset as usize - 1)
                .take(limit as usize)
                .map(|i| if i == last { lines[i].len() } else { lines[i].strip_suffix('\r').unwrap_or(lines[i]).len() } as u64)
                .collect();
            picked.iter().sum::<u64>() + picked.len().saturating_sub(1) as u64
        };
        for piece in [1, 2, 3, 5, 64] {
            for offset in 1..=5 {
                for limit in 1..=5 {
                    let bytes = reference(offset, limit);
                    let selection = Selection { offset: Some(offset), limit: Some(limit) };
                    let exceeds = |max| selection_exceeds(Slow(body, piece), selection, max).unwrap();
                    assert!(!exceeds(bytes), "{offset}+{limit} by {piece}: {bytes} bytes fit");
                    if bytes > 0 {
                        assert!(
                            exceeds(bytes - 1),
                            "{offset}+{limit} by {piece}: {bytes} bytes are over {}",
                            bytes - 1
                        );
                    }
                }
            }
        }
        // One huge line is refused without being read to its end.
        let huge = "z".repeat(1 << 20);
        let selection = Selection { offset: None, limit: Some(1) };
        assert!(selection_exceeds(huge.as_bytes(), selection, 1000).unwrap());
    }
}
