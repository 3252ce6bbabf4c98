//! A tool's manifest, `NAME.tool.yaml` beside the component `NAME.wasm`:
//! what the operator says a WASI command is called and what it does (a
//! command's component says neither). `toolhost install FILE --name N
//! --description D` writes one.
//!
//! ```yaml
//! name: word-count
//! description: Counts the lines, words and bytes of its standard input.
//! ```

use super::LoadError;
use super::declare::{MAX_DESCRIPTION, check_name};
use crate::contract::plain::naming;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Largest manifest read.
pub const MAX_MANIFEST_BYTES: usize = 16 << 10;

/// The manifest beside the component file `component`.
pub fn beside(component: &Path) -> PathBuf {
    component.with_extension(EXTENSION)
}

/// What a manifest's name ends with, after its component's name.
pub const EXTENSION: &str = "tool.yaml";

/// What a manifest says.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The tool's name (1–64 of `A-Z a-z 0-9 _ -`).
    pub name: Option<String>,
    /// What it does, for the model (at most 1,024 characters).
    pub description: Option<String>,
}

/// Why a manifest does not read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// It is larger than [`MAX_MANIFEST_BYTES`].
    #[error("it is {} KiB; manifests of at most {} KiB are read", .0 >> 10, MAX_MANIFEST_BYTES >> 10)]
    TooLarge(usize),
    /// Not YAML of a manifest's shape (where, when YAML says).
    #[error("not a tool manifest (`name` and `description`): {0}")]
    Malformed(String),
    /// Its name is not a valid tool name.
    #[error("{0}")]
    Name(String),
    /// Its description is too long.
    #[error("its description is {0} characters; at most {MAX_DESCRIPTION} are taken")]
    Description(usize),
}

impl Manifest {
    /// Reads a manifest's text.
    pub fn read(text: &str) -> Result<Manifest, ManifestError> {
        if text.len() > MAX_MANIFEST_BYTES {
            return Err(ManifestError::TooLarge(text.len()));
        }
        let manifest: Manifest = match text.trim().is_empty() {
            true => Manifest::default(),
            false => serde_saphyr::from_str(text).map_err(|e| ManifestError::Malformed(e.to_string()))?,
        };
        if let Some(name) = &manifest.name {
            check_name(name).map_err(ManifestError::Name)?;
        }
        if let Some(chars) = manifest.description.as_ref().map(|d| d.chars().count()).filter(|n| *n > MAX_DESCRIPTION) {
            return Err(ManifestError::Description(chars));
        }
        Ok(manifest)
    }

    /// Its text, as [`Manifest::read`] reads it back.
    pub fn text(&self) -> String {
        let mut text = String::new();
        for (key, value) in [("name", &self.name), ("description", &self.description)] {
            if let Some(value) = value {
                // A JSON string is a YAML double-quoted scalar.
                text.push_str(&format!("{key}: {}\n", serde_json::Value::from(value.as_str())));
            }
        }
        text
    }
}

/// The manifest beside the component file `path`, if there is one.
pub(crate) fn read_beside(path: &Path) -> Result<Option<Manifest>, LoadError> {
    let file = beside(path);
    match std::fs::read_to_string(&file) {
        Ok(text) => Manifest::read(&text).map(Some).map_err(|why| LoadError::Manifest(file.display().to_string(), why)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(LoadError::ManifestUnreadable(file.display().to_string(), e)),
    }
}

/// A command's tool name when its manifest gives none: its file's, made a
/// valid tool name.
pub(crate) fn name_of_file(path: &Path) -> String {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    naming::fit(naming::normalize_name(&stem))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_names_and_describes_and_refuses_what_it_cannot_be() {
        let m = Manifest::read("name: word-count\ndescription: Counts words.\n").unwrap();
        assert_eq!(m.name.as_deref(), Some("word-count"));
        assert_eq!(m.description.as_deref(), Some("Counts words."));
        assert_eq!(Manifest::read("").unwrap(), Manifest::default());
        assert!(matches!(Manifest::read("name: two words"), Err(ManifestError::Name(_))));
        assert!(matches!(Manifest::read("nmae: x"), Err(ManifestError::Malformed(_))));
        assert!(matches!(Manifest::read("- a list"), Err(ManifestError::Malformed(_))));
        let long = format!("description: {}", "x".repeat(MAX_DESCRIPTION + 1));
        assert_eq!(Manifest::read(&long), Err(ManifestError::Description(MAX_DESCRIPTION + 1)));
        assert!(matches!(Manifest::read(&"#".repeat(MAX_MANIFEST_BYTES + 1)), Err(ManifestError::TooLarge(_))));
        assert_eq!(beside(Path::new("/p/wc.wasm")), Path::new("/p/wc.tool.yaml"));
        assert_eq!(name_of_file(Path::new("/p/my tool.v2.wasm")), "my_tool_v2");
    }

    #[test]
    fn its_text_reads_back_whatever_the_description_holds() {
        for description in ["plain", "a: colon, #hash, \"quotes\" and\nnew lines", "- dash", "null", "  spaced "] {
            let m = Manifest { name: Some("t".into()), description: Some(description.into()) };
            assert_eq!(Manifest::read(&m.text()).unwrap(), m, "{description:?}");
        }
    }
}
