//! The on-disk cache of compiled components (built-ins and plugins), keyed by
//! the component's content and the engine's compatibility hash: a component
//! is compiled once, and afterwards loads by mapping a file.

use sha2::{Digest, Sha256};
use std::path::Path;
use wasmtime::Engine;
use wasmtime::component::Component;

/// SHA-256 of `bytes`, in hex.
pub fn content_hash(bytes: &[u8]) -> String {
    crate::fsx::hex(&Sha256::digest(bytes))
}

/// The cache key of a component whose content hash is `content` for `engine`.
pub(super) fn key(engine: &Engine, content: &str) -> String {
    crate::artifacts::key("toolhost-component-cache-v1", engine, content)
}

/// Whether a compiled form of the component with content hash `content` is
/// in the cache (whether it is usable is known once it is read).
pub(super) fn has_compiled(engine: &Engine, content: &str, dir: &Path) -> bool {
    component_path(dir, engine, content).exists()
}

/// Where the compiled form of the component with content hash `content` is kept.
fn component_path(dir: &Path, engine: &Engine, content: &str) -> std::path::PathBuf {
    dir.join("components").join(format!("{}.cwasm", key(engine, content)))
}

/// The artifact cached for the component whose SHA-256 is `content`, if
/// there is a usable one. A missing, unreadable or stale entry is `None` (it
/// only costs a compile).
pub(super) fn cached(engine: &Engine, content: &str, dir: &Path) -> Option<Component> {
    saved(engine, &component_path(dir, engine, content))
}

/// The component saved at `path`, an entry of the cache, if it is usable.
fn saved(engine: &Engine, path: &Path) -> Option<Component> {
    // SAFETY: the file is one this host wrote into its own cache directory,
    // named by the hash of the component and of the engine configuration;
    // wasmtime also checks the engine compatibility recorded in it.
    crate::artifacts::saved(path, |path| unsafe { Component::deserialize_file(engine, path) })
}

/// Loads the artifact cached for `wasm` (whose SHA-256 is `content`), or
/// compiles it and caches the result, once across processes sharing the
/// cache ([`crate::artifacts::cached_or_compiled`]). Cache failures only
/// cost time: a missing, unreadable or stale entry is compiled afresh; an
/// unwritable cache directory means compiling at every start.
pub(super) fn compile(engine: &Engine, wasm: &[u8], content: &str, dir: Option<&Path>) -> wasmtime::Result<Component> {
    let compile = || crate::artifacts::compile_apart(|| Component::new(engine, wasm));
    let Some(dir) = dir else { return compile() };
    crate::artifacts::cached_or_compiled(
        &component_path(dir, engine, content),
        |path| saved(engine, path),
        compile,
        Component::serialize,
    )
}

/// The shape of a saved description: raised whenever [`ToolSpec`] gains or
/// changes a field, so a description saved by an older toolhost (which would
/// read with that field's default) is never used.
///
/// [`ToolSpec`]: super::tool::ToolSpec
const SPEC_FORMAT: u32 = 6;

/// A saved description: the tool's spec as loading made it (caps applied),
/// the warnings loading gave, and the component's shape and requests (so a
/// start can grant it without reading the component or its compiled form).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct Described {
    pub spec: super::tool::ToolSpec,
    pub warnings: Vec<String>,
    pub shape: crate::contract::Shape,
    /// Its `toolhost:requests`.
    pub requests: crate::grants::Allowance,
}

/// Where the description of the component with content hash `content` is kept.
pub(super) fn spec_path(dir: &Path, engine: &Engine, content: &str) -> std::path::PathBuf {
    dir.join("components").join(format!("{}.spec-v{SPEC_FORMAT}.json", key(engine, content)))
}

/// A saved description, if there is a readable one (the loader checks it
/// again before using it).
pub(super) fn read_spec(path: &Path) -> Option<Described> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Saves a description (a failure only costs the next start some time).
pub(super) fn write_spec(path: &Path, described: &Described) {
    let write = || -> std::io::Result<()> { crate::fsx::replace_file(path, &serde_json::to_vec(described)?) };
    if let Err(e) = write() {
        tracing::warn!(path = %path.display(), error = %e, "could not save a tool description");
    }
}

/// Removes the compiled form `engine` made of the component with content
/// hash `content` (a quick compile, once the optimized one is cached). A
/// process still using it keeps its mapping.
pub(super) fn remove(engine: &Engine, content: &str, dir: &Path) {
    let path = component_path(dir, engine, content);
    if let Err(e) = std::fs::remove_file(&path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::debug!(path = %path.display(), error = %e, "could not remove a cache entry");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::ToolSpec;

    #[test]
    fn descriptions_round_trip_and_corrupt_ones_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let spec = ToolSpec {
            name: "T".into(),
            aliases: vec!["U".into()],
            description: "d".into(),
            prompt: "p".into(),
            search_hint: None,
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: None,
            max_result_size_chars: Some(10),
            should_defer: false,
            always_load: false,
            cancel_on_interrupt: true,
            enabled: true,
            hints: crate::registry::Hints { read_only: Some(true), destructive: None, concurrency_safe: Some(false) },
            inputs: crate::registry::InputRoles {
                paths: vec![crate::registry::PathField {
                    field: "file_path".into(),
                    access: crate::registry::PathAccess::Edit,
                }],
                command: None,
                addresses: vec!["url".into()],
            },
            cancels_siblings: true,
            reuse_instance: false,
            validates_input: false,
            checks_permissions: true,
        };
        let path = dir.path().join("t.spec.json");
        let shape = crate::contract::Shape {
            version: crate::contract::Version(1, 1, 0),
            capabilities: vec![crate::contract::Capability::Files],
            imports: vec!["wasi:cli/stdout@0.2.6".into()],
            concurrent: true,
            form: crate::contract::Form::Contract,
        };
        let requests = crate::grants::Allowance { process: true, ..Default::default() };
        let described = Described { spec, warnings: vec!["cut".into()], shape, requests };
        write_spec(&path, &described);
        assert_eq!(read_spec(&path), Some(described));
        std::fs::write(&path, b"{not json").unwrap();
        assert_eq!(read_spec(&path), None);
        assert_eq!(read_spec(&dir.path().join("missing")), None);
    }

    #[test]
    fn a_corrupt_compiled_entry_is_compiled_again_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::new(&crate::sandbox::base_config()).unwrap();
        let wasm = crate::registry::small_builtin_wasm_for_tests();
        let hash = content_hash(wasm);
        compile(&engine, wasm, &hash, Some(dir.path())).unwrap();
        let entry = dir.path().join("components").join(format!("{}.cwasm", key(&engine, &hash)));
        let good = std::fs::read(&entry).unwrap();
        for corrupt in [b"garbage".to_vec(), good[..good.len() / 2].to_vec(), Vec::new()] {
            std::fs::write(&entry, &corrupt).unwrap();
            compile(&engine, wasm, &hash, Some(dir.path())).expect("compiled again");
            assert_ne!(std::fs::read(&entry).unwrap(), corrupt, "the bad entry was not replaced");
            // SAFETY: the entry was written by `compile` just now.
            unsafe { Component::deserialize_file(&engine, &entry) }.expect("a usable entry");
        }
    }
}
