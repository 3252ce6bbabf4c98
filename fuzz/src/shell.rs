//! The shell parser (contained in its wasm sandbox) and the read-only
//! classification on top of it.

use toolhost::internals::{MAX_COMMAND, Operator, classify_parsed, command_read_only, parse, parse_fresh};

pub(crate) fn prepare() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| toolhost::internals::cache_in(Some(crate::cache_dir())));
}

/// Parse and classify a command: the parser never faults (a fault is a
/// finding: the C misbehaved, or a limit is too tight for a real command),
/// its answer is well formed, the memo answers what a fresh instance does,
/// and a command classified read-only has no parse error, substitution,
/// background job or writing redirection, and only read-only commands.
pub fn shell(data: &[u8]) {
    prepare();
    let Ok(source) = std::str::from_utf8(data) else { return };
    let parsed = parse_fresh(source);
    if let Some(fault) = &parsed.fault {
        panic!("the parser faulted on {source:?}: {fault}");
    }
    assert_eq!(parsed.too_long, source.len() > MAX_COMMAND, "{source:?}");
    for c in &parsed.commands {
        assert_eq!(c.argv.len(), c.dynamic.len(), "{source:?}: {c:?}");
    }
    let verdict = classify_parsed(&parsed);
    assert_eq!(verdict.read_only, verdict.reason.is_none(), "{source:?}: {verdict:?}");
    if verdict.read_only {
        assert!(
            !parsed.parse_error && !parsed.command_substitution && !parsed.process_substitution,
            "{source:?} is read-only but {parsed:?}"
        );
        assert!(!parsed.operators.contains(&Operator::Background), "{source:?} starts a job but is read-only");
        for c in &parsed.commands {
            assert!(!c.redirections.iter().any(|r| r.writes()), "{source:?} writes through {c:?}");
            assert!(command_read_only(c), "{source:?}: {c:?} is not read-only alone");
        }
    }
    assert_eq!(parse(source), parsed, "the memo differs from a fresh parse of {source:?}");
}

/// The native parser (its C in this process, for the sanitizers) against
/// the contained one: the same answer for every ASCII command the contained
/// one does not fault on. A difference means the C read memory it does not
/// own (inside wasm it reads other bytes than natively). Beyond ASCII the
/// two differ by design: the scanner asks the C library whether a character
/// is a letter (`iswalpha`), which glibc answers by the locale (the "C"
/// locale: ASCII only) and the wasm build's libc by Unicode (found by this
/// target: `Ϝl@\0${M`). Every input still runs natively, so a crash of the
/// C is found whatever the input.
#[cfg(feature = "native-shell")]
pub fn shell_native(data: &[u8]) {
    prepare();
    let Ok(source) = std::str::from_utf8(data) else { return };
    let native = toolhost_shell::parse_unguarded(source);
    let contained = parse_fresh(source);
    if contained.fault.is_none() && source.is_ascii() {
        assert_eq!(native, contained, "native and contained parses differ on {source:?}");
    }
}
