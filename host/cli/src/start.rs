//! Starting a host for the commands that run or load tools: the options
//! they share ([`HostArgs`]), what each command needs of its host
//! ([`Needs`]), and [`start`], which reads the settings and builds it.

use anyhow::Context as _;
use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use toolhost::{Allocator, Behavior, Confinement, Host, PermissionMode, Settings, Sources};

// The options of every command that starts a host. They may come before
// the command's name (`toolhost --workspace W call …`) or after it; given in
// both places, the one after wins (lists add up). (No doc comment: clap
// would take it as the about text of every command that flattens these.)
#[derive(clap::Args, Clone, Debug, Default)]
#[command(next_help_heading = "Host options")]
pub struct HostArgs {
    /// The directory file tools work in [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Where third-party components (*.wasm) are loaded from
    /// [default: $TOOLHOST_PLUGINS, else ~/.config/toolhost/plugins]
    #[arg(long, value_name = "DIR")]
    pub plugins: Option<PathBuf>,
    /// Permission mode: default, plan, acceptEdits, dontAsk, bypassPermissions
    /// [default: the settings' defaultMode, else default]
    #[arg(long, value_name = "MODE")]
    pub mode: Option<PermissionMode>,
    /// Allow calls matching a rule, e.g. 'Bash(npm run test:*)' (repeatable)
    #[arg(long, value_name = "RULE")]
    pub allow: Vec<String>,
    /// Ask before calls matching a rule (repeatable)
    #[arg(long, value_name = "RULE")]
    pub ask: Vec<String>,
    /// Deny calls matching a rule; a bare tool name removes the tool (repeatable)
    #[arg(long, value_name = "RULE")]
    pub deny: Vec<String>,
    /// A settings file (or JSON text) on the command-line layer (repeatable)
    #[arg(long, value_name = "FILE")]
    pub settings: Vec<String>,
    /// Wall-clock limit of one call, in milliseconds [default: 120000]
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// Memory limit of one call, in MiB [default: 512]
    #[arg(long, value_name = "MIB")]
    pub memory_mib: Option<usize>,
    /// Instance allocator: auto, pooling, on-demand [default: auto]
    #[arg(long, env = "TOOLHOST_ALLOCATOR", value_name = "KIND")]
    pub allocator: Option<Allocator>,
    /// When the kernel cannot confine the processes tools start (Landlock,
    /// network namespaces): `required` refuses to start them,
    /// `best-effort` starts them unconfined with a warning [default: required]
    #[arg(long, value_name = "MODE")]
    pub child_confinement: Option<Confinement>,
    /// A plugin component of at least this many KiB, the first time it
    /// loads, is compiled quick (Winch) and served at once; `run` and
    /// `serve` then compile it optimized (Cranelift) in the background and
    /// switch to that. `off`: always compile optimized, at once [default: 1024]
    #[arg(long, env = "TOOLHOST_QUICK_COMPILE_ABOVE", value_name = "KIB|off")]
    pub quick_compile_above: Option<OrOff>,
    /// A tool whose fresh instance took at least this many microseconds to
    /// make (an interpreter's) gets the instance of its next call made
    /// ahead, while no call runs; each call still gets a fresh instance
    /// (`run` and `serve`; a one-shot command makes none). `off`: each call
    /// makes its own [default: 250]
    #[arg(long, env = "TOOLHOST_SPARE_INSTANCES_ABOVE", value_name = "US|off")]
    pub spare_instances_above: Option<OrOff>,
    /// Keep tools loaded quick on their quick code, even in `run` and
    /// `serve` (for measuring that code)
    #[arg(long, hide = true)]
    pub no_optimize: bool,
    /// Where persistent sessions' state is kept: a redis:// URL (Redis or
    /// Valkey), for servers that share sessions [default: the settings'
    /// stateStore, else files under the data directory]
    #[arg(long, env = "TOOLHOST_STATE", value_name = "URL")]
    pub state: Option<String>,
    /// This server's name among several sharing sessions through --state
    /// (named when a call reaches it for a background process another one
    /// runs) [default: the host name]
    #[arg(long, env = "TOOLHOST_INSTANCE", value_name = "NAME")]
    pub instance: Option<String>,
    /// Offer the Script tool (code mode): the model writes one JavaScript
    /// program that calls the other tools, each call checked as if made
    /// directly [default: the settings' codeMode, else off]
    #[arg(long, env = "TOOLHOST_CODE_MODE", value_parser = clap::builder::BoolishValueParser::new())]
    pub code_mode: bool,
}

/// A threshold given as a number, or `off` (`--quick-compile-above`,
/// `--spare-instances-above`).
#[derive(Clone, Copy, Debug)]
pub struct OrOff(Option<u64>);

impl std::str::FromStr for OrOff {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(OrOff(None)),
            n => n.parse::<u64>().map(|n| OrOff(Some(n))).map_err(|_| format!("`{n}` is neither a number nor `off`")),
        }
    }
}

impl HostArgs {
    /// These options given after the command's name, over `before` (given
    /// before it): single values from here when set, lists together. A
    /// value that `from_environment` names (by field) came from its
    /// environment variable, not from the command line: both places read
    /// the variable, so an option given before the name wins over it.
    pub fn over(self, before: HostArgs, from_environment: &[String]) -> HostArgs {
        let join = |mut a: Vec<String>, b: Vec<String>| {
            a.extend(b);
            a
        };
        fn pick<T>(after: Option<T>, before: Option<T>, id: &str, from_environment: &[String]) -> Option<T> {
            match from_environment.iter().any(|e| e == id) {
                true => before.or(after),
                false => after.or(before),
            }
        }
        HostArgs {
            workspace: self.workspace.or(before.workspace),
            plugins: self.plugins.or(before.plugins),
            mode: self.mode.or(before.mode),
            allow: join(before.allow, self.allow),
            ask: join(before.ask, self.ask),
            deny: join(before.deny, self.deny),
            settings: join(before.settings, self.settings),
            timeout_ms: self.timeout_ms.or(before.timeout_ms),
            memory_mib: self.memory_mib.or(before.memory_mib),
            allocator: pick(self.allocator, before.allocator, "allocator", from_environment),
            child_confinement: self.child_confinement.or(before.child_confinement),
            quick_compile_above: pick(
                self.quick_compile_above,
                before.quick_compile_above,
                "quick_compile_above",
                from_environment,
            ),
            spare_instances_above: pick(
                self.spare_instances_above,
                before.spare_instances_above,
                "spare_instances_above",
                from_environment,
            ),
            no_optimize: self.no_optimize || before.no_optimize,
            state: pick(self.state, before.state, "state", from_environment),
            instance: pick(self.instance, before.instance, "instance", from_environment),
            code_mode: self.code_mode || before.code_mode,
        }
    }

    /// The workspace: `--workspace`, else the current directory.
    pub fn workspace(&self) -> anyhow::Result<PathBuf> {
        match &self.workspace {
            Some(w) => Ok(w.clone()),
            None => std::env::current_dir().context("the current directory"),
        }
    }

    /// The plugins directory: `--plugins`, else the default.
    pub fn plugins_dir(&self) -> PathBuf {
        self.plugins.clone().unwrap_or_else(toolhost::default_plugins_dir)
    }

    pub fn child_confinement(&self) -> Confinement {
        self.child_confinement.unwrap_or(Confinement::Required)
    }
}

// The options of the fronts that live on, serving call after call (`run`,
// `serve`). (No doc comment, as for `HostArgs`.)
#[derive(clap::Args, Clone, Debug, Default)]
pub struct FrontArgs {
    /// Calls running at once (for `serve`, in one MCP session) [default:
    /// $TOOLHOST_MAX_TOOL_CONCURRENCY, else the settings'
    /// maxToolConcurrency, else 10]
    #[arg(long, env = "TOOLHOST_MAX_TOOL_CONCURRENCY", value_name = "N")]
    max_concurrency: Option<usize>,
    /// Load the plugins directory once, instead of watching it (a changed
    /// component is otherwise reloaded, and the client is told the tools
    /// changed)
    #[arg(long)]
    no_watch: bool,
}

impl FrontArgs {
    /// Starts the host of a front: every plugin and MCP server, watched
    /// unless `--no-watch`; and the calls it runs at once.
    pub fn start(&self, host: &HostArgs) -> anyhow::Result<(Started, usize)> {
        let needs = Needs {
            plugins: true,
            long_running: true,
            watch: !self.no_watch,
            servers: Servers::All,
            ..Needs::default()
        };
        let started = start(host, needs)?;
        let concurrency = self.max_concurrency.filter(|&n| n > 0).unwrap_or(started.concurrency);
        Ok((started, concurrency))
    }
}

/// What a command needs of its host.
#[derive(Clone, Debug, Default)]
pub struct Needs {
    /// Load the plugins directory (`check`, `install` and `uninstall` look
    /// at components one by one instead).
    pub plugins: bool,
    /// Lives on, serving call after call (`run`, `serve`): links the tools
    /// while waiting for the first call, optimizes quick-compiled ones in
    /// the background, makes spare instances, and gives freed memory back
    /// at once.
    pub long_running: bool,
    /// Watch the plugins directory and reload what changes.
    pub watch: bool,
    /// Makes one call: `auto` instantiates on demand (a pool of instance
    /// slots would be set up for nothing).
    pub one_call: bool,
    /// Asks go to the user at the terminal, when there is one.
    pub prompts: bool,
    /// The configured MCP servers it starts.
    pub servers: Servers,
}

/// Which configured MCP servers a command starts.
#[derive(Clone, Debug, Default)]
pub enum Servers {
    #[default]
    None,
    /// Every one (the fronts that list or serve tools).
    All,
    /// Only the server of this tool (`call`).
    OfTool(String),
}

/// A host, and what it was started from.
pub struct Started {
    pub host: Host,
    pub settings: Settings,
    pub plugins_dir: PathBuf,
    /// The store sessions are shared through, if any (`--state`, or the
    /// settings' `stateStore`).
    pub shared_state: Option<String>,
    /// The settings' maxToolConcurrency, else the default.
    pub concurrency: usize,
}

/// Reads the settings and starts the host `args` and `needs` describe.
pub fn start(args: &HostArgs, needs: Needs) -> anyhow::Result<Started> {
    let workspace = args.workspace()?;
    let plugins_dir = args.plugins_dir();
    let mut sources = Sources::standard(&workspace);
    sources.command_line_files = args.settings.clone();
    sources.command_line_mode = args.mode;
    for (behavior, list) in [(Behavior::Allow, &args.allow), (Behavior::Ask, &args.ask), (Behavior::Deny, &args.deny)] {
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
    let allocator = match (args.allocator.unwrap_or(Allocator::Auto), needs.one_call) {
        (Allocator::Auto, true) => Allocator::OnDemand,
        (chosen, _) => chosen,
    };
    let timeout = args.timeout_ms.map_or(toolhost::DEFAULT_TIMEOUT, Duration::from_millis);
    let memory = args.memory_mib.map_or(toolhost::DEFAULT_MEMORY, |mib| mib << 20);
    let mut builder = Host::builder()
        .tool_grants_source(grants_source)
        .plugins_dir(needs.plugins.then(|| plugins_dir.clone()))
        .settings(settings.clone())
        .allocator(allocator)
        .timeout(timeout)
        .memory_limit(memory)
        .child_confinement(args.child_confinement());
    if let Some(w) = &args.workspace {
        builder = builder.workspace(w);
    }
    let shared_state = args.state.clone().or_else(|| settings.state_store.clone());
    if let Some(url) = &shared_state {
        let store = toolhost_redis::RedisStore::open(url).context("opening the state store")?;
        builder = builder.state_store(Arc::new(store));
    }
    if let Some(name) = &args.instance {
        builder = builder.instance(name);
    }
    if args.code_mode {
        builder = builder.code_mode(true);
    }
    builder = builder.trace_content(crate::telemetry::capture_content());
    // A one-shot command links only the tool it calls.
    builder = builder.watch_plugins(needs.watch).link_in_background(needs.long_running);
    // A tool loaded quick is optimized in the background only by a front
    // that lives to use it.
    let quick_above = args.quick_compile_above.unwrap_or(OrOff(Some(1024))).0;
    builder = builder
        .quick_compile_above(quick_above.map(|kib| usize::try_from(kib.saturating_mul(1024)).unwrap_or(usize::MAX)));
    builder = builder.optimize_in_background(needs.long_running && !args.no_optimize);
    // Spares serve a next call: a one-shot command makes none.
    let spares_above = args.spare_instances_above.unwrap_or(OrOff(Some(250))).0;
    builder = builder.spare_instances_above(spares_above.filter(|_| needs.long_running).map(Duration::from_micros));
    if std::io::stderr().is_terminal() {
        builder = builder.compile_progress(Arc::new(show_compile));
    }
    if needs.prompts && crate::prompt::at_terminal() {
        builder = builder.approver(Arc::new(crate::prompt::TerminalApprover::default()));
    }
    let wanted = |name: &str| match &needs.servers {
        Servers::None => false,
        Servers::All => true,
        Servers::OfTool(tool) => {
            toolhost::remote::server_of(tool) == Some(toolhost::remote::normalize_name(name).as_str())
        }
    };
    let configured: std::collections::BTreeMap<_, _> =
        settings.mcp_servers.iter().filter(|(name, _)| wanted(name)).map(|(n, c)| (n.clone(), c.clone())).collect();
    let servers = match configured.is_empty() {
        true => None,
        false => Some(start_servers(&configured, &settings, &workspace, args.child_confinement())?),
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
    Ok(Started { host, settings, plugins_dir, shared_state, concurrency })
}

/// Starts the MCP servers `configured`, each confined as Bash's children
/// are, with what `toolGrants.mcp__NAME` grants it (`hosts`: the network;
/// read-write `directories`: more places to write).
fn start_servers(
    configured: &std::collections::BTreeMap<String, toolhost::settings::ConfiguredServer>,
    settings: &toolhost::Settings,
    workspace: &std::path::Path,
    confinement: Confinement,
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
        confinement,
        network,
        more_writable,
        env,
        secrets,
    };
    Ok(Arc::new(toolhost_mcp::Servers::start(configured, limits).context("starting the MCP servers' client")?))
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

#[cfg(test)]
mod tests {
    use super::HostArgs;
    use clap::Args as _;

    /// Every host option that reads an environment variable is one that
    /// [`HostArgs::over`] lets an option before the command's name win over
    /// (by its id): a new one must be added there.
    #[test]
    fn every_option_with_a_variable_is_merged_by_where_its_value_came_from() {
        let command = HostArgs::augment_args(clap::Command::new("toolhost"));
        let mut with_variable: Vec<&str> =
            command.get_arguments().filter(|a| a.get_env().is_some()).map(|a| a.get_id().as_str()).collect();
        with_variable.sort_unstable();
        // `code_mode` is a switch: on in either place is on.
        assert_eq!(
            with_variable,
            ["allocator", "code_mode", "instance", "quick_compile_above", "spare_instances_above", "state"]
        );
    }

    #[test]
    fn an_option_before_the_name_wins_over_a_variable_after_it() {
        let before = HostArgs { state: Some("redis://before".into()), ..HostArgs::default() };
        let after = HostArgs { state: Some("redis://variable".into()), ..HostArgs::default() };
        let merged = after.clone().over(before.clone(), &["state".to_string()]);
        assert_eq!(merged.state.as_deref(), Some("redis://before"));
        // Given on the command line after the name, it wins.
        assert_eq!(after.over(before, &[]).state.as_deref(), Some("redis://variable"));
    }
}
