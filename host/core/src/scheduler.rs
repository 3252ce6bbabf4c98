//! Many calls at once (SPEC §7): the streaming executor, which starts calls
//! while the model is still streaming, and the batch orchestrator for a
//! whole list of calls.
//!
//! The start rule: a call starts when nothing runs, or when it and every
//! running call are concurrency-safe (and fewer than the maximum run). A
//! queued call that is not concurrency-safe blocks the queue behind it.
//! Results come out in the original order; progress comes out at once. A
//! failing call of a tool that declares `cancels-siblings-on-failure` (Bash)
//! cancels its running and queued siblings, which get a synthetic error;
//! other tools' failures do not cascade. A user interrupt cancels the calls
//! whose tool's interrupt behavior is `cancel` and lets the `block` ones
//! finish.

mod batch;
mod executor;

pub use batch::run_batch;
pub use executor::{Config, DEFAULT_MAX_CONCURRENCY, Executor, Update};
