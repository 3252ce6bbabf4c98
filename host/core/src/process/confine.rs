//! Confining the processes the process capability starts (Linux).
//!
//! - **Filesystem** (Landlock): the child may read and execute anything, and
//!   write only inside the working directories, its private temporary
//!   directory, and `/dev/null`.
//! - **Network** (a fresh network namespace): the child has no network at all,
//!   not even loopback, unless the tool is granted network access.
//!
//! Both are applied between `fork` and `exec`, with the Landlock ruleset built
//! in the parent (the child only makes async-signal-safe system calls). When
//! the kernel lacks a mechanism, [`Confinement::Required`] refuses to start the
//! process; [`Confinement::BestEffort`] starts it without that confinement, logs a
//! warning, and reports what was missing.

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// What to do when the kernel cannot confine a child.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Confinement {
    /// Refuse to start the process.
    #[default]
    Required,
    /// Start it without the missing confinement, with a warning.
    BestEffort,
}

impl std::str::FromStr for Confinement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "required" => Ok(Confinement::Required),
            "best-effort" => Ok(Confinement::BestEffort),
            other => Err(format!("unknown confinement mode `{other}` (expected required or best-effort)")),
        }
    }
}

/// What a child may reach.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// Directories the child may write (and everything below them).
    pub writable: Vec<PathBuf>,
    /// Whether the child keeps the host's network.
    pub network: bool,
    pub mode: Confinement,
}

/// A command made ready to start confined.
pub(crate) struct Confined {
    /// Confinement that could not be applied (best-effort mode only), for
    /// the result and the log.
    pub missing: Vec<String>,
    /// The Landlock ruleset: must stay open until the command has started.
    _ruleset: Option<OwnedFd>,
}

/// The newest Landlock ABI toolhost asks for; older kernels get what they
/// support (best effort inside Landlock), and the ruleset reports if none.
const WANTED: ABI = ABI::V6;

/// Arranges for `cmd` to start confined according to `plan`. Keep the result
/// alive until the command is spawned. Fails when the plan requires what the
/// kernel cannot do.
pub(crate) fn apply(cmd: &mut Command, plan: &Plan) -> Result<Confined, String> {
    let mut missing = Vec::new();
    let ruleset = match landlock_ruleset(&plan.writable) {
        Ok(fd) => Some(fd),
        Err(why) => {
            missing.push(format!("filesystem confinement (Landlock): {why}"));
            None
        }
    };
    let isolate_network = !plan.network;
    if isolate_network && let Err(why) = network_namespace_available() {
        missing.push(format!("network isolation: {why}"));
    }
    if !missing.is_empty() {
        match plan.mode {
            Confinement::Required => {
                return Err(format!(
                    "the host cannot confine the command ({}); it was not started. An operator can allow \
                     unconfined commands with `--child-confinement best-effort`.",
                    missing.join("; ")
                ));
            }
            Confinement::BestEffort => {
                tracing::warn!(missing = %missing.join("; "), "running a command without full confinement")
            }
        }
    }
    let netns = isolate_network && missing.iter().all(|m| !m.starts_with("network"));
    let shared_netns = if netns { shared_network_namespace() } else { None };
    let maps = IdMaps::new();
    let ruleset_fd = ruleset.as_ref().map(AsRawFd::as_raw_fd);
    // SAFETY: the closure runs in the child between fork and exec and only
    // makes system calls (unshare, open, write, close, prctl, landlock); every
    // buffer it uses was allocated before the fork.
    unsafe {
        cmd.pre_exec(move || {
            match shared_netns {
                Some(fd) if libc::setns(fd, libc::CLONE_NEWNET) == 0 => {}
                _ if netns => enter_network_namespace(&maps)?,
                _ => {}
            }
            if let Some(fd) = ruleset_fd {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    Ok(Confined { missing, _ruleset: ruleset })
}

/// A program made ready to start confined; keep it until the program has
/// started.
pub struct ConfinedProgram(#[allow(dead_code)] Confined);

impl ConfinedProgram {
    /// Confinement that could not be applied (best-effort mode only).
    pub fn missing(&self) -> &[String] {
        &self.0.missing
    }
}

/// Arranges for `cmd` to start confined as Bash's children are: it may read
/// and execute anything, write only below `writable`, and reach the network
/// only when `network`. For programs the host starts besides the process
/// capability (an MCP server). Fails when `mode` requires what the kernel
/// cannot do.
pub fn confine_program(
    cmd: &mut Command,
    writable: Vec<PathBuf>,
    network: bool,
    mode: Confinement,
) -> Result<ConfinedProgram, String> {
    apply(cmd, &Plan { writable, network, mode }).map(ConfinedProgram)
}

fn landlock_ruleset(writable: &[PathBuf]) -> Result<OwnedFd, String> {
    let err = |e: landlock::RulesetError| e.to_string();
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(WANTED))
        .map_err(err)?
        .create()
        .map_err(err)?
        .add_rule(PathBeneath::new(PathFd::new("/").map_err(|e| e.to_string())?, AccessFs::from_read(WANTED)))
        .map_err(err)?;
    for dir in writable {
        let fd = PathFd::new(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        ruleset = ruleset.add_rule(PathBeneath::new(fd, AccessFs::from_all(WANTED))).map_err(err)?;
    }
    for device in ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"] {
        if let Ok(fd) = PathFd::new(device) {
            ruleset = ruleset.add_rule(PathBeneath::new(fd, AccessFs::from_file(WANTED))).map_err(err)?;
        }
    }
    let fd: Option<OwnedFd> = ruleset.into();
    fd.ok_or_else(|| "the kernel does not support Landlock".to_string())
}

/// Whether this process can give its children a network namespace: probed
/// once, by starting `true` in one.
fn network_namespace_available() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            let maps = IdMaps::new();
            let mut probe = Command::new("true");
            probe
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            // SAFETY: as in `apply`: system calls only, buffers made before fork.
            unsafe {
                probe.pre_exec(move || enter_network_namespace(&maps));
            }
            match probe.status() {
                Ok(s) if s.success() => Ok(()),
                Ok(s) => Err(format!("the probe exited with {s}")),
                Err(e) => Err(format!("unshare failed: {e}")),
            }
        })
        .clone()
}

/// An empty network namespace made once per host process, which children
/// join instead of each creating their own: creating and tearing down a
/// namespace is most of the cost of starting a short command. Its loopback
/// is down, so it reaches nothing; children of this host share only its
/// (unix abstract socket) namespace, as they share the working directories.
/// Made only where this process may create a network namespace itself (as
/// root); otherwise every child makes its own inside a user namespace.
fn shared_network_namespace() -> Option<std::os::fd::RawFd> {
    static SHARED: OnceLock<Option<OwnedFd>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            std::thread::spawn(|| {
                // SAFETY: unshare moves only this thread, which ends here,
                // into a new network namespace; the file keeps it alive.
                if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                    return None;
                }
                std::fs::File::open("/proc/thread-self/ns/net").ok().map(OwnedFd::from)
            })
            .join()
            .ok()
            .flatten()
        })
        .as_ref()
        .map(AsRawFd::as_raw_fd)
}

/// The uid/gid maps written when an unprivileged user needs a user namespace
/// to get a network namespace (the ids map to themselves).
#[derive(Clone)]
struct IdMaps {
    uid_map: CString,
    gid_map: CString,
}

impl IdMaps {
    fn new() -> IdMaps {
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        IdMaps {
            uid_map: CString::new(format!("{uid} {uid} 1")).unwrap_or_default(),
            gid_map: CString::new(format!("{gid} {gid} 1")).unwrap_or_default(),
        }
    }
}

/// In the child: a new network namespace; as a non-root user, inside a new
/// user namespace that maps the user to itself.
fn enter_network_namespace(maps: &IdMaps) -> std::io::Result<()> {
    // SAFETY: plain system calls on buffers owned by `maps`.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNET) == 0 {
            return Ok(());
        }
        if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        write_proc(c"/proc/self/setgroups", c"deny")?;
        write_proc(c"/proc/self/uid_map", &maps.uid_map)?;
        write_proc(c"/proc/self/gid_map", &maps.gid_map)?;
    }
    Ok(())
}

/// Writes `data` to `path` with raw system calls.
unsafe fn write_proc(path: &std::ffi::CStr, data: &std::ffi::CStr) -> std::io::Result<()> {
    // SAFETY: the caller passes NUL-terminated strings that outlive the calls.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let bytes = data.to_bytes();
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        if n < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
    }
}

/// A private temporary directory for a session's commands.
pub(crate) fn temp_dir(session_dir: &Path) -> std::io::Result<PathBuf> {
    let dir = session_dir.join("tmp");
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The namespace a confined `readlink` reports for itself.
    fn child_netns() -> Option<String> {
        let mut cmd = Command::new("readlink");
        cmd.arg("/proc/self/ns/net");
        let plan = Plan { writable: Vec::new(), network: false, mode: Confinement::Required };
        let _confined = apply(&mut cmd, &plan).ok()?;
        let out = cmd.output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    #[test]
    fn children_share_one_empty_network_namespace_not_the_hosts() {
        let Some(first) = child_netns() else { return }; // no namespaces here
        let ours = std::fs::read_link("/proc/self/ns/net").unwrap().display().to_string();
        assert_ne!(first, ours, "the child left the host's network namespace");
        if shared_network_namespace().is_some() {
            assert_eq!(child_netns().unwrap(), first, "children join the one namespace");
        }
    }
}
