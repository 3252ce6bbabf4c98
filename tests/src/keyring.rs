//! A real OS keyring for the tests of secrets kept in one: a D-Bus session
//! bus of its own and GNOME Keyring's daemon on it (the freedesktop Secret
//! Service), both in a directory of their own and killed when dropped.
//!
//! They come from the machine (Debian: `apt install dbus-daemon
//! gnome-keyring`; `.ci/run` installs them when missing). Without them a
//! test fails, saying so.

use crate::server::{Process, wait_until};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The name the Secret Service takes on the bus.
const SECRETS: &str = "org.freedesktop.secrets";

/// A session bus with a Secret Service on it.
pub struct SessionKeyring {
    // Dropped in this order: the keyring, then its bus.
    _keyring: Process,
    _bus: Process,
    address: String,
    dir: tempfile::TempDir,
}

impl SessionKeyring {
    /// Starts one whose default collection ("login") is made and unlocked
    /// with a password, as a desktop login does.
    pub fn unlocked() -> SessionKeyring {
        SessionKeyring::start(true)
    }

    /// Starts one with no default collection made (nobody logged in to
    /// unlock one), which a host may not use without raising a prompt.
    pub fn without_login() -> SessionKeyring {
        SessionKeyring::start(false)
    }

    fn start(unlocked: bool) -> SessionKeyring {
        let dir = tempfile::tempdir().expect("a directory for the keyring");
        let socket = dir.path().join("bus");
        let address = format!("unix:path={}", socket.display());
        let bus = Process::start(
            Command::new("dbus-daemon").args(["--session", "--nofork", "--nopidfile", "--address", &address]),
            "dbus-daemon",
        );
        wait_until("dbus-daemon made its socket", Duration::from_secs(10), Duration::from_millis(10), || {
            socket.exists()
        });
        let mut daemon = Command::new("gnome-keyring-daemon");
        daemon.args(["--foreground", "--components=secrets"]);
        if unlocked {
            daemon.arg("--unlock");
        }
        Self::environment(&mut daemon, dir.path(), &address);
        let keyring = Process::start_with_input(&mut daemon, "gnome-keyring", b"test-login-password");
        let keyring = SessionKeyring { _keyring: keyring, _bus: bus, address, dir };
        wait_until(
            "gnome-keyring-daemon took org.freedesktop.secrets on its bus",
            Duration::from_secs(20),
            Duration::from_millis(20),
            || keyring.serving(),
        );
        keyring
    }

    fn environment(cmd: &mut Command, dir: &Path, address: &str) {
        cmd.env("DBUS_SESSION_BUS_ADDRESS", address)
            .env("HOME", dir)
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_RUNTIME_DIR", dir)
            .env("XDG_CONFIG_HOME", dir.join("config"));
    }

    /// Whether the Secret Service has its name on the bus.
    fn serving(&self) -> bool {
        let out = Command::new("dbus-send")
            .args(["--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus"])
            .args(["org.freedesktop.DBus.NameHasOwner", &format!("string:{SECRETS}")])
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .output()
            .expect("dbus-send (Debian: apt install dbus-bin)");
        String::from_utf8_lossy(&out.stdout).contains("boolean true")
    }

    /// Points `cmd` at this bus, its keyring used as `toolhost` finds one
    /// (`TOOLHOST_SECRET_STORE` left to its default).
    pub fn apply<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        cmd.env("DBUS_SESSION_BUS_ADDRESS", &self.address).env_remove("TOOLHOST_SECRET_STORE")
    }

    /// `secret-tool`'s (libsecret's own client's) `ARGS…` on this keyring:
    /// what it printed, or why it failed.
    pub fn secret_tool(&self, args: &[&str]) -> Result<String, String> {
        let mut cmd = Command::new("secret-tool");
        Self::environment(&mut cmd, self.dir.path(), &self.address);
        let out = cmd.args(args).output().expect("secret-tool (Debian: apt install libsecret-tools)");
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }
}
