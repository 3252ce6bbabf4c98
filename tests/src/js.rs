//! JavaScript tools for the tests and benchmarks, with the helper in
//! `sdk/js`: built by componentize-qjs (QuickJS, `--sync`: the default of
//! `toolhost new --lang js`) or by componentize-js (SpiderMonkey), each
//! pinned and installed from npm under `target/js-tools` on first use, once
//! per change of the tool's sources (kept under `target/js-build`).

use crate::pins::{self, Pin};
use crate::toolchain;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The componentize-qjs the tests build with (and `toolhost new` pins).
pub const COMPONENTIZE_QJS: &str = pins::COMPONENTIZE_QJS.version;

/// The JavaScript engine a tool is built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// componentize-qjs: about 1.6 MB, compiled in under a second.
    QuickJs,
    /// componentize-js (StarlingMonkey): about 12 MB. Built with its
    /// defaults (which import wasi:http; the host links it and grants no
    /// host).
    SpiderMonkey,
    /// componentize-qjs without `--sync`: its default runtime, which uses
    /// the component-model async ABI.
    QuickJsAsync,
    /// `jco componentize --backend quickjs` with no other flag: jco's
    /// default QuickJS build, on the async ABI.
    Jco,
}

impl Engine {
    fn pin(self) -> Pin {
        match self {
            Engine::QuickJs | Engine::QuickJsAsync => pins::COMPONENTIZE_QJS,
            Engine::SpiderMonkey => pins::COMPONENTIZE_JS,
            Engine::Jco => pins::JCO,
        }
    }

    fn package(self) -> String {
        self.pin().requirement()
    }
}

/// The installed `node_modules` of `engine`'s componentizer. Panics, saying
/// how to install it, when that fails.
pub fn componentizer(engine: Engine) -> PathBuf {
    toolchain::installed(&engine.pin())
}

/// The component built from the JavaScript tool in `dir` (its `app.js`,
/// importing `./toolhost.js`) with `engine`.
pub fn js_tool(dir: &Path, engine: Engine) -> PathBuf {
    let root = crate::repo_root();
    let sdk = root.join("sdk").join("js");
    let wit = root.join("wit");
    let name = format!("{}-{engine:?}", dir.file_name().and_then(|n| n.to_str()).expect("a tool directory"));
    let modules = componentizer(engine);
    let pin = engine.package();
    toolchain::build_once("js-build", &name, &pin, &[&sdk, dir, &wit], &["js", "wit"], |out| {
        // The app beside the helper, as a project has them.
        let stage = out.with_extension("src");
        let _ = std::fs::remove_dir_all(&stage);
        std::fs::create_dir_all(&stage).expect("staging dir");
        for source in [dir, &sdk] {
            for entry in std::fs::read_dir(source).expect("read sources").flatten() {
                if entry.path().extension().is_some_and(|x| x == "js") {
                    std::fs::copy(entry.path(), stage.join(entry.file_name())).expect("stage a source");
                }
            }
        }
        let what = format!("{} for {}", engine.package(), dir.display());
        match engine {
            Engine::QuickJs | Engine::QuickJsAsync => {
                let mut command = Command::new(modules.join(".bin").join("componentize-qjs"));
                command.arg("--wit").arg(&wit).args(["--world", "plugin"]);
                if engine == Engine::QuickJs {
                    command.arg("--sync");
                }
                toolchain::run(&what, command.arg("--js").arg(stage.join("app.js")).arg("--output").arg(out))
            }
            Engine::SpiderMonkey => toolchain::run(
                &what,
                Command::new("node")
                    .arg(modules.join("@bytecodealliance/componentize-js/src/cli.js"))
                    .arg(stage.join("app.js"))
                    .arg("--wit")
                    .arg(&wit)
                    .args(["--world-name", "plugin", "--out"])
                    .arg(out),
            ),
            Engine::Jco => toolchain::run(
                &what,
                Command::new(modules.join(".bin").join("jco"))
                    .current_dir(&stage)
                    .args(["componentize", "app.js", "--wit"])
                    .arg(&wit)
                    .args(["-n", "plugin", "--backend", "quickjs", "-o"])
                    .arg(out),
            ),
        }
        let _ = std::fs::remove_dir_all(&stage);
    })
}

/// The component `engine`'s componentizer builds, with its defaults, from
/// the JavaScript app in `dir` (its `app.js`) for the world `world` of
/// `dir/wit`: a plain world, no toolhost contract, no helper.
pub fn js_plain(dir: &Path, world: &str, engine: Engine) -> PathBuf {
    let name = format!("plain-{}-{engine:?}", dir.file_name().and_then(|n| n.to_str()).expect("a directory"));
    let modules = componentizer(engine);
    let wit = dir.join("wit");
    let pin = engine.package();
    toolchain::build_once("js-build", &name, &pin, &[dir], &["js", "wit"], |out| {
        let what = format!("{} for {}", engine.package(), dir.display());
        let app = dir.join("app.js");
        match engine {
            Engine::QuickJs | Engine::QuickJsAsync => {
                let mut command = Command::new(modules.join(".bin").join("componentize-qjs"));
                command.arg("--wit").arg(&wit).args(["--world", world]);
                if engine == Engine::QuickJs {
                    command.arg("--sync");
                }
                toolchain::run(&what, command.arg("--js").arg(&app).arg("--output").arg(out))
            }
            Engine::SpiderMonkey => toolchain::run(
                &what,
                Command::new("node")
                    .arg(modules.join("@bytecodealliance/componentize-js/src/cli.js"))
                    .arg(&app)
                    .arg("--wit")
                    .arg(&wit)
                    .args(["--world-name", world, "--out"])
                    .arg(out),
            ),
            Engine::Jco => toolchain::run(
                &what,
                Command::new(modules.join(".bin").join("jco"))
                    .current_dir(dir)
                    .args(["componentize", "app.js", "--wit"])
                    .arg(&wit)
                    .args(["-n", world, "--backend", "quickjs", "-o"])
                    .arg(out),
            ),
        }
    })
}
