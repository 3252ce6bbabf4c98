//! The contract's host side: the WIT bindings of the newest contract and of
//! each older released one (`since_v1_0_0`), the versions this host loads and
//! the version-independent view of a tool's exports ([`Guest`], generated in
//! `versions`), what a component is ([`Shape`]: its contract version
//! and the capabilities it imports), and the host interfaces, one file each
//! (`progress`, `output`, `session`, `policy`, `files`, `search`, `shell`, `process`),
//! all working on the [`CallScope`] of the call a Store serves.

pub(crate) mod bindings;
mod files;
#[macro_use]
mod frozen;
mod output;
mod policy;
mod process;
mod progress;
pub(crate) mod requests;
pub(crate) mod scan;
mod scope;
mod search;
mod session;
mod shape;
mod shell;
mod since_v1_0_0;
mod versions;

pub(crate) use output::MAX_STREAMED;
pub(crate) use policy::CallRules;
pub use progress::{Progress, ProgressSink};
pub use requests::{RequestsError, stamp as stamp_requests};
pub use scan::Missing as MissingImport;
pub(crate) use scope::{CallScope, CallView};
pub(crate) use session::Namespace;
pub use shape::{Capability, Version};
pub use shape::{Shape, ShapeError};
pub(crate) use shape::{check_header, inspect};
pub(crate) use versions::{Guest, ToolPre};

/// The newest contract version this host implements (the package version of
/// `wit/tool.wit`).
pub const CONTRACT: Version = Version(1, 5, 0);
/// The newest released contract version. While [`CONTRACT`] is newer, it is
/// unreleased: only development builds load third-party components built
/// against it (`wit/CHANGELOG.md`).
pub const RELEASED: Version = Version(1, 5, 0);
/// The contract's package, without version.
pub(crate) const PACKAGE: &str = "toolhost:tool";

/// Adds the toolhost host interfaces to `linker`; `view` gives each call the
/// scope of the Store it runs in.
pub(crate) fn add_to_linker<T: 'static>(
    linker: &mut wasmtime::component::Linker<T>,
    view: fn(&mut T) -> CallView<'_>,
) -> wasmtime::Result<()> {
    bindings::Full::add_to_linker::<T, HasCall>(linker, view)
}

/// The [`wasmtime::component::HasData`] of the toolhost interfaces.
struct HasCall;

impl wasmtime::component::HasData for HasCall {
    type Data<'a> = CallView<'a>;
}

impl bindings::toolhost::tool::types::Host for CallView<'_> {}
