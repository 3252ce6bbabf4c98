//! Builds the shell parser (`host/shell` with its `tree-sitter` feature) for
//! `wasm32-unknown-unknown`: the walker and tree-sitter's C together, one
//! module with no imports, which the host runs sandboxed
//! (`src/shell/parse.rs` says why).
//!
//! The C needs a compiler that targets wasm32. `TOOLHOST_WASM_CC` and
//! `TOOLHOST_WASM_AR` name one when set (clang and llvm-ar, say); otherwise
//! it is zig's clang, from PyPI's `ziglang` (pinned below), installed with
//! pip under `target/tools/` by the first build.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `ziglang` release on PyPI whose clang compiles the parser's C.
const ZIGLANG: &str = "0.17.1";

/// Builds the parser and returns the path of its `.wasm`.
pub fn build(root: &Path) -> PathBuf {
    println!("cargo:rerun-if-changed={}", root.join("host/shell").display());
    println!("cargo:rerun-if-env-changed=TOOLHOST_WASM_CC");
    println!("cargo:rerun-if-env-changed=TOOLHOST_WASM_AR");
    let (cc, ar) = c_toolchain(root);
    let headers = tree_sitter_wasm_headers(root);
    let target_dir = root.join("target").join("wasm");
    let mut cmd = super::build_wasm::nested_cargo(root);
    cmd.args(["build", "--locked", "--profile", "plugin", "--target", "wasm32-unknown-unknown"])
        .args(["-p", "toolhost-shell", "--lib", "--features", "tree-sitter", "--target-dir"])
        .arg(&target_dir)
        // 4 MiB from the start: the stack (1 MiB: a tree `MAX_DEPTH` deep
        // takes about a quarter), the tables (1.2 MiB) and room for a
        // typical command's heap, so most commands never grow the memory
        // (each growth is an `mprotect` of a pooled slot).
        .env("CARGO_ENCODED_RUSTFLAGS", "-Clink-arg=--initial-memory=4194304")
        .env("CC_wasm32_unknown_unknown", &cc)
        .env("AR_wasm32_unknown_unknown", &ar)
        // tree-sitter's own libc subset for wasm; the bash scanner's one call
        // outside it (`isdigit`) goes to its wide twin, the same on bytes.
        .env("CFLAGS_wasm32_unknown_unknown", format!("-I{} -Disdigit=iswdigit", headers.display()));
    let status = cmd.status().expect("running cargo to build the shell parser");
    if !status.success() {
        panic!(
            "building the shell parser for wasm32-unknown-unknown failed (see above). If the target is \
             missing, install it with `rustup target add wasm32-unknown-unknown`; the C compiler was {}.",
            cc.display()
        );
    }
    target_dir.join("wasm32-unknown-unknown").join("plugin").join("toolhost_shell.wasm")
}

/// A C compiler and archiver for wasm32: the ones `TOOLHOST_WASM_CC` and
/// `TOOLHOST_WASM_AR` name, else zig's behind two small scripts.
fn c_toolchain(root: &Path) -> (PathBuf, PathBuf) {
    if let (Some(cc), Some(ar)) = (std::env::var_os("TOOLHOST_WASM_CC"), std::env::var_os("TOOLHOST_WASM_AR")) {
        return (cc.into(), ar.into());
    }
    let dir = root.join("target").join("tools").join(format!("ziglang-{ZIGLANG}"));
    let zig = dir.join("ziglang").join("zig");
    if !zig.exists() {
        let _ = std::fs::remove_dir_all(&dir);
        let pip = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--target"])
            .arg(&dir)
            .arg(format!("ziglang=={ZIGLANG}"))
            .output();
        let failed = match &pip {
            Ok(out) if out.status.success() && zig.exists() => None,
            Ok(out) => Some(String::from_utf8_lossy(&out.stderr).into_owned()),
            Err(e) => Some(format!("could not run python3: {e}")),
        };
        if let Some(why) = failed {
            panic!(
                "the shell parser's C needs a compiler for wasm32: this build installs zig from PyPI \
                 (`python3 -m pip install --target {} ziglang=={ZIGLANG}`), which failed:\n{why}\n\
                 Install Python 3 with pip, or set TOOLHOST_WASM_CC and TOOLHOST_WASM_AR to a clang \
                 and an llvm-ar that target wasm32.",
                dir.display()
            );
        }
    }
    let cache = dir.join("cache");
    let script = |name: &str, body: String| {
        let path = dir.join(name);
        let text = format!(
            "#!/bin/sh\n# Written by host/core/build_shell.rs.\nexport ZIG_GLOBAL_CACHE_DIR='{0}' ZIG_LOCAL_CACHE_DIR='{0}'\n{body}\n",
            cache.display()
        );
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text).expect("writing a compiler script");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        path
    };
    // cc-rs names the target the way clang does; zig wants its own name.
    let cc = script(
        "wasm-cc",
        format!(
            "for a do\n  shift\n  case \"$a\" in --target=*) ;; *) set -- \"$@\" \"$a\" ;; esac\ndone\nexec '{}' cc -target wasm32-freestanding \"$@\"",
            zig.display()
        ),
    );
    let ar = script("wasm-ar", format!("exec '{}' ar \"$@\"", zig.display()));
    (cc, ar)
}

/// tree-sitter-language's headers for `wasm32-unknown-unknown` (the libc
/// subset tree-sitter brings), found through `cargo metadata`.
fn tree_sitter_wasm_headers(root: &Path) -> PathBuf {
    let out = super::build_wasm::nested_cargo(root)
        .args(["metadata", "--locked", "--format-version", "1", "--filter-platform", "wasm32-unknown-unknown"])
        .args(["--features", "toolhost-shell/tree-sitter"])
        .output()
        .expect("running cargo metadata");
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let manifest = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "tree-sitter-language")
        .and_then(|p| p["manifest_path"].as_str())
        .expect("tree-sitter-language is a dependency of the shell parser");
    Path::new(manifest).parent().expect("a manifest's directory").join("wasm").join("include")
}
