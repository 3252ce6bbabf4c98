//! Calls in flight, as leases in one record (a call's lease id to the
//! moment it lapses, in milliseconds since the epoch): a call holds one
//! while it runs, and the process running it renews it, so the calls of an
//! instance that died stop counting once their leases lapse.

use crate::session::{Changes, Entries, StateStore};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// How long a lease lasts unless renewed.
pub(super) const LEASE: Duration = Duration::from_secs(60);
/// How often a process renews the leases of its running calls.
const RENEW_EVERY: Duration = Duration::from_secs(20);

/// The live leases of `entries` at `now_ms`, and the changes that remove
/// the lapsed ones (and fields that are not leases).
pub(super) fn live(entries: &Entries, now_ms: u64) -> (usize, Changes) {
    let mut live = 0;
    let mut lapsed = Changes::new();
    for (id, until) in entries {
        match until.parse::<u64>() {
            Ok(until) if until > now_ms => live += 1,
            _ => lapsed.push((id.clone(), None)),
        }
    }
    (live, lapsed)
}

/// The leases this process holds, renewed by a thread of their own while
/// any is held.
#[derive(Default)]
pub(super) struct Held {
    leases: Mutex<BTreeSet<(String, String)>>,
    renewing: Mutex<bool>,
}

impl Held {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<(String, String)>> {
        self.leases.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds lease `lease` of record `record`, renewing it from now on.
    pub(super) fn hold(self: &Arc<Self>, store: &Arc<dyn StateStore>, record: &str, lease: &str) {
        self.lock().insert((record.to_string(), lease.to_string()));
        let mut renewing = self.renewing.lock().unwrap_or_else(|e| e.into_inner());
        if !*renewing {
            *renewing = true;
            let (held, store) = (Arc::downgrade(self), Arc::clone(store));
            let started =
                std::thread::Builder::new().name("toolhost-leases".into()).spawn(move || renew(&held, &*store));
            if let Err(e) = started {
                *renewing = false;
                tracing::warn!(error = %e, "cannot start renewing quota leases; a call longer than a minute may stop counting");
            }
        }
    }

    /// Stops renewing lease `lease` of record `record`.
    pub(super) fn release(&self, record: &str, lease: &str) {
        self.lock().remove(&(record.to_string(), lease.to_string()));
    }
}

/// Renews every held lease every [`RENEW_EVERY`], until the leases are
/// gone (their host ended).
fn renew(held: &Weak<Held>, store: &dyn StateStore) {
    loop {
        std::thread::sleep(RENEW_EVERY);
        let Some(held) = held.upgrade() else { return };
        let leases: Vec<(String, String)> = held.lock().iter().cloned().collect();
        let until = (super::now_ms() + LEASE.as_millis() as u64).to_string();
        for (record, lease) in leases {
            // Only a lease still there is renewed: one released meanwhile
            // stays released.
            let renewed = store.update(&record, &mut |entries| match entries.contains_key(&lease) {
                true => vec![(lease.clone(), Some(until.clone()))],
                false => Vec::new(),
            });
            if let Err(e) = renewed {
                tracing::warn!(error = %e, record, "cannot renew a quota lease; it lapses within a minute");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lapsed_leases_and_strays_do_not_count_and_are_removed() {
        let entries: Entries = [("a", "2000"), ("b", "999"), ("c", "junk"), ("d", "1001")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let (live, lapsed) = live(&entries, 1000);
        assert_eq!(live, 2);
        assert_eq!(lapsed, [("b".to_string(), None), ("c".to_string(), None)]);
    }
}
