//! What the host reads of a component that does not export the contract:
//! its functions' values between JSON and WIT, its `package-docs` section,
//! the Wassette policy file beside it, and a WASI command's manifest and
//! call input (the checkers live in the host crate, beside the types they
//! build).

/// A plain function's parameters and a model's input for them.
pub fn plain_values(data: &[u8]) {
    toolhost::fuzzing::plain_values(data);
}

/// A Wassette policy file.
pub fn wassette_policy(data: &[u8]) {
    toolhost::fuzzing::wassette_policy(data);
}

/// A component's `package-docs` section.
pub fn package_docs(data: &[u8]) {
    toolhost::fuzzing::package_docs(data);
}

/// A WASI command's manifest and a call's input.
pub fn command(data: &[u8]) {
    toolhost::fuzzing::command(data);
}
