//! `toolhost check`: whether a file is a usable tool component, and what
//! it is; and the lines about a tool's capabilities `tools` shows too.

use crate::start::{HostArgs, Needs, start};
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost::Host;

/// Check that a file is a usable tool component
#[derive(clap::Args)]
pub struct Args {
    /// The component file
    file: PathBuf,
    #[command(flatten)]
    pub host: HostArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // It looks at one file: the plugins directory is not loaded.
    let started = start(&args.host, Needs::default())?;
    check(&started.host, &args.file)
}

fn check(host: &Host, file: &std::path::Path) -> anyhow::Result<ExitCode> {
    match host.check_component(file) {
        Ok(tools) => {
            for tool in &tools {
                check_one(host, file, tool);
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            println!("error: {}: {e}", file.display());
            Ok(ExitCode::FAILURE)
        }
    }
}

/// `toolhost check`'s lines about one tool of `file`.
fn check_one(host: &Host, file: &std::path::Path, tool: &toolhost::LoadedTool) {
    let caps: Vec<&str> = tool.shape().capabilities.iter().map(|c| c.name()).collect();
    println!("ok: {} is the tool `{}`", file.display(), tool.spec().name);
    match tool.shape().form {
        toolhost::Form::Contract => println!("  contract:      {}", tool.shape().version),
        toolhost::Form::Functions if tool.is_command() => {
            println!("  contract:      none: a WASI command (wasi:cli/run), run with the call's arguments and stdin")
        }
        toolhost::Form::Functions => {
            println!("  contract:      none: a function it exports, described from its WIT types")
        }
    }
    {
        println!("  description:   {}", tool.spec().description);
        println!("  capabilities:  {}", if caps.is_empty() { "(none)".into() } else { caps.join(", ") });
        println!("  imports:       {}", tool.shape().imports.len());
        println!(
            "  input schema:  valid ({} properties)",
            tool.spec().input_schema.get("properties").and_then(|p| p.as_object()).map_or(0, |p| p.len())
        );
        let problems = toolhost::portability_problems(&tool.spec().input_schema);
        if !problems.is_empty() {
            println!("  warning:       the input schema is not portable (some model APIs or MCP clients refuse it):");
            for problem in problems {
                println!("                   {problem}");
            }
        }
        println!("  input roles:   {}", describe_roles(&tool.spec().inputs));
        if tool.spec().cancels_siblings {
            println!("  a failed call cancels the other calls of its turn");
        }
        println!("  enabled:       {}", tool.spec().enabled);
        println!("  per call:      {}", describe_per_call(tool.spec()));
        if tool.quick() {
            println!(
                "  compiled:      quick (Winch), for now: `run` and `serve` compile it optimized in the background \
                     and then serve that"
            );
        }
        for line in capability_lines(tool, host.call_limits()) {
            println!("  {line}");
        }
        for warning in tool.warnings() {
            println!("  warning:       {warning}");
        }
        for note in tool.notes() {
            println!("  note:          {note}");
        }
    }
}

/// What the host asks a tool on each call (besides `call`), what the tool
/// declared once instead, and whether a warm instance serves its calls.
fn describe_per_call(spec: &toolhost::ToolSpec) -> String {
    let (mut asks, mut declared) = (Vec::new(), Vec::new());
    let mut answer = |hint: Option<bool>, export: &'static str, yes: &'static str, no: &'static str| match hint {
        Some(true) => declared.push(yes),
        Some(false) => declared.push(no),
        None => asks.push(export),
    };
    answer(spec.hints.concurrency_safe, "is-concurrency-safe", "concurrency-safe", "not concurrency-safe");
    answer(spec.hints.read_only, "is-read-only", "read-only", "not read-only");
    asks.extend(spec.validates_input.then_some("validate-input"));
    asks.extend(spec.checks_permissions.then_some("check-permissions"));
    asks.push("call");
    let declared = if declared.is_empty() { "nothing".to_string() } else { declared.join(", ") };
    let instance = if spec.reuse_instance { "a warm instance per session" } else { "a fresh instance each" };
    format!("asks {}; declared {declared}; {instance}", asks.join(", "))
}

/// What a third-party tool requests, what it was granted of it, and the
/// grants it lacks (each naming the settings key that would add it).
pub fn capability_lines(tool: &toolhost::LoadedTool, base: toolhost::CallLimits) -> Vec<String> {
    let requests = tool.requests().describe();
    let g = &tool.grants();
    let mut granted: Vec<String> =
        g.files.workspace().map(|a| format!("the working directories ({})", a.name())).into_iter().collect();
    granted.extend(g.process.then(|| "the process capability".to_string()));
    granted.extend(g.dirs.iter().map(|(d, a)| format!("directory {} ({})", d.display(), a.name())));
    granted.extend(g.hosts.iter().map(|h| format!("host {h}")));
    granted.extend(g.env.iter().map(|e| format!("variable {e}")));
    granted.extend(g.secrets.iter().map(|s| format!("secret {s}")));
    let limits = tool.grants().limits(base);
    if g.memory.is_some() {
        granted.push(format!("memory {} MiB", limits.memory >> 20));
    }
    if g.timeout.is_some() {
        granted.push(format!("time {} ms", limits.timeout.as_millis()));
    }
    let mut lines = vec![
        format!("requests:      {requests}"),
        format!("granted:       {}", if granted.is_empty() { "nothing".into() } else { granted.join(", ") }),
    ];
    if !tool.missing().is_empty() {
        lines.push(format!(
            "not granted:   {} (grant it under toolGrants.{} in a settings file)",
            tool.missing().join("; "),
            tool.spec().name
        ));
    }
    lines
}

/// What a tool declares its input fields to be, for people.
fn describe_roles(roles: &toolhost::InputRoles) -> String {
    use toolhost::PathAccess;
    let mut parts: Vec<String> = roles
        .paths
        .iter()
        .map(|p| {
            let access = match p.access {
                PathAccess::Read => "a path it reads",
                PathAccess::Search => "a directory it searches",
                PathAccess::Edit => "a path it edits",
            };
            format!("`{}` is {access}", p.field)
        })
        .collect();
    parts.extend(roles.command.iter().map(|c| format!("`{c}` is a shell command")));
    parts.extend(roles.addresses.iter().map(|a| format!("`{a}` is a URL or host")));
    if parts.is_empty() {
        "(none declared: rules with content cannot match its calls)".into()
    } else {
        parts.join(", ")
    }
}
