//! Toolchains the tests install for themselves, pinned, on first use (a
//! Python virtual environment from PyPI, npm packages), and builds of tool
//! directories kept under `target/`, named by a hash of everything they were
//! built from, so each is built once until its sources change.
//!
//! A toolchain that cannot be installed panics, saying how to install it: a
//! test never passes without the toolchain it needs.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// One install at a time in this process (the environments are shared).
static INSTALLING: Mutex<()> = Mutex::new(());
/// One build at a time in this process (the build directories are shared);
/// other processes' builds land by rename.
static BUILDING: Mutex<()> = Mutex::new(());

/// The Python of the virtual environment `dir` with `requirement` installed
/// by pip (made once per checkout; made again when the requirement changes).
pub fn venv(dir: &Path, requirement: &str) -> PathBuf {
    let _installing = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    let python = dir.join("bin").join("python");
    let marker = dir.join(".installed");
    if python.exists() && std::fs::read_to_string(&marker).is_ok_and(|m| m == requirement) {
        return python;
    }
    let _ = std::fs::remove_dir_all(dir);
    let made = Command::new("python3").arg("-m").arg("venv").arg(dir).status();
    assert!(
        made.is_ok_and(|s| s.success()),
        "python3 -m venv {} failed: these tests need Python 3.10 or later with venv and pip \
         (Debian: apt install python3-venv python3-pip)",
        dir.display()
    );
    let pip = Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", requirement])
        .output()
        .expect("run pip");
    assert!(
        pip.status.success(),
        "pip install {requirement} failed (these tests need it from PyPI; to run them offline, install it by \
         hand into {} and write `{requirement}` into {}):\n{}",
        dir.display(),
        marker.display(),
        String::from_utf8_lossy(&pip.stderr)
    );
    std::fs::write(&marker, requirement).expect("write the venv's marker");
    python
}

/// The `node_modules` of the npm prefix `dir` with `package` (`name@version`)
/// installed (once per checkout; again when the pin changes).
pub fn npm(dir: &Path, package: &str) -> PathBuf {
    let _installing = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    let modules = dir.join("node_modules");
    let marker = dir.join(".installed");
    if modules.exists() && std::fs::read_to_string(&marker).is_ok_and(|m| m == package) {
        return modules;
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("npm prefix");
    let out = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
        .arg(dir)
        .arg(package)
        .output();
    let failed = match &out {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(String::from_utf8_lossy(&o.stderr).into_owned()),
        Err(e) => Some(format!("could not run npm: {e}")),
    };
    if let Some(why) = failed {
        panic!(
            "npm install {package} failed: these tests need Node.js 18 or later with npm (Debian: apt install \
             nodejs npm) and the package from the npm registry; to run them offline, run `npm install --prefix {} \
             {package}` where it works and write `{package}` into {}:\n{why}",
            dir.display(),
            marker.display()
        );
    }
    std::fs::write(&marker, package).expect("write the npm prefix's marker");
    modules
}

/// The component `kind/NAME-HASH.wasm` under `target/`, built by `build`
/// (given the path to write) unless a build of the same inputs exists: the
/// `pin` of the toolchain, and the files with one of `extensions` under each
/// of `sources`. Get the toolchain before: `build` runs under this
/// process's build lock.
pub fn build_once(
    kind: &str,
    name: &str,
    pin: &str,
    sources: &[&Path],
    extensions: &[&str],
    build: impl FnOnce(&Path),
) -> PathBuf {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    pin.hash(&mut hasher);
    for source in sources {
        for file in files(source, extensions) {
            file.hash(&mut hasher);
            std::fs::read(&file).expect("read a source").hash(&mut hasher);
        }
    }
    let out_dir = crate::repo_root().join("target").join(kind);
    let out = out_dir.join(format!("{name}-{:016x}.wasm", hasher.finish()));
    let _building = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    if out.exists() {
        return out;
    }
    std::fs::create_dir_all(&out_dir).expect("build dir");
    let partial = out_dir.join(format!(".{name}-{}.partial.wasm", std::process::id()));
    build(&partial);
    std::fs::rename(&partial, &out).expect("put the build in place");
    out
}

/// Panics with what `what` printed unless it succeeded.
pub fn run(what: &str, command: &mut Command) {
    let out = command.output().unwrap_or_else(|e| panic!("could not run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The files with one of `extensions` under `dir`, sorted (caches and
/// installed packages left out).
fn files(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "__pycache__" && n != "node_modules") {
                    stack.push(path);
                }
            } else if path.extension().and_then(|x| x.to_str()).is_some_and(|x| extensions.contains(&x)) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}
