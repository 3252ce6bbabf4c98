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
