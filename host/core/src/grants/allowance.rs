//! An allowance: what a tool may reach beyond its own memory and time
//! limits. A component asks for one (its `toolhost:requests` section, read
//! by `contract::requests`); the operator grants one (`toolGrants` in the
//! settings, written by [`super::persist`]); the tool gets what both give
//! ([`super::intersect`]).

use serde::{Deserialize, Serialize};

/// Most entries of each list.
const MAX_ENTRIES: usize = 64;

/// Read-only or read-write access to a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DirAccess {
    /// Reading only.
    ReadOnly,
    /// Reading and writing.
    ReadWrite,
}

impl DirAccess {
    /// As settings and requests write it (`read-only`, `read-write`).
    pub fn name(self) -> &'static str {
        match self {
            DirAccess::ReadOnly => "read-only",
            DirAccess::ReadWrite => "read-write",
        }
    }
}

/// A directory a tool asks for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirRequest {
    /// Relative to the project unless absolute or `~/…`.
    pub path: String,
    /// How it may be used.
    pub access: DirAccess,
}

/// Everything a tool asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Allowance {
    /// The working directories (whatever they are for the session), with
    /// the read-only directories readable beside them; read-write also
    /// brings the `files` capability (atomic replace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<DirAccess>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// Directories besides the working ones, each preopened at its own path.
    pub directories: Vec<DirRequest>,
    /// `name` or `name:port`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// Environment variable names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Names of the tool's secrets (`toolhost secret set TOOL NAME`), each
    /// an environment variable of that name inside its instance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// The process capability: starting commands, each checked by the host
    /// against the permission rules and confined like Bash's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub process: bool,
    /// Linear memory, beyond the host's default limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Wall-clock time per call, beyond the host's default limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// Why an allowance (requested or granted) does not hold.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AllowanceError {
    /// A list holds more than 64 entries.
    #[error("more than {MAX_ENTRIES} entries in a list")]
    TooMany,
    /// Not a directory path (empty, or holding a NUL).
    #[error("`{0}` is not a directory path")]
    Directory(String),
    /// Not a host name or pattern (with an optional port).
    #[error("`{0}` is not a host name, or name:port")]
    Host(String),
    /// Not a name a secret can have.
    #[error("`{0}` is not a secret name (letters, digits and `_`)")]
    Secret(String),
    /// Not an environment variable's name.
    #[error("`{0}` is not an environment variable name")]
    Variable(String),
}

impl Allowance {
    /// Whether it asks for, or grants, nothing at all.
    pub fn is_empty(&self) -> bool {
        *self == Allowance::default()
    }

    /// Adds what `more` grants: every list entry, the larger memory and time.
    pub fn add(&mut self, more: &Allowance) {
        self.workspace = self.workspace.max(more.workspace);
        self.process |= more.process;
        self.directories.extend(more.directories.iter().cloned());
        self.hosts.extend(more.hosts.iter().cloned());
        self.env.extend(more.env.iter().cloned());
        self.secrets.extend(more.secrets.iter().cloned());
        self.memory_mib = self.memory_mib.max(more.memory_mib);
        self.timeout_ms = self.timeout_ms.max(more.timeout_ms);
    }

    /// Checks a parsed allowance (requested or granted): list lengths,
    /// directory paths, host names, variable names.
    pub fn check(&self) -> Result<(), AllowanceError> {
        if self.directories.len().max(self.hosts.len()).max(self.env.len()).max(self.secrets.len()) > MAX_ENTRIES {
            return Err(AllowanceError::TooMany);
        }
        if let Some(dir) = self.directories.iter().find(|d| d.path.is_empty() || d.path.contains('\0')) {
            return Err(AllowanceError::Directory(dir.path.clone()));
        }
        if let Some(host) = self.hosts.iter().find(|h| !super::hosts::valid_host(h)) {
            return Err(AllowanceError::Host(host.clone()));
        }
        if let Some(name) = self.secrets.iter().find(|n| !crate::secrets::valid_name(n)) {
            return Err(AllowanceError::Secret(name.clone()));
        }
        if let Some(name) = self.env.iter().find(|n| n.is_empty() || n.contains(['=', '\0'])) {
            return Err(AllowanceError::Variable(name.clone()));
        }
        Ok(())
    }

    /// In one line, as `toolhost trust`, `install` and `tools` show it.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> =
            self.workspace.map(|a| format!("the working directories ({})", a.name())).into_iter().collect();
        parts.extend(self.process.then(|| "the process capability".to_string()));
        parts.extend(self.directories.iter().map(|d| format!("directory {} ({})", d.path, d.access.name())));
        parts.extend(self.hosts.iter().map(|h| format!("host {h}")));
        parts.extend(self.env.iter().map(|e| format!("variable {e}")));
        parts.extend(self.secrets.iter().map(|s| format!("secret {s}")));
        parts.extend(self.memory_mib.map(|m| format!("memory {m} MiB")));
        parts.extend(self.timeout_ms.map(|t| format!("time {t} ms")));
        if parts.is_empty() { "nothing".into() } else { parts.join(", ") }
    }
}
