//! Shell commands, as the host understands them: parsed with
//! tree-sitter-bash inside a wasm sandbox ([`parse()`]), classified as read-only or not
//! ([`classify()`]: what the Bash tool's concurrency-safety, the permission
//! checks and the spawn-time checks rely on), and quoted back into words
//! ([`quote`]). Which commands run another command, and where that one starts
//! in their arguments, is known once ([`wrapped`]), for the classifier and the
//! permission rules alike.

mod classify;
mod parse;
mod wrappers;

pub use classify::{classify, classify_parsed, command_read_only};

pub(crate) use classify::{assignment_changes_what_runs, changes_loading};
pub(crate) use parse::SimpleCommand;
pub use parse::{MAX_COMMAND, Operator, Parsed, cache_in, parse, parse_fresh};
pub(crate) use wrappers::{Effect, is_wrapper, wrapped};

/// `word` as one shell word: as it is when it needs no quoting, else in
/// single quotes.
pub(crate) fn quote(word: &str) -> String {
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}
