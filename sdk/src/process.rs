//! Starting processes, through the host's process capability.
//!
//! Only components granted the capability can use it (the built-in Bash
//! tools are); the host checks every start against the grant, the call's
//! approval (a call approved as read-only can start only commands the host
//! classifies as read-only), the working directories and its environment
//! rules, and kills each process group at its timeout, on cancellation, and
//! when the [`Child`] is dropped.

pub use crate::bindings::toolhost::tool::process::{
    BackgroundOutput, Child, Chunk, ExitStatus, Finished, ProcessError, Program, SpawnOptions, StreamKind,
    kill_background, read_background, spawn, start_background,
};

/// A sentence for the model about why the host refused or failed.
pub fn describe(e: &ProcessError) -> String {
    match e {
        ProcessError::NotPermitted(m) => format!("not permitted: {m}"),
        ProcessError::BadDirectory(m) => format!("bad working directory: {m}"),
        ProcessError::SpawnFailed(m) => format!("could not start the command: {m}"),
        ProcessError::UnknownId(m) => m.clone(),
    }
}
