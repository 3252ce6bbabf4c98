//! What a component requests from the operator, in its `toolhost:requests`
//! custom section (JSON, stamped by the SDK's `requests!`): directories,
//! network hosts, environment variable names, memory and time. Read from the
//! file without running anything, so it can be shown before a tool is
//! trusted with anything.

use serde::{Deserialize, Serialize};

/// The custom section's name.
pub const SECTION: &str = "toolhost:requests";
/// Largest requests section accepted.
const MAX_SECTION: usize = 64 << 10;
/// Most entries of each list.
const MAX_ENTRIES: usize = 64;

/// Read-only or read-write access to a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DirAccess {
    ReadOnly,
    ReadWrite,
}

impl DirAccess {
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
    pub access: DirAccess,
}

/// Everything a tool asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requests {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directories: Vec<DirRequest>,
    /// `name` or `name:port`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// Environment variable names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Linear memory, beyond the host's default limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Wall-clock time per call, beyond the host's default limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl Requests {
    pub fn is_empty(&self) -> bool {
        *self == Requests::default()
    }
}

/// A requests section the host cannot accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestsError {
    #[error("`{SECTION}` is not valid: {0}")]
    Invalid(String),
    #[error("it has more than one `{SECTION}` section")]
    Repeated,
    #[error("the component cannot be read: {0}")]
    Unreadable(String),
}

/// The requests in `component` (a component's bytes): the one
/// `toolhost:requests` section, at the top level or in a core module inside;
/// none means the tool requests nothing.
pub fn read(component: &[u8]) -> Result<Requests, RequestsError> {
    let mut found: Option<&[u8]> = None;
    for payload in wasmparser::Parser::new(0).parse_all(component) {
        let payload = payload.map_err(|e| RequestsError::Unreadable(e.to_string()))?;
        if let wasmparser::Payload::CustomSection(section) = payload
            && section.name() == SECTION
        {
            if found.is_some() {
                return Err(RequestsError::Repeated);
            }
            found = Some(section.data());
        }
    }
    match found {
        None => Ok(Requests::default()),
        Some(data) => parse(data),
    }
}

fn parse(data: &[u8]) -> Result<Requests, RequestsError> {
    if data.len() > MAX_SECTION {
        return Err(RequestsError::Invalid(format!("{} KiB, at most {} KiB", data.len() >> 10, MAX_SECTION >> 10)));
    }
    let requests: Requests = serde_json::from_slice(data).map_err(|e| RequestsError::Invalid(e.to_string()))?;
    check(&requests)?;
    Ok(requests)
}

/// Checks parsed requests (or a grant, which has the same shape): list
/// lengths, directory paths, host names, variable names.
pub fn check(requests: &Requests) -> Result<(), RequestsError> {
    let invalid = |m: String| Err(RequestsError::Invalid(m));
    if requests.directories.len().max(requests.hosts.len()).max(requests.env.len()) > MAX_ENTRIES {
        return invalid(format!("more than {MAX_ENTRIES} entries in a list"));
    }
    for dir in &requests.directories {
        if dir.path.is_empty() || dir.path.contains('\0') {
            return invalid(format!("`{}` is not a directory path", dir.path));
        }
    }
    for host in &requests.hosts {
        if !valid_host(host) {
            return invalid(format!("`{host}` is not a host name, or name:port"));
        }
    }
    for name in &requests.env {
        if name.is_empty() || name.contains(['=', '\0']) {
            return invalid(format!("`{name}` is not an environment variable name"));
        }
    }
    Ok(())
}

/// `name` or `name:port`, where a name is a DNS name, an IPv4 address or a
/// bracketed IPv6 address.
pub fn valid_host(host: &str) -> bool {
    let (name, port) = match host.rsplit_once(':') {
        Some((n, p)) if !n.ends_with(':') && !p.contains(']') => (n, Some(p)),
        _ => (host, None),
    };
    if port.is_some_and(|p| p.parse::<u16>().map_or(true, |p| p == 0)) {
        return false;
    }
    if let Some(inner) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        return inner.parse::<std::net::Ipv6Addr>().is_ok();
    }
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty() && label.len() <= 63 && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_and_are_checked() {
        let r = parse(br#"{"directories":[{"path":"data","access":"read-only"}],"hosts":["example.com:443"],"env":["A"],"memory_mib":64,"timeout_ms":5}"#).unwrap();
        assert_eq!(r.directories[0].access, DirAccess::ReadOnly);
        assert_eq!(r.memory_mib, Some(64));
        assert!(parse(br#"{"directories":[{"path":"d","access":"all"}]}"#).is_err());
        assert!(parse(br#"{"surprise":1}"#).is_err());
        assert!(parse(br#"{"env":["A=B"]}"#).is_err());
        assert!(parse(br#"{"hosts":["http://example.com"]}"#).is_err());
        assert!(parse(b"not json").is_err());
    }

    #[test]
    fn hosts_are_names_or_addresses_with_ports() {
        for ok in ["example.com", "example.com:443", "127.0.0.1:8080", "[::1]:80", "localhost"] {
            assert!(valid_host(ok), "{ok}");
        }
        for bad in ["", "example.com:0", "example.com:99999", "a b.com", "http://x", "x..y", "[nope]:1"] {
            assert!(!valid_host(bad), "{bad}");
        }
    }

    #[test]
    fn a_component_without_the_section_requests_nothing() {
        let wasm = crate::registry::builtin_wasm_for_tests();
        assert!(!wasm.is_empty());
        assert_eq!(read(wasm), Ok(Requests::default()));
    }
}
