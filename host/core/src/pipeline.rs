//! One call, start to finish: the pipeline of SPEC §4.
//!
//! 0. count the call against its identity's quotas, or refuse it
//!    (`quota`);
//! 1. find the tool by name or alias;
//! 2. repair the slips Claude Code repairs in an input (`repair`), validate
//!    it against its JSON Schema, and confine the paths the tool declares to
//!    the directories it may use;
//! 3. the tool's `validate-input`;
//! 4. PreToolUse hooks (may rewrite the input, decide, or stop);
//! 5. the permission decision (rules, hooks, the tool's check, the mode; an
//!    ask goes to the approver), written to the audit log;
//! 6. `call` in a fresh sandboxed instance (or, for a tool that declares
//!    `reuse-instance`, the session's warm one: `warm`);
//! 7. PostToolUse / PostToolUseFailure hooks;
//! 8. map to a `tool_result`, persisting an oversized one.
//!
//! Files: `call` (the shared state and steps 1–2), `repair` (step 2's
//! repairs), `run` (steps 3, 4, 6, 7, 8), `permission` (step 5), `result`
//! and `persisted` (step 8), `warm`, `quota` (step 0).
//!
//! Every failure is an error result; nothing a tool or its input does reaches
//! the caller as anything else.

pub(crate) mod call;
mod caller;
mod concurrency;
mod instance;
pub(crate) mod permission;
pub(crate) mod persisted;
mod quota;
pub(crate) mod remote;
pub(crate) mod repair;
pub(crate) mod result;
mod run;
mod spare;
mod trace;
mod warm;

pub use crate::sandbox::Usage;
pub use call::{CLASSIFY_TIMEOUT, CallOptions, ToolUse};
pub(crate) use call::{Parts, Pipeline};
pub(crate) use caller::{Caller, ScriptStart, ScriptStarter};
pub use result::{Content, ToolResult};
pub(crate) use spare::{SPARE_ABOVE, SPARE_INSTANCES};
pub(crate) use warm::WARM_INSTANCES;
