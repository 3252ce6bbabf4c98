//! The plugins directory watched: notify's events on component files,
//! debounced into one reload per burst of them.
//!
//! The debounce waits on a [`Clock`]: the real one is the watcher's channel
//! and the system's time; the tests drive it with a clock of their own, so
//! they need no real sleeps to check when reloads happen.

use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// A burst of file events ends after this long without one.
const QUIET: Duration = Duration::from_millis(150);
/// A burst that goes on longer is reloaded anyway (its next event, or the
/// quiet after its last, ends it).
const LONGEST_BURST: Duration = Duration::from_secs(2);

/// Watches `dir` (created if missing) on a thread of its own: each burst of
/// changes to component files calls `reload` once. The thread ends with the
/// watcher returned (which ends with the host), or when `reload` returns
/// false (the host is gone).
pub(super) fn watch(
    dir: &Path,
    reload: impl FnMut() -> bool + Send + 'static,
) -> Result<notify::RecommendedWatcher, String> {
    use notify::Watcher as _;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create it: {e}"))?;
    let (tx, rx) = std::sync::mpsc::channel::<notify::Event>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
        Ok(event) if touches_components(&event) => drop(tx.send(event)),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "watching the plugins directory"),
    })
    .map_err(|e| e.to_string())?;
    watcher.watch(dir, notify::RecursiveMode::NonRecursive).map_err(|e| e.to_string())?;
    std::thread::Builder::new()
        .name("toolhost-watch".into())
        .spawn(move || debounce(&rx, reload))
        .map_err(|e| format!("cannot start its thread: {e}"))?;
    tracing::debug!(dir = %dir.display(), "watching the plugins directory");
    Ok(watcher)
}

/// Whether a file event may change what the plugins directory loads: any
/// creation, change, rename or removal of a component file or of a policy
/// file or manifest beside one (reads are not).
fn touches_components(event: &notify::Event) -> bool {
    use notify::EventKind;
    use notify::event::{AccessKind, AccessMode};
    let kind = match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    };
    kind && event.paths.iter().any(|p| crate::registry::is_component_file(p) || crate::registry::is_companion_file(p))
}

/// What the debounce waits on: the time, and the events, since waiting for
/// the next event (for at most so long) is how its time passes.
trait Clock {
    fn now(&self) -> Instant;
    /// Waits for the next event; false when none will come.
    fn event(&self) -> bool;
    /// Waits at most `timeout` for the next event.
    fn event_within(&self, timeout: Duration) -> Waited;
}

enum Waited {
    Event,
    /// `timeout` passed without an event.
    Quiet,
    /// No event will come.
    Closed,
}

/// The real clock: the watcher's channel, and the system's time.
impl Clock for Receiver<notify::Event> {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn event(&self) -> bool {
        self.recv().is_ok()
    }

    fn event_within(&self, timeout: Duration) -> Waited {
        match self.recv_timeout(timeout) {
            Ok(_) => Waited::Event,
            Err(RecvTimeoutError::Timeout) => Waited::Quiet,
            Err(RecvTimeoutError::Disconnected) => Waited::Closed,
        }
    }
}

/// Calls `reload` once per burst of events: when [`QUIET`] passes without
/// one, or at the first event [`LONGEST_BURST`] or more after the burst
/// began (so a steady trickle is still reloaded). Events during a reload
/// begin the next burst. Returns when the events end (a burst cut short is
/// not reloaded: the host is going) or `reload` returns false.
fn debounce(clock: &impl Clock, mut reload: impl FnMut() -> bool) {
    while clock.event() {
        let until = clock.now() + LONGEST_BURST;
        loop {
            match clock.event_within(QUIET) {
                Waited::Event if clock.now() < until => {}
                Waited::Event | Waited::Quiet => break,
                Waited::Closed => return,
            }
        }
        if !reload() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};
    use std::collections::VecDeque;

    /// A clock that moves only when the debounce waits (or a test moves
    /// it), with events at set times after its start.
    struct Script {
        start: Instant,
        elapsed: Cell<Duration>,
        events: RefCell<VecDeque<Duration>>,
    }

    /// Virtual time after which a debounce that never settles fails its test
    /// instead of hanging it.
    const HORIZON: Duration = Duration::from_secs(3600);

    impl Script {
        fn new(events: impl IntoIterator<Item = u64>) -> Script {
            Script {
                start: Instant::now(),
                elapsed: Cell::new(Duration::ZERO),
                events: RefCell::new(events.into_iter().map(Duration::from_millis).collect()),
            }
        }

        fn advance_to(&self, at: Duration) {
            assert!(at < HORIZON, "the debounce never settled");
            self.elapsed.set(self.elapsed.get().max(at));
        }

        /// Runs the debounce over the script, each reload taking `reload_takes`
        /// ms; the times of the reloads' starts, in ms.
        fn reloads(&self, reload_takes: u64) -> Vec<u64> {
            let mut at = Vec::new();
            debounce(self, || {
                at.push(self.elapsed.get().as_millis() as u64);
                self.advance_to(self.elapsed.get() + Duration::from_millis(reload_takes));
                true
            });
            at
        }
    }

    impl Clock for Script {
        fn now(&self) -> Instant {
            self.start + self.elapsed.get()
        }

        fn event(&self) -> bool {
            let next = self.events.borrow_mut().pop_front();
            next.inspect(|&at| self.advance_to(at)).is_some()
        }

        fn event_within(&self, timeout: Duration) -> Waited {
            let deadline = self.elapsed.get() + timeout;
            let mut events = self.events.borrow_mut();
            match events.front().copied() {
                Some(at) if at <= deadline => {
                    events.pop_front();
                    self.advance_to(at);
                    Waited::Event
                }
                _ => {
                    self.advance_to(deadline);
                    Waited::Quiet
                }
            }
        }
    }

    #[test]
    fn the_timings_these_tests_assume() {
        assert_eq!((QUIET, LONGEST_BURST), (Duration::from_millis(150), Duration::from_secs(2)));
    }

    #[test]
    fn a_burst_reloads_once_after_the_quiet_and_a_later_one_again() {
        let script = Script::new([0, 50, 100, 240, 1000, 1100]);
        assert_eq!(script.reloads(0), [240 + 150, 1100 + 150]);
    }

    #[test]
    fn a_steady_trickle_is_reloaded_at_its_first_event_past_the_longest_burst() {
        // An event every 120 ms for almost five seconds: never 150 ms of quiet.
        let script = Script::new((0..40).map(|i| i * 120));
        // Bursts begin at 0, 2160 and 4320 ms; the first two end at their
        // first event 2 s or more in, the last in the quiet after 4680.
        assert_eq!(script.reloads(0), [2040, 4200, 4680 + 150]);
    }

    #[test]
    fn events_during_a_reload_make_another() {
        // The reload of the burst at 0 runs from 150 to 1150 ms.
        let script = Script::new([0, 500, 900]);
        assert_eq!(script.reloads(1000), [150, 1150 + 150]);
    }

    #[test]
    fn a_host_gone_ends_the_watch() {
        let script = Script::new([0, 1000]);
        let mut reloads = 0;
        debounce(&script, || {
            reloads += 1;
            false
        });
        assert_eq!((reloads, script.events.borrow().len()), (1, 1), "the event at 1000 ms is never waited for");
    }
}
