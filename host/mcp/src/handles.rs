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
//! A handle is one of the front's records (its owner, when it was last used),
//! and one identity holds at most [`MAX_PER_OWNER`]: a new one beyond that
//! ends the one unused the longest. With [`ServeConfig::shared_state`] the
//! records are in the host's state store, and a handle's state a
//! persistent session of the same name there, so any instance sharing the
//! store serves it and the cap holds across the fleet; each instance keeps
//! its own executor (and warm instances, and the background processes it
//! started) for it.
//!
//! [`ServeConfig::handle_idle`]: crate::ServeConfig::handle_idle
//! [`ServeConfig::shared_state`]: crate::ServeConfig::shared_state

use crate::records::{Kind, Records};
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
pub const MAX_PER_OWNER: usize = 256;

/// One handle's state.
#[derive(Clone)]
pub(crate) struct Held {
    pub(crate) session: Arc<Session>,
    pub(crate) executor: Arc<Executor>,
}

impl Held {
    /// `session` with an executor of its own running up to `max_concurrency`
    /// independent calls at once.
    pub(crate) fn new(host: &Host, session: Arc<Session>, max_concurrency: usize) -> Held {
        // The client gets every tool in full (see `tools`), so none needs
        // loading with ToolSearch first.
        session.discover_all();
        let executor = Executor::with_config(
            host.clone(),
            Arc::clone(&session),
            SchedulerConfig { max_concurrency, calls: Calls::Independent, approver: None },
        );
        Held { session, executor: Arc::new(executor) }
    }

    /// Ends the state's life here: running calls cancelled, background
    /// processes killed, warm instances dropped (a persistent session's
    /// state stays in its store).
    pub(crate) fn end(&self, host: &Host) {
        self.executor.discard();
        host.end_session(&self.session);
    }
}

/// The entries of a handle's record.
const OWNER: &str = "owner";
const USED: &str = "used";
/// How stale a record's `used` may get before a call writes it again.
const USED_PRECISION_MS: u64 = 60_000;

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
    /// The handles this instance holds state for (all of them, unless
    /// instances share the records).
    all: Mutex<HashMap<String, Entry>>,
    /// Each handle's record: who made it, when it was last used.
    records: Arc<Records>,
}

impl Handles {
    pub(crate) fn new(host: Host, max_concurrency: usize, idle: Duration, records: Arc<Records>) -> Handles {
        Handles { host, max_concurrency, idle, all: Mutex::new(HashMap::new()), records }
    }

    /// A new handle for `owner`; the one `owner` used the longest ago ends
    /// if it now holds more than [`MAX_PER_OWNER`]. Blocks on the store.
    pub(crate) fn start(&self, owner: &Arc<str>) -> Result<String, String> {
        let handle = toolhost::unguessable_id(PREFIX);
        let record = [(OWNER, Some(owner.to_string())), (USED, Some(crate::now_ms().to_string()))];
        self.records.apply(&handle, &record)?;
        for beyond in self.records.admit(owner, Kind::Handle, &handle, MAX_PER_OWNER)? {
            self.end_everywhere(&beyond)?;
        }
        let session = match self.records.is_shared() {
            true => self.host.session(&handle).map_err(|e| e.to_string())?,
            false => self.host.ephemeral_session(),
        };
        self.keep(&handle, owner, Held::new(&self.host, session, self.max_concurrency));
        Ok(handle)
    }

    /// Keeps `held` here as `handle`'s state.
    fn keep(&self, handle: &str, owner: &Arc<str>, held: Held) {
        let mut ended = Vec::new();
        {
            let mut all = self.lock();
            ended.extend(self.expire(&mut all));
            // What this instance holds is capped too: handles others ended
            // are only found out at their next use here.
            if let Some(oldest) = crate::oldest_beyond(&all, MAX_PER_OWNER, |e| e.owner == *owner, |e| e.used)
                && let Some(entry) = all.remove(&oldest)
            {
                ended.push(entry.held);
            }
            all.insert(handle.to_string(), Entry { owner: Arc::clone(owner), held, used: Instant::now() });
        }
        self.end(ended);
    }

    /// The state of `handle`, if `owner` made it and it has not ended.
    /// Blocks on the store.
    pub(crate) fn get(&self, handle: &str, owner: &str) -> Result<Option<Held>, String> {
        if !crate::could_be(handle, PREFIX) {
            return Ok(None);
        }
        let record = self.records.load(handle)?;
        let used: Option<u64> = record.get(USED).and_then(|u| u.parse().ok());
        let now = crate::now_ms();
        let (Some(made_by), Some(used)) = (record.get(OWNER), used) else {
            // Ended, here too.
            self.forget_here(handle);
            return Ok(None);
        };
        if made_by != owner {
            return Ok(None);
        }
        if now.saturating_sub(used) >= self.idle.as_millis() as u64 {
            self.end_everywhere(handle)?;
            self.records.release(owner, Kind::Handle, handle)?;
            return Ok(None);
        }
        if now.saturating_sub(used) >= USED_PRECISION_MS {
            self.records.apply(handle, &[(USED, Some(now.to_string()))])?;
            self.records.admit(owner, Kind::Handle, handle, usize::MAX)?;
        }
        if let Some(held) = self.get_here(handle, owner) {
            return Ok(Some(held));
        }
        if !self.records.is_shared() {
            // Its state was this instance's only, and is gone.
            self.end_everywhere(handle)?;
            return Ok(None);
        }
        // Started on another instance: its state comes from the store.
        let session = self.host.session(handle).map_err(|e| e.to_string())?;
        let held = Held::new(&self.host, session, self.max_concurrency);
        self.keep(handle, &Arc::from(owner), held.clone());
        Ok(Some(held))
    }

    /// Ends `handle` for every instance: its record, its state in a shared
    /// store, and what this instance holds.
    fn end_everywhere(&self, handle: &str) -> Result<(), String> {
        self.records.remove(handle)?;
        if self.records.is_shared() {
            self.host.forget_session(handle).map_err(|e| e.to_string())?;
        }
        self.forget_here(handle);
        Ok(())
    }

    /// Drops what this instance holds for `handle`.
    fn forget_here(&self, handle: &str) {
        let gone = self.lock().remove(handle);
        self.end(gone.into_iter().map(|e| e.held).collect());
    }

    /// The state this instance holds for `handle`, if `owner` made it and
    /// it has not been idle too long here.
    fn get_here(&self, handle: &str, owner: &str) -> Option<Held> {
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
            held.end(&self.host);
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
