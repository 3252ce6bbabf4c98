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

pub mod oci;

use toolhost_verify::{cosign, minisign as verify, sigstore};

pub use verify::parse_sha256;

use anyhow::Context as _;
use serde_json::json;
use std::io::{IsTerminal, Write};
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
            Some(Err(why)) => refuse(source, why),
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
            Err(why) => return refuse(source, why),
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

    /// Compares `bytes` with the pinned SHA-256, saying what it found; their
    /// SHA-256.
    fn check_hash(&self, bytes: &[u8], pinned: Option<&str>) -> Result<String, String> {
        let hash = toolhost::content_hash(bytes);
        match pinned {
            Some(pinned) if pinned != hash => {
                return Err(format!("its SHA-256 is {hash}, not {pinned} as --sha256 requires"));
            }
            Some(_) => println!("sha256:          {hash} (as pinned)"),
            None => println!("sha256:          {hash} (not pinned: --sha256 HEX checks it)"),
        }
        Ok(hash)
    }

    /// Checks `bytes` (read from `file`) against the pinned hash and, with
    /// trusted keys, against the signature beside `file` (`FILE.minisig`, or
    /// a Sigstore bundle `FILE.sigstore.json` as `cosign sign-blob --bundle`
    /// writes it); returns the minisign signature's text (if any) or why the
    /// file is refused.
    fn vouch(&self, file: &Path, bytes: &[u8], pinned: Option<&str>) -> anyhow::Result<Result<Option<String>, String>> {
        let hash = match self.check_hash(bytes, pinned) {
            Ok(hash) => hash,
            Err(why) => return Ok(Err(why)),
        };
        let signature_file = beside(file, "minisig");
        let signature = match std::fs::read_to_string(&signature_file) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Ok(Err(format!("cannot read its signature {}: {e}", signature_file.display()))),
        };
        let bundle_file = beside(file, "sigstore.json");
        let bundle = match std::fs::File::open(&bundle_file) {
            Ok(f) => {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut std::io::Read::take(f, sigstore::MAX_BUNDLE), &mut bytes)
                    .with_context(|| format!("reading {}", bundle_file.display()))?;
                Some(bytes)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Ok(Err(format!("cannot read its bundle {}: {e}", bundle_file.display()))),
        };
        let keys = self.trusted_keys()?;
        if keys.is_empty() {
            match (&signature, &bundle) {
                (None, None) => {
                    println!("signature:       not checked: no trusted keys are configured, and it has none")
                }
                _ => println!(
                    "signature:       not checked: no trusted keys are configured ({} is not verified)",
                    if signature.is_some() { &signature_file } else { &bundle_file }.display()
                ),
            }
            return Ok(Ok(signature));
        }
        let mut why = Vec::new();
        if let Some(text) = &signature {
            if keys.minisign.is_empty() {
                why.push(format!(
                    "{} is a minisign signature, and no trusted key is a minisign key",
                    signature_file.display()
                ));
            } else {
                match verify::verify(bytes, text, &keys.minisign) {
                    Ok(verified) => {
                        println!(
                            "signature:       verified: signed with the trusted key {} ({}); trusted comment: {}",
                            verified.key.text, verified.key.origin, verified.trusted_comment
                        );
                        return Ok(Ok(signature));
                    }
                    Err(e) => why.push(format!("its signature {} {e}", signature_file.display())),
                }
            }
        }
        if let Some(bundle) = &bundle {
            if !keys.vouch_for_registries() {
                why.push(format!(
                    "{} is a Sigstore bundle, and no trusted key is a cosign key or a Sigstore signer",
                    bundle_file.display()
                ));
            } else {
                match sigstore::verify(bundle, &format!("sha256:{hash}"), &keys.cosign, &keys.sigstore) {
                    Ok(verified) => {
                        println!(
                            "signature:       verified: the Sigstore bundle {} signed by {}",
                            bundle_file.display(),
                            verified.who
                        );
                        return Ok(Ok(signature));
                    }
                    Err(e) => why.push(format!("its bundle {}: {e}", bundle_file.display())),
                }
            }
        }
        if why.is_empty() {
            return Ok(Err(format!(
                "it has no signature ({} and {} are missing), and with trusted keys configured ({}) \
                 a component is installed only signed by one of them",
                signature_file.display(),
                bundle_file.display(),
                keys.origins().join("; ")
            )));
        }
        Ok(Err(why.join("; ")))
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

    /// Shows what `tools` (one component's) are granted already, grants
    /// what they lack as the operator answers (all with `yes`; none without
    /// a terminal), in the local settings, and says what is left and how to
    /// grant it. The tools of one component request the same: the operator
    /// is asked once, and each tool is granted the answer by its name.
    fn grant(&self, tools: &[LoadedTool], yes: bool) -> anyhow::Result<()> {
        let tool = &tools[0];
        let name = &tool.spec().name;
        let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
        let existing = self.settings.tool_grants.get(name).cloned().unwrap_or_default();
        println!("already granted: {}", existing.describe());
        // What it requests and `toolGrants` do not give it yet, item by item.
        let project = &self.host.working_dirs()[0];
        let wanted: Vec<Allowance> = items(tool.requests())
            .into_iter()
            .filter(|item| !toolhost::grants::intersect(item, &existing, project).1.is_empty())
            .collect();
        let answers = if wanted.is_empty() {
            Vec::new()
        } else if yes {
            vec![true; wanted.len()]
        } else if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
            ask(name, &wanted).context("reading the answers")?
        } else {
            println!("(not at a terminal, so nothing is asked and nothing granted; --yes grants it all)");
            vec![false; wanted.len()]
        };
        let (mut granted, mut left) = (Allowance::default(), Allowance::default());
        for (item, yes) in wanted.iter().zip(&answers) {
            if *yes { granted.add(item) } else { left.add(item) }
        }
        let local = self.settings.local_file.as_deref();
        if !granted.is_empty() {
            let local = local.context("there is no local settings file to write the grants to")?;
            for name in &names {
                toolhost::grants::persist::add_tool_grant(local, name, &granted)?;
            }
            self.keep_trusted(local);
            let keys: Vec<String> = names.iter().map(|n| format!("toolGrants.{n}")).collect();
            println!("granted:         {} (in {} of {})", granted.describe(), keys.join(", "), local.display());
            if matches!(self.settings.trust, Some((_, false))) {
                println!(
                    "note:            {} is not trusted (new, or changed since `toolhost trust`), so its grants \
                     do not count yet: review it, then run `toolhost trust`",
                    local.display()
                );
            }
        }
        if !left.is_empty() {
            let file = local.map_or("a settings file".into(), |f| f.display().to_string());
            println!("not granted:     {}", left.describe());
            println!("To grant it, add this to {file} (or install again at a terminal, or with --yes):");
            let each: serde_json::Map<String, serde_json::Value> =
                names.iter().map(|n| (n.to_string(), json!(left))).collect();
            println!("{}", serde_json::to_string_pretty(&json!({"toolGrants": each}))?);
        }
        let mut will_have = existing;
        will_have.add(&granted);
        for lack in refused_imports(tool, &will_have, project) {
            println!("warning:         {name} will not load until it is granted {lack}");
        }
        Ok(())
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

    /// `toolhost uninstall NAME [--keep-grants]`.
    pub fn uninstall(&self, name: &str, keep_grants: bool) -> anyhow::Result<ExitCode> {
        let installed = self.installed()?;
        let matching: Vec<&Installed> =
            installed.iter().filter(|i| i.holds(name) || i.path.file_stem().is_some_and(|s| s == name)).collect();
        if matching.is_empty() {
            if self.host.tool(name).is_some_and(|t| *t.origin() == Origin::Builtin) {
                eprintln!(
                    "toolhost: {name} is a built-in tool, which cannot be uninstalled; to keep it from the model, \
                     deny it (--deny {name}, or \"{name}\" in permissions.deny of a settings file)"
                );
                return Ok(ExitCode::FAILURE);
            }
            let list: Vec<String> = installed
                .iter()
                .map(|i| {
                    let file = i.path.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned());
                    match &i.names {
                        Ok(tools) => format!("{} ({file})", tools.join(", ")),
                        Err(_) => format!("{file} (does not load)"),
                    }
                })
                .collect();
            eprintln!(
                "toolhost: no installed tool is called {name}; the plugins directory {} holds {}",
                self.dir.display(),
                if list.is_empty() { "none".into() } else { list.join(", ") }
            );
            return Ok(ExitCode::FAILURE);
        }
        let mut names = vec![name.to_string()];
        for i in &matching {
            remove(&i.path)?;
            remove(&beside(&i.path, "minisig"))?;
            remove(&beside(&i.path, RECORD))?;
            remove(&toolhost::grants::wassette::beside(&i.path))?;
            remove(&toolhost::manifest::beside(&i.path))?;
            let held = i.names.as_ref().map_or_else(|_| name.to_string(), |n| n.join(", "));
            println!("removed {held}: {}", i.path.display());
            for tool in i.names.iter().flatten() {
                if !names.contains(tool) {
                    names.push(tool.clone());
                }
            }
        }
        if let (false, Some(local)) = (keep_grants, &self.settings.local_file) {
            for tool in &names {
                if toolhost::grants::persist::remove_tool_grant(local, tool)? {
                    self.keep_trusted(local);
                    println!("removed toolGrants.{tool} from {}", local.display());
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }

    /// The keys a component must be signed with: `trustedPluginKeys` of the
    /// user and managed settings, and the keys file of the configuration
    /// directory. A key that does not read is an error naming where it is.
    fn trusted_keys(&self) -> anyhow::Result<Keys> {
        let mut keys = Keys::default();
        for (text, file) in &self.settings.trusted_plugin_keys {
            keys.add(text, format!("trustedPluginKeys of {file}")).map_err(anyhow::Error::msg)?;
        }
        for (signer, file) in &self.settings.trusted_plugin_signers {
            keys.sigstore.push(sigstore_signer(signer, file)?);
        }
        let file = toolhost::config_dir().join(KEYS_FILE);
        match std::fs::read_to_string(&file) {
            Ok(text) => {
                keys.extend(verify::parse_key_file(&text, &file.display().to_string()).map_err(anyhow::Error::msg)?)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("reading the trusted keys {}", file.display())),
        }
        Ok(keys)
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

    /// The local settings were changed by the operator's own answer: if
    /// they trusted the file, it stays trusted (as "allow always" keeps it).
    fn keep_trusted(&self, file: &Path) {
        if let Some((store, true)) = &self.settings.trust {
            let mut trusted = TrustStore::load(store);
            if let Err(e) = trusted.trust(file).and_then(|()| trusted.save(store)) {
                eprintln!(
                    "toolhost: warning: could not record {} as trusted in {}: {e}",
                    file.display(),
                    store.display()
                );
            }
        }
    }
}

/// Who vouches for the pulled component: a cosign signature beside it (the
/// `.sig` tag) by a trusted key, or a Sigstore bundle attached to it (OCI
/// referrers) by a trusted key or signer. Why none does, otherwise.
fn vouch(pulled: &oci::Pulled, keys: &verify::Keys) -> Result<String, String> {
    let mut why = Vec::new();
    match &pulled.signatures {
        Ok(found) if found.is_empty() => {}
        Ok(found) => match cosign::verify(found, &pulled.manifest, &keys.cosign) {
            Ok(key) => {
                return Ok(format!("a cosign signature of {} by the trusted key of {}", pulled.manifest, key.origin));
            }
            Err(e) => why.push(e),
        },
        Err(e) => why.push(format!("its cosign signatures could not be read: {e}")),
    }
    match &pulled.bundles {
        Ok(bundles) => {
            for bundle in bundles {
                match sigstore::verify(bundle, &pulled.manifest, &keys.cosign, &keys.sigstore) {
                    Ok(verified) => {
                        return Ok(format!("a Sigstore bundle of {} signed by {}", pulled.manifest, verified.who));
                    }
                    Err(e) => why.push(format!("a Sigstore bundle: {e}")),
                }
            }
        }
        Err(e) => why.push(format!("its Sigstore bundles could not be read: {e}")),
    }
    if why.is_empty() {
        return Err(format!(
            "it has no cosign signature (no {} in its repository) and no Sigstore bundle attached, and with trusted \
             keys configured a component is installed only signed by one of them",
            cosign::signature_tag(&pulled.manifest)
        ));
    }
    Err(format!("nothing attached to it vouches for it: {}", why.join("; ")))
}

/// A `trustedPluginSigners` entry of `file`, its trust root read.
fn sigstore_signer(signer: &toolhost::settings::TrustedSigner, file: &str) -> anyhow::Result<sigstore::Signer> {
    let origin = format!("trustedPluginSigners of {file}");
    let root = std::fs::read_to_string(&signer.trust_root)
        .with_context(|| format!("{origin}: reading the trust root {}", signer.trust_root.display()))?;
    let root = sigstore::TrustRoot::parse(&root)
        .map_err(|e| anyhow::anyhow!("{origin}: the trust root {}: {e}", signer.trust_root.display()))?;
    let identity = match (&signer.identity, &signer.identity_regexp) {
        (Some(exact), _) => sigstore::Identity::Exact(exact.clone()),
        (None, Some(pattern)) => sigstore::Identity::pattern(pattern).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?,
        (None, None) => anyhow::bail!("{origin}: a signer names an identity or an identityRegexp"),
    };
    Ok(sigstore::Signer { origin, root, issuer: signer.issuer.clone(), identity })
}

/// What `requests` asks for, one grant per item: the working directories,
/// each directory, host, variable and secret, the process capability,
/// memory, time.
fn items(requests: &Allowance) -> Vec<Allowance> {
    // Every field named, so that a new kind of request is not left out.
    let Allowance { workspace, directories, hosts, env, secrets, process, memory_mib, timeout_ms } = requests;
    let one = Allowance::default;
    let mut items: Vec<Allowance> = workspace.map(|a| Allowance { workspace: Some(a), ..one() }).into_iter().collect();
    items.extend(directories.iter().map(|d| Allowance { directories: vec![d.clone()], ..one() }));
    items.extend(hosts.iter().map(|h| Allowance { hosts: vec![h.clone()], ..one() }));
    items.extend(env.iter().map(|e| Allowance { env: vec![e.clone()], ..one() }));
    items.extend(secrets.iter().map(|s| Allowance { secrets: vec![s.clone()], ..one() }));
    items.extend(process.then(|| Allowance { process: true, ..one() }));
    items.extend(memory_mib.map(|m| Allowance { memory_mib: Some(m), ..one() }));
    items.extend(timeout_ms.map(|t| Allowance { timeout_ms: Some(t), ..one() }));
    items
}

/// Asks the operator which of `wanted` to grant, on standard error (the
/// terminal, also when the review on stdout goes to a file): all, none, or
/// item by item. Anything but a yes is a no.
fn ask(name: &str, wanted: &[Allowance]) -> std::io::Result<Vec<bool>> {
    eprintln!("\n{name} requests, and is not granted yet:");
    for (n, item) in wanted.iter().enumerate() {
        eprintln!("  {}. {}", n + 1, item.describe());
    }
    let answer = prompt(&format!("Grant {name} all of this? [y] all, [n] none, [c] choose one by one (default: n) "))?;
    match answer.as_str() {
        "y" | "yes" => Ok(vec![true; wanted.len()]),
        "c" | "choose" => wanted
            .iter()
            .map(|item| {
                prompt(&format!("  grant {}? [y/N] ", item.describe())).map(|a| matches!(a.as_str(), "y" | "yes"))
            })
            .collect(),
        _ => Ok(vec![false; wanted.len()]),
    }
}

/// Prints `question` and reads one answer line, trimmed and lowercase (end
/// of input: an empty answer).
fn prompt(question: &str) -> std::io::Result<String> {
    let mut err = std::io::stderr();
    write!(err, "{question}")?;
    err.flush()?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(line.trim().to_ascii_lowercase())
}

/// The grants `tool` would lack to load at all, given `granted`: a
/// capability it imports needs what its requests ask for it (the loader
/// refuses it otherwise).
fn refused_imports(tool: &LoadedTool, granted: &Allowance, project: &Path) -> Vec<&'static str> {
    let (grants, _) = toolhost::grants::intersect(tool.requests(), granted, project);
    tool.shape()
        .capabilities
        .iter()
        .filter_map(|cap| match cap {
            Capability::Files => {
                (grants.files != FileAccess::ReadWrite).then_some("the working directories (read-write)")
            }
            Capability::Process => (!grants.process).then_some("the process capability"),
            Capability::Search => (!grants.reads_files()).then_some("files to read (the workspace or a directory)"),
            // Never granted: the loader refuses it from anything but the built-in.
            Capability::Tools => Some("calling other tools (the Script built-in's alone)"),
            Capability::Progress
            | Capability::Session
            | Capability::Output
            | Capability::Shell
            | Capability::Policy => None,
        })
        .collect()
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
mod tests {
    use super::*;
    use toolhost::grants::{DirAccess, DirRequest};

    #[test]
    fn every_request_is_an_item_of_its_own() {
        let requests = Allowance {
            workspace: Some(DirAccess::ReadOnly),
            directories: vec![DirRequest { path: "data".into(), access: DirAccess::ReadWrite }],
            hosts: vec!["example.com:443".into(), "*.docs.rs".into()],
            env: vec!["TOKEN".into()],
            secrets: vec!["API_KEY".into()],
            process: true,
            memory_mib: Some(64),
            timeout_ms: Some(5000),
        };
        let described: Vec<String> = items(&requests).iter().map(|a| a.describe()).collect();
        assert_eq!(
            described,
            [
                "the working directories (read-only)",
                "directory data (read-write)",
                "host example.com:443",
                "host *.docs.rs",
                "variable TOKEN",
                "secret API_KEY",
                "the process capability",
                "memory 64 MiB",
                "time 5000 ms",
            ]
        );
        let mut again = Allowance::default();
        for item in items(&requests) {
            again.add(&item);
        }
        assert_eq!(again, requests, "the items add up to the requests");
        assert!(items(&Allowance::default()).is_empty());
    }

    #[test]
    fn a_signature_sits_beside_its_file() {
        assert_eq!(beside(Path::new("/p/tool.wasm"), "minisig"), Path::new("/p/tool.wasm.minisig"));
    }
}
