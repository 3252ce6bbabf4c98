//! Why an `oci://` source is refused: its reference, or its pull. The texts
//! say what to write or what the registry did.

use std::fmt;

/// Why an `oci://` source is not a reference to pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReferenceError {
    /// No registry is named (a bare `REPOSITORY:TAG` would mean Docker Hub).
    NoRegistry { source: String },
    /// It does not parse as a reference.
    Malformed { source: String, why: String },
}

impl fmt::Display for ReferenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReferenceError::NoRegistry { source } => write!(
                f,
                "`{source}` names no registry: write oci://REGISTRY/REPOSITORY:TAG (e.g. oci://ghcr.io/OWNER/TOOL:1.0)"
            ),
            ReferenceError::Malformed { source, why } => write!(
                f,
                "`{source}` is not an OCI reference ({why}): write oci://REGISTRY/REPOSITORY:TAG or \
                 oci://REGISTRY/REPOSITORY@sha256:DIGEST"
            ),
        }
    }
}

impl std::error::Error for ReferenceError {}

/// Why a pull brought no component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullError {
    /// The network client could not start.
    Client(String),
    /// The credentials are half set, or could not be read.
    Credentials(String),
    /// The registry failed, refused, sent too much or ran out of time.
    Registry { registry: String, credentials: String, why: String },
    /// The registry answered a manifest of another digest than the one pinned.
    OtherDigest { answered: String, pinned: String },
    /// The reference names an image index, not a component's manifest.
    ImageIndex { source: String },
    /// The manifest holds no wasm layer, or several.
    Layers(String),
    /// The component's layer declares a negative size.
    NegativeSize(i64),
    /// The component's layer is larger than toolhost pulls.
    TooLarge { size: u64, max: u64 },
}

impl fmt::Display for PullError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PullError::Client(why) | PullError::Credentials(why) | PullError::Layers(why) => f.write_str(why),
            PullError::Registry { registry, credentials, why } => {
                write!(f, "pulling from {registry} failed ({credentials}): {why}")
            }
            PullError::OtherDigest { answered, pinned } => {
                write!(f, "the registry answered a manifest of digest {answered}, not the {pinned} asked for")
            }
            PullError::ImageIndex { source } => write!(
                f,
                "{source} is an image index (a list of images for several platforms), not a wasm component's manifest"
            ),
            PullError::NegativeSize(size) => write!(f, "the component's layer has a negative size ({size})"),
            PullError::TooLarge { size, max } => {
                write!(f, "the component is {size} bytes, more than the {max} toolhost pulls")
            }
        }
    }
}

impl std::error::Error for PullError {}
