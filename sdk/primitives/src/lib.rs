//! The decisions toolhost's sandbox promise rests on, written once: which
//! host a name is and which domain it falls under ([`host`]), and ids no one
//! can guess ([`id`], with the `ids` feature). The host's grants and rules,
//! its MCP front and the SDK's tools (WebFetch) all decide with these, so a
//! rule, a grant and a fetch can never read one host two ways.
//!
//! A crate of its own because its users sit on both sides of the contract:
//! the SDK builds for `wasm32-wasip2` and must not pull in the host, and the
//! host must not depend on the guests' SDK (as `toolhost-hidden-paths`).

pub mod host;
#[cfg(feature = "ids")]
pub mod id;
