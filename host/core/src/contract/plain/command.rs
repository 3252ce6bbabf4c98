//! A WASI command (a component exporting `wasi:cli/run`, such as a Rust
//! program built for `wasm32-wasip2`) served as a tool: its input is the
//! program's arguments and standard input, its answer what it wrote to
//! standard output; a non-zero exit (or a failed `run`) is an error result
//! carrying its status, standard error and standard output.
//!
//! The arguments and standard input are the call's, not the Store's: an
//! instance is made before its input is known (a spare made ahead, the
//! pipeline's checks before the call), so the Store serves them from a
//! [`Stdio`] filled when the call starts.

use crate::contract::bindings::toolhost::tool::types::{ContentBlock, ErrorKind, ToolError, ToolOutput};
use serde_json::{Value, json};

/// The interface a command exports.
pub(crate) const RUN: &str = "run";

/// Most arguments a call may pass.
pub(crate) const MAX_ARGS: usize = 4096;

/// Bytes of standard output a call keeps; what a program writes past them
/// is counted and dropped, and the answer says so.
pub(crate) const MAX_STDOUT: usize = 8 << 20;

/// The answer of a run that succeeded and wrote nothing to standard output.
pub(crate) const NO_OUTPUT: &str = "(The program succeeded and wrote nothing to standard output.)";

/// What a command's call needs of its Store: the arguments and standard
/// input it runs with, and what it wrote while it ran.
pub(crate) trait Stdio {
    /// The run's arguments (after the program's name, which the Store
    /// knows: the tool's) and standard input.
    fn start(&mut self, args: Vec<String>, stdin: Vec<u8>);
    /// What the program wrote since [`Stdio::start`].
    fn printed(&self) -> Printed;
}

/// What a program wrote: each stream's bytes kept, and how many more it
/// wrote past the cap.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Printed {
    pub stdout: Vec<u8>,
    pub stdout_dropped: u64,
    pub stderr: Vec<u8>,
    pub stderr_dropped: u64,
}

/// The input schema of every command: its arguments, and its standard
/// input as text.
pub(crate) fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "args": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": MAX_ARGS,
                "description": "The program's command-line arguments, after its name (none if left out)."
            },
            "stdin": {
                "type": "string",
                "description": "Text the program reads on its standard input (empty if left out)."
            }
        },
        "additionalProperties": false
    })
}

/// Why an input does not make a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum InputError {
    #[error("the input is not a JSON object of `args` and `stdin`")]
    NotAnObject,
    #[error("`args` must be an array of strings")]
    Args,
    #[error("`args[{0}]` holds a NUL character, which no program argument can carry")]
    Nul(usize),
    #[error("`args` holds {0} arguments; at most {MAX_ARGS} are passed")]
    TooMany(usize),
    #[error("`stdin` must be a string")]
    Stdin,
    #[error("`{0}` is not an input of a command (it takes `args` and `stdin`)")]
    Unknown(String),
}

/// A run for `input`: its arguments (after the program's name) and its
/// standard input.
pub(crate) fn run_of(input: &Value) -> Result<(Vec<String>, Vec<u8>), InputError> {
    let object = input.as_object().ok_or(InputError::NotAnObject)?;
    if let Some(key) = object.keys().find(|k| *k != "args" && *k != "stdin") {
        return Err(InputError::Unknown(key.clone()));
    }
    let mut args = Vec::new();
    match object.get("args") {
        None => {}
        Some(Value::Array(items)) if items.len() > MAX_ARGS => return Err(InputError::TooMany(items.len())),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let arg = item.as_str().ok_or(InputError::Args)?;
                if arg.contains('\0') {
                    return Err(InputError::Nul(i));
                }
                args.push(arg.to_string());
            }
        }
        Some(_) => return Err(InputError::Args),
    }
    let stdin = match object.get("stdin") {
        None => Vec::new(),
        Some(Value::String(s)) => s.clone().into_bytes(),
        Some(_) => return Err(InputError::Stdin),
    };
    Ok((args, stdin))
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// `run` returned, `ok` or `err` (WASI's exit statuses 0 and 1).
    Returned(bool),
    /// The program called `exit` with this status.
    Status(i32),
}

/// The answer of a run that ended as `exit` says, with what it `printed`.
pub(crate) fn answer(exit: Exit, printed: &Printed) -> Result<ToolOutput, ToolError> {
    let stdout = String::from_utf8_lossy(&printed.stdout);
    let status = match exit {
        Exit::Returned(true) | Exit::Status(0) => {
            let mut text = stdout.into_owned();
            if printed.stdout_dropped > 0 {
                text.push_str(&dropped_note(printed.stdout_dropped));
            }
            if text.is_empty() {
                // Never an empty text block, which model APIs refuse.
                text = NO_OUTPUT.to_string();
            }
            return Ok(ToolOutput { content: vec![ContentBlock::Text(text)], structured: None, is_error: false });
        }
        Exit::Returned(false) => 1,
        Exit::Status(status) => status,
    };
    let mut message = format!("The program exited with status {status}.");
    let stderr = String::from_utf8_lossy(&printed.stderr);
    if !stderr.trim().is_empty() {
        message.push_str(&format!("\nStandard error:\n{}", stderr.trim_end()));
        if printed.stderr_dropped > 0 {
            message.push_str(&format!("\n[{} more bytes of standard error were not kept]", printed.stderr_dropped));
        }
    }
    if !stdout.trim().is_empty() {
        message.push_str(&format!("\nStandard output:\n{}", stdout.trim_end()));
        if printed.stdout_dropped > 0 {
            message.push_str(&dropped_note(printed.stdout_dropped));
        }
    }
    Err(ToolError { kind: ErrorKind::Io, message })
}

fn dropped_note(dropped: u64) -> String {
    format!("\n[{dropped} more bytes of standard output were not kept: a run keeps the first {} MiB]", MAX_STDOUT >> 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_makes_the_argument_list_and_stdin() {
        let (args, stdin) = run_of(&json!({"args": ["-l", "a b"], "stdin": "x\ny\n"})).unwrap();
        assert_eq!(args, ["-l", "a b"]);
        assert_eq!(stdin, b"x\ny\n");
        assert_eq!(run_of(&json!({})).unwrap(), (Vec::new(), Vec::new()));
        assert_eq!(run_of(&json!({"args": [1]})), Err(InputError::Args));
        assert_eq!(run_of(&json!({"args": ["a", "b\0"]})), Err(InputError::Nul(1)));
        assert_eq!(run_of(&json!({"stdin": 3})), Err(InputError::Stdin));
        assert_eq!(run_of(&json!({"argv": []})), Err(InputError::Unknown("argv".into())));
        assert_eq!(run_of(&json!([])), Err(InputError::NotAnObject));
        let many: Vec<&str> = vec!["a"; MAX_ARGS + 1];
        assert_eq!(run_of(&json!({ "args": many })), Err(InputError::TooMany(MAX_ARGS + 1)));
    }

    #[test]
    fn a_zero_status_answers_stdout_and_any_other_is_an_error_with_both_streams() {
        let printed = Printed { stdout: b"3 lines\n".to_vec(), stderr: b"warning: x\n".to_vec(), ..Printed::default() };
        for exit in [Exit::Returned(true), Exit::Status(0)] {
            let out = answer(exit, &printed).unwrap();
            assert!(matches!(out.content.as_slice(), [ContentBlock::Text(t)] if t == "3 lines\n"));
        }
        let err = answer(Exit::Status(3), &printed).unwrap_err();
        assert_eq!(
            err.message,
            "The program exited with status 3.\nStandard error:\nwarning: x\nStandard output:\n3 lines"
        );
        assert!(answer(Exit::Returned(false), &Printed::default()).unwrap_err().message.ends_with("status 1."));
        let quiet = answer(Exit::Returned(true), &Printed::default()).unwrap();
        assert!(matches!(quiet.content.as_slice(), [ContentBlock::Text(t)] if t == NO_OUTPUT));
        let cut = Printed { stdout: b"a".to_vec(), stdout_dropped: 10, ..Printed::default() };
        let out = answer(Exit::Returned(true), &cut).unwrap();
        assert!(matches!(out.content.as_slice(), [ContentBlock::Text(t)] if t.contains("10 more bytes")));
    }
}
