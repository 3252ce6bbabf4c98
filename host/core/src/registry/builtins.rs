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

/// What a built-in is granted before the operator adds anything under
/// `toolGrants`: all it requests (its `toolhost:requests` section: the file
/// tools the working directories, the shell tools the process capability,
/// WebFetch any public host). Built-ins are trusted code of this binary.
pub(crate) fn granted(requests: &Allowance) -> Allowance {
    requests.clone()
}
