//! Settings files: permission rules, the default mode, more working
//! directories, hooks and the audit log, in the JSON shape Claude Code's
//! users know:
//!
//! ```json
//! {
//!   "permissions": {
//!     "allow": ["Bash(npm run test:*)", "Edit(./src/**)"],
//!     "ask": ["Bash(git push:*)"],
//!     "deny": ["Read(./.env)", "WebFetch"],
//!     "defaultMode": "acceptEdits",
//!     "additionalDirectories": ["../shared"]
//!   },
//!   "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}]},
//!   "auditLog": "~/.local/state/toolhost/audit.jsonl"
//! }
//! ```
//!
//! Layers, strongest first: managed (`/etc/toolhost/managed-settings.json`,
//! or `$TOOLHOST_MANAGED_SETTINGS`), command line (`--settings`, `--allow`,
//! `--ask`, `--deny`, `--mode`), local (`.toolhost/settings.local.json` in the
//! workspace), project (`.toolhost/settings.json`), user
//! (`~/.config/toolhost/settings.json`). Rules of every layer apply together
//! (deny > ask > allow whatever their layer); for single values (the mode,
//! the audit log) the strongest layer that sets one wins. Directories and
//! hooks add up.

pub(crate) mod hooks;
mod mode;
pub(crate) mod rule;
pub(crate) mod servers;
mod trust;

use crate::fsx::expand;
use crate::grants::Allowance;
use hooks::HooksConfig;
pub use mode::PermissionMode;
use rule::{Behavior, Rule, RuleEntry};
use serde::Deserialize;
use servers::ConfiguredServer;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A settings layer, strongest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    Managed,
    CommandLine,
    Local,
    Project,
    User,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layer::Managed => "managed",
            Layer::CommandLine => "command line",
            Layer::Local => "local",
            Layer::Project => "project",
            Layer::User => "user",
        })
    }
}

/// A settings file that cannot be read, parsed or written.
pub use crate::fsx::SettingsFileError as SettingsError;
pub use trust::{TrustStore, powers};

/// Where settings come from. [`Sources::standard`] fills in the usual files.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    /// The managed settings file (the administrator's; strongest).
    pub managed: Option<PathBuf>,
    /// The user's settings file.
    pub user: Option<PathBuf>,
    /// `.toolhost/settings.json` of the workspace.
    pub project: Option<PathBuf>,
    /// `.toolhost/settings.local.json` of the workspace (where "allow
    /// always" writes).
    pub local: Option<PathBuf>,
    /// `--settings`: files, or JSON text starting with `{`.
    pub command_line_files: Vec<String>,
    /// `--allow`, `--ask`, `--deny`.
    pub command_line_rules: Vec<(Behavior, String)>,
    /// `--mode`.
    pub command_line_mode: Option<PermissionMode>,
    /// Where `toolhost trust` records the project and local files the user
    /// reviewed; `None`: trust them as they are.
    pub trust_store: Option<PathBuf>,
    /// `.mcp.json` of the workspace: MCP servers, as Claude Code's project
    /// scope has them (read like the project file, so only once trusted).
    pub mcp_json: Option<PathBuf>,
}

impl Sources {
    /// The standard files for `workspace`: managed, user, project, local.
    pub fn standard(workspace: &Path) -> Sources {
        let managed = std::env::var_os("TOOLHOST_MANAGED_SETTINGS")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/etc/toolhost/managed-settings.json"));
        Sources {
            managed: Some(managed).filter(|p| !p.as_os_str().is_empty()),
            user: Some(crate::fsx::config_dir().join("settings.json")),
            project: Some(workspace.join(".toolhost/settings.json")),
            local: Some(workspace.join(".toolhost/settings.local.json")),
            trust_store: Some(crate::fsx::config_dir().join("trusted-settings.json")),
            mcp_json: Some(workspace.join(".mcp.json")),
            ..Sources::default()
        }
    }
}

/// Every layer, merged.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Every rule, strongest layer first.
    pub rules: Vec<RuleEntry>,
    /// The mode of the strongest layer that sets one.
    pub mode: Option<PermissionMode>,
    /// `permissions.disableBypassPermissionsMode: "disable"` in managed settings.
    pub bypass_disabled: bool,
    /// `additionalDirectories`, made absolute: working directories beside the workspace.
    pub additional_dirs: Vec<PathBuf>,
    /// Each file's hooks, with the file's name.
    pub hooks: Vec<(HooksConfig, String)>,
    /// `auditLog`: where decision lines go (the strongest layer's).
    pub audit_log: Option<PathBuf>,
    /// `maxToolConcurrency`: calls the scheduler runs at once (strongest
    /// layer that sets it).
    pub max_tool_concurrency: Option<usize>,
    /// `deferToolsAfter`: third-party tools beyond this many are offered by
    /// name only, for ToolSearch to load (strongest layer that sets it).
    pub defer_tools_after: Option<usize>,
    /// `codeMode`: offer the Script tool (strongest layer that sets it).
    pub code_mode: Option<bool>,
    /// Where "allow always" writes rules.
    pub local_file: Option<PathBuf>,
    /// The files that were read, with their layer.
    pub files: Vec<(Layer, String)>,
    /// Project and local files not trusted as they are, and what of them was
    /// ignored.
    pub untrusted: Vec<(String, Vec<&'static str>)>,
    /// The trust store, and whether the local file was trusted (so "allow
    /// always" may keep it trusted after adding its rule).
    pub trust: Option<(PathBuf, bool)>,
    /// `toolGrants`: what the operator grants each third-party tool, every
    /// layer's grants together, directories made absolute.
    pub tool_grants: std::collections::BTreeMap<String, Allowance>,
    /// `trustedPluginKeys` of the user and managed files, each with the file
    /// it is written in: the minisign public keys (base64) whose signature
    /// `toolhost install` requires. Other layers' keys are ignored with a
    /// warning: a workspace must not choose whose signatures are trusted.
    pub trusted_plugin_keys: Vec<(String, String)>,
    /// `trustedPluginSigners` of the user and managed files, each with the
    /// file it is written in: whose Sigstore keyless signatures vouch for a
    /// registry component (other layers' are ignored with a warning).
    pub trusted_plugin_signers: Vec<(TrustedSigner, String)>,
    /// `stateStore`: where a server keeps sessions' state (a `redis://` URL),
    /// from the strongest of the managed and user files that sets it (a
    /// workspace must not choose where state goes); `--state` overrides it.
    pub state_store: Option<String>,
    /// `quotas` of the managed, command-line and user settings, each with
    /// the file it is written in (a workspace's are ignored with a
    /// warning: it must not choose what its users may spend).
    pub quotas: Vec<(crate::quotas::Quota, Arc<str>)>,
    /// `mcpServers` by name: the strongest layer's entry for each name
    /// (managed, command line, local, project and `.mcp.json`, user).
    pub mcp_servers: std::collections::BTreeMap<String, servers::ConfiguredServer>,
}

/// One entry of `trustedPluginSigners`: whose Sigstore keyless signatures
/// count (as cosign's `--certificate-identity` or
/// `--certificate-identity-regexp` and `--certificate-oidc-issuer` name
/// them), under which trust root.
#[derive(Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrustedSigner {
    /// The Sigstore trust root (`trusted_root.json`), made absolute.
    pub trust_root: PathBuf,
    /// The OIDC issuer the signing certificate must name.
    pub issuer: String,
    /// The identity (an email or a URI) it must name exactly,
    #[serde(default)]
    pub identity: Option<String>,
    /// or a regular expression the identity must match whole.
    #[serde(default)]
    pub identity_regexp: Option<String>,
}

impl TrustedSigner {
    fn check(&self) -> Result<(), String> {
        if self.trust_root.as_os_str().is_empty() || self.issuer.is_empty() {
            return Err("a signer needs a trustRoot file and an issuer".into());
        }
        match (&self.identity, &self.identity_regexp) {
            (Some(_), None) | (None, Some(_)) => Ok(()),
            _ => Err("a signer names either an identity or an identityRegexp".into()),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct FileShape {
    #[serde(default)]
    pub(super) permissions: PermissionsShape,
    #[serde(default)]
    pub(super) hooks: Option<HooksConfig>,
    #[serde(default)]
    pub(super) audit_log: Option<String>,
    #[serde(default)]
    pub(super) max_tool_concurrency: Option<usize>,
    #[serde(default)]
    pub(super) defer_tools_after: Option<usize>,
    #[serde(default)]
    pub(super) code_mode: Option<bool>,
    #[serde(default)]
    pub(super) tool_grants: std::collections::BTreeMap<String, Allowance>,
    #[serde(default)]
    pub(super) trusted_plugin_keys: Vec<String>,
    #[serde(default)]
    pub(super) trusted_plugin_signers: Vec<TrustedSigner>,
    #[serde(default)]
    pub(super) state_store: Option<String>,
    #[serde(default)]
    pub(super) quotas: Vec<crate::quotas::Quota>,
    #[serde(default)]
    pub(super) mcp_servers: std::collections::BTreeMap<String, servers::ServerShape>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct PermissionsShape {
    #[serde(default)]
    pub(super) allow: Vec<String>,
    #[serde(default)]
    pub(super) ask: Vec<String>,
    #[serde(default)]
    pub(super) deny: Vec<String>,
    #[serde(default)]
    pub(super) default_mode: Option<String>,
    #[serde(default)]
    pub(super) additional_directories: Vec<String>,
    #[serde(default)]
    pub(super) disable_bypass_permissions_mode: Option<String>,
}

impl FileShape {
    /// Removes what only a trusted file may set, and names it.
    fn strip_powers(&mut self) -> Vec<&'static str> {
        let mut ignored = Vec::new();
        let p = &mut self.permissions;
        if !p.allow.is_empty() {
            p.allow.clear();
            ignored.push("allow rules");
        }
        if p.default_mode.as_deref().is_some_and(|m| !matches!(m, "default" | "plan" | "dontAsk")) {
            p.default_mode = None;
            ignored.push("defaultMode");
        }
        if !p.additional_directories.is_empty() {
            p.additional_directories.clear();
            ignored.push("additionalDirectories");
        }
        if self.hooks.take().is_some_and(|h| h != HooksConfig::default()) {
            ignored.push("hooks");
        }
        if self.audit_log.take().is_some() {
            ignored.push("auditLog");
        }
        if !std::mem::take(&mut self.tool_grants).values().all(Allowance::is_empty) {
            ignored.push("toolGrants");
        }
        if !std::mem::take(&mut self.mcp_servers).is_empty() {
            ignored.push("mcpServers");
        }
        ignored
    }
}

/// Reads every layer. A missing standard file is fine; a missing
/// `--settings` file, an unreadable file or a malformed one is an error that
/// names the file and the line.
pub fn load(sources: &Sources, cwd: &Path) -> Result<Settings, SettingsError> {
    let mut settings = Settings { local_file: sources.local.clone(), ..Settings::default() };
    let home = std::env::home_dir();
    let mut modes: Vec<(Layer, PermissionMode)> = Vec::new();
    let mut audit: Vec<(Layer, PathBuf)> = Vec::new();
    let mut concurrency: Vec<(Layer, usize)> = Vec::new();
    let mut defer: Vec<(Layer, usize)> = Vec::new();
    let mut code_mode: Vec<(Layer, bool)> = Vec::new();
    // Read once, when a workspace file needs it.
    let mut trust_store: Option<TrustStore> = None;

    let mut files: Vec<(Layer, String, bool)> = Vec::new();
    if let Some(m) = &sources.managed {
        files.push((Layer::Managed, m.to_string_lossy().into_owned(), false));
    }
    for f in &sources.command_line_files {
        files.push((Layer::CommandLine, f.clone(), true));
    }
    for (layer, file) in [
        (Layer::Local, &sources.local),
        (Layer::Project, &sources.project),
        (Layer::Project, &sources.mcp_json),
        (Layer::User, &sources.user),
    ] {
        if let Some(f) = file {
            files.push((layer, f.to_string_lossy().into_owned(), false));
        }
    }

    for (layer, name, required) in files {
        let (text, base, label) = if name.trim_start().starts_with('{') && layer == Layer::CommandLine {
            (name.clone(), None, "--settings JSON".to_string())
        } else {
            match std::fs::read_to_string(&name) {
                Ok(t) => {
                    let file = std::path::absolute(&name).unwrap_or_else(|_| PathBuf::from(&name));
                    (t, file.parent().map(Path::to_path_buf), name.clone())
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => continue,
                Err(source) => return Err(SettingsError::Read { file: name, source }),
            }
        };
        let invalid = |message: String| SettingsError::Invalid { file: label.clone(), message };
        let shape: FileShape = if text.trim().is_empty() {
            FileShape::default()
        } else {
            serde_json::from_str(&text).map_err(|e| invalid(crate::fsx::describe_json_error(&e)))?
        };
        settings.files.push((layer, label.clone()));
        let origin: Arc<str> = Arc::from(format!("{layer} settings {label}"));
        let mut shape = shape;
        // Everything is checked, trusted or not: a malformed file is an error.
        let lists = &shape.permissions;
        for (behavior, list) in
            [(Behavior::Allow, &lists.allow), (Behavior::Ask, &lists.ask), (Behavior::Deny, &lists.deny)]
        {
            for text_rule in list {
                Rule::parse_in(text_rule, behavior)
                    .map_err(|e| invalid(format!("{}: {e}", at_line(&text, text_rule))))?;
            }
        }
        if let Some(mode) = &shape.permissions.default_mode {
            mode.parse::<PermissionMode>()
                .map_err(|e| invalid(format!("{}: permissions.defaultMode: {e}", at_line(&text, mode))))?;
        }
        if let Some(hooks) = &shape.hooks {
            hooks::Hooks::compile(&[(hooks.clone(), String::new())])
                .map_err(|e| invalid(e.to_string().trim_start_matches(": ").to_string()))?;
        }
        // Files that come with the workspace may only restrict until the user
        // has reviewed them as they are (`toolhost trust`): a cloned
        // repository must not run hooks, allow calls or widen the sandbox.
        if matches!(layer, Layer::Project | Layer::Local)
            && let Some(store) = &sources.trust_store
        {
            let trusted = trust_store.get_or_insert_with(|| TrustStore::load(store)).trusts(Path::new(&name), &text);
            if layer == Layer::Local {
                settings.trust = Some((store.clone(), trusted));
            }
            if !trusted {
                let ignored = shape.strip_powers();
                if !ignored.is_empty() {
                    settings.untrusted.push((label.clone(), ignored));
                }
            }
        }
        let p = shape.permissions;
        for (behavior, list) in [(Behavior::Deny, &p.deny), (Behavior::Ask, &p.ask), (Behavior::Allow, &p.allow)] {
            for text_rule in list {
                let rule = Rule::parse_in(text_rule, behavior)
                    .map_err(|e| invalid(format!("{}: {e}", at_line(&text, text_rule))))?;
                settings.rules.push(RuleEntry { rule, behavior, origin: Arc::clone(&origin), base: base.clone() });
            }
        }
        if let Some(mode) = &p.default_mode {
            let parsed = mode
                .parse::<PermissionMode>()
                .map_err(|e| invalid(format!("{}: permissions.defaultMode: {e}", at_line(&text, mode))))?;
            modes.push((layer, parsed));
        }
        if let Some(v) = &p.disable_bypass_permissions_mode {
            match (v.as_str(), layer) {
                ("disable", Layer::Managed) => settings.bypass_disabled = true,
                ("disable", _) => {
                    tracing::warn!(file = %label, "disableBypassPermissionsMode only counts in managed settings")
                }
                (other, _) => {
                    return Err(invalid(format!(
                        "{}: permissions.disableBypassPermissionsMode must be \"disable\", not {other:?}",
                        at_line(&text, other)
                    )));
                }
            }
        }
        for dir in &p.additional_directories {
            settings.additional_dirs.push(expand(dir, cwd, home.as_deref()));
        }
        if let Some(hooks) = shape.hooks {
            settings.hooks.push((hooks, label.clone()));
        }
        if let Some(log) = &shape.audit_log {
            audit.push((layer, expand(log, cwd, home.as_deref())));
        }
        for (tool, grant) in std::mem::take(&mut shape.tool_grants) {
            // A grant gets the checks a component's requests get.
            grant.check().map_err(|e| invalid(format!("{}: toolGrants.{tool}: {e}", at_line(&text, &tool))))?;
            let mut grant = grant;
            for dir in &mut grant.directories {
                dir.path = expand(&dir.path, cwd, home.as_deref()).to_string_lossy().into_owned();
            }
            settings.tool_grants.entry(tool).or_default().add(&grant);
        }
        let keys = std::mem::take(&mut shape.trusted_plugin_keys);
        match layer {
            Layer::Managed | Layer::User => {
                settings.trusted_plugin_keys.extend(keys.into_iter().map(|k| (k, label.clone())))
            }
            Layer::CommandLine | Layer::Local | Layer::Project if !keys.is_empty() => {
                tracing::warn!(file = %label, "trustedPluginKeys only counts in user or managed settings")
            }
            Layer::CommandLine | Layer::Local | Layer::Project => {}
        }
        let signers = std::mem::take(&mut shape.trusted_plugin_signers);
        match layer {
            Layer::Managed | Layer::User => {
                for mut signer in signers {
                    signer.check().map_err(|e| invalid(format!("{label}: trustedPluginSigners: {e}")))?;
                    signer.trust_root = expand(&signer.trust_root.to_string_lossy(), cwd, home.as_deref());
                    settings.trusted_plugin_signers.push((signer, label.clone()));
                }
            }
            Layer::CommandLine | Layer::Local | Layer::Project if !signers.is_empty() => {
                tracing::warn!(file = %label, "trustedPluginSigners only counts in user or managed settings")
            }
            Layer::CommandLine | Layer::Local | Layer::Project => {}
        }
        match (layer, shape.state_store.take()) {
            (_, None) => {}
            (Layer::Managed | Layer::User, Some(url)) => {
                settings.state_store.get_or_insert(url);
            }
            (Layer::CommandLine | Layer::Local | Layer::Project, Some(_)) => {
                tracing::warn!(file = %label, "stateStore only counts in user or managed settings")
            }
        }
        let quotas = std::mem::take(&mut shape.quotas);
        match layer {
            Layer::Managed | Layer::CommandLine | Layer::User => {
                for (i, quota) in quotas.into_iter().enumerate() {
                    quota.check().map_err(|e| invalid(format!("quotas[{i}]: {e}")))?;
                    settings.quotas.push((quota, Arc::clone(&origin)));
                }
            }
            Layer::Local | Layer::Project if !quotas.is_empty() => {
                tracing::warn!(file = %label, "quotas only count in user, managed or command-line settings")
            }
            Layer::Local | Layer::Project => {}
        }
        if let Some(n) = shape.max_tool_concurrency {
            if n == 0 {
                return Err(invalid(format!(
                    "{}: maxToolConcurrency must be at least 1",
                    at_line(&text, "maxToolConcurrency")
                )));
            }
            concurrency.push((layer, n));
        }
        if let Some(n) = shape.defer_tools_after {
            defer.push((layer, n));
        }
        if let Some(on) = shape.code_mode {
            code_mode.push((layer, on));
        }
        // Files come strongest first: the first entry of a name wins.
        let var = |name: &str| std::env::var(name).ok();
        for (name, entry) in std::mem::take(&mut shape.mcp_servers) {
            let server = entry.read(&var);
            settings.mcp_servers.entry(name).or_insert(ConfiguredServer { server, file: label.clone() });
        }
    }
    let origin: Arc<str> = Arc::from("command line");
    for (behavior, text) in &sources.command_line_rules {
        let rule = Rule::parse_in(text, *behavior)
            .map_err(|e| SettingsError::Invalid { file: format!("--{}", behavior.as_str()), message: e.to_string() })?;
        settings.rules.push(RuleEntry { rule, behavior: *behavior, origin: Arc::clone(&origin), base: None });
    }
    if let (None, Some(store), Some(local)) = (&settings.trust, &sources.trust_store, &sources.local) {
        // No local file yet: the first one is toolhost's own ("allow always").
        settings.trust = Some((store.clone(), !local.exists()));
    }
    if let Some(mode) = sources.command_line_mode {
        modes.push((Layer::CommandLine, mode));
    }
    // Stable sorts: the strongest layer first, file order within a layer.
    modes.sort_by_key(|(l, _)| *l);
    audit.sort_by_key(|(l, _)| *l);
    settings.mode = modes.first().map(|(_, m)| *m);
    settings.audit_log = audit.into_iter().next().map(|(_, p)| p);
    concurrency.sort_by_key(|(l, _)| *l);
    settings.max_tool_concurrency = concurrency.first().map(|(_, n)| *n);
    defer.sort_by_key(|(l, _)| *l);
    settings.defer_tools_after = defer.first().map(|(_, n)| *n);
    code_mode.sort_by_key(|(l, _)| *l);
    settings.code_mode = code_mode.first().map(|(_, on)| *on);
    Ok(settings)
}

/// "line N" of the first place `value` is written in `text`.
fn at_line(text: &str, value: &str) -> String {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    match text.find(&quoted).or_else(|| text.find(value)) {
        Some(at) => format!("line {}", text[..at].matches('\n').count() + 1),
        None => "a rule".to_string(),
    }
}

/// Adds `rule` to the `allow` list of the settings file `file` (creating it
/// and its directory), keeping everything else in it.
pub(crate) fn add_allow_rule(file: &Path, rule: &str) -> Result<(), SettingsError> {
    crate::fsx::edit_json(file, |root, invalid| {
        let permissions = root.entry("permissions").or_insert_with(|| serde_json::json!({}));
        let permissions = permissions.as_object_mut().ok_or_else(|| invalid("`permissions` is not an object"))?;
        let allow = permissions.entry("allow").or_insert_with(|| serde_json::json!([]));
        let allow = allow.as_array_mut().ok_or_else(|| invalid("`permissions.allow` is not a list"))?;
        if !allow.iter().any(|r| r.as_str() == Some(rule)) {
            allow.push(serde_json::Value::String(rule.to_string()));
        }
        Ok(true)
    })
    .map(drop)
}

#[cfg(test)]
mod tests;
