//! `toolhost stamp`: what a component requests, written into it.

use anyhow::Context as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// Write what a component requests (directories, hosts, variables,
/// limits: a toolhost:requests section) into it, for toolchains without
/// the Rust SDK's requests! macro (Python, JavaScript)
#[derive(clap::Args)]
pub struct Args {
    /// The component file
    file: PathBuf,
    /// The requests, as JSON (see docs/sandbox.md, "Allowance and grants"), or @FILE to read them from a file
    requests: String,
    /// Write the stamped component here instead of replacing FILE
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    stamp(&args.file, &args.requests, args.out.as_deref())
}

/// `toolhost stamp`: the requests checked as the loader checks them, the
/// stamped component written beside its destination and renamed into place.
fn stamp(file: &std::path::Path, requests: &str, out: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let requests = match requests.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?,
        None => requests.to_string(),
    };
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let stamped = match toolhost::stamp_requests(&bytes, &requests) {
        Ok(stamped) => stamped,
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return Ok(ExitCode::FAILURE);
        }
    };
    let out = out.unwrap_or(file);
    let name = out.file_name().and_then(|n| n.to_str()).unwrap_or("component.wasm");
    let partial = out.with_file_name(format!(".{name}.stamping"));
    std::fs::write(&partial, &stamped).with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, out).with_context(|| format!("writing {}", out.display()))?;
    println!("stamped {} with its requests; `toolhost check` shows them", out.display());
    Ok(ExitCode::SUCCESS)
}
