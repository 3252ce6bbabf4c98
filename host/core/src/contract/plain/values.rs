//! A plain function's values between JSON and wasmtime's `Val`, by its WIT
//! types, as `super::schema` describes them: the model's input converted
//! with every range checked (a wrong value is an error naming where it is),
//! the function's result rendered for the model and as structured content.

use super::schema::{NON_FINITE, TAG, VAL};
use super::wit_type::WitType;
use base64::Engine as _;
use serde_json::{Map, Value, json};
use wasmtime::component::Val;

/// Bytes as base64, with padding; the unused bits of the last character
/// are not checked (the schema's pattern cannot check them).
const BYTES: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
);

/// A value that does not fit its type, and where it is (`a.lat`,
/// `items[2]`; empty for the whole input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ValueError {
    pub at: String,
    pub message: String,
}

impl std::fmt::Display for ValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.at.is_empty() {
            true => write!(f, "{}", self.message),
            false => write!(f, "`{}`: {}", self.at, self.message),
        }
    }
}

/// The arguments of a function taking `params`, from the input object.
pub(crate) fn arguments(params: &[(String, WitType)], input: &Value) -> Result<Vec<Val>, ValueError> {
    let Value::Object(fields) = input else {
        return Err(ValueError { at: String::new(), message: "the input is not a JSON object".into() });
    };
    if let Some(unknown) = fields.keys().find(|k| !params.iter().any(|(name, _)| name == *k)) {
        let names: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
        return Err(ValueError {
            at: unknown.clone(),
            message: format!("not a parameter (the parameters are: {})", list(&names)),
        });
    }
    params
        .iter()
        .map(|(name, ty)| match (fields.get(name), ty) {
            (None, WitType::Option(_)) => Ok(Val::Option(None)),
            (None, _) => Err(ValueError { at: name.clone(), message: "missing (it is required)".into() }),
            (Some(value), WitType::Option(inner)) => Ok(Val::Option(Some(Box::new(val(value, inner, name)?)))),
            (Some(value), ty) => val(value, ty, name),
        })
        .collect()
}

fn list(names: &[&str]) -> String {
    if names.is_empty() { "none".into() } else { names.join(", ") }
}

/// `value` as a value of type `ty`, found at `at`.
fn val(value: &Value, ty: &WitType, at: &str) -> Result<Val, ValueError> {
    let wrong = |message: String| ValueError { at: at.to_string(), message };
    let expected = |what: &str| wrong(format!("expected {what}, got {}", kind(value)));
    let child =
        |suffix: &str| if at.is_empty() { suffix.trim_start_matches('.').to_string() } else { format!("{at}{suffix}") };
    Ok(match ty {
        WitType::Bool => Val::Bool(value.as_bool().ok_or_else(|| expected("true or false"))?),
        WitType::S8 => Val::S8(integer(value, at)?),
        WitType::U8 => Val::U8(integer(value, at)?),
        WitType::S16 => Val::S16(integer(value, at)?),
        WitType::U16 => Val::U16(integer(value, at)?),
        WitType::S32 => Val::S32(integer(value, at)?),
        WitType::U32 => Val::U32(integer(value, at)?),
        WitType::S64 => Val::S64(integer(value, at)?),
        WitType::U64 => Val::U64(integer(value, at)?),
        WitType::F32 => {
            let n = value.as_f64().ok_or_else(|| expected("a number"))?;
            let narrow = n as f32;
            if !narrow.is_finite() {
                return Err(wrong(format!("{n} is beyond the range of a 32-bit float")));
            }
            Val::Float32(narrow)
        }
        WitType::F64 => Val::Float64(value.as_f64().ok_or_else(|| expected("a number"))?),
        WitType::Char => {
            let s = value.as_str().ok_or_else(|| expected("a one-character string"))?;
            let mut chars = s.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => return Err(wrong(format!("expected exactly one character, got {}", s.chars().count()))),
            }
        }
        WitType::String => Val::String(value.as_str().ok_or_else(|| expected("a string"))?.to_string()),
        WitType::List(inner) if **inner == WitType::U8 => {
            let s = value.as_str().ok_or_else(|| expected("a base64 string (the bytes)"))?;
            let bytes =
                base64::engine::general_purpose::STANDARD.decode(s).map_err(|e| wrong(format!("not base64 ({e})")))?;
            Val::List(bytes.into_iter().map(Val::U8).collect())
        }
        WitType::List(inner) => {
            let items = value.as_array().ok_or_else(|| expected("an array"))?;
            Val::List(elements(items, inner, at)?)
        }
        WitType::FixedList(inner, n) => {
            let items = value.as_array().ok_or_else(|| expected("an array"))?;
            if items.len() != *n as usize {
                return Err(wrong(format!("expected exactly {n} elements, got {}", items.len())));
            }
            Val::FixedLengthList(elements(items, inner, at)?)
        }
        WitType::Map(key, item) if **key == WitType::String => {
            let map = value.as_object().ok_or_else(|| expected("an object"))?;
            let pairs = map.iter().map(|(k, v)| Ok((Val::String(k.clone()), val(v, item, &child(&format!(".{k}")))?)));
            Val::Map(pairs.collect::<Result<_, _>>()?)
        }
        WitType::Map(key, item) => {
            let pairs = value.as_array().ok_or_else(|| expected("an array of [key, value] pairs"))?;
            let mut out = Vec::with_capacity(pairs.len());
            for (i, pair) in pairs.iter().enumerate() {
                let at = child(&format!("[{i}]"));
                match pair.as_array().map(Vec::as_slice) {
                    Some([k, v]) => out.push((val(k, key, &format!("{at}[0]"))?, val(v, item, &format!("{at}[1]"))?)),
                    _ => return Err(ValueError { at, message: "expected a [key, value] pair".into() }),
                }
            }
            Val::Map(out)
        }
        WitType::Record(fields) => {
            let object = value.as_object().ok_or_else(|| expected("an object"))?;
            if let Some(unknown) = object.keys().find(|k| !fields.iter().any(|(name, _)| name == *k)) {
                let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
                return Err(ValueError {
                    at: child(&format!(".{unknown}")),
                    message: format!("not a field (the fields are: {})", list(&names)),
                });
            }
            let mut out = Vec::with_capacity(fields.len());
            for (name, ty) in fields {
                let at = child(&format!(".{name}"));
                let field = object.get(name).ok_or_else(|| ValueError { at: at.clone(), message: "missing".into() })?;
                out.push((name.clone(), val(field, ty, &at)?));
            }
            Val::Record(out)
        }
        WitType::Tuple(types) => {
            let items = value.as_array().ok_or_else(|| expected("an array"))?;
            if items.len() != types.len() {
                return Err(wrong(format!("expected exactly {} elements, got {}", types.len(), items.len())));
            }
            let vals = items.iter().zip(types).enumerate().map(|(i, (v, t))| val(v, t, &child(&format!("[{i}]"))));
            Val::Tuple(vals.collect::<Result<_, _>>()?)
        }
        WitType::Variant(cases) => {
            let (name, payload) = case(value, cases.iter().map(|(n, t)| (n.as_str(), t.as_ref())), at)?;
            Val::Variant(name.to_string(), payload)
        }
        WitType::Enum(names) => {
            let s = value.as_str().ok_or_else(|| expected("a string"))?;
            if !names.iter().any(|n| n == s) {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                return Err(wrong(format!("`{s}` is not one of: {}", list(&names))));
            }
            Val::Enum(s.to_string())
        }
        WitType::Option(inner) => match value {
            Value::Null => Val::Option(None),
            other => Val::Option(Some(Box::new(val(other, inner, at)?))),
        },
        WitType::Result(ok, err) => {
            let cases = [("ok", ok.as_deref()), ("err", err.as_deref())];
            match case(value, cases.into_iter(), at)? {
                ("ok", payload) => Val::Result(Ok(payload)),
                (_, payload) => Val::Result(Err(payload)),
            }
        }
        WitType::Flags(names) => {
            let items = value.as_array().ok_or_else(|| expected("an array of flag names"))?;
            let mut set: Vec<String> = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let at = child(&format!("[{i}]"));
                let flag = item.as_str().filter(|s| names.iter().any(|n| n == s)).ok_or_else(|| {
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    ValueError { at: at.clone(), message: format!("expected one of: {}", list(&names)) }
                })?;
                if set.iter().any(|s| s == flag) {
                    return Err(ValueError { at, message: format!("`{flag}` is given twice") });
                }
                set.push(flag.to_string());
            }
            Val::Flags(set)
        }
    })
}

fn elements(items: &[Value], ty: &WitType, at: &str) -> Result<Vec<Val>, ValueError> {
    items.iter().enumerate().map(|(i, v)| val(v, ty, &format!("{at}[{i}]"))).collect()
}

/// A tagged case (`{"tag": name, "val": payload}`) among `cases`.
fn case<'a>(
    value: &Value,
    mut cases: impl Iterator<Item = (&'a str, Option<&'a WitType>)>,
    at: &str,
) -> Result<(&'a str, Option<Box<Val>>), ValueError> {
    let wrong = |message: String| ValueError { at: at.to_string(), message };
    let object =
        value.as_object().ok_or_else(|| wrong(format!("expected an object with `{TAG}`, got {}", kind(value))))?;
    let tag =
        object.get(TAG).and_then(Value::as_str).ok_or_else(|| wrong(format!("`{TAG}` is missing or not a string")))?;
    let all: Vec<(&str, Option<&WitType>)> = cases.by_ref().collect();
    let Some(&(name, payload)) = all.iter().find(|(n, _)| *n == tag) else {
        let names: Vec<&str> = all.iter().map(|(n, _)| *n).collect();
        return Err(wrong(format!("`{tag}` is not one of: {}", list(&names))));
    };
    if let Some(extra) = object.keys().find(|k| *k != TAG && (*k != VAL || payload.is_none())) {
        return Err(wrong(format!("`{extra}` does not belong with `{TAG}: {tag}`")));
    }
    let at_val = if at.is_empty() { VAL.to_string() } else { format!("{at}.{VAL}") };
    let payload = match payload {
        None => None,
        Some(ty) => {
            let v =
                object.get(VAL).ok_or_else(|| wrong(format!("`{VAL}` is missing (the `{tag}` case carries one)")))?;
            Some(Box::new(val(v, ty, &at_val)?))
        }
    };
    Ok((name, payload))
}

/// An integer of the target width, from a JSON integer (or a float with no
/// fraction) in its range.
fn integer<T: TryFrom<i64> + TryFrom<u64>>(value: &Value, at: &str) -> Result<T, ValueError> {
    let wrong = |message: String| ValueError { at: at.to_string(), message };
    let out_of_range = || wrong(format!("{value} is out of range for this integer type"));
    if let Some(n) = value.as_u64() {
        return T::try_from(n).map_err(|_| out_of_range());
    }
    if let Some(n) = value.as_i64() {
        return T::try_from(n).map_err(|_| out_of_range());
    }
    match value.as_f64() {
        Some(f) if f.fract() == 0.0 && f >= i64::MIN as f64 && f < u64::MAX as f64 => {
            let fits = if f < 0.0 { T::try_from(f as i64).ok() } else { T::try_from(f as u64).ok() };
            fits.ok_or_else(out_of_range)
        }
        Some(_) => Err(wrong(format!("expected an integer, got {value}"))),
        None => Err(wrong(format!("expected an integer, got {}", kind(value)))),
    }
}

/// What a JSON value is, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value of type `ty` as JSON (as the schemas describe it).
pub(crate) fn json(value: &Val, ty: &WitType) -> Value {
    match (value, ty) {
        (Val::Bool(b), _) => json!(b),
        (Val::S8(n), _) => json!(n),
        (Val::U8(n), _) => json!(n),
        (Val::S16(n), _) => json!(n),
        (Val::U16(n), _) => json!(n),
        (Val::S32(n), _) => json!(n),
        (Val::U32(n), _) => json!(n),
        (Val::S64(n), _) => json!(n),
        (Val::U64(n), _) => json!(n),
        (Val::Float32(f), _) => float(f64::from(*f)),
        (Val::Float64(f), _) => float(*f),
        (Val::Char(c), _) => json!(c.to_string()),
        (Val::String(s), _) => json!(s),
        (Val::List(items), WitType::List(inner)) if **inner == WitType::U8 => {
            let bytes: Vec<u8> = items.iter().map(|v| if let Val::U8(b) = v { *b } else { 0 }).collect();
            json!(BYTES.encode(bytes))
        }
        (Val::List(items) | Val::FixedLengthList(items), WitType::List(inner) | WitType::FixedList(inner, _)) => {
            Value::Array(items.iter().map(|v| json(v, inner)).collect())
        }
        (Val::Map(pairs), WitType::Map(key, item)) if **key == WitType::String => {
            let mut map = Map::new();
            for (k, v) in pairs {
                if let Val::String(k) = k {
                    map.insert(k.clone(), json(v, item));
                }
            }
            Value::Object(map)
        }
        (Val::Map(pairs), WitType::Map(key, item)) => {
            Value::Array(pairs.iter().map(|(k, v)| json!([json(k, key), json(v, item)])).collect())
        }
        (Val::Record(fields), WitType::Record(types)) => {
            Value::Object(fields.iter().zip(types).map(|((name, v), (_, ty))| (name.clone(), json(v, ty))).collect())
        }
        (Val::Tuple(items), WitType::Tuple(types)) => {
            Value::Array(items.iter().zip(types).map(|(v, t)| json(v, t)).collect())
        }
        (Val::Variant(name, payload), WitType::Variant(cases)) => {
            let ty = cases.iter().find(|(n, _)| n == name).and_then(|(_, t)| t.as_ref());
            tagged(name, payload.as_deref().zip(ty))
        }
        (Val::Enum(name), _) => json!(name),
        (Val::Option(None), _) => Value::Null,
        (Val::Option(Some(v)), WitType::Option(inner)) => json(v, inner),
        (Val::Result(r), WitType::Result(ok, err)) => match r {
            Ok(v) => tagged("ok", v.as_deref().zip(ok.as_deref())),
            Err(v) => tagged("err", v.as_deref().zip(err.as_deref())),
        },
        (Val::Flags(names), _) => json!(names),
        // A value that does not match its type cannot come from wasmtime,
        // which lifts by the same types; said plainly rather than guessed.
        (other, ty) => json!(format!("(a value toolhost cannot show: {other:?} for {})", ty.wit())),
    }
}

fn tagged(name: &str, payload: Option<(&Val, &WitType)>) -> Value {
    match payload {
        Some((v, ty)) => json!({TAG: name, VAL: json(v, ty)}),
        None => json!({TAG: name}),
    }
}

fn float(f: f64) -> Value {
    if f.is_nan() {
        json!(NON_FINITE[0])
    } else if f == f64::INFINITY {
        json!(NON_FINITE[1])
    } else if f == f64::NEG_INFINITY {
        json!(NON_FINITE[2])
    } else {
        json!(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point() -> WitType {
        WitType::Record(vec![("lat".into(), WitType::F64), ("lon".into(), WitType::F64)])
    }

    #[test]
    fn arguments_are_converted_with_options_left_out() {
        let params = vec![("a".to_string(), point()), ("unit".to_string(), WitType::Option(Box::new(WitType::String)))];
        let args = arguments(&params, &json!({"a": {"lat": 1.5, "lon": 2}})).unwrap();
        assert_eq!(
            args,
            vec![
                Val::Record(vec![("lat".into(), Val::Float64(1.5)), ("lon".into(), Val::Float64(2.0))]),
                Val::Option(None)
            ]
        );
        let e = arguments(&params, &json!({"a": {"lat": 1}})).unwrap_err();
        assert_eq!(e.to_string(), "`a.lon`: missing");
        let e = arguments(&params, &json!({"a": {"lat": 1, "lon": 1}, "units": "km"})).unwrap_err();
        assert_eq!(e.to_string(), "`units`: not a parameter (the parameters are: a, unit)");
        assert_eq!(arguments(&params, &json!({})).unwrap_err().to_string(), "`a`: missing (it is required)");
    }

    #[test]
    fn integers_are_checked_against_their_width() {
        let one = |ty: WitType, v: Value| arguments(&[("n".to_string(), ty)], &json!({ "n": v }));
        assert_eq!(one(WitType::U8, json!(255)).unwrap(), vec![Val::U8(255)]);
        assert_eq!(
            one(WitType::U8, json!(256)).unwrap_err().to_string(),
            "`n`: 256 is out of range for this integer type"
        );
        assert!(one(WitType::U8, json!(-1)).is_err());
        assert_eq!(one(WitType::S8, json!(-128)).unwrap(), vec![Val::S8(-128)]);
        assert!(one(WitType::S8, json!(128)).is_err());
        assert_eq!(one(WitType::U64, json!(u64::MAX)).unwrap(), vec![Val::U64(u64::MAX)]);
        assert_eq!(one(WitType::S64, json!(i64::MIN)).unwrap(), vec![Val::S64(i64::MIN)]);
        assert!(one(WitType::S64, json!(u64::MAX)).is_err());
        assert_eq!(one(WitType::U32, json!(3.0)).unwrap(), vec![Val::U32(3)]);
        assert!(one(WitType::U32, json!(3.5)).is_err());
        assert!(one(WitType::F32, json!(1e300)).is_err(), "beyond f32");
        assert_eq!(one(WitType::Char, json!("é")).unwrap(), vec![Val::Char('é')]);
        assert!(one(WitType::Char, json!("ab")).is_err());
    }

    #[test]
    fn variants_results_flags_and_bytes_round_trip() {
        let shape = WitType::Variant(vec![("circle".into(), Some(WitType::F32)), ("dot".into(), None)]);
        let flags = WitType::Flags(vec!["read".into(), "write".into()]);
        let result = WitType::Result(Some(Box::new(WitType::U8)), None);
        let bytes = WitType::List(Box::new(WitType::U8));
        let tuple = WitType::Tuple(vec![WitType::String, WitType::Option(Box::new(WitType::S16))]);
        for (ty, value) in [
            (shape.clone(), json!({"tag": "circle", "val": 2.5})),
            (shape.clone(), json!({"tag": "dot"})),
            (flags.clone(), json!(["write", "read"])),
            (result.clone(), json!({"tag": "ok", "val": 7})),
            (result.clone(), json!({"tag": "err"})),
            (bytes.clone(), json!("AAEC/w==")),
            (tuple.clone(), json!(["x", null])),
            (tuple.clone(), json!(["x", -3])),
        ] {
            let v = val(&value, &ty, "x").unwrap_or_else(|e| panic!("{value}: {e}"));
            assert_eq!(json(&v, &ty), value, "{}", ty.wit());
        }
        assert!(val(&json!({"tag": "dot", "val": 1}), &shape, "s").is_err(), "a payload the case has not");
        assert!(val(&json!({"tag": "square"}), &shape, "s").is_err());
        assert!(val(&json!(["read", "read"]), &flags, "f").is_err());
        assert!(val(&json!("not base64!"), &bytes, "b").is_err());
        assert_eq!(json(&Val::Float64(f64::NAN), &WitType::F64), json!("NaN"));
    }
}
