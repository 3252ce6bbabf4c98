//! A real OCI registry for the install tests: Debian's `docker-registry`
//! (the CNCF distribution registry), started on a free loopback port with its
//! storage in a directory of its own, behind htpasswd credentials, and
//! killed when dropped.
//!
//! The server comes from the machine (Debian: `apt install docker-registry`;
//! `.ci/run` installs it when it is missing). Without it a test fails, saying
//! so: no test passes without the server it needs.

use crate::server::{Process, free_port, wait_until};
use base64::Engine as _;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

/// A running registry.
pub struct Registry {
    _process: Process,
    /// `127.0.0.1:PORT`.
    pub address: String,
    /// The user and password it accepts.
    pub user: &'static str,
    pub password: &'static str,
    _dir: tempfile::TempDir,
}

impl Registry {
    /// Starts one and waits until it answers `GET /v2/`.
    pub fn start() -> Registry {
        let (user, password) = ("tester", "s3cret-for-tests");
        let dir = tempfile::tempdir().expect("a directory for the registry");
        let hash = bcrypt::hash(password, 5).expect("a bcrypt hash");
        std::fs::write(dir.path().join("htpasswd"), format!("{user}:{hash}\n")).expect("htpasswd");
        let port = free_port();
        let config = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {root}\n  \
             delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\nauth:\n  htpasswd:\n    realm: toolhost-tests\n    path: {htpasswd}\n",
            root = dir.path().join("data").display(),
            htpasswd = dir.path().join("htpasswd").display(),
        );
        let config_file = dir.path().join("config.yml");
        std::fs::write(&config_file, config).expect("the registry's configuration");
        let process = Process::start(Command::new("docker-registry").arg("serve").arg(&config_file), "docker-registry");
        let registry = Registry { _process: process, address: format!("127.0.0.1:{port}"), user, password, _dir: dir };
        wait_until(
            &format!("docker-registry on port {port} did not answer"),
            Duration::from_secs(20),
            Duration::from_millis(50),
            || registry.answers(),
        );
        registry
    }

    /// Whether it answers the API's base endpoint (401 without credentials).
    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(&self.address) else { return false };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let request = format!("GET /v2/ HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.address);
        let mut answer = [0u8; 12];
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_exact(&mut answer).is_ok()
            && (answer.ends_with(b"401") || answer.ends_with(b"200"))
    }

    /// A docker `config.json` holding its credentials (for `DOCKER_CONFIG`).
    pub fn docker_config(&self) -> String {
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", self.user, self.password));
        serde_json::json!({"auths": {&self.address: {"auth": auth}}}).to_string()
    }
}
