//! A guest's stdout and stderr: kept for the log up to a cap, the rest
//! counted and dropped. Writing never fails and never waits, through WASI
//! 0.2's streams and WASI 0.3's alike: a tool that prints a lot (a
//! JavaScript runtime's `console.log`, a debug trace) goes on running, and
//! the host's memory stays bounded.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// One of a guest's output streams, shared by every handle to it.
#[derive(Clone)]
pub(crate) struct GuestOutput {
    kept: Arc<Mutex<Kept>>,
}

struct Kept {
    bytes: Vec<u8>,
    capacity: usize,
    /// Bytes written past the capacity, and dropped.
    dropped: u64,
}

impl GuestOutput {
    /// A stream that keeps the first `capacity` bytes written to it.
    pub(crate) fn new(capacity: usize) -> GuestOutput {
        GuestOutput { kept: Arc::new(Mutex::new(Kept { bytes: Vec::new(), capacity, dropped: 0 })) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps what fits of `bytes`; counts the rest.
    fn write(&self, bytes: &[u8]) {
        let mut kept = self.lock();
        let room = kept.capacity.saturating_sub(kept.bytes.len());
        let (keep, drop) = bytes.split_at(bytes.len().min(room));
        kept.bytes.extend_from_slice(keep);
        kept.dropped += drop.len() as u64;
    }

    /// Keeps up to `capacity` bytes from now on (never fewer than it
    /// keeps already).
    pub(crate) fn raise_capacity(&self, capacity: usize) {
        let mut kept = self.lock();
        kept.capacity = kept.capacity.max(capacity);
    }

    /// The bytes kept, from `from` on.
    pub(crate) fn kept_since(&self, from: usize) -> Vec<u8> {
        self.lock().bytes.get(from..).unwrap_or_default().to_vec()
    }

    /// Bytes kept so far, and bytes dropped past the cap.
    pub(crate) fn written(&self) -> (usize, u64) {
        let kept = self.lock();
        (kept.bytes.len(), kept.dropped)
    }
}

impl IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

/// Most bytes one WASI 0.2 write may carry: what the guest is told it may
/// write at once.
const PERMIT: usize = 64 * 1024;

impl OutputStream for GuestOutput {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        GuestOutput::write(self, &bytes);
        Ok(())
    }
    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }
    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(PERMIT)
    }
}

impl Pollable for GuestOutput {
    /// Always ready: a write never waits.
    fn ready<'a, 'b>(&'a mut self) -> Pin<Box<dyn Future<Output = ()> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(std::future::ready(()))
    }
}

impl AsyncWrite for GuestOutput {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        GuestOutput::write(&self, buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_past_the_cap_is_counted_and_dropped_and_writing_goes_on() {
        let out = GuestOutput::new(8);
        let mut p2 = out.p2_stream();
        assert_eq!(p2.check_write().unwrap(), PERMIT);
        p2.write(bytes::Bytes::from_static(b"hello, ")).unwrap();
        p2.write(bytes::Bytes::from_static(b"world")).unwrap();
        assert_eq!(out.kept_since(0), b"hello, w");
        assert_eq!(out.written(), (8, 4));
        // Still writable, through either ABI.
        assert_eq!(p2.check_write().unwrap(), PERMIT);
        let mut p3 = Box::into_pin(out.async_stream());
        let waker = std::task::Waker::noop();
        let written = p3.as_mut().poll_write(&mut Context::from_waker(waker), b"more");
        assert!(matches!(written, Poll::Ready(Ok(4))));
        assert_eq!(out.written(), (8, 8));
        assert_eq!(out.kept_since(6), b" w");
    }
}
