//! `toolhost check FILE.wasm`.

use crate::support::*;
use toolhost_tests::{ECHO, FILES_THIEF, FUTURE_CONTRACT};

#[test]
fn a_good_component_passes() {
    let sb = Sandbox::new();
    let r = toolhost(&sb, &["check", ECHO]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("is the tool `Echo`"), "{}", r.stdout);
    assert!(r.stdout.contains("contract:      1.6.0"), "{}", r.stdout);
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
    // Echo, importing a WASI 0.3 interface that does not exist in 0.3 (its
    // `wasi:io` went into the component model), and an interface WASI does
    // not have.
    let echo = std::fs::read(ECHO).unwrap();
    let odd = patched(&echo, "wasi:io/streams@0.2.", "wasi:io/streams@0.3.");
    let odd = patched(&odd, "wasi:cli/terminal-stdin@", "wasi:cli/terminal-stdio@");
    let file = sb.root.join("odd.wasm");
    std::fs::write(&file, odd).unwrap();
    let r = toolhost(&sb, &["check", &p(&file)]);
    assert_eq!(r.code, 1, "{r:?}");
    let out = &r.stdout;
    assert!(out.contains("imports what toolhost does not provide"), "{out}");
    assert!(
        out.contains("`wasi:io/streams@0.3.6` (not a WASI 0.3 interface toolhost links; those are cli/environment"),
        "{out}"
    );
    assert!(out.contains("`wasi:cli/terminal-stdio@0.2.6` (not an interface of wasi:cli that toolhost links"), "{out}");
    // (The check before compiling says this; after compiling, the link
    // would have failed on the first of them alone.)
}

/// `toolhost stamp`: requests written into a component without the SDK's
/// macro are read like the macro's, checked first, and never doubled.
#[test]
fn stamp_writes_requests_the_loader_reads() {
    let sb = Sandbox::new();
    let wasm = sb.root.join("echo.wasm");
    std::fs::copy(ECHO, &wasm).unwrap();
    let file = wasm.to_str().unwrap();
    let original = std::fs::read(&wasm).unwrap();
    // Refused as the loader would refuse them; the file is left alone.
    let bad = toolhost(&sb, &["stamp", file, r#"{"hosts": ["exa mple.com"]}"#]);
    assert!(bad.code != 0 && bad.stderr.contains("not valid"), "{bad:?}");
    assert_eq!(std::fs::read(&wasm).unwrap(), original);

    let requests = sb.root.join("requests.json");
    std::fs::write(&requests, r#"{"env": ["ECHO_TOKEN"], "hosts": ["api.example.com:443"]}"#).unwrap();
    let r = toolhost(&sb, &["stamp", file, &format!("@{}", requests.display())]);
    assert_eq!(r.code, 0, "{r:?}");
    let checked = toolhost(&sb, &["check", file]);
    assert_eq!(checked.code, 0, "{checked:?}");
    assert!(checked.stdout.contains("requests:      host api.example.com:443, variable ECHO_TOKEN"), "{checked:?}");
    // It loads, and the variable exists for it only once granted.
    sb.install(file);
    let tools = toolhost(&sb, &["tools"]);
    assert!(tools.code == 0 && tools.stdout.contains("Echo"), "{tools:?}");

    let again = toolhost(&sb, &["stamp", file, r#"{"env": ["OTHER"]}"#]);
    assert!(again.code != 0 && again.stderr.contains("section already"), "{again:?}");
    // --out leaves the source as it was.
    let out = sb.root.join("copy.wasm");
    let fresh = sb.root.join("fresh.wasm");
    std::fs::copy(ECHO, &fresh).unwrap();
    let r = toolhost(&sb, &["stamp", fresh.to_str().unwrap(), r#"{"memory_mib": 32}"#, "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(std::fs::read(&fresh).unwrap(), original);
    assert!(toolhost(&sb, &["check", out.to_str().unwrap()]).stdout.contains("memory 32 MiB"));
}

#[test]
fn a_component_built_against_a_retired_development_contract_is_refused_with_the_fix() {
    // 1.1.0 to 1.4.0 were never released: a component naming one of them
    // (here Echo with its interface names rewritten; the names are all the
    // host reads before refusing) is refused, and told what to build against.
    let sb = Sandbox::new();
    let retired = patched(&std::fs::read(ECHO).unwrap(), "@1.6.0", "@1.2.0");
    let path = sb.root.join("retired.wasm");
    std::fs::write(&path, &retired).unwrap();
    let r = toolhost(&sb, &["check", path.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    let reason = "was built against toolhost contract 1.2.0, a development version that was never released";
    assert!(r.stdout.contains(reason) && r.stdout.contains("rebuild it against contract 1.6.0"), "{r:?}");
    // Installed anyway, it is not loaded, and the other tools still are.
    sb.install(path.to_str().unwrap());
    let r = toolhost(&sb, &["tools"]);
    assert!(r.stderr.contains(reason), "{r:?}");
    assert!(r.stdout.contains("Read"), "{r:?}");
}
