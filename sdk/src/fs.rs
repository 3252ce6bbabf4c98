//! Helpers for tools that work on files: resolving and confining paths, turning
//! I/O errors into messages a model can act on, atomic replacement through the
//! host, and the read-before-write record shared by the built-in file tools.
//!
//! Paths a tool receives are host paths: the host preopens each working
//! directory at its own absolute path, so `/home/me/project/src/main.rs` means
//! the same file to the model, the tool and the user.

use crate::bindings::toolhost::tool::files;
use crate::{Context, Mode, Permission, ToolError};
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Paths the permission rules keep from a call's reads (deny and ask rules
/// such as `Read(./.env)`): a tool that walks directories skips them, since
/// the host checked only the path the tool was given.
#[derive(Clone, Debug, Default)]
pub struct Hidden {
    set: globset::GlobSet,
    dir_only: Vec<bool>,
}

impl Hidden {
    /// The hidden paths of the current call, from the host.
    pub fn of_call() -> Hidden {
        Hidden::from_patterns(&crate::bindings::toolhost::tool::policy::hidden_paths())
    }

    /// Compiles absolute patterns (a trailing `/`: directories only). A
    /// pattern that does not compile hides nothing but is not an error: the
    /// host sends patterns it compiled itself.
    pub fn from_patterns(patterns: &[String]) -> Hidden {
        let mut builder = globset::GlobSetBuilder::new();
        let mut dir_only = Vec::new();
        for p in patterns {
            let (pattern, dirs) = match p.strip_suffix('/') {
                Some(d) if !d.is_empty() => (d, true),
                _ => (p.as_str(), false),
            };
            if let Ok(glob) = globset::GlobBuilder::new(pattern).literal_separator(true).backslash_escape(true).build()
            {
                builder.add(glob);
                dir_only.push(dirs);
            }
        }
        Hidden { set: builder.build().unwrap_or_default(), dir_only }
    }

    /// Whether nothing is hidden.
    pub fn is_empty(&self) -> bool {
        self.dir_only.is_empty()
    }

    /// Whether `path` (a directory when `is_dir`) is hidden. Walks call it
    /// for every entry, so a hidden directory is skipped with its contents.
    pub fn contains(&self, path: &Path, is_dir: bool) -> bool {
        !self.is_empty() && self.set.matches(path).into_iter().any(|i| is_dir || !self.dir_only[i])
    }
}

/// How a tool means to use a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// `path` made absolute against the working directory and cleaned of `.` and
/// `..` without touching the filesystem (symlinks are the sandbox's business).
pub fn absolute(ctx: &Context, path: &str) -> PathBuf {
    let path = Path::new(path);
    let joined = if path.is_absolute() { path.to_path_buf() } else { Path::new(ctx.cwd()).join(path) };
    normalize(&joined)
}

/// Lexical normalization: drops `.`, resolves `..` against the preceding
/// component, never climbs above `/`.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(part) => out.push(part),
        }
    }
    out
}

/// Whether `path` (absolute, normalized) is inside one of the directories the
/// context allows for `access`.
pub fn is_allowed(ctx: &Context, path: &Path, access: Access) -> bool {
    let inside = |dirs: &[String]| dirs.iter().any(|d| path.starts_with(d));
    match access {
        Access::Read => inside(ctx.working_dirs()) || inside(ctx.read_only_dirs()),
        Access::Write => inside(ctx.working_dirs()),
    }
}

/// Resolves `path` and refuses it unless it lies inside the allowed directories.
pub fn confine(ctx: &Context, path: &str, access: Access) -> Result<PathBuf, ToolError> {
    let abs = absolute(ctx, path);
    if is_allowed(ctx, &abs, access) { Ok(abs) } else { Err(outside(ctx, &abs)) }
}

/// The error for a path outside the working directories.
pub fn outside(ctx: &Context, path: &Path) -> ToolError {
    ToolError::permission_denied(format!(
        "{} is outside the working directories ({}). File tools can only reach files inside them; \
         use a path inside, or ask the user to run toolhost with that directory as the workspace \
         or an additional directory.",
        path.display(),
        ctx.working_dirs().join(", ")
    ))
}

/// Turns an I/O error on `path` into a message the model can act on.
pub fn io_error(ctx: &Context, path: &Path, err: &io::Error) -> ToolError {
    match err.kind() {
        io::ErrorKind::NotFound => ToolError::not_found(format!(
            "File does not exist: {}. Current working directory: {}",
            path.display(),
            ctx.cwd()
        )),
        io::ErrorKind::IsADirectory => ToolError::invalid_input(format!(
            "{} is a directory, not a file. Use Glob to list files or Bash `ls` to see its contents.",
            path.display()
        )),
        io::ErrorKind::NotADirectory => {
            ToolError::not_found(format!("A component of {} is not a directory.", path.display()))
        }
        // WASI reports an escape from a preopen (a symlink or `..` leading out)
        // as "not permitted": say so plainly.
        io::ErrorKind::PermissionDenied => ToolError::permission_denied(format!(
            "Access to {} was refused: it resolves outside the working directories (through a \
             symlink or `..`), or the file's permissions forbid it.",
            path.display()
        )),
        _ => ToolError::io(format!("Cannot access {}: {err}", path.display())),
    }
}

/// Atomically replaces (or creates) the file at `path` with `contents`, through
/// the host: a failure leaves the old file untouched, and the file keeps its
/// permission bits. Needs the `files` capability (Write and Edit have it).
pub fn replace(path: &Path, contents: &[u8]) -> Result<(), ToolError> {
    files::replace(&path.to_string_lossy(), contents).map_err(|e| match e {
        files::FilesError::NotPermitted(p) => ToolError::permission_denied(format!(
            "Writing {p} was refused: it is outside the working directories or resolves outside them through a symlink."
        )),
        files::FilesError::NotFound(m) => ToolError::not_found(m),
        files::FilesError::Io(m) => ToolError::io(format!("Could not write {}: {m}", path.display())),
    })
}

/// What the built-in file tools remember about a read, under [`read_key`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadRecord {
    /// Modification time in nanoseconds since the epoch when the file was read.
    pub mtime_ns: u128,
    /// Size in bytes when the file was read.
    pub size: u64,
}

impl ReadRecord {
    /// The record for a file with metadata `meta`.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        let mtime_ns = meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
        ReadRecord { mtime_ns, size: meta.len() }
    }
}

/// The session key under which a read of `path` is recorded.
pub fn read_key(path: &Path) -> String {
    format!("read:{}", path.display())
}

/// Records that `path` was read (or written) in this session with `meta`.
pub fn record_read(ctx: &Context, path: &Path, meta: &std::fs::Metadata) -> Result<(), ToolError> {
    ctx.session().set_json(&read_key(path), &ReadRecord::of(meta))
}

/// The read-before-write rule: an existing file may be overwritten only if it was
/// read in this session and has not changed on disk since.
pub fn check_fresh(ctx: &Context, path: &Path, meta: &std::fs::Metadata) -> Result<(), ToolError> {
    let Some(record) = ctx.session().get_json::<ReadRecord>(&read_key(path)) else {
        return Err(ToolError::conflict(format!(
            "File has not been read yet. Read {} first before writing to it.",
            path.display()
        )));
    };
    if record != ReadRecord::of(meta) {
        return Err(ToolError::conflict(format!(
            "File {} has been modified since it was read, either by the user or by a linter. \
             Read it again before attempting to write it.",
            path.display()
        )));
    }
    Ok(())
}

/// Whether `bytes` (the start of a file) look binary: a NUL byte in the first 8 KiB.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

/// `cat -n` style rendering of `lines`, numbered from `first` (1-based):
/// the number right-aligned in six columns, a tab, the line.
pub fn number_lines<'a>(lines: impl IntoIterator<Item = &'a str>, first: usize, out: &mut String) {
    use std::fmt::Write;
    for (i, line) in lines.into_iter().enumerate() {
        let _ = writeln!(out, "{:>6}\t{}", first + i, line);
    }
}

/// The permission view shared by the tools that edit files: in `acceptEdits`
/// mode an edit inside the working directories is allowed; otherwise the host's
/// mode decides. (A path outside them never gets this far: `validate-input`
/// refuses it, since the sandbox could not reach it anyway.)
pub fn edit_permission(ctx: &Context) -> Permission {
    match ctx.mode() {
        Mode::AcceptEdits => Permission::Allow(None),
        Mode::Default | Mode::Plan | Mode::DontAsk | Mode::BypassPermissions => Permission::Passthrough,
    }
}

/// Up to a few lines around the first difference between `old` and `new`,
/// numbered as in the new file.
pub fn snippet_of_change(old: &str, new: &str) -> String {
    const CONTEXT: usize = 4;
    const MAX_LINES: usize = 40;
    let first_diff = old.lines().zip(new.lines()).take_while(|(a, b)| a == b).count();
    let new_lines: Vec<&str> = new.lines().collect();
    let changed_in_new = new_lines.len().saturating_sub(old.lines().count()).max(1);
    let start = first_diff.saturating_sub(CONTEXT);
    let end = (first_diff + changed_in_new + CONTEXT).min(new_lines.len()).min(start + MAX_LINES);
    let mut out = String::new();
    number_lines(new_lines[start.min(end)..end].iter().copied(), start + 1, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mode;

    #[test]
    fn hidden_paths_match_files_and_directories() {
        let hidden = Hidden::from_patterns(&["/w/secret/**".into(), "/w/**/*.env".into(), "/w/**/build/".into()]);
        assert!(hidden.contains(Path::new("/w/secret/key"), false));
        assert!(!hidden.contains(Path::new("/w/secret"), true), "the directory itself is walked, its contents hidden");
        assert!(hidden.contains(Path::new("/w/a/b/prod.env"), false));
        assert!(hidden.contains(Path::new("/w/x/build"), true));
        assert!(!hidden.contains(Path::new("/w/x/build"), false), "dir-only");
        assert!(!hidden.contains(Path::new("/w/src/main.rs"), false));
        assert!(!Hidden::default().contains(Path::new("/w/secret/key"), false));
    }

    #[test]
    fn normalizes_lexically() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/../../etc")), PathBuf::from("/etc"));
        assert_eq!(normalize(Path::new("/ws/x/../../etc/passwd")), PathBuf::from("/etc/passwd"));
    }

    #[test]
    fn confines_to_working_dirs() {
        let ctx = Context::for_tests("/ws", Mode::Default);
        assert_eq!(confine(&ctx, "src/a.rs", Access::Read).unwrap(), PathBuf::from("/ws/src/a.rs"));
        assert!(confine(&ctx, "/ws/../etc/passwd", Access::Read).is_err());
        assert!(confine(&ctx, "/wsx/a", Access::Read).is_err(), "a sibling with a common prefix is outside");
        assert!(confine(&ctx, "/etc/passwd", Access::Write).is_err());
    }

    #[test]
    fn snippet_shows_the_change_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let new = "a\nb\nc\nd\ne\nF\ng\nh\ni\nj\n";
        let s = snippet_of_change(old, new);
        assert!(s.starts_with("     2\tb\n"), "{s}");
        assert!(s.contains("     6\tF\n"));
        assert!(s.ends_with("    10\tj\n"), "{s}");
    }

    #[test]
    fn numbers_lines_like_cat_n() {
        let mut out = String::new();
        number_lines(["a", "b"], 9, &mut out);
        assert_eq!(out, "     9\ta\n    10\tb\n");
    }
}
