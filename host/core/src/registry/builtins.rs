//! The built-in tools, embedded in the binary by the build script.

use crate::grants::Allowance;

/// One embedded built-in.
pub(crate) struct EmbeddedTool {
    /// Its crate directory under `plugins/`.
    pub crate_dir: &'static str,
    /// SHA-256 of `wasm`, computed at build time: the key of its compiled form
    /// in the cache, so start-up does not hash megabytes.
    pub sha256: &'static str,
    /// The component.
    pub wasm: &'static [u8],
}

/// Each built-in's `builtin.yaml` ([`Declared`]), by crate directory: those
/// that have one, whether or not this build embeds the built-in.
static DECLARED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/declared.rs"));

/// What the host does for a built-in beyond what its component declares
/// through the contract: `plugins/<name>/builtin.yaml`, built into the
/// binary beside the component. The core knows built-ins by these
/// declarations, never by name.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Declared {
    /// What part it plays in the host, if any.
    #[serde(default)]
    pub role: Option<super::Role>,
    /// The slips in its input repaired before the schema check.
    #[serde(default)]
    pub repairs: super::repairs::Repairs,
}

impl Declared {
    /// A `builtin.yaml`'s text read (empty: nothing declared).
    fn read(text: &str) -> Result<Declared, serde_saphyr::Error> {
        serde_saphyr::from_str::<Option<Declared>>(text).map(Option::unwrap_or_default)
    }
}

/// The declarations of the built-in in `crate_dir` (none: nothing declared).
pub(crate) fn declared(crate_dir: &str) -> &'static Declared {
    static PARSED: std::sync::LazyLock<std::collections::HashMap<&'static str, Declared>> = std::sync::LazyLock::new(
        || {
            let read = |&(crate_dir, text): &(&'static str, &str)| match Declared::read(text) {
                Ok(declared) => (crate_dir, declared),
                // A test reads every one: this build's own files.
                Err(error) => {
                    tracing::error!(builtin = crate_dir, %error, "its builtin.yaml does not read; it is used without it");
                    (crate_dir, Declared::default())
                }
            };
            DECLARED.iter().map(read).collect()
        },
    );
    static NOTHING: std::sync::LazyLock<Declared> = std::sync::LazyLock::new(Declared::default);
    PARSED.get(crate_dir).unwrap_or(&NOTHING)
}

pub(crate) static EMBEDDED: &[EmbeddedTool] = include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

/// What each built-in describes (by crate directory), as loading it saves
/// in the cache: a first start lists the tools from it and compiles each at
/// its first use. A test keeps it current.
pub(crate) static DESCRIPTIONS: &str = include_str!("builtins.json");

/// The description of the built-in in `crate_dir`, from [`DESCRIPTIONS`].
pub(super) fn description(crate_dir: &str) -> Option<super::cache::Described> {
    static PARSED: std::sync::LazyLock<std::collections::HashMap<String, serde_json::Value>> =
        std::sync::LazyLock::new(|| serde_json::from_str(DESCRIPTIONS).unwrap_or_default());
    serde_json::from_value(PARSED.get(crate_dir)?.clone()).ok()
}

/// What a built-in is granted before the operator adds anything under
/// `toolGrants`: all it requests (its `toolhost:requests` section: the file
/// tools the working directories, the shell tools the process capability,
/// WebFetch any public host). Built-ins are trusted code of this binary.
pub(crate) fn granted(requests: &Allowance) -> Allowance {
    requests.clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Role;

    #[test]
    fn every_builtin_yaml_reads() {
        for (crate_dir, text) in DECLARED {
            Declared::read(text).unwrap_or_else(|e| panic!("plugins/{crate_dir}/builtin.yaml: {e}"));
        }
        assert!(DECLARED.iter().any(|(dir, _)| *dir == "webfetch"), "declared whatever the features");
        assert_eq!(declared("script").role, Some(Role::RunsPrograms));
        assert_eq!(declared("toolsearch").role, Some(Role::LoadsTools));
        assert_eq!(declared("read").role, None);
        assert!(!declared("read").repairs.steps.is_empty());
        assert!(declared("glob").repairs.steps.is_empty() && declared("no such").role.is_none());
        for role in [Role::RunsPrograms, Role::LoadsTools] {
            let playing = DECLARED.iter().filter(|(dir, _)| declared(dir).role == Some(role)).count();
            assert_eq!(playing, 1, "one built-in plays {role:?}");
        }
    }
}
