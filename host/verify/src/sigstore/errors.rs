//! Why a trust root, a signer's identity or a bundle cannot be used.

/// Why a trust root's JSON cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrustRootError {
    /// It is not JSON (why).
    NotJson(String),
    /// Its `mediaType` is not a trusted root's (what it is).
    MediaType(String),
    /// A key or certificate that is not base64.
    NotBase64 {
        /// Which.
        what: &'static str,
        /// Why.
        why: String,
    },
    /// A `validFor` that does not read.
    Validity {
        /// Whose (a log, an authority).
        of: String,
        /// Why.
        why: String,
    },
    /// A certificate authority without certificates (its URI).
    NoCertificates(String),
    /// No transparency log this verifier checks, or no certificate authority.
    Incomplete,
}

impl std::fmt::Display for TrustRootError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrustRootError::NotJson(why) => write!(f, "not JSON ({why})"),
            TrustRootError::MediaType(media) => write!(f, "its mediaType is {media:?}, not a Sigstore trusted root's"),
            TrustRootError::NotBase64 { what, why } => write!(f, "{what} is not base64 ({why})"),
            TrustRootError::Validity { of, why } => write!(f, "{of}: {why}"),
            TrustRootError::NoCertificates(uri) => write!(f, "the certificate authority {uri} has no certificates"),
            TrustRootError::Incomplete => f.write_str("it names no ECDSA transparency log or no certificate authority"),
        }
    }
}

impl std::error::Error for TrustRootError {}

/// A signer's identity pattern that is not a regular expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityError {
    /// The pattern as written.
    pub pattern: String,
    /// Why it does not compile.
    pub why: String,
}

impl std::fmt::Display for IdentityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` is not a regular expression ({})", self.pattern, self.why)
    }
}

impl std::error::Error for IdentityError {}

/// Why a Sigstore bundle does not vouch for a manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BundleError {
    /// The digest asked about is not `sha256:` and 64 hex digits.
    NotDigest(String),
    /// The bundle is not JSON (why).
    NotJson(String),
    /// Its `mediaType` is not a bundle v0.1 to v0.3's (what it is).
    MediaType(String),
    /// What it holds does not read, or is for something else: its
    /// content, certificate or identity (what is wrong).
    Malformed(String),
    /// A key-pair bundle signed by none of the trusted cosign keys.
    UnknownKey,
    /// Its signature does not verify with its certificate's key.
    BadSignature,
    /// A keyless bundle without a transparency log entry.
    NotLogged,
    /// Signed keyless, and no trusted signer vouches: why not, for each
    /// signer and log entry.
    Refused(Vec<String>),
}

impl std::fmt::Display for BundleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BundleError::NotDigest(digest) => write!(f, "{digest} is not a SHA-256 digest"),
            BundleError::NotJson(why) => write!(f, "a bundle is not JSON ({why})"),
            BundleError::MediaType(media) => {
                write!(f, "a bundle's mediaType is {media:?}, not a Sigstore bundle v0.1 to v0.3")
            }
            BundleError::Malformed(what) => f.write_str(what),
            BundleError::UnknownKey => {
                f.write_str("a key-pair bundle was not signed by any of the trusted cosign keys")
            }
            BundleError::BadSignature => f.write_str("a bundle's signature does not verify with its certificate's key"),
            BundleError::NotLogged => {
                f.write_str("a keyless bundle has no transparency log entry (signed timestamps are not supported)")
            }
            BundleError::Refused(why) => f.write_str(&why.join("; ")),
        }
    }
}

impl std::error::Error for BundleError {}
