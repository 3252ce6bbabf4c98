//! toolhost: a WebAssembly plugin host for AI-agent tools.
//!
//! Every tool is a component implementing the WIT contract in `wit/`; the host
//! owns the registry, the per-call pipeline, permissions and the sandbox.
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
//! Modules, one way: [`registry`] (what exists) ← pool order; the pipeline
//! (one call) uses the registry, [`permissions`] and the sandbox.

mod bindings;
mod builtins;
mod cache;
pub mod confine;
pub mod contract;
pub mod engine;
pub mod front;
pub mod hooks;
mod host;
pub mod mcp;
pub mod permissions;
mod pipeline;
pub mod policy;
pub mod process;
pub mod registry;
mod result;
pub mod rules;
mod sandbox;
pub mod scheduler;
mod schema;
pub mod session;
pub mod settings;
pub mod shell;
mod state;
mod tool;

pub use engine::Allocator;
pub use host::{
    DEFAULT_INSTANCES, DEFAULT_MEMORY, DEFAULT_TIMEOUT, Host, HostBuilder, HostError, default_cache_dir,
    default_data_dir, default_plugins_dir,
};
pub use permissions::{Answer, Approver, AskRequest, PermissionMode};
pub use pipeline::{CLASSIFY_TIMEOUT, CallOptions, ToolUse};
pub use result::{Content, ToolResult};
pub use sandbox::{FileAccess, Grants};
pub use scheduler::{Executor, Update};
pub use session::Session;
pub use settings::{Settings, Sources};
pub use state::{Progress, ProgressSink};
pub use tool::{Hints, LoadError, LoadedTool, Origin, ToolSpec};
