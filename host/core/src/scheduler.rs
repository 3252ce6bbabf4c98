//! Many calls at once (SPEC §7): the streaming executor, which starts calls
//! while the model is still streaming (the batch orchestrator for a whole
//! list of calls is the host's `run_batch`). It runs calls through the
//! pipeline's `Caller`, which the host is.
//!
//! The start rule: a call starts when nothing runs, or when it and every
//! running call are concurrency-safe (and fewer than the maximum run). A
//! queued call that is not concurrency-safe blocks the queue behind it.
//! Progress comes out at once. The calls of one executor are either one
//! model turn ([`Calls::Turn`]: results in the original order, and a failing
//! call of a tool that declares `cancels-siblings-on-failure` (Bash) cancels
//! its running and queued siblings, which get a synthetic error; other
//! tools' failures do not cascade) or independent requests
//! ([`Calls::Independent`], an MCP server's: each result as soon as it is
//! ready, no call cancelled by another's failure). Each call added comes
//! back as a [`CallHandle`]. A user interrupt cancels the calls whose tool's
//! interrupt behavior is `cancel` and lets the `block` ones finish.

mod executor;
mod handle;
mod slot;
mod wakeup;
mod workers;

pub use executor::{CallHandle, CallSetup, Calls, Config, DEFAULT_MAX_CONCURRENCY, Executor, TimedOut, Update};
