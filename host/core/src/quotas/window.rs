//! Amounts counted in time buckets of one record (`b<bucket number>` to the
//! amount): what fell in the last minute or hour, what has aged out, and
//! when enough will have aged out for more.

use crate::session::{Changes, Entries};
use std::time::Duration;

/// A sliding window made of fixed buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Window {
    /// Seconds per bucket.
    pub(super) bucket_secs: u64,
    /// Buckets in the window (the current one included).
    pub(super) buckets: u64,
}

/// The last minute, in five-second buckets.
pub(super) const MINUTE: Window = Window { bucket_secs: 5, buckets: 12 };
/// The last hour, in one-minute buckets.
pub(super) const HOUR: Window = Window { bucket_secs: 60, buckets: 60 };

/// What a record holds at one moment.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Tally {
    /// The amounts of the window, oldest bucket first.
    pub(super) live: Vec<(u64, u64)>,
    /// Fields that aged out (or are not buckets): to remove.
    pub(super) stale: Vec<String>,
}

impl Tally {
    /// Everything in the window.
    pub(super) fn total(&self) -> u64 {
        self.live.iter().map(|(_, amount)| amount).fold(0, |a, b| a.saturating_add(*b))
    }
}

impl Window {
    /// The bucket `now_secs` falls in.
    pub(super) fn bucket(&self, now_secs: u64) -> u64 {
        now_secs / self.bucket_secs
    }

    /// What `entries` hold in the window ending at `now_secs`.
    pub(super) fn tally(&self, entries: &Entries, now_secs: u64) -> Tally {
        let current = self.bucket(now_secs);
        let oldest = current.saturating_sub(self.buckets - 1);
        let mut tally = Tally::default();
        for (key, value) in entries {
            let parsed = key.strip_prefix('b').and_then(|b| b.parse::<u64>().ok()).zip(value.parse::<u64>().ok());
            match parsed {
                // A bucket ahead of this clock (another instance's runs a
                // little fast) counts as the current one.
                Some((bucket, amount)) if bucket >= oldest => tally.live.push((bucket.min(current), amount)),
                _ => tally.stale.push(key.clone()),
            }
        }
        tally.live.sort_unstable();
        tally
    }

    /// The changes that add `amount` to the current bucket, given `tally`,
    /// and remove the stale fields.
    pub(super) fn add(&self, tally: &Tally, entries: &Entries, amount: u64, now_secs: u64) -> Changes {
        let key = format!("b{}", self.bucket(now_secs));
        let before: u64 = entries.get(&key).and_then(|v| v.parse().ok()).unwrap_or(0);
        let mut changes: Changes = tally.stale.iter().map(|k| (k.clone(), None)).collect();
        if amount > 0 {
            changes.push((key, Some(before.saturating_add(amount).to_string())));
        }
        changes
    }

    /// The changes that take `amount` back out of bucket `bucket` (a count
    /// undone), or nothing if that bucket is gone.
    pub(super) fn take_back(&self, entries: &Entries, bucket: u64, amount: u64) -> Changes {
        let key = format!("b{bucket}");
        match entries.get(&key).and_then(|v| v.parse::<u64>().ok()) {
            Some(held) if held > amount => vec![(key, Some((held - amount).to_string()))],
            Some(_) => vec![(key, None)],
            None => Vec::new(),
        }
    }

    /// How long until `need` more fits under `limit`, if nothing more is
    /// added: until enough of the oldest buckets have aged out.
    pub(super) fn wait(&self, tally: &Tally, limit: u64, need: u64, now_secs: u64) -> Duration {
        let mut total = tally.total();
        for (bucket, amount) in &tally.live {
            if total.saturating_add(need) <= limit {
                break;
            }
            total = total.saturating_sub(*amount);
            if total.saturating_add(need) <= limit {
                let leaves = (bucket + self.buckets) * self.bucket_secs;
                return Duration::from_secs(leaves.saturating_sub(now_secs).max(1));
            }
        }
        // More than the limit even with the window empty, or nothing held.
        Duration::from_secs(self.buckets * self.bucket_secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(pairs: &[(&str, &str)]) -> Entries {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_window_holds_the_last_buckets_and_drops_the_rest() {
        // now = 1000 s: bucket 200; the minute is buckets 189..=200.
        let held = entries(&[("b188", "7"), ("b189", "2"), ("b200", "3"), ("b201", "1"), ("x", "1"), ("b190", "no")]);
        let tally = MINUTE.tally(&held, 1000);
        assert_eq!(tally.live, [(189, 2), (200, 1), (200, 3)]);
        assert_eq!(tally.total(), 6);
        let mut stale = tally.stale.clone();
        stale.sort();
        assert_eq!(stale, ["b188", "b190", "x"]);
        let changes = MINUTE.add(&tally, &held, 1, 1000);
        assert!(changes.contains(&("b200".into(), Some("4".into()))));
        assert!(changes.contains(&("b188".into(), None)));
        assert_eq!(MINUTE.take_back(&held, 200, 1), [("b200".into(), Some("2".into()))]);
        assert_eq!(MINUTE.take_back(&held, 189, 2), [("b189".into(), None)]);
        assert!(MINUTE.take_back(&held, 150, 1).is_empty());
    }

    #[test]
    fn the_wait_is_until_enough_of_the_oldest_buckets_leave() {
        // Limit 5, six held: two in bucket 189 (leaves at 201 * 5 = 1005 s).
        let held = entries(&[("b189", "2"), ("b195", "4")]);
        let tally = MINUTE.tally(&held, 1000);
        assert_eq!(MINUTE.wait(&tally, 5, 1, 1000), Duration::from_secs(5));
        // Limit 2: both buckets must leave; the second at 207 * 5.
        assert_eq!(MINUTE.wait(&tally, 2, 1, 1000), Duration::from_secs(35));
        // A need larger than the limit never fits: the whole window.
        assert_eq!(MINUTE.wait(&tally, 2, 3, 1000), Duration::from_secs(60));
        assert_eq!(HOUR.wait(&HOUR.tally(&Entries::new(), 5), 0, 1, 5), Duration::from_secs(3600));
    }
}
