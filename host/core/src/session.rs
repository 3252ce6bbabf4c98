//! Sessions: the key-value state tools keep between calls, and the directory
//! where the host persists a session's oversized results.
//!
//! A session lives in memory; one kept in a [`StateStore`] is loaded from it,
//! brought up to date before a call ([`Session::refresh`]) and saves its
//! changes after one ([`Session::save`]), so processes sharing the store see
//! each other's state (Read in one, Edit in the next): separate `toolhost
//! call --session ID` processes through the files under the data directory
//! ([`FileStore`]), servers on several machines through a shared store.
//! Saving applies only this process's changes, so concurrent processes do
//! not lose each other's keys.

mod store;

pub use store::{Changes, Entries, FileStore, MemoryStore, SESSIONS, StateStore, valid_namespace};

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Longest key, in bytes.
pub(crate) const MAX_KEY: usize = 1024;
/// Largest value, in bytes.
pub(crate) const MAX_VALUE: usize = 64 * 1024;
/// Most bytes of keys and values a session (or one third-party tool's part of it) holds.
pub(crate) const MAX_BYTES: usize = 4 * 1024 * 1024;
/// Most keys a session holds.
pub(crate) const MAX_KEYS: usize = 4096;

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// An id that cannot name a session.
    #[error("invalid session id `{0}`: use 1-128 characters from A-Z a-z 0-9 . _ -, not starting with a dot")]
    InvalidId(String),
    /// The state file could not be read or written.
    #[error("session state file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The state file is not what the host writes.
    #[error("session state file {path} is corrupt: {source}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// A store other than files failed (unreachable, refused, …).
    #[error("the state store: {0}")]
    Store(String),
}

/// Why a write to session state was refused (the contract's `session-error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteError {
    InvalidKey,
    ValueTooLarge,
    QuotaExceeded,
}

/// One session.
pub struct Session {
    id: String,
    dir: PathBuf,
    /// Where the state is kept between calls; none: in this process only.
    store: Option<Arc<dyn StateStore>>,
    /// The results directory is known to exist (checked at open, set when a
    /// result is persisted), so calls need not look on every call.
    has_results: AtomicBool,
    /// Every deferred tool counts as discovered (a front that listed every
    /// tool in full, as the MCP server does).
    all_discovered: AtomicBool,
    state: Mutex<State>,
}

/// The session entry listing the deferred tools ToolSearch loaded (a JSON
/// list of names); in the shared namespace, which only built-ins reach.
const DISCOVERED: &str = "toolhost:discovered";

#[derive(Debug, Default)]
struct State {
    entries: BTreeMap<String, String>,
    bytes: usize,
    /// Keys changed since the last save (set or removed).
    changed: BTreeSet<String>,
}

impl Session {
    /// A session kept in memory only. Oversized results still go to its
    /// directory under `data_dir`, so the paths given to the model stay valid.
    pub fn ephemeral(data_dir: &Path) -> Session {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let id = format!("ephemeral-{nanos:x}-{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
        let dir = data_dir.join("sessions").join(&id);
        live_ephemeral().insert(dir.clone());
        Session {
            dir,
            id,
            store: None,
            has_results: AtomicBool::new(false),
            all_discovered: AtomicBool::new(false),
            state: Mutex::default(),
        }
    }

    /// Opens the persistent session `id` kept in files under `data_dir`
    /// ([`FileStore`]), loading its state if it exists.
    pub fn open(data_dir: &Path, id: &str) -> Result<Session, SessionError> {
        Session::in_store(data_dir, id, Arc::new(FileStore::new(data_dir)))
    }

    /// Opens session `id` kept in `store`, loading its state if it exists.
    /// Its own directory (persisted results, temporary files) is under
    /// `data_dir`.
    pub fn in_store(data_dir: &Path, id: &str, store: Arc<dyn StateStore>) -> Result<Session, SessionError> {
        validate_id(id)?;
        let dir = data_dir.join("sessions").join(id);
        let has_results = AtomicBool::new(dir.join("tool-results").is_dir());
        let entries = store.load(id)?;
        let session = Session {
            dir,
            id: id.to_string(),
            store: Some(store),
            has_results,
            all_discovered: AtomicBool::new(false),
            state: Mutex::default(),
        };
        session.lock().replace(entries);
        Ok(session)
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether the state is kept in a store ([`Session::open`],
    /// [`Session::in_store`]).
    pub fn is_persistent(&self) -> bool {
        self.store.is_some()
    }

    /// Whether the deferred tool `name` was loaded by ToolSearch in this
    /// session (kept with the session's state).
    pub fn is_discovered(&self, name: &str) -> bool {
        self.all_discovered.load(Ordering::Relaxed) || self.discovered().iter().any(|n| n == name)
    }

    /// The deferred tools loaded in this session.
    pub fn discovered(&self) -> Vec<String> {
        self.get(DISCOVERED).and_then(|v| serde_json::from_str(&v).ok()).unwrap_or_default()
    }

    /// Marks `names` as loaded.
    pub fn discover(&self, names: &[String]) {
        let mut all = self.discovered();
        let before = all.len();
        all.extend(names.iter().filter(|n| !n.is_empty()).cloned());
        all.sort();
        all.dedup();
        if all.len() != before {
            let text = serde_json::to_string(&all).unwrap_or_default();
            if let Err(e) = self.set(DISCOVERED, &text, None) {
                tracing::warn!(error = ?e, "could not record the deferred tools loaded in the session");
            }
        }
    }

    /// Every deferred tool counts as loaded from now on.
    pub fn discover_all(&self) {
        self.all_discovered.store(true, Ordering::Relaxed);
    }

    /// The session's own directory (created on demand).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where oversized results are persisted.
    pub fn results_dir(&self) -> PathBuf {
        self.dir.join("tool-results")
    }

    /// The results directory, if results were persisted there (tools may read
    /// it).
    pub fn existing_results_dir(&self) -> Option<PathBuf> {
        self.has_results.load(Ordering::Relaxed).then(|| self.results_dir())
    }

    /// Records that a result was persisted in [`Session::results_dir`].
    pub(crate) fn note_results(&self) {
        self.has_results.store(true, Ordering::Relaxed);
    }

    /// The value a tool stored under `key` in this session.
    pub fn get(&self, key: &str) -> Option<String> {
        self.lock().entries.get(key).cloned()
    }

    /// Stores `value` under `key`. `quota_prefix` bounds the bytes held under
    /// that prefix (a third-party tool's namespace) in addition to the session's
    /// own bound.
    pub fn set(&self, key: &str, value: &str, quota_prefix: Option<&str>) -> Result<(), WriteError> {
        if key.is_empty() || key.len() > MAX_KEY {
            return Err(WriteError::InvalidKey);
        }
        if value.len() > MAX_VALUE {
            return Err(WriteError::ValueTooLarge);
        }
        let mut state = self.lock();
        let old = state.entries.get(key).map_or(0, |v| key.len() + v.len());
        let new_bytes = state.bytes - old + key.len() + value.len();
        let new_keys = state.entries.len() + usize::from(old == 0);
        if new_bytes > MAX_BYTES || new_keys > MAX_KEYS {
            return Err(WriteError::QuotaExceeded);
        }
        if let Some(prefix) = quota_prefix {
            let used: usize = state
                .entries
                .range(prefix.to_string()..)
                .take_while(|(k, _)| k.starts_with(prefix))
                .map(|(k, v)| k.len() + v.len())
                .sum();
            if used - old + key.len() + value.len() > MAX_BYTES / 4 {
                return Err(WriteError::QuotaExceeded);
            }
        }
        state.bytes = new_bytes;
        state.entries.insert(key.to_string(), value.to_string());
        state.changed.insert(key.to_string());
        Ok(())
    }

    /// Removes what a tool stored under `key`.
    pub fn remove(&self, key: &str) {
        let mut state = self.lock();
        if let Some(v) = state.entries.remove(key) {
            state.bytes -= key.len() + v.len();
            state.changed.insert(key.to_string());
        }
    }

    /// Keys starting with `prefix`, sorted.
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        let state = self.lock();
        state
            .entries
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Brings the state up to date with its store (persistent sessions
    /// only): what other processes saved since, with this process's unsaved
    /// changes on top. A front calls it before a call when others may share
    /// the session.
    pub fn refresh(&self) -> Result<(), SessionError> {
        let Some(store) = &self.store else { return Ok(()) };
        let mut entries = store.load(&self.id)?;
        let mut state = self.lock();
        for key in &state.changed {
            match state.entries.get(key) {
                Some(v) => entries.insert(key.clone(), v.clone()),
                None => entries.remove(key),
            };
        }
        let changed = std::mem::take(&mut state.changed);
        state.replace(entries);
        state.changed = changed;
        Ok(())
    }

    /// Saves this process's changes to the store (persistent sessions only):
    /// the changed keys are applied to what the store holds, and the state
    /// becomes the result.
    pub fn save(&self) -> Result<(), SessionError> {
        let Some(store) = &self.store else { return Ok(()) };
        let mut state = self.lock();
        if state.changed.is_empty() {
            return Ok(());
        }
        let changes: Vec<(String, Option<String>)> =
            state.changed.iter().map(|k| (k.clone(), state.entries.get(k).cloned())).collect();
        let merged = store.apply(&self.id, &changes)?;
        state.replace(merged);
        state.changed.clear();
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the map half-updated in a
        // way that matters more than losing the session: keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("id", &self.id).field("persistent", &self.is_persistent()).finish()
    }
}

impl State {
    /// All entries become `entries` (nothing changed since).
    fn replace(&mut self, entries: Entries) {
        self.bytes = entries.iter().map(|(k, v)| k.len() + v.len()).sum();
        self.entries = entries;
    }
}

impl Drop for Session {
    /// An ephemeral session's private temporary directory (where its commands
    /// kept temporary files) goes with it; persisted results stay.
    fn drop(&mut self) {
        if self.store.is_none() {
            live_ephemeral().remove(&self.dir);
            let _ = fs::remove_dir_all(self.dir.join("tmp"));
            let _ = fs::remove_dir(&self.dir);
        }
    }
}

/// The directories of this process's ephemeral sessions not yet dropped.
fn live_ephemeral() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
    static LIVE: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes the temporary directories of this process's ephemeral sessions
/// that are still alive. A front calls it as the process ends: a call still
/// running (its client went away mid-call) holds its session, and a process
/// that returns from `main` drops nothing its worker threads hold.
pub fn remove_temporaries() {
    for dir in std::mem::take(&mut *live_ephemeral()) {
        let _ = fs::remove_dir_all(dir.join("tmp"));
        let _ = fs::remove_dir(&dir);
    }
}

/// Removes what ephemeral sessions of processes that no longer exist (killed
/// outright, so nothing of theirs ran at exit) left under `data_dir`: their
/// temporary directories, and their directories once empty. Persisted results
/// stay for the data directory's quota to evict.
pub(crate) fn sweep_orphans(data_dir: &Path) {
    let Ok(entries) = fs::read_dir(data_dir.join("sessions")) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(ephemeral_pid) else { continue };
        if pid == std::process::id() || process_exists(pid) {
            continue;
        }
        let dir = entry.path();
        let _ = fs::remove_dir_all(dir.join("tmp"));
        let _ = fs::remove_dir(&dir);
    }
}

/// The process id in an ephemeral session's id (`ephemeral-<time>-<pid>-<n>`).
fn ephemeral_pid(id: &str) -> Option<u32> {
    let mut parts = id.strip_prefix("ephemeral-")?.split('-');
    let (_time, pid, _n) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    pid.parse().ok()
}

fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: signal 0 checks for the process and sends nothing.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// `prefix` and 26 characters of `a`–`z`, `2`–`7` drawn from the system's
/// random source: 130 bits no one can guess, for the handles a front gives
/// out (state handles, pending approvals). Valid as a session id when
/// `prefix` is.
pub fn unguessable_id(prefix: &str) -> String {
    toolhost_primitives::id::unguessable(prefix)
}

pub(crate) fn validate_id(id: &str) -> Result<(), SessionError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok { Ok(()) } else { Err(SessionError::InvalidId(id.to_string())) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unguessable_ids_are_long_and_distinct() {
        let ids: BTreeSet<String> = (0..1000).map(|_| unguessable_id("ths_")).collect();
        assert_eq!(ids.len(), 1000);
        for id in &ids {
            assert_eq!(id.len(), 4 + 26, "{id}");
            validate_id(id).unwrap();
        }
        // Every character of the alphabet turns up.
        let seen: BTreeSet<char> = ids.iter().flat_map(|id| id[4..].chars()).collect();
        assert_eq!(seen.len(), 32, "{seen:?}");
    }

    #[test]
    fn ids_cannot_escape_the_data_dir() {
        for bad in ["", "..", "../x", "a/b", ".hidden", "a b"] {
            assert!(validate_id(bad).is_err(), "{bad:?} accepted");
        }
        validate_id("work-1.session_2").unwrap();
    }

    #[test]
    fn orphans_of_dead_processes_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        // A process that has exited: a child we reaped.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let orphan = sessions.join(format!("ephemeral-1a-{dead}-0"));
        let kept = sessions.join(format!("ephemeral-1b-{dead}-1"));
        let alive = sessions.join(format!("ephemeral-1c-{}-7", std::process::id()));
        let named = sessions.join("work");
        for d in [&orphan, &kept, &alive, &named] {
            std::fs::create_dir_all(d.join("tmp")).unwrap();
        }
        std::fs::create_dir_all(kept.join("tool-results")).unwrap();
        sweep_orphans(dir.path());
        assert!(!orphan.exists(), "an orphan's directory goes");
        assert!(!kept.join("tmp").exists() && kept.join("tool-results").exists(), "its results stay");
        assert!(alive.join("tmp").exists() && named.join("tmp").exists(), "live and named sessions are kept");
        assert_eq!(ephemeral_pid("ephemeral-1a-42-0"), Some(42));
        assert_eq!(ephemeral_pid("ephemeral-1a-42"), None);
        assert_eq!(ephemeral_pid("ephemeral-1a-42-0-9"), None);
    }

    #[test]
    fn quotas_are_enforced() {
        let dir = tempfile::tempdir().unwrap();
        let s = Session::ephemeral(dir.path());
        assert_eq!(s.set("", "v", None), Err(WriteError::InvalidKey));
        assert_eq!(s.set("k", &"x".repeat(MAX_VALUE + 1), None), Err(WriteError::ValueTooLarge));
        let big = "x".repeat(MAX_VALUE);
        let mut stored = 0;
        while s.set(&format!("plugin:t/{stored}"), &big, Some("plugin:t/")).is_ok() {
            stored += 1;
        }
        assert!(stored > 0 && stored * MAX_VALUE <= MAX_BYTES / 4, "stored {stored}");
        s.set("shared", "still room for others", None).unwrap();
    }

    #[test]
    fn saves_merge_concurrent_processes() {
        let dir = tempfile::tempdir().unwrap();
        let a = Session::open(dir.path(), "s").unwrap();
        let b = Session::open(dir.path(), "s").unwrap();
        a.set("a", "1", None).unwrap();
        b.set("b", "2", None).unwrap();
        a.save().unwrap();
        b.save().unwrap();
        let c = Session::open(dir.path(), "s").unwrap();
        assert_eq!((c.get("a").as_deref(), c.get("b").as_deref()), (Some("1"), Some("2")));
        b.remove("b");
        b.save().unwrap();
        assert_eq!(Session::open(dir.path(), "s").unwrap().keys(""), vec!["a".to_string()]);
    }

    #[test]
    fn a_session_is_taken_once_from_files_and_from_memory() {
        let dir = tempfile::tempdir().unwrap();
        let stores: [Arc<dyn StateStore>; 2] = [Arc::new(FileStore::new(dir.path())), Arc::new(MemoryStore::default())];
        for store in stores {
            assert!(store.take("t").unwrap().is_empty());
            store.apply("t", &[("k".into(), Some("v".into())), ("j".into(), Some("w".into()))]).unwrap();
            assert_eq!(store.apply("t", &[("j".into(), None)]).unwrap().len(), 1);
            assert_eq!(store.load("t").unwrap().get("k").map(String::as_str), Some("v"));
            assert_eq!(store.take("t").unwrap().len(), 1);
            assert!(store.take("t").unwrap().is_empty());
            assert!(store.load("t").unwrap().is_empty());
        }
    }

    #[test]
    fn updates_at_once_from_many_threads_all_land_in_files_and_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let memory = MemoryStore::default();
        let pairs: [[Arc<dyn StateStore>; 2]; 2] = [
            [Arc::new(FileStore::new(dir.path())), Arc::new(FileStore::new(dir.path()))],
            [Arc::new(memory.clone()), Arc::new(memory)],
        ];
        for pair in pairs {
            std::thread::scope(|scope| {
                for t in 0..4 {
                    let store = Arc::clone(&pair[t % 2]).namespace("count");
                    scope.spawn(move || {
                        for _ in 0..25 {
                            store
                                .update("n", &mut |now| {
                                    let n: u64 = now.get("n").and_then(|v| v.parse().ok()).unwrap_or(0);
                                    vec![("n".into(), Some((n + 1).to_string()))]
                                })
                                .unwrap();
                        }
                    });
                }
            });
            assert_eq!(pair[0].namespace("count").load("n").unwrap()["n"], "100", "an increment was lost");
            assert_eq!(pair[1].namespace("count").update("n", &mut |_| Vec::new()).unwrap()["n"], "100");
        }
    }

    #[test]
    fn namespaces_are_disjoint_from_sessions_and_each_other_and_shared_by_every_handle() {
        let dir = tempfile::tempdir().unwrap();
        let stores: [Arc<dyn StateStore>; 2] = [Arc::new(FileStore::new(dir.path())), Arc::new(MemoryStore::default())];
        for store in stores {
            let (front, other) = (store.namespace("front"), store.namespace("other"));
            store.apply("x", &[("k".into(), Some("session".into()))]).unwrap();
            front.apply("x", &[("k".into(), Some("front".into()))]).unwrap();
            assert!(other.load("x").unwrap().is_empty());
            assert_eq!(store.load("x").unwrap()["k"], "session");
            // Another handle on the same namespace sees the same records.
            assert_eq!(store.namespace("front").load("x").unwrap()["k"], "front");
            assert_eq!(front.take("x").unwrap()["k"], "front");
            assert_eq!(store.load("x").unwrap()["k"], "session");
        }
        for bad in ["", "sessions", "Front", "a/b", "a.b", &"x".repeat(33)] {
            assert!(!valid_namespace(bad), "{bad}");
        }
        assert!(valid_namespace("mcp-front"));
    }

    #[test]
    fn a_refresh_brings_in_what_others_saved_and_keeps_what_is_unsaved() {
        let dir = tempfile::tempdir().unwrap();
        let a = Session::open(dir.path(), "s").unwrap();
        let b = Session::open(dir.path(), "s").unwrap();
        a.set("read", "1", None).unwrap();
        a.save().unwrap();
        b.set("mine", "2", None).unwrap();
        assert_eq!(b.get("read"), None);
        b.refresh().unwrap();
        assert_eq!((b.get("read").as_deref(), b.get("mine").as_deref()), (Some("1"), Some("2")));
        // The unsaved key is still saved later.
        b.save().unwrap();
        a.refresh().unwrap();
        assert_eq!(a.get("mine").as_deref(), Some("2"));
        // An unsaved removal survives a refresh too.
        a.remove("read");
        a.refresh().unwrap();
        assert_eq!(a.get("read"), None);
        a.save().unwrap();
        assert_eq!(Session::open(dir.path(), "s").unwrap().get("read"), None);
        // Ephemeral sessions have nothing to refresh from.
        let e = Session::ephemeral(dir.path());
        e.set("k", "v", None).unwrap();
        e.refresh().unwrap();
        assert_eq!(e.get("k").as_deref(), Some("v"));
        FileStore::new(dir.path()).remove("s").unwrap();
        assert!(Session::open(dir.path(), "s").unwrap().keys("").is_empty());
    }
}
