//! Checkers for the fuzz targets in `fuzz/` that need this crate's insides:
//! what a guest returns across the WIT boundary (its description, outputs,
//! permission decisions) as the host reads it, and where an oversized
//! result lands. Each takes the fuzzer's bytes through `arbitrary`, runs
//! the host's own code on them and panics when an invariant breaks. Not an
//! API: hidden from the docs, changed whenever the checks change.

use crate::contract::bindings::toolhost::tool::types as wit;
use crate::contract::bindings::{ContentBlock, InterruptBehavior, PermissionDecision, ToolInfo, ToolOutput};
use crate::pipeline::result::{self, Content, Streamed, ToolResult};
use crate::policy::ToolCheck;
use crate::registry::{Schema, declare};
use arbitrary::{Result, Unstructured};

/// Strings a description is made of: often one that means something to the
/// checks, else anything.
fn text(u: &mut Unstructured, meaningful: &[&str]) -> Result<String> {
    Ok(match u.int_in_range(0..=3)? {
        0 => u.arbitrary::<String>()?,
        _ => (*u.choose(meaningful)?).to_string(),
    })
}

const LONG_NAME: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
const TOO_LONG: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-x";
const WIDE: &str = "üüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüü";
const NAMES: &[&str] = &["Tool", "Read", "a-b_c", "", LONG_NAME, TOO_LONG, "sp ace"];
const SCHEMAS: &[&str] = &[
    r#"{"type":"object"}"#,
    r#"{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}"#,
    r#"{"type":"array"}"#,
    r#"{"type":"object","properties":{"n":{"type":"integer","minimum":1E2}}}"#,
    r##"{"$ref":"#"}"##,
    r#"{"type":"object","$ref":"http://example.com/s"}"#,
    "not json",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
];
const FIELDS: &[&str] = &["file_path", "/a/b", "command", "url", "", "a\0b"];
const MEDIA: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "image/svg+xml", ""];

fn info(u: &mut Unstructured) -> Result<ToolInfo> {
    let paths = (0..u.int_in_range(0..=3)?)
        .map(|_| {
            Ok(wit::PathField {
                field: text(u, FIELDS)?,
                access: *u.choose(&[wit::PathAccess::Read, wit::PathAccess::Search, wit::PathAccess::Edit])?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let many = u.int_in_range(0..=40)?;
    Ok(ToolInfo {
        name: text(u, NAMES)?,
        aliases: (0..u.int_in_range(0..=10)?).map(|_| text(u, NAMES)).collect::<Result<_>>()?,
        description: match u.int_in_range(0..=2)? {
            0 => WIDE.repeat(20),
            _ => text(u, &["d"])?,
        },
        prompt: text(u, &["p"])?,
        search_hint: if u.arbitrary()? { Some(text(u, &["hint"])?) } else { None },
        input_schema: text(u, SCHEMAS)?,
        output_schema: if u.arbitrary()? { Some(text(u, SCHEMAS)?) } else { None },
        max_result_size_chars: u.arbitrary()?,
        should_defer: u.arbitrary()?,
        always_load: u.arbitrary()?,
        interrupt_behavior: if u.arbitrary()? { InterruptBehavior::Cancel } else { InterruptBehavior::Block },
        read_only_hint: u.arbitrary()?,
        concurrency_safe_hint: u.arbitrary()?,
        destructive_hint: u.arbitrary()?,
        input_roles: wit::InputRoles {
            paths,
            command: if u.arbitrary()? { Some(text(u, FIELDS)?) } else { None },
            addresses: (0..many).map(|_| text(u, FIELDS)).collect::<Result<_>>()?,
        },
        cancels_siblings_on_failure: u.arbitrary()?,
        reuse_instance: u.arbitrary()?,
        validates_input: u.arbitrary()?,
        checks_permissions: u.arbitrary()?,
    })
}

/// A guest's `info` as loading reads it: never a panic; what loading keeps
/// passes the checks a description read back from the cache must pass, and
/// survives the cache's round trip.
pub fn guest_info(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(info) = info(&mut u) else { return };
    let Ok((spec, _warnings)) = declare::parse_info(info, true) else { return };
    if let Err(why) = declare::recheck(&spec) {
        panic!("loading kept a description its own recheck refuses ({why}): {spec:?}");
    }
    let saved = serde_json::to_string(&spec).expect("a spec serializes");
    let back: crate::registry::ToolSpec = serde_json::from_str(&saved).expect("a saved spec reads back");
    assert_eq!(back, spec, "a description changes on its way through the cache");
}

fn output(u: &mut Unstructured) -> Result<ToolOutput> {
    let content = (0..u.int_in_range(0..=4)?)
        .map(|_| {
            Ok(match u.int_in_range(0..=3)? {
                0 => ContentBlock::Text(u.arbitrary::<String>()?),
                1 => ContentBlock::Json(text(u, &["{}", "[1,2]", "{not json", "1E400", "\"\\ud800\""])?),
                2 => ContentBlock::Image(wit::Image { media_type: text(u, MEDIA)?, data: u.arbitrary()? }),
                _ => ContentBlock::Document(wit::Document { media_type: text(u, MEDIA)?, data: u.arbitrary()? }),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let structured =
        if u.arbitrary()? { Some(text(u, &[r#"{"ok":true}"#, r#"{"nope":1}"#, "{", "null"])?) } else { None };
    Ok(ToolOutput { content, structured, is_error: u.arbitrary()? })
}

/// A guest's `call` output as the host maps it to a result: never a panic;
/// a malformed output is one error block; what reaches the model is only
/// text, images of the four image types and PDF documents; a result over
/// its size cap is persisted inside the session's results directory, and
/// what stays is within the cap's preview.
pub fn guest_output(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let (Ok(out), Ok(streamed), Ok(cut), Ok(with_schema), Ok(max), Ok(id)) = (
        output(&mut u),
        u.arbitrary::<String>(),
        u.arbitrary::<bool>(),
        u.arbitrary::<bool>(),
        u.int_in_range(0u64..=5000),
        text(&mut u, &["toolu_1", "../../etc/passwd", "a/b", "", "ü", "..", WIDE]),
    ) else {
        return;
    };
    let guest_says = streamed.contains("malformed")
        || out.content.iter().any(|c| match c {
            ContentBlock::Text(t) | ContentBlock::Json(t) => t.contains("malformed"),
            ContentBlock::Image(i) => i.media_type.contains("malformed"),
            ContentBlock::Document(d) => d.media_type.contains("malformed"),
        })
        || out.structured.as_deref().is_some_and(|s| s.contains("malformed"));
    let schema = with_schema
        .then(|| Schema::compile(serde_json::json!({"type": "object", "required": ["ok"]})).expect("a valid schema"));
    let r = result::from_output("Puppet", &id, Streamed { text: streamed, cut }, out, schema.as_ref());
    for c in &r.content {
        match c {
            Content::Text(_) => {}
            Content::Image { media_type, .. } => {
                assert!(result::IMAGE_TYPES.contains(&media_type.as_str()), "image type {media_type} reached the model")
            }
            Content::Document { media_type, .. } => {
                assert_eq!(media_type, "application/pdf", "document type {media_type} reached the model")
            }
        }
    }
    // The host's own error, not a guest's text saying the same words (found
    // by fuzzing: `regression-guest-says-malformed`).
    if r.is_error && r.text().contains("returned malformed output") && !guest_says {
        assert_eq!(r.content.len(), 1, "{r:?}");
    }
    persisted(r, max);
}

fn persisted(mut r: ToolResult, max: u64) {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("toolhost-fuzz-{}-{n}", std::process::id()));
    let session = crate::Session::ephemeral(&dir);
    let before: usize = r.text().chars().count();
    crate::pipeline::persisted::persist_if_oversized(&mut r, Some(max), &session);
    let after = r.text();
    if before as u64 > max {
        assert!(
            after.chars().count() <= result::PREVIEW_CHARS + 1_000,
            "an oversized result kept {} characters",
            after.chars().count()
        );
    }
    let results = session.results_dir();
    let written = walk(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    for entry in written {
        assert!(entry.starts_with(&results), "{} was written outside {}", entry.display(), results.display());
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A guest's `check-permissions` answer as the host weighs it: a tool that
/// is not trusted never allows itself, and a rewritten input that is not
/// JSON is a denial.
pub fn guest_decision(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(trusted) = u.arbitrary::<bool>() else { return };
    let Ok(decision) = (|| -> Result<PermissionDecision> {
        Ok(match u.int_in_range(0..=3)? {
            0 => PermissionDecision::Allow(if u.arbitrary()? { Some(text(&mut u, &["{}", "{", "[]"])?) } else { None }),
            1 => PermissionDecision::Deny(u.arbitrary::<String>()?),
            2 => PermissionDecision::Ask(wit::AskRequest {
                message: u.arbitrary::<String>()?,
                suggested_rules: u.arbitrary()?,
            }),
            _ => PermissionDecision::Passthrough,
        })
    })() else {
        return;
    };
    let rewrite_is_json = match &decision {
        PermissionDecision::Allow(Some(t)) => serde_json::from_str::<serde_json::Value>(t).is_ok(),
        _ => true,
    };
    match crate::pipeline::permission::tool_check(decision, trusted) {
        ToolCheck::Allow(_) => {
            assert!(trusted, "an untrusted tool allowed itself");
            assert!(rewrite_is_json, "a rewrite that is not JSON was allowed");
        }
        ToolCheck::Deny(_) | ToolCheck::Ask { .. } | ToolCheck::Passthrough => {}
    }
}

/// Schemas the repair stage reads: Bash's, Edit's, Grep's and a loose one.
const REPAIR_SCHEMAS: &[(&str, &str)] = &[
    (
        "Bash",
        r#"{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"},"description":{"type":"string"},"run_in_background":{"type":"boolean"}},"required":["command"],"additionalProperties":false}"#,
    ),
    (
        "Edit",
        r#"{"type":"object","properties":{"file_path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean"}},"required":["file_path","old_string","new_string"],"additionalProperties":false}"#,
    ),
    (
        "Grep",
        r#"{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"},"output_mode":{"enum":["content","files_with_matches","count"]},"-n":{"type":"boolean"},"head_limit":{"type":"number"}},"required":["pattern"],"additionalProperties":false}"#,
    ),
    ("Other", r#"{"type":"object","properties":{"list":{"type":"array"},"obj":{"type":"object"}}}"#),
];

/// A model's input as the repair stage reads it (a byte picking the tool,
/// then a JSON object, or bytes that build one of the pieces the repairs
/// look for): never a panic; the same repair twice; the repaired input is an
/// object; for a third-party tool (the generic layers only) no field but
/// `__proto__` is lost.
pub fn repair_input(data: &[u8]) {
    let Some((&pick, json)) = data.split_first() else { return };
    let input = match serde_json::from_slice::<serde_json::Value>(json) {
        Ok(input) if input.is_object() => input,
        Ok(_) => return,
        // Other bytes build an input of the pieces the repairs look for.
        Err(_) => match repair_value(&mut Unstructured::new(json), 0) {
            Ok(input @ serde_json::Value::Object(_)) => input,
            _ => return,
        },
    };
    let (name, schema) = REPAIR_SCHEMAS[usize::from(pick) % REPAIR_SCHEMAS.len()];
    let schema = Schema::compile(serde_json::from_str(schema).expect("schema")).expect("compiles");
    let builtin = pick & 0x80 != 0;
    let tool_use = crate::pipeline::call::ToolUse { id: "t".into(), name: name.into(), input };
    let declared = builtin.then(|| &crate::registry::builtins::declared(&name.to_lowercase()).repairs);
    let repair = || crate::pipeline::repair::repair(name, declared, &schema, &tool_use, "/w").map(|r| r.input);
    let Some(repaired) = repair() else { return };
    assert!(repaired.is_object(), "a repair made a non-object: {repaired}");
    assert_eq!(repair(), Some(repaired.clone()), "the same input repaired twice differs");
    if !builtin {
        // Only the generic layers: every field the model sent is still there.
        let before = tool_use.input.as_object().expect("object");
        let after = repaired.as_object().expect("object");
        for key in before.keys().filter(|k| *k != "__proto__") {
            assert!(after.contains_key(key), "field {key:?} lost: {} -> {repaired}", tool_use.input);
        }
    }
}

/// Field names the repairs read, and strings made of the pieces they look for.
const REPAIR_KEYS: &[&str] = &[
    "command",
    "timeout_ms",
    "timeout",
    "file_path",
    "path",
    "old_str",
    "new_str",
    "replace_all",
    "pattern",
    "-l",
    "-c",
    "-r",
    "head_limit",
    "list",
    "obj",
    "__proto__",
    "description",
    "content",
    "file_text",
];
const REPAIR_PIECES: &[&str] = &[
    "\\u00e9",
    "\\",
    "\\\\",
    "C:\\",
    "c:/",
    "\\ud83d",
    "\\ude00",
    "\\u0000",
    "\\u009f",
    "\\\\srv\\share\\",
    "x",
    " ",
    "=",
    "\"",
    "[1,2]",
    "{\"a\":1}",
    "true",
    "30",
    "cd /w && ",
    "\\\\;",
    "é",
];

fn repair_value(u: &mut Unstructured, depth: usize) -> Result<serde_json::Value> {
    use serde_json::Value;
    Ok(match if depth == 0 { 5 } else { u.int_in_range(0..=5)? } {
        0 => Value::Bool(u.arbitrary()?),
        1 => Value::from(u.arbitrary::<i32>()?),
        2 | 3 => {
            let mut text = String::new();
            for _ in 0..u.int_in_range(0..=6)? {
                if u.arbitrary()? {
                    text.push_str(u.choose(REPAIR_PIECES)?);
                } else {
                    text.push_str(&u.arbitrary::<String>()?);
                }
            }
            Value::String(text)
        }
        4 if depth < 4 => {
            Value::Array((0..u.int_in_range(0..=3)?).map(|_| repair_value(u, depth + 1)).collect::<Result<_>>()?)
        }
        _ if depth < 4 => {
            let mut map = serde_json::Map::new();
            for _ in 0..u.int_in_range(0..=5)? {
                map.insert(u.choose(REPAIR_KEYS)?.to_string(), repair_value(u, depth + 1)?);
            }
            Value::Object(map)
        }
        _ => Value::Null,
    })
}

/// Field and case names for plain types.
const PLAIN_NAMES: &[&str] = &["a", "b", "tag", "val", "x-y", "é"];

/// A WIT type of a plain function, at most `depth` levels deep.
fn plain_type(u: &mut Unstructured, depth: usize) -> Result<crate::contract::plain::WitType> {
    use crate::contract::plain::WitType as T;
    let leaf =
        [T::Bool, T::S8, T::U8, T::S16, T::U16, T::S32, T::U32, T::S64, T::U64, T::F32, T::F64, T::Char, T::String];
    let pick = u.int_in_range(0..=if depth == 0 { 12 } else { 24 })?;
    if pick <= 12 {
        return Ok(leaf[pick as usize].clone());
    }
    let inner = |u: &mut Unstructured| plain_type(u, depth - 1).map(Box::new);
    let names = |u: &mut Unstructured| -> Result<Vec<String>> {
        let n = u.int_in_range(1..=3)?;
        let mut out: Vec<String> = Vec::new();
        for _ in 0..n {
            let name = (*u.choose(PLAIN_NAMES)?).to_string();
            if !out.contains(&name) {
                out.push(name);
            }
        }
        Ok(out)
    };
    Ok(match pick {
        13 => T::List(inner(u)?),
        14 => T::FixedList(inner(u)?, u.int_in_range(0..=3)?),
        15 => T::Map(if u.arbitrary()? { Box::new(T::String) } else { inner(u)? }, inner(u)?),
        16 => T::Record(names(u)?.into_iter().map(|n| Ok((n, plain_type(u, depth - 1)?))).collect::<Result<_>>()?),
        17 => T::Tuple((0..u.int_in_range(1..=3)?).map(|_| plain_type(u, depth - 1)).collect::<Result<_>>()?),
        18 => T::Variant(
            names(u)?
                .into_iter()
                .map(|n| Ok((n, if u.arbitrary()? { Some(plain_type(u, depth - 1)?) } else { None })))
                .collect::<Result<_>>()?,
        ),
        19 => T::Enum(names(u)?),
        20 | 21 => T::Option(inner(u)?),
        22 => T::Result(
            if u.arbitrary()? { Some(inner(u)?) } else { None },
            if u.arbitrary()? { Some(inner(u)?) } else { None },
        ),
        23 => T::Flags(names(u)?),
        _ => T::List(Box::new(T::U8)),
    })
}

/// A JSON value for `ty`, mostly of its shape, sometimes not.
fn plain_value(u: &mut Unstructured, ty: &crate::contract::plain::WitType) -> Result<serde_json::Value> {
    use crate::contract::plain::WitType as T;
    use serde_json::{Value, json};
    if u.ratio(1, 12)? {
        return Ok(match u.int_in_range(0..=5)? {
            0 => Value::Null,
            1 => json!(u.arbitrary::<i64>()?),
            2 => json!(u.arbitrary::<f64>()?),
            3 => json!(u.arbitrary::<String>()?),
            4 => json!([]),
            _ => json!({}),
        });
    }
    let many = |u: &mut Unstructured, ty: &T, n: usize| -> Result<Value> {
        Ok(Value::Array((0..n).map(|_| plain_value(u, ty)).collect::<Result<_>>()?))
    };
    Ok(match ty {
        T::Bool => json!(u.arbitrary::<bool>()?),
        T::S8 | T::S16 | T::S32 | T::S64 => json!(u.arbitrary::<i64>()? >> u.int_in_range(0..=60)?),
        T::U8 | T::U16 | T::U32 | T::U64 => json!(u.arbitrary::<u64>()? >> u.int_in_range(0..=63)?),
        T::F32 | T::F64 => serde_json::Number::from_f64(u.arbitrary::<f64>()?).map_or(json!(0.5), Value::Number),
        T::Char => json!(u.arbitrary::<char>()?.to_string()),
        T::String => json!(u.arbitrary::<String>()?),
        T::List(inner) if **inner == T::U8 => json!(if u.arbitrary()? { "AAEC/w==" } else { "not base64" }),
        T::List(inner) => {
            let n = u.int_in_range(0..=3)?;
            many(u, inner, n)?
        }
        T::FixedList(inner, n) => {
            let n = *n as usize + usize::from(u.ratio(1, 8)?);
            many(u, inner, n)?
        }
        T::Map(key, item) if **key == T::String => {
            let mut map = serde_json::Map::new();
            for _ in 0..u.int_in_range(0..=2)? {
                map.insert(u.arbitrary()?, plain_value(u, item)?);
            }
            Value::Object(map)
        }
        T::Map(key, item) => Value::Array(
            (0..u.int_in_range(0..=2)?)
                .map(|_| Ok(json!([plain_value(u, key)?, plain_value(u, item)?])))
                .collect::<Result<_>>()?,
        ),
        T::Record(fields) => {
            let mut map = serde_json::Map::new();
            for (name, ty) in fields {
                if !u.ratio(1, 16)? {
                    map.insert(name.clone(), plain_value(u, ty)?);
                }
            }
            Value::Object(map)
        }
        T::Tuple(types) => Value::Array(types.iter().map(|t| plain_value(u, t)).collect::<Result<_>>()?),
        T::Variant(cases) => {
            let (name, payload) = u.choose(cases)?;
            match payload {
                Some(t) => json!({"tag": name, "val": plain_value(u, t)?}),
                None => json!({"tag": name}),
            }
        }
        T::Enum(names) => json!(u.choose(names)?),
        T::Option(inner) => {
            if u.arbitrary()? {
                Value::Null
            } else {
                plain_value(u, inner)?
            }
        }
        T::Result(ok, err) => {
            let (tag, payload) = if u.arbitrary()? { ("ok", ok) } else { ("err", err) };
            match payload {
                Some(t) => json!({"tag": tag, "val": plain_value(u, t)?}),
                None => json!({"tag": tag}),
            }
        }
        T::Flags(names) => {
            Value::Array((0..u.int_in_range(0..=2)?).map(|_| Ok(json!(u.choose(names)?))).collect::<Result<_>>()?)
        }
    })
}

/// A plain function's parameters (types built from the bytes) and an
/// input for them: the schema compiles; converting never panics; what the
/// conversion takes the schema takes too, and what the schema takes the
/// conversion takes but for a number beyond a 32-bit float's range; a
/// converted value written back as JSON converts to the same value.
pub fn plain_values(data: &[u8]) {
    use crate::contract::plain::{schema, values};
    let mut u = Unstructured::new(data);
    let Ok(count) = u.int_in_range(0..=3) else { return };
    let mut params = Vec::new();
    for i in 0..count {
        let Ok(ty) = plain_type(&mut u, 3) else { return };
        params.push((format!("p{i}"), ty));
    }
    let mut input = serde_json::Map::new();
    for (name, ty) in &params {
        if u.ratio(1, 10).unwrap_or(false) {
            continue;
        }
        let value = match (ty, u.arbitrary::<bool>().unwrap_or(false)) {
            (crate::contract::plain::WitType::Option(inner), true) => plain_value(&mut u, inner),
            _ => plain_value(&mut u, ty),
        };
        let Ok(value) = value else { return };
        input.insert(name.clone(), value);
    }
    let input = serde_json::Value::Object(input);
    let compiled = Schema::compile(schema::input(&params)).expect("a plain function's schema compiles");
    let _ = schema::output(params.first().map(|(_, t)| t));
    let accepted = compiled.check("Fuzz", &input).is_ok();
    match values::arguments(&params, &input) {
        Ok(args) => {
            assert!(accepted, "converted what the schema refuses: {input}");
            let back: serde_json::Map<String, serde_json::Value> = params
                .iter()
                .zip(&args)
                .filter(|(_, v)| !matches!(v, wasmtime::component::Val::Option(None)))
                .map(|((name, ty), v)| {
                    let json = match (ty, v) {
                        (crate::contract::plain::WitType::Option(inner), wasmtime::component::Val::Option(Some(v))) => {
                            values::json(v, inner)
                        }
                        _ => values::json(v, ty),
                    };
                    (name.clone(), json)
                })
                .collect();
            let again = values::arguments(&params, &serde_json::Value::Object(back.clone()));
            assert_eq!(again.as_ref().ok(), Some(&args), "{input} -> {args:?} -> {back:?} -> {again:?}");
        }
        Err(e) => assert!(
            !accepted || e.message.contains("32-bit float"),
            "the schema takes {input} and the conversion refuses it: {e}"
        ),
    }
}

/// A Wassette policy file: reading never panics, is the same twice, and
/// what it requests passes the checks any request passes.
pub fn wassette_policy(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let first = crate::grants::wassette::read(text);
    assert_eq!(first, crate::grants::wassette::read(text), "read twice, two ways");
    if let Ok(read) = first {
        read.requests.check().expect("what a policy requests holds");
    }
}

/// A WASI command's parsers: its manifest (reading never panics, and what
/// reads writes back as itself) and a call's input (a run is made of
/// exactly what the input schema accepts, but an argument holding a NUL;
/// no argument of a run holds one).
pub fn command(data: &[u8]) {
    use crate::contract::plain::command::{self, InputError};
    use crate::registry::manifest::Manifest;
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(manifest) = Manifest::read(text) {
        assert_eq!(Manifest::read(&manifest.text()), Ok(manifest.clone()), "{text:?} -> {:?}", manifest.text());
    }
    let Ok(input) = serde_json::from_str::<serde_json::Value>(text) else { return };
    let compiled = Schema::compile(command::input_schema()).expect("a command's schema compiles");
    let accepted = compiled.check("Fuzz", &input).is_ok();
    match command::run_of(&input) {
        Ok((args, _)) => {
            assert!(accepted, "ran what the schema refuses: {input}");
            assert!(args.len() <= command::MAX_ARGS && args.iter().all(|a| !a.contains('\0')), "{input}");
        }
        Err(InputError::Nul(_)) => {}
        Err(e) => assert!(!accepted, "the schema takes {input} and the run refuses it: {e}"),
    }
}

/// A component's `package-docs` section: reading never panics.
pub fn package_docs(data: &[u8]) {
    let mut docs = crate::contract::plain::Docs::default();
    docs.add(data);
    let _ = docs.of(Some("a"), "b");
}
