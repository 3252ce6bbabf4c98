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
//! # What is public
//!
//! The facade below: building a [`Host`] and calling it ([`Host::call`],
//! [`Executor`] for many calls at once), what a call takes and gives
//! ([`ToolUse`], [`CallOptions`], [`ToolResult`]), sessions, the permission
//! types a front needs to ask the user ([`Approver`]), settings and trust
//! ([`settings`]), grants ([`grants`]), and the tool descriptions a front
//! lists ([`LoadedTool`], [`ToolSpec`]). Everything else is the crate's own.
//! How the modules inside depend on each other (one way, checked by a test):
//! `docs/architecture.md`.

#![warn(missing_docs)]
#![warn(unreachable_pub)]

mod artifacts;
mod config;
mod contract;
mod epoch;
mod fsx;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod grants;
mod host;
mod imports;
mod metrics;
mod pipeline;
mod policy;
mod process;
mod quotas;
mod registry;
mod sandbox;
mod scheduler;
pub mod secrets;
mod session;
mod shell;

pub use config::rule::Behavior;
pub use config::{Settings, Sources};
pub use contract::{
    CONTRACT, Capability, Form, MissingImport, RELEASED, RequestsError, Shape, ShapeError, Version, stamp_requests,
};
pub use fsx::{config_dir, default_cache_dir, default_data_dir, default_plugins_dir, replace_file};
pub use grants::{Allowance, CallLimits, FileAccess, Grants};
pub use host::{
    DEFAULT_INSTANCES, DEFAULT_MEMORY, DEFAULT_TIMEOUT, GrantsSource, Host, HostBuilder, HostError, WeakHost,
};
pub use host::{MAX_SCRIPT_CALLS, run_batch};
pub use imports::{Progress, ProgressSink};
pub use metrics::{UNKNOWN_TOOL, count_dropped_spans};
pub use pipeline::{CLASSIFY_TIMEOUT, CallOptions, Content, ToolResult, ToolUse, Usage};
pub use policy::{Answer, Approver, AskRequest, PermissionMode};
pub use process::{ConfinedProgram, Confinement, child_environment, confine_program};
pub use quotas::{Quota, QuotaKind, Refusal};
/// A WASI command's manifest (`NAME.tool.yaml`): its tool's name and description.
pub use registry::manifest;
pub use registry::{
    CompileProgress, Hints, InputRoles, LoadError, LoadedTool, Origin, PathAccess, PathField, Role, ToolSpec,
    ToolsChanged, content_hash, portability_problems, prepare_schema_checks,
};
pub use sandbox::Allocator;
pub use scheduler::{
    CallHandle, CallSetup, Calls, Config as SchedulerConfig, DEFAULT_MAX_CONCURRENCY, Executor, TimedOut, Update,
};
pub use session::{
    Changes, Entries, FileStore, MemoryStore, SESSIONS, Session, SessionError, StateStore, remove_temporaries,
    unguessable_id, valid_namespace,
};

/// Settings files and trust: where settings come from, what they say, and
/// which workspace files the user trusted.
pub mod settings {
    pub use crate::config::hooks::{HookConfigError, HookProblem, HooksConfig};
    pub use crate::config::rule::{ContentError, RuleError};
    pub use crate::config::servers::{ConfiguredServer, McpServer};
    pub use crate::config::{Settings, SettingsError, Sources, TrustStore, TrustedSigner, load, powers};
    pub use crate::policy::PolicyError;
}

/// Tools other programs serve (MCP servers'): what a front supplies for the
/// host to offer them ([`HostBuilder::remote_tools`]), and how a server's
/// tool description becomes a tool of the pool.
pub mod remote {
    pub use crate::pipeline::remote::from_call_result;
    pub use crate::registry::{
        MAX_REMOTE_DESCRIPTION, MAX_REMOTE_TOOLS, Remote, RemoteCall, RemoteCaller, RemoteSource, RemoteTool,
        RemoteToolError, describe, make_portable, normalize_name, remote_name, server_of,
    };
}

/// The machinery the benchmarks and fuzz targets drive directly. Not part
/// of the API: it changes with the code.
#[doc(hidden)]
pub mod internals {
    pub use crate::config::hooks::HookEvent;
    pub use crate::config::rule::{Rule, RuleEntry};
    pub use crate::contract::requests::read as read_requests;
    pub use crate::contract::scan::{check as check_outline, outline};
    pub use crate::policy::hooks::{HookDecision, outcome_of_exits};
    pub use crate::policy::rules::{Catalog, ContentKind, Places, RuleSet, Subject};
    pub use crate::policy::{Decision, Facts, ToolCheck, decide};
    pub use crate::registry::declarations::{MAX_DECLARATION, declaration_of};
    pub use crate::registry::{Schema, SchemaError};
    pub use crate::sandbox::network::Network;
    pub use crate::shell::{
        MAX_COMMAND, Operator, Parsed, cache_in, classify, classify_parsed, command_read_only, parse, parse_fresh,
    };
}

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

#[cfg(test)]
mod layering {
    /// The core's modules, bottom first: each may use only those before it
    /// (its tests may use any). `docs/architecture.md` draws the same order.
    const LAYERS: &[&str] = &[
        "fsx",
        "artifacts",
        "epoch",
        "grants",
        "shell",
        "session",
        "quotas",
        "process",
        "contract",
        "imports",
        "sandbox",
        "registry",
        "config",
        "policy",
        "pipeline",
        "scheduler",
        "host",
    ];

    #[test]
    fn modules_depend_only_on_the_layers_below() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut against = Vec::new();
        for (rank, module) in LAYERS.iter().enumerate() {
            let mut files = vec![src.join(format!("{module}.rs"))];
            let mut dirs = vec![src.join(module)];
            while let Some(dir) = dirs.pop() {
                for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                    let path = entry.path();
                    if path.is_dir() {
                        dirs.push(path);
                    } else if path.extension().is_some_and(|e| e == "rs") {
                        files.push(path);
                    }
                }
            }
            for file in files.iter().filter(|f| f.exists()) {
                let text = std::fs::read_to_string(file).unwrap();
                // A file's test module is its last item.
                let code = text.split("#[cfg(test)]\nmod ").next().unwrap_or_default();
                for above in &LAYERS[rank + 1..] {
                    if code.contains(&format!("crate::{above}::")) || code.contains(&format!("crate::{above};")) {
                        against.push(format!("{} uses {above}", file.display()));
                    }
                }
            }
        }
        assert!(against.is_empty(), "dependencies against the layering:\n{}", against.join("\n"));
    }
}
