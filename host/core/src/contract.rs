//! The contract's host side: the WIT bindings of the current contract and of
//! each frozen one (`v1_0_0` to `v1_3_0`; 1.4.0 differs from today's only by an
//! import, so its exports are served by today's bindings), the version-independent view of a tool's
//! exports ([`Guest`]), what a component is ([`Shape`]: its contract version
//! and the capabilities it imports), and the host interfaces, one file each
//! (`progress`, `output`, `session`, `policy`, `files`, `search`, `shell`, `process`),
//! all working on the [`CallScope`] of the call a Store serves.

pub(crate) mod bindings;
mod files;
#[macro_use]
mod frozen;
mod guest;
mod output;
mod policy;
mod process;
mod progress;
pub mod requests;
pub mod scan;
mod scope;
mod search;
mod session;
mod shape;
mod shell;
mod v1_0_0;
mod v1_1_0;
mod v1_2_0;
mod v1_3_0;

pub use guest::{Guest, ToolPre};
pub use output::MAX_STREAMED;
pub use policy::CallRules;
pub use progress::{Progress, ProgressSink};
pub use requests::{DirAccess, DirRequest, HostName, HostPattern, Requests, RequestsError, stamp as stamp_requests};
pub use scope::{CallScope, CallView};
pub use session::Namespace;
pub use shape::{Capability, Shape, ShapeError, Version, check_header, inspect};

/// The contract version this host implements (the package version in `wit/`).
pub const CONTRACT: Version = Version(1, 5, 0);
/// The contract's package, without version.
pub const PACKAGE: &str = "toolhost:tool";

/// Adds the toolhost host interfaces to `linker`; `view` gives each call the
/// scope of the Store it runs in.
pub fn add_to_linker<T: 'static>(
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
