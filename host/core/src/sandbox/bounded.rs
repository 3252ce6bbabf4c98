//! `wasi:io` with the call's deadline and cancellation: every host function
//! in which a guest can wait (`poll`, `pollable.block`, the streams'
//! `blocking-*` functions) stops waiting when the call is cancelled or out
//! of time, and traps with [`Interrupted`], like the epoch check does for a
//! guest spinning in wasm.
//!
//! Everything that waits in WASI 0.2 waits here: sleeping is a clock's
//! pollable, sockets, HTTP bodies and responses, stdin and pipes are
//! pollables and streams. These definitions replace wasmtime-wasi's
//! synchronous ones in the linker and delegate to its implementations; a
//! call that does not wait pays nothing.

use super::store::{HostState, Interrupted};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};
use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::io::poll as async_poll;
use wasmtime_wasi::p2::bindings::io::streams::{HostInputStream as AsyncInput, HostOutputStream as AsyncOutput};
use wasmtime_wasi::p2::bindings::sync::io::poll::{self, Pollable};
use wasmtime_wasi::p2::bindings::sync::io::streams::{self, InputStream, OutputStream};
use wasmtime_wasi::p2::{StreamError, StreamResult};
use wasmtime_wasi::runtime::with_ambient_tokio_runtime;

/// How often a waiting guest's cancellation flag is looked at.
const CANCEL_CHECK: Duration = Duration::from_millis(5);

/// Replaces the waiting functions of `wasi:io/poll` and `wasi:io/streams`
/// (added by `wasmtime_wasi::p2::add_to_linker_sync`) with bounded ones.
pub(super) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let added = poll::add_to_linker::<HostState, BoundedIo>(linker, BoundedIo::view)
        .and_then(|()| streams::add_to_linker::<HostState, BoundedIo>(linker, BoundedIo::view));
    linker.allow_shadowing(false);
    added
}

/// The Store's resource table, seen with the call's limits.
pub(super) struct Bounded<'a> {
    table: &'a mut ResourceTable,
    deadline: Option<(Instant, Duration)>,
    cancel: Option<&'a AtomicBool>,
}

struct BoundedIo;

impl HasData for BoundedIo {
    type Data<'a> = Bounded<'a>;
}

impl BoundedIo {
    fn view(state: &mut HostState) -> Bounded<'_> {
        Bounded { table: &mut state.table, deadline: state.call.deadline, cancel: state.call.cancel.as_deref() }
    }
}

/// When a call must stop: its deadline and cancellation, owned, so a call
/// into the guest may borrow the Store while they are watched.
pub(crate) struct Stop {
    deadline: Option<(Instant, Duration)>,
    cancel: Option<Arc<AtomicBool>>,
}

impl crate::contract::Wait for Stop {
    /// Runs `work` with the ambient tokio runtime entered, which
    /// wasmtime-wasi's host futures need.
    fn wait<F: Future>(&self, work: F) -> wasmtime::Result<F::Output> {
        Ok(until_stopped(self.deadline, self.cancel.as_deref(), work)?)
    }
}

impl crate::contract::Bounds for HostState {
    type Stop = Stop;
    fn stop(&self) -> Stop {
        Stop { deadline: self.call.deadline, cancel: self.call.cancel.clone() }
    }
}

/// Runs `work` until it finishes or the call must stop, whichever is first.
/// Dropping `work` is how wasmtime-wasi's waits are cancelled.
///
/// The calling thread waits here itself, parked between polls, with the
/// ambient tokio runtime (wasmtime-wasi's own where the thread has none)
/// entered but never *running*: so a wait may nest in another. That
/// happens on every call of a component on the async ABI, whose whole call
/// is waited for here while its guest calls WASI 0.2's blocking functions
/// (`blocking-flush` under `console.log`, a pollable's `block` under a
/// sleep), which wait here again, and wasmtime-wasi's synchronous bindings
/// (files, sockets, HTTP), which run their futures with tokio's `block_on`
/// and may do so only outside a running runtime. The deadline and the
/// cancellation flag are looked at by the waiting thread itself, so they
/// hold even when no runtime drives timers.
fn until_stopped<F: Future>(
    deadline: Option<(Instant, Duration)>,
    cancel: Option<&AtomicBool>,
    work: F,
) -> Result<F::Output, Interrupted> {
    with_ambient_tokio_runtime(|| park_until(deadline, cancel, work))
}

/// Wakes the thread that waits in [`park_until`], with a flag of its own so
/// that a wake taken by a wait nested in the poll is not lost.
struct Unpark {
    thread: std::thread::Thread,
    woken: AtomicBool,
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

fn park_until<F: Future>(
    deadline: Option<(Instant, Duration)>,
    cancel: Option<&AtomicBool>,
    work: F,
) -> Result<F::Output, Interrupted> {
    let unpark = Arc::new(Unpark { thread: std::thread::current(), woken: AtomicBool::new(false) });
    let waker = Waker::from(Arc::clone(&unpark));
    let mut cx = Context::from_waker(&waker);
    let mut work = pin!(work);
    loop {
        // Cleared before the poll: a wake during it (a wait nested in the
        // poll may have taken the thread's unpark token) polls again.
        unpark.woken.store(false, Ordering::Release);
        if let Poll::Ready(out) = work.as_mut().poll(&mut cx) {
            return Ok(out);
        }
        // Looked at after every poll, so work that keeps waking itself
        // still stops at the deadline.
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(Interrupted::Cancelled);
        }
        let mut wait = None;
        if let Some((at, limit)) = deadline {
            let left = at.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Interrupted::Timeout(limit));
            }
            wait = Some(left);
        }
        if cancel.is_some() {
            wait = Some(wait.map_or(CANCEL_CHECK, |w| w.min(CANCEL_CHECK)));
        }
        if unpark.woken.load(Ordering::Acquire) {
            continue;
        }
        match wait {
            Some(wait) => std::thread::park_timeout(wait),
            None => std::thread::park(),
        }
    }
}

impl Bounded<'_> {
    fn wait<F: Future<Output = wasmtime::Result<R>>, R>(
        deadline: Option<(Instant, Duration)>,
        cancel: Option<&AtomicBool>,
        work: F,
    ) -> wasmtime::Result<R> {
        until_stopped(deadline, cancel, work)?
    }

    fn wait_stream<F: Future<Output = StreamResult<R>>, R>(
        deadline: Option<(Instant, Duration)>,
        cancel: Option<&AtomicBool>,
        work: F,
    ) -> StreamResult<R> {
        until_stopped(deadline, cancel, work).map_err(|why| StreamError::Trap(why.into()))?
    }
}

impl poll::Host for Bounded<'_> {
    fn poll(&mut self, pollables: Vec<Resource<Pollable>>) -> wasmtime::Result<Vec<u32>> {
        Self::wait(self.deadline, self.cancel, async_poll::Host::poll(self.table, pollables))
    }
}

impl poll::HostPollable for Bounded<'_> {
    fn ready(&mut self, pollable: Resource<Pollable>) -> wasmtime::Result<bool> {
        // Polls once; never waits.
        poll::HostPollable::ready(self.table, pollable)
    }
    fn block(&mut self, pollable: Resource<Pollable>) -> wasmtime::Result<()> {
        Self::wait(self.deadline, self.cancel, async_poll::HostPollable::block(self.table, pollable))
    }
    fn drop(&mut self, pollable: Resource<Pollable>) -> wasmtime::Result<()> {
        poll::HostPollable::drop(self.table, pollable)
    }
}

impl streams::Host for Bounded<'_> {
    fn convert_stream_error(&mut self, err: StreamError) -> wasmtime::Result<streams::StreamError> {
        streams::Host::convert_stream_error(self.table, err)
    }
}

impl streams::HostInputStream for Bounded<'_> {
    fn drop(&mut self, stream: Resource<InputStream>) -> wasmtime::Result<()> {
        streams::HostInputStream::drop(self.table, stream)
    }
    fn read(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<Vec<u8>> {
        streams::HostInputStream::read(self.table, stream, len)
    }
    fn blocking_read(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<Vec<u8>> {
        Self::wait_stream(self.deadline, self.cancel, AsyncInput::blocking_read(self.table, stream, len))
    }
    fn skip(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<u64> {
        streams::HostInputStream::skip(self.table, stream, len)
    }
    fn blocking_skip(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<u64> {
        Self::wait_stream(self.deadline, self.cancel, AsyncInput::blocking_skip(self.table, stream, len))
    }
    fn subscribe(&mut self, stream: Resource<InputStream>) -> wasmtime::Result<Resource<Pollable>> {
        streams::HostInputStream::subscribe(self.table, stream)
    }
}

impl streams::HostOutputStream for Bounded<'_> {
    fn drop(&mut self, stream: Resource<OutputStream>) -> wasmtime::Result<()> {
        streams::HostOutputStream::drop(self.table, stream)
    }
    fn check_write(&mut self, stream: Resource<OutputStream>) -> StreamResult<u64> {
        streams::HostOutputStream::check_write(self.table, stream)
    }
    fn write(&mut self, stream: Resource<OutputStream>, bytes: Vec<u8>) -> StreamResult<()> {
        streams::HostOutputStream::write(self.table, stream, bytes)
    }
    fn blocking_write_and_flush(&mut self, stream: Resource<OutputStream>, bytes: Vec<u8>) -> StreamResult<()> {
        Self::wait_stream(self.deadline, self.cancel, AsyncOutput::blocking_write_and_flush(self.table, stream, bytes))
    }
    fn write_zeroes(&mut self, stream: Resource<OutputStream>, len: u64) -> StreamResult<()> {
        streams::HostOutputStream::write_zeroes(self.table, stream, len)
    }
    fn blocking_write_zeroes_and_flush(&mut self, stream: Resource<OutputStream>, len: u64) -> StreamResult<()> {
        let work = AsyncOutput::blocking_write_zeroes_and_flush(self.table, stream, len);
        Self::wait_stream(self.deadline, self.cancel, work)
    }
    fn flush(&mut self, stream: Resource<OutputStream>) -> StreamResult<()> {
        streams::HostOutputStream::flush(self.table, stream)
    }
    fn blocking_flush(&mut self, stream: Resource<OutputStream>) -> StreamResult<()> {
        Self::wait_stream(self.deadline, self.cancel, AsyncOutput::blocking_flush(self.table, stream))
    }
    fn subscribe(&mut self, stream: Resource<OutputStream>) -> wasmtime::Result<Resource<Pollable>> {
        streams::HostOutputStream::subscribe(self.table, stream)
    }
    fn splice(&mut self, dst: Resource<OutputStream>, src: Resource<InputStream>, len: u64) -> StreamResult<u64> {
        streams::HostOutputStream::splice(self.table, dst, src, len)
    }
    fn blocking_splice(
        &mut self,
        dst: Resource<OutputStream>,
        src: Resource<InputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        Self::wait_stream(self.deadline, self.cancel, AsyncOutput::blocking_splice(self.table, dst, src, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_ends_at_the_deadline_with_the_limit() {
        let limit = Duration::from_millis(30);
        let started = Instant::now();
        let out = until_stopped(Some((Instant::now() + limit, limit)), None, std::future::pending::<()>());
        assert_eq!(out, Err(Interrupted::Timeout(limit)));
        assert!(started.elapsed() >= limit);
    }

    #[test]
    fn a_wait_ends_on_cancellation() {
        let cancel = std::sync::Arc::new(AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&cancel);
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            flag.store(true, Ordering::Relaxed);
        });
        let out = until_stopped(None, Some(&cancel), std::future::pending::<()>());
        assert_eq!(out, Err(Interrupted::Cancelled));
        setter.join().unwrap();
    }

    /// What a guest on the async ABI does: its whole call waits here, and
    /// inside it a WASI 0.2 function waits again, and wasmtime-wasi's
    /// synchronous bindings run a future with tokio's `block_on`.
    #[test]
    fn waits_nest_and_wasi_bindings_may_block_inside_them() {
        let limit = Duration::from_secs(30);
        let out = until_stopped(Some((Instant::now() + limit, limit)), None, async {
            let inner = until_stopped(None, None, async { 2 }).unwrap();
            let blocking = wasmtime_wasi::runtime::in_tokio(async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                3
            });
            inner + blocking
        });
        assert_eq!(out, Ok(5));
    }

    /// A wake that arrives while a nested wait holds the thread reaches
    /// the outer wait, which polls again instead of sleeping for good.
    #[test]
    fn a_wake_taken_by_a_nested_wait_is_not_lost() {
        let done = Arc::new(AtomicBool::new(false));
        let mut started = false;
        let outer = std::future::poll_fn(|cx| {
            if done.load(Ordering::Acquire) {
                return Poll::Ready("woken");
            }
            if !started {
                started = true;
                let (waker, done) = (cx.waker().clone(), Arc::clone(&done));
                std::thread::spawn(move || {
                    done.store(true, Ordering::Release);
                    waker.wake();
                });
                // Holds the thread until well after the wake.
                let pause = Duration::from_millis(50);
                let _ = until_stopped(Some((Instant::now() + pause, pause)), None, std::future::pending::<()>());
            }
            Poll::Pending
        });
        let limit = Duration::from_secs(30);
        assert_eq!(until_stopped(Some((Instant::now() + limit, limit)), None, outer), Ok("woken"));
    }

    /// Work that wakes itself on every poll and never finishes still meets
    /// the deadline.
    #[test]
    fn work_that_keeps_waking_itself_ends_at_the_deadline() {
        let limit = Duration::from_millis(30);
        let busy = std::future::poll_fn(|cx| {
            cx.waker().wake_by_ref();
            Poll::<()>::Pending
        });
        assert_eq!(until_stopped(Some((Instant::now() + limit, limit)), None, busy), Err(Interrupted::Timeout(limit)));
    }

    #[test]
    fn finished_work_wins() {
        let limit = Duration::from_secs(5);
        let cancel = AtomicBool::new(false);
        assert_eq!(until_stopped(Some((Instant::now() + limit, limit)), Some(&cancel), async { 7 }), Ok(7));
    }
}
