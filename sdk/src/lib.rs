//! Write [toolhost](https://github.com/toolhost/toolhost) tools in Rust.
//!
//! A tool is a type implementing [`Tool`]. Its input is a serde type whose JSON
//! Schema is generated with [`schemars`]; every method other than
//! [`Tool::call`] has a fail-closed default (not concurrency-safe, not read-only,
//! not destructive, enabled, permission `passthrough`). One macro,
//! [`export_tool!`], turns the type into the component's exports. Build the crate
//! as a `cdylib` for `wasm32-wasip2` and the result is a component the host loads.
//!
//! ```no_run
//! use toolhost_sdk::{Context, JsonSchema, Deserialize, Output, Tool, ToolError, export_tool};
//!
//! /// Input of the `Hello` tool.
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct HelloInput {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! struct Hello;
//!
//! impl Tool for Hello {
//!     type Input = HelloInput;
//!     const NAME: &'static str = "Hello";
//!     const DESCRIPTION: &'static str = "Greets someone.";
//!
//!     // A pure function of its input: safe to run alongside anything.
//!     fn is_read_only(_: &HelloInput) -> bool { true }
//!     fn is_concurrency_safe(_: &HelloInput) -> bool { true }
//!
//!     fn call(input: HelloInput, ctx: &Context) -> Result<Output, ToolError> {
//!         ctx.progress("greeting");
//!         let count = ctx.session().get("greetings").and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
//!         ctx.session().set("greetings", &(count + 1).to_string())?;
//!         Ok(Output::text(format!("Hello, {}! (greeting #{})", input.name, count + 1)))
//!     }
//! }
//!
//! export_tool!(Hello);
//! ```
//!
//! A tool whose checks and call wait on things (WASI 0.3's clocks, sockets,
//! file streams) implements [`AsyncTool`] instead, with `async fn`s, and is
//! exported with [`export_async_tool!`]: the component then exports the
//! contract's `async-tool` interface.
//!
//! # What the input means to the host
//!
//! The host's permission policy reads the fields a tool declares, never its
//! name: [`Tool::PATH_FIELDS`] (paths it reads, searches or edits: matched by
//! `Read(…)`/`Edit(…)` rules and rules naming the tool, confined to the
//! working directories before the call), [`Tool::COMMAND_FIELD`] (a shell
//! command, matched by `MyTool(npm run test:*)` rules), and
//! [`Tool::ADDRESS_FIELDS`] (URLs or hosts, matched by
//! `MyTool(domain:example.com)`). A tool that declares nothing gets whole-tool
//! rules only.
//!
//! # Contract version
//!
//! The contract version ([`CONTRACT_VERSION`]) is part of the names of the
//! interfaces the component exports (`toolhost:tool/tool@1.6.0`): the host reads it
//! before anything else and refuses a component built against another major version.
//! Which versions were released, and what each added: `wit/CHANGELOG.md`.
//!
//! # Security
//!
//! A tool gets no capability it was not granted: files are reachable only inside
//! the directories the host preopens (the working directories for built-in file
//! tools), and a third-party tool cannot grant itself permission, since the host
//! treats its [`Permission::Allow`] as [`Permission::Passthrough`].

pub use schemars::{self, JsonSchema};
pub use serde::{self, Deserialize, Serialize, de::DeserializeOwned};
pub use serde_json;

mod context;
pub mod fs;
mod output;
pub mod process;
pub mod schema;
pub mod search;
pub mod shell;

pub use context::{Context, LogLevel, Mode, OutputStream, Session};
pub use output::{Content, ErrorKind, InterruptBehavior, Output, PathAccess, Permission, ToolError};

/// The version of the WIT contract this SDK builds components against.
pub const CONTRACT_VERSION: &str = "1.6.0";

#[doc(hidden)]
pub mod __private {
    pub use crate::async_bindings;
    pub use crate::async_bindings::export_async_plugin;
    pub use crate::bindings;
    pub use crate::bindings::export_plugin;

    /// Bridges a [`Tool`](crate::Tool) to the generated bindings.
    pub struct Adapter<T>(core::marker::PhantomData<T>);

    /// Bridges an [`AsyncTool`](crate::AsyncTool) to the generated bindings.
    pub struct AsyncAdapter<T>(core::marker::PhantomData<T>);
}

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "full",
        path: "../wit",
        pub_export_macro: true,
        export_macro_name: "export_plugin",
        default_bindings_module: "toolhost_sdk::bindings",
    });
}

/// The `async-tool` export (contract 1.6.0), for [`AsyncTool`]: its
/// imports are those of [`bindings`], so both share every type.
#[doc(hidden)]
pub mod async_bindings {
    wit_bindgen::generate!({
        world: "async-full",
        path: "../wit",
        pub_export_macro: true,
        export_macro_name: "export_async_plugin",
        default_bindings_module: "toolhost_sdk::async_bindings",
        with: {
            "toolhost:tool/types@1.6.0": crate::bindings::toolhost::tool::types,
            "toolhost:tool/progress@1.6.0": crate::bindings::toolhost::tool::progress,
            "toolhost:tool/output@1.6.0": crate::bindings::toolhost::tool::output,
            "toolhost:tool/session@1.6.0": crate::bindings::toolhost::tool::session,
            "toolhost:tool/policy@1.6.0": crate::bindings::toolhost::tool::policy,
            "toolhost:tool/search@1.6.0": crate::bindings::toolhost::tool::search,
            "toolhost:tool/files@1.6.0": crate::bindings::toolhost::tool::files,
            "toolhost:tool/shell@1.6.0": crate::bindings::toolhost::tool::shell,
            "toolhost:tool/process@1.6.0": crate::bindings::toolhost::tool::process,
        },
    });
}

/// Declares what the tool requests from the operator: directories,
/// network hosts, environment variables, memory and time. The JSON goes
/// into the component's `toolhost:requests` custom section, which the host
/// reads without running the tool; the operator grants per tool in the
/// settings (`toolGrants`), and the tool gets what it requested and was
/// granted, nothing more. Use it at most once per crate.
///
/// ```ignore
/// toolhost_sdk::requests!(r#"{
///     "directories": [{"path": "data", "access": "read-only"}],
///     "env": ["GREETING"],
///     "memory_mib": 64,
///     "timeout_ms": 5000
/// }"#);
/// ```
///
/// `workspace` (`read-only` or `read-write`) asks for the working
/// directories, whatever they are; `directories` for fixed ones: `path` is
/// relative to the project (the workspace) unless absolute or starting with
/// `~/`, `access` is `read-only` or `read-write`. `hosts` are `*` (any
/// public host), `*.example.com`, `example.com` or an IP address, each with
/// an optional `:port`; `"process": true` asks for the process capability.
/// The host refuses a component whose requests are not valid JSON of this
/// shape.
#[macro_export]
macro_rules! requests {
    ($json:expr) => {
        const _: () = {
            const JSON: &[u8] = $json.as_bytes();
            #[cfg(target_family = "wasm")]
            #[unsafe(link_section = "toolhost:requests")]
            #[used]
            static REQUESTS: [u8; JSON.len()] = {
                let mut out = [0u8; JSON.len()];
                let mut i = 0;
                while i < JSON.len() {
                    out[i] = JSON[i];
                    i += 1;
                }
                out
            };
        };
    };
}

/// Exports a [`Tool`] as the component's implementation of the contract.
/// Use it once per crate.
#[macro_export]
macro_rules! export_tool {
    ($tool:ty) => {
        // Natively (unit tests, benchmarks of the same code) there is no
        // component to export.
        #[cfg(target_family = "wasm")]
        const _: () = {
            type __ToolhostExport = $crate::__private::Adapter<$tool>;
    $crate::__private::export_plugin!(__ToolhostExport with_types_in $crate::__private::bindings);
        };
    };
}

/// Exports an [`AsyncTool`] as the component's implementation of the
/// contract (its `async-tool` interface). Use it once per crate, instead of
/// [`export_tool!`].
#[macro_export]
macro_rules! export_async_tool {
    ($tool:ty) => {
        #[cfg(target_family = "wasm")]
        const _: () = {
            type __ToolhostExport = $crate::__private::AsyncAdapter<$tool>;
    $crate::__private::export_async_plugin!(__ToolhostExport with_types_in $crate::__private::async_bindings);
        };
    };
}

/// A tool. Implement [`Tool::call`] and whatever else differs from the
/// fail-closed defaults; each method runs in a fresh instance, so tools keep
/// nothing between calls except through [`Context::session`].
pub trait Tool: 'static {
    /// The input, deserialized from the model's JSON. Use
    /// `#[serde(deny_unknown_fields)]` to reject unknown fields (the generated
    /// schema then says `additionalProperties: false`), and doc comments on the
    /// fields: they become the schema's descriptions the model reads.
    type Input: DeserializeOwned + JsonSchema;

    /// The name the model calls the tool by. Unique in the host.
    const NAME: &'static str;
    /// One-line description.
    const DESCRIPTION: &'static str;
    /// Results longer than this are persisted to a file and replaced by a preview
    /// plus the path. `None` means unlimited: use it only for tools that bound
    /// their output themselves.
    const MAX_RESULT_SIZE_CHARS: Option<u64> = Some(100_000);
    /// List the tool by name only until tool search loads it.
    const SHOULD_DEFER: bool = false;
    /// Always list the full schema, even when deferring is on.
    const ALWAYS_LOAD: bool = false;
    /// What a user interrupt does to a running call. Default: `Block` (let it finish).
    const INTERRUPT_BEHAVIOR: InterruptBehavior = InterruptBehavior::Block;
    /// Whether every call only reads, when that is the same for every input
    /// (then [`Tool::is_read_only`] is not asked). Clients see it as a hint
    /// (MCP `readOnlyHint`). Default: `None`, it depends on the input.
    const READ_ONLY_HINT: Option<bool> = None;
    /// Whether every call may destroy data (`Some(true)`) or only adds
    /// (`Some(false)`), when that is the same for every input (then
    /// [`Tool::is_destructive`] is not asked). Clients see it as MCP
    /// `destructiveHint`. Default: `None`, no claim.
    const DESTRUCTIVE_HINT: Option<bool> = None;
    /// Whether every call may run beside other concurrency-safe calls, when
    /// that is the same for every input (then [`Tool::is_concurrency_safe`]
    /// is not asked, and the host starts no instance to classify a call).
    /// Default: `None`, it depends on the input.
    const CONCURRENCY_SAFE_HINT: Option<bool> = None;
    /// Whether [`Tool::validate_input`] checks anything. Set it to `false`
    /// when the tool keeps the default, and the host does not call it.
    /// Default: true.
    const VALIDATES_INPUT: bool = true;
    /// Whether [`Tool::check_permissions`] may answer anything but
    /// [`Permission::Passthrough`]. Set it to `false` when the tool keeps the
    /// default, and the host does not call it. Default: true.
    const CHECKS_PERMISSIONS: bool = true;
    /// Input fields holding paths, and how the tool uses each: the host
    /// then matches `Read(…)`/`Edit(…)` rules and rules naming the tool
    /// (`MyTool(./src/**)`) against them, confines them to the working
    /// directories before the call, and asks before writes to sensitive
    /// paths. A field is a top-level property (`"file_path"`) or a JSON
    /// Pointer (`"/target/path"`); its value a path or a list of paths.
    /// Default: none.
    const PATH_FIELDS: &'static [(&'static str, PathAccess)] = &[];
    /// The input field holding a shell command the tool runs: the host
    /// parses it and matches `MyTool(npm run test:*)` rules against each
    /// simple command. Default: none.
    const COMMAND_FIELD: Option<&'static str> = None;
    /// Input fields holding a URL or a host name the tool connects to:
    /// `MyTool(domain:example.com)` rules match the host. Default: none.
    const ADDRESS_FIELDS: &'static [&'static str] = &[];
    /// Whether a failed call cancels the other calls of the same model turn
    /// running or waiting beside it. Default: false.
    const CANCELS_SIBLINGS_ON_FAILURE: bool = false;

    /// Whether one warm instance may serve several calls of a session, one
    /// after another: only when a call leaves nothing in the instance that
    /// changes what a later call does (keep what must last in
    /// [`Context::session`]). A Rust tool starts in microseconds, so this
    /// matters little here; it matters for interpreters.
    const REUSE_INSTANCE: bool = false;

    /// The full text shown to the model about how to use the tool.
    /// Default: the description.
    fn prompt() -> String {
        Self::DESCRIPTION.to_string()
    }
    /// Other names that resolve to this tool.
    fn aliases() -> Vec<String> {
        Vec::new()
    }
    /// Keywords for tool search.
    fn search_hint() -> Option<String> {
        None
    }
    /// JSON Schema of [`Output::structured`], when the tool produces one.
    fn output_schema() -> Option<String> {
        None
    }
    /// Whether the tool is offered at all. Default: true.
    fn is_enabled() -> bool {
        true
    }
    /// Whether this call may run at the same time as others. Default: false.
    fn is_concurrency_safe(_input: &Self::Input) -> bool {
        false
    }
    /// Whether this call only reads. Default: false.
    fn is_read_only(_input: &Self::Input) -> bool {
        false
    }
    /// Whether this call may destroy data. Default: false.
    fn is_destructive(_input: &Self::Input) -> bool {
        false
    }
    /// Checks beyond the schema; an error goes back to the model. Default: ok.
    fn validate_input(_input: &Self::Input, _ctx: &Context) -> Result<(), ToolError> {
        Ok(())
    }
    /// The tool's own permission view of this call. Default: passthrough.
    fn check_permissions(_input: &Self::Input, _ctx: &Context) -> Permission {
        Permission::Passthrough
    }
    /// Runs the call.
    fn call(input: Self::Input, ctx: &Context) -> Result<Output, ToolError>;
}

/// The input schema of `T` as JSON text, exactly as the host receives it.
pub fn input_schema<T: Tool>() -> String {
    serde_json::to_string(&schema::generate::<T::Input>()).unwrap_or_else(|_| "{}".to_string())
}

/// The `tool-info` of a [`Tool`] or an [`AsyncTool`] (the same items).
macro_rules! tool_info {
    ($t:ty) => {
        crate::bindings::toolhost::tool::types::ToolInfo {
            name: <$t>::NAME.to_string(),
            aliases: <$t>::aliases(),
            description: <$t>::DESCRIPTION.to_string(),
            prompt: <$t>::prompt(),
            search_hint: <$t>::search_hint(),
            input_schema: serde_json::to_string(&crate::schema::generate::<<$t>::Input>())
                .unwrap_or_else(|_| "{}".to_string()),
            output_schema: <$t>::output_schema(),
            max_result_size_chars: <$t>::MAX_RESULT_SIZE_CHARS,
            should_defer: <$t>::SHOULD_DEFER,
            always_load: <$t>::ALWAYS_LOAD,
            interrupt_behavior: <$t>::INTERRUPT_BEHAVIOR.into(),
            read_only_hint: <$t>::READ_ONLY_HINT,
            destructive_hint: <$t>::DESTRUCTIVE_HINT,
            input_roles: crate::bindings::toolhost::tool::types::InputRoles {
                paths: <$t>::PATH_FIELDS
                    .iter()
                    .map(|&(field, access)| crate::bindings::toolhost::tool::types::PathField {
                        field: field.to_string(),
                        access: access.into(),
                    })
                    .collect(),
                command: <$t>::COMMAND_FIELD.map(str::to_string),
                addresses: <$t>::ADDRESS_FIELDS.iter().map(|f| f.to_string()).collect(),
            },
            cancels_siblings_on_failure: <$t>::CANCELS_SIBLINGS_ON_FAILURE,
            reuse_instance: <$t>::REUSE_INSTANCE,
            concurrency_safe_hint: <$t>::CONCURRENCY_SAFE_HINT,
            validates_input: <$t>::VALIDATES_INPUT,
            checks_permissions: <$t>::CHECKS_PERMISSIONS,
        }
    };
}

mod async_tool;
pub use async_tool::AsyncTool;

fn parse<T: Tool>(input: &str) -> Result<T::Input, ToolError> {
    serde_json::from_str(input)
        .map_err(|e| ToolError::invalid_input(format!("{} received input it cannot use: {e}", T::NAME)))
}

mod glue {
    use super::*;
    use crate::bindings::exports::toolhost::tool::tool::{CallContext, Guest, PermissionDecision};
    use crate::bindings::toolhost::tool::types as wit;

    impl<T: Tool> Guest for __private::Adapter<T> {
        fn info() -> wit::ToolInfo {
            tool_info!(T)
        }

        fn is_enabled() -> bool {
            T::is_enabled()
        }

        // Input the tool cannot parse gets the fail-closed answer.
        fn is_concurrency_safe(input: String) -> bool {
            T::CONCURRENCY_SAFE_HINT.unwrap_or_else(|| parse::<T>(&input).is_ok_and(|i| T::is_concurrency_safe(&i)))
        }

        fn is_read_only(input: String) -> bool {
            T::READ_ONLY_HINT.unwrap_or_else(|| parse::<T>(&input).is_ok_and(|i| T::is_read_only(&i)))
        }

        fn is_destructive(input: String) -> bool {
            T::DESTRUCTIVE_HINT.unwrap_or_else(|| parse::<T>(&input).is_ok_and(|i| T::is_destructive(&i)))
        }

        fn validate_input(input: String, ctx: CallContext) -> Result<(), wit::ToolError> {
            let ctx = Context::from_wit(ctx);
            let input = parse::<T>(&input)?;
            T::validate_input(&input, &ctx).map_err(Into::into)
        }

        fn check_permissions(input: String, ctx: CallContext) -> PermissionDecision {
            let ctx = Context::from_wit(ctx);
            match parse::<T>(&input) {
                Ok(input) => T::check_permissions(&input, &ctx).into(),
                Err(e) => PermissionDecision::Deny(e.message),
            }
        }

        fn call(input: String, ctx: CallContext) -> Result<wit::ToolOutput, wit::ToolError> {
            let ctx = Context::from_wit(ctx);
            let input = parse::<T>(&input)?;
            T::call(input, &ctx).map(Into::into).map_err(Into::into)
        }
    }
}
