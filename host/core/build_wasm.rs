//! Shared by the build scripts of `host` (the built-in tools) and `tests` (the
//! test guests): builds workspace crates as wasm32-wasip2 components.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds `packages` for `wasm32-wasip2` in the `plugin` profile and returns the
/// directory holding the `.wasm` files. A separate target directory keeps this
/// nested cargo from waiting on the lock the outer build holds.
pub fn build(root: &Path, packages: &[String]) -> PathBuf {
    let target_dir = root.join("target").join("wasm");
    let mut cmd = nested_cargo(root);
    cmd.args(["build", "--profile", "plugin", "--target", "wasm32-wasip2", "--target-dir"]).arg(&target_dir);
    for p in packages {
        cmd.args(["-p", p]);
    }
    // SIMD in the guests gives the regex engine its fast paths back.
    cmd.env("CARGO_ENCODED_RUSTFLAGS", "-Ctarget-feature=+simd128");
    let status = cmd.status().expect("running cargo to build the built-in tools");
    if !status.success() {
        panic!(
            "building the built-in tools for wasm32-wasip2 failed (see above). If the target is \
             missing, install it with `rustup target add wasm32-wasip2`."
        );
    }
    target_dir.join("wasm32-wasip2").join("plugin")
}

/// `cargo` in `root`, without the outer build's settings (they are for the
/// host, not for the guests). `TOOLHOST_GUEST_TOOLCHAIN` names another rustup
/// toolchain for the guests: a nightly host build under a sanitizer
/// (`fuzz/run --asan`) whose nightly has no wasm targets builds them with
/// `stable`.
pub fn nested_cargo(root: &Path) -> Command {
    println!("cargo:rerun-if-env-changed=TOOLHOST_GUEST_TOOLCHAIN");
    let toolchain = std::env::var("TOOLHOST_GUEST_TOOLCHAIN").ok().filter(|t| !t.is_empty());
    let mut cmd = match &toolchain {
        Some(t) => {
            let mut cmd = Command::new("cargo");
            cmd.env("RUSTUP_TOOLCHAIN", t).env_remove("RUSTC").env_remove("RUSTDOC");
            cmd
        }
        None => Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())),
    };
    cmd.current_dir(root);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_") && key != "CARGO_HOME" || key == "RUSTFLAGS" || key == "RUSTC_WORKSPACE_WRAPPER" {
            cmd.env_remove(key.as_ref());
        }
    }
    cmd
}
