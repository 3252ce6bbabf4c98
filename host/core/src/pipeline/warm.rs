//! Warm instances: a tool that declares `reuse-instance` gets its next call
//! of the same session served by the instance of its last one, instead of a
//! fresh one (an interpreter's runtime is set up once, not per call).
//!
//! An instance is kept only for what it was made for: the same session, the
//! same tools (a reload makes every kept instance stale), the same grants and
//! the same directories (its WASI preopens). It is never kept after a fault
//! (trap, timeout, cancellation, memory limit, output the host could not
//! read), nor once what it printed nears the capture limit. At most
//! [`WARM_INSTANCES`] are kept, the least recently used going first, and
//! none longer than [`IDLE`] unused; their pool slots are set aside beside
//! the calls' own, so a kept instance never keeps a call from starting.

use crate::fsx::Dirs;
use crate::registry::Registry;
use crate::sandbox::{CAPTURED_OUTPUT, Grants, Instance};
use crate::session::Session;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Instances kept at most, across sessions and tools.
pub const WARM_INSTANCES: u32 = 4;
/// How long an unused instance is kept.
pub const IDLE: Duration = Duration::from_secs(60);

/// What a kept instance was made for.
pub(super) struct Key {
    session: Weak<Session>,
    registry: Weak<Registry>,
    tool: String,
    /// The grants the user gave since start, when those are in use (the
    /// tool's own grants are part of the registry).
    granted: Option<Weak<Grants>>,
    dirs: Dirs,
}

impl Key {
    pub(super) fn new(
        session: &Arc<Session>,
        registry: &Arc<Registry>,
        tool: &str,
        granted: Option<&Arc<Grants>>,
        dirs: &Dirs,
    ) -> Key {
        Key {
            session: Arc::downgrade(session),
            registry: Arc::downgrade(registry),
            tool: tool.to_string(),
            granted: granted.map(Arc::downgrade),
            dirs: dirs.clone(),
        }
    }

    fn matches(&self, other: &Key) -> bool {
        Weak::ptr_eq(&self.session, &other.session)
            && Weak::ptr_eq(&self.registry, &other.registry)
            && self.tool == other.tool
            && match (&self.granted, &other.granted) {
                (None, None) => true,
                (Some(a), Some(b)) => Weak::ptr_eq(a, b),
                _ => false,
            }
            && self.dirs == other.dirs
    }

    /// Whether what it was made for is gone: the session ended, or the
    /// tools were reloaded.
    fn stale(&self, current: &Arc<Registry>) -> bool {
        self.session.strong_count() == 0 || !std::ptr::eq(self.registry.as_ptr(), Arc::as_ptr(current))
    }
}

struct Kept {
    key: Key,
    instance: Instance,
    since: Instant,
}

/// The kept instances.
#[derive(Default)]
pub(super) struct Warm {
    kept: Mutex<Vec<Kept>>,
}

impl Warm {
    /// The instance kept for `key`, if any (taken out: one call at a time).
    pub(super) fn take(&self, key: &Key, current: &Arc<Registry>) -> Option<Instance> {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        Self::prune(&mut kept, current);
        let at = kept.iter().rposition(|k| k.key.matches(key))?;
        Some(kept.remove(at).instance)
    }

    /// Keeps `instance` for `key`'s next call, if it is fit to serve one.
    pub(super) fn put(&self, key: Key, instance: Instance, current: &Arc<Registry>) {
        let (stdout, stderr) = instance.captured.printed();
        // Past half of what is captured, a later write could fail the guest.
        if stdout + stderr > CAPTURED_OUTPUT / 2 || key.stale(current) {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        Self::prune(&mut kept, current);
        if kept.len() >= WARM_INSTANCES as usize {
            kept.remove(0);
        }
        kept.push(Kept { key, instance, since: Instant::now() });
    }

    /// Drops every instance kept for `session` (it ended).
    pub(super) fn forget(&self, session: &Session) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.retain(|k| !std::ptr::eq(k.key.session.as_ptr(), session));
    }

    fn prune(kept: &mut Vec<Kept>, current: &Arc<Registry>) {
        kept.retain(|k| !k.key.stale(current) && k.since.elapsed() < IDLE);
    }
}
