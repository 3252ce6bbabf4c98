//! `toolhost secret`: a tool's secrets, kept outside every workspace.

use anyhow::Context as _;
use std::process::ExitCode;

/// What to do with secrets.
#[derive(clap::Subcommand)]
pub enum SecretAction {
    /// Store TOOL's secret NAME: the value is read from standard input (one
    /// line; at a terminal, asked without echo), never from the command line
    Set { tool: String, name: String },
    /// The tools and names of the secrets stored (never their values), and
    /// whether each is in the OS keyring or the file
    List,
    /// Remove TOOL's secret NAME
    Rm { tool: String, name: String },
}

/// `toolhost secret set|list|rm`.
pub fn run(action: &SecretAction) -> anyhow::Result<ExitCode> {
    let store = toolhost::secrets::SecretStore::user();
    let failed = |e: &dyn std::fmt::Display| -> anyhow::Result<ExitCode> {
        eprintln!("toolhost: {e}");
        Ok(ExitCode::FAILURE)
    };
    match action {
        SecretAction::Set { tool, name } => {
            let value = crate::prompt::read_secret(&format!("value of {tool}'s secret {name}: "))
                .context("reading the secret's value")?;
            let place = match store.set(tool, name, &value) {
                Ok(place) => place,
                Err(e) => return failed(&e),
            };
            println!("stored {tool}'s secret {name} in {place}");
            println!(
                "{tool} gets it as the environment variable {name} once toolGrants.{tool}.secrets lists \"{name}\" \
                 and its component requests it"
            );
        }
        SecretAction::List => match store.list() {
            Ok(list) => {
                for (tool, name, place) in list {
                    let place = if place == toolhost::secrets::Place::Keyring { "keyring" } else { "file" };
                    println!("{tool} {name} {place}");
                }
                match store.place() {
                    Ok((place, None)) => eprintln!("new secrets go to {place}"),
                    Ok((place, Some(why))) => eprintln!("new secrets go to {place} ({why})"),
                    Err(e) => return failed(&e),
                }
            }
            Err(e) => return failed(&e),
        },
        SecretAction::Rm { tool, name } => match store.remove(tool, name) {
            Ok(true) => println!("removed {tool}'s secret {name}"),
            Ok(false) => return failed(&format!("{tool} has no secret {name}")),
            Err(e) => return failed(&e),
        },
    }
    Ok(ExitCode::SUCCESS)
}
