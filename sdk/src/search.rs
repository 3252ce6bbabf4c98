//! Searching files with the host's ripgrep (the `search` capability, contract
//! 1.5.0): the host walks and searches natively, on every core, within the
//! directories the call may read, skipping what the permission rules hide,
//! and returns what `rg` prints for the same arguments. A component that
//! imports it needs files to read (`"workspace": "read-only"` or a directory
//! in its requests).

use crate::bindings::toolhost::tool::search as wit;
use crate::{ErrorKind, ToolError};

pub use wit::{Query, SearchMode};

/// What `rg` prints on stdout for `query`. Arguments ripgrep refuses (a bad
/// pattern, glob or type) print nothing, as with `rg`: an empty output.
pub fn run(query: &Query) -> Result<Vec<u8>, ToolError> {
    match wit::run(query) {
        Ok(out) => Ok(out),
        Err(wit::SearchError::Invalid(_)) => Ok(Vec::new()),
        Err(wit::SearchError::NotPermitted(root)) => Err(ToolError::permission_denied(format!(
            "{root} is outside the directories this call may read; search inside the working directory."
        ))),
        Err(wit::SearchError::TooLarge(bytes)) => Err(too_large(bytes)),
        Err(wit::SearchError::Interrupted) => {
            Err(ToolError::io("The search was stopped: the call's time ran out or it was cancelled."))
        }
    }
}

/// The error of a search that printed too much.
pub fn too_large(bytes: u64) -> ToolError {
    ToolError::new(
        ErrorKind::TooLarge,
        format!(
            "The search printed more than 64 MiB (at least {bytes} bytes). Narrow it: a more specific pattern, \
             a glob, a type, a path, or files_with_matches/count mode."
        ),
    )
}
