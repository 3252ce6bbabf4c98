//! Files and directories: the directories of a call, paths made absolute and
//! resolved, the one atomic file writer, the editor of JSON settings files,
//! and where toolhost keeps its own files.

use std::path::{Path, PathBuf};

/// The directories of a call, as absolute host paths. Each is preopened in the
/// guest at the same path, so paths mean the same inside and out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Dirs {
    /// The working directory: always one of `working`.
    pub cwd: PathBuf,
    /// Directories the call may read and, when granted, write.
    pub working: Vec<PathBuf>,
    /// Directories the call may only read (a session's persisted results).
    pub read_only: Vec<PathBuf>,
}

/// A path as settings and tool requests write it: `~` and `~/…` under
/// `home`, anything else relative to `base` (an absolute path stays as it is).
pub(crate) fn expand(path: &str, base: &Path, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if path == "~" && home.is_some() => home.map(Path::to_path_buf).unwrap_or_default(),
        _ => base.join(path),
    }
}

/// Paths lexically normalized, and resolved through symlinks: the one
/// implementation the host and the SDK share.
pub(crate) use toolhost_primitives::path::{normalize, resolve};

/// Replaces `rel` inside `dir` whole or not at all: the contents go to a
/// fresh temporary file beside the target (created new, so never one
/// planted beforehand), are flushed to disk, get the old file's permission
/// bits, and the temporary file is renamed over the target. Missing parent
/// directories are created. On any failure the old file is untouched and
/// the temporary file is removed. `dir` is a capability handle: no `rel`
/// (`..`, absolute, a symlink) reaches outside it.
///
/// The one atomic writer: the `files` capability, settings, the trust store,
/// the compile cache, session state and persisted results all use it.
pub(crate) fn replace_in(dir: &cap_std::fs::Dir, rel: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);

    let name = rel.file_name().ok_or_else(|| std::io::Error::other(format!("{} names no file", rel.display())))?;
    let parent = rel.parent().unwrap_or(Path::new(""));
    if !parent.as_os_str().is_empty() {
        dir.create_dir_all(parent)?;
    }
    let permissions = dir.metadata(rel).ok().map(|m| m.permissions());
    let tmp = parent.join(format!(
        ".{}.toolhost-{}-{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let write = || -> std::io::Result<()> {
        let mut file = dir.open_with(&tmp, cap_std::fs::OpenOptions::new().write(true).create_new(true))?;
        file.write_all(contents)?;
        file.sync_all()?;
        if let Some(p) = permissions {
            dir.set_permissions(&tmp, p)?;
        }
        dir.rename(&tmp, dir, rel)
    };
    write().inspect_err(|_| {
        let _ = dir.remove_file(&tmp);
    })
}

/// `replace_in` for a file of the host's own (settings, the trust store,
/// caches, session state), creating its directory.
pub fn replace_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::other(format!("{} names no file", path.display())));
    };
    let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
    std::fs::create_dir_all(parent)?;
    let dir = cap_std::fs::Dir::open_ambient_dir(parent, cap_std::ambient_authority())?;
    replace_in(&dir, Path::new(name), contents)
}

/// `$TOOLHOST_DATA_DIR`, else `$XDG_DATA_HOME/toolhost`, else `~/.local/share/toolhost`.
pub fn default_data_dir() -> PathBuf {
    xdg("TOOLHOST_DATA_DIR", "XDG_DATA_HOME", ".local/share")
}

/// `$TOOLHOST_CACHE_DIR`, else `$XDG_CACHE_HOME/toolhost`, else `~/.cache/toolhost`.
pub fn default_cache_dir() -> PathBuf {
    xdg("TOOLHOST_CACHE_DIR", "XDG_CACHE_HOME", ".cache")
}

/// `$TOOLHOST_PLUGINS`, else `$XDG_CONFIG_HOME/toolhost/plugins`, else `~/.config/toolhost/plugins`.
pub fn default_plugins_dir() -> PathBuf {
    match std::env::var_os("TOOLHOST_PLUGINS") {
        Some(dir) => PathBuf::from(dir),
        None => config_dir().join("plugins"),
    }
}

/// `$TOOLHOST_CONFIG_DIR`, else `$XDG_CONFIG_HOME/toolhost`, else `~/.config/toolhost`:
/// user settings and plugins.
pub fn config_dir() -> PathBuf {
    xdg("TOOLHOST_CONFIG_DIR", "XDG_CONFIG_HOME", ".config")
}

fn xdg(own: &str, xdg_var: &str, home_rel: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os(own).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os(xdg_var)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::home_dir().map(|h| h.join(home_rel)))
        .unwrap_or_else(std::env::temp_dir);
    base.join("toolhost")
}

/// `bytes` in lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
/// A settings file that cannot be read, parsed or written.
#[derive(Debug, thiserror::Error)]
pub enum SettingsFileError {
    #[error("settings file {file}: {message}")]
    /// The file is not the JSON it should be.
    Invalid {
        /// The file, or where the settings came from.
        file: String,
        /// What is wrong, with its line where known.
        message: String,
    },
    #[error("settings file {file}: cannot read it: {source}")]
    /// The file cannot be read or written.
    Read {
        /// The file.
        file: String,
        /// Why.
        source: std::io::Error,
    },
}

/// A JSON error in words, with its line and column.
pub(crate) fn describe_json_error(e: &serde_json::Error) -> String {
    let what = e.to_string();
    // serde_json appends " at line L column C"; put the position first.
    let bare = what.split(" at line ").next().unwrap_or(&what);
    format!("line {} column {}: {bare}", e.line(), e.column())
}

/// Reads `file` as a JSON object (an empty or missing file is `{}`), lets
/// `edit` change it, and writes it back atomically when `edit` says it
/// changed it; whether it did.
pub(crate) fn edit_json(
    file: &Path,
    edit: impl FnOnce(
        &mut serde_json::Map<String, serde_json::Value>,
        &dyn Fn(&str) -> SettingsFileError,
    ) -> Result<bool, SettingsFileError>,
) -> Result<bool, SettingsFileError> {
    let name = file.display().to_string();
    let mut value: serde_json::Value = match std::fs::read_to_string(file) {
        Ok(text) if !text.trim().is_empty() => serde_json::from_str(&text)
            .map_err(|e| SettingsFileError::Invalid { file: name.clone(), message: describe_json_error(&e) })?,
        Ok(_) => serde_json::json!({}),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => serde_json::json!({}),
        Err(source) => return Err(SettingsFileError::Read { file: name, source }),
    };
    let invalid = |message: &str| SettingsFileError::Invalid { file: name.clone(), message: message.to_string() };
    let root = value.as_object_mut().ok_or_else(|| invalid("is not a JSON object"))?;
    if !edit(root, &invalid)? {
        return Ok(false);
    }
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).map_err(|source| SettingsFileError::Read { file: name.clone(), source })?;
    }
    let write = |e: std::io::Error| SettingsFileError::Read { file: name.clone(), source: e };
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    crate::fsx::replace_file(file, text.as_bytes()).map_err(write)?;
    Ok(true)
}
