//! Secrets for tools: values such as API tokens, kept outside every
//! workspace, each under a tool's name, and handed to that tool alone when
//! `toolGrants.TOOL.secrets` grants it and its component requests it: as an
//! environment variable of that name inside its instance (for an MCP
//! server, of its process).
//!
//! Where they are kept: the OS keyring where one is usable (the freedesktop
//! Secret Service over D-Bus: GNOME Keyring, KeePassXC, KWallet), else
//! `secrets.json` in the user's configuration directory, a file only the
//! user can read. `TOOLHOST_SECRET_STORE` chooses: `auto`
//! (the default: the keyring when usable, else the file), `keyring` (the
//! keyring or an error), `file`. Values stored in the file before a keyring
//! was there keep working; storing one again moves it to the keyring.
//!
//! A value never reaches the audit log, the tracing output or a persisted
//! result through the host: whatever the tool gives back (its result, its
//! progress, its log lines) has every granted value replaced by
//! `[secret NAME]` before anything else sees it.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

mod keyring;
pub use keyring::ANSWER_WITHIN as KEYRING_ANSWER_WITHIN;
use keyring::{Answer, Request};

/// The shortest value stored: a shorter one could not be masked without
/// garbling ordinary output.
pub const MIN_LEN: usize = 4;

/// The variable that chooses the store.
pub const STORE_VARIABLE: &str = "TOOLHOST_SECRET_STORE";

/// Which store [`SecretStore`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The OS keyring when one is usable, else the file.
    Auto,
    /// The OS keyring, or an error saying why there is none.
    Keyring,
    /// The file only.
    File,
}

impl Backend {
    /// As `TOOLHOST_SECRET_STORE` names it (unset: `auto`).
    pub fn from_env() -> Result<Backend, SecretError> {
        match std::env::var(STORE_VARIABLE).as_deref() {
            Err(_) | Ok("" | "auto") => Ok(Backend::Auto),
            Ok("keyring") => Ok(Backend::Keyring),
            Ok("file") => Ok(Backend::File),
            Ok(other) => Err(SecretError::UnknownStore(other.to_string())),
        }
    }
}

/// Why the secret store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// `TOOLHOST_SECRET_STORE` names no store.
    #[error("{STORE_VARIABLE}={0:?} is not a secret store: use auto, keyring or file")]
    UnknownStore(String),
    /// Not a name a secret (an environment variable) can have.
    #[error("`{0}` is not a secret name: letters, digits and `_`, not starting with a digit")]
    InvalidName(String),
    /// Too short to be masked in output.
    #[error("a secret is at least {MIN_LEN} characters (shorter ones cannot be masked in output)")]
    TooShort,
    /// The keyring was asked for and there is none, or it failed.
    #[error("{0}")]
    Keyring(String),
    /// The file cannot be opened, read or looked at.
    #[error("cannot read the secrets {}: {}", .0.display(), .1)]
    Unreadable(PathBuf, std::io::Error),
    /// The file can be read by others than the user.
    #[error("the secrets {} can be read by others (mode {:o}): `chmod 600` it, then use it again", .0.display(), .1)]
    Exposed(PathBuf, u32),
    /// The file is not JSON of the store's shape.
    #[error("the secrets {} do not read: {}", .0.display(), .1)]
    Malformed(PathBuf, serde_json::Error),
    /// The file could not be written.
    #[error("cannot write the secrets {}: {}", .0.display(), .1)]
    Unwritable(PathBuf, std::io::Error),
}

/// Where a secret is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// The OS keyring.
    Keyring,
    /// This file.
    File(PathBuf),
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Keyring => f.write_str("the OS keyring (Secret Service)"),
            Place::File(file) => write!(f, "{}", file.display()),
        }
    }
}

/// The user's secrets: in the OS keyring, or in a file
/// (`{"TOOL": {"NAME": "value"}}`, mode 0600).
pub struct SecretStore {
    file: PathBuf,
    /// The backend, or the unknown name `TOOLHOST_SECRET_STORE` gave (said
    /// at each use).
    backend: Result<Backend, String>,
}

type Table = BTreeMap<String, BTreeMap<String, String>>;

/// What came of asking the keyring.
enum Keyring {
    Answered(Answer),
    /// Not used: the store is the file alone (`None`), or there is no
    /// keyring and the file stands in (why).
    NotUsed(Option<String>),
}

impl SecretStore {
    /// The user's store: the one `TOOLHOST_SECRET_STORE` chooses, its file
    /// `secrets.json` in [`crate::config_dir`].
    pub fn user() -> SecretStore {
        SecretStore {
            file: crate::config_dir().join("secrets.json"),
            backend: Backend::from_env().map_err(|e| match e {
                SecretError::UnknownStore(name) => name,
                other => other.to_string(),
            }),
        }
    }

    /// A store in `file` alone.
    pub fn at(file: impl Into<PathBuf>) -> SecretStore {
        SecretStore { file: file.into(), backend: Ok(Backend::File) }
    }

    /// A store in `file` and, as `backend` says, the OS keyring.
    pub fn with(file: impl Into<PathBuf>, backend: Backend) -> SecretStore {
        SecretStore { file: file.into(), backend: Ok(backend) }
    }

    /// The file it keeps the secrets in when not in the keyring.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Where a secret stored now would go; with why not the keyring, when
    /// it would go to the file for want of one.
    pub fn place(&self) -> Result<(Place, Option<String>), SecretError> {
        match self.keyring(Request::List)? {
            Keyring::Answered(_) => Ok((Place::Keyring, None)),
            Keyring::NotUsed(why) => Ok((Place::File(self.file.clone()), why)),
        }
    }

    /// Stores `value` as `tool`'s secret `name`, replacing an earlier one;
    /// where it went.
    pub fn set(&self, tool: &str, name: &str, value: &str) -> Result<Place, SecretError> {
        if !valid_name(name) {
            return Err(SecretError::InvalidName(name.to_string()));
        }
        if value.chars().count() < MIN_LEN {
            return Err(SecretError::TooShort);
        }
        let request = Request::Set { tool: tool.into(), name: name.into(), value: value.into() };
        if let Keyring::Answered(_) = self.keyring(request)? {
            // An older copy in the file would only mislead.
            let _ = self.remove_from_file(tool, name);
            return Ok(Place::Keyring);
        }
        let mut table = self.read()?;
        table.entry(tool.to_string()).or_default().insert(name.to_string(), value.to_string());
        self.write(&table)?;
        Ok(Place::File(self.file.clone()))
    }

    /// Removes `tool`'s secret `name` wherever it is; whether there was one.
    pub fn remove(&self, tool: &str, name: &str) -> Result<bool, SecretError> {
        let in_keyring = matches!(
            self.keyring(Request::Remove { tool: tool.into(), name: name.into() })?,
            Keyring::Answered(Answer::Removed(true))
        );
        Ok(self.remove_from_file(tool, name)? || in_keyring)
    }

    fn remove_from_file(&self, tool: &str, name: &str) -> Result<bool, SecretError> {
        let mut table = self.read()?;
        let removed = table.get_mut(tool).is_some_and(|t| t.remove(name).is_some());
        if removed {
            table.retain(|_, names| !names.is_empty());
            self.write(&table)?;
        }
        Ok(removed)
    }

    /// Every tool and secret name stored (never the values), and where.
    pub fn list(&self) -> Result<Vec<(String, String, Place)>, SecretError> {
        let mut list = Vec::new();
        if let Keyring::Answered(Answer::Names(names)) = self.keyring(Request::List)? {
            list.extend(names.into_iter().map(|(tool, name)| (tool, name, Place::Keyring)));
        }
        for (tool, names) in self.read()? {
            list.extend(names.into_keys().map(|name| (tool.clone(), name, Place::File(self.file.clone()))));
        }
        list.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        Ok(list)
    }

    /// The values of `tool`'s secrets among `names` that are stored (the
    /// keyring's where both have one).
    pub fn values(&self, tool: &str, names: &[String]) -> Result<Vec<(String, String)>, SecretError> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let mut values = Vec::new();
        if let Keyring::Answered(Answer::Values(found)) =
            self.keyring(Request::Values { tool: tool.into(), names: names.to_vec() })?
        {
            values = found;
        }
        let mut table = self.read()?;
        if let Some(stored) = table.remove(tool) {
            for (name, value) in stored {
                if names.contains(&name) && !values.iter().any(|(n, _)| *n == name) {
                    values.push((name, value));
                }
            }
        }
        values.sort();
        Ok(values)
    }

    /// `request` put to the keyring, as the backend says.
    fn keyring(&self, request: Request) -> Result<Keyring, SecretError> {
        let backend = self.backend.clone().map_err(SecretError::UnknownStore)?;
        if backend == Backend::File {
            return Ok(Keyring::NotUsed(None));
        }
        match keyring::ask(request) {
            Ok(answer) => Ok(Keyring::Answered(answer)),
            Err(keyring::Trouble::Unavailable(why)) if backend == Backend::Auto => Ok(Keyring::NotUsed(Some(why))),
            Err(trouble @ keyring::Trouble::Unavailable(_)) => Err(SecretError::Keyring(format!(
                "{trouble} ({STORE_VARIABLE}=file keeps secrets in {} instead)",
                self.file.display()
            ))),
            Err(trouble) => Err(SecretError::Keyring(trouble.to_string())),
        }
    }

    fn read(&self) -> Result<Table, SecretError> {
        let unreadable = |e| SecretError::Unreadable(self.file.clone(), e);
        let file = match std::fs::File::open(&self.file) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Table::new()),
            Err(e) => return Err(unreadable(e)),
        };
        let mode = file.metadata().map_err(unreadable)?.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(SecretError::Exposed(self.file.clone(), mode & 0o777));
        }
        serde_json::from_reader(std::io::BufReader::new(file)).map_err(|e| SecretError::Malformed(self.file.clone(), e))
    }

    /// Writes `table` to a new file only the user can read, renamed over
    /// the old one.
    fn write(&self, table: &Table) -> Result<(), SecretError> {
        let failed = |e: std::io::Error| SecretError::Unwritable(self.file.clone(), e);
        let dir = self.file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(failed)?;
        let staged = dir.join(format!(".secrets-{}.tmp", std::process::id()));
        let mut file =
            std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&staged).map_err(failed)?;
        let written = serde_json::to_vec_pretty(table)
            .map_err(std::io::Error::other)
            .and_then(|bytes| file.write_all(&bytes))
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&staged, &self.file));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&staged);
            return Err(failed(e));
        }
        Ok(())
    }
}

/// Whether `name` can name a secret (and so an environment variable).
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 128
}

/// The shortest encoded form masked: a shorter run of base64 characters
/// turns up in ordinary output by chance.
const MIN_ENCODED: usize = 8;

/// `text` with every value of `secrets` replaced by `[secret NAME]`: as it
/// is, and as the usual encodings write it (JSON string escapes, hex in
/// either case, percent-encoding, and base64, standard or URL-safe, also
/// where the value sits at any offset inside a longer encoded text, as in
/// an HTTP Basic `user:token`).
pub fn mask(text: &str, secrets: &[(String, String)]) -> String {
    let mut out = text.to_string();
    for (name, value) in secrets {
        if value.chars().count() < MIN_LEN {
            continue;
        }
        for form in forms(value) {
            if out.contains(form.as_str()) {
                out = out.replace(form.as_str(), &format!("[secret {name}]"));
            }
        }
    }
    out
}

/// The ways `value` may be written out, longest first.
fn forms(value: &str) -> Vec<String> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let bytes = value.as_bytes();
    let mut forms = vec![value.to_string()];
    let escaped = serde_json::to_string(value).unwrap_or_default();
    forms.push(escaped[1..escaped.len().saturating_sub(1).max(1)].to_string());
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    forms.push(hex.to_uppercase());
    forms.push(hex);
    let percent: String = bytes
        .iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    forms.push(percent);
    // Base64 of the value after `k` other bytes: the characters that only
    // the value's bits decide.
    for k in 0..3usize {
        let mut shifted = vec![0u8; k];
        shifted.extend_from_slice(bytes);
        let (first, end) = ((8 * k).div_ceil(6), (8 * (k + bytes.len())) / 6);
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&shifted);
            if let Some(middle) = encoded.get(first..end) {
                forms.push(middle.to_string());
            }
        }
    }
    forms.retain(|f| f == value || f.len() >= MIN_ENCODED);
    forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
    forms.dedup();
    forms
}

/// Every string of `value` masked (object keys included).
pub fn mask_json(value: &mut serde_json::Value, secrets: &[(String, String)]) {
    use serde_json::Value;
    match value {
        Value::String(s) => *s = mask(s, secrets),
        Value::Array(items) => items.iter_mut().for_each(|v| mask_json(v, secrets)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (key, mut v) in entries {
                mask_json(&mut v, secrets);
                map.insert(mask(&key, secrets), v);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_keeps_values_per_tool_in_a_file_only_the_user_reads() {
        let dir = tempfile::tempdir().unwrap();
        let store = SecretStore::at(dir.path().join("conf/secrets.json"));
        assert!(store.list().unwrap().is_empty());
        store.set("Weather", "API_TOKEN", "tok-123456").unwrap();
        store.set("Mail", "PASSWORD", "hunter22").unwrap();
        let mode = std::fs::metadata(store.file()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let file = || Place::File(store.file().to_path_buf());
        assert_eq!(
            store.list().unwrap(),
            [("Mail".into(), "PASSWORD".into(), file()), ("Weather".into(), "API_TOKEN".into(), file())]
        );
        assert_eq!(store.place().unwrap(), (file(), None));
        let names = ["API_TOKEN".to_string(), "PASSWORD".to_string()];
        assert_eq!(store.values("Weather", &names).unwrap(), [("API_TOKEN".into(), "tok-123456".into())]);
        assert!(store.values("Weather", &[]).unwrap().is_empty());
        assert!(store.remove("Weather", "API_TOKEN").unwrap());
        assert!(!store.remove("Weather", "API_TOKEN").unwrap());
        assert!(store.values("Weather", &names).unwrap().is_empty());
        // Readable by others: refused, not used.
        std::fs::set_permissions(store.file(), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(store.list(), Err(SecretError::Exposed(_, 0o644))));
        assert!(store.list().unwrap_err().to_string().contains("can be read by others"));
        assert!(matches!(store.set("Mail", "1BAD", "value"), Err(SecretError::InvalidName(n)) if n == "1BAD"));
        assert!(matches!(store.set("Mail", "SHORT", "abc"), Err(SecretError::TooShort)));
    }

    #[test]
    fn encoded_values_are_masked_too() {
        use base64::Engine as _;
        use base64::engine::general_purpose::{STANDARD, URL_SAFE};
        let value = "tok-5e3c?8a1f/9b2d+x";
        let secrets = [("TOKEN".to_string(), value.to_string())];
        let hex: String = value.bytes().map(|b| format!("{b:02x}")).collect();
        let basic = STANDARD.encode(format!("alice:{value}"));
        for shown in [
            STANDARD.encode(value),
            URL_SAFE.encode(value),
            format!("Authorization: Basic {basic}"),
            STANDARD.encode(format!("ab{value}")),
            STANDARD.encode(format!("{value}ab")),
            hex.clone(),
            hex.to_uppercase(),
            "tok-5e3c%3F8a1f%2F9b2d%2Bx".to_string(),
            serde_json::to_string(&format!("{value}\"")).unwrap(),
        ] {
            let masked = mask(&shown, &secrets);
            assert!(masked.contains("[secret TOKEN]"), "{shown} -> {masked}");
        }
        // The Basic credential's value part is gone: what is left does not
        // decode to the token.
        let masked = mask(&basic, &secrets);
        assert!(
            !String::from_utf8_lossy(&STANDARD.decode(masked.replace("[secret TOKEN]", "")).unwrap_or_default())
                .contains("5e3c")
        );
        // A short value's base64 is too short to tell from chance and is
        // left; its hex is not. Ordinary text is left alone.
        let short = [("PIN".to_string(), "4821".to_string())];
        assert_eq!(mask("pin 4821 hex 34383231 b64 NDgyMQ", &short), "pin [secret PIN] hex [secret PIN] b64 NDgyMQ");
        assert_eq!(mask("nothing secret here", &secrets), "nothing secret here");
    }

    #[test]
    fn values_are_masked_in_text_and_json() {
        let secrets = [("TOKEN".to_string(), "s3cr3t-v4lue".to_string())];
        assert_eq!(mask("got s3cr3t-v4lue twice: s3cr3t-v4lue", &secrets), "got [secret TOKEN] twice: [secret TOKEN]");
        let mut v = serde_json::json!({"a": ["x s3cr3t-v4lue"], "s3cr3t-v4lue": 1, "n": 2});
        mask_json(&mut v, &secrets);
        assert_eq!(v, serde_json::json!({"a": ["x [secret TOKEN]"], "[secret TOKEN]": 1, "n": 2}));
        assert!(
            valid_name("API_TOKEN") && valid_name("_x") && !valid_name("9A") && !valid_name("A-B") && !valid_name("")
        );
    }
}
