//! `toolhost trust`: the workspace's settings files trusted as they are.

use anyhow::Context as _;
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost::Sources;

/// Trust the workspace's settings files (.toolhost/settings.json and
/// settings.local.json) as they are now: their allow rules, hooks,
/// defaultMode, additionalDirectories and auditLog take effect. A file
/// changed afterwards is untrusted again until you run this once more.
#[derive(clap::Args)]
pub struct Args {
    /// The workspace whose files to trust [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

pub fn run(workspace: &std::path::Path) -> anyhow::Result<ExitCode> {
    trust(&Sources::standard(workspace))
}

fn trust(sources: &Sources) -> anyhow::Result<ExitCode> {
    let Some(store_path) = &sources.trust_store else {
        anyhow::bail!("no trust store");
    };
    let mut store = toolhost::settings::TrustStore::load(store_path);
    let mut any = false;
    for file in [&sources.project, &sources.local, &sources.mcp_json].into_iter().flatten() {
        if !file.exists() {
            continue;
        }
        let powers = toolhost::settings::powers(file).context("fix it before trusting it")?;
        println!("trusting {}:", file.display());
        for line in powers {
            println!("  {line}");
        }
        store.trust(file).with_context(|| format!("reading {}", file.display()))?;
        any = true;
    }
    if !any {
        println!("no settings files in the workspace to trust");
        return Ok(ExitCode::SUCCESS);
    }
    store.save(store_path).with_context(|| format!("writing {}", store_path.display()))?;
    Ok(ExitCode::SUCCESS)
}
