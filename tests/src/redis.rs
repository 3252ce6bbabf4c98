//! A real `redis-server` for the tests that share state through one: started
//! on a free loopback port in a directory of its own, with nothing saved to
//! disk, and killed when dropped.
//!
//! The server comes from the machine (Debian: `apt install redis-server`;
//! `.ci/run` installs it when it is missing). Without it a test fails,
//! saying so: no test passes without the server it needs.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `redis-server`.
pub struct RedisServer {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// Starts one and waits until it answers `PING`.
    pub fn start() -> RedisServer {
        let dir = tempfile::tempdir().expect("a directory for redis-server");
        // A free port: bound, read, released; redis-server takes it next.
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "could not start redis-server ({e}): these tests need a real Redis server (Debian: apt install \
                     redis-server; .ci/run installs it)"
                )
            });
        let server = RedisServer { child, port, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !server.answers() {
            assert!(Instant::now() < deadline, "redis-server on port {port} did not answer PING within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
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
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
