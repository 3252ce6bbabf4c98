//! A call's program arguments and standard input, which a WASI command
//! (`crate::contract::plain::command`) runs with: the Store is made before
//! the call's input is known, so both are filled when the call starts.
//! `wasi:cli/environment`'s `get-arguments` (0.2 and 0.3) answers the
//! call's arguments, and standard input reads the call's bytes, however
//! early the guest took its handle. Every other tool sees its own name as
//! its only argument and an empty standard input.

use super::output::GuestOutput;
use super::store::HostState;
use crate::contract::plain::command::{self, Printed};
use bytes::Bytes;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};
use wasmtime::component::{HasData, Linker};
use wasmtime_wasi::cli::{IsTerminal, StdinStream, WasiCliCtxView};
use wasmtime_wasi::p2::{InputStream, Pollable, StreamError, StreamResult};

/// A Store's standard streams and arguments.
pub(crate) struct Stdio {
    args: Vec<String>,
    stdin: GuestInput,
    stdout: GuestOutput,
    stderr: GuestOutput,
    /// What each output stream held (kept, dropped) when the run started.
    from: [(usize, u64); 2],
}

impl Stdio {
    /// The streams of a Store serving the tool `program`, writing to
    /// `stdout` and `stderr`.
    pub(super) fn new(program: &str, stdin: GuestInput, stdout: GuestOutput, stderr: GuestOutput) -> Stdio {
        Stdio { args: vec![program.to_string()], stdin, stdout, stderr, from: [(0, 0); 2] }
    }
}

impl command::Stdio for HostState {
    fn start(&mut self, args: Vec<String>, stdin: Vec<u8>) {
        let io = &mut self.stdio;
        io.args.truncate(1);
        io.args.extend(args);
        *io.stdin.bytes.lock().unwrap_or_else(|e| e.into_inner()) = Bytes::from(stdin);
        io.stdout.raise_capacity(command::MAX_STDOUT);
        io.from = [io.stdout.written(), io.stderr.written()];
    }

    fn printed(&self) -> Printed {
        let io = &self.stdio;
        let (out, err) = (io.stdout.written(), io.stderr.written());
        Printed {
            stdout: io.stdout.kept_since(io.from[0].0),
            stdout_dropped: out.1 - io.from[0].1,
            stderr: io.stderr.kept_since(io.from[1].0),
            stderr_dropped: err.1 - io.from[1].1,
        }
    }
}

/// A guest's standard input: bytes in memory, shared by every handle to
/// it, ended when they are read.
#[derive(Clone, Default)]
pub(crate) struct GuestInput {
    bytes: Arc<Mutex<Bytes>>,
}

impl GuestInput {
    fn take(&self, most: usize) -> Bytes {
        let mut bytes = self.bytes.lock().unwrap_or_else(|e| e.into_inner());
        let n = most.min(bytes.len());
        bytes.split_to(n)
    }
}

impl IsTerminal for GuestInput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdinStream for GuestInput {
    fn p2_stream(&self) -> Box<dyn InputStream> {
        Box::new(self.clone())
    }
    fn async_stream(&self) -> Box<dyn AsyncRead + Send + Sync> {
        Box::new(self.clone())
    }
}

impl InputStream for GuestInput {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        match self.take(size) {
            read if read.is_empty() && size > 0 => Err(StreamError::Closed),
            read => Ok(read),
        }
    }
}

impl Pollable for GuestInput {
    /// Always ready: the bytes are there, or the stream is closed.
    fn ready<'a, 'b>(&'a mut self) -> Pin<Box<dyn Future<Output = ()> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(std::future::ready(()))
    }
}

impl AsyncRead for GuestInput {
    fn poll_read(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let read = self.take(buf.remaining());
        buf.put_slice(&read);
        Poll::Ready(Ok(()))
    }
}

/// `wasi:cli/environment` answering the call's arguments (the only source
/// of a guest's arguments: the WASI context holds none).
struct Environment;

impl HasData for Environment {
    type Data<'a> = EnvironmentView<'a>;
}

struct EnvironmentView<'a> {
    cli: WasiCliCtxView<'a>,
    args: &'a [String],
}

fn view(state: &mut HostState) -> EnvironmentView<'_> {
    EnvironmentView { cli: WasiCliCtxView { ctx: state.wasi.cli(), table: &mut state.table }, args: &state.stdio.args }
}

impl wasmtime_wasi::p2::bindings::cli::environment::Host for EnvironmentView<'_> {
    fn get_environment(&mut self) -> wasmtime::Result<Vec<(String, String)>> {
        wasmtime_wasi::p2::bindings::cli::environment::Host::get_environment(&mut self.cli)
    }
    fn get_arguments(&mut self) -> wasmtime::Result<Vec<String>> {
        Ok(self.args.to_vec())
    }
    fn initial_cwd(&mut self) -> wasmtime::Result<Option<String>> {
        wasmtime_wasi::p2::bindings::cli::environment::Host::initial_cwd(&mut self.cli)
    }
}

impl wasmtime_wasi::p3::bindings::cli::environment::Host for EnvironmentView<'_> {
    fn get_environment(&mut self) -> wasmtime::Result<Vec<(String, String)>> {
        wasmtime_wasi::p3::bindings::cli::environment::Host::get_environment(&mut self.cli)
    }
    fn get_arguments(&mut self) -> wasmtime::Result<Vec<String>> {
        Ok(self.args.to_vec())
    }
    fn get_initial_cwd(&mut self) -> wasmtime::Result<Option<String>> {
        wasmtime_wasi::p3::bindings::cli::environment::Host::get_initial_cwd(&mut self.cli)
    }
}

/// Replaces wasmtime-wasi's `get-arguments` (0.2, and 0.3 with `wasi_03`)
/// with the call's.
pub(super) fn add_to_linker(linker: &mut Linker<HostState>, wasi_03: bool) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut added =
        wasmtime_wasi::p2::bindings::cli::environment::add_to_linker::<HostState, Environment>(linker, view);
    if wasi_03 {
        added = added.and_then(|()| {
            wasmtime_wasi::p3::bindings::cli::environment::add_to_linker::<HostState, Environment>(linker, view)
        });
    }
    linker.allow_shadowing(false);
    added
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_is_shared_by_its_handles_and_ends_when_read() {
        let input = GuestInput::default();
        let mut early = input.p2_stream();
        *input.bytes.lock().unwrap() = Bytes::from_static(b"hello");
        assert_eq!(&early.read(2).unwrap()[..], b"he");
        let mut late = input.p2_stream();
        assert_eq!(&late.read(10).unwrap()[..], b"llo");
        assert!(matches!(early.read(1), Err(StreamError::Closed)));
        assert_eq!(&late.read(0).unwrap()[..], b"");
    }
}
