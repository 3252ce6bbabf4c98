//! Input schemas every model API accepts.
//!
//! schemars writes JSON Schema 2020-12 as a validator reads it: optional
//! fields typed `["integer", "null"]`, `format: "uint64"`, enums as `oneOf`
//! lists of `const`s or `$ref`s into `$defs`, a root `title` and `$schema`.
//! Function-calling APIs accept less: Gemini refuses type arrays and `$ref`,
//! several MCP clients cannot resolve `$ref`, and models trained on Claude
//! Code's tools know them as plain types with inline enums. [`portable`]
//! rewrites a generated schema into that shape without changing which
//! inputs it accepts, except that an optional field no longer accepts an
//! explicit `null` (leave the field out instead).

use serde_json::Value;

/// The JSON Schema of `T`, portable: every subschema inline, no `$schema`,
/// no root `title` or `description`, optional fields simply not required.
pub fn generate<T: schemars::JsonSchema>() -> Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    portable(schema.to_value())
}

/// Rewrites `schema` into the portable subset (see the module's doc).
pub fn portable(mut schema: Value) -> Value {
    if let Value::Object(root) = &mut schema {
        // The root describes the tool, which its description already does.
        root.remove("$schema");
        root.remove("title");
        root.remove("description");
        root.remove("$defs");
        root.remove("definitions");
    }
    simplify(&mut schema);
    schema
}

fn simplify(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    // An optional field of a non-scalar type: `anyOf: [T, {"type": "null"}]`.
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = map.get(key) {
            let non_null: Vec<&Value> = options.iter().filter(|o| !is_null_schema(o)).collect();
            if non_null.len() == 1 && non_null.len() < options.len() {
                let Value::Object(inner) = non_null[0].clone() else { continue };
                map.remove(key);
                for (k, v) in inner {
                    map.entry(k).or_insert(v);
                }
            }
        }
    }
    // An enum of documented unit variants: `oneOf: [{"const": "a"}, ...]`.
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(options)) = map.get(key)
            && let Some(values) = options.iter().map(|o| o.get("const").cloned()).collect::<Option<Vec<_>>>()
        {
            let all_strings = values.iter().all(Value::is_string);
            map.remove(key);
            if all_strings {
                map.insert("type".into(), Value::String("string".into()));
            }
            map.insert("enum".into(), Value::Array(values));
        }
    }
    if let Some(Value::String(constant)) = map.remove("const") {
        map.insert("type".into(), Value::String("string".into()));
        map.insert("enum".into(), Value::Array(vec![Value::String(constant)]));
    }
    // `type: ["integer", "null"]` -> `type: "integer"`.
    if let Some(Value::Array(types)) = map.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| t.as_str() != Some("null")).cloned().collect();
        if kept.len() == 1 {
            map.insert("type".into(), kept[0].clone());
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    map.remove("format");
    map.remove("nullable");
    if map.get("default").is_some_and(Value::is_null) {
        map.remove("default");
    }
    // Bounds the way every API reads them.
    let integer = map.get("type").and_then(Value::as_str) == Some("integer");
    for (exclusive, inclusive, step) in [("exclusiveMinimum", "minimum", 1), ("exclusiveMaximum", "maximum", -1)] {
        if let Some(bound) = map.get(exclusive).and_then(Value::as_i64)
            && integer
        {
            map.remove(exclusive);
            map.insert(inclusive.into(), Value::from(bound + step));
        }
    }
    for key in ["properties", "patternProperties"] {
        if let Some(Value::Object(properties)) = map.get_mut(key) {
            properties.values_mut().for_each(simplify);
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(inner) = map.get_mut(key) {
            simplify(inner);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(options)) = map.get_mut(key) {
            options.iter_mut().for_each(simplify);
        }
    }
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null") || schema.get("const").is_some_and(Value::is_null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        /// Shows the lines.
        Content,
        /// Shows the files.
        FilesWithMatches,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Plain {
        A,
        B,
    }

    /// Input.
    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Input {
        /// The path.
        path: String,
        /// How many.
        #[schemars(range(min = 1))]
        limit: Option<u64>,
        /// A flag.
        #[serde(default)]
        all: bool,
        /// The mode.
        mode: Option<Mode>,
        plain: Option<Plain>,
        #[serde(rename = "-n")]
        numbers: Option<bool>,
        tags: Option<Vec<String>>,
    }

    #[test]
    fn generated_schemas_are_plain() {
        let schema = generate::<Input>();
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "path": {"description": "The path.", "type": "string"},
                    "limit": {"description": "How many.", "type": "integer", "minimum": 1},
                    "all": {"description": "A flag.", "type": "boolean", "default": false},
                    "mode": {"description": "The mode.", "type": "string", "enum": ["content", "files_with_matches"]},
                    "plain": {"type": "string", "enum": ["a", "b"]},
                    "-n": {"type": "boolean"},
                    "tags": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["path"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn exclusive_integer_bounds_become_inclusive() {
        let s = portable(json!({"type": ["integer", "null"], "exclusiveMinimum": 0, "format": "uint64"}));
        assert_eq!(s, json!({"type": "integer", "minimum": 1}));
        let s = portable(json!({"type": "number", "exclusiveMinimum": 0}));
        assert_eq!(s, json!({"type": "number", "exclusiveMinimum": 0}), "only integers have a next value");
    }
}
