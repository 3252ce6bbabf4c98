//! The tool a plain function is (`crate::contract::plain`): its spec, made
//! by the host from the function's types and doc comment, since the
//! component describes nothing itself.

use super::declare::{MAX_DESCRIPTION, MAX_PROMPT, capped};
use super::tool::{Hints, InputRoles, ToolSpec};
use crate::contract::plain::{Function, command, schema};

/// Results longer than this are persisted and the model gets a preview (the
/// SDK's default, and an MCP server's tools').
const RESULT_CHARS: u64 = 100_000;

/// The tool `name` running a WASI command, described by `description` (its
/// manifest's) or, if none, as the program it is.
pub(crate) fn command_spec(name: String, description: Option<&str>) -> ToolSpec {
    let how = format!(
        "The program `{name}` (a WASI command) runs with `args` as its command-line arguments and `stdin` as its \
         standard input; the answer is what it writes to standard output (the first {} MiB). A non-zero exit \
         status is an error, with what it wrote to standard error. It reads and writes files only in the \
         directories it was granted.",
        command::MAX_STDOUT >> 20
    );
    let (description, prompt) = match description {
        Some(d) => (d.to_string(), format!("{d}\n\n{how}")),
        None => (format!("Runs the program `{name}` (a WASI command) with arguments and standard input."), how),
    };
    ToolSpec {
        description: capped(description, MAX_DESCRIPTION, "description", &mut Vec::new()),
        prompt: capped(prompt, MAX_PROMPT, "prompt", &mut Vec::new()),
        input_schema: command::input_schema(),
        output_schema: None,
        ..unknown(name)
    }
}

/// The tool `name` serving `function`, described by its doc comment or, if
/// it has none, by its signature.
pub(crate) fn spec(name: String, function: &Function, doc: Option<&str>) -> ToolSpec {
    let signature = function.signature();
    let place = match &function.interface {
        Some(i) => format!(" of the interface `{i}`"),
        None => String::new(),
    };
    let (description, prompt) = match doc {
        Some(doc) => {
            let first = doc.lines().next().unwrap_or_default().to_string();
            (first, format!("{doc}\n\nThe component function{place}: {signature}"))
        }
        None => {
            let line = format!("Calls the component function {signature}{place}.");
            (line.clone(), line)
        }
    };
    ToolSpec {
        description: capped(description, MAX_DESCRIPTION, "description", &mut Vec::new()),
        prompt: capped(prompt, MAX_PROMPT, "prompt", &mut Vec::new()),
        input_schema: schema::input(&function.params),
        output_schema: schema::output(function.result.as_ref()),
        ..unknown(name)
    }
}

/// A tool `name` that says nothing of itself: it may write, and it runs
/// alone (as an MCP server's tool with no annotations).
fn unknown(name: String) -> ToolSpec {
    ToolSpec {
        name,
        aliases: Vec::new(),
        description: String::new(),
        prompt: String::new(),
        search_hint: None,
        input_schema: serde_json::Value::Null,
        output_schema: None,
        max_result_size_chars: Some(RESULT_CHARS),
        should_defer: false,
        always_load: false,
        cancel_on_interrupt: true,
        enabled: true,
        hints: Hints { read_only: Some(false), destructive: Some(true), concurrency_safe: Some(false) },
        inputs: InputRoles::default(),
        cancels_siblings: false,
        reuse_instance: false,
        validates_input: false,
        checks_permissions: false,
    }
}
