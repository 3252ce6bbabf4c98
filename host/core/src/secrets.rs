//! Secrets for tools: values such as API tokens, kept in the user's
//! configuration directory (outside every workspace) in a file only the
//! user can read, each under a tool's name, and handed to that tool alone
//! when `toolGrants.TOOL.secrets` grants it and its component requests it:
//! as an environment variable of that name inside its instance.
//!
//! A value never reaches the audit log, the tracing output or a persisted
//! result through the host: whatever the tool gives back (its result, its
//! progress, its log lines) has every granted value replaced by
//! `[secret NAME]` before anything else sees it.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

/// The shortest value stored: a shorter one could not be masked without
/// garbling ordinary output.
pub const MIN_LEN: usize = 4;

/// The secrets file: `{"TOOL": {"NAME": "value"}}`, mode 0600.
pub struct SecretStore {
    file: PathBuf,
}

type Table = BTreeMap<String, BTreeMap<String, String>>;

impl SecretStore {
    /// The user's store: `secrets.json` in [`crate::config_dir`].
    pub fn user() -> SecretStore {
        SecretStore { file: crate::config_dir().join("secrets.json") }
    }

    /// A store in `file`.
    pub fn at(file: impl Into<PathBuf>) -> SecretStore {
        SecretStore { file: file.into() }
    }

    /// The file it keeps the secrets in.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Stores `value` as `tool`'s secret `name`, replacing an earlier one.
    pub fn set(&self, tool: &str, name: &str, value: &str) -> Result<(), String> {
        if !valid_name(name) {
            return Err(format!("`{name}` is not a secret name: letters, digits and `_`, not starting with a digit"));
        }
        if value.chars().count() < MIN_LEN {
            return Err(format!("a secret is at least {MIN_LEN} characters (shorter ones cannot be masked in output)"));
        }
        let mut table = self.read()?;
        table.entry(tool.to_string()).or_default().insert(name.to_string(), value.to_string());
        self.write(&table)
    }

    /// Removes `tool`'s secret `name`; whether there was one.
    pub fn remove(&self, tool: &str, name: &str) -> Result<bool, String> {
        let mut table = self.read()?;
        let removed = table.get_mut(tool).is_some_and(|t| t.remove(name).is_some());
        if removed {
            table.retain(|_, names| !names.is_empty());
            self.write(&table)?;
        }
        Ok(removed)
    }

    /// Every tool and secret name stored (never the values).
    pub fn list(&self) -> Result<Vec<(String, String)>, String> {
        Ok(self
            .read()?
            .into_iter()
            .flat_map(|(tool, names)| names.into_keys().map(move |n| (tool.clone(), n)))
            .collect())
    }

    /// The values of `tool`'s secrets among `names` that are stored.
    pub fn values(&self, tool: &str, names: &[String]) -> Result<Vec<(String, String)>, String> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let mut table = self.read()?;
        let Some(stored) = table.remove(tool) else { return Ok(Vec::new()) };
        Ok(stored.into_iter().filter(|(name, _)| names.contains(name)).collect())
    }

    fn read(&self) -> Result<Table, String> {
        let file = match std::fs::File::open(&self.file) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Table::new()),
            Err(e) => return Err(format!("cannot read the secrets {}: {e}", self.file.display())),
        };
        let mode = file.metadata().map_err(|e| format!("{}: {e}", self.file.display()))?.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(format!(
                "the secrets {} can be read by others (mode {:o}): `chmod 600` it, then use it again",
                self.file.display(),
                mode & 0o777
            ));
        }
        serde_json::from_reader(std::io::BufReader::new(file))
            .map_err(|e| format!("the secrets {} do not read: {e}", self.file.display()))
    }

    /// Writes `table` to a new file only the user can read, renamed over
    /// the old one.
    fn write(&self, table: &Table) -> Result<(), String> {
        let failed = |e: std::io::Error| format!("cannot write the secrets {}: {e}", self.file.display());
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

/// `text` with every value of `secrets` replaced by `[secret NAME]`.
pub fn mask(text: &str, secrets: &[(String, String)]) -> String {
    let mut out = text.to_string();
    for (name, value) in secrets {
        if value.chars().count() >= MIN_LEN && out.contains(value.as_str()) {
            out = out.replace(value.as_str(), &format!("[secret {name}]"));
        }
    }
    out
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
        assert_eq!(store.list().unwrap(), [("Mail".into(), "PASSWORD".into()), ("Weather".into(), "API_TOKEN".into())]);
        let names = ["API_TOKEN".to_string(), "PASSWORD".to_string()];
        assert_eq!(store.values("Weather", &names).unwrap(), [("API_TOKEN".into(), "tok-123456".into())]);
        assert!(store.values("Weather", &[]).unwrap().is_empty());
        assert!(store.remove("Weather", "API_TOKEN").unwrap());
        assert!(!store.remove("Weather", "API_TOKEN").unwrap());
        assert!(store.values("Weather", &names).unwrap().is_empty());
        // Readable by others: refused, not used.
        std::fs::set_permissions(store.file(), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(store.list().unwrap_err().contains("can be read by others"));
        assert!(store.set("Mail", "1BAD", "value").unwrap_err().contains("not a secret name"));
        assert!(store.set("Mail", "SHORT", "abc").is_err());
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
