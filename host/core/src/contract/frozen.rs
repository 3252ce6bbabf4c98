//! The conversions every frozen contract shares with the current one: the
//! types that did not change between them (the call context, errors,
//! outputs, permission decisions), generated in each frozen module against
//! its own bindings (`old`, `old_tool`) and the current ones (`new`,
//! `new_tool`).

macro_rules! unchanged_conversions {
    () => {
        pub fn context(ctx: &new_tool::CallContext) -> old_tool::CallContext {
            old_tool::CallContext {
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
            }
        }

        pub fn error(e: old::ToolError) -> new::ToolError {
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

        pub fn output(o: old::ToolOutput) -> new::ToolOutput {
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

        pub fn decision(d: old::PermissionDecision) -> new::PermissionDecision {
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
    };
}
