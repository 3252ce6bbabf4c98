//! The host side of each toolhost interface a tool imports, one file each:
//! `progress`, `output`, `session`, `policy`, `files`, `search`, `shell`,
//! `process`. Each works on the [`CallScope`] of the call the Store serves
//! (`scope`): the call's identity, directories, session, rules and limits.

mod files;
mod output;
mod policy;
mod process;
mod progress;
mod scope;
mod script;
mod search;
mod session;
mod shell;

pub(crate) use output::MAX_STREAMED;
pub(crate) use policy::CallRules;
pub use progress::{Progress, ProgressSink};
pub(crate) use scope::{CallScope, CallView};
pub(crate) use script::{Finished, InnerCalls, ScriptCalls, Waited};
pub(crate) use session::Namespace;

use crate::contract::bindings;

/// Adds the toolhost host interfaces to `linker`; `view` gives each call the
/// scope of the Store it runs in.
pub(crate) fn add_to_linker<T: 'static>(
    linker: &mut wasmtime::component::Linker<T>,
    view: fn(&mut T) -> CallView<'_>,
) -> wasmtime::Result<()> {
    bindings::Full::add_to_linker::<T, HasCall>(linker, view)?;
    script::add_to_linker(linker, view)
}

/// The [`wasmtime::component::HasData`] of the toolhost interfaces.
struct HasCall;

impl wasmtime::component::HasData for HasCall {
    type Data<'a> = CallView<'a>;
}

impl bindings::toolhost::tool::types::Host for CallView<'_> {}
