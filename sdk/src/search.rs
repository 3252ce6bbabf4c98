//! Searching files with the host's ripgrep (the `search` capability, contract
//! 1.5.0): the host walks and searches natively, on every core, within the
//! directories the call may read, skipping what the permission rules hide,
//! and returns what `rg` prints for the same arguments. A component that
//! imports it needs files to read (`"workspace": "read-only"` or a directory
//! in its requests).

use crate::bindings::toolhost::tool::search as wit;
use crate::{ErrorKind, ToolError};

pub use wit::{Query, SearchError, SearchMode};

/// What `rg` prints on stdout for `query`. Arguments ripgrep refuses (a bad
/// pattern, glob or type) are an error that quotes ripgrep's explanation, as
/// Claude Code 2.1.328's Grep reports them.
pub fn run(query: &Query) -> Result<Vec<u8>, ToolError> {
    answer(wit::run(query))
}

/// What a tool makes of a search's result: [`run`]'s reading of the host's
/// answer, for a tool that also runs ripgrep's engine itself (the Grep
/// plugin's native build, with `toolhost-search`'s `contract_mapping!`).
pub fn answer(result: Result<Vec<u8>, SearchError>) -> Result<Vec<u8>, ToolError> {
    match result {
        Ok(out) => Ok(out),
        Err(SearchError::Invalid(why)) => Err(refused(&format!("rg: {why}"))),
        Err(SearchError::NotPermitted(root)) => Err(ToolError::permission_denied(format!(
            "{root} is outside the directories this call may read; search inside the working directory."
        ))),
        Err(SearchError::TooLarge(bytes)) => Err(ToolError::new(
            ErrorKind::TooLarge,
            format!(
                "The search printed more than 64 MiB (at least {bytes} bytes). Narrow it: a more specific \
                 pattern, a glob, a type, a path, or files_with_matches/count mode."
            ),
        )),
        Err(SearchError::Interrupted) => {
            Err(ToolError::io("The search was stopped: the call's time ran out or it was cancelled."))
        }
    }
}

/// The error for arguments ripgrep refuses before searching: its message
/// (`stderr`, as `rg` prints it), trimmed and cut to 2,000 UTF-16 code units.
pub fn refused(stderr: &str) -> ToolError {
    let mut why = String::new();
    let mut units = 0;
    for c in stderr.trim_matches(crate::fs::is_js_whitespace).chars() {
        units += c.len_utf16();
        if units > 2000 {
            break;
        }
        why.push(c);
    }
    ToolError::invalid_input(format!(
        "Search failed — ripgrep rejected the pattern, glob, or file type without searching:\n{why}"
    ))
}
