//! Python tools for the tests and benchmarks: componentize-py, pinned,
//! installed into `target/py-venv` on first use, builds a tool directory
//! against `wit/` with the helper in `sdk/python`. Each build is kept under
//! `target/py-build`, named by a hash of everything it was built from, so
//! it is built once until its sources change.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The componentize-py the tests build with (and `toolhost new` pins).
pub const COMPONENTIZE_PY: &str = "0.25.1";

/// One build at a time in this process (the venv and the build directory
/// are shared); builds of other processes land by rename.
static BUILDING: Mutex<()> = Mutex::new(());

/// The `componentize-py` program, installed on first use. Panics, saying
/// how to install it, when that fails: a Python test never passes without
/// Python.
pub fn componentize_py() -> PathBuf {
    let venv = crate::repo_root().join("target").join("py-venv");
    let program = venv.join("bin").join("componentize-py");
    let marker = venv.join(format!(".installed-{COMPONENTIZE_PY}"));
    if marker.exists() && program.exists() {
        return program;
    }
    let _ = std::fs::remove_dir_all(&venv);
    let made = Command::new("python3").arg("-m").arg("venv").arg(&venv).status();
    assert!(
        made.is_ok_and(|s| s.success()),
        "python3 -m venv {} failed: the Python tests need Python 3.10 or later with venv and pip \
         (Debian: apt install python3-venv python3-pip)",
        venv.display()
    );
    let pip = Command::new(venv.join("bin").join("python"))
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
        .arg(format!("componentize-py=={COMPONENTIZE_PY}"))
        .output()
        .expect("run pip");
    assert!(
        pip.status.success(),
        "pip install componentize-py=={COMPONENTIZE_PY} failed (the Python tests need it from PyPI; install it \
         by hand into {} to run them offline):\n{}",
        venv.display(),
        String::from_utf8_lossy(&pip.stderr)
    );
    std::fs::write(&marker, b"").expect("venv marker");
    program
}

/// The component built from the Python tool in `dir` (its `app.py` and any
/// other module beside it), with the SDK's helper on its path.
pub fn python_tool(dir: &Path) -> PathBuf {
    let root = crate::repo_root();
    let sdk = root.join("sdk").join("python");
    let wit = root.join("wit");
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    COMPONENTIZE_PY.hash(&mut hasher);
    for source in [&sdk, &dir.to_path_buf(), &wit] {
        for file in files(source) {
            file.hash(&mut hasher);
            std::fs::read(&file).expect("read a source").hash(&mut hasher);
        }
    }
    let name = dir.file_name().and_then(|n| n.to_str()).expect("a tool directory");
    let out_dir = root.join("target").join("py-build");
    let out = out_dir.join(format!("{name}-{:016x}.wasm", hasher.finish()));
    let _building = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    if out.exists() {
        return out;
    }
    let program = componentize_py();
    std::fs::create_dir_all(&out_dir).expect("build dir");
    let partial = out_dir.join(format!(".{name}-{}.partial", std::process::id()));
    let built = Command::new(&program)
        .arg("-d")
        .arg(&wit)
        .args(["-w", "plugin", "componentize", "-p"])
        .arg(&sdk)
        .arg("-p")
        .arg(dir)
        .args(["app", "-o"])
        .arg(&partial)
        .output()
        .expect("run componentize-py");
    assert!(
        built.status.success(),
        "componentize-py could not build {}:\n{}{}",
        dir.display(),
        String::from_utf8_lossy(&built.stdout),
        String::from_utf8_lossy(&built.stderr)
    );
    std::fs::rename(&partial, &out).expect("put the build in place");
    out
}

/// The Python and WIT files under `dir`, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "__pycache__") {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|x| x == "py" || x == "wit") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}
