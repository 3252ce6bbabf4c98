//! The hosts of an allowance: names, wildcards and addresses, each with an
//! optional port ([`HostPattern`]).

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
