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
//! - **Declared by the tool** ([`Repairs`]): the built-ins declare the
//!   repairs Claude Code makes to their inputs (its `coerceInput` and
//!   `normalizeToolInput`: names from other tools' or older schemas moved
//!   to the field Claude Code means, a few flags dropped, Bash's command
//!   normalized) in their `builtin.yaml`. A third-party tool declares none:
//!   its `path` is its own. Some are kept only when the repaired input
//!   passes the schema (Claude Code's `GJ`); a note for the model comes with
//!   some of them, appended to a successful text result
//!   (`${content}\n\n${note}`).
//!
//! The typed-JSON layer runs once more after the declared one, so a value a
//! declared repair moved (Bash's `timeout_ms: "5000"`) gets the type Claude
//! Code's schema would have read it as.

use super::call::ToolUse;
use crate::registry::Schema;
use crate::registry::repairs::{Keep, number};
use serde_json::{Map, Number, Value};

mod escapes;

pub(crate) use crate::registry::repairs::Repairs;

/// An input after repair, and the note for the model, if any.
#[derive(Debug, PartialEq)]
pub(crate) struct Repaired {
    pub input: Value,
    pub note: Option<String>,
}

/// What `tool_use`'s input becomes before its schema check, when anything
/// changes. `name`: the tool's own name (not an alias); `declared`: the
/// repairs it declares; `cwd`: the working directory.
pub(crate) fn repair(
    name: &str,
    declared: Option<&Repairs>,
    schema: &Schema,
    tool_use: &ToolUse,
    cwd: &str,
) -> Option<Repaired> {
    let Value::Object(sent) = &tool_use.input else { return None };
    let typed = typed_json_text(sent, &schema.json);
    // Both generic layers, as Claude Code runs them on every input it streams.
    let javascript = declared.map_or(&[][..], |d| &d.javascript[..]);
    let generic = match escapes::decode_input(typed.as_ref().unwrap_or(sent), javascript) {
        Some(decoded) => Some(decoded),
        None => typed,
    };
    let own = declared.and_then(|d| Some((d.apply(generic.as_ref().unwrap_or(sent), cwd)?, d.keep)));
    match own {
        Some((own, keep)) if keep == Keep::Always || schema.check(name, &Value::Object(own.fields.clone())).is_ok() => {
            let fields = typed_json_text(&own.fields, &schema.json).unwrap_or(own.fields);
            Some(Repaired { input: Value::Object(fields), note: own.note })
        }
        _ => generic.map(|fields| Repaired { input: Value::Object(fields), note: None }),
    }
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
