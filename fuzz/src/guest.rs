//! Everything a guest returns across the WIT boundary, as the host reads
//! it, and a model's input as the pipeline repairs it (the checkers live in
//! the host crate, beside the types they build).

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

/// A model's input through the repair stage (typed JSON text, double-escaped
/// `\uXXXX`, the built-ins' slips).
pub fn repair(data: &[u8]) {
    toolhost::fuzzing::repair_input(data);
}
