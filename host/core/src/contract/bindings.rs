//! Host-side bindings of the current contract (`wit/tool.wit`).
//!
//! Generated for the world with every interface (`full`); a component that
//! imports less links against the same linker, and the loader checks its
//! imports against its grants before anything runs.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "full",
    imports: { "toolhost:tool/process": trappable },
    with: { "toolhost:tool/process.child": crate::process::Foreground },
});

pub(crate) use self::toolhost::tool::types::{ContentBlock, InterruptBehavior, PermissionMode, ToolInfo, ToolOutput};
pub(crate) use exports::toolhost::tool::tool::{CallContext, PermissionDecision};
