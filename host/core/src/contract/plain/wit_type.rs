//! The WIT type of a parameter or result, as toolhost keeps it: read once
//! from the compiled component's types, checked (no resources, streams or
//! futures; a bounded size), and then the one source of the schema, of the
//! conversion of values both ways, and of the signature shown to people.

use serde::{Deserialize, Serialize};
use wasmtime::component::types::Type;

/// Deepest nesting of WIT types a function may use (each level is about
/// two levels of JSON Schema, which loading caps at 32).
pub(crate) const MAX_TYPE_DEPTH: usize = 12;
/// Most type nodes (fields, cases, elements) one function may use.
pub(crate) const MAX_TYPE_NODES: usize = 2_000;

/// A WIT value type, without names of its own (records and variants are
/// known by their fields and cases).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum WitType {
    Bool,
    S8,
    U8,
    S16,
    U16,
    S32,
    U32,
    S64,
    U64,
    F32,
    F64,
    Char,
    String,
    List(Box<WitType>),
    /// `list<T, N>`: exactly `N` elements.
    FixedList(Box<WitType>, u32),
    Map(Box<WitType>, Box<WitType>),
    Record(Vec<(String, WitType)>),
    Tuple(Vec<WitType>),
    Variant(Vec<(String, Option<WitType>)>),
    Enum(Vec<String>),
    Option(Box<WitType>),
    Result(Option<Box<WitType>>, Option<Box<WitType>>),
    Flags(Vec<String>),
}

/// Why a type cannot be a tool's parameter or result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unsupported {
    #[error("a resource handle (`own` or `borrow`), which JSON cannot carry")]
    Resource,
    #[error("a `future`, which a tool call cannot carry")]
    Future,
    #[error("a `stream`, which a tool call cannot carry")]
    Stream,
    #[error("an `error-context`, which JSON cannot carry")]
    ErrorContext,
    #[error("types nested deeper than {MAX_TYPE_DEPTH} levels")]
    TooDeep,
    #[error("more than {MAX_TYPE_NODES} fields, cases and elements in all")]
    TooLarge,
}

impl WitType {
    /// `ty`, if a tool call can carry it; `nodes` counts what the function
    /// uses so far.
    pub(crate) fn of(ty: &Type, nodes: &mut usize) -> Result<WitType, Unsupported> {
        WitType::at(ty, nodes, 0)
    }

    fn at(ty: &Type, nodes: &mut usize, depth: usize) -> Result<WitType, Unsupported> {
        if depth > MAX_TYPE_DEPTH {
            return Err(Unsupported::TooDeep);
        }
        *nodes += 1;
        if *nodes > MAX_TYPE_NODES {
            return Err(Unsupported::TooLarge);
        }
        let inner = |ty: &Type, nodes: &mut usize| WitType::at(ty, nodes, depth + 1);
        let boxed = |ty: &Type, nodes: &mut usize| inner(ty, nodes).map(Box::new);
        Ok(match ty {
            Type::Bool => WitType::Bool,
            Type::S8 => WitType::S8,
            Type::U8 => WitType::U8,
            Type::S16 => WitType::S16,
            Type::U16 => WitType::U16,
            Type::S32 => WitType::S32,
            Type::U32 => WitType::U32,
            Type::S64 => WitType::S64,
            Type::U64 => WitType::U64,
            Type::Float32 => WitType::F32,
            Type::Float64 => WitType::F64,
            Type::Char => WitType::Char,
            Type::String => WitType::String,
            Type::List(list) => WitType::List(boxed(&list.ty(), nodes)?),
            Type::FixedLengthList(list) => WitType::FixedList(boxed(&list.ty(), nodes)?, list.len()),
            Type::Map(map) => WitType::Map(boxed(&map.key(), nodes)?, boxed(&map.value(), nodes)?),
            Type::Record(record) => WitType::Record(
                record.fields().map(|f| Ok((f.name.to_string(), inner(&f.ty, nodes)?))).collect::<Result<_, _>>()?,
            ),
            Type::Tuple(tuple) => WitType::Tuple(tuple.types().map(|t| inner(&t, nodes)).collect::<Result<_, _>>()?),
            Type::Variant(variant) => WitType::Variant(
                variant
                    .cases()
                    .map(|c| Ok((c.name.to_string(), c.ty.as_ref().map(|t| inner(t, nodes)).transpose()?)))
                    .collect::<Result<_, _>>()?,
            ),
            Type::Enum(e) => WitType::Enum(e.names().map(str::to_string).collect()),
            Type::Option(option) => WitType::Option(boxed(&option.ty(), nodes)?),
            Type::Result(result) => WitType::Result(
                result.ok().map(|t| boxed(&t, nodes)).transpose()?,
                result.err().map(|t| boxed(&t, nodes)).transpose()?,
            ),
            Type::Flags(flags) => WitType::Flags(flags.names().map(str::to_string).collect()),
            Type::Own(_) | Type::Borrow(_) => return Err(Unsupported::Resource),
            Type::Future(_) => return Err(Unsupported::Future),
            Type::Stream(_) => return Err(Unsupported::Stream),
            Type::ErrorContext => return Err(Unsupported::ErrorContext),
        })
    }

    /// The type as WIT writes it, records and variants by their shape
    /// (`record { lat: f64, lon: f64 }`), for descriptions.
    pub(crate) fn wit(&self) -> String {
        let list = |items: &mut dyn Iterator<Item = String>| items.collect::<Vec<_>>().join(", ");
        match self {
            WitType::Bool => "bool".into(),
            WitType::S8 => "s8".into(),
            WitType::U8 => "u8".into(),
            WitType::S16 => "s16".into(),
            WitType::U16 => "u16".into(),
            WitType::S32 => "s32".into(),
            WitType::U32 => "u32".into(),
            WitType::S64 => "s64".into(),
            WitType::U64 => "u64".into(),
            WitType::F32 => "f32".into(),
            WitType::F64 => "f64".into(),
            WitType::Char => "char".into(),
            WitType::String => "string".into(),
            WitType::List(t) => format!("list<{}>", t.wit()),
            WitType::FixedList(t, n) => format!("list<{}, {n}>", t.wit()),
            WitType::Map(k, v) => format!("map<{}, {}>", k.wit(), v.wit()),
            WitType::Record(fields) => {
                format!("record {{ {} }}", list(&mut fields.iter().map(|(n, t)| format!("{n}: {}", t.wit()))))
            }
            WitType::Tuple(types) => format!("tuple<{}>", list(&mut types.iter().map(WitType::wit))),
            WitType::Variant(cases) => format!(
                "variant {{ {} }}",
                list(&mut cases.iter().map(|(n, t)| match t {
                    Some(t) => format!("{n}({})", t.wit()),
                    None => n.clone(),
                }))
            ),
            WitType::Enum(names) => format!("enum {{ {} }}", names.join(", ")),
            WitType::Option(t) => format!("option<{}>", t.wit()),
            WitType::Result(ok, err) => match (ok, err) {
                (Some(ok), Some(err)) => format!("result<{}, {}>", ok.wit(), err.wit()),
                (Some(ok), None) => format!("result<{}>", ok.wit()),
                (None, Some(err)) => format!("result<_, {}>", err.wit()),
                (None, None) => "result".into(),
            },
            WitType::Flags(names) => format!("flags {{ {} }}", names.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_written_as_wit_writes_them() {
        let point = WitType::Record(vec![("lat".into(), WitType::F64), ("lon".into(), WitType::F64)]);
        assert_eq!(point.wit(), "record { lat: f64, lon: f64 }");
        let r = WitType::Result(Some(Box::new(WitType::List(Box::new(WitType::String)))), None);
        assert_eq!(r.wit(), "result<list<string>>");
        let v = WitType::Variant(vec![("none".into(), None), ("some".into(), Some(WitType::U8))]);
        assert_eq!(v.wit(), "variant { none, some(u8) }");
    }
}
