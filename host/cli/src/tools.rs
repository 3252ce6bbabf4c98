//! `toolhost tools`: the tools offered to the model, in pool order.

use crate::start::{HostArgs, Needs, Servers, start};
use serde_json::json;
use std::io::Write as _;
use std::process::ExitCode;
use toolhost::Host;

/// List the tools offered to the model, in pool order
#[derive(clap::Args)]
pub struct Args {
    /// Print name, description and input schema of each tool as JSON
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pub host: HostArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let needs = Needs { plugins: true, servers: Servers::All, ..Needs::default() };
    let started = start(&args.host, needs)?;
    tools(&started.host, args.json)
}

fn tools(host: &Host, as_json: bool) -> anyhow::Result<ExitCode> {
    let pool = host.pool();
    let deferred = host.deferred_tools();
    let mut out = std::io::stdout().lock();
    if as_json {
        // A deferred tool by name only: the model loads it with ToolSearch.
        let list: Vec<_> = pool
            .iter()
            .map(|t| match deferred.contains(&t.spec().name) {
                true => json!({"name": t.spec().name, "deferred": true}),
                false => t.spec().definition(),
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &list)?;
        writeln!(out)?;
    } else {
        let width = pool.iter().map(|t| t.spec().name.len()).max().unwrap_or(0);
        for t in &pool {
            let origin = match &t.origin() {
                toolhost::Origin::Builtin => String::new(),
                toolhost::Origin::Plugin(p) => format!("  [{}]", p.display()),
                toolhost::Origin::Mcp(server) => format!("  [MCP server {server}]"),
            };
            let mark = if deferred.contains(&t.spec().name) { "  (deferred: loaded with ToolSearch)" } else { "" };
            writeln!(out, "{:width$}  {}{origin}{mark}", t.spec().name, t.spec().description)?;
            if !t.requests().is_empty() {
                for line in crate::check::capability_lines(t, host.call_limits()) {
                    writeln!(out, "{:width$}    {line}", "")?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
