//! `toolhost install FILE|oci://REF`, `install --upgrade NAME` and
//! `toolhost uninstall NAME`: putting a third-party component into the
//! plugins directory once the operator has seen what it is and what it
//! requests, following the registry tag it came from, and taking it out.
//!
//! Installing, in order; a refusal exits 1 with nothing copied or granted:
//! 0. from a registry, the component is pulled and checked against its
//!    layer's digest ([`oci`]);
//! 1. the file's SHA-256 is compared with `--sha256`;
//! 2. when trusted keys are configured, `FILE.minisig` must verify against
//!    one of them;
//! 3. a copy of the checked bytes is loaded the way the host loads a plugin,
//!    granted all it requests, through the compile cache (so the next start
//!    finds it compiled and described);
//! 4. the review: the tool, its contract and capabilities, what it requests,
//!    what `toolGrants` already give it;
//! 5. what it requests and lacks is granted as the operator answers at a
//!    terminal (all of it with `--yes`, nothing without a terminal), in
//!    `toolGrants.NAME` of the workspace's local settings;
//! 6. the checked bytes become `NAME.wasm` in the plugins directory by an
//!    atomic rename (a watcher never sees half a component), with the
//!    signature beside them, replacing the tool's earlier component.

mod grant;
pub mod oci;
mod signature;
mod uninstall;

use toolhost_verify::{cosign, minisign as verify, sigstore};

pub use verify::parse_sha256;

use crate::start::{HostArgs, Needs, start};
use anyhow::Context as _;
use grant::items;
use serde_json::json;
use signature::vouch;
use std::io::Write;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolhost::Capability;
use toolhost::grants::Allowance;
use toolhost::settings::TrustStore;
use toolhost::{FileAccess, Host, LoadedTool, Origin, Settings};
use verify::Keys;

/// The extension of the record beside a component installed from a
/// registry: where it came from, to upgrade it, and what it requested then.
const RECORD: &str = "oci.json";

/// Where a component installed from a registry came from.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    /// `oci://REGISTRY/REPOSITORY:TAG` (or `@sha256:…`), as installed.
    source: String,
    /// The digest of the manifest installed.
    manifest: String,
    /// `sha256:HEX` of the component.
    component: String,
    /// The capabilities it imports, and what it requested.
    capabilities: Vec<String>,
    requests: Allowance,
}

/// Where a component pulled from a registry came from.
struct Pulled<'a> {
    source: &'a str,
    manifest: &'a str,
    /// `sha256:HEX` of the component.
    component: String,
}

/// Says what an upgrade changes: the manifest, the capabilities imported,
/// what is requested (each new request is asked again below).
fn show_changes(old: &Record, new: &Record) {
    println!("upgrading:       {} → {}", old.manifest, new.manifest);
    if old.component == new.component {
        println!("component:       the same bytes ({})", new.component);
    }
    let added: Vec<&str> =
        new.capabilities.iter().filter(|c| !old.capabilities.contains(c)).map(|c| c.as_str()).collect();
    let dropped: Vec<&str> =
        old.capabilities.iter().filter(|c| !new.capabilities.contains(c)).map(|c| c.as_str()).collect();
    if !added.is_empty() {
        println!("new capability:  {}", added.join(", "));
    }
    if !dropped.is_empty() {
        println!("no longer uses:  {}", dropped.join(", "));
    }
    let (old_items, new_items) = (items(&old.requests), items(&new.requests));
    let mut more = Allowance::default();
    for item in new_items.iter().filter(|i| !old_items.contains(i)) {
        more.add(item);
    }
    let mut fewer = Allowance::default();
    for item in old_items.iter().filter(|i| !new_items.contains(i)) {
        fewer.add(item);
    }
    if !more.is_empty() {
        println!("new requests:    {}", more.describe());
    }
    if !fewer.is_empty() {
        println!("no longer asks:  {}", fewer.describe());
    }
    if added.is_empty() && dropped.is_empty() && more.is_empty() && fewer.is_empty() {
        println!("changes:         the same capabilities and requests");
    }
}

/// Refuses an install, saying why; exits 1.
fn refuse(source: &str, why: String) -> anyhow::Result<ExitCode> {
    eprintln!("toolhost: not installing {source}: {why}");
    Ok(ExitCode::FAILURE)
}

/// Install a tool component into the plugins directory, from a file or an
/// OCI registry: check its SHA-256 and signature, show what it requests,
/// and grant what you answer yes to (in the workspace's
/// .toolhost/settings.local.json)
#[derive(clap::Args)]
pub struct Args {
    /// The component file (FILE.minisig beside it is its signature), or
    /// oci://REGISTRY/REPOSITORY:TAG (or @sha256:DIGEST); with --upgrade,
    /// the installed tool's name
    #[arg(value_name = "FILE|oci://REF|NAME")]
    source: String,
    /// Pull the tag the tool NAME was installed from again, and review what
    /// changed
    #[arg(long)]
    upgrade: bool,
    /// Refuse the file unless its SHA-256 is this (64 hex digits)
    #[arg(long, value_name = "HEX", value_parser = parse_sha256)]
    sha256: Option<String>,
    /// Grant everything it requests without asking (for scripts)
    #[arg(long)]
    yes: bool,
    /// The longest a pull from a registry may take, in seconds, however
    /// slowly the registry answers
    #[arg(long, value_name = "SECONDS", default_value_t = oci::PULL_TIMEOUT.as_secs())]
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
    #[command(flatten)]
    pub host: HostArgs,
}

/// Remove an installed tool from the plugins directory, and its grants
/// from the workspace's .toolhost/settings.local.json
#[derive(clap::Args)]
pub struct UninstallArgs {
    /// The tool's name (or its file's name without .wasm)
    name: String,
    /// Keep toolGrants.NAME in the workspace's local settings
    #[arg(long)]
    keep_grants: bool,
    #[command(flatten)]
    pub host: HostArgs,
}

/// `toolhost install`: its host loads no plugins, but each file it looks
/// at, one by one.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let started = start(&args.host, Needs::default())?;
    let named = toolhost::manifest::Manifest { name: args.name, description: args.description };
    let installer = Installer {
        host: &started.host,
        settings: &started.settings,
        dir: &started.plugins_dir,
        pull_timeout: std::time::Duration::from_secs(args.pull_timeout),
        policy: args.policy.as_deref(),
        named,
    };
    match args.upgrade {
        false => installer.install(&args.source, args.sha256.as_deref(), args.yes),
        true => installer.upgrade(&args.source, args.sha256.as_deref(), args.yes),
    }
}

/// `toolhost uninstall`.
pub fn run_uninstall(args: UninstallArgs) -> anyhow::Result<ExitCode> {
    let started = start(&args.host, Needs::default())?;
    let installer = Installer {
        host: &started.host,
        settings: &started.settings,
        dir: &started.plugins_dir,
        pull_timeout: oci::PULL_TIMEOUT,
        policy: None,
        named: Default::default(),
    };
    installer.uninstall(&args.name, args.keep_grants)
}

/// The file beside the plugins' components that holds the operator's
/// trusted keys, in the configuration directory.
const KEYS_FILE: &str = "trusted-keys";

/// What install and uninstall work with.
pub struct Installer<'a> {
    /// Started without plugins: it loads the files to look at one by one.
    pub host: &'a Host,
    pub settings: &'a Settings,
    /// The plugins directory.
    pub dir: &'a Path,
    /// How long pulling from a registry may take.
    pub pull_timeout: std::time::Duration,
    /// A Wassette policy file given with `--policy`.
    pub policy: Option<&'a Path>,
    /// A WASI command's name and description given with `--name` and
    /// `--description`.
    pub named: toolhost::manifest::Manifest,
}

/// The files installed beside a component: its Wassette policy file and
/// its manifest (a WASI command's), as text.
#[derive(Default)]
struct Beside {
    policy: Option<String>,
    manifest: Option<String>,
}

/// A component file in the plugins directory, and the names of its tools
/// (one for a component exporting the contract, one per function for a
/// plain one), or why it does not load.
struct Installed {
    path: PathBuf,
    names: Result<Vec<String>, String>,
}

impl Installed {
    /// Whether it holds the tool `name`.
    fn holds(&self, name: &str) -> bool {
        self.names.as_ref().is_ok_and(|names| names.iter().any(|n| n == name))
    }
}

/// A component loaded for review: its tools, and the files of the plugins
/// directory that hold any of them now (which it replaces).
struct Reviewed {
    tools: Vec<LoadedTool>,
    earlier: Vec<PathBuf>,
}

/// The file name a component is installed as: its tool's name, or, for a
/// plain component with several tools, the name it came by (`FILE`'s stem,
/// the registry repository's last part).
fn install_name(tools: &[LoadedTool], came_as: &str) -> String {
    match tools {
        [tool] => tool.spec().name.clone(),
        _ => toolhost::remote::normalize_name(came_as),
    }
}

impl Installer<'_> {
    /// `toolhost install FILE|oci://REF [--sha256 HEX] [--yes]`.
    pub fn install(&self, source: &str, pinned: Option<&str>, yes: bool) -> anyhow::Result<ExitCode> {
        match oci::parse(source) {
            None => self.install_file(Path::new(source), pinned, yes),
            Some(Err(why)) => refuse(source, why.to_string()),
            Some(Ok(reference)) => self.install_oci(source, &reference, pinned, yes, None),
        }
    }

    /// `toolhost install --upgrade NAME`: pulls the tag NAME was installed
    /// from again and, when it changed, reviews what changed as an install
    /// does (what it newly requests is asked again).
    pub fn upgrade(&self, name: &str, pinned: Option<&str>, yes: bool) -> anyhow::Result<ExitCode> {
        let installed = self.installed()?;
        let Some(path) = installed.iter().find(|i| i.holds(name)).map(|i| &i.path) else {
            eprintln!("toolhost: no installed tool is called {name}");
            return Ok(ExitCode::FAILURE);
        };
        let record_file = beside(path, RECORD);
        let record = match std::fs::read(&record_file) {
            Ok(bytes) => serde_json::from_slice::<Record>(&bytes)
                .with_context(|| format!("reading {}", record_file.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!(
                    "toolhost: {name} was installed from a file, not a registry: install its new version with toolhost install FILE"
                );
                return Ok(ExitCode::FAILURE);
            }
            Err(e) => return Err(e).with_context(|| format!("reading {}", record_file.display())),
        };
        let reference = match oci::parse(&record.source) {
            Some(Ok(reference)) => reference,
            _ => anyhow::bail!("{} names no OCI reference: {}", record_file.display(), record.source),
        };
        if reference.tag().is_none() {
            eprintln!(
                "toolhost: {name} was installed by digest ({}), which never changes: install a newer reference",
                record.source
            );
            return Ok(ExitCode::FAILURE);
        }
        self.install_oci(&record.source.clone(), &reference, pinned, yes, Some(record))
    }

    fn install_file(&self, file: &Path, pinned: Option<&str>, yes: bool) -> anyhow::Result<ExitCode> {
        let label = file.display().to_string();
        let bytes = match std::fs::read(file) {
            Ok(bytes) => bytes,
            Err(e) => return refuse(&label, format!("cannot read it: {e}")),
        };
        println!("file:            {label}");
        let signature = match self.vouch(file, &bytes, pinned)? {
            Ok(signature) => signature,
            Err(why) => return refuse(&label, why),
        };
        let came_as = file.file_stem().and_then(|s| s.to_str()).unwrap_or("component");
        let beside = match self.policy_text(Some(file)).and_then(|policy| Ok((policy, self.manifest_text(Some(file))?)))
        {
            Ok((policy, manifest)) => Beside { policy, manifest },
            Err(why) => return refuse(&label, why),
        };
        self.finish(&label, came_as, &bytes, signature.as_deref(), None, beside, yes)
    }

    fn install_oci(
        &self,
        source: &str,
        reference: &oci_client::Reference,
        pinned: Option<&str>,
        yes: bool,
        previous: Option<Record>,
    ) -> anyhow::Result<ExitCode> {
        println!("source:          {source}");
        let pulled = match oci::pull(source, reference, self.pull_timeout) {
            Ok(pulled) => pulled,
            Err(why) => return refuse(source, why.to_string()),
        };
        println!("manifest:        {} (pulled with {})", pulled.manifest, pulled.credentials);
        if let Some(previous) = &previous
            && previous.manifest == pulled.manifest
        {
            println!("up to date:      {source} is still {}; nothing changed", pulled.manifest);
            return Ok(ExitCode::SUCCESS);
        }
        let hash = match self.check_hash(&pulled.bytes, pinned) {
            Ok(hash) => hash,
            Err(why) => return refuse(source, why),
        };
        let keys = self.trusted_keys()?;
        if keys.is_empty() {
            fn found<T>(what: &Result<Vec<T>, String>) -> String {
                what.as_ref().map_or_else(|e| e.clone(), |f| f.len().to_string())
            }
            println!(
                "signature:       not checked: no trusted keys are configured (cosign signatures beside it: {}; \
                 Sigstore bundles: {})",
                found(&pulled.signatures),
                found(&pulled.bundles)
            );
        } else if !keys.vouch_for_registries() {
            return refuse(
                source,
                format!(
                    "with trusted keys configured ({}) a component is installed only signed by one of them, and none \
                     is a cosign key (a PEM public key, as cosign.pub) or a Sigstore signer (trustedPluginSigners), \
                     which is what signs registry components",
                    keys.origins().join("; ")
                ),
            );
        } else {
            match vouch(&pulled, &keys) {
                Ok(said) => println!("signature:       verified: {said}"),
                Err(why) => return refuse(source, why),
            }
        }
        let from = Pulled { source: &pulled.source, manifest: &pulled.manifest, component: format!("sha256:{hash}") };
        let repository = reference.repository();
        let came_as = repository.rsplit('/').next().unwrap_or(repository);
        let beside = match self.policy_text(None).and_then(|policy| Ok((policy, self.manifest_text(None)?))) {
            Ok((policy, manifest)) => Beside { policy, manifest },
            Err(why) => return refuse(source, why),
        };
        self.finish(source, came_as, &pulled.bytes, None, Some((from, previous)), beside, yes)
    }

    /// The review, the grants and the copy into the plugins directory, for
    /// `bytes` that passed their checks; `registry` carries where an OCI
    /// install came from and the record of the one it replaces.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        label: &str,
        came_as: &str,
        bytes: &[u8],
        signature: Option<&str>,
        registry: Option<(Pulled<'_>, Option<Record>)>,
        given: Beside,
        yes: bool,
    ) -> anyhow::Result<ExitCode> {
        // With no policy or manifest given, one installed before for the
        // same name stays.
        let installed = self.dir.join(format!("{came_as}.wasm"));
        let kept = |file: PathBuf| std::fs::read_to_string(file).ok();
        let policy = given.policy.or_else(|| kept(toolhost::grants::wassette::beside(&installed)));
        let manifest = given.manifest.or_else(|| kept(toolhost::manifest::beside(&installed)));
        let Reviewed { tools, earlier } = match self.load(bytes, came_as, policy.as_deref(), manifest.as_deref())? {
            Ok(loaded) => loaded,
            Err(why) => return refuse(label, why),
        };
        let command = tools.iter().any(LoadedTool::is_command);
        if !command && (self.named.name.is_some() || self.named.description.is_some()) {
            return refuse(
                label,
                "--name and --description name a WASI command (a component exporting wasi:cli/run), and this \
                 component is none: its tools are named by what it exports"
                    .into(),
            );
        }
        let name = install_name(&tools, came_as);
        let target = self.dir.join(format!("{name}.wasm"));
        let tool = &tools[0];
        let capabilities: Vec<&str> = tool.shape().capabilities.iter().map(|c| c.name()).collect();
        for tool in &tools {
            println!("tool:            {}: {}", tool.spec().name, tool.spec().description);
        }
        match tool.shape().form {
            toolhost::Form::Contract => println!("contract:        {}", tool.shape().version),
            toolhost::Form::Functions if tools.iter().all(LoadedTool::is_command) => println!(
                "contract:        none: a WASI command, whose input is its arguments and standard input and whose \
                 answer is its standard output"
            ),
            toolhost::Form::Functions => {
                println!("contract:        none: its exported functions are its tools, described from their WIT types")
            }
        }
        println!(
            "capabilities:    {}",
            if capabilities.is_empty() { "(none)".into() } else { capabilities.join(", ") }
        );
        println!("requests:        {}", tool.requests().describe());
        for warning in tools.iter().flat_map(|t| t.warnings()) {
            println!("warning:         {warning}");
        }
        for note in tools.iter().flat_map(|t| t.notes()) {
            println!("note:            {note}");
        }
        let record = registry.map(|(from, previous)| {
            let record = Record {
                source: from.source.to_string(),
                manifest: from.manifest.to_string(),
                component: from.component,
                capabilities: capabilities.iter().map(|c| c.to_string()).collect(),
                requests: tool.requests().clone(),
            };
            if let Some(previous) = previous {
                show_changes(&previous, &record);
            }
            record
        });
        for e in &earlier {
            println!("replacing:       {} (the installed {name})", e.display());
        }
        self.grant(&tools, yes)?;
        match (&policy, tool.shape().form) {
            (Some(policy), toolhost::Form::Functions) => {
                // Before the component: a watcher that sees it sees its policy.
                let file = toolhost::grants::wassette::beside(&target);
                toolhost::replace_file(&file, policy.as_bytes())
                    .with_context(|| format!("writing {}", file.display()))?;
                println!("policy:          {}", file.display());
            }
            (Some(_), toolhost::Form::Contract) => println!(
                "policy:          not installed: a component exporting the contract requests what its \
                 toolhost:requests section says (toolhost stamp)"
            ),
            (None, _) => {}
        }
        match (&manifest, command) {
            (Some(manifest), true) => {
                let file = toolhost::manifest::beside(&target);
                toolhost::replace_file(&file, manifest.as_bytes())
                    .with_context(|| format!("writing {}", file.display()))?;
                println!("manifest:        {}", file.display());
            }
            (Some(_), false) => println!("manifest:        not installed: the component is no WASI command"),
            (None, _) => {}
        }
        self.put(bytes, signature, record.as_ref(), &target)?;
        for e in earlier.iter().filter(|e| **e != target) {
            remove(e)?;
            remove(&beside(e, "minisig"))?;
            remove(&beside(e, RECORD))?;
            remove(&toolhost::grants::wassette::beside(e))?;
            remove(&toolhost::manifest::beside(e))?;
        }
        println!("installed:       {name} as {}", target.display());
        Ok(ExitCode::SUCCESS)
    }

    /// Loads `bytes` as the host loads a plugin (compiling them into the
    /// cache) and finds the files of the plugins directory holding any of
    /// the same tools; or why they are refused.
    fn load(
        &self,
        bytes: &[u8],
        came_as: &str,
        policy: Option<&str>,
        manifest: Option<&str>,
    ) -> anyhow::Result<Result<Reviewed, String>> {
        // The host loads from a file: a private copy of the bytes checked,
        // so the component reviewed is the one installed even if FILE
        // changes meanwhile; its policy beside it, as it will be installed.
        let dir = tempfile::Builder::new().prefix("toolhost-install-").tempdir()?;
        // Named as it will be: a command without a manifest is called
        // after its file.
        let copy = dir.path().join(format!("{}.wasm", toolhost::remote::normalize_name(came_as)));
        std::fs::write(&copy, bytes).context("copying the component to a temporary file")?;
        if let Some(policy) = policy {
            std::fs::write(toolhost::grants::wassette::beside(&copy), policy)
                .context("copying the policy file to a temporary file")?;
        }
        if let Some(manifest) = manifest {
            std::fs::write(toolhost::manifest::beside(&copy), manifest)
                .context("copying the manifest to a temporary file")?;
        }
        let tools = match self.host.review_component(&copy) {
            Ok(tools) => tools,
            Err(e) => return Ok(Err(format!("it does not load as a tool: {e}"))),
        };
        let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
        if let Some(name) = names.iter().find(|n| self.host.tool(n).is_some_and(|t| *t.origin() == Origin::Builtin)) {
            return Ok(Err(format!(
                "it is the tool `{name}`, and a built-in tool has that name: the built-in would win and it would never be offered"
            )));
        }
        let name = install_name(&tools, came_as);
        let target = self.dir.join(format!("{name}.wasm"));
        let installed = self.installed()?;
        let ours = |i: &Installed| names.iter().any(|n| i.holds(n));
        if let Some(other) = installed.iter().find(|i| i.path == target && !ours(i)) {
            return Ok(Err(match &other.names {
                Ok(held) => format!(
                    "{} holds {}, `{}`: uninstall it first (toolhost uninstall {})",
                    target.display(),
                    if held.len() == 1 { "another tool" } else { "other tools" },
                    held.join("`, `"),
                    held.first().map_or(name.as_str(), String::as_str)
                ),
                Err(why) => format!(
                    "{} is there and does not load ({why}): remove it first (toolhost uninstall {name})",
                    target.display()
                ),
            }));
        }
        let earlier = installed.into_iter().filter(|i| ours(i)).map(|i| i.path).collect();
        Ok(Ok(Reviewed { tools, earlier }))
    }

    /// The policy file's text: `--policy`'s, else the one beside the
    /// component `file` installed from, if any; why it cannot be read.
    fn policy_text(&self, file: Option<&Path>) -> Result<Option<String>, String> {
        let beside = file.map(toolhost::grants::wassette::beside).filter(|p| p.exists());
        let Some(path) = self.policy.map(Path::to_path_buf).or(beside) else { return Ok(None) };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read the policy file {}: {e}", path.display()))?;
        toolhost::grants::wassette::read(&text)
            .map_err(|why| format!("the policy file {} does not read: {why}", path.display()))?;
        println!("policy file:     {}", path.display());
        Ok(Some(text))
    }

    /// The manifest's text: the one beside the component `file` installed
    /// from, if any, with what `--name` and `--description` say over it;
    /// why it cannot be read.
    fn manifest_text(&self, file: Option<&Path>) -> Result<Option<String>, String> {
        use toolhost::manifest::{Manifest, beside};
        let mut manifest = match file.map(beside).filter(|p| p.exists()) {
            Some(path) => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read the manifest {}: {e}", path.display()))?;
                println!("manifest file:   {}", path.display());
                Manifest::read(&text).map_err(|why| format!("the manifest {} does not read: {why}", path.display()))?
            }
            None => Manifest::default(),
        };
        if let Some(name) = &self.named.name {
            manifest.name = Some(name.clone());
        }
        if let Some(description) = &self.named.description {
            manifest.description = Some(description.clone());
        }
        if manifest == Manifest::default() {
            return Ok(None);
        }
        let text = manifest.text();
        Manifest::read(&text).map_err(|why| format!("--name or --description: {why}"))?;
        Ok(Some(text))
    }

    /// The `*.wasm` files of the plugins directory (as the host picks them),
    /// each with its tool's name.
    fn installed(&self) -> anyhow::Result<Vec<Installed>> {
        let entries = match std::fs::read_dir(self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_context(|| format!("reading the plugins directory {}", self.dir.display())),
        };
        let mut paths: Vec<PathBuf> =
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "wasm")).collect();
        paths.sort();
        Ok(paths
            .into_iter()
            .map(|path| {
                let names = self
                    .host
                    .review_component(&path)
                    .map(|tools| tools.iter().map(|t| t.spec().name.clone()).collect())
                    .map_err(|e| e.to_string());
                Installed { path, names }
            })
            .collect())
    }

    /// Writes `bytes` as `target` (and the signature beside it, or removes a
    /// stale one): into a temporary file of the plugins directory whose name
    /// the host does not load, flushed to disk, then renamed over `target`.
    fn put(&self, bytes: &[u8], signature: Option<&str>, record: Option<&Record>, target: &Path) -> anyhow::Result<()> {
        let written = |e: std::io::Error| anyhow::Error::new(e).context(format!("writing {}", target.display()));
        std::fs::create_dir_all(self.dir)
            .with_context(|| format!("creating the plugins directory {}", self.dir.display()))?;
        // Before the component: a watcher that sees it sees its signature.
        let signature_target = beside(target, "minisig");
        match signature {
            Some(text) => toolhost::replace_file(&signature_target, text.as_bytes()).map_err(written)?,
            None => remove(&signature_target)?,
        }
        let record_target = beside(target, RECORD);
        match record {
            Some(record) => {
                toolhost::replace_file(&record_target, &serde_json::to_vec_pretty(record)?).map_err(written)?
            }
            None => remove(&record_target)?,
        }
        let mut staged =
            tempfile::Builder::new().prefix(".installing-").suffix(".tmp").tempfile_in(self.dir).map_err(written)?;
        staged.write_all(bytes).map_err(written)?;
        staged.as_file().sync_all().map_err(written)?;
        // Plugins are read by whoever runs toolhost: as `cp` would leave them.
        staged.as_file().set_permissions(std::fs::Permissions::from_mode(0o644)).map_err(written)?;
        staged.persist(target).map_err(|e| written(e.error))?;
        std::fs::File::open(self.dir).and_then(|d| d.sync_all()).map_err(written)?;
        Ok(())
    }
}

/// `path` with `.EXTENSION` appended (`tool.wasm` → `tool.wasm.minisig`).
fn beside(path: &Path, extension: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(extension);
    PathBuf::from(name)
}

/// Removes `path` if it is there.
fn remove(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
