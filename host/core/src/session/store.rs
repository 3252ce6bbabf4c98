//! Where sessions' state is kept between calls: the [`StateStore`] trait,
//! [`MemoryStore`], and [`FileStore`], the files under the data directory.
//! A store also keeps records other than sessions, each kind in a
//! namespace of its own ([`StateStore::namespace`]).

use super::SessionError;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// A session's state: keys and values.
pub type Entries = BTreeMap<String, String>;

/// Changes to entries: a value sets its key, `None` removes it.
pub type Changes = Vec<(String, Option<String>)>;

/// `entries` with `changes` applied.
fn merge(entries: &mut Entries, changes: &[(String, Option<String>)]) {
    for (key, value) in changes {
        match value {
            Some(v) => entries.insert(key.clone(), v.clone()),
            None => entries.remove(key),
        };
    }
}

/// Where sessions' state lives between calls, shared by every process that
/// opens the same store. Implementations must make [`StateStore::apply`]
/// atomic: two processes applying changes to the same session at once both
/// keep theirs.
pub trait StateStore: Send + Sync {
    /// The entries of session `id` (none if it has none, or never existed).
    fn load(&self, id: &str) -> Result<Entries, SessionError>;

    /// Applies `changes` to session `id` (a value sets its key, `None`
    /// removes it), and returns all its entries after.
    fn apply(&self, id: &str, changes: &[(String, Option<String>)]) -> Result<Entries, SessionError>;

    /// Changes session `id` by what `change` makes of its entries as they
    /// are, atomically, and returns all its entries after: no other
    /// process's change lands between the read `change` sees and the write
    /// (what makes a count shared by a fleet exact). `change` may run more
    /// than once (a store that retries when another process got there
    /// first); only its last run's changes are applied.
    fn update(&self, id: &str, change: &mut dyn FnMut(&Entries) -> Changes) -> Result<Entries, SessionError>;

    /// Forgets session `id`.
    fn remove(&self, id: &str) -> Result<(), SessionError>;

    /// Forgets session `id` and returns what it held, atomically: of two
    /// processes taking the same session at once, one gets its entries and
    /// the other none (what makes a one-time token good once).
    fn take(&self, id: &str) -> Result<Entries, SessionError>;

    /// The same store's records in namespace `name` (see
    /// [`valid_namespace`]): no id there is a session, or a record of any
    /// other namespace, however it is spelled. Every process opening the
    /// same store sees the same records under `name`.
    ///
    /// # Panics
    ///
    /// If `name` is not a [`valid_namespace`] (names are the caller's
    /// constants, never input).
    fn namespace(&self, name: &'static str) -> std::sync::Arc<dyn StateStore>;
}

/// The namespace of sessions themselves.
pub const SESSIONS: &str = "sessions";

/// Whether `name` can name a namespace: 1-32 lower-case ASCII letters and
/// `-`, and not [`SESSIONS`].
pub fn valid_namespace(name: &str) -> bool {
    (1..=32).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-') && name != SESSIONS
}

/// Panics unless `name` is a [`valid_namespace`].
fn checked_namespace(name: &'static str) -> &'static str {
    assert!(valid_namespace(name), "`{name}` cannot name a state store's namespace");
    name
}

/// Records by namespace and id.
type Spaces = BTreeMap<(&'static str, String), Entries>;

/// Sessions in this process's memory: a store no other process shares.
#[derive(Debug, Clone)]
pub struct MemoryStore {
    all: std::sync::Arc<std::sync::Mutex<Spaces>>,
    space: &'static str,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore { all: Default::default(), space: SESSIONS }
    }
}

impl MemoryStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, Spaces> {
        self.all.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn key(&self, id: &str) -> (&'static str, String) {
        (self.space, id.to_string())
    }
}

impl StateStore for MemoryStore {
    fn load(&self, id: &str) -> Result<Entries, SessionError> {
        Ok(self.lock().get(&self.key(id)).cloned().unwrap_or_default())
    }

    fn apply(&self, id: &str, changes: &[(String, Option<String>)]) -> Result<Entries, SessionError> {
        self.update(id, &mut |_| changes.to_vec())
    }

    fn update(&self, id: &str, change: &mut dyn FnMut(&Entries) -> Changes) -> Result<Entries, SessionError> {
        let mut all = self.lock();
        let key = self.key(id);
        let entries = all.entry(key.clone()).or_default();
        let changes = change(entries);
        merge(entries, &changes);
        let merged = entries.clone();
        if merged.is_empty() {
            all.remove(&key);
        }
        Ok(merged)
    }

    fn remove(&self, id: &str) -> Result<(), SessionError> {
        self.lock().remove(&self.key(id));
        Ok(())
    }

    fn take(&self, id: &str) -> Result<Entries, SessionError> {
        Ok(self.lock().remove(&self.key(id)).unwrap_or_default())
    }

    fn namespace(&self, name: &'static str) -> std::sync::Arc<dyn StateStore> {
        std::sync::Arc::new(MemoryStore { all: std::sync::Arc::clone(&self.all), space: checked_namespace(name) })
    }
}

/// Sessions in files: `<data dir>/sessions/<id>/state.json`, changed under
/// an exclusive lock on `state.lock` beside it and replaced atomically. A
/// namespace's records are under `<data dir>/<namespace>/` the same way.
#[derive(Clone, Debug)]
pub struct FileStore {
    data_dir: PathBuf,
    dir: PathBuf,
}

impl FileStore {
    /// The sessions under `data_dir`.
    pub fn new(data_dir: &Path) -> FileStore {
        FileStore { data_dir: data_dir.to_path_buf(), dir: data_dir.join(SESSIONS) }
    }

    fn state_path(&self, id: &str) -> PathBuf {
        self.dir.join(id).join("state.json")
    }

    fn read(&self, id: &str) -> Result<Entries, SessionError> {
        let path = self.state_path(id);
        let mut text = String::new();
        match File::open(&path) {
            Ok(mut f) => {
                f.read_to_string(&mut text).map_err(|source| SessionError::Io { path: path.clone(), source })?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Entries::new()),
            Err(source) => return Err(SessionError::Io { path, source }),
        };
        serde_json::from_str(&text).map_err(|source| SessionError::Corrupt { path, source })
    }
}

impl StateStore for FileStore {
    fn load(&self, id: &str) -> Result<Entries, SessionError> {
        super::validate_id(id)?;
        self.read(id)
    }

    fn apply(&self, id: &str, changes: &[(String, Option<String>)]) -> Result<Entries, SessionError> {
        self.update(id, &mut |_| changes.to_vec())
    }

    fn update(&self, id: &str, change: &mut dyn FnMut(&Entries) -> Changes) -> Result<Entries, SessionError> {
        super::validate_id(id)?;
        let path = self.state_path(id);
        let io = |source| SessionError::Io { path: path.clone(), source };
        let dir = self.dir.join(id);
        std::fs::create_dir_all(&dir).map_err(io)?;
        let lock =
            OpenOptions::new().create(true).truncate(false).write(true).open(dir.join("state.lock")).map_err(io)?;
        lock.lock().map_err(io)?;
        let mut merged = self.read(id)?;
        let changes = change(&merged);
        if changes.is_empty() {
            return Ok(merged);
        }
        merge(&mut merged, &changes);
        let text = serde_json::to_vec_pretty(&merged)
            .map_err(|source| SessionError::Corrupt { path: path.clone(), source })?;
        crate::fsx::replace_file(&path, &text).map_err(io)?;
        Ok(merged)
    }

    fn remove(&self, id: &str) -> Result<(), SessionError> {
        super::validate_id(id)?;
        let path = self.state_path(id);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(SessionError::Io { path, source }),
        }
    }

    fn take(&self, id: &str) -> Result<Entries, SessionError> {
        super::validate_id(id)?;
        let dir = self.dir.join(id);
        if !dir.exists() {
            return Ok(Entries::new());
        }
        let io = |source| SessionError::Io { path: dir.clone(), source };
        let lock =
            OpenOptions::new().create(true).truncate(false).write(true).open(dir.join("state.lock")).map_err(io)?;
        lock.lock().map_err(io)?;
        let entries = self.read(id)?;
        self.remove(id)?;
        Ok(entries)
    }

    fn namespace(&self, name: &'static str) -> std::sync::Arc<dyn StateStore> {
        let dir = self.data_dir.join(checked_namespace(name));
        std::sync::Arc::new(FileStore { data_dir: self.data_dir.clone(), dir })
    }
}
