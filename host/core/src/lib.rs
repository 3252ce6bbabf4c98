//! toolhost: a WebAssembly plugin host for AI-agent tools.
//!
//! Every tool is a component implementing the WIT contract in `wit/`; the host
//! owns the registry, the per-call pipeline, the permission policy, the
//! sandbox and the scheduler. This crate knows no front: the command line and
//! the MCP server are the `toolhost-cli` and `toolhost-mcp` crates.
//!
//! ```no_run
//! use toolhost::{CallOptions, Host, ToolUse};
//!
//! let host = Host::builder().workspace("/path/to/project").build()?;
//! let session = host.ephemeral_session();
//! let result = host.call(
//!     &session,
//!     &ToolUse { id: "toolu_1".into(), name: "Read".into(), input: serde_json::json!({"file_path": "/path/to/project/README.md"}) },
//!     &CallOptions::default(),
//! );
//! println!("{}", result.text());
//! # Ok::<(), toolhost::HostError>(())
//! ```
//!
//! Modules, dependencies one way: [`fsx`], [`shell`], [`session`] and
//! [`process`] at the bottom; [`contract`] (the WIT contract's host side) on
//! them; [`sandbox`] (engine, stores, limits) on the contract; [`registry`]
//! (loading, the pool) on the sandbox; [`policy`] (rules, settings, hooks,
//! the decision) on the registry; [`pipeline`] (one call) on all of them;
//! the [`Host`]; the [`scheduler`] (many calls) on the host.

pub mod contract;
pub mod fsx;
#[doc(hidden)]
pub mod fuzzing;
pub mod grants;
mod host;
pub mod pipeline;
pub mod policy;
pub mod process;
pub mod registry;
pub mod sandbox;
pub mod scheduler;
pub mod session;
pub mod shell;

pub use contract::{Progress, ProgressSink};
pub use fsx::{default_cache_dir, default_data_dir, default_plugins_dir};
pub use grants::{Allowance, FileAccess, Grants};
pub use host::{DEFAULT_INSTANCES, DEFAULT_MEMORY, DEFAULT_TIMEOUT, GrantsSource, Host, HostBuilder, HostError};
pub use pipeline::{CLASSIFY_TIMEOUT, CallOptions, Content, ToolResult, ToolUse, Usage};
pub use policy::settings::{Settings, Sources};
pub use policy::{Answer, Approver, AskRequest, PermissionMode};
pub use process::Confinement;
pub use registry::{Hints, LoadError, LoadedTool, Origin, ToolSpec, ToolsChanged};
pub use sandbox::Allocator;
pub use scheduler::{Executor, Update};
pub use session::Session;

/// The Rust examples of the README and of `docs/`, compiled as doctests so
/// they stay true: one item per markdown file that holds any.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExamples;

#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
struct DocsLibrary;

#[cfg(doctest)]
#[doc = include_str!("../../../docs/sandbox.md")]
struct DocsSandbox;

#[cfg(doctest)]
#[doc = include_str!("../../../docs/writing-tools.md")]
struct DocsWritingTools;
