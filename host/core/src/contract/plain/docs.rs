//! The WIT documentation a component carries: the `package-docs` custom
//! section (a version byte, then JSON) that wit-component writes beside a
//! WIT package, with the doc comments of its worlds, interfaces and
//! functions. Most toolchains drop it when they build a component; where it
//! is present, a function's doc comment describes its tool.

use serde::Deserialize;
use std::collections::BTreeMap;

/// The custom section's name.
pub(crate) const SECTION: &str = "package-docs";
/// Largest section read; a larger one is ignored.
const MAX_SECTION: usize = 1 << 20;

/// Doc comments by function: world-level (`None`) or by interface name.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Docs {
    functions: BTreeMap<(Option<String>, String), String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Package {
    worlds: BTreeMap<String, World>,
    interfaces: BTreeMap<String, Interface>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct World {
    /// Interfaces written in the world (imports, and exports whose name no
    /// import has).
    interfaces: BTreeMap<String, Interface>,
    interface_exports: BTreeMap<String, Interface>,
    funcs: BTreeMap<String, Function>,
    func_exports: BTreeMap<String, Function>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Interface {
    funcs: BTreeMap<String, Function>,
}

/// A function's entry: its docs (the first format), or its docs and
/// stability.
#[derive(Deserialize)]
#[serde(untagged)]
enum Function {
    Text(Option<String>),
    Full {
        #[serde(default)]
        docs: Option<String>,
    },
}

impl Function {
    fn docs(&self) -> Option<&str> {
        match self {
            Function::Text(docs) | Function::Full { docs } => docs.as_deref(),
        }
    }
}

impl Docs {
    /// Reads every `package-docs` section of a component (its own and those
    /// of components inside it). One that does not read is skipped.
    pub(crate) fn read(component: &[u8]) -> Docs {
        let mut docs = Docs::default();
        let _ = crate::contract::scan::walk(
            component,
            |_| (),
            |payload, _| {
                if let wasmparser::Payload::CustomSection(section) = payload
                    && section.name() == SECTION
                {
                    docs.add(section.data());
                }
                Ok(())
            },
        );
        docs
    }

    /// Adds what the content of one section says.
    pub(crate) fn add(&mut self, data: &[u8]) {
        let Some((&version, json)) = data.split_first() else { return };
        if version > 1 || data.len() > MAX_SECTION {
            return;
        }
        let Ok(package) = serde_json::from_slice::<Package>(json) else { return };
        let mut put = |interface: Option<&str>, funcs: &BTreeMap<String, Function>| {
            for (name, f) in funcs {
                if let Some(text) = f.docs().map(str::trim).filter(|t| !t.is_empty()) {
                    let key = (interface.map(str::to_string), name.clone());
                    self.functions.entry(key).or_insert_with(|| text.to_string());
                }
            }
        };
        for world in package.worlds.values() {
            put(None, &world.func_exports);
            put(None, &world.funcs);
            for (name, interface) in world.interface_exports.iter().chain(&world.interfaces) {
                put(Some(name), &interface.funcs);
            }
        }
        for (name, interface) in &package.interfaces {
            put(Some(name), &interface.funcs);
        }
    }

    /// The doc comment of `function`, at world level or in the interface
    /// called `interface` (its own name, `convert`).
    pub(crate) fn of(&self, interface: Option<&str>, function: &str) -> Option<&str> {
        self.functions.get(&(interface.map(str::to_string), function.to_string())).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn world_and_interface_functions_have_their_docs() {
        let mut docs = Docs::default();
        let section = br#"{"worlds":{"weather":{"docs":"w","func_exports":{"get-weather":{"docs":"Returns the temperature."}},"interface_exports":{"inline":{"funcs":{"f":"Inline."}}}}},"interfaces":{"convert":{"funcs":{"c-to-f":{"docs":"Celsius to Fahrenheit.","stability":"unknown"}}}}}"#;
        docs.add(&[&[1u8][..], section].concat());
        assert_eq!(docs.of(None, "get-weather"), Some("Returns the temperature."));
        assert_eq!(docs.of(Some("convert"), "c-to-f"), Some("Celsius to Fahrenheit."));
        assert_eq!(docs.of(Some("inline"), "f"), Some("Inline."));
        assert_eq!(docs.of(None, "distance"), None);
        let mut other = Docs::default();
        other.add(b"\x07{}");
        other.add(b"\x01not json");
        other.add(b"");
        assert_eq!(other, Docs::default(), "unknown versions and garbage are skipped");
    }
}
