//! Wassette's policy file (`policy.yaml`, the format of Microsoft's
//! policy-mcp-rs) read as what a component *requests*, never as a grant:
//! the operator grants from it as from a component's `toolhost:requests`
//! section. What maps (docs/writing-tools.md has the table):
//!
//! - `storage.allow`: `fs://PATH` with `access: [read]` or `[read, write]`
//!   → a directory, read-only or read-write (`fs://.`, `fs://workspace`
//!   and the like, relative, are relative to the project; a trailing `/**`
//!   or `/*` is dropped: a directory is granted with what is below it);
//! - `network.allow`: `host` (a name, `*.name`, or a URL whose host is
//!   taken) → a host;
//! - `environment.allow`: `key` → a variable;
//! - `resources.memory` or `resources.limits.memory` (`512Mi`, `1Gi`, a
//!   number of MiB) → memory.
//!
//! What does not map is named, one line each: `deny` lists (toolhost gives
//! nothing that is not granted), `cidr` entries (hosts are granted by name
//! or address), `runtime`, `ipc`, CPU and I/O limits.

use super::allowance::{Allowance, DirAccess, DirRequest};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Largest policy file read.
pub const MAX_POLICY_BYTES: usize = 64 << 10;

/// What a policy file's name ends with, after its component's name.
pub const EXTENSION: &str = "policy.yaml";

/// The policy file beside the component file `component`: `NAME.policy.yaml`
/// for `NAME.wasm`.
pub fn beside(component: &std::path::Path) -> std::path::PathBuf {
    component.with_extension(EXTENSION)
}

/// Why a policy file does not read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// It is larger than [`MAX_POLICY_BYTES`].
    #[error("it is {} KiB; policy files of at most {} KiB are read", .0 >> 10, MAX_POLICY_BYTES >> 10)]
    TooLarge(usize),
    /// It is not YAML of a policy's shape (where, when YAML says).
    #[error("not a policy file: {0}")]
    Malformed(String),
    /// What it requests fails the checks every request passes.
    #[error("what it requests does not hold: {0}")]
    Invalid(super::AllowanceError),
}

/// A policy read as requests, and what of it does not map (for people).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyRequests {
    /// What the policy allows, as requests.
    pub requests: Allowance,
    /// What it says that does not map, one line each.
    pub not_mapped: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct File {
    permissions: Permissions,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Permissions {
    storage: Option<Lists<Storage>>,
    network: Option<Lists<Network>>,
    environment: Option<Lists<Environment>>,
    resources: Option<Resources>,
    runtime: Option<serde::de::IgnoredAny>,
    ipc: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(bound = "T: Deserialize<'de>")]
struct Lists<T> {
    #[serde(default)]
    allow: Vec<T>,
    #[serde(default)]
    deny: Vec<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct Storage {
    uri: String,
    #[serde(default)]
    access: Vec<String>,
}

#[derive(Deserialize)]
struct Network {
    host: Option<String>,
    cidr: Option<String>,
}

#[derive(Deserialize)]
struct Environment {
    key: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Resources {
    memory: Option<Quantity>,
    cpu: Option<Quantity>,
    io: Option<Quantity>,
    limits: Option<BTreeMap<String, Quantity>>,
}

/// A number, or a Kubernetes-style quantity (`512Mi`).
#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum Quantity {
    Number(f64),
    Text(String),
}

/// Reads a policy file's text as requests; an error says why it does not
/// read (the line and column where YAML gives them).
pub fn read(text: &str) -> Result<PolicyRequests, PolicyError> {
    if text.len() > MAX_POLICY_BYTES {
        return Err(PolicyError::TooLarge(text.len()));
    }
    let file: File = match text.trim().is_empty() {
        true => File::default(),
        false => serde_saphyr::from_str(text).map_err(|e| PolicyError::Malformed(e.to_string()))?,
    };
    let p = file.permissions;
    let mut out = PolicyRequests::default();
    let mut note = |line: String| out.not_mapped.push(line);
    let mut requests = Allowance::default();
    if let Some(storage) = p.storage {
        for entry in storage.allow {
            match directory(&entry.uri) {
                Some(path) => {
                    let write = entry.access.iter().any(|a| a.eq_ignore_ascii_case("write"));
                    let access = if write { DirAccess::ReadWrite } else { DirAccess::ReadOnly };
                    if path == "." {
                        requests.workspace = requests.workspace.max(Some(access));
                    } else {
                        requests.directories.push(DirRequest { path, access });
                    }
                }
                None => note(format!("storage `{}`: only `fs://` directories are requested", entry.uri)),
            }
        }
        if !storage.deny.is_empty() {
            note("storage deny entries: not needed, a tool reaches no directory it is not granted".into());
        }
    }
    if let Some(network) = p.network {
        for entry in network.allow {
            match (entry.host, entry.cidr) {
                (Some(host), _) => match host_of(&host) {
                    Some(name) if super::valid_host(&name) => requests.hosts.push(name),
                    _ => note(format!("network host `{host}`: not a host name or address")),
                },
                (None, Some(cidr)) => {
                    note(format!("network cidr `{cidr}`: hosts are requested by name or address, not by range"))
                }
                (None, None) => note("a network entry with neither `host` nor `cidr`".into()),
            }
        }
        if !network.deny.is_empty() {
            note("network deny entries: not needed, a tool reaches no host it is not granted".into());
        }
    }
    if let Some(environment) = p.environment {
        requests.env.extend(environment.allow.into_iter().map(|e| e.key));
        if !environment.deny.is_empty() {
            note("environment deny entries: not needed, a tool sees no variable it is not granted".into());
        }
    }
    if let Some(resources) = p.resources {
        let memory = resources.memory.or_else(|| resources.limits.as_ref().and_then(|l| l.get("memory").cloned()));
        if let Some(memory) = memory {
            match mebibytes(&memory) {
                Some(mib) => requests.memory_mib = Some(mib),
                None => note("resources memory: not a quantity (`512Mi`, `1Gi`, a number of MiB)".into()),
            }
        }
        let cpu = resources.cpu.is_some() || resources.limits.as_ref().is_some_and(|l| l.contains_key("cpu"));
        if cpu || resources.io.is_some() {
            note("resources cpu and io: toolhost limits a call's time and memory, not its CPU share or I/O".into());
        }
    }
    if p.runtime.is_some() {
        note("runtime: toolhost runs every component in its own sandbox (no Docker or Hyperlight settings)".into());
    }
    if p.ipc.is_some() {
        note("ipc: a component reaches no pipe or socket but the hosts granted to it".into());
    }
    requests.check().map_err(PolicyError::Invalid)?;
    out.requests = requests;
    Ok(out)
}

/// The directory an `fs://` URI names: absolute (`fs:///srv/data`), under
/// the home directory (`fs://~/notes`), or relative to the project
/// (`fs://workspace/**`; `.` for the project itself).
fn directory(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("fs://")?;
    let mut path = rest.trim_end_matches("/**").trim_end_matches("/*").trim_end_matches('/');
    if path == "**" || path == "*" {
        path = ".";
    }
    if path.is_empty() {
        // `fs:///` (the root) — what Wassette's filesystem example requests.
        return Some(if rest.starts_with('/') { "/".into() } else { ".".into() });
    }
    let path = path.strip_prefix("./").unwrap_or(path);
    (!path.contains('\0')).then(|| path.to_string())
}

/// The host (and port) of a `host` entry: a name, `*.name`, or a URL.
fn host_of(entry: &str) -> Option<String> {
    let entry = entry.trim();
    if !entry.contains("://") {
        return Some(entry.trim_end_matches('/').to_ascii_lowercase());
    }
    let url = url::Url::parse(entry).ok()?;
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    })
}

/// A memory quantity in MiB: a number is MiB; `Ki`, `Mi`, `Gi` and `K`,
/// `M`, `G` suffixes as Kubernetes reads them (rounded up).
fn mebibytes(quantity: &Quantity) -> Option<u64> {
    let bytes = match quantity {
        Quantity::Number(n) if n.is_finite() && *n >= 0.0 => return Some(n.ceil() as u64),
        Quantity::Number(_) => return None,
        Quantity::Text(text) => {
            let text = text.trim();
            let split = text.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(text.len());
            let (number, unit) = text.split_at(split);
            let number: f64 = number.trim().parse().ok().filter(|n: &f64| n.is_finite() && *n >= 0.0)?;
            let scale: f64 = match unit {
                "" | "Mi" => return Some(number.ceil() as u64),
                "Ki" => 1024.0,
                "Gi" => 1024.0 * 1024.0 * 1024.0,
                "K" | "k" => 1e3,
                "M" => 1e6,
                "G" => 1e9,
                _ => return None,
            };
            number * scale
        }
    };
    let mib = (bytes / (1024.0 * 1024.0)).ceil();
    (mib < u64::MAX as f64).then_some(mib as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wassettes_examples_read_as_requests() {
        let fetch = "version: \"1.0\"\ndescription: \"demo\"\npermissions:\n  network:\n    allow:\n      - host: \"https://rss.nytimes.com/\"\n";
        let fetched = read(fetch).unwrap();
        assert_eq!(fetched.requests.hosts, ["rss.nytimes.com"]);
        assert!(fetched.not_mapped.is_empty());
        let files = "permissions:\n  storage:\n    allow:\n      - uri: \"fs:///Users/someone/project\"\n        access: [\"read\"]\n      - uri: \"fs://workspace/**\"\n        access: [\"read\", \"write\"]\n      - uri: \"fs://.\"\n        access: [\"read\"]\n    deny:\n      - uri: \"fs://system/**\"\n        access: [\"read\"]\n  environment:\n    allow:\n      - key: \"API_KEY\"\n  network:\n    allow:\n      - host: \"*.internal.example.com\"\n      - cidr: \"10.0.0.0/8\"\n  resources:\n    limits:\n      memory: \"512Mi\"\n      cpu: \"500m\"\n  runtime:\n    docker: {}\n";
        let files = read(files).unwrap();
        let r = &files.requests;
        assert_eq!(
            r.directories,
            [
                DirRequest { path: "/Users/someone/project".into(), access: DirAccess::ReadOnly },
                DirRequest { path: "workspace".into(), access: DirAccess::ReadWrite },
            ]
        );
        assert_eq!(r.workspace, Some(DirAccess::ReadOnly));
        assert_eq!(
            (r.env.as_slice(), r.hosts.as_slice(), r.memory_mib),
            (&["API_KEY".to_string()][..], &["*.internal.example.com".to_string()][..], Some(512))
        );
        assert_eq!(files.not_mapped.len(), 4, "{:?}", files.not_mapped);
        assert!(files.not_mapped.iter().any(|l| l.contains("10.0.0.0/8")));
    }

    #[test]
    fn bad_files_are_errors_and_quantities_read() {
        assert!(read("permissions: [1, 2").is_err());
        assert!(read(&"#".repeat(MAX_POLICY_BYTES + 1)).is_err());
        assert_eq!(read("").unwrap(), PolicyRequests::default());
        assert_eq!(mebibytes(&Quantity::Text("1Gi".into())), Some(1024));
        assert_eq!(mebibytes(&Quantity::Text("1G".into())), Some(954));
        assert_eq!(mebibytes(&Quantity::Number(256.0)), Some(256));
        assert_eq!(mebibytes(&Quantity::Text("lots".into())), None);
        assert_eq!(directory("fs:///"), Some("/".into()));
        assert_eq!(directory("http://x"), None);
    }
}
