//! What the model reads of a finished command, in Claude Code 2.1.88's
//! words (`BashTool.tsx` `call` and `mapToolResultToToolResultBlockParam`,
//! `utils/toolErrors.ts` `formatError`, `utils/toolResultStorage.ts`).
//!
//! Output is stdout and stderr together, in the order they came. A command
//! that succeeded (or whose exit code its semantics call success) shows its
//! output with blank lines around it and trailing space removed, or
//! [`NO_OUTPUT`]; one that failed shows `Exit code N`, then its first
//! [`FIRST_BYTES`] of output as they are, the whole cut to its first and last
//! 5,000 characters past 11,024 (Claude Code 2.1.328 cuts only past 10,000
//! and 1,024 more; 2.1.88 cut past 10,000).

/// The result of a command that printed nothing (Claude Code's marker for
/// any tool whose result is empty).
pub const NO_OUTPUT: &str = "(Bash completed with no output)";
/// Bytes of output a failure shows (and the most shown inline: the host
/// saves a longer result to a file and shows a preview).
pub const FIRST_BYTES: usize = 30_000;
/// Claude Code's line for a command interrupted by the user.
pub const INTERRUPTED: &str = "[Request interrupted by user for tool use]";
/// Characters of a failure's text kept when its middle is cut, and how many
/// more it may have before it is (Claude Code 2.1.328, chunk-j2vgqk5p.js
/// `function ig(e, r7 = fUt)`: `fUt = 1e4`, `xL = 1024`).
const ERROR_CHARS: usize = 10_000;
const ERROR_SLACK: usize = 1_024;

/// The text of a command that succeeded: empty lines at the start and the
/// end dropped, trailing whitespace trimmed (empty when it printed nothing
/// but whitespace).
pub fn success_text(output: &str) -> String {
    // What Claude Code does, in its order: trim the end, drop whitespace-only
    // lines at both ends, drop leading blank lines, trim the end.
    let trimmed = js_trim_end(output);
    let lines: Vec<&str> = trimmed.split('\n').collect();
    let Some(first) = lines.iter().position(|l| !js_trim(l).is_empty()) else { return String::new() };
    let last = lines.iter().rposition(|l| !js_trim(l).is_empty()).unwrap_or(first);
    js_trim_end(&lines[first..=last].join("\n")).to_string()
}

/// The text of a command that failed with `code` (`interrupted`: the user
/// stopped it), its `output` as it came.
pub fn failure_text(code: i32, interrupted: bool, output: &str) -> String {
    let code_line = format!("Exit code {code}");
    let parts = [code_line.as_str(), if interrupted { INTERRUPTED } else { "" }, output];
    let joined: Vec<&str> = parts.into_iter().filter(|p| !p.is_empty()).collect();
    let full = js_trim(&joined.join("\n")).to_string();
    let units = utf16_len(&full);
    if units <= ERROR_CHARS + ERROR_SLACK {
        return full;
    }
    let half = ERROR_CHARS / 2;
    format!(
        "{}\n\n... [{} characters truncated] ...\n\n{}",
        utf16_prefix(&full, half),
        units - ERROR_CHARS,
        utf16_suffix(&full, half)
    )
}

/// What Claude Code 2.1.328 tells the model in place of "You will be
/// notified when it completes" when completion notices are off
/// (chunk-k90mh50x.js `p2r`): toolhost has no way to put a notice in the
/// conversation.
pub const NO_NOTICE: &str = "Nothing notifies you when the command finishes: read the output file that the result names to check on it. The file gets no line when the command ends, so if you need to know that it has, end the command with an `echo` of your own.";

/// The result of a command started in the background with `id`, its output
/// going to `file` (Claude Code 2.1.328 `Hjo`'s first sentence, then
/// [`NO_NOTICE`]). Without a known file (the session could not record it),
/// only the first part.
pub fn background_text(id: &str, file: Option<&str>) -> String {
    match file {
        Some(file) => {
            format!("Command running in background with ID: {id}. Output is being written to: {file}. {NO_NOTICE}")
        }
        None => format!("Command running in background with ID: {id}."),
    }
}

/// The image a command's whole output encodes as a `data:image/…;base64,`
/// URI, if it does (and is a type the host passes on): media type and bytes.
pub fn image(text: &str) -> Option<(String, Vec<u8>)> {
    let rest = text.trim().strip_prefix("data:")?;
    let (media_type, data) = rest.split_once(";base64,")?;
    let subtype = media_type.strip_prefix("image/")?;
    if subtype.is_empty() || data.is_empty() || data.contains('\n') {
        return None;
    }
    let media_type = media_type.to_ascii_lowercase();
    if !["image/png", "image/jpeg", "image/gif", "image/webp"].contains(&media_type.as_str()) {
        return None;
    }
    Some((media_type, base64_decode(data)?))
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let bytes = text.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for &c in bytes {
        acc = (acc << 6) | u32::from(value(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    (!out.is_empty()).then_some(out)
}

/// JavaScript's whitespace (`\s`, `trim`): Unicode spaces, line
/// terminators and the byte-order mark.
fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

fn js_trim_end(s: &str) -> &str {
    s.trim_end_matches(is_js_whitespace)
}

fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// A JavaScript string's length: UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// The longest prefix of `s` at most `units` UTF-16 units long.
fn utf16_prefix(s: &str, units: usize) -> &str {
    let mut counted = 0;
    for (i, c) in s.char_indices() {
        counted += c.len_utf16();
        if counted > units {
            return &s[..i];
        }
    }
    s
}

/// The longest suffix of `s` at most `units` UTF-16 units long.
fn utf16_suffix(s: &str, units: usize) -> &str {
    let mut counted = 0;
    for (i, c) in s.char_indices().rev() {
        counted += c.len_utf16();
        if counted > units {
            return &s[i + c.len_utf8()..];
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_drops_blank_lines_around_and_trailing_space() {
        assert_eq!(success_text("hi\n"), "hi");
        assert_eq!(success_text("\n  \n  indented\n\nmiddle  \n \n\n"), "  indented\n\nmiddle");
        assert_eq!(success_text("a\r\n"), "a");
        assert_eq!(success_text(" \n\t\n"), "");
        assert_eq!(success_text(""), "");
    }

    #[test]
    fn failures_lead_with_the_exit_code() {
        assert_eq!(failure_text(1, false, ""), "Exit code 1");
        assert_eq!(failure_text(2, false, "ls: x: No such file\n"), "Exit code 2\nls: x: No such file");
        assert_eq!(failure_text(1, false, "\nkept\n\n"), "Exit code 1\n\nkept", "blank lines inside stay");
        assert_eq!(failure_text(137, true, "partial\n"), format!("Exit code 137\n{INTERRUPTED}\npartial"));
    }

    #[test]
    fn failures_up_to_eleven_thousand_and_twenty_four_characters_are_whole() {
        // "Exit code 1\n" and 11,012 characters: 11,024 in all.
        let whole = failure_text(1, false, &"a".repeat(11_012));
        assert_eq!(utf16_len(&whole), 11_024);
        assert!(!whole.contains("truncated"));
        let cut = failure_text(1, false, &"a".repeat(11_013));
        assert!(cut.contains("\n\n... [1025 characters truncated] ...\n\n"), "{}", &cut[4990..5050]);
    }

    #[test]
    fn long_failures_keep_their_first_and_last_five_thousand_characters() {
        let output = format!("{}{}", "a".repeat(8000), "b".repeat(8000));
        let text = failure_text(1, false, &output);
        // "Exit code 1\n" is 12 characters of the 16,012.
        let expected =
            format!("Exit code 1\n{}\n\n... [6012 characters truncated] ...\n\n{}", "a".repeat(4988), "b".repeat(5000));
        assert_eq!(text, expected);
    }

    #[test]
    fn background_and_images() {
        assert_eq!(
            background_text("b1a2b3c4d", Some("/d/b1a2b3c4d.output")),
            format!(
                "Command running in background with ID: b1a2b3c4d. Output is being written to: /d/b1a2b3c4d.output. \
                 {NO_NOTICE}"
            )
        );
        assert!(NO_NOTICE.starts_with("Nothing notifies you") && NO_NOTICE.ends_with("of your own."));
        assert_eq!(background_text("b1", None), "Command running in background with ID: b1.");
        let (media, bytes) = image("data:image/png;base64,iVBORw0KGgo=\n").unwrap();
        assert_eq!((media.as_str(), bytes), ("image/png", b"\x89PNG\r\n\x1a\n".to_vec()));
        assert_eq!(image("data:image/svg+xml;base64,PHN2Zz4="), None, "a type the host does not pass on");
        assert_eq!(image("see data:image/png;base64,iVBORw0KGgo="), None);
        assert_eq!(image("data:image/png;base64,!!"), None);
    }

    #[test]
    fn javascript_lengths() {
        assert_eq!(utf16_len("a😀"), 3);
        assert_eq!(utf16_prefix("a😀b", 2), "a");
        assert_eq!(utf16_suffix("a😀b", 3), "😀b");
        assert!(is_js_whitespace('\u{FEFF}') && !is_js_whitespace('\u{85}'));
    }
}
