//! The decisions toolhost's sandbox promise rests on, written once: where a
//! path is and whether it is inside the directories a tool may reach, as
//! written and as resolved ([`path`]); which host a name is and which
//! domain it falls under ([`host`]); and ids no one can guess ([`id`], with
//! the `ids` feature). The host's grants and rules,
//! its pipeline, its search, its MCP front and the SDK's tools all decide
//! with these, so a rule, a grant, a file tool and a fetch can never read
//! one path or one host two ways.
//!
//! A crate of its own because its users sit on both sides of the contract:
//! the SDK builds for `wasm32-wasip2` and must not pull in the host, and the
//! host must not depend on the guests' SDK (as `toolhost-hidden-paths`).

pub mod host;
#[cfg(feature = "ids")]
pub mod id;
pub mod path;
