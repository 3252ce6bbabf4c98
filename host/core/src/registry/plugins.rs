//! The plugins directory as last loaded, and loading it again: a file whose
//! bytes did not change keeps its loaded tool (or its load error); a changed
//! or new file is loaded afresh; a changed file that no longer loads is
//! rejected while the version loaded before keeps serving.

use super::load::Loader;
use super::pool::Registry;
use super::tool::LoadedTool;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Every component file of the plugins directory, as last loaded.
#[derive(Default)]
pub(crate) struct PluginSet {
    files: BTreeMap<PathBuf, PluginFile>,
}

/// One component file: when it was read, its bytes' hash, and what loading
/// them gave.
struct PluginFile {
    stamp: Stamp,
    /// Whether `stamp` was [`Stamp::settled`] when the file was read: only
    /// then does an equal stamp later mean the same bytes.
    settled: bool,
    hash: String,
    /// The operator's grants it was loaded under (a change loads it again).
    grants: String,
    /// The stamps of the files beside it that say more of it (its policy
    /// file and its manifest), where they are (a change loads it again).
    beside: [Option<Stamp>; 2],
    outcome: Outcome,
}

/// What loading a file gave: its tools (one for a component exporting the
/// contract, one per function for a plain component).
#[derive(Clone)]
enum Outcome {
    Loaded(Vec<Arc<LoadedTool>>),
    Failed(String),
    /// This version failed to load; the one loaded before it keeps serving.
    Rejected {
        serving: Vec<Arc<LoadedTool>>,
        why: String,
    },
}

/// What the file system says of a file, to skip reading one that did not
/// change: its size, modification and change times, and where it is (on
/// Unix, device and inode). A write or a rename over it changes the change
/// time or the inode, and no program can set the change time back, so equal
/// stamps mean the bytes read before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Stamp {
    len: u64,
    modified: Option<(u64, u32)>,
    changed: (i64, i64),
    inode: (u64, u64),
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map(|d| (d.as_secs(), d.subsec_nanos()));
        #[cfg(unix)]
        let (changed, inode) = {
            use std::os::unix::fs::MetadataExt;
            ((meta.ctime(), meta.ctime_nsec()), (meta.dev(), meta.ino()))
        };
        #[cfg(not(unix))]
        let (changed, inode) = ((0, 0), (0, 0));
        Stamp { len: meta.len(), modified, changed, inode }
    }

    /// Whether the file was last written long enough before `now` that a
    /// write after now is sure to change the stamp. File times tick
    /// coarsely (milliseconds), so a file written again in the same tick,
    /// to the same size, over a reused inode would look unchanged; such a
    /// recent stamp is not trusted, and the file is read again next time.
    fn settled(&self, now: SystemTime) -> bool {
        const MARGIN: Duration = Duration::from_secs(2);
        let Ok(now) = now.duration_since(SystemTime::UNIX_EPOCH) else { return false };
        let changed = Duration::new(self.changed.0.max(0) as u64, self.changed.1.clamp(0, 999_999_999) as u32);
        let modified = self.modified.map_or(Duration::MAX, |(secs, nanos)| Duration::new(secs, nanos));
        changed.max(modified).saturating_add(MARGIN) < now
    }
}

/// The content hash of each plugin file as a start last read it, by path
/// and stamp, kept in the cache directory: a start whose files did not
/// change hashes none of them (with their compiled forms and descriptions
/// cached, it reads none of them either). Only a hint: an entry counts for a
/// file whose stamp is the same.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct KnownHashes {
    files: BTreeMap<PathBuf, (Stamp, String)>,
}

impl KnownHashes {
    const FILE: &str = "plugin-hashes-v1.json";

    fn read(cache_dir: Option<&Path>) -> KnownHashes {
        let read = || serde_json::from_slice(&std::fs::read(cache_dir?.join(Self::FILE)).ok()?).ok();
        read().unwrap_or_default()
    }

    fn hash(&self, path: &Path, stamp: &Stamp) -> Option<String> {
        self.files.get(path).filter(|(known, _)| known == stamp).map(|(_, hash)| hash.clone())
    }

    /// Saves the hashes of `set`'s files (those of `dir`) when they differ
    /// from these, keeping other directories' unless there are many.
    fn update(&self, cache_dir: Option<&Path>, dir: &Path, set: &PluginSet) {
        const MOST: usize = 512;
        let Some(cache_dir) = cache_dir else { return };
        let mut files: BTreeMap<PathBuf, (Stamp, String)> = self
            .files
            .iter()
            .filter(|(path, _)| path.parent() != Some(dir))
            .map(|(path, known)| (path.clone(), known.clone()))
            .collect();
        if files.len() + set.files.len() > MOST {
            files.clear();
        }
        files.extend(
            set.files
                .iter()
                .filter(|(_, f)| !f.hash.is_empty())
                .map(|(path, f)| (path.clone(), (f.stamp, f.hash.clone()))),
        );
        if files == self.files {
            return;
        }
        let save = || -> std::io::Result<()> {
            crate::fsx::replace_file(&cache_dir.join(Self::FILE), &serde_json::to_vec(&KnownHashes { files })?)
        };
        if let Err(e) = save() {
            tracing::debug!(error = %e, "could not save the plugins' hashes");
        }
    }
}

/// What a reload changed, by tool name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolsChanged {
    /// Tools offered now that were not before.
    pub added: Vec<String>,
    /// Tools no longer offered.
    pub removed: Vec<String>,
    /// Tools whose component changed (same name, new version).
    pub replaced: Vec<String>,
    /// Components that could not be loaded by this reload, as `file: why`
    /// (a rejected new version says the previous one keeps serving).
    pub problems: Vec<String>,
}

impl ToolsChanged {
    /// Whether the tools offered changed (what clients are told).
    pub fn tools_changed(&self) -> bool {
        !(self.added.is_empty() && self.removed.is_empty() && self.replaced.is_empty())
    }
}

impl PluginSet {
    /// The component files of `dir`, in name order.
    fn list(dir: &Path) -> Result<Vec<PathBuf>, std::io::Error> {
        let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
            Ok(entries) => entries.flatten().map(|e| e.path()).filter(|p| is_component_file(p)).collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        paths.sort();
        Ok(paths)
    }

    /// Loads `dir` as it is now. Files that did not change since `previous`
    /// keep what they gave; the others load (several at once).
    pub(crate) fn scan(loader: &Loader<'_>, dir: &Path, previous: &PluginSet) -> Result<PluginSet, std::io::Error> {
        let mut files = BTreeMap::new();
        let mut fresh = Vec::new();
        let now = SystemTime::now();
        for path in PluginSet::list(dir)? {
            let Ok(meta) = std::fs::metadata(&path) else { continue };
            let stamp = Stamp::of(&meta);
            let beside = companions(&path).map(|file| std::fs::metadata(file).ok().map(|m| Stamp::of(&m)));
            let settled = stamp.settled(now) && beside.iter().flatten().all(|p| p.settled(now));
            match previous.files.get(&path) {
                Some(known)
                    if known.stamp == stamp
                        && known.beside == beside
                        && known.settled
                        && known.grants == grant_key(&known.outcome, loader) =>
                {
                    let (hash, outcome, grants) = (known.hash.clone(), known.outcome.clone(), known.grants.clone());
                    files.insert(path, PluginFile { stamp, settled, hash, grants, beside, outcome });
                }
                _ => fresh.push((path, stamp, settled, beside)),
            }
        }
        // A start learns the hashes of the files an earlier start read (a
        // reload knows them from `previous`, and leaves saving the new ones
        // to the next start).
        let start = previous.files.is_empty();
        let known = match start && !fresh.is_empty() {
            true => KnownHashes::read(loader.cache_dir),
            false => KnownHashes::default(),
        };
        let paths: Vec<(PathBuf, Option<String>)> =
            fresh.iter().map(|(path, stamp, _, _)| (path.clone(), known.hash(path, stamp))).collect();
        let loaded = loader.files_in_parallel(&paths);
        for ((path, stamp, settled, beside), (hash, outcome)) in fresh.into_iter().zip(loaded) {
            let before = previous.files.get(&path);
            let outcome = match (outcome, before) {
                // The same bytes touched again, under the same grants,
                // policy file and manifest: what they gave before.
                (_, Some(known))
                    if hash.as_deref() == Some(known.hash.as_str())
                        && known.beside == beside
                        && known.grants == grant_key(&known.outcome, loader) =>
                {
                    known.outcome.clone()
                }
                (Ok(tools), _) => Outcome::Loaded(tools.into_iter().map(Arc::new).collect()),
                (Err(e), Some(known)) => match known.serving() {
                    Some(serving) => {
                        let why = e.to_string();
                        Outcome::Rejected { serving: serving.to_vec(), why }
                    }
                    None => Outcome::Failed(e.to_string()),
                },
                (Err(e), None) => Outcome::Failed(e.to_string()),
            };
            let grants = grant_key(&outcome, loader);
            files.insert(path, PluginFile { stamp, settled, hash: hash.unwrap_or_default(), grants, beside, outcome });
        }
        let set = PluginSet { files };
        if start {
            known.update(loader.cache_dir, dir, &set);
        }
        Ok(set)
    }

    /// Loads again each file of content hash `hash` whose tool was loaded
    /// quick, now that the cache holds its optimized compile: its tool is
    /// replaced by the optimized one (a file changed since is left to the
    /// next reload). The names of the tools replaced.
    pub(crate) fn promote(&mut self, loader: &Loader<'_>, hash: &str) -> Vec<String> {
        let mut promoted = Vec::new();
        for (path, file) in &mut self.files {
            let Outcome::Loaded(tools) = &file.outcome else { continue };
            if file.hash != hash || !tools.iter().any(|t| t.quick) {
                continue;
            }
            let again = loader.files_in_parallel(&[(path.clone(), None)]).pop();
            match again {
                Some((Some(read), Ok(tools))) if read == hash && tools.iter().all(|t| !t.quick) => {
                    promoted.extend(tools.iter().map(|t| t.spec.name.clone()));
                    file.outcome = Outcome::Loaded(tools.into_iter().map(Arc::new).collect());
                }
                Some((_, Err(e))) => {
                    tracing::warn!(path = %path.display(), error = %e, "could not load the optimized compile; the tool stays quick")
                }
                _ => {}
            }
        }
        promoted
    }

    /// Registers the plugins after `builtins`, in file-name order, noting
    /// each file that failed.
    pub(crate) fn register(&self, registry: &mut Registry) {
        for (path, file) in &self.files {
            let source = path.display().to_string();
            match &file.outcome {
                Outcome::Loaded(tools) => tools.iter().for_each(|t| registry.add_shared(Arc::clone(t), &source)),
                Outcome::Failed(why) => registry.problem(&source, why.clone()),
                Outcome::Rejected { serving, why } => {
                    serving.iter().for_each(|t| registry.add_shared(Arc::clone(t), &source));
                    registry.problem(&source, rejected(why));
                }
            }
        }
    }

    /// The problems of files that are new in `self` or changed since
    /// `previous`, for the log and the change report.
    fn new_problems(&self, previous: &PluginSet) -> Vec<String> {
        let mut out = Vec::new();
        for (path, file) in &self.files {
            if previous.files.get(path).is_some_and(|p| p.hash == file.hash) {
                continue;
            }
            match &file.outcome {
                Outcome::Failed(why) => out.push(format!("{}: {why}", path.display())),
                Outcome::Rejected { why, .. } => out.push(format!("{}: {}", path.display(), rejected(why))),
                Outcome::Loaded(_) => {}
            }
        }
        out
    }
}

impl PluginFile {
    /// The tools this file serves now, if any.
    fn serving(&self) -> Option<&[Arc<LoadedTool>]> {
        match &self.outcome {
            Outcome::Loaded(tools) | Outcome::Rejected { serving: tools, .. } => Some(tools),
            Outcome::Failed(_) => None,
        }
    }
}

/// The grants an outcome depends on: its tools' own, or, for a file that
/// did not load (perhaps for want of a grant), all of them.
fn grant_key(outcome: &Outcome, loader: &Loader<'_>) -> String {
    let text = match outcome {
        Outcome::Loaded(tools) | Outcome::Rejected { serving: tools, .. } => {
            serde_json::to_string(&tools.iter().map(|t| loader.grants.get(&t.spec.name)).collect::<Vec<_>>())
        }
        Outcome::Failed(_) => serde_json::to_string(loader.grants),
    };
    text.unwrap_or_default()
}

fn rejected(why: &str) -> String {
    format!("its new version was rejected ({why}); the version loaded before keeps serving")
}

/// Whether `path` names a file that says more of the component beside it:
/// a policy file (`NAME.policy.yaml`) or a manifest (`NAME.tool.yaml`).
pub(crate) fn is_companion_file(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()).filter(|n| !n.starts_with('.')) else {
        return false;
    };
    [crate::grants::wassette::EXTENSION, super::manifest::EXTENSION]
        .iter()
        .any(|extension| name.strip_suffix(extension).is_some_and(|stem| stem.ends_with('.')))
}

/// The files beside the component file `path` that say more of it: its
/// policy file and its manifest.
fn companions(path: &Path) -> [PathBuf; 2] {
    [crate::grants::wassette::beside(path), super::manifest::beside(path)]
}

/// Whether `path` names a component file the directory loads (`*.wasm`, not
/// hidden: an installer's temporary file is neither).
pub(crate) fn is_component_file(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "wasm")
        && !path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.'))
}

/// What changed from `before` to `after`, by tool name (aliases aside).
pub(crate) fn diff(before: &Registry, after: &Registry, previous: &PluginSet, now: &PluginSet) -> ToolsChanged {
    let names = |r: &Registry| -> BTreeMap<String, Arc<LoadedTool>> {
        r.all().iter().filter(|t| t.spec.enabled).map(|t| (t.spec.name.clone(), Arc::clone(t))).collect()
    };
    let (old, new) = (names(before), names(after));
    let old_names: BTreeSet<&String> = old.keys().collect();
    let new_names: BTreeSet<&String> = new.keys().collect();
    ToolsChanged {
        added: new_names.difference(&old_names).map(|s| s.to_string()).collect(),
        removed: old_names.difference(&new_names).map(|s| s.to_string()).collect(),
        replaced: new
            .iter()
            .filter(|(name, tool)| old.get(*name).is_some_and(|o| !Arc::ptr_eq(o, tool)))
            .map(|(name, _)| name.clone())
            .collect(),
        problems: now.new_problems(previous),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn companion_files_are_a_components_policy_file_and_manifest() {
        for (name, is) in [
            ("/p/wc.policy.yaml", true),
            ("/p/wc.tool.yaml", true),
            ("/p/.wc.tool.yaml", false),
            ("/p/policy.yaml", false),
            ("/p/wc.yaml", false),
            ("/p/wc.wasm", false),
        ] {
            assert_eq!(is_companion_file(Path::new(name)), is, "{name}");
        }
    }

    #[test]
    fn a_stamp_is_trusted_only_once_the_file_is_older_than_the_clock_can_blur() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.wasm");
        std::fs::write(&path, b"x").unwrap();
        let stamp = Stamp::of(&std::fs::metadata(&path).unwrap());
        assert!(!stamp.settled(SystemTime::now()), "just written");
        assert!(stamp.settled(SystemTime::now() + Duration::from_secs(3)));
        // Written again: the same size, a new stamp.
        std::fs::write(&path, b"y").unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(SystemTime::now() + Duration::from_secs(1)).unwrap();
        assert_ne!(Stamp::of(&std::fs::metadata(&path).unwrap()), stamp);
    }
}
