//! Session state in Redis (or Valkey, which speaks the same protocol), so
//! that several toolhost servers serve the same sessions: a Read on one,
//! an Edit on the next.
//!
//! Each session is one hash, `toolhost:session:<id>`, its keys and values
//! the session's; a namespace's records are hashes
//! `toolhost:ns:<namespace>:<id>` ([`StateStore::namespace`]), over the
//! same connections. Loading is `HGETALL`; saving applies the changed keys
//! (`HSET`, `HDEL`) and reads the whole hash back in one `MULTI`/`EXEC`, so
//! two servers saving the same session at once both keep their keys, and
//! sets the hash to expire after the store's idle time; an update that
//! reads before it writes does both under `WATCH`, again when another
//! client wrote in between. A server never
//! waits on Redis for long: connecting and each operation as a whole time
//! out (two seconds by default, however the reply's bytes arrive), a reply
//! may hold at most [`MAX_REPLY`] bytes, and a failure is an error the
//! caller logs, never a stall.
//!
//! ```no_run
//! use std::sync::Arc;
//! let store = toolhost_redis::RedisStore::open("redis://127.0.0.1:6379/0")?;
//! let host = toolhost::Host::builder().state_store(Arc::new(store)).build();
//! # Ok::<(), toolhost::SessionError>(())
//! ```

mod connection;

use connection::Bounded;
pub use connection::MAX_REPLY;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost::{Changes, Entries, SessionError, StateStore};

/// How long a session's state lives unused, unless set otherwise.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(7 * 24 * 3600);
/// How long connecting, reading or writing may take, unless set otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
/// Connections kept open for reuse.
const KEPT: usize = 16;

/// Sessions' state in one Redis database.
pub struct RedisStore {
    connections: Arc<Connections>,
    idle: Duration,
    prefix: String,
}

/// How to reach the database, and the connections kept for reuse.
struct Connections {
    client: redis::Client,
    /// Open connections not in use.
    idle: Mutex<Vec<Bounded>>,
    timeout: Duration,
}

fn failed(what: &str, e: impl std::fmt::Display) -> SessionError {
    SessionError::Store(format!("{what}: {e}"))
}

impl RedisStore {
    /// The store at `url` (`redis://[user:password@]host[:port][/db]`, or
    /// `rediss://` for TLS where the build supports it), checked with a
    /// `PING`.
    pub fn open(url: &str) -> Result<RedisStore, SessionError> {
        RedisStore::with(url, DEFAULT_IDLE, DEFAULT_TIMEOUT)
    }

    /// The store at `url`, its sessions living `idle` unused, each
    /// operation bounded by `timeout`.
    pub fn with(url: &str, idle: Duration, timeout: Duration) -> Result<RedisStore, SessionError> {
        let client = redis::Client::open(url).map_err(|e| failed(&format!("the store URL {}", redact(url)), e))?;
        let store = RedisStore {
            connections: Arc::new(Connections { client, idle: Mutex::new(Vec::new()), timeout }),
            idle,
            prefix: "toolhost:session:".into(),
        };
        store.run(|c| redis::cmd("PING").query::<String>(c))?;
        Ok(store)
    }

    fn key(&self, id: &str) -> String {
        format!("{}{id}", self.prefix)
    }

    /// Runs `f` on a connection (a kept one, or a new one); a connection
    /// that failed is dropped, a good one kept.
    fn run<T>(&self, f: impl FnOnce(&mut Bounded) -> redis::RedisResult<T>) -> Result<T, SessionError> {
        let connections = &self.connections;
        let kept = connections.lock().pop();
        let mut connection = match kept {
            Some(c) => c,
            None => Bounded::open(connections.client.get_connection_info(), connections.timeout, MAX_REPLY)
                .map_err(|e| failed("connecting to Redis", e))?,
        };
        let result = f(&mut connection).map_err(|e| failed("Redis", e))?;
        let mut kept = connections.lock();
        if kept.len() < KEPT {
            kept.push(connection);
        }
        Ok(result)
    }
}

impl Connections {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Bounded>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Tries of an [`StateStore::update`] that other writers keep getting
/// ahead of, before it fails.
const UPDATE_ATTEMPTS: usize = 64;

/// Adds to `pipe`: `changes` to hash `key`, its expiry set to `idle` from
/// now, and the whole hash read back.
fn write_changes(pipe: &mut redis::Pipeline, key: &str, changes: &[(String, Option<String>)], idle: Duration) {
    let set: Vec<(&str, &str)> = changes.iter().filter_map(|(k, v)| Some((k.as_str(), v.as_deref()?))).collect();
    let removed: Vec<&str> = changes.iter().filter(|(_, v)| v.is_none()).map(|(k, _)| k.as_str()).collect();
    if !set.is_empty() {
        pipe.hset_multiple(key, &set).ignore();
    }
    if !removed.is_empty() {
        pipe.hdel(key, removed).ignore();
    }
    pipe.expire(key, idle.as_secs() as i64).ignore();
    pipe.hgetall(key);
}

/// `url` with its password hidden, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => format!("{}://…@{}", &url[..scheme], &url[at + 1..]),
        _ => url.to_string(),
    }
}

impl StateStore for RedisStore {
    fn load(&self, id: &str) -> Result<Entries, SessionError> {
        let key = self.key(id);
        self.run(|c| {
            let (entries, _): (Entries, i64) =
                redis::pipe().hgetall(&key).expire(&key, self.idle.as_secs() as i64).query(c)?;
            Ok(entries)
        })
    }

    fn apply(&self, id: &str, changes: &[(String, Option<String>)]) -> Result<Entries, SessionError> {
        let key = self.key(id);
        self.run(|c| {
            let mut pipe = redis::pipe();
            pipe.atomic();
            write_changes(&mut pipe, &key, changes, self.idle);
            let (entries,): (Entries,) = pipe.query(c)?;
            Ok(entries)
        })
    }

    fn update(&self, id: &str, change: &mut dyn FnMut(&Entries) -> Changes) -> Result<Entries, SessionError> {
        let key = self.key(id);
        self.run(|c| {
            // Optimistic: read under WATCH, write in MULTI/EXEC, which Redis
            // refuses (a nil reply) when another client changed the hash
            // in between; then read again.
            for _ in 0..UPDATE_ATTEMPTS {
                redis::cmd("WATCH").arg(&key).query::<()>(c)?;
                let now: Entries = redis::cmd("HGETALL").arg(&key).query(c)?;
                let changes = change(&now);
                if changes.is_empty() {
                    redis::cmd("UNWATCH").query::<()>(c)?;
                    return Ok(now);
                }
                let mut pipe = redis::pipe();
                pipe.atomic();
                write_changes(&mut pipe, &key, &changes, self.idle);
                if let Some((entries,)) = pipe.query::<Option<(Entries,)>>(c)? {
                    return Ok(entries);
                }
            }
            Err((redis::ErrorKind::Client, "too many other writers of the same record; try again").into())
        })
    }

    fn remove(&self, id: &str) -> Result<(), SessionError> {
        let key = self.key(id);
        self.run(|c| redis::cmd("DEL").arg(&key).query::<i64>(c)).map(|_| ())
    }

    fn take(&self, id: &str) -> Result<Entries, SessionError> {
        let key = self.key(id);
        self.run(|c| {
            let (entries, _): (Entries, i64) = redis::pipe().atomic().hgetall(&key).del(&key).query(c)?;
            Ok(entries)
        })
    }

    fn namespace(&self, name: &'static str) -> Arc<dyn StateStore> {
        assert!(toolhost::valid_namespace(name), "`{name}` cannot name a state store's namespace");
        Arc::new(RedisStore {
            connections: Arc::clone(&self.connections),
            idle: self.idle,
            prefix: format!("toolhost:ns:{name}:"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost::Session;
    use toolhost_tests::redis::RedisServer;

    #[test]
    fn sessions_are_shared_merged_removed_and_expire() {
        let server = RedisServer::start();
        let a = Arc::new(RedisStore::open(&server.url(0)).unwrap());
        let b = Arc::new(RedisStore::open(&server.url(0)).unwrap());
        let dir = toolhost_tests::Sandbox::new();
        let on_a = Session::in_store(&dir.root, "s1", a.clone()).unwrap();
        let on_b = Session::in_store(&dir.root, "s1", b.clone()).unwrap();
        on_a.set("read:/x", "1", None).unwrap();
        on_b.set("read:/y", "2", None).unwrap();
        on_a.save().unwrap();
        on_b.save().unwrap();
        on_a.refresh().unwrap();
        assert_eq!(on_a.keys("read:"), ["read:/x", "read:/y"]);
        on_b.remove("read:/x");
        on_b.save().unwrap();
        assert_eq!(Session::in_store(&dir.root, "s1", a.clone()).unwrap().keys(""), ["read:/y"]);
        // Another database is another store.
        let other = Arc::new(RedisStore::open(&server.url(1)).unwrap());
        assert!(Session::in_store(&dir.root, "s1", other).unwrap().keys("").is_empty());
        a.remove("s1").unwrap();
        assert!(b.load("s1").unwrap().is_empty());
        // Taken once: the second taker gets nothing.
        a.apply("t", &[("k".into(), Some("v".into()))]).unwrap();
        assert_eq!(b.take("t").unwrap().len(), 1);
        assert!(a.take("t").unwrap().is_empty());
        // A namespace's records are apart from sessions, shared by every
        // instance, and over the same kept connections.
        a.apply("n", &[("k".into(), Some("session".into()))]).unwrap();
        a.namespace("front").apply("n", &[("k".into(), Some("front".into()))]).unwrap();
        assert_eq!(b.namespace("front").load("n").unwrap()["k"], "front");
        assert_eq!(b.load("n").unwrap()["k"], "session");
        assert!(b.namespace("other").load("n").unwrap().is_empty());

        let short = RedisStore::with(&server.url(0), Duration::from_secs(1), DEFAULT_TIMEOUT).unwrap();
        short.apply("s2", &[("k".into(), Some("v".into()))]).unwrap();
        assert_eq!(short.load("s2").unwrap().len(), 1);
        std::thread::sleep(Duration::from_millis(2100));
        assert!(short.load("s2").unwrap().is_empty(), "an idle session expires");
    }

    #[test]
    fn updates_from_many_clients_at_once_all_land() {
        let server = RedisServer::start();
        let stores: Vec<Arc<dyn StateStore>> =
            (0..2).map(|_| RedisStore::open(&server.url(0)).unwrap().namespace("count")).collect();
        std::thread::scope(|scope| {
            for t in 0..4 {
                let store = Arc::clone(&stores[t % 2]);
                scope.spawn(move || {
                    for _ in 0..50 {
                        store
                            .update("n", &mut |now| {
                                let n: u64 = now.get("n").and_then(|v| v.parse().ok()).unwrap_or(0);
                                vec![("n".into(), Some((n + 1).to_string()))]
                            })
                            .unwrap();
                    }
                });
            }
        });
        assert_eq!(stores[0].load("n").unwrap()["n"], "200", "an increment was lost");
        // A change of nothing writes nothing, and leaves no watch behind.
        let seen = stores[1].update("n", &mut |_| Vec::new()).unwrap();
        assert_eq!(seen["n"], "200");
        stores[1].apply("n", &[("n".into(), Some("0".into()))]).unwrap();
        assert_eq!(stores[0].load("n").unwrap()["n"], "0");
    }

    #[test]
    fn a_store_that_goes_away_is_an_error_soon_not_a_stall() {
        let mut server = RedisServer::start();
        let store = RedisStore::with(&server.url(0), DEFAULT_IDLE, Duration::from_millis(500)).unwrap();
        store.apply("s", &[("k".into(), Some("v".into()))]).unwrap();
        server.kill();
        let started = std::time::Instant::now();
        let e = store.load("s").unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
        assert!(e.to_string().contains("Redis"), "{e}");
        // Nothing listens there: refused at once, with the URL's password hidden.
        let e = RedisStore::open(&format!("redis://user:hunter2@127.0.0.1:{}/0", server.port)).err().unwrap();
        assert!(!e.to_string().contains("hunter2"), "{e}");
        assert_eq!(redact("redis://u:p@h:1/0"), "redis://…@h:1/0");
        assert_eq!(redact("redis://h:1/0"), "redis://h:1/0");
    }
}
