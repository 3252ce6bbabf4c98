//! Input repairs a tool declares: a short list of steps over the top-level
//! fields of its input, each with the sentence the model is told when it
//! changes something. The built-ins declare theirs in `builtin.yaml` beside
//! their crate (`plugins/<name>/builtin.yaml`); the pipeline applies whatever
//! is declared (`pipeline/repair.rs`) and knows no tool by name.
//!
//! ```yaml
//! repairs:
//!   keep: when-valid              # or `always` (the default)
//!   note-prefix: "Note:"          # before the steps' notes, if any
//!   steps:
//!     - unwrap: [offset, limit]   # a one-element array becomes its element
//!     - drop: {field: description}
//!     - drop: {field: offset, when: negative}
//!     - move: {from: path, to: file_path, note: "`path` was read as `file_path`."}
//!     - normalize: {field: command, with: [strip-cd-working-directory]}
//! ```

use serde::Deserialize;
use serde_json::{Map, Number, Value};

/// What a tool declares about repairing its input.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct Repairs {
    /// Fields holding JavaScript source: the double-escape repair leaves
    /// the escapes in them as written.
    #[serde(default)]
    pub javascript: Vec<String>,
    /// When the repaired input is used.
    #[serde(default)]
    pub keep: Keep,
    /// Said before the steps' notes, when any step has one to say.
    #[serde(default)]
    pub note_prefix: Option<String>,
    /// Applied in order.
    #[serde(default)]
    pub steps: Vec<Step>,
}

/// When a repaired input replaces the one sent.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Keep {
    /// Whenever a step changed something.
    #[default]
    Always,
    /// Only when the repaired input passes the schema (else the input goes
    /// on as sent, for the schema check to explain).
    WhenValid,
}

/// One repair.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) enum Step {
    /// Each of these fields holding a one-element array gets its element.
    Unwrap(Vec<String>),
    /// A field removed.
    Drop(Drop),
    /// A field's value moved to another field.
    Move(Move),
    /// A string field rewritten by the named normalizers, in order.
    Normalize(Normalize),
}

/// `drop`: the field goes when `when` holds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct Drop {
    pub field: String,
    #[serde(default)]
    pub when: Condition,
    #[serde(default)]
    pub note: Option<String>,
}

/// Which values a `drop` removes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) enum Condition {
    /// Any value.
    #[default]
    Any,
    /// `true` or `"true"`.
    True,
    /// An integer below zero (a number, or a string of digits with a sign).
    Negative,
    /// An integer of zero or less.
    NotPositive,
    /// Exactly this value.
    Equals(Value),
    /// The same string as this other field holds.
    Repeats(String),
}

/// `move`: `from`'s value, when `accept` takes it, goes to `to` when that
/// is absent (as `value` says), and `from` goes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct Move {
    pub from: String,
    pub to: String,
    /// The values that move.
    #[serde(default)]
    pub accept: Accept,
    /// What `to` gets.
    #[serde(default, rename = "as")]
    pub value: Written,
    /// Nothing moves while any of these fields is present.
    #[serde(default)]
    pub unless: Vec<String>,
    /// `to` present and already holding what would be written: `from` goes
    /// as a repeat.
    #[serde(default)]
    pub if_equal: bool,
    /// `from` goes even when it does not move (its value not accepted, or
    /// `to` present).
    #[serde(default)]
    pub drop_unmoved: bool,
    /// Said when it moved.
    #[serde(default)]
    pub note: Option<String>,
    /// Said when it went as a repeat.
    #[serde(default)]
    pub note_if_equal: Option<String>,
}

/// The values a `move` takes.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Accept {
    /// A string.
    #[default]
    String,
    /// A string that is not empty.
    NonEmptyString,
    /// Anything.
    Any,
    /// `true` or `"true"`.
    True,
    /// A number, or a non-empty string of ASCII digits.
    Digits,
    /// An integer above zero (a number, or a string of digits with a sign).
    PositiveInteger,
}

/// What a `move` writes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) enum Written {
    /// The value as sent.
    #[default]
    AsSent,
    /// `true` for `true` or `"true"`, else `false`.
    Boolean,
    /// The integer it holds, as a number.
    Integer,
    /// This value.
    Value(Value),
}

/// `normalize`: a string field rewritten.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct Normalize {
    pub field: String,
    pub with: Vec<Normalizer>,
}

/// A rewrite of a shell command's text.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Normalizer {
    /// A leading `cd <working directory> && ` dropped, when the working
    /// directory is a plain absolute path (one a `cd` needs no quoting for).
    StripCdWorkingDirectory,
    /// Every `\\;` made `\;` (a `find -exec` terminator escaped once too often).
    UnescapeSemicolons,
}

/// What applying the steps made of an input.
pub(crate) struct Applied {
    pub fields: Map<String, Value>,
    pub note: Option<String>,
}

impl Repairs {
    /// The steps applied to `input` (`cwd`: the working directory), `None`
    /// when none changed anything.
    pub(crate) fn apply(&self, input: &Map<String, Value>, cwd: &str) -> Option<Applied> {
        // Without any field a step reads, the input (a whole file, say) is
        // not copied.
        if !self.steps.iter().any(|s| s.reads().iter().any(|k| input.contains_key(k))) {
            return None;
        }
        let mut o = input.clone();
        let mut changed = false;
        let mut notes: Vec<&str> = Vec::new();
        for step in &self.steps {
            let (did, note) = step.apply(&mut o, cwd);
            changed |= did;
            notes.extend(note);
        }
        let note = (!notes.is_empty()).then(|| {
            let said = notes.join(" ");
            match &self.note_prefix {
                Some(prefix) => format!("{prefix} {said}"),
                None => said,
            }
        });
        changed.then_some(Applied { fields: o, note })
    }
}

impl Step {
    /// The fields whose presence lets this step change anything.
    fn reads(&self) -> &[String] {
        match self {
            Step::Unwrap(fields) => fields,
            Step::Drop(d) => std::slice::from_ref(&d.field),
            Step::Move(m) => std::slice::from_ref(&m.from),
            Step::Normalize(n) => std::slice::from_ref(&n.field),
        }
    }

    /// Whether it changed `o`, and its note if it has one to say.
    fn apply<'a>(&'a self, o: &mut Map<String, Value>, cwd: &str) -> (bool, Option<&'a str>) {
        match self {
            Step::Unwrap(fields) => {
                let mut changed = false;
                for field in fields {
                    if let Some(Value::Array(items)) = o.get_mut(field)
                        && items.len() == 1
                    {
                        let item = items.pop().unwrap_or_default();
                        o.insert(field.clone(), item);
                        changed = true;
                    }
                }
                (changed, None)
            }
            Step::Drop(d) => {
                let holds = o.get(&d.field).is_some_and(|v| d.when.holds(v, o));
                if holds {
                    o.remove(&d.field);
                }
                (holds, d.note.as_deref().filter(|_| holds))
            }
            Step::Move(m) => m.apply(o),
            Step::Normalize(n) => {
                let Some(Value::String(text)) = o.get(&n.field) else { return (false, None) };
                let normalized = n.with.iter().fold(text.clone(), |text, with| with.apply(text, cwd));
                if normalized == *text {
                    return (false, None);
                }
                o.insert(n.field.clone(), Value::String(normalized));
                (true, None)
            }
        }
    }
}

impl Condition {
    fn holds(&self, value: &Value, o: &Map<String, Value>) -> bool {
        match self {
            Condition::Any => true,
            Condition::True => is_true(value),
            Condition::Negative => loose_integer(value).is_some_and(|n| n < 0.0),
            Condition::NotPositive => loose_integer(value).is_some_and(|n| n <= 0.0),
            Condition::Equals(expected) => value == expected,
            Condition::Repeats(other) => o.get(other).is_some_and(|v| v.is_string() && v == value),
        }
    }
}

impl Move {
    fn apply(&self, o: &mut Map<String, Value>) -> (bool, Option<&str>) {
        let Some(sent) = o.get(&self.from) else { return (false, None) };
        if self.unless.iter().any(|k| o.contains_key(k)) {
            return (false, None);
        }
        let written = self.accept.takes(sent).then(|| self.value.of(sent)).flatten();
        match (written, o.get(&self.to)) {
            (Some(value), None) => {
                o.remove(&self.from);
                o.insert(self.to.clone(), value);
                (true, self.note.as_deref())
            }
            (Some(value), Some(present)) if self.if_equal && *present == value => {
                o.remove(&self.from);
                (true, self.note_if_equal.as_deref())
            }
            _ if self.drop_unmoved => {
                o.remove(&self.from);
                (true, None)
            }
            _ => (false, None),
        }
    }
}

impl Accept {
    fn takes(&self, value: &Value) -> bool {
        match self {
            Accept::String => value.is_string(),
            Accept::NonEmptyString => value.as_str().is_some_and(|s| !s.is_empty()),
            Accept::Any => true,
            Accept::True => is_true(value),
            Accept::Digits => match value {
                Value::Number(_) => true,
                Value::String(s) => !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()),
                _ => false,
            },
            Accept::PositiveInteger => loose_integer(value).is_some_and(|n| n > 0.0),
        }
    }
}

impl Written {
    fn of(&self, sent: &Value) -> Option<Value> {
        match self {
            Written::AsSent => Some(sent.clone()),
            Written::Boolean => Some(Value::Bool(is_true(sent))),
            Written::Integer => loose_integer(sent).map(number),
            Written::Value(value) => Some(value.clone()),
        }
    }
}

impl Normalizer {
    fn apply(self, text: String, cwd: &str) -> String {
        match self {
            Normalizer::StripCdWorkingDirectory => match text.strip_prefix(&format!("cd {cwd} && ")) {
                Some(rest) if plain_path(cwd) => rest.to_string(),
                _ => text,
            },
            Normalizer::UnescapeSemicolons => text.replace("\\\\;", "\\;"),
        }
    }
}

/// `true` or `"true"` (Claude Code's `Rx(v) === true`).
fn is_true(value: &Value) -> bool {
    *value == Value::Bool(true) || *value == "true"
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
pub(crate) fn number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
        Value::from(f as i64)
    } else {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

/// An absolute path a `cd` needs no quoting for (Claude Code's
/// `/^(?:\/|[A-Za-z]:[\\/])[^\s"'`$;&|<>*?(){}[\]!#]{0,1023}$/`).
pub(crate) fn plain_path(path: &str) -> bool {
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
pub(crate) fn js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn repairs(yaml: &str) -> Repairs {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn apply(r: &Repairs, input: Value) -> Option<(Value, Option<String>)> {
        r.apply(input.as_object().unwrap(), "/w").map(|a| (Value::Object(a.fields), a.note))
    }

    #[test]
    fn steps_apply_in_order_with_their_notes() {
        let r = repairs(
            "note-prefix: 'Note:'\nsteps:\n  - move: {from: a, to: b, note: 'a is b.'}\n  - drop: {field: b, when: {equals: x}, note: 'b went.'}\n  - drop: {field: c, note: 'c went.'}\n",
        );
        assert_eq!(apply(&r, json!({"a": "x"})), Some((json!({}), Some("Note: a is b. b went.".into()))));
        assert_eq!(
            apply(&r, json!({"a": "y", "c": 1})),
            Some((json!({"b": "y"}), Some("Note: a is b. c went.".into())))
        );
        assert_eq!(apply(&r, json!({"a": 1})), None, "a moves only as a string");
        assert_eq!(apply(&r, json!({"z": 1})), None, "no field a step reads");
    }

    #[test]
    fn moves_take_what_they_accept_and_write_what_they_declare() {
        let r =
            repairs("steps:\n  - move: {from: n, to: m, accept: positive-integer, as: integer, drop-unmoved: true}\n");
        assert_eq!(apply(&r, json!({"n": " 7 "})), Some((json!({"m": 7}), None)));
        assert_eq!(apply(&r, json!({"n": "-7"})), Some((json!({}), None)), "not accepted: dropped");
        assert_eq!(apply(&r, json!({"n": 3, "m": 1})), Some((json!({"m": 1}), None)), "target present: dropped");
        let r = repairs(
            "steps:\n  - move: {from: f, to: mode, accept: 'true', as: {value: all}, if-equal: true, note-if-equal: 'again'}\n",
        );
        assert_eq!(apply(&r, json!({"f": "true"})), Some((json!({"mode": "all"}), None)));
        assert_eq!(apply(&r, json!({"f": true, "mode": "all"})), Some((json!({"mode": "all"}), Some("again".into()))));
        assert_eq!(apply(&r, json!({"f": true, "mode": "some"})), None);
        assert_eq!(apply(&r, json!({"f": false})), None);
        let r = repairs("steps:\n  - move: {from: a, to: b, unless: [c]}\n");
        assert_eq!(apply(&r, json!({"a": "x", "c": "y"})), None);
    }

    #[test]
    fn normalizers_and_unwrapping() {
        let r = repairs(
            "steps:\n  - unwrap: [l]\n  - normalize: {field: cmd, with: [strip-cd-working-directory, unescape-semicolons]}\n",
        );
        assert_eq!(apply(&r, json!({"l": [1]})), Some((json!({"l": 1}), None)));
        assert_eq!(apply(&r, json!({"l": [1, 2]})), None);
        assert_eq!(apply(&r, json!({"cmd": "cd /w && ls \\\\;"})), Some((json!({"cmd": "ls \\;"}), None)));
        assert_eq!(apply(&r, json!({"cmd": "cd /x && ls"})), None);
    }

    #[test]
    fn a_declaration_with_an_unknown_key_or_step_does_not_read() {
        for yaml in [
            "steps:\n  - rename: {from: a, to: b}\n",
            "steps:\n  - drop: {field: a, because: x}\n",
            "keep: sometimes\n",
            "notes: x\n",
        ] {
            assert!(serde_saphyr::from_str::<Repairs>(yaml).is_err(), "{yaml}");
        }
        assert!(repairs("{}").steps.is_empty());
    }
}
