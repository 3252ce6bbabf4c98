//! Builds the test guests (tests/guests/*) as components and records their
//! paths as constants, so every test and benchmark shares one build.

use std::path::PathBuf;

#[path = "../host/core/build_wasm.rs"]
mod build_wasm;

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
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the workspace root")
        .to_path_buf();
    for dir in ["tests/guests", "sdk", "wit"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    let packages: Vec<String> = GUESTS.iter().map(|g| format!("toolhost-guest-{g}")).collect();
    let dir = build_wasm::build(&root, &packages);
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
