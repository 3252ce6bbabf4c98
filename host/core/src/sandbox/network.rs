//! The network a tool sees: connections only to the hosts it was granted,
//! and never to a loopback, private, link-local or other non-public address
//! unless that address itself was granted. Names are checked as written and
//! again after resolution, and the host connects to the addresses it
//! checked (a name that resolves to `169.254.169.254` reaches nothing, and a
//! second lookup cannot change the answer between check and connect).
//!
//! Outgoing HTTP (`wasi:http`, with the `http` feature) goes through
//! [`http::Hooks`]; plain TCP sockets through [`Network::socket_check`].
//! UDP, listening and accepting are refused to every tool.

use crate::grants::{HostName, HostPattern, non_public};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// How long a name lookup may take.
pub(crate) const DNS_TIMEOUT: Duration = Duration::from_secs(10);

/// The hosts one call may reach.
#[derive(Debug, Default)]
pub struct Network {
    allowed: Vec<HostPattern>,
}

/// Why a connection was refused, worded for the model (and the operator).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("{0} is not a host this tool was granted")]
    NotGranted(String),
    #[error(
        "{host} resolves to {ip}, a {kind} address; such addresses are reached only when granted by address (\"{grant}\")"
    )]
    NotPublic { host: String, ip: IpAddr, kind: &'static str, grant: String },
    #[error("cannot resolve {host}: {why}")]
    Resolve { host: String, why: String },
}

impl Network {
    /// The network of a tool granted `hosts` ([`HostPattern`]s; an entry
    /// that does not parse grants nothing).
    pub fn new(hosts: &[String]) -> Network {
        Network { allowed: hosts.iter().filter_map(|h| HostPattern::parse(h)).collect() }
    }

    /// Whether it reaches no host at all.
    pub fn is_empty(&self) -> bool {
        self.allowed.is_empty()
    }

    /// The addresses of `host` (a name, or an address as written in a URL
    /// without brackets) at `port` this tool may connect to, or why none.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Refused> {
        let shown = match host.contains(':') {
            true => format!("[{host}]:{port}"),
            false => format!("{host}:{port}"),
        };
        if !self.allowed.iter().any(|p| p.matches(host, port)) {
            return Err(Refused::NotGranted(shown));
        }
        let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => {
                let lookup = tokio::time::timeout(DNS_TIMEOUT, tokio::net::lookup_host((host, port)));
                match lookup.await {
                    Ok(Ok(found)) => found.collect(),
                    Ok(Err(e)) => return Err(Refused::Resolve { host: host.into(), why: e.to_string() }),
                    Err(_) => {
                        return Err(Refused::Resolve {
                            host: host.into(),
                            why: format!("no answer in {DNS_TIMEOUT:?}"),
                        });
                    }
                }
            }
        };
        let mut refused = None;
        let mut ok = Vec::new();
        for addr in addrs {
            match self.permits(host, addr) {
                Ok(()) => ok.push(addr),
                Err(why) => refused = refused.or(Some(why)),
            }
        }
        match (ok.is_empty(), refused) {
            (false, _) => Ok(ok),
            (true, Some(why)) => Err(why),
            (true, None) => Err(Refused::Resolve { host: host.into(), why: "no addresses".into() }),
        }
    }

    /// Whether `addr`, which `host` resolved to (or is), may be reached: a
    /// granted address always; a public address when a pattern names
    /// `host` at that port.
    fn permits(&self, host: &str, addr: SocketAddr) -> Result<(), Refused> {
        let ip = canonical(addr.ip());
        let by_address = |p: &HostPattern| {
            matches!(p.name, HostName::Addr(a) if canonical(a) == ip) && p.port.is_none_or(|port| port == addr.port())
        };
        if self.allowed.iter().any(by_address) {
            return Ok(());
        }
        match non_public(ip) {
            None if self.allowed.iter().any(|p| p.matches(host, addr.port())) => Ok(()),
            None => Err(Refused::NotGranted(addr.to_string())),
            Some(kind) => Err(Refused::NotPublic {
                host: host.into(),
                ip,
                kind,
                grant: SocketAddr::new(ip, addr.port()).to_string(),
            }),
        }
    }

    /// The check wasmtime-wasi runs before every socket operation: a TCP
    /// connect to an address granted by address, to a public address when
    /// `*` is granted, or to a public address one of the granted names
    /// resolves to (looked up again here); the implicit bind a connect
    /// makes. Nothing else: no explicit bind, no listen, no UDP.
    pub fn socket_check(
        self: &Arc<Self>,
    ) -> impl Fn(SocketAddr, wasmtime_wasi::sockets::SocketAddrUse) -> CheckFuture + use<> {
        let network = Arc::clone(self);
        move |addr, use_| {
            use wasmtime_wasi::sockets::SocketAddrUse;
            let network = Arc::clone(&network);
            Box::pin(async move {
                match use_ {
                    SocketAddrUse::TcpBind => addr.ip().is_unspecified() && addr.port() == 0,
                    SocketAddrUse::TcpConnect => network.permits_socket(addr).await,
                    _ => false,
                }
            })
        }
    }

    async fn permits_socket(&self, addr: SocketAddr) -> bool {
        let ip = canonical(addr.ip());
        if self.permits(&ip.to_string(), addr).is_ok() {
            return true;
        }
        if non_public(ip).is_some() {
            return false;
        }
        for pattern in &self.allowed {
            let HostName::Exact(name) = &pattern.name else { continue };
            if pattern.port.is_some_and(|p| p != addr.port()) {
                continue;
            }
            let lookup = tokio::time::timeout(DNS_TIMEOUT, tokio::net::lookup_host((name.as_str(), addr.port())));
            if let Ok(Ok(mut found)) = lookup.await
                && found.any(|a| canonical(a.ip()) == ip)
            {
                return true;
            }
        }
        false
    }
}

/// What [`Network::socket_check`] returns for each check.
pub(crate) type CheckFuture = std::pin::Pin<Box<dyn Future<Output = bool> + Send + Sync>>;

/// An IPv4 address written as IPv6 (`::ffff:127.0.0.1`) as the IPv4
/// address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(feature = "http")]
pub(crate) mod http;

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn non_public_addresses_are_named() {
        for (addr, kind) in [
            ("127.0.0.1", "loopback"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local (cloud metadata)"),
            ("100.100.100.200", "shared (carrier-grade NAT)"),
            ("0.0.0.0", "unspecified"),
            ("255.255.255.255", "broadcast"),
            ("224.0.0.1", "multicast"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "link-local (cloud metadata)"),
            ("::127.0.0.1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "link-local (cloud metadata)"),
            ("2002:7f00:1::", "loopback"),
            ("fd00:ec2::254", "private (unique local)"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
        ] {
            assert_eq!(non_public(ip(addr)), Some(kind), "{addr}");
        }
        for public in
            ["93.184.215.14", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::"]
        {
            assert_eq!(non_public(ip(public)), None, "{public}");
        }
    }

    fn network(hosts: &[&str]) -> Network {
        Network::new(&hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>())
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
    }

    #[test]
    fn addresses_are_checked_as_written_and_after_resolution() {
        let any = network(&["*"]);
        assert!(matches!(block_on(any.resolve("127.0.0.1", 80)), Err(Refused::NotPublic { kind: "loopback", .. })));
        // `localhost` is a name `*` covers, and resolves to loopback.
        let err = block_on(any.resolve("localhost", 8080)).unwrap_err();
        assert!(matches!(err, Refused::NotPublic { .. } | Refused::Resolve { .. }), "{err}");
        assert_eq!(block_on(any.resolve("1.1.1.1", 443)).unwrap(), [SocketAddr::new(ip("1.1.1.1"), 443)]);
        let message = block_on(any.resolve("169.254.169.254", 80)).unwrap_err().to_string();
        assert!(message.contains("link-local") && message.contains("\"169.254.169.254:80\""), "{message}");

        let local = network(&["127.0.0.1:8080"]);
        assert_eq!(block_on(local.resolve("127.0.0.1", 8080)).unwrap(), [SocketAddr::new(ip("127.0.0.1"), 8080)]);
        assert!(matches!(block_on(local.resolve("127.0.0.1", 8081)), Err(Refused::NotGranted(_))));
        assert!(matches!(block_on(local.resolve("1.1.1.1", 8080)), Err(Refused::NotGranted(_))));
        // A granted address, reached by a name `*` allows.
        let both = network(&["*", "127.0.0.1:8080"]);
        if let Ok(addrs) = block_on(both.resolve("localhost", 8080)) {
            assert!(addrs.iter().all(|a| a.ip() == ip("127.0.0.1")), "{addrs:?}");
        }
        let named = network(&["example.com:443"]);
        assert_eq!(
            block_on(named.resolve("example.org", 443)).unwrap_err(),
            Refused::NotGranted("example.org:443".into())
        );
        assert!(network(&[]).is_empty());
    }

    #[test]
    fn sockets_connect_only_where_allowed() {
        use wasmtime_wasi::sockets::SocketAddrUse::*;
        let check = Arc::new(network(&["127.0.0.1:9000", "*"])).socket_check();
        let sock = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert!(block_on(check(sock("127.0.0.1:9000"), TcpConnect)));
        assert!(block_on(check(sock("[::ffff:127.0.0.1]:9000"), TcpConnect)));
        assert!(!block_on(check(sock("127.0.0.1:9001"), TcpConnect)));
        assert!(!block_on(check(sock("169.254.169.254:80"), TcpConnect)));
        assert!(block_on(check(sock("1.1.1.1:443"), TcpConnect)));
        assert!(block_on(check(sock("0.0.0.0:0"), TcpBind)), "the implicit bind of a connect");
        assert!(!block_on(check(sock("0.0.0.0:8080"), TcpBind)));
        assert!(!block_on(check(sock("127.0.0.1:9000"), TcpListen)));
        assert!(!block_on(check(sock("1.1.1.1:53"), UdpSend)));
        let none = Arc::new(network(&["example.com:443"])).socket_check();
        assert!(!block_on(none(sock("10.0.0.1:443"), TcpConnect)));
    }
}
