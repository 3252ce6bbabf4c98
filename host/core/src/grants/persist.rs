//! Grants kept for the next starts: `toolGrants.TOOL` in a settings file,
//! added to or removed, the rest of the file left as it is.

use super::Allowance;
use crate::fsx::SettingsFileError;
use std::path::Path;

/// Adds `grant` to `toolGrants.TOOL` in `file` (created if missing), keeping
/// what the file already grants and the rest of the file.
pub fn add_tool_grant(file: &Path, tool: &str, grant: &Allowance) -> Result<(), SettingsFileError> {
    crate::fsx::edit_json(file, |root, invalid| {
        let grants = root.entry("toolGrants").or_insert_with(|| serde_json::json!({}));
        let grants = grants.as_object_mut().ok_or_else(|| invalid("`toolGrants` is not an object"))?;
        let mut merged: Allowance = match grants.get(tool) {
            Some(existing) => serde_json::from_value(existing.clone())
                .map_err(|e| invalid(&format!("`toolGrants.{tool}` is not a grant: {e}")))?,
            None => Allowance::default(),
        };
        merged.add(grant);
        merged.directories.sort_by(|a, b| a.path.cmp(&b.path));
        merged.directories.dedup();
        for list in [&mut merged.hosts, &mut merged.env] {
            list.sort();
            list.dedup();
        }
        grants.insert(tool.to_string(), serde_json::to_value(&merged).unwrap_or_default());
        Ok(true)
    })
    .map(drop)
}

/// Removes `toolGrants.TOOL` from `file` (and `toolGrants` once empty),
/// keeping the rest of the file; whether there was one (a missing file, or
/// one without it, is left as it is).
pub fn remove_tool_grant(file: &Path, tool: &str) -> Result<bool, SettingsFileError> {
    if !file.exists() {
        return Ok(false);
    }
    crate::fsx::edit_json(file, |root, invalid| {
        let Some(grants) = root.get_mut("toolGrants") else { return Ok(false) };
        let grants = grants.as_object_mut().ok_or_else(|| invalid("`toolGrants` is not an object"))?;
        if grants.shift_remove(tool).is_none() {
            return Ok(false);
        }
        if grants.is_empty() {
            root.shift_remove("toolGrants");
        }
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_grant_adds_to_what_the_file_grants() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".toolhost/settings.local.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, r#"{"permissions": {"allow": ["Read"]}, "toolGrants": {"T": {"env": ["B"]}}}"#).unwrap();
        let grant: Allowance = serde_json::from_str(
            r#"{"env": ["A", "B"], "hosts": ["*"], "directories": [{"path": "/d", "access": "read-only"}]}"#,
        )
        .unwrap();
        add_tool_grant(&file, "T", &grant).unwrap();
        add_tool_grant(&file, "T", &grant).unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "permissions": {"allow": ["Read"]},
                "toolGrants": {"T": {"directories": [{"path": "/d", "access": "read-only"}], "hosts": ["*"], "env": ["A", "B"]}}
            })
        );
        // What it wrote loads as a grant.
        let loaded: Allowance = serde_json::from_value(v["toolGrants"]["T"].clone()).unwrap();
        loaded.check().unwrap();
    }

    #[test]
    fn a_removed_grant_leaves_the_rest_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".toolhost/settings.local.json");
        assert!(!remove_tool_grant(&file, "T").unwrap());
        assert!(!file.exists(), "a missing file is not created");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let text = r#"{"permissions": {"allow": ["Read"]}, "toolGrants": {"T": {"env": ["B"]}, "U": {"env": ["C"]}}}"#;
        std::fs::write(&file, text).unwrap();
        assert!(!remove_tool_grant(&file, "V").unwrap());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text, "nothing to remove: not rewritten");
        assert!(remove_tool_grant(&file, "T").unwrap());
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(v, serde_json::json!({"permissions": {"allow": ["Read"]}, "toolGrants": {"U": {"env": ["C"]}}}));
        assert!(remove_tool_grant(&file, "U").unwrap());
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(v, serde_json::json!({"permissions": {"allow": ["Read"]}}), "an empty toolGrants goes too");
    }
}
