//! `files`: atomic file replacement in the working directories, for
//! components granted read-write files (Write, Edit).

use super::CallView;
use crate::contract::bindings::toolhost::tool::files;
use std::path::{Path, PathBuf};

impl files::Host for CallView<'_> {
    fn replace(&mut self, path: String, contents: Vec<u8>) -> Result<(), files::FilesError> {
        replace_confined(&self.scope.writable, Path::new(&path), &contents)
    }
}

/// Atomically replaces `path` (absolute, inside one of `writable`) with
/// `contents`, following a symlink to its target as long as the target stays
/// inside the same directory; the old file's permission bits are kept. All
/// filesystem access goes through a capability handle on the writable
/// directory, so no path (`..`, symlinks) can reach outside it.
fn replace_confined(writable: &[PathBuf], path: &Path, contents: &[u8]) -> Result<(), files::FilesError> {
    use cap_std::fs::Dir;

    let refused = || files::FilesError::NotPermitted(path.display().to_string());
    let normalized = crate::fsx::normalize(path);
    let Some(root) = writable.iter().filter(|w| normalized.starts_with(w)).max_by_key(|w| w.as_os_str().len()) else {
        return Err(refused());
    };
    let rel = normalized.strip_prefix(root).map_err(|_| refused())?.to_path_buf();
    if rel.file_name().is_none() {
        return Err(files::FilesError::NotFound(format!("{} names a directory, not a file", path.display())));
    }
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::PermissionDenied => refused(),
        std::io::ErrorKind::NotFound => files::FilesError::NotFound(format!("{}: {e}", path.display())),
        _ => files::FilesError::Io(e.to_string()),
    };
    let dir = Dir::open_ambient_dir(root, cap_std::ambient_authority()).map_err(io)?;
    // A symlink is replaced at its target; cap-std refuses a target outside `root`.
    let target = match dir.symlink_metadata(&rel) {
        Ok(meta) if meta.file_type().is_symlink() => dir.canonicalize(&rel).map_err(io)?,
        Ok(meta) if meta.is_dir() => {
            return Err(files::FilesError::NotFound(format!("{} is a directory", path.display())));
        }
        _ => rel,
    };
    crate::fsx::replace_in(&dir, &target, contents).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replace_keeps_mode_and_follows_symlinks_inside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let script = root.join("run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        replace_confined(std::slice::from_ref(&root), &script, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&script).unwrap(), "new");
        assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o755);

        std::os::unix::fs::symlink("run.sh", root.join("link.sh")).unwrap();
        replace_confined(std::slice::from_ref(&root), &root.join("link.sh"), b"via link").unwrap();
        assert!(std::fs::symlink_metadata(root.join("link.sh")).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&script).unwrap(), "via link");

        replace_confined(std::slice::from_ref(&root), &root.join("new/dir/f.txt"), b"created").unwrap();
        assert_eq!(std::fs::read_to_string(root.join("new/dir/f.txt")).unwrap(), "created");
        let leftovers: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("toolhost"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn replace_refuses_escapes() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "keep").unwrap();
        std::os::unix::fs::symlink(&secret, root.join("escape")).unwrap();
        let w = std::slice::from_ref(&root);
        assert!(matches!(replace_confined(w, &root.join("escape"), b"x"), Err(files::FilesError::NotPermitted(_))));
        assert!(matches!(replace_confined(w, &root.join("../x"), b"x"), Err(files::FilesError::NotPermitted(_))));
        assert!(matches!(replace_confined(&[], &root.join("a"), b"x"), Err(files::FilesError::NotPermitted(_))));
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "keep");
    }
}
