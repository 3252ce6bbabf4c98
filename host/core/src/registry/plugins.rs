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
use std::time::SystemTime;

/// Every component file of the plugins directory, as last loaded.
#[derive(Default)]
pub struct PluginSet {
    files: BTreeMap<PathBuf, PluginFile>,
}

/// One component file: when it was read, its bytes' hash, and what loading
/// them gave.
struct PluginFile {
    stamp: Stamp,
    hash: String,
    /// The operator's grants it was loaded under (a change loads it again).
    grants: String,
    outcome: Outcome,
}

#[derive(Clone)]
enum Outcome {
    Loaded(Arc<LoadedTool>),
    Failed(String),
    /// This version failed to load; the one loaded before it keeps serving.
    Rejected {
        serving: Arc<LoadedTool>,
        why: String,
    },
}

/// What the file system says of a file, to skip reading one that did not
/// change (size and modification time, and the inode on Unix).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        Stamp { len: meta.len(), modified: meta.modified().ok(), inode }
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
    pub fn scan(loader: &Loader<'_>, dir: &Path, previous: &PluginSet) -> Result<PluginSet, std::io::Error> {
        let mut files = BTreeMap::new();
        let mut fresh = Vec::new();
        for path in PluginSet::list(dir)? {
            let Ok(meta) = std::fs::metadata(&path) else { continue };
            let stamp = Stamp::of(&meta);
            match previous.files.get(&path) {
                Some(known) if known.stamp == stamp && known.grants == grant_key(&known.outcome, loader) => {
                    let (hash, outcome, grants) = (known.hash.clone(), known.outcome.clone(), known.grants.clone());
                    files.insert(path, PluginFile { stamp, hash, grants, outcome });
                }
                _ => fresh.push((path, stamp)),
            }
        }
        let paths: Vec<PathBuf> = fresh.iter().map(|(p, _)| p.clone()).collect();
        let loaded = loader.files_in_parallel(&paths);
        for ((path, stamp), (hash, outcome)) in fresh.into_iter().zip(loaded) {
            let before = previous.files.get(&path);
            let outcome = match (outcome, before) {
                // The same bytes touched again, under the same grants: what
                // they gave before.
                (_, Some(known))
                    if hash.as_deref() == Some(known.hash.as_str())
                        && known.grants == grant_key(&known.outcome, loader) =>
                {
                    known.outcome.clone()
                }
                (Ok(tool), _) => Outcome::Loaded(Arc::new(tool)),
                (Err(e), Some(known)) => match known.serving() {
                    Some(serving) => {
                        let why = e.to_string();
                        Outcome::Rejected { serving: Arc::clone(serving), why }
                    }
                    None => Outcome::Failed(e.to_string()),
                },
                (Err(e), None) => Outcome::Failed(e.to_string()),
            };
            let grants = grant_key(&outcome, loader);
            files.insert(path, PluginFile { stamp, hash: hash.unwrap_or_default(), grants, outcome });
        }
        Ok(PluginSet { files })
    }

    /// Registers the plugins after `builtins`, in file-name order, noting
    /// each file that failed.
    pub fn register(&self, registry: &mut Registry) {
        for (path, file) in &self.files {
            let source = path.display().to_string();
            match &file.outcome {
                Outcome::Loaded(tool) => registry.add_shared(Arc::clone(tool), &source),
                Outcome::Failed(why) => registry.problem(&source, why.clone()),
                Outcome::Rejected { serving, why } => {
                    registry.add_shared(Arc::clone(serving), &source);
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
    /// The tool this file serves now, if any.
    fn serving(&self) -> Option<&Arc<LoadedTool>> {
        match &self.outcome {
            Outcome::Loaded(tool) | Outcome::Rejected { serving: tool, .. } => Some(tool),
            Outcome::Failed(_) => None,
        }
    }
}

/// The grants an outcome depends on: its tool's own, or, for a file that
/// did not load (perhaps for want of a grant), all of them.
fn grant_key(outcome: &Outcome, loader: &Loader<'_>) -> String {
    let text = match outcome {
        Outcome::Loaded(tool) | Outcome::Rejected { serving: tool, .. } => {
            serde_json::to_string(&loader.grants.get(&tool.spec.name))
        }
        Outcome::Failed(_) => serde_json::to_string(loader.grants),
    };
    text.unwrap_or_default()
}

fn rejected(why: &str) -> String {
    format!("its new version was rejected ({why}); the version loaded before keeps serving")
}

/// Whether `path` names a component file the directory loads (`*.wasm`, not
/// hidden: an installer's temporary file is neither).
pub fn is_component_file(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "wasm")
        && !path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.'))
}

/// What changed from `before` to `after`, by tool name (aliases aside).
pub fn diff(before: &Registry, after: &Registry, previous: &PluginSet, now: &PluginSet) -> ToolsChanged {
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
