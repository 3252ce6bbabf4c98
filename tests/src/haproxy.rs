//! A real `haproxy` in front of several toolhost servers, as a load
//! balancer in front of a cluster's pods: on a free loopback port, in HTTP
//! mode, checking each server's `/readyz`, and killed when dropped.
//!
//! The proxy comes from the machine (Debian: `apt install haproxy`;
//! `.ci/run` installs it when it is missing). Without it a test fails,
//! saying so.

use crate::server::{Process, free_port, wait_until};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

/// How requests are spread.
#[derive(Clone, Copy, Debug)]
pub enum Balance {
    /// Each request to the next server: a client's requests land
    /// everywhere.
    RoundRobin,
    /// By a hash of the `Mcp-Session-Id` header: a session stays on one
    /// server while it is up (requests without one go round).
    SessionHeader,
}

/// A running `haproxy`.
pub struct Haproxy {
    _process: Process,
    /// Its port on 127.0.0.1.
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Haproxy {
    /// Starts one in front of `servers` (`host:port` each) and waits until
    /// it accepts connections.
    pub fn start(servers: &[String], balance: Balance) -> Haproxy {
        let dir = tempfile::tempdir().expect("a directory for haproxy");
        let port = free_port();
        let balance = match balance {
            Balance::RoundRobin => "balance roundrobin",
            Balance::SessionHeader => "balance hdr(Mcp-Session-Id)\n    hash-type consistent",
        };
        let backends: String = servers
            .iter()
            .enumerate()
            .map(|(i, s)| format!("    server s{i} {s} check inter 500ms fall 1 rise 1\n"))
            .collect();
        let config = format!(
            "global\n    maxconn 4096\n\
             defaults\n    mode http\n    timeout connect 2s\n    timeout client 120s\n    timeout server 120s\n    \
             retries 2\n    option redispatch\n    retry-on conn-failure empty-response response-timeout\n\
             frontend mcp\n    bind 127.0.0.1:{port}\n    default_backend toolhost\n\
             backend toolhost\n    {balance}\n    option httpchk GET /readyz\n{backends}"
        );
        let file = dir.path().join("haproxy.cfg");
        std::fs::write(&file, config).expect("write haproxy.cfg");
        let process = Process::start(Command::new("haproxy").arg("-db").arg("-f").arg(&file), "haproxy");
        let proxy = Haproxy { _process: process, port, _dir: dir };
        wait_until(
            &format!("haproxy on port {port} did not accept connections"),
            Duration::from_secs(10),
            Duration::from_millis(20),
            || TcpStream::connect(("127.0.0.1", port)).is_ok(),
        );
        // Its first health checks.
        std::thread::sleep(Duration::from_millis(600));
        proxy
    }

    /// The MCP endpoint through it.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}
