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
use crate::grants::Grants;
use crate::registry::Registry;
use crate::sandbox::{CAPTURED_OUTPUT, Instance};
use crate::session::Session;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Instances kept at most, across sessions and tools.
pub(crate) const WARM_INSTANCES: u32 = 4;
/// How long an unused instance is kept.
pub(crate) const IDLE: Duration = Duration::from_secs(60);

/// What an instance was made for, whatever the session: the same tools
/// (a reload makes it stale), the same tool, grants and directories (its
/// WASI preopens). The key of a spare (`spare`), and most of a warm one's.
#[derive(Clone)]
pub(super) struct Made {
    registry: Weak<Registry>,
    pub(super) tool: String,
    /// The grants the user gave since start, when those are in use (the
    /// tool's own grants are part of the registry).
    granted: Option<Weak<Grants>>,
    dirs: Dirs,
}

impl Made {
    pub(super) fn new(registry: &Arc<Registry>, tool: &str, granted: Option<&Arc<Grants>>, dirs: &Dirs) -> Made {
        Made {
            registry: Arc::downgrade(registry),
            tool: tool.to_string(),
            granted: granted.map(Arc::downgrade),
            dirs: dirs.clone(),
        }
    }

    pub(super) fn matches(&self, other: &Made) -> bool {
        Weak::ptr_eq(&self.registry, &other.registry)
            && self.tool == other.tool
            && match (&self.granted, &other.granted) {
                (None, None) => true,
                (Some(a), Some(b)) => Weak::ptr_eq(a, b),
                _ => false,
            }
            && self.dirs == other.dirs
    }

    /// Whether the tools were reloaded since.
    pub(super) fn reloaded(&self, current: &Arc<Registry>) -> bool {
        !std::ptr::eq(self.registry.as_ptr(), Arc::as_ptr(current))
    }
}

/// What a kept instance was made for: a session, and the rest.
pub(super) struct Key {
    session: Weak<Session>,
    made: Made,
}

impl Key {
    pub(super) fn new(
        session: &Arc<Session>,
        registry: &Arc<Registry>,
        tool: &str,
        granted: Option<&Arc<Grants>>,
        dirs: &Dirs,
    ) -> Key {
        Key { session: Arc::downgrade(session), made: Made::new(registry, tool, granted, dirs) }
    }

    fn matches(&self, other: &Key) -> bool {
        Weak::ptr_eq(&self.session, &other.session) && self.made.matches(&other.made)
    }

    /// Whether what it was made for is gone: the session ended, or the
    /// tools were reloaded.
    fn stale(&self, current: &Arc<Registry>) -> bool {
        self.session.strong_count() == 0 || self.made.reloaded(current)
    }
}

/// What the pool needs to know of an instance.
pub(super) trait Keepable {
    /// When it was made.
    fn born(&self) -> Instant;
    /// When it last served a call, if ever.
    fn last_call(&self) -> Option<Instant>;
    /// Bytes it printed so far, on stdout and stderr together.
    fn printed(&self) -> usize;
}

impl Keepable for Instance {
    fn born(&self) -> Instant {
        self.born
    }
    fn last_call(&self) -> Option<Instant> {
        self.last_call
    }
    fn printed(&self) -> usize {
        let (stdout, stderr) = self.captured.printed();
        stdout + stderr
    }
}

struct Kept<I> {
    key: Key,
    instance: I,
    since: Instant,
}

/// The kept instances.
pub(super) struct Warm<I = Instance> {
    kept: Mutex<Vec<Kept<I>>>,
}

impl<I> Default for Warm<I> {
    fn default() -> Self {
        Warm { kept: Mutex::new(Vec::new()) }
    }
}

impl<I: Keepable> Warm<I> {
    /// The instance kept for `key`, if any (taken out: one call at a time).
    pub(super) fn take(&self, key: &Key, current: &Arc<Registry>) -> Option<I> {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        Self::prune(&mut kept, current);
        let at = kept.iter().position(|k| k.key.matches(key))?;
        Some(kept.remove(at).instance)
    }

    /// Keeps `instance` for `key`'s next call, if it is fit to serve one.
    pub(super) fn put(&self, key: Key, instance: I, current: &Arc<Registry>) {
        // Past half of what is kept of its output, the next calls' lines
        // would no longer reach the log.
        if instance.printed() > CAPTURED_OUTPUT / 2 || key.stale(current) {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        Self::prune(&mut kept, current);
        // One instance per use: while one is busy (serving a call, or a
        // classification), another may be made for the same use. The one
        // that served the latest call stays (else the older), so a
        // session's calls keep meeting the instance of the call before.
        if let Some(at) = kept.iter().position(|k| k.key.matches(&key)) {
            let rank = |i: &I| (i.last_call(), std::cmp::Reverse(i.born()));
            if rank(&kept[at].instance) >= rank(&instance) {
                kept[at].since = Instant::now();
                return;
            }
            kept.remove(at);
        }
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

    fn prune(kept: &mut Vec<Kept<I>>, current: &Arc<Registry>) {
        kept.retain(|k| !k.key.stale(current) && k.since.elapsed() < IDLE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake {
        born: Instant,
        last_call: Option<Instant>,
        printed: usize,
    }

    impl Keepable for Fake {
        fn born(&self) -> Instant {
            self.born
        }
        fn last_call(&self) -> Option<Instant> {
            self.last_call
        }
        fn printed(&self) -> usize {
            self.printed
        }
    }

    fn fake() -> Fake {
        std::thread::sleep(Duration::from_millis(1));
        Fake { born: Instant::now(), last_call: None, printed: 0 }
    }

    struct World {
        sessions: Vec<Arc<Session>>,
        registry: Arc<Registry>,
        _dir: tempfile::TempDir,
    }

    impl World {
        fn new() -> World {
            let dir = tempfile::tempdir().unwrap();
            let sessions = (0..6).map(|_| Arc::new(Session::ephemeral(dir.path()))).collect();
            World { sessions, registry: Arc::new(Registry::default()), _dir: dir }
        }
        fn key(&self, session: usize, tool: &str) -> Key {
            Key::new(&self.sessions[session], &self.registry, tool, None, &Dirs::default())
        }
    }

    #[test]
    fn an_instance_serves_only_what_it_was_made_for() {
        let w = World::new();
        let warm = Warm::default();
        let a = fake();
        let born = a.born;
        warm.put(w.key(0, "T"), a, &w.registry);
        assert!(warm.take(&w.key(1, "T"), &w.registry).is_none(), "another session");
        assert!(warm.take(&w.key(0, "U"), &w.registry).is_none(), "another tool");
        let other_dirs = Dirs { cwd: "/elsewhere".into(), ..Dirs::default() };
        let moved = Key::new(&w.sessions[0], &w.registry, "T", None, &other_dirs);
        assert!(warm.take(&moved, &w.registry).is_none(), "other directories");
        let reloaded = Arc::new(Registry::default());
        assert!(warm.take(&w.key(0, "T"), &reloaded).is_none(), "a reload makes it stale");
        // The reload above pruned it for good.
        assert!(warm.take(&w.key(0, "T"), &w.registry).is_none());
        warm.put(w.key(0, "T"), Fake { born, last_call: None, printed: 0 }, &w.registry);
        assert_eq!(warm.take(&w.key(0, "T"), &w.registry).map(|f| f.born), Some(born));
        assert!(warm.take(&w.key(0, "T"), &w.registry).is_none(), "taken: one call at a time");
    }

    /// A fake that served a call just now.
    fn called() -> Fake {
        let made = fake();
        Fake { last_call: Some(Instant::now()), ..made }
    }

    /// Keeps `first`, then `second`, for one use: when the one kept was
    /// made (the other was dropped).
    fn kept_of(first: Fake, second: Fake) -> Instant {
        let w = World::new();
        let warm = Warm::default();
        warm.put(w.key(0, "T"), first, &w.registry);
        warm.put(w.key(0, "T"), second, &w.registry);
        let kept = warm.take(&w.key(0, "T"), &w.registry).expect("one kept").born;
        assert!(warm.take(&w.key(0, "T"), &w.registry).is_none(), "the other was dropped");
        kept
    }

    /// A classification made an instance while the session's kept one
    /// was busy classifying another call, so the call ran on a third: of
    /// the two that come back, the one that served the call stays, in
    /// either order; of two that both served calls, the later one.
    #[test]
    fn of_two_instances_for_one_use_the_one_that_served_the_last_call_is_kept() {
        let (older, served) = (fake(), called());
        let born = served.born;
        assert_eq!(kept_of(served, older), born);
        let (older, served) = (fake(), called());
        let born = served.born;
        assert_eq!(kept_of(older, served), born);
        let (earlier, later) = (called(), called());
        let born = later.born;
        assert_eq!(kept_of(later, earlier), born);
    }

    /// Neither served a call (two classifications at once): the older one
    /// is kept and the other dropped, whichever comes back last.
    #[test]
    fn of_two_instances_for_one_use_the_older_is_kept() {
        let (older, newer) = (fake(), fake());
        let born = older.born;
        assert_eq!(kept_of(older, newer), born);
        let (older, newer) = (fake(), fake());
        let born = older.born;
        assert_eq!(kept_of(newer, older), born);
    }

    #[test]
    fn the_least_recently_kept_goes_first_and_a_chatty_one_is_not_kept() {
        let w = World::new();
        let warm = Warm::default();
        for session in 0..=WARM_INSTANCES as usize {
            warm.put(w.key(session, "T"), fake(), &w.registry);
        }
        assert!(warm.take(&w.key(0, "T"), &w.registry).is_none(), "the first went when the limit was passed");
        for session in 1..=WARM_INSTANCES as usize {
            assert!(warm.take(&w.key(session, "T"), &w.registry).is_some(), "session {session}");
        }
        let chatty = Fake { born: Instant::now(), last_call: None, printed: CAPTURED_OUTPUT / 2 + 1 };
        warm.put(w.key(0, "T"), chatty, &w.registry);
        assert!(warm.take(&w.key(0, "T"), &w.registry).is_none());
    }

    #[test]
    fn an_ended_session_keeps_nothing() {
        let mut w = World::new();
        let warm = Warm::default();
        warm.put(w.key(0, "T"), fake(), &w.registry);
        warm.put(w.key(1, "T"), fake(), &w.registry);
        warm.forget(&w.sessions[0]);
        assert!(warm.take(&w.key(0, "T"), &w.registry).is_none());
        warm.put(w.key(2, "T"), fake(), &w.registry);
        let key = w.key(2, "T");
        w.sessions.remove(2);
        assert!(warm.take(&key, &w.registry).is_none(), "a dropped session is stale");
        assert!(warm.take(&w.key(1, "T"), &w.registry).is_some());
    }
}
