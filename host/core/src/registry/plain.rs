//! The tool a plain function is (`crate::contract::plain`): its spec, made
//! by the host from the function's types and doc comment, since the
//! component describes nothing itself.

use super::declare::{MAX_DESCRIPTION, MAX_PROMPT, capped};
use super::tool::{Hints, InputRoles, ToolSpec};
use crate::contract::plain::{Function, schema};

/// Results longer than this are persisted and the model gets a preview (the
/// SDK's default, and an MCP server's tools').
const RESULT_CHARS: u64 = 100_000;

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
        name,
        aliases: Vec::new(),
        description: capped(description, MAX_DESCRIPTION, "description", &mut Vec::new()),
        prompt: capped(prompt, MAX_PROMPT, "prompt", &mut Vec::new()),
        search_hint: None,
        input_schema: schema::input(&function.params),
        output_schema: schema::output(function.result.as_ref()),
        max_result_size_chars: Some(RESULT_CHARS),
        should_defer: false,
        always_load: false,
        cancel_on_interrupt: true,
        enabled: true,
        // Nothing says what a plain function does: it may write, and it
        // runs alone (as an MCP server's tool with no annotations).
        hints: Hints { read_only: Some(false), destructive: Some(true), concurrency_safe: Some(false) },
        inputs: InputRoles::default(),
        cancels_siblings: false,
        reuse_instance: false,
        validates_input: false,
        checks_permissions: false,
    }
}
