//! What a component requests from the operator, in its `toolhost:requests`
//! custom section (JSON, stamped by the SDK's `requests!`): the working
//! directories, other directories, network hosts, environment variable
//! names, the process capability, memory and time. Read from the
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
    /// The working directories (whatever they are for the session), with
    /// the read-only directories readable beside them; read-write also
    /// brings the `files` capability (atomic replace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<DirAccess>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directories: Vec<DirRequest>,
    /// `name` or `name:port`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// Environment variable names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
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

impl Requests {
    pub fn is_empty(&self) -> bool {
        *self == Requests::default()
    }

    /// Adds what `more` grants: every list entry, the larger memory and time.
    pub fn add(&mut self, more: &Requests) {
        self.workspace = self.workspace.max(more.workspace);
        self.process |= more.process;
        self.directories.extend(more.directories.iter().cloned());
        self.hosts.extend(more.hosts.iter().cloned());
        self.env.extend(more.env.iter().cloned());
        self.memory_mib = self.memory_mib.max(more.memory_mib);
        self.timeout_ms = self.timeout_ms.max(more.timeout_ms);
    }
}

/// A requests section the host cannot accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestsError {
    #[error("`{SECTION}` is not valid: {0}")]
    Invalid(String),
    #[error("it has more than one `{SECTION}` section")]
    Repeated,
    #[error("it has a `{SECTION}` section already; build it again without one to stamp other requests")]
    Stamped,
    #[error("the component cannot be read: {0}")]
    Unreadable(String),
}

/// The requests in `component` (a component's bytes): the one
/// `toolhost:requests` section, at the top level or in a core module inside;
/// none means the tool requests nothing.
pub fn read(component: &[u8]) -> Result<Requests, RequestsError> {
    let mut found: Option<&[u8]> = None;
    super::scan::walk(component, RequestsError::Unreadable, |payload, _| match payload {
        wasmparser::Payload::CustomSection(section) if section.name() == SECTION => {
            if found.is_some() {
                return Err(RequestsError::Repeated);
            }
            found = Some(section.data());
            Ok(())
        }
        _ => Ok(()),
    })?;
    match found {
        None => Ok(Requests::default()),
        Some(data) => parse(data),
    }
}

/// `component` with `requests` (JSON text) written into it as its
/// `toolhost:requests` section, for toolchains that cannot stamp one
/// themselves (componentize-py, componentize-qjs, componentize-js): checked
/// as the loader checks it, appended at the top level. A component that has
/// a section already is refused (two would make it unloadable).
pub fn stamp(component: &[u8], requests: &str) -> Result<Vec<u8>, RequestsError> {
    parse(requests.as_bytes())?;
    super::shape::check_header(component).map_err(|e| RequestsError::Unreadable(e.to_string()))?;
    if has_section(component)? {
        return Err(RequestsError::Stamped);
    }
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n == 0 { byte } else { byte | 0x80 });
            if n == 0 {
                return;
            }
        }
    }
    let mut body = Vec::new();
    leb(SECTION.len(), &mut body);
    body.extend_from_slice(SECTION.as_bytes());
    body.extend_from_slice(requests.as_bytes());
    let mut out = component.to_vec();
    // A custom section (id 0) may come anywhere, the end included.
    out.push(0);
    leb(body.len(), &mut out);
    out.extend_from_slice(&body);
    Ok(out)
}

fn has_section(component: &[u8]) -> Result<bool, RequestsError> {
    let mut found = false;
    super::scan::walk(component, RequestsError::Unreadable, |payload, _| {
        found |= matches!(payload, wasmparser::Payload::CustomSection(s) if s.name() == SECTION);
        Ok(())
    })?;
    Ok(found)
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

/// Whether `host` is a host a tool may request or be granted (see
/// [`HostPattern`]).
pub fn valid_host(host: &str) -> bool {
    HostPattern::parse(host).is_some()
}

/// One entry of `hosts`: which hosts, and which port (none: every port).
///
/// - `*`: any public host;
/// - `*.example.com`: any host under `example.com` (not `example.com`
///   itself);
/// - `example.com`: that name;
/// - `127.0.0.1`, `[::1]`: that address; the only way to reach a loopback,
///   private, link-local or other non-public address;
///
/// each optionally followed by `:port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPattern {
    pub name: HostName,
    pub port: Option<u16>,
}

/// The host part of a [`HostPattern`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostName {
    /// `*`: any host whose addresses are all public.
    Any,
    /// `*.example.com`: a name below this one (kept lowercase).
    Under(String),
    /// `example.com` (kept lowercase, without a trailing dot).
    Exact(String),
    /// An IP address, which grants that address whatever kind it is.
    Addr(std::net::IpAddr),
}

impl HostPattern {
    pub fn parse(text: &str) -> Option<HostPattern> {
        let (name, port) = match text.rsplit_once(':') {
            Some((n, p)) if !n.ends_with(':') && !p.contains(']') && (n.ends_with(']') || !n.contains(':')) => {
                (n, Some(p.parse::<u16>().ok().filter(|p| *p != 0)?))
            }
            _ => (text, None),
        };
        let name = if name == "*" {
            HostName::Any
        } else if let Some(inner) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
            HostName::Addr(std::net::IpAddr::V6(inner.parse().ok()?))
        } else if let Ok(v4) = name.strip_suffix('.').unwrap_or(name).parse::<std::net::Ipv4Addr>() {
            // `127.0.0.1.` is the address, not a name (found by fuzzing: as
            // a name it printed as the address, which parsed differently).
            HostName::Addr(std::net::IpAddr::V4(v4))
        } else if let Some(parent) = name.strip_prefix("*.") {
            HostName::Under(dns_name(parent)?)
        } else {
            HostName::Exact(dns_name(name)?)
        };
        Some(HostPattern { name, port })
    }

    /// Whether every host and port `other` names is one this names too.
    pub fn covers(&self, other: &HostPattern) -> bool {
        let port = self.port.is_none() || self.port == other.port;
        let name = match (&self.name, &other.name) {
            (HostName::Any, _) => true,
            (HostName::Under(a), HostName::Under(b)) => b == a || b.ends_with(&format!(".{a}")),
            (HostName::Under(a), HostName::Exact(b)) => b.ends_with(&format!(".{a}")),
            (a, b) => a == b,
        };
        port && name
    }

    /// Whether a grant of this pattern gives a tool that asked for `asked`
    /// all of it: as [`covers`](Self::covers), except that `*` (public hosts
    /// only) never gives an address that is not public; that takes a grant
    /// of the address itself.
    pub fn grants(&self, asked: &HostPattern) -> bool {
        match (&self.name, &asked.name) {
            (HostName::Any, HostName::Addr(ip)) if crate::sandbox::network::non_public(*ip).is_some() => false,
            _ => self.covers(asked),
        }
    }

    /// Whether this names `host` (a DNS name or an IP address as written in
    /// a URL, brackets removed) at `port`.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        match &self.name {
            HostName::Any => true,
            HostName::Under(parent) => host.ends_with(&format!(".{parent}")),
            HostName::Exact(name) => host == *name,
            HostName::Addr(ip) => host.parse::<std::net::IpAddr>().is_ok_and(|h| h == *ip),
        }
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.name {
            HostName::Any => f.write_str("*")?,
            HostName::Under(parent) => write!(f, "*.{parent}")?,
            HostName::Exact(name) => f.write_str(name)?,
            HostName::Addr(std::net::IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
            HostName::Addr(ip) => write!(f, "{ip}")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

/// A DNS name, lowercase, without its trailing dot.
fn dns_name(name: &str) -> Option<String> {
    let name = name.strip_suffix('.').unwrap_or(name);
    let ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty() && label.len() <= 63 && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    ok.then(|| name.to_ascii_lowercase())
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
        for ok in
            ["example.com", "example.com:443", "127.0.0.1:8080", "[::1]:80", "localhost", "*", "*:443", "*.docs.rs"]
        {
            assert!(valid_host(ok), "{ok}");
        }
        for bad in [
            "",
            "example.com:0",
            "example.com:99999",
            "a b.com",
            "http://x",
            "x..y",
            "[nope]:1",
            "::1",
            "a.*.com",
            "**",
        ] {
            assert!(!valid_host(bad), "{bad}");
        }
        let p = |s: &str| HostPattern::parse(s).unwrap();
        for s in ["*", "*.docs.rs:443", "example.com", "10.0.0.1:80", "[::1]:8080"] {
            assert_eq!(p(s).to_string(), s);
        }
        assert_eq!(p("Example.COM.").to_string(), "example.com");
        // An address with the root's dot is the address (fuzz target `hosts`).
        assert_eq!(p("127.0.0.1."), p("127.0.0.1"));
        assert!(!p("*").grants(&p("127.0.0.1.:80")));
    }

    #[test]
    fn host_patterns_cover_and_match() {
        let p = |s: &str| HostPattern::parse(s).unwrap();
        assert!(p("*").covers(&p("127.0.0.1:8080")));
        // A grant of `*` is public hosts only.
        assert!(!p("*").grants(&p("127.0.0.1:8080")));
        assert!(!p("*:80").grants(&p("169.254.169.254:80")));
        assert!(!p("*").grants(&p("[::1]")));
        assert!(!p("*").grants(&p("[::ffff:10.0.0.1]")));
        assert!(p("*").grants(&p("8.8.8.8:53")) && p("*").grants(&p("example.com")));
        assert!(p("127.0.0.1").grants(&p("127.0.0.1:8080")));
        assert!(p("*.example.com").covers(&p("a.example.com:443")));
        assert!(p("*.example.com").covers(&p("*.b.example.com")));
        assert!(!p("*.example.com").covers(&p("example.com")));
        assert!(!p("*.example.com").covers(&p("badexample.com")));
        assert!(p("example.com").covers(&p("example.com:443")));
        assert!(!p("example.com:443").covers(&p("example.com")));
        assert!(!p("example.com").covers(&p("*")));
        assert!(p("api.example.com").matches("API.example.com.", 443));
        assert!(!p("api.example.com:80").matches("api.example.com", 443));
        assert!(p("*.example.com").matches("a.b.example.com", 1));
        assert!(!p("*.example.com").matches("example.com", 1));
        assert!(p("[::1]").matches("::1", 80));
        assert!(p("127.0.0.1:9").matches("127.0.0.1", 9));
        assert!(!p("127.0.0.1:9").matches("localhost", 9));
    }

    #[test]
    fn a_component_without_the_section_requests_nothing() {
        let wasm = std::fs::read(toolhost_tests::ECHO).unwrap();
        assert_eq!(read(&wasm), Ok(Requests::default()));
        // A built-in stamps its requests like any component.
        let read_tool = crate::registry::builtin_wasm_for_tests();
        assert_eq!(read(read_tool).unwrap().workspace, Some(DirAccess::ReadOnly));
    }

    #[test]
    fn the_workspace_and_the_process_are_requested_by_name() {
        let r = parse(br#"{"workspace": "read-write", "process": true}"#).unwrap();
        assert_eq!((r.workspace, r.process), (Some(DirAccess::ReadWrite), true));
        assert!(parse(br#"{"workspace": "everything"}"#).is_err());
        assert_eq!(serde_json::to_string(&Requests::default()).unwrap(), "{}");
    }
}
