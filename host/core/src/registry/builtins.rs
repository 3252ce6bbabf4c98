//! The built-in tools, embedded in the binary by the build script.

use crate::contract::Requests;
use crate::sandbox::{FileAccess, Grants};

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

/// What each built-in may touch: the read-only file tools read the working
/// directories, the editing tools write them, the shell tools start processes
/// (policed by the host) and see no files themselves.
pub(crate) fn grants(crate_dir: &str) -> Grants {
    match crate_dir {
        "write" | "edit" => Grants { files: FileAccess::ReadWrite, ..Grants::default() },
        "bash" | "bash-output" | "kill-shell" => Grants { process: true, ..Grants::default() },
        "webfetch" => Grants::default(),
        _ => Grants { files: FileAccess::ReadOnly, ..Grants::default() },
    }
}

/// What a built-in that stamps requests (as a third-party component does)
/// is granted before the operator adds anything under `toolGrants`: WebFetch
/// any public host.
pub(crate) fn granted(crate_dir: &str) -> Requests {
    match crate_dir {
        "webfetch" => Requests { hosts: vec!["*".into()], ..Requests::default() },
        _ => Requests::default(),
    }
}
