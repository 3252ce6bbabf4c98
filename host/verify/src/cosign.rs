//! cosign signatures of components pulled from a registry, verified in this
//! process (no `cosign` program needed), against keys the operator trusts.
//!
//! A signature made with a key pair (`cosign sign --key cosign.key
//! REGISTRY/REPO@sha256:…`) is kept in the same repository under the tag
//! `sha256-HEX.sig`: an image manifest whose layers
//! (`application/vnd.dev.cosign.simplesigning.v1+json`) are each a
//! "simple signing" payload naming the signed manifest's digest, with the
//! base64 ECDSA P-256 signature of that payload in the layer's annotation
//! `dev.cosignproject.cosign/signature`. A signature vouches for a component
//! when one trusted key verifies it and its payload names the manifest
//! installed.

use crate::KeyError;
use p256::ecdsa::signature::Verifier as _;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey as _;
use std::fmt;

/// The media type of a signature layer.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// What a payload of an image signature says it is.
const SIGNATURE_TYPE: &str = "cosign container image signature";

/// The tag of the signatures of the manifest `digest` (`sha256:HEX`).
pub fn signature_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1) + ".sig"
}

/// A cosign public key the operator trusts, and where it is written.
#[derive(Debug)]
pub struct CosignKey {
    /// The settings file, or the keys file and its line.
    pub origin: String,
    pub(crate) key: VerifyingKey,
}

impl CosignKey {
    /// A PEM public key (`-----BEGIN PUBLIC KEY-----`, as `cosign.pub`).
    pub fn parse(pem: &str, origin: String) -> Result<CosignKey, KeyError> {
        match VerifyingKey::from_public_key_pem(pem.trim()) {
            Ok(key) => Ok(CosignKey { origin, key }),
            Err(e) => Err(KeyError::NotCosign { origin, why: e.to_string() }),
        }
    }
}

/// Whether `text` is written as a PEM public key (else a minisign key).
pub fn is_pem(text: &str) -> bool {
    text.trim_start().starts_with("-----BEGIN")
}

/// One signature found beside a manifest: the payload and the signature's
/// base64 text.
pub struct Found {
    pub payload: Vec<u8>,
    pub signature: String,
}

/// The trusted key whose signature vouches for `manifest`; else why none
/// does.
pub fn verify<'a>(found: &[Found], manifest: &str, keys: &'a [CosignKey]) -> Result<&'a CosignKey, CosignError> {
    if found.is_empty() {
        return Err(CosignError::Unsigned { tag: signature_tag(manifest) });
    }
    let mut why = Vec::new();
    for f in found {
        match verify_one(f, manifest, keys) {
            Ok(key) => return Ok(key),
            Err(e) => why.push(e),
        }
    }
    Err(CosignError::NoneVouches(why))
}

/// Why no cosign signature vouches for a component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CosignError {
    /// It has no signature (the tag where one would be).
    Unsigned {
        /// The signature tag of its manifest.
        tag: String,
    },
    /// Each of its signatures, and why it does not vouch.
    NoneVouches(Vec<Refused>),
}

/// Why one cosign signature does not vouch for a component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The signature is not base64 (why).
    NotBase64(String),
    /// Not an ECDSA P-256 signature.
    NotP256,
    /// Made with no trusted key, or not over its payload.
    UnknownKey,
    /// The signed payload is not JSON (why).
    NotJson(String),
    /// The payload is of another type (which).
    NotImageSignature(String),
    /// For another manifest (the one it names, the one installed).
    OtherManifest {
        /// The manifest the signature is for.
        signed: String,
        /// The manifest being installed.
        wanted: String,
    },
    /// The payload names no manifest.
    NoDigest,
}

impl fmt::Display for CosignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CosignError::Unsigned { tag } => write!(
                f,
                "it has no cosign signature (no {tag} in its repository), and with trusted keys configured a \
                 component is installed only signed by one of them"
            ),
            CosignError::NoneVouches(why) => {
                let why: Vec<String> = why.iter().map(Refused::to_string).collect();
                write!(f, "none of its {} cosign signatures vouches for it: {}", why.len(), why.join("; "))
            }
        }
    }
}

impl std::error::Error for CosignError {}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::NotBase64(why) => write!(f, "a signature is not base64 ({why})"),
            Refused::NotP256 => write!(f, "a signature is not an ECDSA P-256 signature"),
            Refused::UnknownKey => {
                write!(f, "a signature was not made with any of the trusted cosign keys, or not over its payload")
            }
            Refused::NotJson(why) => write!(f, "a signed payload is not JSON ({why})"),
            Refused::NotImageSignature(kind) => write!(f, "a signed payload is of type {kind}, not an image signature"),
            Refused::OtherManifest { signed, wanted } => {
                write!(f, "a signature by a trusted key is for the manifest {signed}, not {wanted}")
            }
            Refused::NoDigest => write!(f, "a signed payload names no manifest digest"),
        }
    }
}

fn verify_one<'a>(found: &Found, manifest: &str, keys: &'a [CosignKey]) -> Result<&'a CosignKey, Refused> {
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(found.signature.trim())
        .map_err(|e| Refused::NotBase64(e.to_string()))?;
    // Go's crypto/ecdsa (cosign) writes ASN.1 DER; some signers write the
    // fixed 64 bytes.
    let signature = Signature::from_der(&raw).or_else(|_| Signature::from_slice(&raw)).map_err(|_| Refused::NotP256)?;
    let key = keys.iter().find(|k| k.key.verify(&found.payload, &signature).is_ok()).ok_or(Refused::UnknownKey)?;
    let payload: serde_json::Value =
        serde_json::from_slice(&found.payload).map_err(|e| Refused::NotJson(e.to_string()))?;
    let critical = &payload["critical"];
    if critical["type"] != SIGNATURE_TYPE {
        return Err(Refused::NotImageSignature(critical["type"].to_string()));
    }
    match critical["image"]["docker-manifest-digest"].as_str() {
        Some(digest) if digest == manifest => Ok(key),
        Some(other) => Err(Refused::OtherManifest { signed: other.to_string(), wanted: manifest.to_string() }),
        None => Err(Refused::NoDigest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use p256::ecdsa::SigningKey;
    use p256::ecdsa::signature::Signer as _;
    use p256::pkcs8::EncodePublicKey as _;

    const DIGEST: &str = "sha256:3f1a2b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a";

    fn key(seed: u8) -> (SigningKey, CosignKey) {
        let signing = SigningKey::from_slice(&[seed; 32]).unwrap();
        let pem = signing.verifying_key().to_public_key_pem(Default::default()).unwrap();
        (signing, CosignKey::parse(&pem, format!("key {seed}")).unwrap())
    }

    fn payload(digest: &str) -> Vec<u8> {
        serde_json::to_vec(
            &serde_json::json!({"critical": {"identity": {"docker-reference": "127.0.0.1:5000/tools/echo"},
            "image": {"docker-manifest-digest": digest}, "type": SIGNATURE_TYPE}, "optional": null}),
        )
        .unwrap()
    }

    fn signed(by: &SigningKey, payload: Vec<u8>) -> Found {
        let signature: Signature = by.sign(&payload);
        Found { payload, signature: base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes()) }
    }

    #[test]
    fn a_trusted_keys_signature_of_the_manifest_vouches() {
        let ((a, trusted_a), (b, trusted_b)) = (key(7), key(9));
        let keys = [trusted_a, trusted_b];
        assert_eq!(verify(&[signed(&b, payload(DIGEST))], DIGEST, &keys).unwrap().origin, "key 9");
        // Among several signatures, one good one is enough.
        let (stranger, _) = key(11);
        let found = [signed(&stranger, payload(DIGEST)), signed(&a, payload(DIGEST))];
        assert_eq!(verify(&found, DIGEST, &keys).unwrap().origin, "key 7");
        assert_eq!(signature_tag(DIGEST), format!("sha256-{}.sig", &DIGEST[7..]));
    }

    #[test]
    fn other_keys_other_manifests_and_tampering_do_not() {
        let ((a, trusted_a), (stranger, _)) = (key(7), key(11));
        let keys = [trusted_a];
        let e = verify(&[], DIGEST, &keys).unwrap_err().to_string();
        assert!(e.contains("has no cosign signature"), "{e}");
        let e = verify(&[signed(&stranger, payload(DIGEST))], DIGEST, &keys).unwrap_err().to_string();
        assert!(e.contains("not made with any of the trusted cosign keys"), "{e}");
        let other = DIGEST.replace("3f1a", "0000");
        let e = verify(&[signed(&a, payload(&other))], DIGEST, &keys).unwrap_err().to_string();
        assert!(e.contains("is for the manifest sha256:0000"), "{e}");
        let mut tampered = signed(&a, payload(DIGEST));
        tampered.payload = payload(&other);
        let e = verify(&[tampered], DIGEST, &keys).unwrap_err().to_string();
        assert!(e.contains("not over its payload"), "{e}");
        let e = verify(&[Found { payload: payload(DIGEST), signature: "%%%".into() }], DIGEST, &keys)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not base64"), "{e}");
    }

    #[test]
    fn keys_are_pem_and_a_bad_one_is_named() {
        assert!(is_pem("\n-----BEGIN PUBLIC KEY-----\n…"));
        assert!(!is_pem("RWQ and the rest of a minisign key"));
        let e = CosignKey::parse("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----", "settings.json".into())
            .err()
            .unwrap()
            .to_string();
        assert!(e.starts_with("settings.json: not an ECDSA P-256 public key"), "{e}");
    }
}
