//! What a tool declares about itself (`tool-info`), read into a `ToolSpec`:
//! names checked, texts and schemas capped (with a warning for people),
//! input roles checked against the input schema.

use super::tool::{Hints, InputRoles, LoadError, PathAccess, PathField, ToolSpec};
use crate::contract::bindings::toolhost::tool::types as wit;
use crate::contract::bindings::{InterruptBehavior, ToolInfo};
use serde_json::Value;

/// Most aliases a tool keeps; more are dropped with a warning.
pub(crate) const MAX_ALIASES: usize = 8;
/// Longest one-line description, in characters; longer ones are cut.
pub(crate) const MAX_DESCRIPTION: usize = 1_024;
/// Longest model-facing prompt, in characters; longer ones are cut.
pub(crate) const MAX_PROMPT: usize = 32_768;
/// Longest search hint, in characters; longer ones are cut.
pub(crate) const MAX_SEARCH_HINT: usize = 256;
/// Largest input or output schema, in bytes of JSON; larger ones are refused.
pub(crate) const MAX_SCHEMA_BYTES: usize = 64 << 10;
/// Deepest nesting of an input or output schema; deeper ones are refused.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 32;

/// `text` cut to `max` characters, noting the cut in `warnings`.
pub(crate) fn capped(text: String, max: usize, what: &str, warnings: &mut Vec<String>) -> String {
    match text.char_indices().nth(max) {
        None => text,
        Some((at, _)) => {
            warnings.push(format!("its {what} has {} characters; it was cut to {max}", text.chars().count()));
            text[..at].to_string()
        }
    }
}

/// A declared schema, parsed within [`MAX_SCHEMA_BYTES`] and [`MAX_SCHEMA_DEPTH`].
pub(super) fn schema(text: &str, what: &str) -> Result<Value, LoadError> {
    if text.len() > MAX_SCHEMA_BYTES {
        return Err(LoadError::TooLarge(format!(
            "its {what} is {} KiB; at most {} KiB are accepted",
            text.len() >> 10,
            MAX_SCHEMA_BYTES >> 10
        )));
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| LoadError::Invalid(format!("{what} is not JSON: {e}")))?;
    if depth(&value) > MAX_SCHEMA_DEPTH {
        return Err(LoadError::TooLarge(format!("its {what} nests deeper than {MAX_SCHEMA_DEPTH} levels")));
    }
    Ok(value)
}

pub(super) fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

pub(crate) fn parse_info(info: ToolInfo, enabled: bool) -> Result<(ToolSpec, Vec<String>), LoadError> {
    let invalid = LoadError::Invalid;
    check_name(&info.name).map_err(invalid)?;
    let mut warnings = Vec::new();
    let mut aliases = info.aliases;
    if aliases.len() > MAX_ALIASES {
        warnings.push(format!("it declares {} aliases; the first {MAX_ALIASES} are kept", aliases.len()));
        aliases.truncate(MAX_ALIASES);
    }
    for alias in &aliases {
        check_name(alias).map_err(|e| LoadError::Invalid(format!("alias: {e}")))?;
    }
    let input_schema = schema(&info.input_schema, "input schema")?;
    if input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(LoadError::Invalid("input schema must describe a JSON object (`\"type\": \"object\"`)".into()));
    }
    let inputs = input_roles(info.input_roles)?;
    let output_schema = info.output_schema.as_deref().map(|s| schema(s, "output schema")).transpose()?;
    let description = capped(info.description, MAX_DESCRIPTION, "description", &mut warnings);
    let prompt = capped(info.prompt, MAX_PROMPT, "prompt", &mut warnings);
    let search_hint = info.search_hint.map(|h| capped(h, MAX_SEARCH_HINT, "search hint", &mut warnings));
    let spec = ToolSpec {
        name: info.name,
        aliases,
        description,
        prompt,
        search_hint,
        input_schema,
        output_schema,
        max_result_size_chars: info.max_result_size_chars,
        should_defer: info.should_defer,
        always_load: info.always_load,
        cancel_on_interrupt: match info.interrupt_behavior {
            InterruptBehavior::Cancel => true,
            InterruptBehavior::Block => false,
        },
        enabled,
        hints: Hints {
            read_only: info.read_only_hint,
            destructive: info.destructive_hint,
            concurrency_safe: info.concurrency_safe_hint,
        },
        inputs,
        cancels_siblings: info.cancels_siblings_on_failure,
        reuse_instance: info.reuse_instance,
        validates_input: info.validates_input,
        checks_permissions: info.checks_permissions,
    };
    Ok((spec, warnings))
}

/// The checks [`parse_info`] made, on a spec read back from the cache.
pub(crate) fn recheck(spec: &ToolSpec) -> Result<(), String> {
    let within = |text: &str, max: usize| text.char_indices().nth(max).is_none();
    check_name(&spec.name)?;
    if spec.aliases.len() > MAX_ALIASES {
        return Err("too many aliases".into());
    }
    for alias in &spec.aliases {
        check_name(alias)?;
    }
    let texts = [(&spec.description, MAX_DESCRIPTION), (&spec.prompt, MAX_PROMPT)];
    if !texts.iter().all(|(t, max)| within(t, *max))
        || !spec.search_hint.as_deref().is_none_or(|h| within(h, MAX_SEARCH_HINT))
    {
        return Err("a text beyond its cap".into());
    }
    for s in std::iter::once(&spec.input_schema).chain(&spec.output_schema) {
        schema(&s.to_string(), "schema").map_err(|e| e.to_string())?;
    }
    if spec.input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("input schema is not an object schema".into());
    }
    let roles = &spec.inputs;
    if roles.paths.len() + roles.addresses.len() + usize::from(roles.command.is_some()) > MAX_ROLE_FIELDS {
        return Err("too many input roles".into());
    }
    Ok(())
}

/// Most fields a tool may declare for the policy.
pub(super) const MAX_ROLE_FIELDS: usize = 32;

/// The declared input roles, checked: each field a property name or a JSON
/// Pointer, at most [`MAX_ROLE_FIELDS`] of them.
pub(super) fn input_roles(roles: wit::InputRoles) -> Result<InputRoles, LoadError> {
    let count = roles.paths.len() + roles.addresses.len() + usize::from(roles.command.is_some());
    if count > MAX_ROLE_FIELDS {
        return Err(LoadError::Invalid(format!(
            "input roles: {count} fields declared, at most {MAX_ROLE_FIELDS} are allowed"
        )));
    }
    let check = |field: &str| -> Result<(), LoadError> {
        if field.is_empty() || field.len() > 256 || field.contains('\0') {
            return Err(LoadError::Invalid(format!("input roles: `{field}` is not a field name or JSON Pointer")));
        }
        Ok(())
    };
    let mut paths = Vec::with_capacity(roles.paths.len());
    for p in roles.paths {
        check(&p.field)?;
        let access = match p.access {
            wit::PathAccess::Read => PathAccess::Read,
            wit::PathAccess::Search => PathAccess::Search,
            wit::PathAccess::Edit => PathAccess::Edit,
        };
        paths.push(PathField { field: p.field, access });
    }
    for f in roles.command.iter().chain(&roles.addresses) {
        check(f)?;
    }
    Ok(InputRoles { paths, command: roles.command, addresses: roles.addresses })
}

/// Tool names follow the Messages API's rule: 1–64 of `A-Z a-z 0-9 _ -`.
pub(super) fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok { Ok(()) } else { Err(format!("`{name}` is not a valid tool name (1-64 characters from A-Z a-z 0-9 _ -)")) }
}
