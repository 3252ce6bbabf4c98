//! Double-escaped `\uXXXX` in a model's input (2.1.328's `e0`, run on every
//! tool's input after the typed-JSON layer): a model that means `é` sometimes
//! sends the six characters `\u00e9`, which JSON decoding leaves as they are.
//! Each string of the input, at any depth, has them decoded, except:
//! - an escape whose backslash is itself escaped (an odd number of
//!   backslashes before it): `\\u00e9` is a literal backslash and `u00e9`;
//! - a lone surrogate (a pair written as two escapes is one character);
//! - a control character (U+0000–U+001F, U+007F–U+009F): it stays escaped;
//! - any string that looks like it holds a Windows path (`C:\`, `C:/`, or a
//!   `\\server\share\` UNC prefix), left whole, since `\u` may start a
//!   directory name there (`C:\users`).
//!
//! Keys named `__proto__` are dropped, as Claude Code drops them.

use serde_json::{Map, Value};

/// `value` with its double-escaped strings decoded; `None` when nothing
/// changes. The top-level fields named in `javascript` hold JavaScript
/// source (Script's `code`): there an escape of an ASCII character or of a
/// line or paragraph separator stays, since decoding `\u0022` inside a
/// string literal would end the literal (Claude Code's `javaScriptSource`).
pub(super) fn decode_input(value: &Map<String, Value>, javascript: &[String]) -> Option<Map<String, Value>> {
    let mut changed = false;
    let mut out = Map::with_capacity(value.len());
    for (key, item) in value {
        if key == "__proto__" {
            changed = true;
            continue;
        }
        let decoded = match item {
            Value::String(s) if javascript.contains(key) => decode_string(s, true).map(Value::String),
            item => decode_value(item),
        };
        changed |= decoded.is_some();
        out.insert(key.clone(), decoded.unwrap_or_else(|| item.clone()));
    }
    changed.then_some(out)
}

fn decode_value(value: &Value) -> Option<Value> {
    match value {
        Value::String(s) => decode_string(s, false).map(Value::String),
        Value::Array(items) => {
            let decoded: Vec<Option<Value>> = items.iter().map(decode_value).collect();
            if decoded.iter().all(Option::is_none) {
                return None;
            }
            Some(Value::Array(items.iter().zip(decoded).map(|(old, new)| new.unwrap_or_else(|| old.clone())).collect()))
        }
        Value::Object(map) => decode_input(map, &[]).map(Value::Object),
        _ => None,
    }
}

/// `s` with its double-escaped characters decoded, or `None`; in
/// JavaScript source, escapes of ASCII and of U+2028/U+2029 stay.
fn decode_string(s: &str, javascript: bool) -> Option<String> {
    let b = s.as_bytes();
    if !(0..b.len()).any(|i| escape_at(b, i).is_some()) || looks_like_windows_path(s) {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        let Some(unit) = escape_at(b, i) else {
            i += 1;
            continue;
        };
        let pair = (0xD800..=0xDBFF)
            .contains(&unit)
            .then(|| escape_at(b, i + 6))
            .flatten()
            .filter(|low| (0xDC00..=0xDFFF).contains(low));
        let len = if pair.is_some() { 12 } else { 6 };
        let escaped = b[..i].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1;
        let decoded = match pair {
            _ if escaped => None,
            Some(low) => char::decode_utf16([unit, low]).next().and_then(Result::ok),
            None if (0xD800..=0xDFFF).contains(&unit) => None,
            None if unit <= 0x1F || (0x7F..=0x9F).contains(&unit) => None,
            None if javascript && (unit < 0x80 || unit == 0x2028 || unit == 0x2029) => None,
            None => char::from_u32(u32::from(unit)),
        };
        if let Some(c) = decoded {
            out.push_str(&s[copied..i]);
            out.push(c);
            copied = i + len;
        }
        i += len;
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&s[copied..]);
    Some(out)
}

/// The code unit of a `\uXXXX` escape starting at byte `i`.
fn escape_at(b: &[u8], i: usize) -> Option<u16> {
    if b.get(i) != Some(&b'\\') || b.get(i + 1) != Some(&b'u') {
        return None;
    }
    let digits = b.get(i + 2..i + 6)?;
    if !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

/// Whether `s` holds a drive-letter path (`C:\` or `C:/`, the letter not
/// inside a word) or a UNC prefix (`\\server\`, after the start, white
/// space, a quote or `=`, not followed by another backslash).
fn looks_like_windows_path(s: &str) -> bool {
    let b = s.as_bytes();
    let drive = (0..b.len().saturating_sub(2)).any(|i| {
        b[i].is_ascii_alphabetic()
            && b[i + 1] == b':'
            && matches!(b[i + 2], b'\\' | b'/')
            && (i == 0 || !b[i - 1].is_ascii_alphabetic())
    });
    drive
        || s.char_indices().any(|(i, _)| {
            let before = s[..i].chars().next_back();
            let starts =
                before.is_none_or(|c| crate::registry::repairs::js_whitespace(c) || matches!(c, '"' | '\'' | '='));
            starts && unc_at(&s[i..])
        })
}

/// Whether `rest` starts with `\\name\` or `\\name/`, no backslash after it.
fn unc_at(rest: &str) -> bool {
    let Some(after) = rest.strip_prefix("\\\\") else { return false };
    let name = after
        .find(|c: char| crate::registry::repairs::js_whitespace(c) || c == '\\' || c == '/')
        .unwrap_or(after.len());
    if name == 0 {
        return false;
    }
    let tail = &after[name..];
    (tail.starts_with('\\') || tail.starts_with('/')) && !tail[1..].starts_with('\\')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decoded(s: &str) -> String {
        decode_string(s, false).unwrap_or_else(|| s.to_string())
    }

    #[test]
    fn decodes_what_a_model_double_escaped() {
        assert_eq!(decoded(r"caf\u00e9"), "café");
        assert_eq!(decoded(r"\ud83d\ude00!"), "😀!");
        assert_eq!(decoded(r"\u4F60\u597d"), "你好");
    }

    #[test]
    fn leaves_what_is_not_a_slip() {
        // An escaped backslash: a literal `\u00e9` was meant.
        assert_eq!(decoded(r"\\u00e9"), r"\\u00e9");
        assert_eq!(decoded(r"\\\u00e9"), r"\\é");
        // Lone surrogates and control characters stay escaped.
        assert_eq!(decoded(r"\ud83d x \ude00"), r"\ud83d x \ude00");
        assert_eq!(decoded(r"a\u0000b\u001b\u009f\u00e9"), r"a\u0000b\u001b\u009fé");
        // Not four hex digits.
        assert_eq!(decoded(r"\u00g9 \u12"), r"\u00g9 \u12");
        // Windows paths, whole strings left alone.
        assert_eq!(decoded(r"C:\users\u00e9"), r"C:\users\u00e9");
        assert_eq!(decoded(r"copy D:/x \u00e9"), r"copy D:/x \u00e9");
        assert_eq!(decoded(r"dir \\server\share \u00e9"), r"dir \\server\share \u00e9");
        // A letter before the drive, or a UNC prefix followed by another backslash, is no path.
        assert_eq!(decoded(r"ab:\u00e9"), "ab:é");
        assert_eq!(decoded(r"\\a\\ \u00e9"), r"\\a\\ é");
        assert_eq!(decode_string("plain", false), None);
    }

    #[test]
    fn every_string_at_any_depth_and_proto_keys_dropped() {
        let input = json!({"a": [r"\u00e9", 1, {"b": r"\u00e8"}], "__proto__": {"x": 1}, "n": 5});
        let out = decode_input(input.as_object().unwrap(), &[]).unwrap();
        assert_eq!(Value::Object(out), json!({"a": ["é", 1, {"b": "è"}], "n": 5}));
        assert_eq!(decode_input(json!({"a": "x", "n": [1]}).as_object().unwrap(), &[]), None);
        // JavaScript source keeps the escapes whose decoding could change the program.
        let code = json!({"code": r#"const s = "a\u0022b\u2028" + "\u00e9";"#});
        let out = decode_input(code.as_object().unwrap(), &["code".to_string()]).unwrap();
        assert_eq!(out["code"], json!(r#"const s = "a\u0022b\u2028" + "é";"#));
    }
}
