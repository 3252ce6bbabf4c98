//! Builds the built-in tools for `wasm32-wasip2` and the shell parser for
//! `wasm32-unknown-unknown`, and embeds them in the binary, with the SHA-256
//! of each: the host caches their compiled form on disk under that hash (see
//! `src/registry/cache.rs`), so only the very first start compiles them.

use sha2::{Digest, Sha256};
use std::path::PathBuf;

#[path = "build_shell.rs"]
mod build_shell;
#[path = "build_wasm.rs"]
mod build_wasm;

/// The built-in tools: crate directory under `plugins/`.
const BUILTINS: &[&str] =
    &["read", "write", "edit", "glob", "grep", "bash", "task-stop", "notebook-edit", "toolsearch", "script"];
/// The built-ins that need the `http` feature (`wasi:http`).
const HTTP_BUILTINS: &[&str] = &["webfetch"];

fn main() {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let root = manifest_dir.ancestors().nth(2).expect("host/core/ lives in the workspace root").to_path_buf();
    let out_dir = PathBuf::from(env("OUT_DIR"));

    for dir in ["plugins", "sdk", "wit"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    println!("cargo:rerun-if-changed={}", root.join("Cargo.lock").display());

    let mut builtins = BUILTINS.to_vec();
    if std::env::var_os("CARGO_FEATURE_HTTP").is_some() {
        builtins.extend(HTTP_BUILTINS);
    }
    let packages: Vec<String> = builtins.iter().map(|b| format!("toolhost-plugin-{b}")).collect();
    let wasm_dir = build_wasm::build(&root, &packages);

    let mut table = String::from("&[\n");
    for name in &builtins {
        let wasm_path = wasm_dir.join(format!("toolhost_plugin_{}.wasm", name.replace('-', "_")));
        let wasm = std::fs::read(&wasm_path).unwrap_or_else(|e| panic!("reading {}: {e}", wasm_path.display()));
        // A copy in OUT_DIR: the nested build may rewrite the original later.
        let embedded = out_dir.join(format!("{name}.wasm"));
        std::fs::write(&embedded, &wasm).expect("copying a built-in component");
        let sha256 = sha256_hex(&wasm);
        table.push_str(&format!(
            "    EmbeddedTool {{ crate_dir: {name:?}, sha256: {sha256:?}, wasm: include_bytes!({:?}) }},\n",
            embedded.display().to_string()
        ));
    }
    table.push_str("]\n");
    std::fs::write(out_dir.join("builtins.rs"), table).expect("writing builtins.rs");

    // What the host does for each built-in beyond its contract (its role,
    // its input repairs): `plugins/<name>/builtin.yaml`, of every built-in
    // whatever the features (the declarations are text, and tests read them).
    let mut declared = String::from("&[\n");
    for name in BUILTINS.iter().chain(HTTP_BUILTINS) {
        let file = root.join("plugins").join(name).join("builtin.yaml");
        if file.exists() {
            declared.push_str(&format!("    ({name:?}, include_str!({:?})),\n", file.display().to_string()));
        }
    }
    declared.push_str("]\n");
    std::fs::write(out_dir.join("declared.rs"), declared).expect("writing declared.rs");

    let parser = build_shell::build(&root);
    let wasm = std::fs::read(&parser).unwrap_or_else(|e| panic!("reading {}: {e}", parser.display()));
    let embedded = out_dir.join("shell-parser.wasm");
    std::fs::write(&embedded, &wasm).expect("copying the shell parser");
    std::fs::write(
        out_dir.join("shell_parser.rs"),
        format!(
            "/// The shell parser module.\npub(crate) static WASM: &[u8] = include_bytes!({:?});\n\
             /// Its SHA-256, in hex.\npub(crate) const SHA256: &str = {:?};\n",
            embedded.display().to_string(),
            sha256_hex(&wasm)
        ),
    )
    .expect("writing shell_parser.rs");
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn env(key: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| panic!("cargo sets {key}"))
}
