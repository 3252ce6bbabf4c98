//! Signatures of tools, checked before a tool is installed, in this process
//! (no external program): minisign signatures of component files
//! ([`minisign`]), cosign key-pair signatures of components pulled from OCI
//! registries ([`cosign`]), and Sigstore bundles attached to them
//! ([`sigstore`]: key-pair or keyless, against a trust root, offline),
//! against the keys and signers the operator trusts. What
//! they read comes from a tool's author or a registry, so both are fuzzed
//! (`fuzz/`, target `signatures`).

pub mod cosign;
pub mod minisign;
pub mod sigstore;

/// Why a key the operator wrote, or a hash they pinned, cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// `--sha256` that is not 64 hex digits (what was given).
    NotSha256(String),
    /// Not a minisign public key in base64.
    NotMinisign {
        /// Where it is written.
        origin: String,
        /// What is written.
        text: String,
        /// Why it does not read.
        why: String,
    },
    /// Not an ECDSA P-256 public key in PEM.
    NotCosign {
        /// Where it is written.
        origin: String,
        /// Why it does not read.
        why: String,
    },
}

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyError::NotSha256(text) => {
                write!(f, "`{text}` is not a SHA-256: 64 hex digits, as `sha256sum FILE` prints them")
            }
            KeyError::NotMinisign { origin, text, why } => {
                write!(f, "{origin}: `{text}` is not a minisign public key ({why})")
            }
            KeyError::NotCosign { origin, why } => {
                write!(f, "{origin}: not an ECDSA P-256 public key in PEM, as cosign writes them ({why})")
            }
        }
    }
}

impl std::error::Error for KeyError {}
