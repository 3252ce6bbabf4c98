//! One connection to Redis whose every operation is bounded as a whole: its
//! reply may hold at most [`MAX_REPLY`] bytes, and it must be complete
//! before the operation's deadline, however the bytes arrive. A server
//! that streams a reply without end, or drips it a byte at a time, is an
//! error within the timeout, never a stall or the machine's memory.
//!
//! The redis crate encodes the commands and parses the replies (its
//! [`redis::Parser`]); this module owns the socket, so that every byte read
//! is counted and every read waits only for what is left of the deadline.

use redis::{ConnectionAddr, ConnectionInfo, ConnectionLike, ErrorKind, RedisError, RedisResult, Value};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The most bytes one operation's reply may hold: four times the most
/// state a session may have (`toolhost`'s limit is 4 MiB), for a hash
/// that several servers wrote to.
pub const MAX_REPLY: u64 = 16 << 20;

/// A connection whose operations end within `timeout` and [`MAX_REPLY`].
pub(crate) struct Bounded {
    stream: TcpStream,
    parser: redis::Parser,
    db: i64,
    timeout: Duration,
    max_reply: u64,
    /// Cleared when an operation failed: what is left on the socket is
    /// unknown, so the connection is not used again.
    open: bool,
}

fn error(kind: ErrorKind, what: &'static str, detail: String) -> RedisError {
    RedisError::from((kind, what, detail))
}

impl Bounded {
    /// Connects to `info`'s server, then logs in and selects its database
    /// as its URL says, each step within `timeout`.
    pub(crate) fn open(info: &ConnectionInfo, timeout: Duration, max_reply: u64) -> RedisResult<Bounded> {
        let ConnectionAddr::Tcp(host, port) = info.addr() else {
            return Err(error(
                ErrorKind::InvalidClientConfig,
                "unsupported address",
                "toolhost speaks to Redis over plain TCP (redis://HOST:PORT/DB)".into(),
            ));
        };
        let mut last = None;
        let mut stream = None;
        for addr in (host.as_str(), *port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = match (stream, last) {
            (Some(stream), _) => stream,
            (None, Some(e)) => return Err(e.into()),
            (None, None) => {
                return Err(error(ErrorKind::Io, "no address", format!("{host} resolves to no address")));
            }
        };
        stream.set_nodelay(true)?;
        stream.set_write_timeout(Some(timeout))?;
        let settings = info.redis_settings();
        let mut connection =
            Bounded { stream, parser: redis::Parser::new(), db: settings.db(), timeout, max_reply, open: true };
        if let Some(password) = settings.password() {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = settings.username() {
                auth.arg(user);
            }
            auth.arg(password).exec(&mut connection)?;
        }
        if settings.db() != 0 {
            redis::cmd("SELECT").arg(settings.db()).exec(&mut connection)?;
        }
        Ok(connection)
    }

    /// Sends `packed` and reads `count` replies, all of them within the
    /// deadline and the size cap together.
    fn exchange(&mut self, packed: &[u8], count: usize) -> RedisResult<Vec<Value>> {
        if !self.open {
            return Err(error(ErrorKind::Io, "connection closed", "an earlier operation on it failed".into()));
        }
        let result = self.exchange_open(packed, count);
        if result.is_err() {
            self.open = false;
        }
        result
    }

    fn exchange_open(&mut self, packed: &[u8], count: usize) -> RedisResult<Vec<Value>> {
        let deadline = Instant::now() + self.timeout;
        self.stream.write_all(packed)?;
        let mut reader =
            Reader { stream: &self.stream, deadline, timeout: self.timeout, max: self.max_reply, left: self.max_reply };
        let mut replies = Vec::with_capacity(count.min(64));
        while replies.len() < count {
            match self.parser.parse_value(&mut reader) {
                // RESP3 pushes come between replies; they answer nothing.
                Ok(Value::Push { .. }) => {}
                Ok(value) => replies.push(value),
                // Why the reader stopped, rather than the parser's
                // rendering of it.
                Err(e) => return Err(reader.why().unwrap_or(e)),
            }
        }
        Ok(replies)
    }
}

/// Reads one operation's reply from the socket: each read waits at most
/// for what is left of the deadline, and the bytes read are counted
/// against the cap.
struct Reader<'a> {
    stream: &'a TcpStream,
    deadline: Instant,
    timeout: Duration,
    /// The cap, and what is left of it.
    max: u64,
    left: u64,
}

impl Reader<'_> {
    /// The bound that stopped the reply, if one did.
    fn why(&self) -> Option<RedisError> {
        if self.left == 0 {
            return Some(error(
                ErrorKind::Io,
                "reply too large",
                format!("Redis sent more than {} bytes for one operation, the most toolhost reads", self.max),
            ));
        }
        if Instant::now() >= self.deadline {
            return Some(error(
                ErrorKind::Io,
                "reply too slow",
                format!("Redis did not finish its reply within {} ms", self.timeout.as_millis()),
            ));
        }
        None
    }
}

impl Read for Reader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left_time = self.deadline.saturating_duration_since(Instant::now());
        if left_time.is_zero() {
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "the reply's deadline passed"));
        }
        if self.left == 0 {
            return Err(std::io::Error::other("the reply is larger than toolhost reads"));
        }
        self.stream.set_read_timeout(Some(left_time))?;
        let most = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = (&*self.stream).read(&mut buf[..most])?;
        self.left -= n as u64;
        Ok(n)
    }
}

impl ConnectionLike for Bounded {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        let reply = self.exchange(cmd, 1)?.pop().unwrap_or(Value::Nil);
        match reply {
            Value::ServerError(e) => Err(e.into()),
            reply => Ok(reply),
        }
    }

    fn req_packed_commands(&mut self, cmd: &[u8], offset: usize, count: usize) -> RedisResult<Vec<Value>> {
        let mut replies = self.exchange(cmd, offset + count)?;
        // The replies before `offset` (a transaction's MULTI and QUEUED)
        // only say whether the commands were taken.
        if let Some(Value::ServerError(e)) = replies[..offset].iter().find(|r| matches!(r, Value::ServerError(_))) {
            return Err(e.clone().into());
        }
        Ok(replies.split_off(offset))
    }

    fn get_db(&self) -> i64 {
        self.db
    }

    fn check_connection(&mut self) -> bool {
        redis::cmd("PING").query::<String>(self).is_ok()
    }

    fn is_open(&self) -> bool {
        self.open
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::IntoConnectionInfo;
    use std::net::TcpListener;

    /// A server that answers each request with `reply` (its first bytes,
    /// then `then` forever, one chunk each `every`).
    fn hostile(
        head: &'static [u8],
        then: &'static [u8],
        every: Duration,
    ) -> (ConnectionInfo, std::thread::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut request = [0u8; 1024];
            let _ = socket.read(&mut request);
            if socket.write_all(head).is_err() {
                return;
            }
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(20) {
                if socket.write_all(then).is_err() {
                    return;
                }
                std::thread::sleep(every);
            }
        });
        (format!("redis://127.0.0.1:{port}/0").into_connection_info().unwrap(), server)
    }

    #[test]
    fn an_endless_reply_stops_at_the_cap() {
        static CHUNK: [u8; 64 << 10] = [b'x'; 64 << 10];
        let (info, server) = hostile(b"$1099511627776\r\n", &CHUNK, Duration::ZERO);
        let mut c = Bounded::open(&info, Duration::from_secs(30), 1 << 20).unwrap();
        let e = redis::cmd("GET").arg("k").query::<Vec<u8>>(&mut c).unwrap_err();
        assert!(e.to_string().contains("more than 1048576 bytes"), "{e}");
        assert!(!c.is_open(), "a connection with an unread reply is not used again");
        drop(c);
        server.join().unwrap();
    }

    #[test]
    fn a_reply_that_drips_stops_at_the_deadline() {
        let (info, server) = hostile(b"$1000\r\n", b"x", Duration::from_millis(20));
        let mut c = Bounded::open(&info, Duration::from_millis(300), MAX_REPLY).unwrap();
        let started = Instant::now();
        let e = redis::cmd("GET").arg("k").query::<Vec<u8>>(&mut c).unwrap_err();
        assert!(e.to_string().contains("did not finish its reply within 300 ms"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
        drop(c);
        server.join().unwrap();
    }
}
