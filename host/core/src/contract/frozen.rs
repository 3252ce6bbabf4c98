//! What every frozen contract's module shares: its bindings (only the `tool`
//! export and the `types` it uses are generated; the host interfaces did not
//! change, so their imports are served with the newest definitions, which
//! wasmtime matches by semver-compatible names), `context` (the newest call
//! context in its types) and `From` conversions into the newest types of
//! what did not change since 1.0.0 (errors, outputs, permission decisions).
//! Each module adds the `From` of its own `tool-info`.

macro_rules! frozen_contract {
    ($wit:tt) => {
        wasmtime::component::bindgen!({
            path: $wit,
            world: "full",
            with: {
                "toolhost:tool/progress": super::bindings::toolhost::tool::progress,
                "toolhost:tool/output": super::bindings::toolhost::tool::output,
                "toolhost:tool/session": super::bindings::toolhost::tool::session,
                "toolhost:tool/files": super::bindings::toolhost::tool::files,
                "toolhost:tool/policy": super::bindings::toolhost::tool::policy,
                "toolhost:tool/shell": super::bindings::toolhost::tool::shell,
                "toolhost:tool/process": super::bindings::toolhost::tool::process,
            },
        });

        use self::exports::toolhost::tool::tool as old_tool;
        use self::toolhost::tool::types as old;
        use super::bindings::exports::toolhost::tool::tool as new_tool;
        use super::bindings::toolhost::tool::types as new;

        // The names the table of versions calls its types by.
        pub(super) use old::{PermissionDecision as Decision, ToolError as Error, ToolInfo as Info, ToolOutput as Output};
        pub(super) use old_tool::CallContext as Context;

        /// The newest call context, in this version's types.
        pub(crate) fn context(ctx: &new_tool::CallContext) -> std::borrow::Cow<'static, old_tool::CallContext> {
            std::borrow::Cow::Owned(old_tool::CallContext {
                tool_use_id: ctx.tool_use_id.clone(),
                session_id: ctx.session_id.clone(),
                cwd: ctx.cwd.clone(),
                working_dirs: ctx.working_dirs.clone(),
                read_only_dirs: ctx.read_only_dirs.clone(),
                mode: match ctx.mode {
                    new::PermissionMode::Default => old::PermissionMode::Default,
                    new::PermissionMode::Plan => old::PermissionMode::Plan,
                    new::PermissionMode::AcceptEdits => old::PermissionMode::AcceptEdits,
                    new::PermissionMode::DontAsk => old::PermissionMode::DontAsk,
                    new::PermissionMode::BypassPermissions => old::PermissionMode::BypassPermissions,
                },
            })
        }

        impl From<old::InterruptBehavior> for new::InterruptBehavior {
            fn from(b: old::InterruptBehavior) -> Self {
                match b {
                    old::InterruptBehavior::Cancel => new::InterruptBehavior::Cancel,
                    old::InterruptBehavior::Block => new::InterruptBehavior::Block,
                }
            }
        }

        impl From<old::ToolError> for new::ToolError {
            fn from(e: old::ToolError) -> Self {
                new::ToolError {
                    kind: match e.kind {
                        old::ErrorKind::InvalidInput => new::ErrorKind::InvalidInput,
                        old::ErrorKind::NotFound => new::ErrorKind::NotFound,
                        old::ErrorKind::PermissionDenied => new::ErrorKind::PermissionDenied,
                        old::ErrorKind::Conflict => new::ErrorKind::Conflict,
                        old::ErrorKind::TooLarge => new::ErrorKind::TooLarge,
                        old::ErrorKind::Unsupported => new::ErrorKind::Unsupported,
                        old::ErrorKind::Io => new::ErrorKind::Io,
                        old::ErrorKind::Internal => new::ErrorKind::Internal,
                    },
                    message: e.message,
                }
            }
        }

        impl From<old::ToolOutput> for new::ToolOutput {
            fn from(o: old::ToolOutput) -> Self {
                new::ToolOutput {
                    content: o
                        .content
                        .into_iter()
                        .map(|block| match block {
                            old::ContentBlock::Text(t) => new::ContentBlock::Text(t),
                            old::ContentBlock::Image(i) => {
                                new::ContentBlock::Image(new::Image { media_type: i.media_type, data: i.data })
                            }
                            old::ContentBlock::Json(j) => new::ContentBlock::Json(j),
                        })
                        .collect(),
                    structured: o.structured,
                    is_error: o.is_error,
                }
            }
        }

        impl From<old::PermissionDecision> for new::PermissionDecision {
            fn from(d: old::PermissionDecision) -> Self {
                match d {
                    old::PermissionDecision::Allow(input) => new::PermissionDecision::Allow(input),
                    old::PermissionDecision::Deny(reason) => new::PermissionDecision::Deny(reason),
                    old::PermissionDecision::Ask(r) => new::PermissionDecision::Ask(new::AskRequest {
                        message: r.message,
                        suggested_rules: r.suggested_rules,
                    }),
                    old::PermissionDecision::Passthrough => new::PermissionDecision::Passthrough,
                }
            }
        }
    };
}
