//! Input slips repaired before the schema check (step 2 of the pipeline), as
//! Claude Code 2.1.328 repairs them.
//!
//! Three layers, in Claude Code's order:
//! - **Typed JSON text, for every tool** (`chunk-k90mh50x.js` `function
//!   Gde(`): a top-level field the tool's schema declares `array`, `object`,
//!   `boolean`, `integer` or `number`, sent as a string of JSON text of that
//!   type, is replaced by the parsed value. A number must read back as the
//!   same text (`"30"` becomes 30; `"30.0"`, `"1e3"` and `" 30"` stay
//!   strings). Claude Code applies this to every tool it calls, MCP tools
//!   included; toolhost does the same for third-party tools, whose schemas
//!   it checks as strictly as the built-ins'.
//! - **Double-escaped `\uXXXX`, for every tool** (`function e0(`): see
//!   [`escapes`].
//! - **Per built-in** (Claude Code's `coerceInput`): names from other tools'
//!   or older schemas and a few flags are moved to the field Claude Code
//!   means, or dropped. Only for the built-ins: a third-party tool's
//!   `path` is its own. For Write, Grep and WebFetch the repair is kept only
//!   when the repaired input passes the schema (Claude Code's `GJ`); a note
//!   for the model comes with some of them, appended to a successful text
//!   result (`${content}\n\n${note}`).
//!
//! Bash's command is normalized as well (Claude Code's `normalizeToolInput`,
//! `case fi.name: {`): a leading `cd <working directory> && ` is dropped
//! (only at the start since 2.1.328; 2.1.88 dropped it anywhere), and `\\;`
//! becomes `\;`.
//!
//! The typed-JSON layer runs once more after the per-tool one, so a value a
//! per-tool repair moved (Bash's `timeout_ms: "5000"`) gets the type Claude
//! Code's schema would have read it as.

use super::call::ToolUse;
use crate::registry::Schema;
use serde_json::{Map, Number, Value};

mod escapes;

/// An input after repair, and the note for the model, if any.
#[derive(Debug, PartialEq)]
pub(crate) struct Repaired {
    pub input: Value,
    pub note: Option<String>,
}

/// What `tool_use`'s input becomes before its schema check, when anything
/// changes. `builtin`: its tool is a built-in (`name` is the tool's own
/// name, not an alias); `cwd`: the working directory.
pub(crate) fn repair(name: &str, builtin: bool, schema: &Schema, tool_use: &ToolUse, cwd: &str) -> Option<Repaired> {
    let Value::Object(sent) = &tool_use.input else { return None };
    let typed = typed_json_text(sent, &schema.json);
    // Both generic layers, as Claude Code runs them on every input it streams.
    // Script's program is JavaScript source (Claude Code treats its own code tool's so).
    let javascript: &[&str] = if builtin && name == crate::registry::SCRIPT { &["code"] } else { &[] };
    let generic = match escapes::decode_input(typed.as_ref().unwrap_or(sent), javascript) {
        Some(decoded) => Some(decoded),
        None => typed,
    };
    let slip = builtin.then(|| per_tool(name, generic.as_ref().unwrap_or(sent), cwd)).flatten();
    match slip {
        Some(slip) if !slip.needs_valid_result || schema.check(name, &Value::Object(slip.fields.clone())).is_ok() => {
            let fields = typed_json_text(&slip.fields, &schema.json).unwrap_or(slip.fields);
            Some(Repaired { input: Value::Object(fields), note: slip.note })
        }
        _ => generic.map(|fields| Repaired { input: Value::Object(fields), note: None }),
    }
}

/// What a per-tool repair made of an input.
struct Slip {
    fields: Map<String, Value>,
    /// Kept only when the result passes the schema (Claude Code's `GJ`).
    needs_valid_result: bool,
    note: Option<String>,
}

/// The built-ins' own repairs (Claude Code 2.1.328's `coerceInput`), `None`
/// when nothing changed.
fn per_tool(name: &str, input: &Map<String, Value>, cwd: &str) -> Option<Slip> {
    // The fields each repair looks at: without any, the input (a Write's
    // whole file, say) is not copied.
    let looks_at: &[&str] = match name {
        "Read" => &["offset", "limit", "length", "description"],
        "Edit" => &["replace_name", "path", "old_str", "new_str"],
        "Write" => &[
            "path",
            "file",
            "file_text",
            "file_content",
            "description",
            "command",
            "new_text",
            "body",
            "text",
            "contents",
        ],
        "Grep" => &["file_path", "-l", "-c", "-r"],
        "Bash" => &["command", "timeout_ms", "command_description", "view_images"],
        "WebFetch" => &["text_content_token_limit", "html_extraction_method", "web_fetch_pdf_extract_text"],
        _ => &[],
    };
    if !looks_at.iter().any(|k| input.contains_key(*k)) {
        return None;
    }
    let mut o = input.clone();
    let (changed, needs_valid_result, note) = match name {
        "Read" => (read(&mut o), false, None),
        "Edit" => (edit(&mut o), false, None),
        "Write" => {
            let notes = write(&mut o);
            let note = (!notes.is_empty())
                .then(|| format!("Note: Write's parameters are named `file_path` and `content`. {}", notes.join(" ")));
            (!notes.is_empty(), true, note)
        }
        "Grep" => {
            let notes = grep(&mut o);
            (!notes.is_empty(), true, (!notes.is_empty()).then(|| format!("Note: {}", notes.join(" "))))
        }
        "Bash" => {
            let normalized = bash_command(&mut o, cwd);
            let (changed, note) = bash(&mut o);
            (normalized || changed, false, note)
        }
        "WebFetch" => (webfetch(&mut o), true, None),
        _ => (false, false, None),
    };
    changed.then_some(Slip { fields: o, needs_valid_result, note })
}

/// JavaScript's `Number(text)` for the integer strings Claude Code accepts
/// (`/^[-+]?\d+$/` once trimmed), and finite numbers (its `WIt`).
fn loose_integer(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64().filter(|f| f.is_finite()),
        Value::String(s) => {
            let t = s.trim();
            let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
            (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse().ok()).flatten()
        }
        _ => None,
    }
}

/// A JSON number for `f`: an integer when it is one.
fn number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
        Value::from(f as i64)
    } else {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

/// Read (`function o2o(`): a one-element array in `offset`/`limit` is
/// unwrapped; a negative `offset` and a `limit` of 0 or less are dropped;
/// `length` becomes `limit` when there is none and it is positive (and is
/// dropped either way); `description` is dropped.
fn read(o: &mut Map<String, Value>) -> bool {
    let mut changed = false;
    for key in ["offset", "limit"] {
        if let Some(Value::Array(items)) = o.get(key)
            && items.len() == 1
        {
            let item = items[0].clone();
            o.insert(key.into(), item);
            changed = true;
        }
    }
    if o.get("offset").and_then(loose_integer).is_some_and(|n| n < 0.0) {
        o.remove("offset");
        changed = true;
    }
    if o.get("limit").and_then(loose_integer).is_some_and(|n| n <= 0.0) {
        o.remove("limit");
        changed = true;
    }
    if let Some(length) = o.remove("length") {
        if !o.contains_key("limit")
            && let Some(n) = loose_integer(&length).filter(|n| *n > 0.0)
        {
            o.insert("limit".into(), number(n));
        }
        changed = true;
    }
    changed | o.remove("description").is_some()
}

/// Edit (`function hHo(`): `replace_name` is read as `replace_all` (true
/// for `true` or `"true"`) when that is absent, and dropped; `path`,
/// `old_str` and `new_str` are read as `file_path`, `old_string` and
/// `new_string` when those are absent and they are strings.
fn edit(o: &mut Map<String, Value>) -> bool {
    let mut changed = false;
    if let Some(value) = o.remove("replace_name") {
        if !o.contains_key("replace_all") {
            let all = value == Value::Bool(true) || value == "true";
            o.insert("replace_all".into(), Value::Bool(all));
        }
        changed = true;
    }
    for (from, to) in [("path", "file_path"), ("old_str", "old_string"), ("new_str", "new_string")] {
        changed |= rename(o, from, to);
    }
    changed
}

/// Moves a string `from` to `to` when `to` is absent.
fn rename(o: &mut Map<String, Value>, from: &str, to: &str) -> bool {
    if o.contains_key(to) || !o.get(from).is_some_and(Value::is_string) {
        return false;
    }
    let value = o.remove(from).unwrap_or_default();
    o.insert(to.into(), value);
    true
}

/// Write (`function bBo(`), with the sentence for each change.
fn write(o: &mut Map<String, Value>) -> Vec<String> {
    const CONTENT_NAMES: [&str; 2] = ["file_text", "file_content"];
    let mut notes = Vec::new();
    if rename(o, "path", "file_path") {
        notes.push("`path` was read as `file_path`.".to_string());
    }
    let given: Vec<&str> = CONTENT_NAMES.into_iter().filter(|k| o.contains_key(*k)).collect();
    if let [only] = given[..]
        && rename(o, only, "content")
    {
        notes.push(format!("`{only}` was read as `content`."));
    }
    if o.remove("description").is_some() {
        notes.push("`description` was ignored.".into());
    }
    if o.get("command").is_some_and(|c| c == "create") {
        o.remove("command");
        notes.push("`command` was ignored.".into());
    }
    let repeats: [(&str, &[&str]); 2] = [
        ("file_path", &["path", "file"]),
        ("content", &["file_text", "file_content", "new_text", "body", "text", "contents"]),
    ];
    for (field, names) in repeats {
        let Some(value) = o.get(field).filter(|v| v.is_string()).cloned() else { continue };
        for name in names {
            if o.get(*name) == Some(&value) {
                o.remove(*name);
                notes.push(format!("`{name}` repeated `{field}` and was ignored."));
            }
        }
    }
    notes
}

/// `true` or `"true"` (Claude Code's `Rx(v) === true`).
fn is_true(value: Option<&Value>) -> bool {
    matches!(value, Some(v) if *v == Value::Bool(true) || *v == "true")
}

/// Grep (`function THn(`), with the sentence for each change.
fn grep(o: &mut Map<String, Value>) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(Value::String(path)) = o.get("file_path").cloned()
        && !path.is_empty()
    {
        let absent = !o.contains_key("path");
        if absent || o.get("path").is_some_and(|p| *p == path) {
            o.remove("file_path");
            o.insert("path".into(), Value::String(path));
            notes.push(format!(
                "Grep's parameter for where to search is named `path`. {}",
                if absent { "`file_path` was read as `path`." } else { "`file_path` repeated `path` and was ignored." }
            ));
        }
    }
    for (flag, mode) in [("-l", "files_with_matches"), ("-c", "count")] {
        if !is_true(o.get(flag)) {
            continue;
        }
        let absent = !o.contains_key("output_mode");
        if absent || o.get("output_mode").is_some_and(|m| m == mode) {
            o.remove(flag);
            o.insert("output_mode".into(), Value::String(mode.into()));
            notes.push(if absent {
                format!("`{flag}` is not a Grep parameter and was read as `output_mode: \"{mode}\"`.")
            } else {
                format!("`{flag}` repeated `output_mode` and was ignored.")
            });
        }
    }
    if is_true(o.get("-r")) {
        o.remove("-r");
        notes.push("`-r` was ignored: Grep always searches a directory recursively.".into());
    }
    notes
}

/// Bash (`function bKo(`): `timeout_ms` (a number or a string of digits)
/// is read as `timeout` when that is absent; `command_description` as
/// `description` (dropped when that is given); `view_images`, which
/// toolhost never offers, is dropped with Claude Code's note.
fn bash(o: &mut Map<String, Value>) -> (bool, Option<String>) {
    let mut changed = false;
    if !o.contains_key("timeout") {
        let usable = match o.get("timeout_ms") {
            Some(Value::Number(_)) => true,
            Some(Value::String(s)) => !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()),
            _ => false,
        };
        if usable {
            let value = o.remove("timeout_ms").unwrap_or_default();
            o.insert("timeout".into(), value);
            changed = true;
        }
    }
    if let Some(description) = o.remove("command_description") {
        if !o.contains_key("description") && description.is_string() {
            o.insert("description".into(), description);
        }
        changed = true;
    }
    let note = o.remove("view_images").map(|_| {
        "view_images: no pictures were shown, because this input is not available here. Read them if you still \
         need them."
            .to_string()
    });
    (changed || note.is_some(), note)
}

/// Bash's command as Claude Code normalizes it: a leading `cd <cwd> && `
/// dropped when `cwd` is a plain absolute path (`function u8n(`, `var ihr
/// = `), and every `\\;` made `\;`.
fn bash_command(o: &mut Map<String, Value>, cwd: &str) -> bool {
    let Some(Value::String(command)) = o.get("command") else { return false };
    let prefix = format!("cd {cwd} && ");
    let rest = match command.strip_prefix(&prefix) {
        Some(rest) if plain_path(cwd) => rest,
        _ => command,
    };
    let normalized = rest.replace("\\\\;", "\\;");
    if normalized == *command {
        return false;
    }
    o.insert("command".into(), Value::String(normalized));
    true
}

/// An absolute path a `cd` needs no quoting for (Claude Code's
/// `/^(?:\/|[A-Za-z]:[\\/])[^\s"'`$;&|<>*?(){}[\]!#]{0,1023}$/`).
fn plain_path(path: &str) -> bool {
    let bytes = path.as_bytes();
    let rest = if let Some(rest) = path.strip_prefix('/') {
        rest
    } else if bytes.len() >= 3 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && matches!(bytes[2], b'/' | b'\\')
    {
        &path[3..]
    } else {
        return false;
    };
    let units: usize = rest.chars().map(char::len_utf16).sum();
    units <= 1023 && !rest.chars().any(|c| js_whitespace(c) || "\"'`$;&|<>*?(){}[]!#".contains(c))
}

/// JavaScript's `\s`.
fn js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

/// WebFetch (`function N6n(`): three fields of other fetch tools dropped.
fn webfetch(o: &mut Map<String, Value>) -> bool {
    let mut changed = false;
    for key in ["text_content_token_limit", "html_extraction_method", "web_fetch_pdf_extract_text"] {
        changed |= o.remove(key).is_some();
    }
    changed
}

/// The typed-JSON-text repair (`function Gde(`): `None` when no field
/// changed.
fn typed_json_text(input: &Map<String, Value>, schema: &Value) -> Option<Map<String, Value>> {
    let properties = schema.get("properties")?.as_object()?;
    let defs = schema.get("$defs").or_else(|| schema.get("definitions"));
    let mut out: Option<Map<String, Value>> = None;
    for (key, declared) in properties {
        let Some(Value::String(text)) = input.get(key) else { continue };
        let Some(kind) = declared_type(declared, defs, 0) else { continue };
        let Ok(parsed) = serde_json::from_str::<Value>(text) else { continue };
        let fits = match (kind.as_str(), &parsed) {
            ("array", Value::Array(_)) | ("object", Value::Object(_)) | ("boolean", Value::Bool(_)) => true,
            ("number", Value::Number(n)) => reads_back(n, text),
            ("integer", Value::Number(n)) => reads_back(n, text) && n.as_f64().is_some_and(|f| f.fract() == 0.0),
            _ => false,
        };
        if fits {
            let value = match parsed {
                Value::Number(n) => number(n.as_f64().unwrap_or(f64::NAN)),
                other => other,
            };
            out.get_or_insert_with(|| input.clone()).insert(key.clone(), value);
        }
    }
    out
}

/// The one type a property declares, as Claude Code reads it (`function
/// rtt(`): its `type`; of a list of types, the first of `array`/`object`,
/// else `string` if listed, else the first other one but `null`; through a
/// local `$ref` and `anyOf`/`oneOf` the same way.
fn declared_type(schema: &Value, defs: Option<&Value>, depth: usize) -> Option<String> {
    if depth > 64 {
        return None;
    }
    let pick = |types: Vec<Option<String>>| {
        let mut compound = None;
        let mut other = None;
        let mut string = false;
        for t in types.into_iter().flatten() {
            match t.as_str() {
                "array" | "object" => compound = compound.or(Some(t)),
                "string" => string = true,
                "null" => {}
                _ => other = other.or(Some(t)),
            }
        }
        compound.or(string.then(|| "string".to_string())).or(other)
    };
    match schema.get("type") {
        Some(Value::String(t)) => return Some(t.clone()),
        Some(Value::Array(types)) => {
            if let Some(t) = pick(types.iter().map(|t| t.as_str().map(String::from)).collect()) {
                return Some(t);
            }
        }
        _ => {}
    }
    if let Some(name) = schema.get("$ref").and_then(Value::as_str).and_then(|r| {
        r.strip_prefix("#/$defs/").or_else(|| r.strip_prefix("#/definitions/")).filter(|n| !n.contains('/'))
    }) {
        return declared_type(defs?.get(name)?, defs, depth + 1);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = schema.get(key)
            && let Some(t) = pick(options.iter().map(|o| declared_type(o, defs, depth + 1)).collect())
        {
            return Some(t);
        }
    }
    None
}

/// Whether `text` is what JavaScript's `String(Number(text))` gives back.
fn reads_back(n: &Number, text: &str) -> bool {
    n.as_f64().is_some_and(|f| f.is_finite() && js_number_text(f) == text)
}

/// JavaScript's `Number.prototype.toString()` of a finite `f`: the shortest
/// digits that read back, in plain notation from 1e-6 up to 1e21 and in
/// exponent notation (`1e+21`, `1.5e-7`) outside.
fn js_number_text(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: `d.ddde-x`.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let n = exp.parse::<i32>().unwrap_or(0) + 1;
    let k = digits.len() as i32;
    let sign = if f < 0.0 { "-" } else { "" };
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e = if e < 0 { format!("-{}", -e) } else { format!("+{e}") };
        match digits.split_at(1) {
            (first, "") => format!("{first}e{e}"),
            (first, rest) => format!("{first}.{rest}e{e}"),
        }
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests;
