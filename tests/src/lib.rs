//! Shared pieces of toolhost's end-to-end tests and benchmarks.
//!
//! The test guests (`tests/guests/*`) are real components built once by this
//! crate's build script; their paths are the constants below.

use std::path::{Path, PathBuf};
use std::process::Command;

include!(concat!(env!("OUT_DIR"), "/guests.rs"));

pub mod counts;
pub mod haproxy;
pub mod hot_paths;
pub mod js;
pub mod keyring;
pub mod pins;
pub mod python;
pub mod redis;
pub mod registry;
pub mod server;
pub mod toolchain;

/// The workspace root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is in the workspace root").to_path_buf()
}

/// Whether process `pid` is gone: no such process, or a zombie waiting for
/// its reaper.
pub fn process_gone(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_or(true, |stat| stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')))
}

/// Waits up to `within` for process `pid` to be gone; whether it is.
pub fn wait_gone(pid: i32, within: std::time::Duration) -> bool {
    let until = std::time::Instant::now() + within;
    while !process_gone(pid) && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    process_gone(pid)
}

/// Gives `command` one socket pair as its standard input and output (as
/// Node starts a child process) and returns the other end. Drop `command`
/// after spawning it: it holds the child's end until then, and the child
/// sees the end of its input only once every copy of that end is closed
/// and `shutdown(Write)` is called on the returned one.
pub fn socket_stdio(command: &mut Command) -> std::io::Result<std::os::unix::net::UnixStream> {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
    let theirs = std::os::fd::OwnedFd::from(theirs);
    command.stdin(theirs.try_clone()?).stdout(theirs);
    Ok(ours)
}

/// The compile cache shared by every test process, so each component is
/// compiled once per build, not once per test.
pub fn shared_cache_dir() -> PathBuf {
    repo_root().join("target").join("test-cache")
}

/// A throwaway environment: a workspace, a plugins directory, a data
/// directory and a home, all inside one temporary directory.
pub struct Sandbox {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub workspace: PathBuf,
    pub plugins: PathBuf,
    pub data: PathBuf,
    pub home: PathBuf,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::Builder::new().prefix("toolhost-e2e-").tempdir().expect("temp dir");
        // Canonical, so paths printed by the host compare equal.
        let root = dir.path().canonicalize().expect("canonical temp dir");
        let make = |name: &str| {
            let p = root.join(name);
            std::fs::create_dir_all(&p).expect("create dir");
            p
        };
        Sandbox {
            workspace: make("workspace"),
            plugins: make("plugins"),
            data: make("data"),
            home: make("home"),
            root,
            _dir: dir,
        }
    }

    /// A path inside the workspace.
    pub fn ws(&self, rel: &str) -> PathBuf {
        self.workspace.join(rel)
    }

    /// Writes a file inside the workspace, creating directories.
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.ws(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("create parent");
        }
        std::fs::write(&p, contents).expect("write file");
        p
    }

    /// Copies a guest into the plugins directory.
    pub fn install(&self, guest: &str) -> PathBuf {
        let name = Path::new(guest).file_name().expect("guest file name");
        let dest = self.plugins.join(name);
        std::fs::copy(guest, &dest).expect("copy guest");
        dest
    }

    /// `program` with the environment pointed at this sandbox (data, cache,
    /// home) and nothing of the user's configuration.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.workspace)
            .env("HOME", &self.home)
            .env("TOOLHOST_DATA_DIR", &self.data)
            .env("TOOLHOST_CACHE_DIR", shared_cache_dir())
            .env_remove("TOOLHOST_PLUGINS")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env("TOOLHOST_MANAGED_SETTINGS", self.home.join("managed-settings.json"))
            .env_remove("TOOLHOST_CONFIG_DIR")
            // Never the user's own keyring: the tests of the keyring start one.
            .env("TOOLHOST_SECRET_STORE", "file")
            .env_remove("TOOLHOST_QUICK_COMPILE_ABOVE")
            .env_remove("RUST_LOG");
        cmd
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

/// A component's bytes with one more custom section: the same tool, other
/// bytes (a new version, as far as a host can tell).
pub fn with_custom_section(wasm: &[u8], name: &str, payload: &[u8]) -> Vec<u8> {
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
    leb(name.len(), &mut body);
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(payload);
    let mut out = wasm.to_vec();
    out.push(0);
    leb(body.len(), &mut out);
    out.extend_from_slice(&body);
    out
}

/// Writes `bytes` as `file` the way an installer should: a hidden
/// temporary file beside it, renamed into place.
pub fn put_atomically(file: &Path, bytes: &[u8]) {
    let name = file.file_name().and_then(|n| n.to_str()).expect("a file name");
    let temp = file.with_file_name(format!(".{name}.partial"));
    std::fs::write(&temp, bytes).expect("write");
    std::fs::rename(&temp, file).expect("rename");
}

/// The URL a `toolhost serve --http` child (its stderr piped) prints when it
/// serves (`http://ADDR/mcp`). Its stderr is drained from then on, so the
/// server never blocks writing to it. Panics, naming `what`, if it ends
/// before serving.
pub fn serving_url(child: &mut std::process::Child, what: &str) -> String {
    use std::io::{BufRead as _, Read as _};
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("a piped stderr"));
    let mut line = String::new();
    let url = loop {
        line.clear();
        assert!(stderr.read_line(&mut line).expect("read stderr") > 0, "{what} ended before serving");
        if let Some(at) = line.find("http://") {
            break line[at..].trim().to_string();
        }
    };
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = stderr.read_to_string(&mut sink);
    });
    url
}
