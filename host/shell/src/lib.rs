//! A shell command as toolhost reasons about it: its simple commands,
//! operators and constructs ([`Parsed`]), what the permission rules, the
//! read-only classification and the `shell` import of the contract work from.
//!
//! The parser that builds a [`Parsed`] is tree-sitter-bash: tree-sitter's
//! runtime, the bash grammar and its external scanner, all C, reading
//! whatever a model or a component wrote. With the `tree-sitter` feature this
//! crate is that parser ([`parse_unguarded`]) and, built for
//! `wasm32-unknown-unknown`, a module with no imports that exports it
//! ([`guest`]). The host runs that module under wasmtime, a fresh instance
//! per command, and reads its answer back with [`Parsed::from_guest`]: a
//! memory error in the C is a trap there, never a fault in the host.

use serde::{Deserialize, Serialize};

#[cfg(feature = "tree-sitter")]
mod walk;
#[cfg(feature = "tree-sitter")]
pub use walk::parse_unguarded;

#[cfg(all(feature = "tree-sitter", target_arch = "wasm32"))]
pub mod guest;

/// Longest command the host parses: anything longer is a parse error (and
/// so never read-only, and never allowed by a rule).
pub const MAX_COMMAND: usize = 64 * 1024;

/// How deep a command may nest (subshells, groups, substitutions, loops)
/// before it counts as unparsable. Real commands nest a few levels. A list
/// or pipeline of any length does not count: `a && b && c` is one level.
pub const MAX_DEPTH: usize = 1_000;

/// A control operator between commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Operator {
    /// `&&`
    And,
    /// `||`
    Or,
    /// `;` or a newline between statements.
    Sequence,
    /// `|` or `|&`
    Pipe,
    /// `&` (run in the background)
    Background,
}

/// A redirection of a simple command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redirection {
    /// The file descriptor written before the operator (`2` in `2>err`).
    pub descriptor: Option<String>,
    /// `>`, `>>`, `<`, `&>`, `>&`, `<<`, `<<<`, ...
    pub operator: String,
    /// The target word as written (for a heredoc: its delimiter).
    pub target: String,
}

impl Redirection {
    /// Whether it may write to a file: an output operator whose target is not
    /// `/dev/null` and not a file descriptor (`2>&1`).
    pub fn writes(&self) -> bool {
        let output = matches!(self.operator.as_str(), ">" | ">>" | ">|" | "&>" | "&>>" | ">&" | "<>" | "&>|");
        let dup = matches!(self.operator.as_str(), ">&" | "<&")
            && self.target.chars().all(|c| c.is_ascii_digit() || c == '-');
        output && !dup && self.target != "/dev/null"
    }
}

/// One simple command: `NAME=value cmd arg... >redirect`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimpleCommand {
    /// The command name and its arguments, unquoted.
    pub argv: Vec<String>,
    /// For each word of `argv`, whether its value depends on an expansion or
    /// substitution (so `argv` holds only its source text).
    pub dynamic: Vec<bool>,
    /// Assignments before the name (`FOO=1` in `FOO=1 ls`), as written.
    pub assignments: Vec<String>,
    pub redirections: Vec<Redirection>,
}

/// The structure of a shell command.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parsed {
    /// Every simple command, in source order (inside pipelines, lists,
    /// subshells, loops and substitutions alike).
    pub commands: Vec<SimpleCommand>,
    /// The control operators, in source order.
    pub operators: Vec<Operator>,
    pub command_substitution: bool,
    pub process_substitution: bool,
    pub variable_expansion: bool,
    pub heredoc: bool,
    pub subshell: bool,
    /// `if`, `for`, `while`, `case` or a function definition.
    pub control_flow: bool,
    /// The command (or part of it) could not be parsed; also set for one
    /// longer than [`MAX_COMMAND`], nested deeper than [`MAX_DEPTH`], or on
    /// which the parser failed ([`Parsed::fault`]).
    pub parse_error: bool,
    /// The command is longer than [`MAX_COMMAND`] and was not parsed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub too_long: bool,
    /// The parser failed on this command (trapped, ran out of its fuel or
    /// memory, or answered something malformed): why, in words. Set by the
    /// host, never by the parser.
    #[serde(skip)]
    pub fault: Option<String>,
}

/// The most bytes of answer the host reads from the parser: far more than
/// the answer to any command of [`MAX_COMMAND`] bytes (every byte a word
/// costs a few bytes of JSON), far less than its memory.
pub const MAX_ANSWER: usize = 64 * MAX_COMMAND;

impl Parsed {
    /// The answer for a command that was not parsed because it is too long.
    pub fn too_long() -> Parsed {
        Parsed { parse_error: true, too_long: true, ..Parsed::default() }
    }

    /// The answer for a command the parser failed on: unparsable, so never
    /// read-only and never allowed by a rule, with `why` kept for the log
    /// and for a tool that asked.
    pub fn fault(why: impl Into<String>) -> Parsed {
        Parsed { parse_error: true, fault: Some(why.into()), ..Parsed::default() }
    }

    /// Reads the parser's answer: JSON of a [`Parsed`], no longer than
    /// [`MAX_ANSWER`], whose every command has a `dynamic` flag per word.
    /// Anything else is an error (the parser's memory is only as sound as
    /// its C: its answer is checked as untrusted input).
    pub fn from_guest(answer: &[u8]) -> Result<Parsed, AnswerError> {
        if answer.len() > MAX_ANSWER {
            return Err(AnswerError::TooLong(answer.len()));
        }
        let parsed: Parsed = serde_json::from_slice(answer).map_err(|e| AnswerError::NotParsed(e.to_string()))?;
        if parsed.too_long {
            return Err(AnswerError::ClaimsTooLong);
        }
        if let Some(c) = parsed.commands.iter().find(|c| c.argv.len() != c.dynamic.len()) {
            return Err(AnswerError::UnevenFlags { words: c.argv.len(), flags: c.dynamic.len() });
        }
        Ok(parsed)
    }

    /// The answer as the parser sends it (see [`Parsed::from_guest`]).
    pub fn to_guest(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a Parsed is plain data")
    }
}

/// Why the parser's answer is not taken ([`Parsed::from_guest`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnswerError {
    /// Longer than [`MAX_ANSWER`] bytes (how many).
    TooLong(usize),
    /// Not the JSON of a [`Parsed`] (why).
    NotParsed(String),
    /// It says the command was too long, which only the host can know.
    ClaimsTooLong,
    /// A command whose words and expansion flags differ in number.
    UnevenFlags {
        /// Its words.
        words: usize,
        /// Its flags.
        flags: usize,
    },
}

impl std::fmt::Display for AnswerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnswerError::TooLong(len) => write!(f, "its answer is {len} bytes, more than the {MAX_ANSWER} allowed"),
            AnswerError::NotParsed(why) => write!(f, "its answer is not a parsed command ({why})"),
            AnswerError::ClaimsTooLong => write!(f, "its answer claims a length it cannot know"),
            AnswerError::UnevenFlags { words, flags } => {
                write!(f, "its answer has a command of {words} words with {flags} expansion flags")
            }
        }
    }
}

impl std::error::Error for AnswerError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_round_trips_and_is_checked() {
        let parsed = Parsed {
            commands: vec![SimpleCommand {
                argv: vec!["ls".into(), "$X".into()],
                dynamic: vec![false, true],
                assignments: vec!["A=1".into()],
                redirections: vec![Redirection {
                    descriptor: Some("2".into()),
                    operator: ">".into(),
                    target: "e".into(),
                }],
            }],
            operators: vec![Operator::Pipe, Operator::Background],
            variable_expansion: true,
            ..Parsed::default()
        };
        assert_eq!(Parsed::from_guest(&parsed.to_guest()).unwrap(), parsed);

        let mut uneven = parsed.clone();
        uneven.commands[0].dynamic.pop();
        assert!(Parsed::from_guest(&uneven.to_guest()).unwrap_err().to_string().contains("2 words with 1"));
        assert!(Parsed::from_guest(&Parsed::too_long().to_guest()).is_err());
        assert!(Parsed::from_guest(br#"{"commands":[],"extra":1}"#).is_err());
        assert!(Parsed::from_guest(b"\xff").is_err());
        assert!(Parsed::from_guest(&vec![b' '; MAX_ANSWER + 1]).unwrap_err().to_string().contains("more than"));
        // The host's fault note never crosses from the parser.
        let mut faulted = parsed;
        faulted.fault = Some("x".into());
        assert_eq!(Parsed::from_guest(&faulted.to_guest()).unwrap().fault, None);
    }

    #[test]
    fn what_a_redirection_writes() {
        let r = |op: &str, target: &str| Redirection { descriptor: None, operator: op.into(), target: target.into() };
        assert!(r(">", "out").writes());
        assert!(r(">>", "out").writes());
        assert!(r("&>", "out").writes());
        assert!(!r(">", "/dev/null").writes());
        assert!(!r(">&", "1").writes());
        assert!(!r(">&", "-").writes());
        assert!(r(">&", "file").writes());
        assert!(!r("<", "in").writes());
        assert!(!r("<<<", "word").writes());
    }
}
