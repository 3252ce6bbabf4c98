//! `toolhost call`: one tool call through the whole pipeline.

use crate::start::{HostArgs, Needs, Servers, start};
use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;
use std::sync::Arc;
use toolhost::{CallOptions, Content, Host, ToolResult, ToolUse};

/// Run one tool call through the whole pipeline
#[derive(clap::Args)]
pub struct Args {
    /// The tool's name (or an alias)
    name: String,
    /// The tool's input, as JSON
    input: String,
    /// Print the tool_result object {"tool_use_id","content","is_error"}
    #[arg(long)]
    json: bool,
    /// Keep session state on disk under this id, so separate calls can
    /// Read then Edit
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// The tool_use id [default: a fresh one]
    #[arg(long, value_name = "ID")]
    id: Option<String>,
    #[command(flatten)]
    pub host: HostArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let needs = Needs {
        plugins: true,
        one_call: true,
        prompts: true,
        servers: Servers::OfTool(args.name.clone()),
        ..Needs::default()
    };
    let started = start(&args.host, needs)?;
    call(&started.host, &args.name, &args.input, args.json, args.session, args.id)
}

fn call(
    host: &Host,
    name: &str,
    input: &str,
    as_json: bool,
    session_id: Option<String>,
    id: Option<String>,
) -> anyhow::Result<ExitCode> {
    let id = id.unwrap_or_else(fresh_id);
    let session = match &session_id {
        Some(s) => host.session(s)?,
        None => host.ephemeral_session(),
    };
    let result = match serde_json::from_str(input) {
        Ok(input) => {
            let progress: toolhost::ProgressSink =
                Arc::new(|p: toolhost::Progress| eprintln!("[progress] {}", p.message.trim_end_matches('\n')));
            let options = CallOptions { progress: Some(progress), ..CallOptions::default() };
            host.call(&session, &ToolUse { id, name: name.to_string(), input }, &options)
        }
        Err(e) => ToolResult::error(
            &id,
            format!(
                "<tool_use_error>InputValidationError: the input of {name} is not valid JSON: {e}</tool_use_error>"
            ),
        ),
    };
    if let Some(reason) = &result.stop {
        eprintln!("toolhost: a hook asked to stop: {reason}");
    }
    if let Err(e) = session.save() {
        eprintln!("toolhost: warning: could not save session state: {e}");
    }
    print_result(&result, as_json)?;
    Ok(if result.is_error { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn print_result(result: &ToolResult, as_json: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if as_json {
        serde_json::to_writer(&mut out, &result.to_json())?;
        writeln!(out)?;
        return Ok(());
    }
    for block in &result.content {
        match block {
            Content::Text(t) => writeln!(out, "{t}")?,
            Content::Image { media_type, data } => {
                writeln!(out, "[image {media_type}, {} base64 characters]", data.len())?
            }
            Content::Document { media_type, data } => {
                writeln!(out, "[document {media_type}, {} base64 characters]", data.len())?
            }
        }
    }
    if result.is_error && std::io::stderr().is_terminal() {
        eprintln!("(the result is an error)");
    }
    Ok(())
}

fn fresh_id() -> String {
    toolhost::unguessable_id("toolu_")
}
