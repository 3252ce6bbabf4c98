//! Toolchains the tests install for themselves (the pins are in
//! [`crate::pins`]: a Python virtual environment from PyPI, an npm prefix),
//! and builds of tool directories kept under `target/`, named by a hash of
//! everything they were built from, so each is built once until its sources
//! change.
//!
//! A toolchain that cannot be installed panics, saying how to install it: a
//! test never passes without the toolchain it needs.

use crate::pins::{Pin, Source};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

/// One build at a time in this process (the build directories are shared);
/// other processes' builds land by rename.
static BUILDING: Mutex<()> = Mutex::new(());

/// Runs `install` holding the lock of `dir`: one install of a directory at a
/// time in this process; installs of different directories at once.
fn installing<T>(dir: &Path, install: impl FnOnce() -> T) -> T {
    static LOCKS: Mutex<Option<HashMap<PathBuf, Arc<Mutex<()>>>>> = Mutex::new(None);
    let lock = {
        let mut locks = LOCKS.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(locks.get_or_insert_with(HashMap::new).entry(dir.to_path_buf()).or_default())
    };
    let _held = lock.lock().unwrap_or_else(|e| e.into_inner());
    install()
}

/// `pin` installed under `target/`: a virtual environment's directory, or
/// an npm prefix's `node_modules`. Panics, saying how to install it, when
/// that fails.
pub fn installed(pin: &Pin) -> PathBuf {
    install(pin).unwrap_or_else(|why| panic!("{why}"))
}

/// `pin` installed under `target/` (once per checkout; again when the pin
/// changes), or why it could not be.
pub fn install(pin: &Pin) -> Result<PathBuf, String> {
    let dir = crate::repo_root().join("target").join(pin.dir);
    let requirement = pin.requirement();
    installing(&dir, || -> Result<PathBuf, String> {
        let marker = dir.join(".installed");
        let done = match pin.source {
            Source::PyPi => dir.join("bin").join("python"),
            Source::Npm => dir.join("node_modules"),
        };
        if done.exists() && std::fs::read_to_string(&marker).is_ok_and(|m| m == requirement) {
            return Ok(dir_of(pin, &dir));
        }
        let _ = std::fs::remove_dir_all(&dir);
        match pin.source {
            Source::PyPi => make_venv(&dir, &requirement)?,
            Source::Npm => npm_install(&dir, &requirement)?,
        }
        std::fs::write(&marker, &requirement).map_err(|e| format!("writing {}: {e}", marker.display()))?;
        Ok(dir_of(pin, &dir))
    })
    .map_err(|why: String| {
        format!(
            "{why}\n(to run the tests offline, install {requirement} by hand into {} where it works and write \
             `{requirement}` into its .installed)",
            dir.display()
        )
    })
}

/// What [`install`] answers for `pin` installed in `dir`.
fn dir_of(pin: &Pin, dir: &Path) -> PathBuf {
    match pin.source {
        Source::PyPi => dir.to_path_buf(),
        Source::Npm => dir.join("node_modules"),
    }
}

/// A virtual environment in `dir` with `requirement` installed by pip.
fn make_venv(dir: &Path, requirement: &str) -> Result<(), String> {
    let made = Command::new("python3").arg("-m").arg("venv").arg(dir).status();
    if !made.is_ok_and(|s| s.success()) {
        return Err(format!(
            "python3 -m venv {} failed: these tests need Python 3.10 or later with venv and pip \
             (Debian: apt install python3-venv python3-pip)",
            dir.display()
        ));
    }
    let pip = Command::new(dir.join("bin").join("python"))
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", requirement])
        .output()
        .map_err(|e| format!("could not run pip: {e}"))?;
    if !pip.status.success() {
        return Err(format!(
            "pip install {requirement} failed (these tests need it from PyPI):\n{}",
            String::from_utf8_lossy(&pip.stderr)
        ));
    }
    Ok(())
}

/// An npm prefix `dir` with `package` (`name@version`) installed.
fn npm_install(dir: &Path, package: &str) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("making {}: {e}", dir.display()))?;
    let out = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
        .arg(dir)
        .arg(package)
        .output();
    match &out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "npm install {package} failed (these tests need Node.js 18 or later with npm, Debian: apt install \
             nodejs npm, and the package from the npm registry):\n{}",
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => Err(format!("could not run npm (these tests need Node.js 18 or later with npm): {e}")),
    }
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
