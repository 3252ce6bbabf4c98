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

pub(crate) static EMBEDDED: &[EmbeddedTool] = include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

/// What each built-in describes (by crate directory), as loading it saves
/// in the cache: a first start lists the tools from it and compiles each at
/// its first use. A test keeps it current.
pub(crate) static DESCRIPTIONS: &str = include_str!("builtins.json");

/// The description of the built-in in `crate_dir`, from [`DESCRIPTIONS`].
pub(crate) fn description(crate_dir: &str) -> Option<super::cache::Described> {
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
