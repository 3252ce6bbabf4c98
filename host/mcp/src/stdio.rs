//! Standard input and output as the stdio front reads and writes them.
//!
//! A client that starts the server with pipes gets rmcp's handles: the pipes
//! reopened non-blocking, read and written on the protocol thread. A client
//! that hands it a socket pair instead (Node's child processes do: Claude
//! Code and the TypeScript SDK's clients) would get rmcp's fallback, tokio's
//! blocking stdin and stdout, where each read and each write is handed to a
//! thread of the blocking pool and back — twice the thread switches of a
//! call over pipes. A stream socket is read and written here, on the
//! protocol thread, each call with `MSG_DONTWAIT`: the descriptor's own
//! flags, which whoever else holds it shares, stay as they are.

use rmcp::transport::{StdioReader, StdioWriter};
use rustix::net::{RecvFlags, SendFlags, SocketType};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

/// What the front reads requests from.
pub(crate) enum Reader {
    Socket(Socket),
    Stdio(StdioReader),
}

/// What the front writes answers to.
pub(crate) enum Writer {
    Socket(Socket),
    Stdio(StdioWriter),
}

/// Standard input and output: each a [`Socket`] where it is a stream
/// socket, else rmcp's handle. Needs a tokio runtime with I/O enabled.
pub(crate) fn standard() -> (Reader, Writer) {
    let read = Socket::of(io::stdin().as_fd(), Interest::READABLE);
    let write = Socket::of(io::stdout().as_fd(), Interest::WRITABLE);
    match (read, write) {
        (Some(read), Some(write)) => (Reader::Socket(read), Writer::Socket(write)),
        (read, write) => {
            let (stdin, stdout) = rmcp::transport::stdio_pipes();
            (read.map_or(Reader::Stdio(stdin), Reader::Socket), write.map_or(Writer::Stdio(stdout), Writer::Socket))
        }
    }
}

/// A stream socket on a descriptor of its own (a duplicate: the original
/// stays open and untouched), registered with the runtime's reactor.
pub(crate) struct Socket(AsyncFd<OwnedFd>);

impl Socket {
    /// `fd` if it is a stream socket; `None` for anything else (a pipe, a
    /// terminal, a file, a datagram socket) or when it cannot be duplicated
    /// or registered.
    pub(crate) fn of(fd: BorrowedFd<'_>, interest: Interest) -> Option<Socket> {
        let stat = rustix::fs::fstat(fd).ok()?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::Socket {
            return None;
        }
        if rustix::net::sockopt::socket_type(fd).ok()? != SocketType::STREAM {
            return None;
        }
        let own = rustix::io::fcntl_dupfd_cloexec(fd, 0).ok()?;
        // SAFETY: the `AsyncFd` owns `own`, an open descriptor of its own
        // (a fresh duplicate) that no one else can close or replace, and an
        // `OwnedFd` always names the same descriptor.
        unsafe { AsyncFd::register_with_interest(own, interest) }.ok().map(Socket)
    }

    fn poll_recv(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut ready = ready!(self.0.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match ready.try_io(|fd| retrying(|| rustix::net::recv(fd, &mut *unfilled, RecvFlags::DONTWAIT))) {
                Ok(Ok((n, _))) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                // Not readable after all: readiness cleared, wait again.
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_send(&self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            let mut ready = ready!(self.0.poll_write_ready(cx))?;
            match ready.try_io(|fd| retrying(|| rustix::net::send(fd, data, SendFlags::DONTWAIT | SendFlags::NOSIGNAL)))
            {
                Ok(sent) => return Poll::Ready(sent),
                Err(_would_block) => continue,
            }
        }
    }
}

/// `call` again while a signal interrupts it.
fn retrying<T>(mut call: impl FnMut() -> rustix::io::Result<T>) -> io::Result<T> {
    loop {
        match call() {
            Err(rustix::io::Errno::INTR) => continue,
            done => return done.map_err(io::Error::from),
        }
    }
}

impl AsyncRead for Reader {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Reader::Socket(socket) => socket.poll_recv(cx, buf),
            Reader::Stdio(stdin) => Pin::new(stdin).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Writer {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Writer::Socket(socket) => socket.poll_send(cx, data),
            Writer::Stdio(stdout) => Pin::new(stdout).poll_write(cx, data),
        }
    }

    /// A socket's bytes are the kernel's once sent: nothing to flush.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Writer::Socket(_) => Poll::Ready(Ok(())),
            Writer::Stdio(stdout) => Pin::new(stdout).poll_flush(cx),
        }
    }

    /// The socket stays open (standard output is the process's until it
    /// exits); the duplicate closes when the writer is dropped.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Writer::Socket(_) => Poll::Ready(Ok(())),
            Writer::Stdio(stdout) => Pin::new(stdout).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    }

    fn nonblocking(fd: BorrowedFd<'_>) -> bool {
        rustix::fs::fcntl_getfl(fd).unwrap().contains(rustix::fs::OFlags::NONBLOCK)
    }

    #[test]
    fn a_socket_is_read_and_written_without_changing_its_flags() {
        runtime().block_on(async {
            let (ours, theirs) = UnixStream::pair().unwrap();
            let mut reader = Reader::Socket(Socket::of(ours.as_fd(), Interest::READABLE).unwrap());
            let mut writer = Writer::Socket(Socket::of(ours.as_fd(), Interest::WRITABLE).unwrap());
            assert!(!nonblocking(ours.as_fd()), "the descriptor's flags are left alone");

            let mut peer = theirs.try_clone().unwrap();
            peer.write_all(b"{\"jsonrpc\":\"2.0\"}\n").unwrap();
            let mut got = vec![0; 64];
            let n = reader.read(&mut got).await.unwrap();
            assert_eq!(&got[..n], b"{\"jsonrpc\":\"2.0\"}\n");

            // More than a socket buffer holds: the writer waits for the peer
            // to read, and every byte arrives in order.
            let big: Vec<u8> = (0..4 << 20).map(|i| (i % 251) as u8).collect();
            let expected = big.clone();
            let drain = std::thread::spawn(move || {
                let mut all = Vec::new();
                peer.read_to_end(&mut all).unwrap();
                all
            });
            writer.write_all(&big).await.unwrap();
            writer.flush().await.unwrap();
            // The peer reads to its end once every descriptor of ours is closed.
            drop((reader, writer, ours));
            assert!(drain.join().unwrap() == expected);
            drop(theirs);
        });
    }

    #[test]
    fn a_closed_peer_reads_as_the_end() {
        runtime().block_on(async {
            let (ours, theirs) = UnixStream::pair().unwrap();
            let mut reader = Reader::Socket(Socket::of(ours.as_fd(), Interest::READABLE).unwrap());
            drop(theirs);
            let mut got = Vec::new();
            assert_eq!(reader.read_to_end(&mut got).await.unwrap(), 0);
        });
    }

    #[test]
    fn what_is_not_a_stream_socket_is_left_to_rmcp() {
        runtime().block_on(async {
            let (read, _write) = std::io::pipe().unwrap();
            assert!(Socket::of(read.as_fd(), Interest::READABLE).is_none());
            let (datagram, _other) = std::os::unix::net::UnixDatagram::pair().unwrap();
            assert!(Socket::of(datagram.as_fd(), Interest::READABLE).is_none());
            let file = tempfile::tempfile().unwrap();
            assert!(Socket::of(file.as_fd(), Interest::READABLE).is_none());
        });
    }
}
