//! The `toolhost` command line: a thin front over the library (`toolhost`)
//! and the MCP server (`toolhost-mcp`). One module per command, each with
//! its options and what it needs of its host beside it; the options of the
//! commands that start a host are in [`start`].

mod call;
mod check;
mod input;
mod install;
mod new;
mod prompt;
mod run;
mod secret;
mod serve;
mod stamp;
mod start;
mod telemetry;
mod tools;
mod trust;

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use start::HostArgs;
use std::io::IsTerminal as _;
use std::process::ExitCode;

// Compiling a component allocates from every compile thread at once; glibc's
// allocator serializes much of that (measured: a sixth of a first load's
// time in malloc and its locks). Without transparent huge pages: zeroing
// them took 40% of a first load's time.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "toolhost", version, about = "A WebAssembly plugin host for AI-agent tools")]
struct Cli {
    /// The host options may also come before the command's name.
    #[command(flatten)]
    host: HostArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Tools(tools::Args),
    Call(call::Args),
    Run(run::Args),
    Serve(serve::Args),
    Trust(trust::Args),
    Check(check::Args),
    Install(install::Args),
    New(new::Args),
    Stamp(stamp::Args),
    /// Keep a secret (an API token, say) for one tool, outside every
    /// workspace (in the OS keyring where one is usable, else in a file only
    /// you can read; TOOLHOST_SECRET_STORE=auto|keyring|file chooses):
    /// handed to the tool as an environment variable when
    /// toolGrants.TOOL.secrets grants it, masked in all it gives back
    Secret {
        #[command(subcommand)]
        action: secret::SecretAction,
    },
    Uninstall(install::UninstallArgs),
}

impl Command {
    /// A front that lives on, serving call after call (`run`, `serve`),
    /// rather than a one-shot command.
    fn long_running(&self) -> bool {
        matches!(self, Command::Run(_) | Command::Serve(_))
    }

    /// Its host options, if it starts a host.
    fn host(&mut self) -> Option<&mut HostArgs> {
        match self {
            Command::Tools(a) => Some(&mut a.host),
            Command::Call(a) => Some(&mut a.host),
            Command::Run(a) => Some(&mut a.host),
            Command::Serve(a) => Some(&mut a.host),
            Command::Check(a) => Some(&mut a.host),
            Command::Install(a) => Some(&mut a.host),
            Command::Uninstall(a) => Some(&mut a.host),
            Command::Trust(_) | Command::New(_) | Command::Stamp(_) | Command::Secret { .. } => None,
        }
    }
}

/// mimalloc's `mi_option_purge_delay` (the same place in v2's and v3's
/// option enum, which keeps retired entries for a stable ABI).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    // OTLP export, when the environment asks for it: before the log is up,
    // so a mistake in it is said plainly.
    let telemetry = match telemetry::Telemetry::from_env() {
        Ok(telemetry) => telemetry,
        Err(e) => {
            eprintln!("toolhost: error: {e:#}");
            return ExitCode::from(2);
        }
    };
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        );
    let exported = telemetry.as_ref().and_then(telemetry::Telemetry::layer);
    tracing_subscriber::registry().with(log).with(exported).init();
    let cli = match parse() {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // A one-shot call checks its input against its tool's schema soon after
    // start: what that first check needs is built beside the start-up.
    if matches!(cli.command, Command::Call(_)) {
        toolhost::prepare_schema_checks();
    }
    // A front that lives on (`run`, `serve`) gives memory it freed back to
    // the system at once rather than after 10 ms: the delay is only ever
    // honoured by a thread that allocates again, and the threads that free
    // the most (a compile's) then sit idle, so a first start that compiled
    // the built-ins kept ~30 MiB more for the server's life. No cost per
    // call measured (docs/benchmarks.md). A one-shot command keeps the
    // delay: it would only pay for giving back (a `madvise` per page freed,
    // and the faults of taking it again) before it exits anyway.
    // mimalloc's own `MIMALLOC_PURGE_DELAY` still decides when set.
    if cli.command.long_running() && std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one of mimalloc's options, a plain integer it reads
        // when it purges; any value is valid.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    }
    let code = match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("toolhost: error: {e:#}");
            ExitCode::from(2)
        }
    };
    // Calls still running when a front ends (its client left mid-call) hold
    // their sessions; their temporary directories go now.
    toolhost::remove_temporaries();
    // The last spans and metrics, a drained server's included.
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    code
}

/// The command line, with the host options given before the command's name
/// moved to the command. A command that starts no host takes them there
/// and does nothing with them (so a wrapper may pass the same options to
/// every command), bar `trust`, which takes the workspace.
fn parse() -> Result<Cli, clap::Error> {
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches)?;
    let before = std::mem::take(&mut cli.host);
    match &mut cli.command {
        Command::Trust(args) => args.workspace = args.workspace.take().or(before.workspace),
        command => {
            if let Some(host) = command.host() {
                *host = std::mem::take(host).over(before, &from_environment(&matches));
            }
        }
    }
    Ok(cli)
}

/// The options of the command (after its name) whose value came from an
/// environment variable rather than from the command line.
fn from_environment(matches: &clap::ArgMatches) -> Vec<String> {
    let Some((_, command)) = matches.subcommand() else { return Vec::new() };
    command
        .ids()
        .filter(|id| command.value_source(id.as_str()) == Some(clap::parser::ValueSource::EnvVariable))
        .map(|id| id.to_string())
        .collect()
}

fn run(cli: Cli) -> anyhow::Result<std::process::ExitCode> {
    match cli.command {
        Command::Tools(args) => tools::run(args),
        Command::Call(args) => call::run(args),
        Command::Run(args) => run::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Check(args) => check::run(args),
        Command::Install(args) => install::run(args),
        Command::Uninstall(args) => install::run_uninstall(args),
        Command::Trust(args) => {
            let workspace = HostArgs { workspace: args.workspace, ..HostArgs::default() }.workspace()?;
            trust::run(&workspace)
        }
        Command::New(args) => new::run(args),
        Command::Stamp(args) => stamp::run(args),
        Command::Secret { action } => secret::run(&action),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_defaults_the_help_names_are_the_library_s() {
        let help = Cli::command().render_long_help().to_string();
        let timeout = format!("[default: {}]", toolhost::DEFAULT_TIMEOUT.as_millis());
        let memory = format!("[default: {}]", toolhost::DEFAULT_MEMORY >> 20);
        assert!(help.contains(&timeout) && help.contains(&memory), "{help}");
    }
}
