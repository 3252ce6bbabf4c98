//! Everything a guest returns across the WIT boundary, as the host reads
//! it (the checkers live in the host crate, beside the types they build).

/// A guest's description (`info`).
pub fn info(data: &[u8]) {
    toolhost::fuzzing::guest_info(data);
}

/// A guest's `call` output, and where an oversized one is persisted.
pub fn output(data: &[u8]) {
    toolhost::fuzzing::guest_output(data);
}

/// A guest's `check-permissions` decision.
pub fn decision(data: &[u8]) {
    toolhost::fuzzing::guest_decision(data);
}
