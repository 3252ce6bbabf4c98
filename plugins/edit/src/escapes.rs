//! `\uXXXX` escapes and the characters they stand for, tried both ways when
//! `old_string` is not in the file as given (2.1.328): a model that read
//! `caf\u00e9` in a JSON or source file may write `café`, and one that read
//! `café` may write `caf\u00e9`. Strings are looked at in UTF-16 code
//! units, as JavaScript sees them: a character beyond U+FFFF is two escapes.

use regex::Regex;

/// `s` with each `\uXXXX` decoded, an escaped backslash (`\\`) kept as it
/// is, read left to right; `None` when a lone surrogate results (such text
/// can be in no file read as UTF-8).
pub fn decode(s: &str) -> Option<String> {
    String::from_utf16(&decode_units(s)).ok()
}

/// [`decode`] with a lone surrogate written as U+FFFD, as Node writes one
/// into a UTF-8 file.
pub fn decode_lossy(s: &str) -> String {
    String::from_utf16_lossy(&decode_units(s))
}

fn decode_units(s: &str) -> Vec<u16> {
    let b = s.as_bytes();
    let mut out: Vec<u16> = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'\\') {
            out.extend_from_slice(&[u16::from(b'\\'); 2]);
            i += 2;
        } else if b[i] == b'\\' && b.get(i + 1) == Some(&b'u') && hex4(&b[i + 2..]).is_some() {
            out.push(hex4(&b[i + 2..]).expect("checked"));
            i += 6;
        } else {
            // Copy up to the next backslash (whole characters: `\` is ASCII).
            let end = memchr_backslash(&b[i + 1..]).map_or(b.len(), |j| i + 1 + j);
            out.extend(s[i..end].encode_utf16());
            i = end;
        }
    }
    out
}

fn memchr_backslash(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\\')
}

/// The four hex digits at the start of `b`, as a code unit.
fn hex4(b: &[u8]) -> Option<u16> {
    let digits = b.get(..4)?;
    if !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

/// Whether `s` holds a `\uXXXX` escape.
pub fn has_escape(s: &str) -> bool {
    s.as_bytes().windows(6).any(|w| w[0] == b'\\' && w[1] == b'u' && hex4(&w[2..]).is_some())
}

/// The length of `s` in UTF-16 units once every unit beyond ASCII is
/// written as a six-character escape.
pub fn escaped_len(s: &str) -> usize {
    s.encode_utf16().map(|u| if u >= 0x80 { 6 } else { 1 }).sum()
}

/// How many backslashes stand right before byte `at` of `text`.
fn backslashes_before(text: &str, at: usize) -> usize {
    text.as_bytes()[..at].iter().rev().take_while(|&&c| c == b'\\').count()
}

/// The stretch of `text` that is `search` with every unit beyond ASCII
/// written as `\uXXXX` (hex digits in either case), where no such escape is
/// itself escaped (an even number of backslashes before it, and before the
/// start when `search` starts with one); `None` unless the first such
/// stretch is also the first place its text occurs.
pub fn find_escaped(search: &str, text: &str) -> Option<String> {
    if search.ends_with('\\') && backslashes_before(search, search.len()) % 2 == 1 {
        return None;
    }
    // Where, from the start of a match, a backslash must not be escaped.
    let mut unescaped = Vec::new();
    if search.starts_with('\\') {
        unescaped.push(0);
    }
    let mut pattern = String::new();
    let mut at = 0;
    for unit in search.encode_utf16() {
        if unit >= 0x80 {
            unescaped.push(at);
            at += 6;
            pattern.push_str(r"\\u");
            for digit in format!("{unit:04x}").chars() {
                if digit.is_ascii_alphabetic() {
                    pattern.push_str(&format!("[{digit}{}]", digit.to_ascii_uppercase()));
                } else {
                    pattern.push(digit);
                }
            }
        } else {
            at += 1;
            let c = char::from(u8::try_from(unit).expect("ASCII"));
            pattern.push_str(&regex::escape(c.encode_utf8(&mut [0; 4])));
        }
    }
    // Every unit of a match is ASCII: byte offsets inside it are unit offsets.
    let regex = Regex::new(&pattern).ok()?;
    let mut from = 0;
    while let Some(found) = regex.find_at(text, from) {
        let start = found.start();
        if unescaped.iter().all(|&g| backslashes_before(text, start + g).is_multiple_of(2)) {
            let matched = found.as_str();
            return (text.find(matched) == Some(start)).then(|| matched.to_owned());
        }
        // A match starts with an ASCII character: the next byte is a boundary.
        from = start + 1;
    }
    None
}

/// `new` made to match how `actual` (the file's text that `old` found)
/// writes what `old` wrote: where `old`'s characters were escapes in the
/// file, `new`'s characters beyond ASCII become escapes too (with the file's
/// digits for the same characters, else in the case most of its digits use);
/// where `old`'s escapes were characters in the file, `new`'s are decoded.
pub fn match_style(old: &str, actual: &str, new: &str) -> String {
    if old == actual {
        return new.to_owned();
    }
    if !old.is_ascii() && escaped_len(old) == actual.encode_utf16().count() && find_escaped(old, actual).is_some() {
        let mut digits = std::collections::HashMap::new();
        let (mut upper, mut lower) = (0, 0);
        let mut at = 0;
        for unit in old.encode_utf16() {
            if unit >= 0x80 {
                let hex = &actual[at + 2..at + 6];
                upper += hex.bytes().filter(u8::is_ascii_uppercase).count();
                lower += hex.bytes().filter(u8::is_ascii_lowercase).count();
                digits.insert(unit, hex.to_owned());
                at += 6;
            } else {
                at += 1;
            }
        }
        let mut out = String::with_capacity(new.len());
        for c in new.chars() {
            if c.is_ascii() {
                out.push(c);
                continue;
            }
            let mut units = [0u16; 2];
            for &unit in c.encode_utf16(&mut units).iter() {
                out.push_str("\\u");
                match digits.get(&unit) {
                    Some(hex) => out.push_str(hex),
                    None if upper > lower => out.push_str(&format!("{unit:04X}")),
                    None => out.push_str(&format!("{unit:04x}")),
                }
            }
        }
        return out;
    }
    if has_escape(old) && decode(old).as_deref() == Some(actual) {
        return decode_lossy(new);
    }
    new.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_escapes_but_not_escaped_backslashes() {
        assert_eq!(decode(r"caf\u00e9 \\u00e9 \u00E9").unwrap(), r"café \\u00e9 é");
        assert_eq!(decode(r"\ud83d\ude00").unwrap(), "😀");
        assert_eq!(decode(r"\ud83d alone"), None);
        assert_eq!(decode_lossy(r"\ud83d alone"), "\u{fffd} alone");
        assert!(has_escape(r"x\u00e9") && !has_escape(r"\u00g9") && !has_escape("é"));
    }

    #[test]
    fn finds_characters_written_as_escapes() {
        let text = r#"{"name": "caf\u00E9", "smile": "\ud83d\ude00"}"#;
        assert_eq!(find_escaped(r#""café""#, text).unwrap(), r#""caf\u00E9""#);
        assert_eq!(find_escaped("😀", text).unwrap(), r"\ud83d\ude00");
        assert_eq!(find_escaped("ü", text), None);
        // An escape that is itself escaped is not the character.
        assert_eq!(find_escaped("é", r"\\u00e9"), None);
        assert_eq!(find_escaped("é", r"\\\u00e9").unwrap(), r"\u00e9");
        // A first match that is not the text's first occurrence is refused
        // (the file's `\\u00e9` comes first); an odd trailing backslash too.
        assert_eq!(find_escaped("é", r"\\u00e9 \u00e9"), None);
        assert_eq!(find_escaped("é\\", r"\u00e9\"), None);
    }

    #[test]
    fn new_text_follows_the_files_form() {
        // The file had escapes: new characters become escapes, in the file's digits.
        assert_eq!(match_style("café", r"caf\u00E9", "café crème"), r"caf\u00E9 cr\u00E8me");
        assert_eq!(match_style("é", r"\u00e9", "😀"), r"\ud83d\ude00");
        // The file had characters: new escapes are decoded.
        assert_eq!(match_style(r"caf\u00e9", "café", r"th\u00e9"), "thé");
        assert_eq!(match_style("same", "same", "é"), "é");
    }
}
