//! What the tests' real servers (Redis, haproxy, the OCI registry) share: a
//! free loopback port, starting the program with its output discarded (a
//! machine without it fails the test, naming the Debian package that
//! `.ci/run` installs), waiting until it answers, and killing it when
//! dropped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free port on 127.0.0.1: bound, read, released; the server takes it
/// next. Never one this process handed out before: two tests starting
/// servers at once could otherwise be given the same just-released port,
/// and one test would talk to the other's server.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// A server process, killed (SIGKILL) when dropped.
pub struct Process {
    child: Child,
}

impl Process {
    /// Starts `command`, from the Debian package `package`.
    pub fn start(command: &mut Command, package: &str) -> Process {
        let program = command.get_program().to_string_lossy().into_owned();
        let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap_or_else(|e| {
            panic!(
                "could not start {program} ({e}): these tests need a real {program} (Debian: apt install {package}; \
                 .ci/run installs it)"
            )
        });
        Process { child }
    }

    /// Starts `command`, from the Debian package `package`, and writes
    /// `input` to its standard input, then closes it.
    pub fn start_with_input(command: &mut Command, package: &str, input: &[u8]) -> Process {
        use std::io::Write as _;
        let mut process = Process::start(command.stdin(Stdio::piped()), package);
        let mut stdin = process.child.stdin.take().expect("piped stdin");
        stdin.write_all(input).expect("write to the server's stdin");
        process
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it has exited (a server that could not bind its port does).
    pub fn exited(&mut self) -> bool {
        self.child.try_wait().is_ok_and(|status| status.is_some())
    }

    /// Stops it at once, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Polls `ready` every `every` until it holds; fails the test, saying
/// `what` did not happen, after `within`.
pub fn wait_until(what: &str, within: Duration, every: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !ready() {
        assert!(Instant::now() < deadline, "{what} within {} s", within.as_secs());
        std::thread::sleep(every);
    }
}
