//! The `toolhost` command line: a thin front over the library (`toolhost`)
//! and the MCP server (`toolhost-mcp`).

mod input;
mod install;
mod new;
mod prompt;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use serde_json::json;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use toolhost::Behavior;
use toolhost::{Allocator, CallOptions, Confinement, Content, Host, PermissionMode, Sources, ToolResult, ToolUse};

// Compiling a component allocates from every compile thread at once; glibc's
// allocator serializes much of that (measured: a sixth of a first load's
// time in malloc and its locks). Without transparent huge pages: zeroing
// them took 40% of a first load's time.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "toolhost", version, about = "A WebAssembly plugin host for AI-agent tools")]
struct Cli {
    /// The directory file tools work in [default: the current directory]
    #[arg(long, global = true, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Where third-party components (*.wasm) are loaded from
    /// [default: $TOOLHOST_PLUGINS, else ~/.config/toolhost/plugins]
    #[arg(long, global = true, value_name = "DIR")]
    plugins: Option<PathBuf>,
    /// Permission mode: default, plan, acceptEdits, dontAsk, bypassPermissions
    /// [default: the settings' defaultMode, else default]
    #[arg(long, global = true, value_name = "MODE")]
    mode: Option<PermissionMode>,
    /// Allow calls matching a rule, e.g. 'Bash(npm run test:*)' (repeatable)
    #[arg(long, global = true, value_name = "RULE")]
    allow: Vec<String>,
    /// Ask before calls matching a rule (repeatable)
    #[arg(long, global = true, value_name = "RULE")]
    ask: Vec<String>,
    /// Deny calls matching a rule; a bare tool name removes the tool (repeatable)
    #[arg(long, global = true, value_name = "RULE")]
    deny: Vec<String>,
    /// A settings file (or JSON text) on the command-line layer (repeatable)
    #[arg(long, global = true, value_name = "FILE")]
    settings: Vec<String>,
    /// Wall-clock limit of one call, in milliseconds
    #[arg(long, global = true, value_name = "MS", default_value_t = toolhost::DEFAULT_TIMEOUT.as_millis() as u64)]
    timeout_ms: u64,
    /// Memory limit of one call, in MiB
    #[arg(long, global = true, value_name = "MIB", default_value_t = toolhost::DEFAULT_MEMORY >> 20)]
    memory_mib: usize,
    /// Instance allocator: auto, pooling, on-demand
    #[arg(long, global = true, env = "TOOLHOST_ALLOCATOR", default_value = "auto", value_name = "KIND")]
    allocator: Allocator,
    /// When the kernel cannot confine the processes tools start (Landlock,
    /// network namespaces): `required` refuses to start them,
    /// `best-effort` starts them unconfined with a warning
    #[arg(long, global = true, default_value = "required", value_name = "MODE")]
    child_confinement: Confinement,
    /// A plugin component of at least this many KiB, the first time it
    /// loads, is compiled quick (Winch) and served at once; `run` and
    /// `serve` then compile it optimized (Cranelift) in the background and
    /// switch to that. `off`: always compile optimized, at once
    #[arg(long, global = true, env = "TOOLHOST_QUICK_COMPILE_ABOVE", default_value = "1024", value_name = "KIB|off")]
    quick_compile_above: OrOff,
    /// A tool whose fresh instance took at least this many microseconds to
    /// make (an interpreter's) gets the instance of its next call made
    /// ahead, while no call runs; each call still gets a fresh instance
    /// (`run` and `serve`; a one-shot command makes none). `off`: each call
    /// makes its own
    #[arg(long, global = true, env = "TOOLHOST_SPARE_INSTANCES_ABOVE", default_value = "250", value_name = "US|off")]
    spare_instances_above: OrOff,
    /// Keep tools loaded quick on their quick code, even in `run` and
    /// `serve` (for measuring that code)
    #[arg(long, global = true, hide = true)]
    no_optimize: bool,
    /// Where persistent sessions' state is kept: a redis:// URL (Redis or
    /// Valkey), for servers that share sessions [default: the settings'
    /// stateStore, else files under the data directory]
    #[arg(long, global = true, env = "TOOLHOST_STATE", value_name = "URL")]
    state: Option<String>,
    /// This server's name among several sharing sessions through --state
    /// (named when a call reaches it for a background process another one
    /// runs) [default: the host name]
    #[arg(long, global = true, env = "TOOLHOST_INSTANCE", value_name = "NAME")]
    instance: Option<String>,
    /// Offer the Script tool (code mode): the model writes one JavaScript
    /// program that calls the other tools, each call checked as if made
    /// directly [default: the settings' codeMode, else off]
    #[arg(long, global = true, env = "TOOLHOST_CODE_MODE", value_parser = clap::builder::BoolishValueParser::new())]
    code_mode: bool,
    #[command(subcommand)]
    command: Command,
}

/// A threshold given as a number, or `off` (`--quick-compile-above`,
/// `--spare-instances-above`).
#[derive(Clone, Copy, Debug)]
struct OrOff(Option<u64>);

impl std::str::FromStr for OrOff {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(OrOff(None)),
            n => n.parse::<u64>().map(|n| OrOff(Some(n))).map_err(|_| format!("`{n}` is neither a number nor `off`")),
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// List the tools offered to the model, in pool order
    Tools {
        /// Print name, description and input schema of each tool as JSON
        #[arg(long)]
        json: bool,
    },
    /// Run one tool call through the whole pipeline
    Call {
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
    },
    /// Run tool calls from JSON lines on stdin, many at once, writing progress
    /// and results as JSON lines on stdout (see docs/cli.md for the formats)
    Run {
        /// Keep session state on disk under this id
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Calls running at once [default: $TOOLHOST_MAX_TOOL_CONCURRENCY, else
        /// the settings' maxToolConcurrency, else 10]
        #[arg(long, env = "TOOLHOST_MAX_TOOL_CONCURRENCY", value_name = "N")]
        max_concurrency: Option<usize>,
        /// Load the plugins directory once, instead of watching it (a changed
        /// component is otherwise reloaded, and a line says the tools changed)
        #[arg(long)]
        no_watch: bool,
    },
    /// Serve the tools over the Model Context Protocol: on stdin/stdout, or
    /// streamable HTTP with --http (see docs/cli.md)
    Serve {
        /// Serve streamable HTTP at http://ADDR/mcp instead of stdio: an
        /// address such as 127.0.0.1:8765, or a port alone for loopback
        /// (port 0: any free port, printed on stderr)
        #[arg(long, value_name = "ADDR", value_parser = http_address)]
        http: Option<std::net::SocketAddr>,
        /// Require `Authorization: Bearer TOKEN` on HTTP, the tokens read
        /// from this file: one `NAME TOKEN` per line (the name is who calls,
        /// in the audit log; sessions belong to it), or one bare token (or
        /// $TOOLHOST_HTTP_TOKEN); required off loopback
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
        /// On SIGTERM or Ctrl-C, how long running calls may go on (while no
        /// new ones are taken) before they are cancelled and the server exits
        #[arg(long, value_name = "SECONDS", default_value = "30")]
        drain_timeout: u64,
        /// Also accept this Host header on HTTP, e.g. the name of a
        /// non-loopback address (repeatable)
        #[arg(long = "allowed-host", value_name = "HOST")]
        allowed_hosts: Vec<String>,
        /// Also accept requests from this browser origin, e.g.
        /// https://app.example.com:443 (repeatable)
        #[arg(long = "allowed-origin", value_name = "ORIGIN")]
        allowed_origins: Vec<String>,
        /// Calls running at once in one MCP session [default:
        /// $TOOLHOST_MAX_TOOL_CONCURRENCY, else the settings'
        /// maxToolConcurrency, else 10]
        #[arg(long, env = "TOOLHOST_MAX_TOOL_CONCURRENCY", value_name = "N")]
        max_concurrency: Option<usize>,
        /// Load the plugins directory once, instead of watching it (a changed
        /// component is otherwise reloaded, and clients are told the tools
        /// changed)
        #[arg(long)]
        no_watch: bool,
        /// Keep the session's state on disk under this id (stdio only), saved
        /// after every call: a server restarted with the same id goes on
        /// where it stopped, killed or not (files read may be edited)
        #[arg(long, value_name = "ID", conflicts_with = "http")]
        session: Option<String>,
    },
    /// Trust the workspace's settings files (.toolhost/settings.json and
    /// settings.local.json) as they are now: their allow rules, hooks,
    /// defaultMode, additionalDirectories and auditLog take effect. A file
    /// changed afterwards is untrusted again until you run this once more.
    Trust,
    /// Check that a file is a usable tool component
    Check {
        /// The component file
        file: PathBuf,
    },
    /// Install a tool component into the plugins directory, from a file or
    /// an OCI registry: check its SHA-256 and signature, show what it
    /// requests, and grant what you answer yes to (in the workspace's
    /// .toolhost/settings.local.json)
    Install {
        /// The component file (FILE.minisig beside it is its signature), or
        /// oci://REGISTRY/REPOSITORY:TAG (or @sha256:DIGEST); with
        /// --upgrade, the installed tool's name
        #[arg(value_name = "FILE|oci://REF|NAME")]
        source: String,
        /// Pull the tag the tool NAME was installed from again, and review
        /// what changed
        #[arg(long)]
        upgrade: bool,
        /// Refuse the file unless its SHA-256 is this (64 hex digits)
        #[arg(long, value_name = "HEX", value_parser = install::parse_sha256)]
        sha256: Option<String>,
        /// Grant everything it requests without asking (for scripts)
        #[arg(long)]
        yes: bool,
        /// The longest a pull from a registry may take, in seconds, however
        /// slowly the registry answers
        #[arg(long, value_name = "SECONDS", default_value_t = install::oci::PULL_TIMEOUT.as_secs())]
        pull_timeout: u64,
        /// A Wassette policy file (policy.yaml), read as what the component
        /// requests and installed beside it as NAME.policy.yaml [default:
        /// FILE's NAME.policy.yaml, if there is one]
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        /// A WASI command's tool name (a component exporting wasi:cli/run),
        /// written to NAME.tool.yaml beside it [default: FILE's
        /// NAME.tool.yaml's, else the file's name]
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// What the WASI command does, for the model (NAME.tool.yaml's
        /// `description`)
        #[arg(long, value_name = "TEXT")]
        description: Option<String>,
    },
    /// Start a tool project: the source of a small working tool, the WIT and
    /// the helper it builds against, build.sh (pinned toolchain) and test.sh
    New {
        /// The tool's name, as the model will call it (e.g. `WordCount`)
        name: String,
        /// The language to write it in
        #[arg(long, value_enum)]
        lang: new::Lang,
        /// Where to create it [default: the name in kebab case, here]
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Write what a component requests (directories, hosts, variables,
    /// limits: a toolhost:requests section) into it, for toolchains without
    /// the Rust SDK's requests! macro (Python, JavaScript)
    Stamp {
        /// The component file
        file: PathBuf,
        /// The requests, as JSON (see docs/sandbox.md, "Allowance and grants"), or @FILE to read them from a file
        requests: String,
        /// Write the stamped component here instead of replacing FILE
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Keep a secret (an API token, say) for one tool, outside every
    /// workspace (in the OS keyring where one is usable, else in a file only
    /// you can read; TOOLHOST_SECRET_STORE=auto|keyring|file chooses):
    /// handed to the tool as an environment variable when
    /// toolGrants.TOOL.secrets grants it, masked in all it gives back
    Secret {
        #[command(subcommand)]
        action: SecretAction,
    },
    /// Remove an installed tool from the plugins directory, and its grants
    /// from the workspace's .toolhost/settings.local.json
    Uninstall {
        /// The tool's name (or its file's name without .wasm)
        name: String,
        /// Keep toolGrants.NAME in the workspace's local settings
        #[arg(long)]
        keep_grants: bool,
    },
}

#[derive(Subcommand)]
enum SecretAction {
    /// Store TOOL's secret NAME: the value is read from standard input (one
    /// line; at a terminal, asked without echo), never from the command line
    Set { tool: String, name: String },
    /// The tools and names of the secrets stored (never their values), and
    /// whether each is in the OS keyring or the file
    List,
    /// Remove TOOL's secret NAME
    Rm { tool: String, name: String },
}

impl Command {
    /// A front that lives on, serving call after call (`run`, `serve`),
    /// rather than a one-shot command.
    fn long_running(&self) -> bool {
        matches!(self, Command::Run { .. } | Command::Serve { .. })
    }
}

/// mimalloc's `mi_option_purge_delay` (the same place in v2's and v3's
/// option enum, which keeps retired entries for a stable ABI).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let cli = Cli::parse();
    // A one-shot call checks its input against its tool's schema soon after
    // start: what that first check needs is built beside the start-up.
    if matches!(cli.command, Command::Call { .. }) {
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
    code
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let plugins_dir = cli.plugins.clone().unwrap_or_else(toolhost::default_plugins_dir);
    let plugins = match &cli.command {
        // `check` looks at one file; `install` and `uninstall` look at the
        // plugins directory's files one by one. None loads the plugins.
        Command::Check { .. } | Command::Install { .. } | Command::Uninstall { .. } => None,
        _ => Some(plugins_dir.clone()),
    };
    let workspace = match &cli.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir().context("the current directory")?,
    };
    if let Command::New { name, lang, dir } = &cli.command {
        return new::new(name, *lang, dir.as_deref());
    }
    if let Command::Stamp { file, requests, out } = &cli.command {
        return stamp(file, requests, out.as_deref());
    }
    if let Command::Secret { action } = &cli.command {
        return secret(action);
    }
    let mut sources = Sources::standard(&workspace);
    if let Command::Trust = cli.command {
        return trust(&sources);
    }
    sources.command_line_files = cli.settings.clone();
    sources.command_line_mode = cli.mode;
    for (behavior, list) in [(Behavior::Allow, &cli.allow), (Behavior::Ask, &cli.ask), (Behavior::Deny, &cli.deny)] {
        sources.command_line_rules.extend(list.iter().map(|r| (behavior, r.clone())));
    }
    let settings = toolhost::settings::load(&sources, &workspace)?;
    let concurrency = settings.max_tool_concurrency.unwrap_or(toolhost::DEFAULT_MAX_CONCURRENCY);
    for (file, ignored) in &settings.untrusted {
        eprintln!(
            "toolhost: warning: {file} is not trusted (new, or changed since `toolhost trust`): its {} are ignored. \
             Review it, then run `toolhost trust`.",
            ignored.join(", ")
        );
    }
    // A reload reads the grants again: a component installed with new
    // grants while `serve` runs gets them.
    let grants_source: toolhost::GrantsSource = {
        let (sources, workspace) = (sources.clone(), workspace.clone());
        Arc::new(move || {
            toolhost::settings::load(&sources, &workspace).map(|s| s.tool_grants).map_err(|e| e.to_string())
        })
    };
    // `call` makes one call: a pool of instance slots would be set up for
    // nothing (its stacks' guard pages alone are a system call per slot), so
    // `auto` instantiates on demand there.
    let allocator = match (cli.allocator, &cli.command) {
        (Allocator::Auto, Command::Call { .. }) => Allocator::OnDemand,
        (chosen, _) => chosen,
    };
    let mut builder = Host::builder()
        .tool_grants_source(grants_source)
        .plugins_dir(plugins)
        .settings(settings.clone())
        .allocator(allocator)
        .timeout(Duration::from_millis(cli.timeout_ms))
        .memory_limit(cli.memory_mib << 20)
        .child_confinement(cli.child_confinement);
    if let Some(w) = &cli.workspace {
        builder = builder.workspace(w);
    }
    let shared_state = cli.state.as_ref().or(settings.state_store.as_ref());
    if let Some(url) = shared_state {
        let store = toolhost_redis::RedisStore::open(url).context("opening the state store")?;
        builder = builder.state_store(Arc::new(store));
    }
    if let Some(name) = &cli.instance {
        builder = builder.instance(name);
    }
    if cli.code_mode {
        builder = builder.code_mode(true);
    }
    // The long-running fronts pick up plugins as they come and go.
    let long_running = cli.command.long_running();
    let watch = match cli.command {
        Command::Run { no_watch, .. } | Command::Serve { no_watch, .. } => !no_watch,
        _ => false,
    };
    // They also link the tools while waiting for their first calls; a
    // one-shot command links only the tool it calls.
    builder = builder.watch_plugins(watch).link_in_background(long_running);
    // A tool loaded quick is optimized in the background only by a front
    // that lives to use it.
    builder = builder.quick_compile_above(
        cli.quick_compile_above.0.map(|kib| usize::try_from(kib.saturating_mul(1024)).unwrap_or(usize::MAX)),
    );
    builder = builder.optimize_in_background(long_running && !cli.no_optimize);
    // Spares serve a next call: a one-shot command makes none.
    let spares_above = cli.spare_instances_above.0.filter(|_| long_running).map(Duration::from_micros);
    builder = builder.spare_instances_above(spares_above);
    if std::io::stderr().is_terminal() {
        builder = builder.compile_progress(Arc::new(show_compile));
    }
    // Asks go to the user when there is one at a terminal.
    // (`run` reads its calls from stdin, so it never prompts.)
    let prompts = matches!(cli.command, Command::Call { .. });
    if prompts && std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        builder = builder.approver(Arc::new(prompt::TerminalApprover::default()));
    }
    // MCP servers' tools: every configured server for the fronts that
    // list or serve tools; `call` starts only the server of the tool it
    // calls.
    let servers = match &cli.command {
        Command::Tools { .. } | Command::Run { .. } | Command::Serve { .. } | Command::Call { .. } => {
            let wanted = |name: &str| match &cli.command {
                Command::Call { name: tool, .. } => {
                    toolhost::remote::server_of(tool) == Some(toolhost::remote::normalize_name(name).as_str())
                }
                _ => true,
            };
            let configured: std::collections::BTreeMap<_, _> = settings
                .mcp_servers
                .iter()
                .filter(|(name, _)| wanted(name))
                .map(|(n, c)| (n.clone(), c.clone()))
                .collect();
            if configured.is_empty() { None } else { Some(start_servers(&configured, &settings, &workspace, &cli)?) }
        }
        _ => None,
    };
    if let Some(servers) = &servers {
        builder = builder.remote_tools(Arc::clone(servers) as Arc<dyn toolhost::remote::RemoteSource>);
    }
    let host = builder.build().context("starting the host")?;
    if let Some(servers) = &servers {
        let weak = host.downgrade();
        servers.on_change(move || {
            if let Some(host) = weak.upgrade() {
                host.reload_remote();
            }
        });
    }
    for problem in host.problems() {
        eprintln!("toolhost: warning: {}: {}", problem.source, problem.message);
    }
    let (pull_timeout, policy, named) = match &cli.command {
        Command::Install { pull_timeout, policy, name, description, .. } => (
            std::time::Duration::from_secs(*pull_timeout),
            policy.clone(),
            toolhost::manifest::Manifest { name: name.clone(), description: description.clone() },
        ),
        _ => (install::oci::PULL_TIMEOUT, None, Default::default()),
    };
    let installer = || install::Installer {
        host: &host,
        settings: &settings,
        dir: &plugins_dir,
        pull_timeout,
        policy: policy.as_deref(),
        named: named.clone(),
    };
    match cli.command {
        Command::Tools { json } => tools(&host, json),
        Command::Call { name, input, json, session, id } => call(&host, &name, &input, json, session, id),
        Command::Check { file } => check(&host, &file),
        Command::Install { source, upgrade: false, sha256, yes, .. } => {
            installer().install(&source, sha256.as_deref(), yes)
        }
        Command::Install { source, upgrade: true, sha256, yes, .. } => {
            installer().upgrade(&source, sha256.as_deref(), yes)
        }
        Command::Uninstall { name, keep_grants } => installer().uninstall(&name, keep_grants),
        Command::Run { session, max_concurrency, .. } => {
            run_front(&host, session, max_concurrency.filter(|&n| n > 0).unwrap_or(concurrency))
        }
        Command::Serve {
            http,
            token_file,
            allowed_hosts,
            allowed_origins,
            max_concurrency,
            session,
            drain_timeout,
            ..
        } => {
            let config = toolhost_mcp::ServeConfig {
                max_concurrency: max_concurrency.filter(|&n| n > 0).unwrap_or(concurrency),
                shared_state: shared_state.is_some(),
                ..Default::default()
            };
            let credentials = match token_file {
                Some(file) => {
                    let text = std::fs::read_to_string(&file)
                        .with_context(|| format!("reading the token file {}", file.display()))?;
                    toolhost_mcp::parse_credentials(&text)
                        .map_err(|e| anyhow::anyhow!("the token file {}: {e}", file.display()))?
                }
                None => match std::env::var("TOOLHOST_HTTP_TOKEN").ok().filter(|t| !t.trim().is_empty()) {
                    Some(token) => toolhost_mcp::parse_credentials(&token)
                        .map_err(|e| anyhow::anyhow!("$TOOLHOST_HTTP_TOKEN: {e}"))?,
                    None => Vec::new(),
                },
            };
            let http = http.map(|addr| {
                let drain_timeout = Duration::from_secs(drain_timeout);
                (addr, toolhost_mcp::HttpConfig { credentials, allowed_hosts, allowed_origins, drain_timeout })
            });
            let session = session.map(|id| host.session(&id)).transpose()?;
            serve(host, config, http, session)
        }
        Command::Trust | Command::New { .. } | Command::Stamp { .. } | Command::Secret { .. } => {
            unreachable!("handled before the host starts")
        }
    }
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
                for line in capability_lines(t, host.call_limits()) {
                    writeln!(out, "{:width$}    {line}", "")?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
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

/// `toolhost run`: JSON lines in, JSON lines out, through the streaming
/// executor over one session.
fn run_front(host: &Host, session_id: Option<String>, max_concurrency: usize) -> anyhow::Result<ExitCode> {
    let session = match &session_id {
        Some(s) => host.session(s)?,
        None => host.ephemeral_session(),
    };
    let executor = Arc::new(toolhost::Executor::new(host.clone(), Arc::clone(&session), max_concurrency));
    // One writer at a time: results and progress from here, error lines
    // from the reader.
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let write = |out: &std::sync::Mutex<std::io::Stdout>, value: serde_json::Value| -> std::io::Result<()> {
        let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
        serde_json::to_writer(&mut *out, &value)?;
        out.write_all(b"\n")?;
        out.flush()
    };
    // A reload that changes the tools is a line of its own.
    {
        let mut changes = host.tools_changed();
        let out = Arc::clone(&out);
        std::thread::spawn(move || {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                let line = match changes.blocking_recv() {
                    Ok(change) if !change.tools_changed() => continue,
                    Ok(change) => json!({
                        "type": "tools_changed",
                        "added": change.added,
                        "removed": change.removed,
                        "replaced": change.replaced,
                    }),
                    Err(RecvError::Lagged(_)) => json!({"type": "tools_changed"}),
                    Err(RecvError::Closed) => return,
                };
                if write(&out, line).is_err() {
                    return;
                }
            }
        });
    }
    let reader = {
        let executor = Arc::clone(&executor);
        let out = Arc::clone(&out);
        std::thread::spawn(move || {
            let mut stream = input::InputStream::default();
            for (n, line) in std::io::stdin().lines().enumerate() {
                let Ok(line) = line else { break };
                for event in stream.feed(&line) {
                    match event {
                        input::Line::ToolUse(tool_use) => drop(executor.add_tool(tool_use)),
                        input::Line::Failed { id, message } => executor.add_failed(&id, message),
                        input::Line::Interrupt => executor.interrupt(),
                        input::Line::Discard => executor.discard(),
                        input::Line::Error(message) => {
                            let _ = write(&out, json!({"type": "error", "line": n + 1, "message": message}));
                        }
                    }
                }
            }
            for event in stream.finish() {
                if let input::Line::Failed { id, message } = event {
                    executor.add_failed(&id, message);
                }
            }
            executor.close();
        })
    };
    while let Some(update) = executor.next_blocking() {
        let line = match update {
            toolhost::Update::Progress(p) => {
                let mut line = json!({"type": "progress", "tool_use_id": p.tool_use_id, "message": p.message});
                if let Some(data) = p.data {
                    line["data"] = data;
                }
                line
            }
            toolhost::Update::Result(r) => {
                // What the call recorded is on disk before its result is
                // out: a `run` killed after a result loses nothing of it.
                if let Err(e) = session.save() {
                    eprintln!("toolhost: warning: could not save session state: {e}");
                }
                let mut line = r.to_json();
                line["type"] = json!("tool_result");
                line
            }
        };
        write(&out, line)?;
    }
    let _ = reader.join();
    if let Err(e) = session.save() {
        eprintln!("toolhost: warning: could not save session state: {e}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `--http`: an address, or a port alone on loopback.
fn http_address(s: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse().map_err(|_| format!("`{s}` is neither an address like 127.0.0.1:8765 nor a port"))
}

/// `toolhost serve`: MCP over stdio, or streamable HTTP.
fn serve(
    host: Host,
    config: toolhost_mcp::ServeConfig,
    http: Option<(std::net::SocketAddr, toolhost_mcp::HttpConfig)>,
    session: Option<Arc<toolhost::Session>>,
) -> anyhow::Result<ExitCode> {
    // One thread for the protocol (parsing, routing, notifications): the
    // calls run on the executor's workers. Fewer hand-offs per call than a
    // multi-threaded runtime (measured in `benches/mcp.rs`).
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let Some((addr, http)) = http else {
            return Ok(toolhost_mcp::serve_stdio(host, config, session).await?);
        };
        if !addr.ip().is_loopback() && http.credentials.is_empty() {
            anyhow::bail!(
                "serving on {addr}, which is not a loopback address, needs a bearer token: \
                 --token-file FILE or $TOOLHOST_HTTP_TOKEN"
            );
        }
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("listening on {addr}"))?;
        let bound = listener.local_addr()?;
        eprintln!("toolhost: serving MCP at http://{bound}{}", toolhost_mcp::HTTP_PATH);
        let shutdown = tokio_util::sync::CancellationToken::new();
        let stop = shutdown.clone();
        // SIGTERM (an orchestrator stopping the server) or Ctrl-C: drain.
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
            eprintln!("toolhost: draining");
            stop.cancel();
        });
        Ok(toolhost_mcp::serve_http(host, config, http, listener, shutdown).await?)
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Starts the MCP servers `configured`, each confined as Bash's children
/// are, with what `toolGrants.mcp__NAME` grants it (`hosts`: the network;
/// read-write `directories`: more places to write).
fn start_servers(
    configured: &std::collections::BTreeMap<String, toolhost::settings::ConfiguredServer>,
    settings: &toolhost::Settings,
    workspace: &std::path::Path,
    cli: &Cli,
) -> anyhow::Result<Arc<toolhost_mcp::Servers>> {
    let mut writable = vec![workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf())];
    writable.extend(settings.additional_dirs.iter().filter_map(|d| d.canonicalize().ok()));
    let mut network = Vec::new();
    let mut more_writable = std::collections::BTreeMap::new();
    let (mut env, mut secrets) = (std::collections::BTreeMap::new(), std::collections::BTreeMap::new());
    for name in configured.keys() {
        let tool = format!("mcp__{}", toolhost::remote::normalize_name(name));
        let Some(grant) = settings.tool_grants.get(&tool) else {
            continue;
        };
        let granted: Vec<(String, String)> =
            grant.env.iter().filter_map(|var| std::env::var(var).ok().map(|v| (var.clone(), v))).collect();
        env.insert(name.clone(), granted);
        match toolhost::secrets::SecretStore::user().values(&tool, &grant.secrets) {
            Ok(values) => {
                secrets.insert(name.clone(), values);
            }
            Err(e) => eprintln!("toolhost: warning: the MCP server {name} starts without its secrets: {e}"),
        }
        if !grant.hosts.is_empty() {
            network.push(name.clone());
        }
        let dirs = grant
            .directories
            .iter()
            .filter(|d| d.access == toolhost::grants::DirAccess::ReadWrite)
            .map(|d| std::path::PathBuf::from(&d.path))
            .collect::<Vec<_>>();
        more_writable.insert(name.clone(), dirs);
    }
    let limits = toolhost_mcp::ChildLimits {
        writable,
        temp_root: std::env::temp_dir().join(format!("toolhost-mcp-{}", std::process::id())),
        confinement: cli.child_confinement,
        network,
        more_writable,
        env,
        secrets,
    };
    Ok(Arc::new(toolhost_mcp::Servers::start(configured, limits).context("starting the MCP servers' client")?))
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
fn capability_lines(tool: &toolhost::LoadedTool, base: toolhost::CallLimits) -> Vec<String> {
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

/// A long compile at a terminal: one line, rewritten each second.
fn show_compile(p: &toolhost::CompileProgress) {
    let mb = p.bytes as f64 / (1 << 20) as f64;
    let secs = p.elapsed.as_secs_f64();
    let line = if p.done {
        format!("\rtoolhost: compiled {} ({mb:.1} MiB) in {secs:.1} s; later starts use the cache\x1b[K\n", p.source)
    } else {
        format!("\rtoolhost: compiling {} ({mb:.1} MiB, first load only): {secs:.0} s\x1b[K", p.source)
    };
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(line.as_bytes());
    let _ = err.flush();
}

fn fresh_id() -> String {
    toolhost::unguessable_id("toolu_")
}

/// `toolhost secret set|list|rm`.
fn secret(action: &SecretAction) -> anyhow::Result<ExitCode> {
    let store = toolhost::secrets::SecretStore::user();
    let failed = |e: &dyn std::fmt::Display| -> anyhow::Result<ExitCode> {
        eprintln!("toolhost: {e}");
        Ok(ExitCode::FAILURE)
    };
    match action {
        SecretAction::Set { tool, name } => {
            let value = prompt::read_secret(&format!("value of {tool}'s secret {name}: "))
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
