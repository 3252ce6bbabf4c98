//! A real `redis-server` for the tests that share state through one: started
//! on a free loopback port in a directory of its own, with nothing saved to
//! disk, and killed when dropped.
//!
//! The server comes from the machine (Debian: `apt install redis-server`;
//! `.ci/run` installs it when it is missing). Without it a test fails,
//! saying so: no test passes without the server it needs.

use crate::server::{Process, free_port, wait_until};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

/// A running `redis-server`.
pub struct RedisServer {
    process: Process,
    /// Its port on 127.0.0.1.
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// Starts one and waits until it answers `PING`.
    pub fn start() -> RedisServer {
        let dir = tempfile::tempdir().expect("a directory for redis-server");
        let port = free_port();
        let process = Process::start(
            Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .current_dir(dir.path()),
            "redis-server",
        );
        let server = RedisServer { process, port, _dir: dir };
        wait_until(
            &format!("redis-server on port {port} did not answer PING"),
            Duration::from_secs(10),
            Duration::from_millis(20),
            || server.answers(),
        );
        server
    }

    /// Its URL, database `db`.
    pub fn url(&self, db: u8) -> String {
        format!("redis://127.0.0.1:{}/{db}", self.port)
    }

    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else { return false };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let mut answer = [0u8; 7];
        stream.write_all(b"PING\r\n").is_ok() && stream.read_exact(&mut answer).is_ok() && &answer == b"+PONG\r\n"
    }

    /// Stops the server at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        self.process.kill();
    }
}
