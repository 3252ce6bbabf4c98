//! The names a plain component's functions take as tools. A function is
//! called by its own name; a function of an exported interface by its own
//! name too, unless another function of the component has it, then by the
//! interface's name and its own (`convert_c-to-f`), and if that still
//! clashes, by the package's too. Characters outside the Messages API's
//! `A-Z a-z 0-9 _ -` become `_`; a name past 64 characters is cut and ends
//! with a hash of the whole. The rule is deterministic: the same component
//! always gives the same names.

use sha2::{Digest, Sha256};

/// Longest tool name (the Messages API's).
const MAX_NAME: usize = 64;

/// Where a function is exported: at the world's level, or in the interface
/// export called `interface` (`local:weather/convert@0.1.0`, or a plain
/// name for an interface written inline in the world).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Place<'a> {
    pub interface: Option<&'a str>,
    pub function: &'a str,
}

/// `name` with every character outside `A-Z a-z 0-9 _ -` made `_` (how
/// Claude Code names MCP servers and their tools, and how toolhost names
/// plain functions).
pub fn normalize_name(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// The tool name of each function, in order.
pub(crate) fn names(places: &[Place<'_>]) -> Vec<String> {
    let count = |f: &dyn Fn(&Place<'_>) -> String, name: &str| places.iter().filter(|p| f(p) == name).count();
    let short = |p: &Place<'_>| normalize_name(p.function);
    let with_interface = |p: &Place<'_>| match p.interface {
        Some(i) => format!("{}_{}", normalize_name(interface_name(i)), normalize_name(p.function)),
        None => short(p),
    };
    let with_package = |p: &Place<'_>| match p.interface {
        Some(i) => format!("{}_{}", normalize_name(i.split('@').next().unwrap_or(i)), normalize_name(p.function)),
        None => short(p),
    };
    places
        .iter()
        .map(|p| {
            let name = short(p);
            if p.interface.is_none() || count(&short, &name) == 1 {
                return fit(name);
            }
            let name = with_interface(p);
            if count(&with_interface, &name) == 1 {
                return fit(name);
            }
            fit(with_package(p))
        })
        .collect()
}

/// The interface's own name: `convert` of `local:weather/convert@0.1.0`.
pub(crate) fn interface_name(export: &str) -> &str {
    let path = export.split('@').next().unwrap_or(export);
    path.rsplit('/').next().unwrap_or(path)
}

/// `name` within [`MAX_NAME`]: cut, with 8 hex digits of the whole name's
/// hash after a `-`.
pub(crate) fn fit(name: String) -> String {
    if name.is_empty() {
        return "_".into();
    }
    if name.len() <= MAX_NAME {
        return name;
    }
    let hash = crate::fsx::hex(&Sha256::digest(name.as_bytes()));
    format!("{}-{}", &name[..MAX_NAME - 9], &hash[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place<'a>(interface: Option<&'a str>, function: &'a str) -> Place<'a> {
        Place { interface, function }
    }

    #[test]
    fn functions_keep_their_names_unless_two_share_one() {
        let places = [
            place(None, "get-weather"),
            place(Some("local:weather/convert@0.1.0"), "c-to-f"),
            place(Some("local:weather/api@0.1.0"), "get"),
            place(Some("local:other/api@0.1.0"), "get"),
            place(Some("local:weather/store@0.1.0"), "get-weather"),
        ];
        assert_eq!(
            names(&places),
            ["get-weather", "c-to-f", "local_weather_api_get", "local_other_api_get", "store_get-weather"]
        );
    }

    #[test]
    fn long_names_are_cut_with_a_hash_and_stay_valid() {
        let long = "f".repeat(100);
        let [name] = names(&[place(None, &long)]).try_into().unwrap();
        assert_eq!(name.len(), MAX_NAME);
        assert!(name.starts_with(&"f".repeat(55)) && name.as_bytes()[55] == b'-');
        let other = "f".repeat(99) + "g";
        assert_ne!(names(&[place(None, &other)])[0], name, "the hash keeps cut names apart");
        assert_eq!(interface_name("wasi:cli/run@0.2.0"), "run");
        assert_eq!(interface_name("convert"), "convert");
    }
}
