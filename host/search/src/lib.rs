//! ripgrep's search as toolhost runs it for tools: the files under a root
//! walked in a stable order (sorted by name, ignore files respected, hidden
//! files included, version-control directories skipped), each searched with
//! ripgrep's own crates on every core, and the output of each file put back
//! in walk order, so what comes out is what `rg -j1` prints for the same
//! arguments, byte for byte.
//!
//! Files are opened through a capability handle on the directory they are in
//! ([`Confinement::Within`]), so no symlink swapped in during the search can
//! make it read outside.

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// Version-control directories ripgrep is told to skip (`--glob '!.git'` …).
pub const VCS_DIRECTORIES: [&str; 6] = [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];

/// Files the walk finds between wake-ups of the workers waiting for it.
const WAKE_BATCH: usize = 64;

/// What is printed per file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Matching lines (`rg`).
    Content,
    /// `path:count` (`rg --count`).
    Count,
    /// Paths (`rg --files-with-matches`).
    FilesWithMatches,
}

/// One search: `rg`'s arguments.
#[derive(Clone, Debug)]
pub struct Query {
    pub pattern: String,
    /// A directory to walk or a file to search (absolute).
    pub root: PathBuf,
    /// Where globs are read from (ripgrep's current directory).
    pub cwd: PathBuf,
    pub mode: Mode,
    pub case_insensitive: bool,
    pub multiline: bool,
    pub line_numbers: bool,
    pub before: usize,
    pub after: usize,
    pub globs: Vec<String>,
    pub file_type: Option<String>,
    pub max_columns: Option<u64>,
    /// Content mode: stop after the first file at which more than this many
    /// lines were printed.
    pub enough_lines: Option<u64>,
}

/// Why a search printed nothing.
#[derive(Debug, PartialEq, Eq)]
pub enum Error {
    /// ripgrep would refuse the arguments; why.
    Invalid(String),
    /// The output went over [`Options::max_output`] bytes.
    TooLarge(u64),
    /// [`Options::stop`] said so.
    Interrupted,
}

/// How files are opened.
#[derive(Clone, Debug)]
pub enum Confinement {
    /// As the process may (benchmarks, the plugin's native tests).
    Ambient,
    /// Only inside these directories (absolute, normalized), through a
    /// capability handle on each: a path that leaves them, by `..` or a
    /// symlink, fails to open.
    Within(Vec<PathBuf>),
}

/// Paths a walk leaves out.
pub type Skip = std::sync::Arc<dyn Fn(&Path, bool) -> bool + Send + Sync>;

/// How a search runs.
pub struct Options<'a> {
    /// Threads searching files (the walk runs beside them); at least 1.
    pub threads: usize,
    /// The most output kept, in bytes.
    pub max_output: u64,
    /// The most memory one file's search may buffer (a line, or with
    /// `multiline` the whole file): a file needing more is skipped, as one
    /// that cannot be read.
    pub max_buffer: usize,
    pub confinement: Confinement,
    /// Paths to leave out, as if absent (`(path, is_dir)`): a directory left
    /// out is not entered.
    pub skip: Skip,
    /// Asked between files (and between reads of a large one): true ends the
    /// search with [`Error::Interrupted`].
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

impl Options<'_> {
    /// One thread per core the process may use.
    pub fn cores() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// What `rg` prints on stdout for `query`.
pub fn run(query: &Query, options: &Options<'_>) -> Result<Vec<u8>, Error> {
    // ripgrep checks the file type, then the globs, then the pattern: the
    // first it refuses is the one it reports.
    let walker = walker(query, options.skip.clone())?;
    let matcher = matcher(query)?;
    let single_file = query.root.is_file();
    let opener = Opener::new(&options.confinement);
    let shared = Shared {
        walked: Mutex::new(Walked { paths: Vec::new(), done: false }),
        ready: Condvar::new(),
        next: AtomicUsize::new(0),
        enough: AtomicBool::new(false),
        failed: Mutex::new(None),
        lines: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
    };
    let threads = options.threads.max(1);
    let results: Vec<Vec<(usize, Vec<u8>)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let (shared, matcher, opener) = (&shared, &matcher, &opener);
                scope.spawn(move || work(query, options, shared, matcher, opener, single_file))
            })
            .collect();
        // The walk, beside the workers: each path is searched as soon as it is found.
        for entry in walker {
            if shared.should_end(options) {
                break;
            }
            let mut walked = shared.walked.lock().unwrap_or_else(|e| e.into_inner());
            walked.paths.push(entry);
            // Waking workers in batches: a wake-up per file costs more than
            // searching a small one.
            let batch = walked.paths.len().is_multiple_of(WAKE_BATCH);
            drop(walked);
            if batch {
                shared.ready.notify_all();
            }
        }
        shared.walked.lock().unwrap_or_else(|e| e.into_inner()).done = true;
        shared.ready.notify_all();
        workers.into_iter().map(|w| w.join().unwrap_or_default()).collect()
    });
    if let Some(e) = shared.failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    if (options.stop)() {
        return Err(Error::Interrupted);
    }
    let mut outputs: Vec<(usize, Vec<u8>)> = results.into_iter().flatten().collect();
    outputs.sort_unstable_by_key(|(i, _)| *i);
    Ok(merge(query, outputs))
}

/// The files' outputs in walk order, with the `--` rg puts between context
/// groups of different files, cut after the file that printed enough.
fn merge(query: &Query, outputs: Vec<(usize, Vec<u8>)>) -> Vec<u8> {
    let separate = query.mode == Mode::Content && (query.before > 0 || query.after > 0);
    let mut out = Vec::with_capacity(outputs.iter().map(|(_, o)| o.len() + 3).sum());
    let mut lines = 0u64;
    for (_, output) in outputs {
        if output.is_empty() {
            continue;
        }
        if separate && !out.is_empty() {
            out.extend_from_slice(b"--\n");
            lines += 1;
        }
        lines += count_lines(&output);
        out.extend_from_slice(&output);
        if query.enough_lines.is_some_and(|enough| lines > enough) {
            break;
        }
    }
    out
}

fn count_lines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

struct Walked {
    paths: Vec<PathBuf>,
    done: bool,
}

struct Shared {
    walked: Mutex<Walked>,
    ready: Condvar,
    /// The next walk index to search.
    next: AtomicUsize,
    /// Content mode has printed enough lines: take no more files.
    enough: AtomicBool,
    failed: Mutex<Option<Error>>,
    lines: AtomicU64,
    bytes: AtomicU64,
}

impl Shared {
    fn should_end(&self, options: &Options<'_>) -> bool {
        self.enough.load(Ordering::Relaxed)
            || self.failed.lock().map(|f| f.is_some()).unwrap_or(true)
            || (options.stop)()
    }

    fn fail(&self, error: Error) {
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        failed.get_or_insert(error);
    }

    /// The path at walk index `i`, waiting for the walk to reach it; `None`
    /// when the walk ended before.
    fn path(&self, i: usize) -> Option<PathBuf> {
        let mut walked = self.walked.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(p) = walked.paths.get(i) {
                return Some(p.clone());
            }
            if walked.done {
                return None;
            }
            walked = self.ready.wait(walked).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// A worker: takes the next walk index until none is left, searching each
/// file into its own buffer. An index taken is always searched, so the files
/// searched are a prefix of the walk whatever stops the search.
fn work(
    query: &Query,
    options: &Options<'_>,
    shared: &Shared,
    matcher: &RegexMatcher,
    opener: &Opener,
    single_file: bool,
) -> Vec<(usize, Vec<u8>)> {
    let mut searcher = searcher(query, single_file, options.max_buffer);
    // A regex's scratch space is pooled: a worker with its own clone never
    // waits on another's.
    let matcher = &matcher.clone();
    let mut done = Vec::new();
    loop {
        if shared.should_end(options) {
            break;
        }
        let i = shared.next.fetch_add(1, Ordering::Relaxed);
        let Some(path) = shared.path(i) else { break };
        let output = match search_one(query, &mut searcher, matcher, opener, &path, single_file, options.stop) {
            Ok(output) => output,
            Err(SearchFailure::Interrupted) => {
                shared.fail(Error::Interrupted);
                break;
            }
            // A file that cannot be opened or read prints nothing on stdout, as in rg.
            Err(SearchFailure::Io) => Vec::new(),
        };
        let bytes = shared.bytes.fetch_add(output.len() as u64, Ordering::Relaxed) + output.len() as u64;
        if bytes > options.max_output {
            shared.fail(Error::TooLarge(bytes));
            break;
        }
        if let Some(enough) = query.enough_lines {
            // Separators left out: counting low only searches more.
            let printed = count_lines(&output);
            if shared.lines.fetch_add(printed, Ordering::Relaxed) + printed > enough {
                shared.enough.store(true, Ordering::Relaxed);
            }
        }
        done.push((i, output));
    }
    done
}

enum SearchFailure {
    Io,
    Interrupted,
}

fn search_one(
    query: &Query,
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    opener: &Opener,
    path: &Path,
    single_file: bool,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Vec<u8>, SearchFailure> {
    let file = opener.open(path).map_err(|_| SearchFailure::Io)?;
    let stopped = AtomicBool::new(false);
    let reader = Interruptible { file, stop, stopped: &stopped };
    let result = match query.mode {
        Mode::Content => {
            let mut printer = grep_printer::StandardBuilder::new()
                .path(!single_file)
                .max_columns(query.max_columns)
                .build_no_color(Vec::new());
            let r = searcher.search_reader(matcher, reader, printer.sink_with_path(matcher, path));
            r.map(|()| printer.into_inner().into_inner())
        }
        Mode::Count => {
            // The printer's own path costs a `realpath` per file (for
            // hyperlinks, which are off): the path is put before the count here.
            let mut printer =
                grep_printer::SummaryBuilder::new().kind(grep_printer::SummaryKind::Count).build_no_color(Vec::new());
            let r = searcher.search_reader(matcher, reader, printer.sink(matcher));
            r.map(|()| {
                let count = printer.into_inner().into_inner();
                if single_file || count.is_empty() {
                    return count;
                }
                let mut line = path.as_os_str().as_encoded_bytes().to_vec();
                line.push(b':');
                line.extend_from_slice(&count);
                line
            })
        }
        Mode::FilesWithMatches => {
            let mut sink = FirstMatch(false);
            searcher.search_reader(matcher, reader, &mut sink).map(|()| {
                if sink.0 {
                    let mut line = path.as_os_str().as_encoded_bytes().to_vec();
                    line.push(b'\n');
                    line
                } else {
                    Vec::new()
                }
            })
        }
    };
    match result {
        _ if stopped.load(Ordering::Relaxed) => Err(SearchFailure::Interrupted),
        Ok(output) => Ok(output),
        Err(_) => Err(SearchFailure::Io),
    }
}

/// A file that fails its next read once the search must stop.
struct Interruptible<'a> {
    file: std::fs::File,
    stop: &'a (dyn Fn() -> bool + Sync),
    stopped: &'a AtomicBool,
}

impl io::Read for Interruptible<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if (self.stop)() {
            self.stopped.store(true, Ordering::Relaxed);
            // Not `Interrupted`, which readers retry.
            return Err(io::Error::other("search stopped"));
        }
        self.file.read(buf)
    }
}

/// Opens files as the confinement allows.
enum Opener {
    Ambient,
    /// The allowed directories, longest first, each with its handle (None:
    /// it could not be opened).
    Within(Vec<(PathBuf, Option<cap_std::fs::Dir>)>),
}

impl Opener {
    fn new(confinement: &Confinement) -> Opener {
        match confinement {
            Confinement::Ambient => Opener::Ambient,
            Confinement::Within(dirs) => {
                let mut dirs: Vec<_> = dirs
                    .iter()
                    .map(|d| (d.clone(), cap_std::fs::Dir::open_ambient_dir(d, cap_std::ambient_authority()).ok()))
                    .collect();
                dirs.sort_by_key(|(d, _)| std::cmp::Reverse(d.as_os_str().len()));
                Opener::Within(dirs)
            }
        }
    }

    fn open(&self, path: &Path) -> io::Result<std::fs::File> {
        match self {
            Opener::Ambient => std::fs::File::open(path),
            Opener::Within(dirs) => {
                let denied = || io::Error::new(io::ErrorKind::PermissionDenied, "outside the readable directories");
                let (rel, dir) = dirs
                    .iter()
                    .find_map(|(root, dir)| Some((path.strip_prefix(root).ok()?, dir.as_ref()?)))
                    .ok_or_else(denied)?;
                Ok(dir.open(rel)?.into_std())
            }
        }
    }
}

/// The one mapping between the contract's `search` interface
/// (`wit/tool.wit`: the `query` record, the `search-error` variant) and this
/// crate's [`Query`] and [`Error`].
///
/// The contract reaches Rust through two binding generators, so its record
/// is two types of one shape: wasmtime's on the host (the `search`
/// capability) and wit-bindgen's in the SDK (the Grep plugin's native build,
/// which runs this crate in process). This crate depends on neither, so the
/// mapping is a macro, expanded where the bindings are:
/// `toolhost_search::contract_mapping!(wit)`, with `wit` a module of the
/// `search` interface's bindings in scope, defines there
///
/// - `fn query_from_contract(query: wit::Query) -> toolhost_search::Query`:
///   the paths taken as given (the host normalizes them);
/// - `fn error_to_contract(error: toolhost_search::Error) -> wit::SearchError`.
///
/// Its `match`es have no wildcard: a mode or an error added on either side
/// stops both builds until it is mapped.
#[macro_export]
macro_rules! contract_mapping {
    ($wit:ident) => {
        fn query_from_contract(query: $wit::Query) -> $crate::Query {
            $crate::Query {
                pattern: query.pattern,
                root: ::std::path::PathBuf::from(query.root),
                cwd: ::std::path::PathBuf::from(query.cwd),
                mode: match query.mode {
                    $wit::SearchMode::Content => $crate::Mode::Content,
                    $wit::SearchMode::Count => $crate::Mode::Count,
                    $wit::SearchMode::FilesWithMatches => $crate::Mode::FilesWithMatches,
                },
                case_insensitive: query.case_insensitive,
                multiline: query.multiline,
                line_numbers: query.line_numbers,
                before: query.before as usize,
                after: query.after as usize,
                globs: query.globs,
                file_type: query.file_type,
                max_columns: query.max_columns.map(u64::from),
                enough_lines: query.enough_lines,
            }
        }

        fn error_to_contract(error: $crate::Error) -> $wit::SearchError {
            match error {
                $crate::Error::Invalid(why) => $wit::SearchError::Invalid(why),
                $crate::Error::TooLarge(bytes) => $wit::SearchError::TooLarge(bytes),
                $crate::Error::Interrupted => $wit::SearchError::Interrupted,
            }
        }
    };
}

/// The regex as `rg` builds it for these flags.
fn matcher(query: &Query) -> Result<RegexMatcher, Error> {
    let mut builder = RegexMatcherBuilder::new();
    builder.case_insensitive(query.case_insensitive).multi_line(true);
    if query.multiline {
        builder.dot_matches_new_line(true);
    } else {
        builder.line_terminator(Some(b'\n'));
    }
    builder.build(&query.pattern).map_err(|e| Error::Invalid(e.to_string()))
}

fn searcher(query: &Query, single_file: bool, max_buffer: usize) -> Searcher {
    let content = query.mode == Mode::Content;
    SearcherBuilder::new()
        .heap_limit(Some(max_buffer))
        // A file named on the command line is searched whole, as ripgrep does.
        .binary_detection(if single_file { BinaryDetection::convert(0) } else { BinaryDetection::quit(0) })
        .line_number(content && query.line_numbers)
        .before_context(if content { query.before } else { 0 })
        .after_context(if content { query.after } else { 0 })
        .multi_line(query.multiline)
        .build()
}

/// The files to search, in a stable order, as ripgrep picks them:
/// `.gitignore`/`.ignore`/`.rgignore` respected, hidden files included,
/// version-control directories skipped, then the globs and the type; globs
/// read from `cwd`.
fn walker(query: &Query, skip: Skip) -> Result<impl Iterator<Item = PathBuf> + use<>, Error> {
    let invalid = |e: ignore::Error| Error::Invalid(e.to_string());
    let types = match query.file_type.as_deref().filter(|t| !t.is_empty()) {
        Some(ty) => {
            let mut types = ignore::types::TypesBuilder::new();
            types.add_defaults();
            types.select(ty);
            Some(types.build().map_err(invalid)?)
        }
        None => None,
    };
    let mut overrides = ignore::overrides::OverrideBuilder::new(&query.cwd);
    for dir in VCS_DIRECTORIES {
        overrides.add(&format!("!{dir}")).map_err(invalid)?;
    }
    for glob in &query.globs {
        overrides.add(glob).map_err(invalid)?;
    }
    let mut builder = ignore::WalkBuilder::new(&query.root);
    builder
        .hidden(false)
        // A sandbox cannot see a repository's root above the working
        // directory: read .gitignore files whether or not one is found.
        .require_git(false)
        .overrides(overrides.build().map_err(invalid)?)
        .sort_by_file_path(path_order)
        .filter_entry(move |e| !skip(e.path(), e.file_type().is_some_and(|t| t.is_dir())));
    if let Some(types) = types {
        builder.types(types);
    }
    Ok(builder
        .build()
        .flatten()
        // A file named as the path is searched whatever it is; below, regular files only.
        .filter(|e| {
            let file_type = e.file_type();
            file_type.is_some_and(|t| t.is_file()) || (e.depth() == 0 && !file_type.is_some_and(|t| t.is_dir()))
        })
        .map(ignore::DirEntry::into_path))
}

/// The order of two entries of one directory such that a depth-first walk
/// visits files in the order of their whole paths as strings (Claude Code
/// 2.1.328 sorts Grep's content by path): by name, a directory's name
/// compared as if it ended in `/`. That matters only when one name starts
/// with the other (`a` and `a.txt`), the one case that looks at the disk.
fn path_order(a: &Path, b: &Path) -> std::cmp::Ordering {
    use std::os::unix::ffi::OsStrExt;
    let (Some(x), Some(y)) = (a.file_name(), b.file_name()) else { return a.cmp(b) };
    let (x, y) = (x.as_bytes(), y.as_bytes());
    let common = x.len().min(y.len());
    if x[..common] != y[..common] || x.len() == y.len() {
        return x.cmp(y);
    }
    // One name is the other's start: the shorter goes on with `/` if it
    // is a directory, else it ends first.
    let (short, long_next) = if x.len() < y.len() { (a, y[common]) } else { (b, x[common]) };
    // The walk does not follow links: a link to a directory is a file here.
    let short_is_dir = short.symlink_metadata().is_ok_and(|m| m.is_dir());
    let short_first = !short_is_dir || b'/' < long_next;
    match (short_first, x.len() < y.len()) {
        (true, true) | (false, false) => std::cmp::Ordering::Less,
        (true, false) | (false, true) => std::cmp::Ordering::Greater,
    }
}

/// Stops at the first match.
struct FirstMatch(bool);

impl Sink for FirstMatch {
    type Error = io::Error;
    fn matched(&mut self, _: &Searcher, _: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.0 = true;
        Ok(false)
    }
}

#[cfg(test)]
mod tests;
