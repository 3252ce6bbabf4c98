//! State handles: how calls of a 2026-07-28 client share state.
//!
//! That revision has no session. State that spans calls (the files read,
//! which Edit and Write check; background shells and their output) belongs
//! to a handle the server makes and the model passes back as an argument
//! (the revision's "explicit state handle"): the `StartSession` tool returns
//! one, and every tool listed to such a client takes it as
//! `toolhost_session`. A handle is 130 random bits, bound to the identity
//! that made it: another identity presenting it is told exactly what an
//! unknown handle gets. A handle unused for [`ServeConfig::handle_idle`]
//! ends, with its background processes.
//!
//! [`ServeConfig::handle_idle`]: crate::ServeConfig::handle_idle

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost::{Calls, Executor, Host, SchedulerConfig, Session};

/// The tool that makes a handle.
pub const START_SESSION: &str = "StartSession";
/// The argument carrying a handle.
pub const SESSION_ARGUMENT: &str = "toolhost_session";
/// What every handle starts with.
const PREFIX: &str = "session_";

/// Most handles one identity holds; a new one beyond it ends the one unused
/// the longest.
const MAX_PER_OWNER: usize = 256;

/// One handle's state.
#[derive(Clone)]
pub(crate) struct Held {
    pub(crate) session: Arc<Session>,
    pub(crate) executor: Arc<Executor>,
}

struct Entry {
    owner: Arc<str>,
    held: Held,
    used: Instant,
}

/// The handles of one server (a stdio connection, or every client of one
/// HTTP endpoint).
pub(crate) struct Handles {
    host: Host,
    max_concurrency: usize,
    idle: Duration,
    all: Mutex<HashMap<String, Entry>>,
}

impl Handles {
    pub(crate) fn new(host: Host, max_concurrency: usize, idle: Duration) -> Handles {
        Handles { host, max_concurrency, idle, all: Mutex::new(HashMap::new()) }
    }

    /// A new handle for `owner`.
    pub(crate) fn start(&self, owner: &Arc<str>) -> String {
        let handle = toolhost::unguessable_id(PREFIX);
        let session = self.host.ephemeral_session();
        session.discover_all();
        let executor = Executor::with_config(
            self.host.clone(),
            Arc::clone(&session),
            SchedulerConfig { max_concurrency: self.max_concurrency, calls: Calls::Independent, approver: None },
        );
        let held = Held { session, executor: Arc::new(executor) };
        let mut ended = Vec::new();
        {
            let mut all = self.lock();
            ended.extend(self.expire(&mut all));
            if let Some(oldest) = crate::oldest_beyond(&all, MAX_PER_OWNER, |e| e.owner == *owner, |e| e.used)
                && let Some(entry) = all.remove(&oldest)
            {
                ended.push(entry.held);
            }
            all.insert(handle.clone(), Entry { owner: Arc::clone(owner), held, used: Instant::now() });
        }
        self.end(ended);
        handle
    }

    /// The state of `handle`, if `owner` made it and it has not ended.
    pub(crate) fn get(&self, handle: &str, owner: &str) -> Option<Held> {
        let mut all = self.lock();
        let ended = self.expire(&mut all);
        let held = match all.get_mut(handle) {
            Some(entry) if *entry.owner == *owner => {
                entry.used = Instant::now();
                Some(entry.held.clone())
            }
            _ => None,
        };
        drop(all);
        self.end(ended);
        held
    }

    /// Handles unused for too long, taken out of `all`.
    fn expire(&self, all: &mut HashMap<String, Entry>) -> Vec<Held> {
        let now = Instant::now();
        let old: Vec<String> =
            all.iter().filter(|(_, e)| now.duration_since(e.used) >= self.idle).map(|(k, _)| k.clone()).collect();
        old.into_iter().filter_map(|k| all.remove(&k)).map(|e| e.held).collect()
    }

    /// Ends handles' state: running calls cancelled, background processes killed.
    fn end(&self, ended: Vec<Held>) {
        for held in ended {
            held.executor.discard();
            self.host.end_session(&held.session);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.all.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Handles {
    fn drop(&mut self) {
        let all = std::mem::take(&mut *self.lock());
        self.end(all.into_values().map(|e| e.held).collect());
    }
}
