//! Tools whose checks and call are `async fn`s: the contract's `async-tool`
//! interface (1.6.0), exported with [`export_async_tool!`](crate::export_async_tool).

use crate::{Context, DeserializeOwned, InterruptBehavior, JsonSchema, Output, PathAccess, Permission, ToolError};

/// A tool whose [`validate_input`](AsyncTool::validate_input),
/// [`check_permissions`](AsyncTool::check_permissions) and
/// [`call`](AsyncTool::call) are `async fn`s, exported with
/// [`export_async_tool!`](crate::export_async_tool) (the component then
/// exports the contract's `async-tool` interface, lifted with the component
/// model's async ABI). While a call waits (on a WASI 0.3 import such as a
/// clock, a socket or a file stream, or on futures of its own), the host's
/// deadline, cancellation and limits hold as for a running call, and other
/// calls run. Everything else means what it means on [`Tool`](crate::Tool):
/// the same items, the same defaults.
///
/// ```ignore
/// use toolhost_sdk::{AsyncTool, Context, Deserialize, JsonSchema, Output, ToolError, export_async_tool};
///
/// #[derive(Deserialize, JsonSchema)]
/// #[serde(deny_unknown_fields)]
/// struct WaitInput {
///     /// How long to wait, in milliseconds.
///     ms: u64,
/// }
///
/// struct Wait;
///
/// impl AsyncTool for Wait {
///     type Input = WaitInput;
///     const NAME: &'static str = "Wait";
///     const DESCRIPTION: &'static str = "Waits a while.";
///
///     async fn call(input: WaitInput, ctx: &Context) -> Result<Output, ToolError> {
///         ctx.progress("waiting");
///         wasip3::clocks::monotonic_clock::wait_for(input.ms * 1_000_000).await;
///         Ok(Output::text(format!("waited {} ms", input.ms)))
///     }
/// }
///
/// export_async_tool!(Wait);
/// ```
// The futures are polled on the component's one thread: they need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait AsyncTool: 'static {
    /// As [`Tool::Input`](crate::Tool::Input).
    type Input: DeserializeOwned + JsonSchema;

    /// As [`Tool::NAME`](crate::Tool::NAME).
    const NAME: &'static str;
    /// As [`Tool::DESCRIPTION`](crate::Tool::DESCRIPTION).
    const DESCRIPTION: &'static str;
    /// As [`Tool::MAX_RESULT_SIZE_CHARS`](crate::Tool::MAX_RESULT_SIZE_CHARS).
    const MAX_RESULT_SIZE_CHARS: Option<u64> = Some(100_000);
    /// As [`Tool::SHOULD_DEFER`](crate::Tool::SHOULD_DEFER).
    const SHOULD_DEFER: bool = false;
    /// As [`Tool::ALWAYS_LOAD`](crate::Tool::ALWAYS_LOAD).
    const ALWAYS_LOAD: bool = false;
    /// As [`Tool::INTERRUPT_BEHAVIOR`](crate::Tool::INTERRUPT_BEHAVIOR).
    const INTERRUPT_BEHAVIOR: InterruptBehavior = InterruptBehavior::Block;
    /// As [`Tool::READ_ONLY_HINT`](crate::Tool::READ_ONLY_HINT).
    const READ_ONLY_HINT: Option<bool> = None;
    /// As [`Tool::DESTRUCTIVE_HINT`](crate::Tool::DESTRUCTIVE_HINT).
    const DESTRUCTIVE_HINT: Option<bool> = None;
    /// As [`Tool::CONCURRENCY_SAFE_HINT`](crate::Tool::CONCURRENCY_SAFE_HINT).
    const CONCURRENCY_SAFE_HINT: Option<bool> = None;
    /// As [`Tool::VALIDATES_INPUT`](crate::Tool::VALIDATES_INPUT).
    const VALIDATES_INPUT: bool = true;
    /// As [`Tool::CHECKS_PERMISSIONS`](crate::Tool::CHECKS_PERMISSIONS).
    const CHECKS_PERMISSIONS: bool = true;
    /// As [`Tool::PATH_FIELDS`](crate::Tool::PATH_FIELDS).
    const PATH_FIELDS: &'static [(&'static str, PathAccess)] = &[];
    /// As [`Tool::COMMAND_FIELD`](crate::Tool::COMMAND_FIELD).
    const COMMAND_FIELD: Option<&'static str> = None;
    /// As [`Tool::ADDRESS_FIELDS`](crate::Tool::ADDRESS_FIELDS).
    const ADDRESS_FIELDS: &'static [&'static str] = &[];
    /// As [`Tool::CANCELS_SIBLINGS_ON_FAILURE`](crate::Tool::CANCELS_SIBLINGS_ON_FAILURE).
    const CANCELS_SIBLINGS_ON_FAILURE: bool = false;
    /// As [`Tool::REUSE_INSTANCE`](crate::Tool::REUSE_INSTANCE).
    const REUSE_INSTANCE: bool = false;

    /// As [`Tool::prompt`](crate::Tool::prompt).
    fn prompt() -> String {
        Self::DESCRIPTION.to_string()
    }
    /// As [`Tool::aliases`](crate::Tool::aliases).
    fn aliases() -> Vec<String> {
        Vec::new()
    }
    /// As [`Tool::search_hint`](crate::Tool::search_hint).
    fn search_hint() -> Option<String> {
        None
    }
    /// As [`Tool::output_schema`](crate::Tool::output_schema).
    fn output_schema() -> Option<String> {
        None
    }
    /// As [`Tool::is_enabled`](crate::Tool::is_enabled).
    fn is_enabled() -> bool {
        true
    }
    /// As [`Tool::is_concurrency_safe`](crate::Tool::is_concurrency_safe).
    fn is_concurrency_safe(_input: &Self::Input) -> bool {
        false
    }
    /// As [`Tool::is_read_only`](crate::Tool::is_read_only).
    fn is_read_only(_input: &Self::Input) -> bool {
        false
    }
    /// As [`Tool::is_destructive`](crate::Tool::is_destructive).
    fn is_destructive(_input: &Self::Input) -> bool {
        false
    }
    /// As [`Tool::validate_input`](crate::Tool::validate_input), awaited.
    async fn validate_input(_input: &Self::Input, _ctx: &Context) -> Result<(), ToolError> {
        Ok(())
    }
    /// As [`Tool::check_permissions`](crate::Tool::check_permissions), awaited.
    async fn check_permissions(_input: &Self::Input, _ctx: &Context) -> Permission {
        Permission::Passthrough
    }
    /// Runs the call.
    async fn call(input: Self::Input, ctx: &Context) -> Result<Output, ToolError>;
}

fn parse<T: AsyncTool>(input: &str) -> Result<T::Input, ToolError> {
    serde_json::from_str(input)
        .map_err(|e| ToolError::invalid_input(format!("{} received input it cannot use: {e}", T::NAME)))
}

mod glue {
    use super::*;
    use crate::__private::AsyncAdapter;
    use crate::async_bindings::exports::toolhost::tool::async_tool::{CallContext, Guest, PermissionDecision};
    use crate::bindings::toolhost::tool::types as wit;

    impl<T: AsyncTool> Guest for AsyncAdapter<T> {
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

        async fn validate_input(input: String, ctx: CallContext) -> Result<(), wit::ToolError> {
            let ctx = Context::from_wit(ctx);
            let input = parse::<T>(&input)?;
            T::validate_input(&input, &ctx).await.map_err(Into::into)
        }

        async fn check_permissions(input: String, ctx: CallContext) -> PermissionDecision {
            let ctx = Context::from_wit(ctx);
            match parse::<T>(&input) {
                Ok(input) => T::check_permissions(&input, &ctx).await.into(),
                Err(e) => PermissionDecision::Deny(e.message),
            }
        }

        async fn call(input: String, ctx: CallContext) -> Result<wit::ToolOutput, wit::ToolError> {
            let ctx = Context::from_wit(ctx);
            let input = parse::<T>(&input)?;
            T::call(input, &ctx).await.map(Into::into).map_err(Into::into)
        }
    }
}
