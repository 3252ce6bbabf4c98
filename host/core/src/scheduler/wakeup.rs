//! A condition variable that leaves the kernel out when no thread waits.
//!
//! `std::sync::Condvar::notify_all` makes a futex system call whether or not
//! a thread waits on it. The executor and each call's result slot notify at
//! every change, for a thread that blocks on them (`next_blocking`,
//! `take_blocking`), which an async front never is: three system calls per
//! call over MCP that woke nobody (docs/benchmarks.md, instruction counts).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, MutexGuard};
use std::time::Duration;

/// A [`Condvar`] that counts its waiters. Waiters wait with the guard of the
/// mutex under which notifiers change what they wait for; a notifier calls
/// [`Wakeup::notify_all`] after such a change (holding the mutex or not).
#[derive(Default)]
pub(super) struct Wakeup {
    condvar: Condvar,
    /// Threads inside `wait`: counted while the waiter holds the mutex, so a
    /// notifier that changed the state under it after that sees the count.
    waiting: AtomicUsize,
}

impl Wakeup {
    /// Waits for a notification (or a spurious wake-up).
    pub(super) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let guard = self.condvar.wait(guard).unwrap_or_else(|e| e.into_inner());
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        guard
    }

    /// [`Wakeup::wait`], at most `timeout`.
    pub(super) fn wait_timeout<'a, T>(&self, guard: MutexGuard<'a, T>, timeout: Duration) -> MutexGuard<'a, T> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let guard = self.condvar.wait_timeout(guard, timeout).unwrap_or_else(|e| e.into_inner()).0;
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        guard
    }

    /// Wakes every waiting thread, if there is one.
    pub(super) fn notify_all(&self) {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.condvar.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_change_made_while_a_thread_waits_wakes_it_and_none_is_lost() {
        // Many rounds of one waiter and one notifier racing: each change is
        // seen, whichever comes first.
        for _ in 0..2_000 {
            let shared = Arc::new((Mutex::new(false), Wakeup::default()));
            let waiter = {
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let (state, wakeup) = &*shared;
                    let mut ready = state.lock().unwrap();
                    while !*ready {
                        ready = wakeup.wait(ready);
                    }
                })
            };
            let (state, wakeup) = &*shared;
            *state.lock().unwrap() = true;
            wakeup.notify_all();
            waiter.join().unwrap();
        }
    }

    #[test]
    fn with_no_waiter_nothing_is_notified_and_a_timeout_returns() {
        let state = Mutex::new(0);
        let wakeup = Wakeup::default();
        wakeup.notify_all();
        assert_eq!(wakeup.waiting.load(Ordering::SeqCst), 0);
        let guard = wakeup.wait_timeout(state.lock().unwrap(), Duration::from_millis(5));
        assert_eq!(*guard, 0);
        assert_eq!(wakeup.waiting.load(Ordering::SeqCst), 0);
    }
}
