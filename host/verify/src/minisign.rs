//! What `toolhost install` checks before it loads a file: the SHA-256 the
//! operator pinned, and the minisign signature beside the file against the
//! keys they trust, verified in this process (no `minisign` program needed).

use crate::KeyError;
use crate::cosign::{self, CosignKey};
use minisign_verify::{Error, PublicKey, Signature};
use std::fmt;

/// `--sha256 HEX`: 64 hex digits in any case, returned lowercase (as
/// [`toolhost::content_hash`] writes them).
pub fn parse_sha256(text: &str) -> Result<String, KeyError> {
    let hex = text.trim();
    if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(hex.to_ascii_lowercase())
    } else {
        Err(KeyError::NotSha256(text.to_string()))
    }
}

/// A minisign public key the operator trusts, and where it is written.
pub struct TrustedKey {
    /// The key as written (base64, `RW…`).
    pub text: String,
    /// The settings file, or the keys file and its line.
    pub origin: String,
    key: PublicKey,
}

impl TrustedKey {
    /// A key in minisign's base64 form (the second line of a `.pub` file).
    pub fn parse(text: &str, origin: String) -> Result<TrustedKey, KeyError> {
        let text = text.trim();
        match PublicKey::from_base64(text) {
            Ok(key) => Ok(TrustedKey { text: text.to_string(), origin, key }),
            Err(e) => Err(KeyError::NotMinisign { origin, text: text.to_string(), why: e.to_string() }),
        }
    }
}

/// The keys and signers the operator trusts: minisign keys vouch for
/// files; cosign keys and Sigstore signers for components pulled from
/// registries.
#[derive(Default)]
pub struct Keys {
    pub minisign: Vec<TrustedKey>,
    pub cosign: Vec<CosignKey>,
    pub sigstore: Vec<crate::sigstore::Signer>,
}

impl Keys {
    pub fn is_empty(&self) -> bool {
        self.minisign.is_empty() && self.cosign.is_empty() && self.sigstore.is_empty()
    }

    /// Whether any of them can vouch for a registry component.
    pub fn vouch_for_registries(&self) -> bool {
        !self.cosign.is_empty() || !self.sigstore.is_empty()
    }

    /// Where each key and signer is written.
    pub fn origins(&self) -> Vec<&str> {
        let keys = self.minisign.iter().map(|k| k.origin.as_str()).chain(self.cosign.iter().map(|k| k.origin.as_str()));
        keys.chain(self.sigstore.iter().map(|s| s.origin.as_str())).collect()
    }

    /// One key as written in settings: PEM (cosign) or minisign's base64.
    pub fn add(&mut self, text: &str, origin: String) -> Result<(), KeyError> {
        if cosign::is_pem(text) {
            self.cosign.push(CosignKey::parse(text, origin)?);
        } else {
            self.minisign.push(TrustedKey::parse(text, origin)?);
        }
        Ok(())
    }

    pub fn extend(&mut self, other: Keys) {
        self.minisign.extend(other.minisign);
        self.cosign.extend(other.cosign);
        self.sigstore.extend(other.sigstore);
    }
}

/// The keys of a trusted-keys file, `origin` naming it: one base64 minisign
/// public key per line, or a PEM public key (`cosign.pub`) over the lines
/// from its `-----BEGIN` to its `-----END`. Blank lines, `#` comments and
/// minisign's `untrusted comment:` lines are skipped, so `minisign.pub` and
/// `cosign.pub` files can be appended as they are. A line that is not a key
/// is an error naming it.
pub fn parse_key_file(text: &str, origin: &str) -> Result<Keys, KeyError> {
    let mut keys = Keys::default();
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("untrusted comment:") {
            continue;
        }
        let at = format!("{origin}: line {}", n + 1);
        if cosign::is_pem(line) {
            let mut pem = vec![line];
            for (_, more) in lines.by_ref() {
                pem.push(more.trim());
                if more.trim_start().starts_with("-----END") {
                    break;
                }
            }
            keys.cosign.push(CosignKey::parse(&pem.join("\n"), at)?);
        } else {
            keys.minisign.push(TrustedKey::parse(line, at)?);
        }
    }
    Ok(keys)
}

/// Why a signature does not vouch for a file.
#[derive(Debug, PartialEq, Eq)]
pub enum SignatureError {
    /// Not a minisign signature file.
    Unreadable(String),
    /// Made with a key none of the trusted keys is.
    UnknownKey,
    /// Made with a trusted key, but not over these bytes (or tampered with).
    Mismatch { key: String },
    /// A legacy (not pre-hashed) signature, which is not accepted.
    Legacy { key: String },
}

impl fmt::Display for SignatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignatureError::Unreadable(why) => write!(f, "is not a minisign signature ({why})"),
            SignatureError::UnknownKey => f.write_str("was made with a key that is not one of the trusted keys"),
            SignatureError::Mismatch { key } => write!(
                f,
                "does not match the file: the file was changed after it was signed, or the signature was \
                 (the signature names the trusted key {key})"
            ),
            SignatureError::Legacy { key } => write!(
                f,
                "is a legacy minisign signature (not pre-hashed), which toolhost does not accept: sign the file \
                 again with a current minisign (`minisign -S -m FILE`) (the signature names the trusted key {key})"
            ),
        }
    }
}

/// A signature that verified: the key that made it, and its trusted comment.
pub struct Verified<'a> {
    pub key: &'a TrustedKey,
    pub trusted_comment: String,
}

/// Checks that `signature` (a `.minisig` file's text) was made over `bytes`
/// with one of `keys`.
pub fn verify<'a>(bytes: &[u8], signature: &str, keys: &'a [TrustedKey]) -> Result<Verified<'a>, SignatureError> {
    let signature = Signature::decode(signature).map_err(|e| SignatureError::Unreadable(e.to_string()))?;
    // minisign-verify checks the key id first: at most one key gets past it
    // (short of two trusted keys sharing an id, where any that verifies will do).
    let mut refused = SignatureError::UnknownKey;
    for trusted in keys {
        match trusted.key.verify(bytes, &signature, false) {
            Ok(()) => {
                return Ok(Verified { key: trusted, trusted_comment: signature.trusted_comment().to_string() });
            }
            Err(Error::UnexpectedKeyId) => {}
            Err(Error::UnexpectedAlgorithm) => refused = SignatureError::Legacy { key: trusted.text.clone() },
            Err(
                Error::InvalidSignature
                | Error::InvalidEncoding
                | Error::IoError(_)
                | Error::UnsupportedAlgorithm
                | Error::UnsupportedLegacyMode,
            ) => refused = SignatureError::Mismatch { key: trusted.text.clone() },
        }
    }
    Err(refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A fresh key pair: the public key in base64, and a signer.
    fn key_pair() -> (String, impl Fn(&[u8]) -> String) {
        let pair = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let public = pair.pk.to_base64();
        let sign = move |bytes: &[u8]| {
            minisign::sign(Some(&pair.pk), &pair.sk, Cursor::new(bytes), Some("file:tool.wasm"), None)
                .unwrap()
                .to_string()
        };
        (public, sign)
    }

    #[test]
    fn pinned_hashes_are_64_hex_digits_in_any_case() {
        let upper = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855";
        assert_eq!(parse_sha256(upper).unwrap(), upper.to_ascii_lowercase());
        assert_eq!(parse_sha256(&format!(" {} ", upper.to_ascii_lowercase())).unwrap(), upper.to_ascii_lowercase());
        for bad in ["", "e3b0", &format!("{upper}00"), &upper.replace('E', "g"), "sha256:e3b0"] {
            let e = parse_sha256(bad).unwrap_err().to_string();
            assert!(e.contains("is not a SHA-256"), "{bad}: {e}");
        }
    }

    #[test]
    fn key_files_take_minisign_pub_files_and_name_a_bad_line() {
        let (a, _) = key_pair();
        let (b, _) = key_pair();
        let text = format!(
            "# release keys\nuntrusted comment: minisign public key 1234\n{a}\n\n  {b}  \nuntrusted comment: x\n"
        );
        let keys = parse_key_file(&text, "/k").unwrap().minisign;
        let found: Vec<(&str, &str)> = keys.iter().map(|k| (k.text.as_str(), k.origin.as_str())).collect();
        assert_eq!(found, [(a.as_str(), "/k: line 3"), (b.as_str(), "/k: line 5")]);
        assert!(parse_key_file("", "/k").unwrap().is_empty());
        // A cosign.pub appended as it is: its PEM block is one key.
        let pem = {
            use p256::pkcs8::EncodePublicKey as _;
            let key = p256::ecdsa::SigningKey::from_slice(&[5; 32]).unwrap();
            key.verifying_key().to_public_key_pem(Default::default()).unwrap()
        };
        let keys = parse_key_file(&format!("{a}\n{pem}{b}\n"), "/k").unwrap();
        assert_eq!(keys.minisign.len(), 2);
        assert_eq!(keys.cosign.iter().map(|k| k.origin.as_str()).collect::<Vec<_>>(), ["/k: line 2"]);
        let e = parse_key_file(&format!("{a}\nRWQnot-a-key\n"), "/k").err().unwrap().to_string();
        assert!(e.starts_with("/k: line 2: `RWQnot-a-key` is not a minisign public key"), "{e}");
    }

    #[test]
    fn a_signature_verifies_only_with_its_key_over_its_bytes() {
        let (public, sign) = key_pair();
        let (other, sign_other) = key_pair();
        let keys = vec![
            TrustedKey::parse(&other, "settings".into()).unwrap(),
            TrustedKey::parse(&public, "keys file".into()).unwrap(),
        ];
        let file = b"\0asm a component".as_slice();
        let signature = sign(file);
        let verified = verify(file, &signature, &keys).unwrap();
        assert_eq!((verified.key.origin.as_str(), verified.trusted_comment.as_str()), ("keys file", "file:tool.wasm"));
        assert_eq!(
            verify(b"\0asm a changed component", &signature, &keys).err(),
            Some(SignatureError::Mismatch { key: public.clone() })
        );
        assert_eq!(verify(file, &sign_other(file), &keys[1..]).err(), Some(SignatureError::UnknownKey));
        assert_eq!(verify(file, &signature, &[]).err(), Some(SignatureError::UnknownKey));
        // The trusted comment is signed too.
        let forged = signature.replace("file:tool.wasm", "file:other.wasm");
        assert_eq!(verify(file, &forged, &keys).err(), Some(SignatureError::Mismatch { key: public }));
        assert!(matches!(verify(file, "not a signature", &keys), Err(SignatureError::Unreadable(_))));
    }
}
