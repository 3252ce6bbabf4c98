//! Paths as the sandbox's checks read them: made absolute and cleaned of
//! `.` and `..` without touching the filesystem ([`normalize`]), inside a
//! set of directories or not, compared whole component by whole component
//! ([`is_inside`]), and the same again for what a path resolves to through
//! symlinks ([`resolve`], [`containment`]).

use std::path::{Component, Path, PathBuf};

/// `path` as an absolute path without `.` and `..`, lexically: `..` drops
/// the component before it and never climbs above `/` (symlinks are left
/// to [`resolve`] and the sandbox).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// `path` made absolute against `cwd` (an absolute `path` stays as it is),
/// then [`normalize`]d.
pub fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    normalize(&cwd.join(path))
}

/// Whether `path` is one of `dirs` or below one, by whole components
/// (`/work/a` is inside `/work`; `/workshop` is not). Both sides are taken
/// as written: normalize them first.
pub fn is_inside<D: AsRef<Path>>(path: &Path, dirs: impl IntoIterator<Item = D>) -> bool {
    dirs.into_iter().any(|dir| path.starts_with(dir))
}

/// `path` with every symlink followed as far as the path exists (the rest
/// appended as written); `None` when no part of it exists, or where the
/// system resolves no paths (WASI).
pub fn resolve(path: &Path) -> Option<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Some(real) = real(existing) {
            let mut out = real;
            out.extend(rest.iter().rev());
            return Some(out);
        }
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    }
}

/// What an existing `path` is, every symlink followed; `None` when it does
/// not exist.
fn real(path: &Path) -> Option<PathBuf> {
    // On Linux: one `open` (`O_PATH`: no access needed, a FIFO does not
    // block) and one `readlink` of its descriptor, where `canonicalize`
    // (glibc's realpath) reads every component's link in turn — seven system
    // calls for a file six directories down, at each call of a file tool.
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_PATH).open(path) {
            Ok(file) => {
                if let Ok(real) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
                    && real.is_absolute()
                {
                    return Some(real);
                }
                // No /proc: as everywhere else.
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(_) => {}
        }
    }
    path.canonicalize().ok()
}

/// Where a path is, for a check that reads it as written and as resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Containment {
    /// Inside, as written and as resolved.
    Inside,
    /// Outside as written.
    Outside,
    /// Inside as written, but a symlink leads it here, outside.
    ResolvesOutside(PathBuf),
}

/// Where `path` (absolute and normalized) is with respect to the
/// directories `inside` accepts: as written, then as [`resolve`]d.
pub fn containment(path: &Path, inside: impl Fn(&Path) -> bool) -> Containment {
    if !inside(path) {
        return Containment::Outside;
    }
    match resolve(path) {
        Some(real) if real != path && !inside(&real) => Containment::ResolvesOutside(real),
        _ => Containment::Inside,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_lexically_and_never_climbs_above_the_root() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), Path::new("/a/c"));
        assert_eq!(normalize(Path::new("/../../etc")), Path::new("/etc"));
        assert_eq!(normalize(Path::new("/ws/x/../../etc/passwd")), Path::new("/etc/passwd"));
        assert_eq!(normalize(Path::new("a/b/")), Path::new("/a/b"));
        assert_eq!(absolute(Path::new("/ws"), Path::new("../etc")), Path::new("/etc"));
        assert_eq!(absolute(Path::new("/ws"), Path::new("/tmp/./x")), Path::new("/tmp/x"));
    }

    #[test]
    fn inside_means_whole_components() {
        let dirs = ["/work", "/tmp/results"];
        assert!(is_inside(Path::new("/work"), dirs));
        assert!(is_inside(Path::new("/work/a/b"), dirs));
        assert!(!is_inside(Path::new("/workshop"), dirs));
        assert!(!is_inside(Path::new("/tmp/results-other/x"), dirs));
        assert!(!is_inside(Path::new("/"), dirs));
        assert!(!is_inside(Path::new("/work"), Vec::<&str>::new()));
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_out_is_found_where_the_path_resolves() {
        let base = std::env::temp_dir().join(format!("toolhost-primitives-{}", std::process::id()));
        let (inner, outer) = (base.join("in"), base.join("out"));
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::create_dir_all(&outer).unwrap();
        let inner = inner.canonicalize().unwrap();
        let outer = outer.canonicalize().unwrap();
        std::os::unix::fs::symlink(&outer, inner.join("link")).unwrap();
        let inside = |p: &Path| is_inside(p, [&inner]);
        assert_eq!(containment(&inner.join("a.txt"), inside), Containment::Inside);
        assert_eq!(
            containment(&inner.join("link/new.txt"), inside),
            Containment::ResolvesOutside(outer.join("new.txt"))
        );
        assert_eq!(containment(&outer.join("x"), inside), Containment::Outside);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn resolving_follows_every_symlink_and_a_fifo_does_not_block() {
        let base = std::env::temp_dir().join(format!("toolhost-primitives-real-{}", std::process::id()));
        let real_dir = base.join("a");
        std::fs::create_dir_all(&real_dir).unwrap();
        let real_dir = real_dir.canonicalize().unwrap();
        std::os::unix::fs::symlink(&real_dir, base.join("b")).unwrap();
        std::fs::write(real_dir.join("f"), "x").unwrap();
        std::os::unix::fs::symlink("f", real_dir.join("g")).unwrap();
        std::os::unix::fs::symlink("../b/g", real_dir.join("h")).unwrap();
        let fifo = std::ffi::CString::new(real_dir.join("p").into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path and a mode.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let via = base.join("b");
        for (path, real) in [
            (via.join("g"), real_dir.join("f")),
            (via.join("h"), real_dir.join("f")),
            (via.join("missing/x"), real_dir.join("missing/x")),
            (via.join("p"), real_dir.join("p")),
            (via.clone(), real_dir.clone()),
        ] {
            assert_eq!(resolve(&path), Some(real.clone()), "{}", path.display());
            if let Ok(canonical) = path.canonicalize() {
                assert_eq!(canonical, real, "as canonicalize has it: {}", path.display());
            }
        }
        std::fs::remove_dir_all(&base).unwrap();
    }
}
