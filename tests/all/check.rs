//! `toolhost check FILE.wasm`.

use crate::support::*;
use toolhost_tests::{ECHO, FILES_THIEF, FUTURE_CONTRACT};

#[test]
fn a_good_component_passes() {
    let sb = Sandbox::new();
    let r = toolhost(&sb, &["check", ECHO]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("is the tool `Echo`"), "{}", r.stdout);
    assert!(r.stdout.contains("contract:      1.1.0"), "{}", r.stdout);
    assert!(r.stdout.contains("capabilities:  progress"), "{}", r.stdout);
}

#[test]
fn bad_components_fail_with_the_reason() {
    let sb = Sandbox::new();
    let garbage = sb.root.join("garbage.wasm");
    std::fs::write(&garbage, "nope").unwrap();
    let cases = [
        (FUTURE_CONTRACT.to_string(), "built against toolhost contract 2.0.0"),
        (FILES_THIEF.to_string(), "imports the `files` capability, which is not granted"),
        (p(&garbage), "not a WebAssembly file"),
        (p(&sb.root.join("missing.wasm")), "cannot read"),
    ];
    for (file, reason) in cases {
        let r = toolhost(&sb, &["check", &file]);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(r.stdout.contains(reason), "expected {reason:?}: {}", r.stdout);
    }
}

/// `bytes` with every `from` replaced by `to` (of the same length).
fn patched(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let (from, to) = (from.as_bytes(), to.as_bytes());
    let mut out = bytes.to_vec();
    let mut i = 0;
    let mut hits = 0;
    while i + from.len() <= out.len() {
        if &out[i..i + from.len()] == from {
            out[i..i + from.len()].copy_from_slice(to);
            hits += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    assert!(hits > 0, "nothing to patch");
    out
}

#[test]
fn imports_the_host_does_not_provide_are_named_before_compiling() {
    let sb = Sandbox::new();
    // Echo, importing a WASI 0.3 interface and an interface WASI does not have.
    let echo = std::fs::read(ECHO).unwrap();
    let odd = patched(&echo, "wasi:random/insecure-seed@0.2.", "wasi:random/insecure-seed@0.3.");
    let odd = patched(&odd, "wasi:cli/terminal-stdin@", "wasi:cli/terminal-stdio@");
    let file = sb.root.join("odd.wasm");
    std::fs::write(&file, odd).unwrap();
    let r = toolhost(&sb, &["check", &p(&file)]);
    assert_eq!(r.code, 1, "{r:?}");
    let out = &r.stdout;
    assert!(out.contains("imports what toolhost does not provide"), "{out}");
    assert!(
        out.contains("`wasi:random/insecure-seed@0.3.6` (a WASI 0.3 (preview 3) import: build for WASI 0.2"),
        "{out}"
    );
    assert!(out.contains("`wasi:cli/terminal-stdio@0.2.6` (not an interface of wasi:cli that toolhost links"), "{out}");
    // (The check before compiling says this; after compiling, the link
    // would have failed on the first of them alone.)
}
