//! Processes: the one child-process runner ([`Child`]) that hooks and the
//! process capability share, and the process capability itself — the host
//! starts processes for components granted it, and polices every start.
//!
//! What the host enforces, whatever the component does:
//! - only components granted the capability can start anything, and only
//!   during `call` (not while validating or checking permissions);
//! - a call approved only because it was read-only can start only commands
//!   the host itself classifies as read-only ([`crate::shell`]);
//! - the permission rules are checked again on every command started
//!   ([`CommandRules`]), so a deny rule holds whatever approved the call;
//! - the working directory lies inside the working directories;
//! - the environment is an allow-list of the host's, plus variables the tool
//!   sets that cannot change what programs load;
//! - each process runs in its own process group, killed whole at its
//!   timeout, at the call's deadline, on cancellation, and when the component
//!   drops it (background processes: when their session or the host ends);
//! - output is read through bounded buffers, so a flood of output blocks the
//!   child instead of growing the host's memory;
//! - children are confined ([`confine`]): Landlock for the filesystem, a
//!   network namespace of their own.

mod background;
pub(crate) mod confine;
mod runner;
mod spawn;

pub(crate) use background::{BackgroundRegistry, instance_key, output_key};
pub use confine::{ConfinedProgram, Confinement, confine_program};
pub(crate) use runner::{Child, Status, Stream};
pub use spawn::child_environment;
pub(crate) use spawn::{Approval, CommandRules, CommandVerdict, Permit, ProcessError, Program, Spawn};
// Public only for the bindings (`wasmtime::component::bindgen!` re-exports it); the module is private.
#[allow(unreachable_pub)]
pub use spawn::Foreground;

/// What the tests of the process capability share.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::{Approval, Confinement, Permit, Program, Spawn};
    use crate::fsx::Dirs;
    use std::time::Duration;

    /// A fresh directory as the only working directory.
    pub(crate) fn dirs() -> (tempfile::TempDir, Dirs) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        (t, Dirs { cwd: root.clone(), working: vec![root], read_only: vec![] })
    }

    /// A granted call with `approval`, no rules, confinement required.
    pub(crate) fn permit(dirs: &Dirs, approval: Approval) -> Permit<'_> {
        Permit {
            granted: true,
            approval,
            dirs,
            session_dir: dirs.cwd.parent().expect("a temp dir has a parent"),
            network: false,
            confinement: Confinement::Required,
            rules: None,
        }
    }

    /// `bash -c cmd` with a 10 s timeout.
    pub(crate) fn shell(cmd: &str) -> Spawn {
        Spawn {
            program: Program::Shell(cmd.into()),
            cwd: None,
            env: vec![],
            stdin: None,
            timeout: Duration::from_secs(10),
        }
    }
}
