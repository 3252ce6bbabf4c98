//! `toolhost new NAME --lang rust|python|js [--dir DIR]`: a tool project ready
//! to build against the contract this binary serves, with its own copy of
//! the WIT and the helper (so it builds anywhere, and keeps building against
//! the contract it was made with), a build script with pinned toolchains,
//! and a test script that builds it and calls it through this host.

use anyhow::{Context as _, bail};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Python,
    /// JavaScript, on QuickJS (componentize-qjs).
    #[value(alias = "javascript")]
    Js,
}

/// The contract, and the helpers, as this binary was built with them.
const WIT: &str = include_str!("../../../wit/tool.wit");
const PYTHON_HELPER: &str = include_str!("../../../sdk/python/toolhost.py");
const JS_HELPER: &str = include_str!("../../../sdk/js/toolhost.js");
const RUST_SDK: &[(&str, &str)] = &[
    ("src/lib.rs", include_str!("../../../sdk/src/lib.rs")),
    ("src/async_tool.rs", include_str!("../../../sdk/src/async_tool.rs")),
    ("src/context.rs", include_str!("../../../sdk/src/context.rs")),
    ("src/fs.rs", include_str!("../../../sdk/src/fs.rs")),
    ("src/output.rs", include_str!("../../../sdk/src/output.rs")),
    ("src/process.rs", include_str!("../../../sdk/src/process.rs")),
    ("src/schema.rs", include_str!("../../../sdk/src/schema.rs")),
    ("src/search.rs", include_str!("../../../sdk/src/search.rs")),
    ("src/shell.rs", include_str!("../../../sdk/src/shell.rs")),
];
/// The SDK's own dependency on the hidden-path matcher, vendored beside it.
const HIDDEN_PATHS: &str = include_str!("../../../sdk/hidden-paths/src/lib.rs");

/// The SDK's own dependency on the sandbox's checks (paths, hosts), vendored
/// beside it: each source file (a test checks they are all here).
const PRIMITIVES: &[(&str, &str)] = &[
    ("src/lib.rs", include_str!("../../../sdk/primitives/src/lib.rs")),
    ("src/host.rs", include_str!("../../../sdk/primitives/src/host.rs")),
    ("src/id.rs", include_str!("../../../sdk/primitives/src/id.rs")),
    ("src/path.rs", include_str!("../../../sdk/primitives/src/path.rs")),
];

/// The vendored primitives' own manifest past `[package]`: their `ids`
/// feature, which the SDK does not use.
const PRIMITIVES_FEATURES: &str =
    "[features]\nids = [\"dep:getrandom\"]\n\n[dependencies]\ngetrandom = { version = \"0.3\", optional = true }\n";

/// The componentize-py a Python project builds with (the one the test suite
/// builds the examples with).
pub const COMPONENTIZE_PY: &str = "0.25.1";

/// The componentize-qjs a JavaScript project builds with (the one the test
/// suite builds the examples with).
pub const COMPONENTIZE_QJS: &str = "0.4.5";

/// The SDK's dependencies, as the workspace pins them (a test checks), and
/// the vendored hidden-path matcher's.
const SDK_DEPENDENCIES: &str = r#"schemars = "1"
serde = { version = "1", features = ["derive"] }
serde_json = { version = "1", features = ["preserve_order"] }
wit-bindgen = "0.61"
"#;
const HIDDEN_PATHS_DEPENDENCIES: &str = "globset = \"0.4\"\n";

/// Start a tool project: the source of a small working tool, the WIT and
/// the helper it builds against, build.sh (pinned toolchain) and test.sh
#[derive(clap::Args)]
pub struct Args {
    /// The tool's name, as the model will call it (e.g. `WordCount`)
    name: String,
    /// The language to write it in
    #[arg(long, value_enum)]
    lang: Lang,
    /// Where to create it [default: the name in kebab case, here]
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// `toolhost new`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    new(&args.name, args.lang, args.dir.as_deref())
}

fn new(name: &str, lang: Lang, dir: Option<&Path>) -> anyhow::Result<ExitCode> {
    check_name(name)?;
    let crate_name = snake(name);
    let dir = dir.map_or_else(|| PathBuf::from(crate_name.replace('_', "-")), Path::to_path_buf);
    if dir.exists() && std::fs::read_dir(&dir).map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("{} exists and is not empty; pick another --dir", dir.display());
    }
    let files = match lang {
        Lang::Python => python(name, &crate_name),
        Lang::Js => js(name, &crate_name),
        Lang::Rust => rust(name, &crate_name),
    };
    for (path, contents, executable) in &files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
        #[cfg(unix)]
        if *executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    let shown = dir.display();
    println!("created the {lang:?} tool {name} in {shown}");
    println!("  {shown}/build.sh   builds {crate_name}.wasm");
    println!("  {shown}/test.sh    builds it, checks it and calls it through toolhost");
    Ok(ExitCode::SUCCESS)
}

/// The model APIs' rule for tool names.
fn check_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    if !ok {
        bail!("`{name}` cannot be a tool name: start with a letter, then letters, digits, `_` or `-`, at most 64");
    }
    Ok(())
}

/// `MyTool` → `my_tool`, `web-fetch` → `web_fetch`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            if previous_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            previous_lower = false;
        } else if c == '-' {
            out.push('_');
            previous_lower = false;
        } else {
            out.push(c);
            previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        }
    }
    out
}

type File = (String, String, bool);

fn file(path: &str, contents: impl Into<String>) -> File {
    (path.to_string(), contents.into(), false)
}

fn script(path: &str, contents: impl Into<String>) -> File {
    (path.to_string(), contents.into(), true)
}

/// The test script: build, `toolhost check`, then calls through a plugins
/// directory of its own (a good one, and one the schema refuses).
fn test_script(crate_name: &str, wasm: &str, name: &str) -> String {
    format!(
        r#"#!/bin/sh
# Builds {crate_name}, checks it and calls it through toolhost ($TOOLHOST, else
# toolhost on PATH). Exits non-zero if any step fails.
set -eu
cd "$(dirname "$0")"
TOOLHOST=${{TOOLHOST:-toolhost}}
./build.sh
"$TOOLHOST" check {wasm}
plugins=$(mktemp -d)
trap 'rm -rf "$plugins"' EXIT
cp {wasm} "$plugins/"
out=$("$TOOLHOST" --plugins "$plugins" call {name} '{{"text": "hello"}}')
echo "$out"
[ "$out" = "HELLO" ] || {{ echo "expected HELLO" >&2; exit 1; }}
if "$TOOLHOST" --plugins "$plugins" call {name} '{{"txt": "hello"}}' >/dev/null 2>&1; then
    echo "a misspelt field was not refused" >&2; exit 1
fi
echo "ok: {name} builds, loads and answers"
"#
    )
}

fn python(name: &str, crate_name: &str) -> Vec<File> {
    let wasm = format!("{crate_name}.wasm");
    let app = format!(
        r#""""{name}: a toolhost tool in Python (see toolhost.py for what the helper does)."""

import toolhost


class {class}(toolhost.Tool):
    name = "{name}"
    description = "Shouts the text it is given."
    prompt = "Returns `text` in capitals. Replace this with what the model should know about the tool."
    input_schema = {{
        "type": "object",
        "properties": {{"text": {{"type": "string", "description": "What to shout"}}}},
        "required": ["text"],
    }}
    # The same answer for every input: declared once, so the host stops
    # asking on each call (MCP clients see read-only and destructive too).
    read_only = True
    concurrency_safe = True
    destructive = False
    # Nothing is kept in the instance between calls (the count is in session
    # state): one warm instance may serve a session's calls, saving CPython's
    # start-up on each.
    reuse_instance = True

    def call(self, input, ctx):
        ctx.progress("shouting")
        calls = int(ctx.session.get("calls", "0")) + 1
        ctx.session.set("calls", str(calls))  # kept for the session
        if not input["text"].strip():
            raise toolhost.ToolError("give some text to shout", "invalid-input")
        return input["text"].upper()


Tool = toolhost.export({class})
"#,
        class = class_name(name),
    );
    let build = format!(
        r#"#!/bin/sh
# Builds {wasm} with componentize-py {COMPONENTIZE_PY} (installed into .venv on
# first use; set COMPONENTIZE_PY to use another installation).
set -eu
cd "$(dirname "$0")"
if [ -z "${{COMPONENTIZE_PY:-}}" ]; then
    if [ ! -x .venv/bin/componentize-py ]; then
        python3 -m venv .venv
        .venv/bin/pip install --quiet --disable-pip-version-check componentize-py=={COMPONENTIZE_PY}
    fi
    COMPONENTIZE_PY=.venv/bin/componentize-py
fi
"$COMPONENTIZE_PY" -d wit -w plugin componentize -p . app -o {wasm}
"#
    );
    vec![
        file("app.py", app),
        file("toolhost.py", PYTHON_HELPER),
        file("wit/tool.wit", WIT),
        script("build.sh", build),
        script("test.sh", test_script(crate_name, &wasm, name)),
        file(".gitignore", ".venv/\n__pycache__/\n*.wasm\n"),
    ]
}

fn js(name: &str, crate_name: &str) -> Vec<File> {
    let wasm = format!("{crate_name}.wasm");
    let app = format!(
        r#"// {name}: a toolhost tool in JavaScript (see toolhost.js for what the helper does).

import {{ define, ToolError }} from "./toolhost.js";

export const tool = define({{
  name: "{name}",
  description: "Shouts the text it is given.",
  prompt: "Returns `text` in capitals. Replace this with what the model should know about the tool.",
  inputSchema: {{
    type: "object",
    properties: {{ text: {{ type: "string", description: "What to shout" }} }},
    required: ["text"],
  }},
  // The same answer for every input: declared once, so the host stops
  // asking on each call (MCP clients see read-only and destructive too).
  readOnly: true,
  concurrencySafe: true,
  destructive: false,
  // Nothing is kept in the instance between calls (the count is in session
  // state): one warm instance may serve a session's calls.
  reuseInstance: true,

  call(input, ctx) {{
    ctx.progress("shouting");
    const calls = Number(ctx.session.get("calls", "0")) + 1;
    ctx.session.set("calls", String(calls)); // kept for the session
    if (!input.text.trim()) throw new ToolError("give some text to shout", "invalid-input");
    return input.text.toUpperCase();
  }},
}});
"#
    );
    let build = format!(
        r#"#!/bin/sh
# Builds {wasm} with componentize-qjs {COMPONENTIZE_QJS} (QuickJS; installed into
# node_modules by npm on first use; set COMPONENTIZE_QJS to use another
# installation), with its defaults (its runtime uses the component-model
# async ABI, which toolhost runs).
set -eu
cd "$(dirname "$0")"
if [ -z "${{COMPONENTIZE_QJS:-}}" ]; then
    if [ ! -x node_modules/.bin/componentize-qjs ]; then
        npm install --no-audit --no-fund --loglevel=error
    fi
    COMPONENTIZE_QJS=node_modules/.bin/componentize-qjs
fi
"$COMPONENTIZE_QJS" --wit wit --world plugin --js app.js --output {wasm}
"#
    );
    let package = format!(
        r#"{{
  "name": "{package}",
  "private": true,
  "type": "module",
  "scripts": {{
    "build": "./build.sh",
    "test": "./test.sh"
  }},
  "devDependencies": {{
    "componentize-qjs": "{COMPONENTIZE_QJS}"
  }}
}}
"#,
        package = crate_name.replace('_', "-"),
    );
    vec![
        file("app.js", app),
        file("toolhost.js", JS_HELPER),
        file("wit/tool.wit", WIT),
        file("package.json", package),
        script("build.sh", build),
        script("test.sh", test_script(crate_name, &wasm, name)),
        file(".gitignore", "node_modules/\n*.wasm\n"),
    ]
}

fn rust(name: &str, crate_name: &str) -> Vec<File> {
    let wasm = format!("{crate_name}.wasm");
    let manifest = format!(
        r#"[package]
name = "{crate_name}"
version = "0.1.0"
edition = "2024"

[lib]
crate-type = ["cdylib"]

[dependencies]
toolhost-sdk = {{ path = "toolhost-sdk" }}
schemars = "1"
serde = {{ version = "1", features = ["derive"] }}

[profile.release]
opt-level = "s"
lto = true
strip = true

# A project of its own, even when made inside another Cargo workspace.
[workspace]
"#
    );
    let lib = format!(
        r#"//! {name}: a toolhost tool in Rust.

use toolhost_sdk::{{Context, Deserialize, JsonSchema, Output, Tool, ToolError, export_tool}};

/// The input; doc comments become the schema's descriptions.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)] // the schema refuses fields it does not name
struct Input {{
    /// What to shout.
    text: String,
}}

struct {class};

impl Tool for {class} {{
    type Input = Input;
    const NAME: &'static str = "{name}";
    const DESCRIPTION: &'static str = "Shouts the text it is given.";
    // The same answer for every input: declared once, so the host stops
    // asking on each call (MCP clients see read-only and destructive too).
    const READ_ONLY_HINT: Option<bool> = Some(true);
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(true);
    const DESTRUCTIVE_HINT: Option<bool> = Some(false);
    // It keeps the default `validate_input` and `check_permissions`.
    const VALIDATES_INPUT: bool = false;
    const CHECKS_PERMISSIONS: bool = false;

    fn prompt() -> String {{
        "Returns `text` in capitals. Replace this with what the model should know about the tool.".into()
    }}

    fn call(input: Input, ctx: &Context) -> Result<Output, ToolError> {{
        ctx.progress("shouting");
        let calls = ctx.session().get("calls").and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) + 1;
        ctx.session().set("calls", &calls.to_string())?; // kept for the session
        if input.text.trim().is_empty() {{
            return Err(ToolError::invalid_input("give some text to shout"));
        }}
        Ok(Output::text(input.text.to_uppercase()))
    }}
}}

export_tool!({class});
"#,
        class = class_name(name),
    );
    let build = format!(
        r#"#!/bin/sh
# Builds {wasm} for wasm32-wasip2 (the target is added through rustup if missing).
set -eu
cd "$(dirname "$0")"
rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
cargo build --release --target wasm32-wasip2
cp "${{CARGO_TARGET_DIR:-target}}/wasm32-wasip2/release/{wasm}" {wasm}
"#
    );
    let sdk_manifest = format!(
        "[package]\nname = \"toolhost-sdk\"\nversion = \"{}\"\nedition = \"2024\"\n\n[dependencies]\n{SDK_DEPENDENCIES}\
         toolhost-hidden-paths = {{ path = \"../toolhost-hidden-paths\" }}\n\
         toolhost-primitives = {{ path = \"../toolhost-primitives\" }}\n",
        env!("CARGO_PKG_VERSION")
    );
    let primitives_manifest = format!(
        "[package]\nname = \"toolhost-primitives\"\nversion = \"{}\"\nedition = \"2024\"\n\n{PRIMITIVES_FEATURES}",
        env!("CARGO_PKG_VERSION")
    );
    let hidden_paths_manifest = format!(
        "[package]\nname = \"toolhost-hidden-paths\"\nversion = \"{}\"\nedition = \"2024\"\n\n[dependencies]\n\
         {HIDDEN_PATHS_DEPENDENCIES}",
        env!("CARGO_PKG_VERSION")
    );
    let mut files = vec![
        file("Cargo.toml", manifest),
        file("src/lib.rs", lib),
        file("toolhost-sdk/Cargo.toml", sdk_manifest),
        file("toolhost-hidden-paths/Cargo.toml", hidden_paths_manifest),
        file("toolhost-hidden-paths/src/lib.rs", HIDDEN_PATHS),
        file("toolhost-primitives/Cargo.toml", primitives_manifest),
        file("wit/tool.wit", WIT),
        script("build.sh", build),
        script("test.sh", test_script(crate_name, &wasm, name)),
        file(".gitignore", "target/\n*.wasm\n"),
    ];
    files.extend(RUST_SDK.iter().map(|(path, text)| file(&format!("toolhost-sdk/{path}"), *text)));
    files.extend(PRIMITIVES.iter().map(|(path, text)| file(&format!("toolhost-primitives/{path}"), *text)));
    files
}

/// `my-tool` → `MyTool`.
fn class_name(name: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in name.chars() {
        if c == '-' || c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new Rust project gets every source file of the SDK and of the
    /// primitives it depends on.
    #[test]
    fn the_vendored_sdk_is_every_source_file() {
        for (crate_dir, vendored) in [("sdk", RUST_SDK), ("sdk/primitives", PRIMITIVES)] {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(crate_dir).join("src");
            let mut files: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.ends_with(".rs"))
                .map(|n| format!("src/{n}"))
                .collect();
            files.sort();
            let mut vendored: Vec<String> = vendored.iter().map(|(p, _)| p.to_string()).collect();
            vendored.sort();
            assert_eq!(vendored, files, "{crate_dir}");
        }
        // The vendored manifest's features and dependencies are the crate's.
        let manifest = include_str!("../../../sdk/primitives/Cargo.toml");
        for line in PRIMITIVES_FEATURES.lines().filter(|l| !l.is_empty()) {
            assert!(manifest.lines().any(|l| l == line), "sdk/primitives/Cargo.toml has no `{line}`");
        }
    }

    #[test]
    fn names() {
        assert_eq!(snake("MyTool"), "my_tool");
        assert_eq!(snake("web-fetch"), "web_fetch");
        assert_eq!(snake("Calc2"), "calc2");
        assert_eq!(class_name("web-fetch"), "WebFetch");
        assert_eq!(class_name("MyTool"), "MyTool");
        assert!(check_name("My_Tool-2").is_ok());
        for bad in ["", "2x", "a b", "é", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    /// The vendored SDK depends on what the workspace pins.
    #[test]
    fn the_sdk_dependencies_match_the_workspace() {
        let workspace = include_str!("../../../Cargo.toml");
        for line in SDK_DEPENDENCIES.lines() {
            assert!(workspace.lines().any(|l| l == line), "the workspace pins `{line}` differently");
        }
        for line in HIDDEN_PATHS_DEPENDENCIES.lines() {
            assert!(workspace.lines().any(|l| l == line), "the workspace pins `{line}` differently");
        }
        // Each crate's dependencies from the workspace, besides the vendored
        // hidden-path matcher, are the ones written here.
        for (manifest, written) in [
            (include_str!("../../../sdk/Cargo.toml"), SDK_DEPENDENCIES),
            (include_str!("../../../sdk/hidden-paths/Cargo.toml"), HIDDEN_PATHS_DEPENDENCIES),
        ] {
            let dependencies = manifest.split("[dependencies]").nth(1).unwrap_or_default();
            let used: Vec<&str> = dependencies
                .lines()
                .filter_map(|l| l.strip_suffix(".workspace = true"))
                .filter(|name| *name != "toolhost-hidden-paths" && *name != "toolhost-primitives")
                .collect();
            let names: Vec<&str> = written.lines().filter_map(|l| l.split(' ').next()).collect();
            assert_eq!(used, names, "the dependencies changed: {manifest}");
        }
    }
}
