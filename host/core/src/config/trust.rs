//! Trust in a workspace's settings files: what trusting one would let it do
//! (`powers`: what an untrusted file is stripped of), and the store of the
//! files the user trusted as they were (`TrustStore`, by content hash).

use super::hooks::HookEvent;
use super::{FileShape, SettingsError};
use serde::Deserialize;
use std::path::Path;

/// What trusting the settings file `file` would let it do (what an
/// untrusted workspace file is stripped of), one line each: its allow
/// rules, a widening default mode, more directories, the audit log, and
/// every hook with its event and matcher. Empty for a file that only
/// restricts; an error for one that does not parse.
pub fn powers(file: &Path) -> Result<Vec<String>, SettingsError> {
    let name = file.display().to_string();
    let text = std::fs::read_to_string(file).map_err(|source| SettingsError::Read { file: name.clone(), source })?;
    let shape: FileShape = if text.trim().is_empty() {
        FileShape::default()
    } else {
        serde_json::from_str(&text)
            .map_err(|e| SettingsError::Invalid { file: name, message: crate::fsx::describe_json_error(&e) })?
    };
    let p = &shape.permissions;
    let mut lines = Vec::new();
    if !p.allow.is_empty() {
        lines.push(format!("allow: {}", p.allow.join(", ")));
    }
    if let Some(mode) = p.default_mode.as_deref().filter(|m| !matches!(*m, "default" | "plan" | "dontAsk")) {
        lines.push(format!("defaultMode: {mode}"));
    }
    if !p.additional_directories.is_empty() {
        lines.push(format!("additionalDirectories: {}", p.additional_directories.join(", ")));
    }
    if let Some(log) = &shape.audit_log {
        lines.push(format!("auditLog: {log}"));
    }
    for (tool, grant) in shape.tool_grants.iter().filter(|(_, g)| !g.is_empty()) {
        lines.push(format!("toolGrants {tool}: {}", grant.describe()));
    }
    for (name, server) in &shape.mcp_servers {
        lines.push(format!("mcpServers {name}: {}", server.describe()));
    }
    for (event, groups) in shape.hooks.iter().flat_map(|h| HookEvent::ALL.map(|e| (e, h.groups(e)))) {
        for group in groups {
            for hook in &group.hooks {
                let matcher = group.matcher.as_deref().unwrap_or("*");
                lines.push(format!("hook {event} [{matcher}]: {}", hook.command));
            }
        }
    }
    Ok(lines)
}

/// The project and local settings files the user trusts, each with the
/// SHA-256 of the contents they reviewed: a file changed since (by a
/// `git pull`, or by a command a tool ran) is untrusted again.
#[derive(Debug, Default, serde::Serialize, Deserialize)]
pub struct TrustStore {
    files: std::collections::BTreeMap<String, String>,
}

impl TrustStore {
    /// Reads the store at `path` (missing or unreadable: empty).
    pub fn load(path: &Path) -> TrustStore {
        std::fs::read_to_string(path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
    }

    fn key(file: &Path) -> String {
        let absolute = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
        absolute.canonicalize().unwrap_or(absolute).to_string_lossy().into_owned()
    }

    /// Whether `file`, holding `text`, is trusted.
    pub fn trusts(&self, file: &Path, text: &str) -> bool {
        self.files.get(&Self::key(file)).is_some_and(|h| *h == crate::registry::content_hash(text.as_bytes()))
    }

    /// Trusts `file` as it is now.
    pub fn trust(&mut self, file: &Path) -> std::io::Result<()> {
        let text = std::fs::read(file)?;
        self.files.insert(Self::key(file), crate::registry::content_hash(&text));
        Ok(())
    }

    /// Writes the store to `path`.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        crate::fsx::replace_file(path, serde_json::to_string_pretty(self).unwrap_or_default().as_bytes())
    }
}
