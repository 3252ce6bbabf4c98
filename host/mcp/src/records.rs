//! What the front keeps across requests (who made each HTTP session, state
//! handles, calls waiting for an answer), as records in one store: this
//! process's memory, or the host's state store when instances share state.
//! Either way the same code runs: the records are in a namespace of their
//! own ([`NAMESPACE`]), apart from sessions whatever their names, and what
//! one identity may hold of each kind is capped in the store itself, so a
//! fleet sharing the store holds the cap together.

use sha2::Digest as _;
use std::sync::Arc;
use toolhost::{Entries, Host, MemoryStore, StateStore};

/// The namespace of the front's records in a state store.
pub(crate) const NAMESPACE: &str = "mcp-front";

/// What an identity holds, each kind capped on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// HTTP sessions of the revisions that have them.
    HttpSession,
    /// State handles (2026-07-28).
    Handle,
    /// Calls waiting for the user's answer (2026-07-28).
    Waiting,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::HttpSession => "http",
            Kind::Handle => "handles",
            Kind::Waiting => "waiting",
        }
    }
}

/// The front's records, and whether other instances share them.
pub(crate) struct Records {
    store: Arc<dyn StateStore>,
    shared: bool,
}

impl Records {
    /// In the host's state store when `shared`, else in this process's
    /// memory.
    pub(crate) fn new(host: &Host, shared: bool) -> Records {
        match shared {
            true => Records { store: host.state_store().namespace(NAMESPACE), shared },
            false => Records::in_memory(),
        }
    }

    /// In this process's memory.
    pub(crate) fn in_memory() -> Records {
        Records { store: MemoryStore::default().namespace(NAMESPACE), shared: false }
    }

    /// Whether other instances see these records (and so the persistent
    /// sessions they name must be in the shared store too).
    pub(crate) fn is_shared(&self) -> bool {
        self.shared
    }

    /// The entries of record `id` (none if there is no such record).
    pub(crate) fn load(&self, id: &str) -> Result<Entries, String> {
        self.store.load(id).map_err(|e| e.to_string())
    }

    /// Sets (or, with `None`, removes) entries of record `id`.
    pub(crate) fn apply(&self, id: &str, changes: &[(&str, Option<String>)]) -> Result<Entries, String> {
        let changes: Vec<(String, Option<String>)> = changes.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        self.store.apply(id, &changes).map_err(|e| e.to_string())
    }

    /// Record `id`, taken out: of two instances taking it at once, one gets
    /// it.
    pub(crate) fn take(&self, id: &str) -> Result<Entries, String> {
        self.store.take(id).map_err(|e| e.to_string())
    }

    /// Forgets record `id`.
    pub(crate) fn remove(&self, id: &str) -> Result<(), String> {
        self.store.remove(id).map_err(|e| e.to_string())
    }

    /// Counts record `id` among what `owner` holds of `kind`, stamped now
    /// (again, if it was counted already), and returns the records beyond
    /// `max` it held, least recently stamped first, out of the count: the
    /// caller ends them. `id` itself is never one of them.
    pub(crate) fn admit(&self, owner: &str, kind: Kind, id: &str, max: usize) -> Result<Vec<String>, String> {
        let index = index_id(owner, kind);
        let held = self.apply(&index, &[(id, Some(stamp()))])?;
        if held.len() <= max {
            return Ok(Vec::new());
        }
        let mut by_age: Vec<(u128, &String)> =
            held.iter().filter(|(k, _)| *k != id).map(|(k, v)| (v.parse().unwrap_or(0), k)).collect();
        by_age.sort();
        let beyond: Vec<String> = by_age.into_iter().take(held.len() - max).map(|(_, k)| k.clone()).collect();
        let out: Vec<(&str, Option<String>)> = beyond.iter().map(|k| (k.as_str(), None)).collect();
        self.apply(&index, &out)?;
        Ok(beyond)
    }

    /// Takes record `id` out of what `owner` holds of `kind`.
    pub(crate) fn release(&self, owner: &str, kind: Kind, id: &str) -> Result<(), String> {
        self.apply(&index_id(owner, kind), &[(id, None)]).map(|_| ())
    }
}

/// The record counting what `owner` holds of `kind`: named by a digest of
/// the identity, so any identity names a valid record.
fn index_id(owner: &str, kind: Kind) -> String {
    let digest = sha2::Sha256::digest(owner.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("owner-{}-{hex}", kind.name())
}

/// Now, in microseconds since the epoch: the order in which records were
/// admitted or used.
fn stamp() -> String {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(store: &dyn StateStore) -> Records {
        Records { store: store.namespace(NAMESPACE), shared: true }
    }

    #[test]
    fn the_cap_holds_across_instances_sharing_a_store_and_per_identity_and_kind() {
        let store = MemoryStore::default();
        let (a, b) = (records(&store), records(&store));
        let mut ended = Vec::new();
        for i in 0..10 {
            let on = if i % 2 == 0 { &a } else { &b };
            on.apply(&format!("r{i}"), &[("owner", Some("alice".into()))]).unwrap();
            ended.extend(on.admit("alice", Kind::Handle, &format!("r{i}"), 4).unwrap());
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert_eq!(ended, ["r0", "r1", "r2", "r3", "r4", "r5"]);
        // Another identity, or another kind, is counted apart.
        assert!(a.admit("bob", Kind::Handle, "x", 4).unwrap().is_empty());
        assert!(b.admit("alice", Kind::Waiting, "y", 4).unwrap().is_empty());
        // Used again, a record is the newest: the next one ends another.
        b.admit("alice", Kind::Handle, "r6", 4).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert_eq!(a.admit("alice", Kind::Handle, "r10", 4).unwrap(), ["r7"]);
        // Released, a record no longer counts.
        a.release("alice", Kind::Handle, "r8").unwrap();
        assert!(a.admit("alice", Kind::Handle, "r11", 4).unwrap().is_empty());
        // The records are in the front's namespace, not among sessions.
        assert!(store.load("r9").unwrap().is_empty());
        assert_eq!(a.load("r9").unwrap()["owner"], "alice");
    }

    #[test]
    fn any_identity_names_a_record_every_store_takes() {
        let dir = tempfile::tempdir().unwrap();
        let files = toolhost::FileStore::new(dir.path());
        let odd = format!("{}@x.y-z_{}", "é".repeat(40), "a".repeat(128));
        let ids = [index_id("alice", Kind::Handle), index_id(&odd, Kind::HttpSession)];
        for id in &ids {
            files.namespace(NAMESPACE).apply(id, &[("k".into(), Some("v".into()))]).unwrap();
        }
        assert_ne!(index_id("alice", Kind::Handle), index_id("alice", Kind::Waiting));
        assert_ne!(index_id("alice", Kind::Handle), index_id("bob", Kind::Handle));
    }
}
