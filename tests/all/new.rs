//! `toolhost new`: each language's project builds with its own script and
//! passes its own test (build, `toolhost check`, calls through toolhost).

use crate::support::*;

/// Runs the project's test.sh in `sb`, with `env` added.
fn project_test(sb: &Sandbox, dir: &std::path::Path, env: &[(&str, String)]) {
    let mut cmd = sb.command(dir.join("test.sh"));
    cmd.env("TOOLHOST", env!("CARGO_BIN_EXE_toolhost"));
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = cmd.output().expect("run test.sh");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "test.sh failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("HELLO") && stdout.contains("builds, loads and answers"), "{stdout}");
    // What the scaffold declares reaches the host: it asks only `call`.
    let wasm = std::fs::read_dir(dir)
        .expect("the project")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "wasm"))
        .expect("the built component");
    let r = toolhost(sb, &["check", wasm.to_str().unwrap()]);
    assert!(r.stdout.contains("per call:      asks call; declared concurrency-safe, read-only;"), "{r:?}");
}

#[test]
fn a_new_python_tool_builds_checks_and_answers() {
    let sb = Sandbox::new();
    let dir = sb.root.join("shout");
    let r = toolhost(&sb, &["new", "Shout", "--lang", "python", "--dir", dir.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    for file in ["app.py", "toolhost.py", "wit/tool.wit", "build.sh", "test.sh"] {
        assert!(dir.join(file).exists(), "no {file}");
    }
    // The suite's componentize-py (the same pinned version the script installs).
    let componentize = toolhost_tests::python::componentize_py();
    project_test(&sb, &dir, &[("COMPONENTIZE_PY", componentize.display().to_string())]);
    // Not over a project that is there already.
    let again = toolhost(&sb, &["new", "Shout", "--lang", "python", "--dir", dir.to_str().unwrap()]);
    assert!(again.code != 0 && again.stderr.contains("not empty"), "{again:?}");
}

#[test]
fn a_new_js_tool_builds_checks_and_answers() {
    let sb = Sandbox::new();
    let dir = sb.root.join("shout-js");
    let r = toolhost(&sb, &["new", "ShoutJs", "--lang", "js", "--dir", dir.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    for file in ["app.js", "toolhost.js", "wit/tool.wit", "package.json", "build.sh", "test.sh"] {
        assert!(dir.join(file).exists(), "no {file}");
    }
    // The suite's componentize-qjs (the same pinned version the project's
    // package.json installs).
    let modules = toolhost_tests::js::componentizer(toolhost_tests::js::Engine::QuickJs);
    let program = modules.join(".bin").join("componentize-qjs");
    project_test(&sb, &dir, &[("COMPONENTIZE_QJS", program.display().to_string())]);
}

/// The scaffolds pin the toolchains the suite tests the helpers with.
#[test]
fn new_projects_pin_the_tested_toolchains() {
    let sb = Sandbox::new();
    let (py, js) = (sb.root.join("py"), sb.root.join("js"));
    assert_eq!(toolhost(&sb, &["new", "P", "--lang", "python", "--dir", py.to_str().unwrap()]).code, 0);
    assert_eq!(toolhost(&sb, &["new", "J", "--lang", "js", "--dir", js.to_str().unwrap()]).code, 0);
    let build = std::fs::read_to_string(py.join("build.sh")).unwrap();
    let pin = format!("componentize-py=={}", toolhost_tests::python::COMPONENTIZE_PY);
    assert!(build.contains(&pin), "{build}");
    let package = std::fs::read_to_string(js.join("package.json")).unwrap();
    let pin = format!("\"componentize-qjs\": \"{}\"", toolhost_tests::js::COMPONENTIZE_QJS);
    assert!(package.contains(&pin), "{package}");
}

#[test]
fn a_new_rust_tool_builds_checks_and_answers() {
    let sb = Sandbox::new();
    // Made inside another Cargo workspace, it is still a project of its own.
    std::fs::write(sb.workspace.join("Cargo.toml"), "[workspace]\nmembers = []\n").unwrap();
    let r = toolhost(&sb, &["new", "WordCount", "--lang", "rust"]);
    assert_eq!(r.code, 0, "{r:?}");
    // The default directory is the name in kebab case, in the current one.
    let dir = sb.workspace.join("word-count");
    assert!(dir.join("toolhost-sdk/src/lib.rs").exists() && dir.join("src/lib.rs").exists());
    // Its dependencies are built once per checkout, not per run.
    let target = toolhost_tests::repo_root().join("target").join("scaffold");
    project_test(&sb, &dir, &[("CARGO_TARGET_DIR", target.display().to_string())]);
}

#[test]
fn new_refuses_names_the_model_apis_refuse() {
    let sb = Sandbox::new();
    for bad in ["2fast", "has space", "ünï"] {
        let r = toolhost(&sb, &["new", bad, "--lang", "python"]);
        assert!(r.code != 0 && r.stderr.contains("cannot be a tool name"), "{bad}: {r:?}");
    }
}
