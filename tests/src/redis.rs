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
    /// Starts one and waits until it answers, as itself: a server that lost
    /// its port to another process exits, and is started again on another.
    pub fn start() -> RedisServer {
        for _ in 0..5 {
            let dir = tempfile::tempdir().expect("a directory for redis-server");
            let port = free_port();
            let process = Process::start(
                Command::new("redis-server")
                    .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                    .current_dir(dir.path()),
                "redis-server",
            );
            let mut server = RedisServer { process, port, _dir: dir };
            let mut ours = false;
            wait_until(
                &format!("redis-server on port {port} did not answer"),
                Duration::from_secs(10),
                Duration::from_millis(20),
                || {
                    ours = server.answers_as_itself();
                    ours || server.process.exited()
                },
            );
            if ours {
                return server;
            }
        }
        panic!("redis-server could not keep a free port in five tries");
    }

    /// Its URL, database `db`.
    pub fn url(&self, db: u8) -> String {
        format!("redis://127.0.0.1:{}/{db}", self.port)
    }

    /// Whether the server on its port answers and is this one (its
    /// `INFO server` names this process).
    fn answers_as_itself(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else { return false };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        if stream.write_all(b"INFO server\r\n").is_err() {
            return false;
        }
        // A bulk string: `$LEN`, then the text; the process id is in it.
        let mut answer = Vec::new();
        let mut chunk = [0u8; 4096];
        let want = format!("process_id:{}\r\n", self.process.pid());
        while let Ok(n @ 1..) = stream.read(&mut chunk) {
            answer.extend_from_slice(&chunk[..n]);
            if String::from_utf8_lossy(&answer).contains(&want) {
                return true;
            }
            if answer.len() > 1 << 16 {
                break;
            }
        }
        false
    }

    /// Stops the server at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        self.process.kill();
    }
}
