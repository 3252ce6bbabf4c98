//! JSON Schemas of a plain function: its parameters as the tool's input
//! schema, its result as the output schema. Each WIT type maps to the
//! tightest schema that says what it accepts: an integer type's own range,
//! a char one code point, a record every field required and nothing else, a
//! tuple its exact items. How values look is `super::values`; the table is
//! in docs/writing-tools.md.

use super::wit_type::WitType;
use serde_json::{Map, Value, json};

/// The tags of a variant value (`{"tag": "case", "val": payload}`, as jco
/// writes variants in JavaScript).
pub(crate) const TAG: &str = "tag";
pub(crate) const VAL: &str = "val";

/// Base64 with its padding (what `values` decodes, exactly).
pub(crate) const BASE64: &str = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$";

/// The strings a float that is not a number stands for in results (as
/// protobuf's JSON mapping writes them).
pub(crate) const NON_FINITE: [&str; 3] = ["NaN", "Infinity", "-Infinity"];

/// Whether a schema is for the model's input or the tool's output (floats
/// differ: a result may be NaN).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Input,
    Output,
}

/// The input schema of a function taking `params`: an object with one
/// property per parameter, each required but those of `option` type.
pub(crate) fn input(params: &[(String, WitType)]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, ty) in params {
        // A parameter's own `option` is a property that may be left out;
        // anywhere else an `option` is `null` or the value.
        let (schema, optional) = match ty {
            WitType::Option(inner) => (of(inner, Side::Input), true),
            _ => (of(ty, Side::Input), false),
        };
        properties.insert(name.clone(), schema);
        if !optional {
            required.push(json!(name));
        }
    }
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// The output schema of a function returning `result` (the ok value of a
/// `result`), as its structured content: a record is the object itself;
/// any other value is wrapped as `{"result": value}` (structured content
/// is an object). `None` for a function returning nothing.
pub(crate) fn output(result: Option<&WitType>) -> Option<Value> {
    let value = match result? {
        WitType::Result(ok, _) => ok.as_deref()?,
        other => other,
    };
    Some(match value {
        WitType::Record(_) => of(value, Side::Output),
        other => json!({
            "type": "object",
            "properties": {"result": of(other, Side::Output)},
            "required": ["result"],
            "additionalProperties": false,
        }),
    })
}

/// The schema of a value of type `ty` (not a parameter's own `option`).
pub(crate) fn of(ty: &WitType, side: Side) -> Value {
    let integer = |min: i128, max: i128| json!({"type": "integer", "minimum": min, "maximum": max});
    match ty {
        WitType::Bool => json!({"type": "boolean"}),
        WitType::S8 => integer(i8::MIN.into(), i8::MAX.into()),
        WitType::U8 => integer(0, u8::MAX.into()),
        WitType::S16 => integer(i16::MIN.into(), i16::MAX.into()),
        WitType::U16 => integer(0, u16::MAX.into()),
        WitType::S32 => integer(i32::MIN.into(), i32::MAX.into()),
        WitType::U32 => integer(0, u32::MAX.into()),
        WitType::S64 => integer(i64::MIN.into(), i64::MAX.into()),
        WitType::U64 => integer(0, u64::MAX.into()),
        WitType::F32 | WitType::F64 => match side {
            Side::Input => json!({"type": "number"}),
            Side::Output => json!({"anyOf": [{"type": "number"}, {"type": "string", "enum": NON_FINITE}]}),
        },
        WitType::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
        WitType::String => json!({"type": "string"}),
        WitType::List(inner) if **inner == WitType::U8 => {
            json!({"type": "string", "contentEncoding": "base64", "pattern": BASE64, "description": "bytes, base64-encoded"})
        }
        WitType::List(inner) => json!({"type": "array", "items": of(inner, side)}),
        WitType::FixedList(inner, n) => {
            json!({"type": "array", "items": of(inner, side), "minItems": n, "maxItems": n})
        }
        WitType::Map(key, value) if **key == WitType::String => {
            json!({"type": "object", "additionalProperties": of(value, side)})
        }
        WitType::Map(key, value) => json!({
            "type": "array",
            "items": pair(&[(**key).clone(), (**value).clone()], side),
            "description": "key-value pairs",
        }),
        WitType::Record(fields) => {
            let properties: Map<String, Value> = fields.iter().map(|(n, t)| (n.clone(), of(t, side))).collect();
            let required: Vec<&String> = fields.iter().map(|(n, _)| n).collect();
            json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
        }
        WitType::Tuple(types) => pair(types, side),
        WitType::Variant(cases) => {
            let cases = cases.iter().map(|(name, payload)| tagged(name, payload.as_ref(), side));
            json!({"oneOf": cases.collect::<Vec<_>>()})
        }
        WitType::Enum(names) => json!({"type": "string", "enum": names}),
        WitType::Option(inner) => nullable_of(of(inner, side)),
        WitType::Result(ok, err) => json!({"oneOf": [
            tagged("ok", ok.as_deref(), side),
            tagged("err", err.as_deref(), side),
        ]}),
        WitType::Flags(names) => {
            json!({"type": "array", "items": {"type": "string", "enum": names}, "uniqueItems": true})
        }
    }
}

/// `schema` accepting `null` too.
fn nullable_of(schema: Value) -> Value {
    match schema {
        Value::Object(mut map) if map.get("type").is_some_and(Value::is_string) && !map.contains_key("enum") => {
            let ty = map.remove("type").unwrap_or_default();
            map.insert("type".into(), json!([ty, "null"]));
            Value::Object(map)
        }
        other => json!({"anyOf": [other, {"type": "null"}]}),
    }
}

/// An array of exactly `types`, in order.
fn pair(types: &[WitType], side: Side) -> Value {
    let items: Vec<Value> = types.iter().map(|t| of(t, side)).collect();
    if items.is_empty() {
        // Not valid WIT, but the schema stays valid: `prefixItems` may not be empty.
        return json!({"type": "array", "maxItems": 0});
    }
    json!({"type": "array", "prefixItems": items, "items": false, "minItems": types.len(), "maxItems": types.len()})
}

/// One case of a variant or result: `{"tag": name}` with `"val"` when it
/// carries a payload.
fn tagged(name: &str, payload: Option<&WitType>, side: Side) -> Value {
    let tag = json!({"type": "string", "enum": [name]});
    match payload {
        Some(ty) => json!({
            "type": "object",
            "properties": {TAG: tag, VAL: of(ty, side)},
            "required": [TAG, VAL],
            "additionalProperties": false,
        }),
        None => json!({
            "type": "object",
            "properties": {TAG: tag},
            "required": [TAG],
            "additionalProperties": false,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_required_but_options() {
        let point = WitType::Record(vec![("lat".into(), WitType::F64), ("lon".into(), WitType::F64)]);
        let params = vec![
            ("a".to_string(), point.clone()),
            ("b".to_string(), point),
            ("unit".to_string(), WitType::Option(Box::new(WitType::String))),
        ];
        let schema = input(&params);
        assert_eq!(schema["required"], json!(["a", "b"]));
        assert_eq!(schema["properties"]["unit"], json!({"type": "string"}));
        assert_eq!(schema["properties"]["a"]["required"], json!(["lat", "lon"]));
        assert_eq!(schema["additionalProperties"], json!(false));
    }

    #[test]
    fn each_integer_has_its_own_range_and_options_inside_are_of() {
        assert_eq!(of(&WitType::U8, Side::Input), json!({"type": "integer", "minimum": 0, "maximum": 255}));
        assert_eq!(of(&WitType::S64, Side::Input)["minimum"], json!(i64::MIN));
        assert_eq!(of(&WitType::U64, Side::Input)["maximum"], json!(u64::MAX));
        let field = WitType::Record(vec![("x".into(), WitType::Option(Box::new(WitType::U16)))]);
        assert_eq!(of(&field, Side::Input)["properties"]["x"]["type"], json!(["integer", "null"]));
        let e = WitType::Option(Box::new(WitType::Enum(vec!["a".into()])));
        assert_eq!(of(&e, Side::Input), json!({"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]}));
    }

    #[test]
    fn results_are_objects() {
        assert_eq!(output(None), None);
        let text = WitType::Result(Some(Box::new(WitType::String)), Some(Box::new(WitType::String)));
        assert_eq!(output(Some(&text)).unwrap()["properties"]["result"], json!({"type": "string"}));
        assert_eq!(output(Some(&WitType::Result(None, Some(Box::new(WitType::String))))), None);
        let record = WitType::Record(vec![("n".into(), WitType::U32)]);
        assert_eq!(output(Some(&record)).unwrap()["properties"]["n"]["maximum"], json!(u32::MAX));
    }
}
