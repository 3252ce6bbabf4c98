//! JSON as JavaScript reads it with `JSON.parse` and writes it with
//! `JSON.stringify(value, null, indent)`.
//!
//! Claude Code rewrites a notebook by parsing it into JavaScript values and
//! stringifying them again, so the bytes it leaves on disk follow JavaScript's
//! rules rather than the file's: numbers are doubles printed the way
//! `Number.prototype.toString` prints them (`1.0` becomes `1`, `1e21` becomes
//! `1e+21`), strings are re-escaped (only `"`, `\` and control characters; a
//! lone surrogate as `\udxxx`), an object keeps its keys in insertion order
//! except that array-index keys (`"0"`, `"17"`) come first in numeric order,
//! a repeated key keeps its first place and its last value. This module
//! reproduces those rules so that an edit here writes the same bytes.

use std::collections::HashMap;
use std::fmt::Write as _;

/// Objects and arrays nested deeper than this are refused as not valid JSON
/// (the parser and the writer recurse; notebooks nest a handful of levels).
const MAX_DEPTH: usize = 512;

/// A JSON string, held as `JSON.stringify` writes it: quotes included, with
/// the canonical escapes. Keeping the written form lets a string carry lone
/// surrogates (which JavaScript strings may hold and Rust strings may not),
/// and two strings are equal exactly when their written forms are.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Str(String);

impl Str {
    /// The JSON string for `s`.
    pub fn new(s: &str) -> Str {
        let mut out = String::with_capacity(s.len() + 2);
        out.push('"');
        for c in s.chars() {
            push_char(&mut out, c);
        }
        out.push('"');
        Str(out)
    }

    /// Whether this string equals `s` (JavaScript's `===`).
    pub fn is(&self, s: &str) -> bool {
        self.0.len() >= s.len() + 2 && self.0 == Str::new(s).0
    }

    /// Whether this is the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.len() == 2
    }

    /// The string's text; a lone surrogate becomes U+FFFD.
    pub fn text(&self) -> String {
        let inner = &self.0[1..self.0.len() - 1];
        let mut out = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('b') => out.push('\u{8}'),
                Some('f') => out.push('\u{c}'),
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some('t') => out.push('\t'),
                // The canonical form escapes with `\u` only controls and lone surrogates.
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    let unit = u32::from_str_radix(&hex, 16).unwrap_or(0xfffd);
                    out.push(char::from_u32(unit).unwrap_or('\u{fffd}'));
                }
                Some(other) => out.push(other),
                None => {}
            }
        }
        out
    }

    /// Whether the string is an array index (`"0"`, `"42"`, up to 2^32 - 2),
    /// which a JavaScript object lists before its other keys.
    fn array_index(&self) -> Option<u32> {
        let digits = &self.0[1..self.0.len() - 1];
        let canonical = digits == "0" || (!digits.starts_with('0') && !digits.is_empty() && digits.len() <= 10);
        if !canonical || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse::<u64>().ok().filter(|&n| n < u64::from(u32::MAX)).map(|n| n as u32)
    }
}

/// A JavaScript value that JSON can hold.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Num(f64),
    Str(Str),
    Arr(Vec<Value>),
    Obj(Object),
}

impl Value {
    /// A string value.
    pub fn str(s: &str) -> Value {
        Value::Str(Str::new(s))
    }

    /// JavaScript truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Num(n) => *n != 0.0 && !n.is_nan(),
            Value::Str(s) => !s.is_empty(),
            Value::Arr(_) | Value::Obj(_) => true,
        }
    }

    /// JavaScript's `typeof`, for error messages.
    pub fn type_of(&self) -> &'static str {
        match self {
            Value::Null | Value::Arr(_) | Value::Obj(_) => "object",
            Value::Bool(_) => "boolean",
            Value::Num(_) => "number",
            Value::Str(_) => "string",
        }
    }

    /// JavaScript's `String(value)`.
    pub fn to_js_string(&self) -> String {
        match self {
            Value::Null => "null".into(),
            Value::Bool(b) => b.to_string(),
            Value::Num(n) => number_to_string(*n),
            Value::Str(s) => s.text(),
            Value::Arr(items) => items
                .iter()
                .map(|v| match v {
                    Value::Null => String::new(),
                    other => other.to_js_string(),
                })
                .collect::<Vec<_>>()
                .join(","),
            Value::Obj(_) => "[object Object]".into(),
        }
    }
}

/// A JavaScript object made by `JSON.parse`: keys in insertion order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Object {
    entries: Vec<(Str, Value)>,
}

impl Object {
    /// An object with these entries, in this order.
    pub fn from_entries(entries: Vec<(&str, Value)>) -> Object {
        let mut obj = Object::default();
        for (k, v) in entries {
            obj.set(k, v);
        }
        obj
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        let key = Str::new(key);
        self.entries.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The value under `key`, to change it.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        let key = Str::new(key);
        self.entries.iter_mut().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// JavaScript assignment `obj[key] = value`: an existing key keeps its
    /// place, a new one goes last.
    pub fn set(&mut self, key: &str, value: Value) {
        let key = Str::new(key);
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((key, value)),
        }
    }
}

/// `JSON.parse(text)`, or `None` where it would throw.
pub fn parse(text: &str) -> Option<Value> {
    let mut p = Parser { text, bytes: text.as_bytes(), pos: 0 };
    p.skip_ws();
    let value = p.value(0)?;
    p.skip_ws();
    (p.pos == p.bytes.len()).then_some(value)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, literal: &str) -> Option<()> {
        self.bytes[self.pos..].starts_with(literal.as_bytes()).then(|| self.pos += literal.len())
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => self.string().map(Value::Str),
            b't' => self.eat("true").map(|()| Value::Bool(true)),
            b'f' => self.eat("false").map(|()| Value::Bool(false)),
            b'n' => self.eat("null").map(|()| Value::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn array(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek()? == b']' {
            self.pos += 1;
            return Some(Value::Arr(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth)?);
            self.skip_ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(Value::Arr(items));
                }
                _ => return None,
            }
        }
    }

    fn object(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        let mut entries: Vec<(Str, Value)> = Vec::new();
        // Large objects index their keys, so repeated keys stay cheap to find.
        let mut index: HashMap<Str, usize> = HashMap::new();
        self.skip_ws();
        if self.peek()? == b'}' {
            self.pos += 1;
            return Some(Value::Obj(Object { entries }));
        }
        loop {
            self.skip_ws();
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.string()?;
            self.skip_ws();
            self.eat(":")?;
            self.skip_ws();
            let value = self.value(depth)?;
            let existing = if entries.len() > 8 {
                if index.is_empty() {
                    index.extend(entries.iter().enumerate().map(|(i, (k, _))| (k.clone(), i)));
                }
                index.get(&key).copied()
            } else {
                entries.iter().position(|(k, _)| *k == key)
            };
            match existing {
                Some(i) => entries[i].1 = value,
                None => {
                    if !index.is_empty() {
                        index.insert(key.clone(), entries.len());
                    }
                    entries.push((key, value));
                }
            }
            self.skip_ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    return Some(Value::Obj(Object { entries }));
                }
                _ => return None,
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        // Rust's parser rounds correctly, as JavaScript's does; out of range is ±Infinity.
        self.text[start..self.pos].parse::<f64>().ok().map(Value::Num)
    }

    fn hex4(&mut self) -> Option<u16> {
        let hex = self.text.get(self.pos..self.pos + 4)?;
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.pos += 4;
        u16::from_str_radix(hex, 16).ok()
    }

    fn string(&mut self) -> Option<Str> {
        self.pos += 1;
        let mut out = String::from('"');
        // A high surrogate from a `\u` escape waiting for its low half.
        let mut high: Option<u16> = None;
        fn flush(out: &mut String, high: &mut Option<u16>) {
            if let Some(h) = high.take() {
                let _ = write!(out, "\\u{h:04x}");
            }
        }
        loop {
            let start = self.pos;
            while matches!(self.peek(), Some(b) if b != b'"' && b != b'\\' && b >= 0x20) {
                self.pos += 1;
            }
            if self.pos > start {
                flush(&mut out, &mut high);
                out.push_str(&self.text[start..self.pos]);
            }
            match self.peek()? {
                b'"' => {
                    self.pos += 1;
                    flush(&mut out, &mut high);
                    out.push('"');
                    return Some(Str(out));
                }
                b'\\' => {
                    self.pos += 1;
                    let escaped = self.peek()?;
                    self.pos += 1;
                    let unit = match escaped {
                        b'"' => u16::from(b'"'),
                        b'\\' => u16::from(b'\\'),
                        b'/' => u16::from(b'/'),
                        b'b' => 0x8,
                        b'f' => 0xc,
                        b'n' => 0xa,
                        b'r' => 0xd,
                        b't' => 0x9,
                        b'u' => self.hex4()?,
                        _ => return None,
                    };
                    match unit {
                        0xd800..=0xdbff => {
                            flush(&mut out, &mut high);
                            high = Some(unit);
                        }
                        0xdc00..=0xdfff => match high.take() {
                            Some(h) => {
                                let c = 0x10000 + ((u32::from(h) - 0xd800) << 10) + (u32::from(unit) - 0xdc00);
                                out.push(char::from_u32(c).unwrap_or('\u{fffd}'));
                            }
                            None => {
                                let _ = write!(out, "\\u{unit:04x}");
                            }
                        },
                        _ => {
                            flush(&mut out, &mut high);
                            // Not a surrogate, so a char.
                            push_char(&mut out, char::from_u32(u32::from(unit)).unwrap_or('\u{fffd}'));
                        }
                    }
                }
                // A raw control character.
                _ => return None,
            }
        }
    }
}

/// Appends `c` as `JSON.stringify` writes it inside a string.
fn push_char(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\u{8}' => out.push_str("\\b"),
        '\t' => out.push_str("\\t"),
        '\n' => out.push_str("\\n"),
        '\u{c}' => out.push_str("\\f"),
        '\r' => out.push_str("\\r"),
        c if (c as u32) < 0x20 => {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
        c => out.push(c),
    }
}

/// `JSON.stringify(value, null, indent)`.
pub fn stringify(value: &Value, indent: usize) -> String {
    let mut out = String::new();
    write_value(&mut out, value, indent, 0);
    out
}

fn newline(out: &mut String, indent: usize, level: usize) {
    if indent == 0 {
        return;
    }
    out.push('\n');
    out.extend(std::iter::repeat_n(' ', indent * level));
}

fn write_value(out: &mut String, value: &Value, indent: usize, level: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Num(n) if n.is_finite() => out.push_str(&number_to_string(*n)),
        Value::Num(_) => out.push_str("null"),
        Value::Str(s) => out.push_str(&s.0),
        Value::Arr(items) if items.is_empty() => out.push_str("[]"),
        Value::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, level + 1);
                write_value(out, item, indent, level + 1);
            }
            newline(out, indent, level);
            out.push(']');
        }
        Value::Obj(obj) if obj.entries.is_empty() => out.push_str("{}"),
        Value::Obj(obj) => {
            let mut indexed: Vec<(u32, &(Str, Value))> =
                obj.entries.iter().filter_map(|e| e.0.array_index().map(|i| (i, e))).collect();
            indexed.sort_by_key(|(i, _)| *i);
            let named = obj.entries.iter().filter(|e| e.0.array_index().is_none());
            out.push('{');
            for (i, (key, item)) in indexed.into_iter().map(|(_, e)| e).chain(named).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, level + 1);
                out.push_str(&key.0);
                out.push_str(if indent > 0 { ": " } else { ":" });
                write_value(out, item, indent, level + 1);
            }
            newline(out, indent, level);
            out.push('}');
        }
    }
}

/// `Number.prototype.toString()` in base 10.
pub fn number_to_string(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x == 0.0 {
        return "0".into();
    }
    // Rust's `{:e}` gives the shortest digits that round-trip, as JavaScript
    // uses: d.ddd × 10^e. JavaScript writes 0.ddd × 10^n, n = e + 1.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp = exp.parse::<i32>().unwrap_or(0);
    let digits = even_on_a_tie(x.abs(), digits, exp);
    let k = digits.len() as i32;
    let n = exp + 1;
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = n - 1;
        let _ = write!(out, "e{}{}", if e >= 0 { "+" } else { "-" }, e.abs());
    }
    out
}

/// The shortest digits of `x` (`digits` × 10^(exp + 1 - len)) as JavaScript
/// chooses them: when `x` lies exactly halfway between two shortest
/// candidates that both read back as `x`, the one ending in an even digit
/// (Rust's shortest form may pick the other).
fn even_on_a_tie(x: f64, digits: String, exp: i32) -> String {
    let k = digits.len();
    // Two candidates a unit apart can both read back only when that unit is
    // below the double's precision: 15 digits or more.
    if k < 15 {
        return digits;
    }
    let reads_back = |d: &str| format!("{}.{}e{exp}", &d[..1], &d[1..]).parse::<f64>().ok() == Some(x);
    // A tie needs the other candidate, a unit away in the last place, to
    // read back too; usually neither neighbour does (and this is cheap).
    if ![step(&digits, false), step(&digits, true)].iter().flatten().any(|d| reads_back(d)) {
        return digits;
    }
    // Exact digits of x; a tie is "…5" right after the k-th digit, then zeros.
    let exact = format!("{x:.80e}");
    let (exact_mantissa, exact_exp) = exact.split_once('e').unwrap_or((&exact, "0"));
    let exact_digits: Vec<u8> = exact_mantissa.bytes().filter(u8::is_ascii_digit).collect();
    if exact_exp.parse::<i32>().ok() != Some(exp)
        || exact_digits.get(k) != Some(&b'5')
        || !exact_digits[k + 1..].iter().all(|&d| d == b'0')
    {
        return digits;
    }
    let low: String = exact_digits[..k].iter().map(|&d| d as char).collect();
    let Some(high) = step(&low, true) else { return digits };
    let even = |d: &str| d.bytes().last().is_some_and(|b| (b - b'0').is_multiple_of(2));
    match (reads_back(&low), reads_back(&high)) {
        (true, true) if even(&low) => low,
        (true, true) => high,
        _ => digits,
    }
}

/// `digits` one unit up (or down) in the last place, unless that changes
/// the number of digits or the leading one to zero.
fn step(digits: &str, up: bool) -> Option<String> {
    let (from, to) = if up { (b'9', b'0') } else { (b'0', b'9') };
    let mut out = digits.as_bytes().to_vec();
    for d in out.iter_mut().rev() {
        if *d == from {
            *d = to;
        } else {
            if up {
                *d += 1
            } else {
                *d -= 1
            }
            return (out[0] != b'0').then(|| String::from_utf8(out).ok()).flatten();
        }
    }
    None
}

/// JavaScript's `ToNumber`; `None` is `undefined`.
pub fn to_number(value: Option<&Value>) -> f64 {
    match value {
        None => f64::NAN,
        Some(Value::Null) => 0.0,
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(Value::Num(n)) => *n,
        Some(Value::Obj(_)) => f64::NAN,
        Some(v @ (Value::Str(_) | Value::Arr(_))) => string_to_number(&v.to_js_string()),
    }
}

/// JavaScript's `StringToNumber`.
fn string_to_number(s: &str) -> f64 {
    let js_space = |c: char| {
        matches!(c, '\u{9}'..='\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}')
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}')
    };
    let s = s.trim_matches(js_space);
    if s.is_empty() {
        return 0.0;
    }
    match s {
        "Infinity" | "+Infinity" => return f64::INFINITY,
        "-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    for (prefix, radix) in [("0x", 16), ("0X", 16), ("0o", 8), ("0O", 8), ("0b", 2), ("0B", 2)] {
        if let Some(rest) = s.strip_prefix(prefix) {
            if rest.is_empty() {
                return f64::NAN;
            }
            return rest
                .chars()
                .try_fold(0.0, |acc, c| c.to_digit(radix).map(|d| acc * f64::from(radix) + f64::from(d)))
                .unwrap_or(f64::NAN);
        }
    }
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(i) => (&unsigned[..i], Some(&unsigned[i + 1..])),
        None => (unsigned, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = all_digits(int) && all_digits(frac) && !(int.is_empty() && frac.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && all_digits(e)
    });
    if mantissa_ok && exponent_ok { s.parse::<f64>().unwrap_or(f64::NAN) } else { f64::NAN }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> String {
        stringify(&parse(text).unwrap_or_else(|| panic!("{text} should parse")), 1)
    }

    #[test]
    fn writes_with_one_space_indent_like_json_stringify() {
        let text = r#"{"a": [1, {"b": null}], "c": {}, "d": [], "e": "x"}"#;
        assert_eq!(
            round_trip(text),
            "{\n \"a\": [\n  1,\n  {\n   \"b\": null\n  }\n ],\n \"c\": {},\n \"d\": [],\n \"e\": \"x\"\n}"
        );
        assert_eq!(stringify(&parse("[1,2]").unwrap(), 0), "[1,2]");
    }

    #[test]
    fn numbers_are_printed_as_javascript_prints_doubles() {
        let cases = [
            ("1.0", "1"),
            ("-0", "0"),
            ("1e21", "1e+21"),
            ("1e20", "100000000000000000000"),
            ("123456789012345678901234", "1.2345678901234569e+23"),
            ("0.000001", "0.000001"),
            ("0.0000001", "1e-7"),
            ("1.5e-7", "1.5e-7"),
            ("12.50", "12.5"),
            ("0.1", "0.1"),
            ("-2.5E+3", "-2500"),
            ("9007199254740993", "9007199254740992"),
            ("1e400", "null"),
        ];
        for (input, written) in cases {
            assert_eq!(round_trip(input), written, "{input}");
        }
        assert_eq!(number_to_string(f64::INFINITY), "Infinity");
        assert_eq!(number_to_string(5e-324), "5e-324");
    }

    #[test]
    fn strings_are_re_escaped_canonically() {
        assert_eq!(round_trip(r#""a\/b\u0041\u00e9\u001F\u007f""#), "\"a/bAé\\u001f\u{7f}\"");
        assert_eq!(round_trip(r#""\b\f\n\r\t\"\\""#), r#""\b\f\n\r\t\"\\""#);
        // A pair written as escapes becomes the character; lone halves stay escaped, in lower case.
        assert_eq!(round_trip(r#""\uD83D\uDE00""#), "\"😀\"");
        assert_eq!(round_trip(r#""\uD83Dx\uDE00\uDBFF""#), r#""\ud83dx\ude00\udbff""#);
        assert_eq!(round_trip("\"\u{2028}é😀\""), "\"\u{2028}é😀\"");
        assert_eq!(Str::new("tab\there").text(), "tab\there");
        assert!(parse(r#""\uD800""#).is_some_and(|v| matches!(v, Value::Str(s) if s.text() == "\u{fffd}")));
    }

    #[test]
    fn object_keys_keep_javascript_order() {
        assert_eq!(
            stringify(&parse(r#"{"b":1,"2":2,"a":3,"1":4,"01":5}"#).unwrap(), 0),
            r#"{"1":4,"2":2,"b":1,"a":3,"01":5}"#
        );
        // A repeated key keeps its first place and its last value.
        assert_eq!(stringify(&parse(r#"{"x":1,"y":2,"x":3}"#).unwrap(), 0), r#"{"x":3,"y":2}"#);
        let many: String = (0..20).map(|i| format!("\"k{i}\":{i},")).collect();
        let v = parse(&format!("{{{many}\"k3\":\"again\"}}")).unwrap();
        let Value::Obj(obj) = &v else { panic!("not an object") };
        assert_eq!(obj.get("k3"), Some(&Value::str("again")));
        assert_eq!(obj.entries.len(), 20);
        assert_eq!(
            stringify(&parse(r#"{"4294967295":1,"4294967294":2}"#).unwrap(), 0),
            r#"{"4294967294":2,"4294967295":1}"#
        );
    }

    #[test]
    fn assignment_keeps_an_existing_key_in_place() {
        let mut obj = Object::from_entries(vec![("a", Value::Null), ("b", Value::Null)]);
        obj.set("a", Value::Bool(true));
        obj.set("c", Value::Num(1.0));
        assert_eq!(stringify(&Value::Obj(obj), 0), r#"{"a":true,"b":null,"c":1}"#);
    }

    #[test]
    fn refuses_what_json_parse_refuses() {
        for bad in [
            "",
            " ",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            ".5",
            "+1",
            "-",
            "1e",
            "NaN",
            "'a'",
            "\"a\nb\"",
            "\"\\x\"",
            "\"\\u12\"",
            "{a:1}",
            "[1] 2",
            "\u{feff}{}",
            "tru",
            "nul",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        assert_eq!(parse(" \t\r\n[ ]\n"), Some(Value::Arr(vec![])));
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(parse(&deep), None);
        let fine = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(&fine).is_some());
    }

    #[test]
    fn to_number_coerces_like_javascript() {
        let n = |t: &str| to_number(parse(t).as_ref());
        assert_eq!(n("4"), 4.0);
        assert_eq!(n("\" 5 \""), 5.0);
        assert_eq!(n("\"\""), 0.0);
        assert_eq!(n("\"0x10\""), 16.0);
        assert_eq!(n("\"5.\""), 5.0);
        assert_eq!(n("\".5e1\""), 5.0);
        assert_eq!(n("true"), 1.0);
        assert_eq!(n("null"), 0.0);
        assert_eq!(n("[]"), 0.0);
        assert_eq!(n("[\"7\"]"), 7.0);
        assert!(n("[1,2]").is_nan());
        assert!(n("{}").is_nan());
        assert!(n("\"inf\"").is_nan());
        assert!(n("\"5a\"").is_nan());
        assert!(n("\"0x\"").is_nan());
        assert!(to_number(None).is_nan());
        assert_eq!(n("\"-Infinity\""), f64::NEG_INFINITY);
    }
}
