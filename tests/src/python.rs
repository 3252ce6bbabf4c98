//! Python tools for the tests and benchmarks: componentize-py, pinned,
//! installed into `target/py-venv` on first use, builds a tool directory
//! against `wit/` with the helper in `sdk/python`, once per change of its
//! sources (kept under `target/py-build`).

use crate::{pins, toolchain};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The componentize-py the tests build with (and `toolhost new` pins).
pub const COMPONENTIZE_PY: &str = pins::COMPONENTIZE_PY.version;

/// The `componentize-py` program, installed on first use. Panics, saying
/// how to install it, when that fails: a Python test never passes without
/// Python.
pub fn componentize_py() -> PathBuf {
    toolchain::installed(&pins::COMPONENTIZE_PY).join("bin").join("componentize-py")
}

/// The component built from the Python tool in `dir` (its `app.py` and any
/// other module beside it), with the SDK's helper on its path.
pub fn python_tool(dir: &Path) -> PathBuf {
    let root = crate::repo_root();
    let sdk = root.join("sdk").join("python");
    let wit = root.join("wit");
    let name = dir.file_name().and_then(|n| n.to_str()).expect("a tool directory");
    let program = componentize_py();
    toolchain::build_once("py-build", name, COMPONENTIZE_PY, &[&sdk, dir, &wit], &["py", "wit"], |out| {
        toolchain::run(
            &format!("componentize-py for {}", dir.display()),
            Command::new(&program)
                .arg("-d")
                .arg(&wit)
                .args(["-w", "plugin", "componentize", "-p"])
                .arg(&sdk)
                .arg("-p")
                .arg(dir)
                .args(["app", "-o"])
                .arg(out),
        )
    })
}

/// The component componentize-py builds, with its defaults, from the
/// Python app in `dir` (its `app.py`) for the world `world` of `dir/wit`:
/// a plain world, no toolhost contract, no SDK.
pub fn python_plain(dir: &Path, world: &str) -> PathBuf {
    python_against(dir, &dir.join("wit"), world)
}

/// The component componentize-py builds, with its defaults and no SDK, from
/// the Python app in `dir` (its `app.py`) for the world `world` of the WIT
/// in `wit` (a tool written for a frozen contract version, say).
pub fn python_against(dir: &Path, wit: &Path, world: &str) -> PathBuf {
    let name = format!("plain-{}", dir.file_name().and_then(|n| n.to_str()).expect("a directory"));
    let program = componentize_py();
    toolchain::build_once("py-build", &name, COMPONENTIZE_PY, &[dir, wit], &["py", "wit"], |out| {
        toolchain::run(
            &format!("componentize-py for {}", dir.display()),
            Command::new(&program)
                .arg("-d")
                .arg(wit)
                .args(["-w", world, "componentize", "-p"])
                .arg(dir)
                .args(["app", "-o"])
                .arg(out),
        )
    })
}
