//! The contract's host side: the WIT bindings of the newest contract and of
//! each older released one (`since_v1_0_0`), the versions this host loads and
//! the version-independent view of a tool's exports ([`Guest`], generated in
//! `versions`), what a component is ([`Shape`]: its contract version and the
//! capabilities it imports; `scan`, before compiling), and what it requests
//! (`requests`). The host side of each import is `crate::imports`.

pub(crate) mod bindings;
#[macro_use]
mod frozen;
pub(crate) mod plain;
pub(crate) mod requests;
pub(crate) mod scan;
mod shape;
mod since_v1_0_0;
mod versions;

pub use requests::{RequestsError, stamp as stamp_requests};
pub use scan::Missing as MissingImport;
pub use shape::{Capability, Form, Version};
pub use shape::{Shape, ShapeError};
pub(crate) use shape::{check_header, inspect, inspect_plain};
pub(crate) use versions::{Bounds, Guest, ToolPre, Wait};

/// The newest contract version this host implements (the package version of
/// `wit/tool.wit`).
pub const CONTRACT: Version = Version(1, 6, 0);
/// The newest released contract version. While [`CONTRACT`] is newer, it is
/// unreleased: only development builds load third-party components built
/// against it (`wit/CHANGELOG.md`).
pub const RELEASED: Version = Version(1, 6, 0);
/// The contract's package, without version.
pub(crate) const PACKAGE: &str = "toolhost:tool";
