//! Quotas per identity, from the settings' `quotas`: how many calls an
//! identity may start a minute, have running at once, and how much CPU
//! time its calls may use an hour, for all its calls or one tool's.
//!
//! ```json
//! {"quotas": [
//!   {"identity": "*", "callsPerMinute": 120, "callsInFlight": 4, "cpuSecondsPerHour": 600},
//!   {"identity": "ci-bot", "tool": "Bash", "callsPerMinute": 10}
//! ]}
//! ```
//!
//! `"identity": "*"` gives each identity a quota of its own (the calls that
//! come with none, over stdio or an HTTP front without tokens, count
//! together as one). Where several entries limit the same thing for the
//! same calls, the smallest limit holds. A call is counted, or refused,
//! before it runs: the calls of the last minute and the CPU time of the
//! last hour (what finished calls used) in time buckets, the calls in
//! flight as leases a process renews while its call runs. The counts live
//! in a state store: the host's shared one, so that a fleet holds each
//! quota together, or this process's memory. When the store cannot be
//! reached, calls go on uncounted (and the failure is logged and counted):
//! a store outage must not stop every call of the fleet.

mod leases;
mod window;

use crate::session::{Changes, MemoryStore, StateStore};
use leases::Held;
use serde::Deserialize;
use sha2::Digest as _;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The namespace of the counts in a state store.
const NAMESPACE: &str = "quotas";

/// One entry of the settings' `quotas`.
#[derive(Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Quota {
    /// Whose calls: an identity's name (an HTTP token's), or `*` for each
    /// identity on its own.
    #[serde(default = "each")]
    pub identity: String,
    /// Only the calls of this tool (its name as listed); all calls when
    /// absent.
    #[serde(default)]
    pub tool: Option<String>,
    /// Calls started in any minute.
    #[serde(default)]
    pub calls_per_minute: Option<u64>,
    /// Calls running at once (a Script's inner calls run within its own).
    #[serde(default)]
    pub calls_in_flight: Option<u64>,
    /// CPU seconds the calls used in the last hour; a call starts only while
    /// the hour's use is under it.
    #[serde(default)]
    pub cpu_seconds_per_hour: Option<f64>,
}

fn each() -> String {
    EACH.into()
}

/// The identity pattern that gives each identity a quota of its own.
const EACH: &str = "*";

impl Quota {
    /// What is wrong with the entry, if anything.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.identity.is_empty() {
            return Err("`identity` is empty: name an identity, or `*` for each".into());
        }
        if self.tool.as_deref() == Some("") {
            return Err("`tool` is empty: name a tool, or leave it out for all".into());
        }
        if self.calls_per_minute.is_none() && self.calls_in_flight.is_none() && self.cpu_seconds_per_hour.is_none() {
            return Err("sets no limit: give callsPerMinute, callsInFlight or cpuSecondsPerHour".into());
        }
        if self.calls_per_minute == Some(0) || self.calls_in_flight == Some(0) {
            return Err("a limit of calls must be at least 1 (a deny rule refuses every call)".into());
        }
        if self.cpu_seconds_per_hour.is_some_and(|s| !(s.is_finite() && s > 0.0)) {
            return Err("cpuSecondsPerHour must be a number above 0".into());
        }
        Ok(())
    }

    fn covers(&self, identity: &str, tool: &str) -> bool {
        (self.identity == EACH || self.identity == identity) && self.tool.as_deref().is_none_or(|t| t == tool)
    }
}

/// What a quota limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuotaKind {
    /// Calls started in a minute.
    CallsPerMinute,
    /// Calls running at once.
    CallsInFlight,
    /// CPU time of the last hour.
    CpuSecondsPerHour,
}

impl QuotaKind {
    /// Its name in the settings.
    pub fn setting(self) -> &'static str {
        match self {
            QuotaKind::CallsPerMinute => "callsPerMinute",
            QuotaKind::CallsInFlight => "callsInFlight",
            QuotaKind::CpuSecondsPerHour => "cpuSecondsPerHour",
        }
    }

    /// Its name in metrics.
    pub(crate) fn label(self) -> &'static str {
        match self {
            QuotaKind::CallsPerMinute => "calls_per_minute",
            QuotaKind::CallsInFlight => "calls_in_flight",
            QuotaKind::CpuSecondsPerHour => "cpu_seconds_per_hour",
        }
    }

    fn record(self) -> &'static str {
        match self {
            QuotaKind::CallsPerMinute => "rate",
            QuotaKind::CallsInFlight => "flight",
            QuotaKind::CpuSecondsPerHour => "cpu",
        }
    }
}

/// A call refused for being over a quota.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// What it is over.
    pub kind: QuotaKind,
    /// Whose quota (`None`: the calls that come with no identity).
    pub identity: Option<String>,
    /// The tool the quota is for, if it is for one.
    pub tool: Option<String>,
    /// The limit.
    pub limit: f64,
    /// When a call could fit again, if nothing else is counted meanwhile.
    pub retry_after: Duration,
    /// The settings file that set the limit.
    pub origin: Arc<str>,
}

impl Refusal {
    /// [`Refusal::retry_after`] in whole seconds, at least one (an HTTP
    /// `Retry-After`).
    pub fn retry_after_secs(&self) -> u64 {
        self.retry_after.as_secs_f64().ceil().max(1.0) as u64
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let limit = match self.kind {
            QuotaKind::CallsPerMinute => format!("{} calls a minute", self.limit),
            QuotaKind::CallsInFlight => format!("{} calls at once", self.limit),
            QuotaKind::CpuSecondsPerHour => format!("{} CPU seconds an hour", self.limit),
        };
        let of = self.tool.as_deref().map(|t| format!(" of {t}")).unwrap_or_default();
        let who = match &self.identity {
            Some(identity) => format!("identity `{identity}`"),
            None => "calls without an identity".to_string(),
        };
        write!(
            f,
            "Over quota: {limit}{of} for {who} ({origin}). The call did not run; try again in {secs} s.",
            origin = self.origin,
            secs = self.retry_after_secs()
        )
    }
}

/// One limit that applies to a call.
struct Limit {
    kind: QuotaKind,
    tool: Option<String>,
    /// Calls, or CPU microseconds.
    amount: u64,
    /// As set (seconds for CPU).
    set: f64,
    origin: Arc<str>,
}

/// The quotas of a host, and the store their counts are kept in.
pub(crate) struct Quotas {
    entries: Vec<(Quota, Arc<str>)>,
    store: Arc<dyn StateStore>,
    held: Arc<Held>,
    /// This process's leases: a prefix of its own and a counter.
    lease_prefix: String,
    next_lease: AtomicU64,
}

impl Quotas {
    /// `entries` (each with the settings file it comes from), counted in
    /// `store`, or in this process's memory.
    pub(crate) fn new(entries: Vec<(Quota, Arc<str>)>, store: Option<&Arc<dyn StateStore>>) -> Quotas {
        let store = match store {
            Some(store) => store.namespace(NAMESPACE),
            None => MemoryStore::default().namespace(NAMESPACE),
        };
        Quotas {
            entries,
            store,
            held: Arc::default(),
            lease_prefix: crate::session::unguessable_id("")[..16].to_string(),
            next_lease: AtomicU64::new(0),
        }
    }

    /// Whether any quota is set.
    pub(crate) fn any(&self) -> bool {
        !self.entries.is_empty()
    }

    /// The limits on a call of `tool` by `identity` (`""`: none), the
    /// smallest of each kind for each tool scope; calls in flight only for
    /// a call that no other call made.
    fn limits(&self, identity: &str, tool: &str, top_level: bool) -> Vec<Limit> {
        let mut out: Vec<Limit> = Vec::new();
        for (quota, origin) in self.entries.iter().filter(|(q, _)| q.covers(identity, tool)) {
            let set = [
                (QuotaKind::CallsPerMinute, quota.calls_per_minute.map(|n| (n, n as f64))),
                (QuotaKind::CallsInFlight, quota.calls_in_flight.filter(|_| top_level).map(|n| (n, n as f64))),
                (QuotaKind::CpuSecondsPerHour, quota.cpu_seconds_per_hour.map(|s| (((s * 1e6) as u64).max(1), s))),
            ];
            for (kind, limit) in set {
                let Some((amount, set)) = limit else { continue };
                match out.iter_mut().find(|l| l.kind == kind && l.tool == quota.tool) {
                    Some(l) if l.amount <= amount => {}
                    Some(l) => (l.amount, l.set, l.origin) = (amount, set, Arc::clone(origin)),
                    None => out.push(Limit { kind, tool: quota.tool.clone(), amount, set, origin: Arc::clone(origin) }),
                }
            }
        }
        // What only reads first, then what is taken back most cheaply.
        out.sort_by_key(|l| match l.kind {
            QuotaKind::CpuSecondsPerHour => 0,
            QuotaKind::CallsInFlight => 1,
            QuotaKind::CallsPerMinute => 2,
        });
        out
    }

    /// Counts a call of `tool` by `identity` against its quotas, or refuses
    /// it; `top_level`: no other call made it (only those count in
    /// flight). What is counted of a refused call is taken back.
    pub(crate) fn admit(&self, identity: Option<&str>, tool: &str, top_level: bool) -> Result<Admitted, Refusal> {
        self.pass(identity, tool, top_level, true)
    }

    /// Whether a call of `tool` by `identity` would be refused now, without
    /// counting it.
    pub(crate) fn would_refuse(&self, identity: Option<&str>, tool: &str) -> Option<Refusal> {
        self.pass(identity, tool, true, false).err()
    }

    fn pass(&self, identity: Option<&str>, tool: &str, top_level: bool, commit: bool) -> Result<Admitted, Refusal> {
        let mut admitted = Admitted::default();
        if self.entries.is_empty() {
            return Ok(admitted);
        }
        admitted.store = Some(Arc::clone(&self.store));
        admitted.held = Some(Arc::clone(&self.held));
        let who = identity.unwrap_or("");
        let now_ms = now_ms();
        let now_secs = now_ms / 1000;
        for limit in self.limits(who, tool, top_level) {
            let record = record_id(limit.kind, who, limit.tool.as_deref());
            let lease = format!("{}-{}", self.lease_prefix, self.next_lease.fetch_add(1, Ordering::Relaxed));
            let mut wait = None;
            let updated = self.store.update(&record, &mut |entries| {
                wait = None;
                let (over, mut changes): (Option<Duration>, Changes) = match limit.kind {
                    QuotaKind::CallsPerMinute => {
                        let tally = window::MINUTE.tally(entries, now_secs);
                        match tally.total() + 1 > limit.amount {
                            true => (Some(window::MINUTE.wait(&tally, limit.amount, 1, now_secs)), Vec::new()),
                            false => (None, window::MINUTE.add(&tally, entries, u64::from(commit), now_secs)),
                        }
                    }
                    QuotaKind::CpuSecondsPerHour => {
                        let tally = window::HOUR.tally(entries, now_secs);
                        match tally.total() >= limit.amount {
                            true => (Some(window::HOUR.wait(&tally, limit.amount, 1, now_secs)), Vec::new()),
                            false => (None, window::HOUR.add(&tally, entries, 0, now_secs)),
                        }
                    }
                    QuotaKind::CallsInFlight => {
                        let (live, mut lapsed) = leases::live(entries, now_ms);
                        match live as u64 + 1 > limit.amount {
                            // A call in flight may end at any moment.
                            true => (Some(Duration::from_secs(1)), Vec::new()),
                            false => {
                                if commit {
                                    let until = now_ms + leases::LEASE.as_millis() as u64;
                                    lapsed.push((lease.clone(), Some(until.to_string())));
                                }
                                (None, lapsed)
                            }
                        }
                    }
                };
                wait = over;
                if !commit {
                    changes.clear();
                }
                changes
            });
            if let Err(e) = updated {
                tracing::warn!(error = %e, quota = limit.kind.setting(), "cannot count a call against its quota; it goes on uncounted");
                admitted.store_errors += 1;
                continue;
            }
            if let Some(retry_after) = wait {
                return Err(Refusal {
                    kind: limit.kind,
                    identity: identity.map(str::to_string),
                    tool: limit.tool,
                    limit: limit.set,
                    retry_after,
                    origin: limit.origin,
                });
            }
            if !commit {
                continue;
            }
            match limit.kind {
                QuotaKind::CallsPerMinute => admitted.rates.push((record, window::MINUTE.bucket(now_secs))),
                QuotaKind::CpuSecondsPerHour => admitted.cpu.push(record),
                QuotaKind::CallsInFlight => {
                    self.held.hold(&self.store, &record, &lease);
                    admitted.leases.push((record, lease));
                }
            }
        }
        Ok(admitted)
    }
}

/// A call counted against its quotas: it holds its leases until it
/// finishes ([`Admitted::finish`]); dropped unfinished (the call was
/// refused after all), what was counted is taken back.
#[derive(Default)]
pub(crate) struct Admitted {
    store: Option<Arc<dyn StateStore>>,
    held: Option<Arc<Held>>,
    /// Records counting calls a minute, with the bucket this call is in.
    rates: Vec<(String, u64)>,
    /// Records of CPU time an hour.
    cpu: Vec<String>,
    /// Leases held: record and lease.
    leases: Vec<(String, String)>,
    /// Counts the store failed to take.
    pub(crate) store_errors: usize,
}

impl Admitted {
    /// The call finished having used `cpu_us` of CPU time: counts it, and
    /// gives its leases back.
    pub(crate) fn finish(mut self, cpu_us: u64) {
        // Its calls a minute stay counted.
        self.rates.clear();
        let Some(store) = self.store.clone() else { return };
        let now_secs = now_ms() / 1000;
        for record in std::mem::take(&mut self.cpu) {
            let added = store.update(&record, &mut |entries| {
                window::HOUR.add(&window::HOUR.tally(entries, now_secs), entries, cpu_us, now_secs)
            });
            if let Err(e) = added {
                tracing::warn!(error = %e, "cannot count a call's CPU time against its quota");
            }
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let Some(store) = &self.store else { return };
        for (record, bucket) in std::mem::take(&mut self.rates) {
            if let Err(e) = store.update(&record, &mut |entries| window::MINUTE.take_back(entries, bucket, 1)) {
                tracing::warn!(error = %e, "cannot take back a refused call's count");
            }
        }
        for (record, lease) in std::mem::take(&mut self.leases) {
            if let Some(held) = &self.held {
                held.release(&record, &lease);
            }
            if let Err(e) = store.apply(&record, &[(lease, None)]) {
                tracing::warn!(error = %e, "cannot give a call's quota lease back; it lapses within a minute");
            }
        }
    }
}

/// The record counting `kind` for `identity`'s calls (of `tool`, or all):
/// named by a digest, so any identity names a valid record, and the same
/// in every instance.
fn record_id(kind: QuotaKind, identity: &str, tool: Option<&str>) -> String {
    let mut digest = sha2::Sha256::new();
    digest.update(identity.as_bytes());
    digest.update([0]);
    digest.update(tool.unwrap_or(EACH).as_bytes());
    format!("{}-{}", kind.record(), crate::fsx::hex(&digest.finalize()[..16]))
}

/// Now, in milliseconds since the epoch (the fleet's common clock).
fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests;
