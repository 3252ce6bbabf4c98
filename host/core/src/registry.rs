//! The registry: loading components (`load`; compiling under limits through
//! the on-disk cache, `compile`; reading what a tool declares, `declare`;
//! shape and grant checks, linking, the tool's description of itself), the
//! loaded tools by name and alias, and the pool the model is offered.

pub(crate) mod builtins;
mod cache;
mod compile;
pub(crate) mod declarations;
pub(crate) mod declare;
pub(crate) mod load;
pub mod manifest;
mod optimize;
mod plain;
mod plugins;
mod pool;
pub(crate) mod remote;
pub(crate) mod repairs;
mod schema;
mod tool;

pub use cache::content_hash;
pub use compile::CompileProgress;
pub(crate) use compile::{CompileSink, QUICK_ABOVE};
pub(crate) use load::Loader;
pub(crate) use optimize::Optimizer;
pub use plugins::ToolsChanged;
pub(crate) use plugins::{PluginSet, diff, is_companion_file, is_component_file};
pub(crate) use pool::{DEFAULT_DEFER_AFTER, Problem, Registry};
pub use remote::{
    MAX_REMOTE_DESCRIPTION, MAX_REMOTE_TOOLS, Remote, RemoteCall, RemoteCaller, RemoteSource, RemoteTool,
    RemoteToolError, describe, make_portable, normalize_name, remote_name, server_of,
};
pub use schema::{Schema, SchemaError, portability_problems, prepare_schema_checks};
pub use tool::{Hints, InputRoles, LoadError, LoadedTool, Origin, PathAccess, PathField, Role, ToolSpec};

/// A built-in component's bytes, for unit tests elsewhere in the crate.
#[cfg(test)]
pub(crate) fn builtin_wasm_for_tests() -> &'static [u8] {
    builtins::EMBEDDED[0].wasm
}

/// The smallest built-in component's bytes, for unit tests that compile a
/// real component and need not compile a large one.
#[cfg(test)]
pub(crate) fn small_builtin_wasm_for_tests() -> &'static [u8] {
    builtins::EMBEDDED.iter().map(|e| e.wasm).min_by_key(|w| w.len()).expect("built-ins are embedded")
}

/// Every built-in component's bytes, for unit tests elsewhere in the crate.
#[cfg(test)]
pub(crate) fn builtin_wasm_all_for_tests() -> Vec<&'static [u8]> {
    builtins::EMBEDDED.iter().map(|e| e.wasm).collect()
}
