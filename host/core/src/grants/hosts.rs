//! The hosts of an allowance: names, wildcards and addresses, each with an
//! optional port ([`HostPattern`]); which addresses are not public.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use toolhost_primitives::host;

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
    /// Which hosts.
    pub name: HostName,
    /// Which port; `None` is every port.
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
    /// Reads a pattern as requests and grants write it; `None` if it is not one.
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
            (HostName::Under(a), HostName::Under(b)) => host::is_within(b, a),
            (HostName::Under(a), HostName::Exact(b)) => host::is_under(b, a),
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
            (HostName::Any, HostName::Addr(ip)) if non_public(*ip).is_some() => false,
            _ => self.covers(asked),
        }
    }

    /// Whether this names `host` (a DNS name or an IP address as written in
    /// a URL, brackets removed) at `port`.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        let host = host::normalize(host);
        match &self.name {
            HostName::Any => true,
            HostName::Under(parent) => host::is_under(&host, parent),
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

/// What kind of non-public address `ip` is, or `None` for a public one.
/// Addresses that embed an IPv4 address (mapped, NAT64, 6to4, compatible)
/// are judged by it.
pub(crate) fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match () {
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_private() => "private",
        _ if ip.is_link_local() => "link-local (cloud metadata)",
        _ if a == 100 && (b & 0xc0) == 64 => "shared (carrier-grade NAT)",
        _ if a == 0 => "unspecified",
        _ if ip.is_broadcast() => "broadcast",
        _ if ip.is_multicast() => "multicast",
        _ if a >= 240 => "reserved",
        _ if ip.is_documentation() => "documentation",
        _ if a == 198 && (b & 0xfe) == 18 => "benchmarking",
        _ if a == 192 && b == 0 && c == 0 => "protocol-assignment",
        _ => return None,
    })
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let embedded = || Ipv4Addr::from((u32::from(s[6]) << 16) | u32::from(s[7]));
    if let Some(v4) = ip.to_ipv4_mapped() {
        return non_public_v4(v4);
    }
    Some(match () {
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_unspecified() => "unspecified",
        // ::a.b.c.d, the deprecated IPv4-compatible form.
        _ if s[..6] == [0; 6] => return non_public_v4(embedded()).or(Some("IPv4-compatible")),
        // NAT64 (64:ff9b::/96) reaches the IPv4 address it carries.
        _ if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] => return non_public_v4(embedded()),
        _ if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 => "local NAT64",
        // 6to4 (2002::/16) carries an IPv4 address in its next 32 bits.
        _ if s[0] == 0x2002 => return non_public_v4(Ipv4Addr::from((u32::from(s[1]) << 16) | u32::from(s[2]))),
        _ if (s[0] & 0xfe00) == 0xfc00 => "private (unique local)",
        _ if (s[0] & 0xffc0) == 0xfe80 => "link-local",
        _ if (s[0] & 0xffc0) == 0xfec0 => "site-local",
        _ if (s[0] & 0xff00) == 0xff00 => "multicast",
        _ if s[0] == 0x2001 && s[1] == 0xdb8 => "documentation",
        _ if s[0] == 0x2001 && s[1] == 0 => "Teredo",
        _ if s[0] == 0x100 && s[1..4] == [0, 0, 0] => "discard",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
