//! Input validation against a tool's JSON Schema, with messages a model can act on.

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

/// A compiled schema.
pub struct Schema {
    /// The schema as JSON.
    pub json: Value,
    validator: jsonschema::Validator,
    /// Why the tool's schema could not be compiled, if it could not.
    broken: Option<String>,
}

/// Starts building, on a thread of its own, what the first
/// [`Schema::compile`] of the process needs before anything else: the
/// validator of the meta-schema (JSON Schema 2020-12's, with its
/// vocabularies), which every schema is checked against. That is about
/// a fifth of a one-shot `toolhost call`'s own work; started at once, it
/// overlaps loading the tools and the called one's component.
pub fn prepare_schema_checks() {
    let spawned = std::thread::Builder::new().name("toolhost-schemas".into()).spawn(|| {
        let _ = jsonschema::meta::is_valid(&serde_json::json!({"type": "object"}));
    });
    if let Err(e) = spawned {
        tracing::debug!(error = %e, "could not start the meta-schema's thread; it is built at first use");
    }
}

impl Schema {
    /// Compiles `json`; an invalid schema is an error naming what is wrong.
    pub fn compile(json: Value) -> Result<Schema, SchemaError> {
        let validator = jsonschema::options()
            .should_validate_formats(false)
            .build(&json)
            .map_err(|e| SchemaError::Invalid(e.to_string()))?;
        Ok(Schema { json, validator, broken: None })
    }

    /// A schema that refuses every input, saying why: what a tool whose schema
    /// does not compile gets (never a built-in in practice: the tests call
    /// each of them).
    pub fn reject_all(why: String) -> Schema {
        let validator = jsonschema::validator_for(&Value::Bool(false)).expect("`false` is a valid schema");
        Schema { json: Value::Bool(false), validator, broken: Some(why) }
    }

    /// Checks `input`; the error lists every problem, one per line, in the
    /// shape models are used to (`InputValidationError: Read failed due to the
    /// following issue: ...`).
    pub fn check(&self, tool: &str, input: &Value) -> Result<(), SchemaError> {
        if let Some(why) = &self.broken {
            return Err(SchemaError::Broken { tool: tool.to_string(), why: why.clone() });
        }
        if self.validator.is_valid(input) {
            return Ok(());
        }
        let mut problems: Vec<String> = self.validator.iter_errors(input).map(|e| describe(&self.json, &e)).collect();
        problems.dedup();
        Err(SchemaError::Input { tool: tool.to_string(), problems })
    }
}

/// Why a schema does not compile, or an input does not pass one. Each
/// reads as a message a model can act on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The schema is not valid JSON Schema (2020-12).
    #[error("invalid JSON Schema: {0}")]
    Invalid(String),
    /// The tool's own schema did not compile: no input passes it.
    #[error("{tool} cannot be called: its own schema is broken ({why}). This is a bug in the tool.")]
    Broken {
        /// The tool called.
        tool: String,
        /// Why its schema did not compile.
        why: String,
    },
    /// The input breaks the schema.
    #[error("InputValidationError: {tool} failed due to the following {}:\n{}", issues(.problems), .problems.join("\n"))]
    Input {
        /// The tool called.
        tool: String,
        /// Each problem, one line each, naming the field.
        problems: Vec<String>,
    },
}

/// "issue" or "issues", for `problems`.
fn issues(problems: &[String]) -> &'static str {
    if problems.len() == 1 { "issue" } else { "issues" }
}

/// Where `schema` leaves the subset of JSON Schema that Anthropic's,
/// OpenAI's and Gemini's function calling all accept, one problem per line
/// (none: portable). The subset: an object at the root; in every subschema
/// only `type` (one name, never a list), `description`, `enum` (of strings,
/// with `type: "string"`), `properties`, `required`, `items`, `minimum`,
/// `maximum`, `minItems`, `maxItems`, `default`, and `additionalProperties:
/// false`. No `$ref`/`$defs`, `$schema`, `title`, `format`, `anyOf`/`oneOf`/
/// `allOf`, `const` or exclusive bounds. Claude Code's own tools are written
/// this way; models and clients handle them best.
pub fn portability_problems(schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        problems.push("the root is not `\"type\": \"object\"`".to_string());
    }
    portable_at(schema, "", &mut problems);
    problems
}

fn portable_at(schema: &Value, at: &str, problems: &mut Vec<String>) {
    const TYPES: [&str; 6] = ["object", "string", "integer", "number", "boolean", "array"];
    let Value::Object(map) = schema else {
        problems.push(format!("{}: a schema that is not an object", place(at)));
        return;
    };
    for (key, value) in map {
        let ok = match key.as_str() {
            "type" => value.as_str().is_some_and(|t| TYPES.contains(&t)),
            "description" => value.is_string(),
            "enum" => {
                map.get("type").and_then(Value::as_str) == Some("string")
                    && value.as_array().is_some_and(|v| !v.is_empty() && v.iter().all(Value::is_string))
            }
            "required" => value.as_array().is_some_and(|v| v.iter().all(Value::is_string)),
            "minimum" | "maximum" => value.is_number(),
            "minItems" | "maxItems" => value.is_u64(),
            "default" => !value.is_null(),
            "additionalProperties" => value == &Value::Bool(false),
            "properties" => match value.as_object() {
                Some(properties) => {
                    for (name, sub) in properties {
                        portable_at(sub, &format!("{at}/properties/{name}"), problems);
                    }
                    true
                }
                None => false,
            },
            "items" => {
                portable_at(value, &format!("{at}/items"), problems);
                true
            }
            _ => false,
        };
        if !ok {
            problems.push(format!("{}: `{key}: {value}` is not portable", place(at)));
        }
    }
    if !map.contains_key("type") && !map.contains_key("enum") {
        problems.push(format!("{}: no `type`", place(at)));
    }
}

fn place(pointer: &str) -> String {
    if pointer.is_empty() { "the root".into() } else { pointer.to_string() }
}

fn describe(schema: &Value, error: &jsonschema::ValidationError<'_>) -> String {
    let at = error.instance_path().as_str().to_string();
    let field = if at.is_empty() { "the input".to_string() } else { format!("`{}`", pointer_to_field(&at)) };
    let nested =
        |name: &str| if at.is_empty() { name.to_string() } else { format!("{}.{name}", pointer_to_field(&at)) };
    match error.kind() {
        ValidationErrorKind::Required { property } => {
            format!("The required parameter `{}` is missing", nested(property.as_str().unwrap_or_default()))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => unexpected
            .iter()
            .map(|p| format!("An unexpected parameter `{}` was provided", nested(p)))
            .collect::<Vec<_>>()
            .join("\n"),
        ValidationErrorKind::Type { .. } => {
            let expected = schema
                .pointer(error.schema_path().as_str())
                .map(|t| match t {
                    Value::Array(types) => types.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" or "),
                    other => other.as_str().unwrap_or("another type").to_string(),
                })
                .unwrap_or_else(|| "another type".into());
            if at.is_empty() {
                format!("The input must be a JSON {expected}, but a {} was provided", type_name(error.instance()))
            } else {
                format!(
                    "The parameter {field} type is expected as `{expected}` but provided as `{}`",
                    type_name(error.instance())
                )
            }
        }
        ValidationErrorKind::Enum { options } => {
            format!("The parameter {field} must be one of {options}, but {} was provided", error.instance())
        }
        _ => format!("The parameter {field} is invalid: {error}"),
    }
}

/// `/a/0/b` → `a[0].b`
fn pointer_to_field(pointer: &str) -> String {
    let mut out = String::new();
    for part in pointer.trim_start_matches('/').split('/') {
        let part = part.replace("~1", "/").replace("~0", "~");
        if part.chars().all(|c| c.is_ascii_digit()) && !part.is_empty() {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&part);
        }
    }
    out
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::compile(json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "limit": {"type": ["integer", "null"], "minimum": 1},
                "mode": {"enum": ["a", "b"]}
            },
            "required": ["file_path"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    #[test]
    fn portability_is_the_common_subset() {
        let plain = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "d"},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "n": {"type": "integer", "minimum": 1},
                "tags": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["path"],
            "additionalProperties": false
        });
        assert_eq!(portability_problems(&plain), Vec::<String>::new());
        let generated = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "ReadInput",
            "type": "object",
            "properties": {
                "limit": {"type": ["integer", "null"], "format": "uint64"},
                "mode": {"$ref": "#/$defs/Mode"}
            },
            "$defs": {"Mode": {"type": "string", "enum": ["a"]}}
        });
        let problems = portability_problems(&generated);
        for needle in
            ["`$schema", "`title", "/properties/limit: `type", "/properties/limit: `format", "`$ref", "`$defs"]
        {
            assert!(problems.iter().any(|p| p.contains(needle)), "{needle} in {problems:?}");
        }
    }

    #[test]
    fn messages_name_the_fields() {
        let s = schema();
        assert_eq!(
            s.check("Read", &json!({})).unwrap_err().to_string(),
            "InputValidationError: Read failed due to the following issue:\nThe required parameter `file_path` is missing"
        );
        let e = s.check("Read", &json!({"file_path": 1, "limit": "2", "extra": true})).unwrap_err().to_string();
        assert!(e.contains("The parameter `file_path` type is expected as `string` but provided as `integer`"), "{e}");
        assert!(
            e.contains("The parameter `limit` type is expected as `integer or null` but provided as `string`"),
            "{e}"
        );
        assert!(e.contains("An unexpected parameter `extra` was provided"), "{e}");
        let e = s.check("Read", &json!({"file_path": "x", "limit": 0})).unwrap_err().to_string();
        assert!(e.contains("`limit` is invalid"), "{e}");
        assert!(
            s.check("Read", &json!("text")).unwrap_err().to_string().contains("must be a JSON object, but a string")
        );
        s.check("Read", &json!({"file_path": "x", "limit": null})).unwrap();
    }
}
