//! Builds the test guests (tests/guests/*) as components and records their
//! paths as constants, so every test and benchmark shares one build; and
//! meanwhile installs the toolchains the tests use (`src/pins.rs`), all at
//! once: they wait on the network, not on the cores the build keeps busy.

use std::path::{Path, PathBuf};

#[path = "../host/core/build_wasm.rs"]
mod build_wasm;
#[path = "src/pins.rs"]
mod pins;
// The crate's own module: the build uses its installing half.
#[allow(dead_code)]
#[path = "src/toolchain.rs"]
mod toolchain;

/// The workspace root (what the crate's `repo_root` is).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ lives in the workspace root").to_path_buf()
}

const GUESTS: &[&str] = &[
    "echo",
    "sleeper",
    "adversary",
    "future-contract",
    "files-thief",
    "broken-info",
    "process-thief",
    "contract-1-0",
    "warm",
    "declared",
    "mover",
    "grantee",
    "fetcher",
    "async-adversary",
    "async-tool",
    "sdk-async",
    "plain",
    "plain-adversary",
    "plain-async",
    "command",
];

fn main() {
    let root = repo_root();
    for dir in ["tests/guests", "sdk", "wit", "tests/src/pins.rs", "tests/src/toolchain.rs"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    // A toolchain that cannot be installed now is a warning: the test that
    // needs it tries again and fails saying why.
    let installs: Vec<_> =
        pins::ALL.iter().map(|pin| std::thread::spawn(move || (pin, toolchain::install(pin)))).collect();
    let packages: Vec<String> = GUESTS.iter().map(|g| format!("toolhost-guest-{g}")).collect();
    let dir = build_wasm::build(&root, &packages);
    for install in installs {
        match install.join() {
            Ok((_, Ok(_))) => {}
            Ok((pin, Err(why))) => {
                let first = why.lines().next().unwrap_or_default();
                println!("cargo:warning=the tests' {} was not installed: {first}", pin.requirement());
            }
            Err(_) => println!("cargo:warning=installing the tests' toolchains panicked"),
        }
    }
    let mut consts = String::new();
    for g in GUESTS {
        let path = dir.join(format!("toolhost_guest_{}.wasm", g.replace('-', "_")));
        assert!(path.exists(), "{} was not built", path.display());
        consts.push_str(&format!(
            "/// The `{g}` test guest.\npub const {}: &str = {:?};\n",
            g.replace('-', "_").to_uppercase(),
            path.display().to_string()
        ));
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("guests.rs"), consts).expect("writing guests.rs");
}
