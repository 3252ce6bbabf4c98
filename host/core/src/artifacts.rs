//! Compiled artifacts on disk (components, the shell parser): what they are
//! named, compiling them apart, and compiling each once however many
//! toolhost processes share the cache and start at the same moment.

use std::path::Path;
use std::time::{Duration, Instant};

/// How long a compile waits for another one of the same artifact (in this
/// process or another) before compiling it itself: a stopped process must
/// not hold up every other one for good (a killed one lets go at once), and
/// a slow compile is waited for as long as a loader waits for its own (the
/// registry's compile limit).
const WAIT_FOR_OTHER: Duration = Duration::from_secs(120);

/// How often a waiting compile looks again.
const POLL: Duration = Duration::from_millis(20);

/// The artifact cached at `path`, as `read` makes it (`None`: missing or
/// unusable), or else compiled by `compile`, saved as `serialize` writes
/// it, and read back, so that its code is a mapped file's clean pages,
/// shared with every process and reclaimable, not the compile's anonymous
/// memory. Whoever compiles an artifact holds its turn (a lock beside it)
/// while it does; another process or thread wanting the same artifact waits
/// for that compile and reads what it saved, instead of compiling it again
/// (several sessions starting at once, the test processes of a suite).
/// Cache failures only cost time: an unreadable entry is compiled again, an
/// unwritable directory means compiling at every start.
pub(crate) fn cached_or_compiled<T>(
    path: &Path,
    read: impl Fn(&Path) -> Option<T>,
    compile: impl FnOnce() -> wasmtime::Result<T>,
    serialize: impl FnOnce(&T) -> wasmtime::Result<Vec<u8>>,
) -> wasmtime::Result<T> {
    let seen = Stamp::of(path);
    if let Some(artifact) = read(path) {
        return Ok(artifact);
    }
    let turn = Turn::take(path, WAIT_FOR_OTHER);
    // Saved meanwhile by a compile that held the turn, whether this one
    // waited for it or it ended just before (an entry read as unusable and
    // still the same is not read, nor warned about, twice).
    if Stamp::of(path) != seen
        && let Some(artifact) = read(path)
    {
        tracing::debug!(path = %path.display(), "compiled meanwhile by another process");
        return Ok(artifact);
    }
    let artifact = compile()?;
    let saved = serialize(&artifact).and_then(|bytes| crate::fsx::replace_file(path, &bytes).map_err(Into::into));
    if let Err(e) = saved {
        tracing::warn!(path = %path.display(), error = %e, "could not cache a compiled artifact");
        return Ok(artifact);
    }
    drop(turn);
    Ok(read(path).unwrap_or(artifact))
}

/// The artifact saved at `path` as `deserialize` reads it; `None` when
/// there is none, or when it cannot be used (stale, cut short, another
/// engine's), which only costs a compile and is logged.
pub(crate) fn saved<T>(path: &Path, deserialize: impl FnOnce(&Path) -> wasmtime::Result<T>) -> Option<T> {
    if !path.exists() {
        return None;
    }
    match deserialize(path) {
        Ok(artifact) => Some(artifact),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "ignoring an unusable cache entry");
            None
        }
    }
}

/// What tells one version of a file from another: its inode (an entry is
/// saved by renaming a new file over it), size and modification time.
#[derive(PartialEq)]
struct Stamp(Option<(u64, u64, Option<std::time::SystemTime>)>);

impl Stamp {
    fn of(path: &Path) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp(std::fs::metadata(path).ok().map(|m| (m.ino(), m.len(), m.modified().ok())))
    }
}

/// The exclusive right to compile one artifact: an advisory lock on
/// `<artifact>.lock`, released when dropped or when its process ends (so a
/// killed compile never blocks the next).
struct Turn {
    _file: std::fs::File,
}

impl Turn {
    /// The turn for the artifact at `path`, waiting at most `patience` for
    /// whoever holds it; `None` when there is no lock to take (the cache
    /// directory cannot be written) or it was held longer than `patience`:
    /// then the caller compiles without it.
    fn take(path: &Path, patience: Duration) -> Option<Turn> {
        let mut name = path.as_os_str().to_owned();
        name.push(".lock");
        std::fs::create_dir_all(path.parent()?).ok()?;
        // A lock is taken through a read-only handle too (a lock file
        // another user made in a shared cache).
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&name)
            .or_else(|_| std::fs::File::open(&name))
            .ok()?;
        let started = Instant::now();
        let mut waited = false;
        loop {
            match file.try_lock() {
                Ok(()) => return Some(Turn { _file: file }),
                Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < patience => {
                    if !waited {
                        tracing::info!(path = %path.display(), "waiting for another compile of the same artifact");
                    }
                    waited = true;
                    std::thread::sleep(POLL);
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    tracing::warn!(
                        path = %path.display(),
                        waited_s = patience.as_secs(),
                        "another compile of the same artifact holds it too long; compiling it here"
                    );
                    return None;
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    tracing::debug!(path = %path.display(), error = %e, "no compile lock; compiling without one");
                    return None;
                }
            }
        }
    }
}

/// The name a compiled artifact is cached under: SHA-256, in hex, of `kind`,
/// toolhost's version, `engine`'s compatibility hash and `content` (the
/// source's own hash), so an entry is only ever read by an engine that can
/// use it.
pub(crate) fn key(kind: &str, engine: &wasmtime::Engine, content: &str) -> String {
    use sha2::{Digest, Sha256};
    use std::hash::{Hash, Hasher};
    /// Feeds a `Hash` into SHA-256, so keys are the same in every process.
    struct Sha(Sha256);
    impl Hasher for Sha {
        fn finish(&self) -> u64 {
            unreachable!("only used through finalize")
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
    }
    let mut h = Sha(Sha256::new());
    h.0.update(kind.as_bytes());
    h.0.update(b"\0");
    h.0.update(env!("CARGO_PKG_VERSION").as_bytes());
    engine.precompile_compatibility_hash().hash(&mut h);
    h.0.update(content.as_bytes());
    crate::fsx::hex(&h.0.finalize())
}

/// Runs `compile` (a wasmtime compile) on compile threads of its own that
/// end with it. Cranelift's working memory (tens of MiB for a large
/// component) is allocated on those threads; the allocator gives a thread's
/// free memory back to the system when the thread ends, while rayon's
/// global pool, kept for the process's life, would hold it for good.
pub(crate) fn compile_apart<T: Send>(compile: impl FnOnce() -> T + Send) -> T {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    match rayon::ThreadPoolBuilder::new().num_threads(threads).thread_name(|i| format!("toolhost-compile-{i}")).build()
    {
        Ok(pool) => pool.install(compile),
        Err(_) => compile(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn read_text(path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok().filter(|t| t.starts_with("artifact"))
    }

    #[test]
    fn a_compile_waits_for_one_of_the_same_artifact_and_reads_what_it_saved() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entries").join("a.cwasm");
        // Another process's compile: it holds the turn (a lock taken through
        // an open of its own, as another process's would be).
        let other = Turn::take(&path, Duration::ZERO).expect("the turn is free");
        let compiles = AtomicUsize::new(0);
        std::thread::scope(|s| {
            let waiting = s.spawn(|| {
                cached_or_compiled(
                    &path,
                    read_text,
                    || {
                        compiles.fetch_add(1, Ordering::SeqCst);
                        Ok("artifact compiled here".to_string())
                    },
                    |t| Ok(t.clone().into_bytes()),
                )
            });
            // The other compile ends: it saves its artifact, then lets go.
            std::thread::sleep(Duration::from_millis(100));
            crate::fsx::replace_file(&path, b"artifact compiled there").unwrap();
            drop(other);
            assert_eq!(waiting.join().unwrap().unwrap(), "artifact compiled there");
        });
        assert_eq!(compiles.load(Ordering::SeqCst), 0, "compiled a second time");
    }

    #[test]
    fn an_artifact_saved_between_the_first_look_and_the_turn_is_read_not_compiled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.cwasm");
        let looks = AtomicUsize::new(0);
        // The other compile saves its artifact and lets go of the turn just
        // after this one first looked: this one never waits.
        let read = |p: &Path| {
            if looks.fetch_add(1, Ordering::SeqCst) == 0 {
                crate::fsx::replace_file(p, b"artifact compiled there").unwrap();
                return None;
            }
            read_text(p)
        };
        let out = cached_or_compiled(&path, read, || panic!("compiled twice"), |_| unreachable!());
        assert_eq!(out.unwrap(), "artifact compiled there");
    }

    #[test]
    fn a_compile_that_ended_without_saving_is_done_again_and_an_unusable_entry_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.cwasm");
        std::fs::write(&path, "garbage").unwrap();
        let other = Turn::take(&path, Duration::ZERO).unwrap();
        let compiles = AtomicUsize::new(0);
        let compile = || {
            compiles.fetch_add(1, Ordering::SeqCst);
            Ok("artifact new".to_string())
        };
        std::thread::scope(|s| {
            let waiting = s.spawn(|| cached_or_compiled(&path, read_text, compile, |t| Ok(t.clone().into_bytes())));
            std::thread::sleep(Duration::from_millis(50));
            // The other process died mid-compile: its lock goes with it.
            drop(other);
            assert_eq!(waiting.join().unwrap().unwrap(), "artifact new");
        });
        assert_eq!(compiles.load(Ordering::SeqCst), 1);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "artifact new");
        // Cached now: read, not compiled.
        let again = cached_or_compiled(&path, read_text, || panic!("compiled again"), |_| unreachable!()).unwrap();
        assert_eq!(again, "artifact new");
    }

    #[test]
    fn a_turn_held_too_long_or_impossible_to_take_does_not_stop_a_compile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.cwasm");
        let _stuck = Turn::take(&path, Duration::ZERO).unwrap();
        assert!(Turn::take(&path, Duration::from_millis(60)).is_none(), "a held turn was taken");
        // A cache directory that cannot be made: no turn, and no cache.
        let blocked = dir.path().join("file");
        std::fs::write(&blocked, "").unwrap();
        let inside = blocked.join("d.cwasm");
        assert!(Turn::take(&inside, Duration::ZERO).is_none());
        let out = cached_or_compiled(&inside, read_text, || Ok("artifact".to_string()), |t| Ok(t.clone().into_bytes()));
        assert_eq!(out.unwrap(), "artifact");
    }
}
