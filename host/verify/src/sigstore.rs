//! Sigstore bundles (what cosign 3 attaches to an image by default, and
//! what `cosign sign --new-bundle-format` writes), verified offline in this
//! process against a trust root the operator configured: the
//! `trusted_root.json` Sigstore publishes (or one of a private Sigstore),
//! and the identities whose signatures count.
//!
//! What is checked, for a bundle to vouch for a manifest digest:
//! - **What was signed is this manifest**: a DSSE envelope holding an
//!   in-toto statement of cosign's signing predicate
//!   (`https://sigstore.dev/cosign/sign/v1`) whose subject has the
//!   manifest's SHA-256, or a message signature over that digest.
//! - **Who signed it**, either
//!   - a key the operator trusts (a key-pair bundle, as key-pair cosign
//!     signatures are checked), or
//!   - a short-lived certificate (keyless signing): its chain up to a
//!     certificate authority of the trust root, checked by rustls-webpki at
//!     the time the transparency log recorded (code signing usage
//!     required), the authority valid then, and its identity (subject
//!     alternative name: email or URI) and OIDC issuer (Fulcio's extension)
//!     what a configured signer names.
//! - **When, and publicly**: for a certificate, a transparency log entry of
//!   a log of the trust root, valid then: its signed entry timestamp over
//!   the entry (the time comes from there), its Merkle inclusion proof up
//!   to a checkpoint the log signed (required for bundles v0.2 and later),
//!   and its body (`hashedrekord` or `dsse`) naming this signature, this
//!   certificate and this digest.
//!
//! Not checked: the certificate's embedded SCTs (certificate transparency
//! of the CA), RFC 3161 timestamps (a bundle with no log entry is refused),
//! Ed25519 and RSA log or signing keys. sigstore-rs (0.15) was not used: its
//! bundle verifier leaves the signed entry timestamp and the inclusion proof
//! unchecked, and it brings an OIDC client and a browser launcher.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use p256::pkcs8::DecodePublicKey as _;
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use x509_cert::der::{Decode as _, Encode as _};

use crate::cosign::CosignKey;

mod errors;
pub use errors::{BundleError, IdentityError, TrustRootError};

/// The predicate of an in-toto statement cosign makes when it signs an image.
pub const SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";
/// The artifact type of a bundle attached to an image (OCI referrers).
pub const BUNDLE_ARTIFACT: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// The largest bundle read.
pub const MAX_BUNDLE: u64 = 1 << 20;

/// Extended key usage: code signing (1.3.6.1.5.5.7.3.3), as DER content.
const CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];
/// Fulcio's OIDC issuer extensions: v2 (a DER UTF8String) and v1 (raw).
const ISSUER_V2: &str = "1.3.6.1.4.1.57264.1.8";
const ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";
const SAN: &str = "2.5.29.17";
const EKU: &str = "2.5.29.37";

/// A public key of a log or a signer: ECDSA P-256 or P-384.
#[derive(Debug, Clone)]
enum Key {
    P256(p256::ecdsa::VerifyingKey),
    P384(p384::ecdsa::VerifyingKey),
}

impl Key {
    fn from_spki(der: &[u8]) -> Option<Key> {
        p256::ecdsa::VerifyingKey::from_public_key_der(der)
            .map(Key::P256)
            .ok()
            .or_else(|| p384::ecdsa::VerifyingKey::from_public_key_der(der).map(Key::P384).ok())
    }

    /// Verifies an ASN.1 DER signature of `message` (hashed with the curve's
    /// hash).
    fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        use p256::ecdsa::signature::Verifier as _;
        match self {
            Key::P256(key) => {
                p256::ecdsa::Signature::from_der(signature).is_ok_and(|s| key.verify(message, &s).is_ok())
            }
            Key::P384(key) => {
                p384::ecdsa::Signature::from_der(signature).is_ok_and(|s| key.verify(message, &s).is_ok())
            }
        }
    }

    /// Verifies a signature of the message whose SHA-256 is `digest`.
    fn verify_digest(&self, digest: &[u8; 32], signature: &[u8]) -> bool {
        use p256::ecdsa::signature::hazmat::PrehashVerifier as _;
        match self {
            Key::P256(key) => p256::ecdsa::Signature::from_der(signature)
                .or_else(|_| p256::ecdsa::Signature::from_slice(signature))
                .is_ok_and(|s| key.verify_prehash(digest, &s).is_ok()),
            Key::P384(key) => p384::ecdsa::Signature::from_der(signature)
                .or_else(|_| p384::ecdsa::Signature::from_slice(signature))
                .is_ok_and(|s| key.verify_prehash(digest, &s).is_ok()),
        }
    }
}

/// A span of time something is valid for (unix seconds; no end: still).
#[derive(Debug, Clone, Copy)]
struct Window {
    start: i64,
    end: Option<i64>,
}

impl Window {
    fn read(value: &Value) -> Result<Window, String> {
        let time = |v: &Value| -> Result<Option<i64>, String> {
            match v.as_str() {
                None => Ok(None),
                Some(text) => chrono::DateTime::parse_from_rfc3339(text)
                    .map(|t| Some(t.timestamp()))
                    .map_err(|e| format!("`{text}` is not an RFC 3339 time ({e})")),
            }
        };
        Ok(Window { start: time(&value["start"])?.ok_or("a validFor has no start")?, end: time(&value["end"])? })
    }

    fn holds(&self, at: i64) -> bool {
        self.start <= at && self.end.is_none_or(|end| at <= end)
    }
}

/// A transparency log of the trust root.
#[derive(Debug, Clone)]
struct Log {
    url: String,
    /// SHA-256 of its key's DER (the log's ID).
    id: [u8; 32],
    key: Key,
    valid: Window,
}

/// A certificate authority of the trust root: its chain, the signing
/// certificate's issuer first, the root last.
#[derive(Debug, Clone)]
struct Authority {
    uri: String,
    chain: Vec<Vec<u8>>,
    valid: Window,
}

/// A Sigstore trust root (`trusted_root.json`,
/// `application/vnd.dev.sigstore.trustedroot+json;version=0.1`): its
/// certificate authorities and transparency logs.
#[derive(Debug, Clone)]
pub struct TrustRoot {
    authorities: Vec<Authority>,
    logs: Vec<Log>,
    /// Logs named with a key this verifier does not check (Ed25519, as
    /// Rekor v2 has, or RSA): their ids and URLs, to say why an entry in
    /// one is refused.
    unchecked: Vec<(Vec<u8>, String)>,
}

impl TrustRoot {
    /// Reads a trust root's JSON.
    pub fn parse(text: &str) -> Result<TrustRoot, TrustRootError> {
        let root: Value = serde_json::from_str(text).map_err(|e| TrustRootError::NotJson(e.to_string()))?;
        let media = root["mediaType"].as_str().unwrap_or("");
        if !media.starts_with("application/vnd.dev.sigstore.trustedroot") {
            return Err(TrustRootError::MediaType(media.to_string()));
        }
        let bytes = |v: &Value, what: &'static str| -> Result<Vec<u8>, TrustRootError> {
            STANDARD
                .decode(v.as_str().unwrap_or(""))
                .map_err(|e| TrustRootError::NotBase64 { what, why: e.to_string() })
        };
        let mut logs = Vec::new();
        let mut unchecked = Vec::new();
        for log in root["tlogs"].as_array().into_iter().flatten() {
            let url = log["baseUrl"].as_str().unwrap_or("a log").to_string();
            let der = bytes(&log["publicKey"]["rawBytes"], "a log's key")?;
            let Some(key) = Key::from_spki(&der) else {
                // An Ed25519 or RSA log: never matched, so never trusted.
                let id = STANDARD.decode(log["logId"]["keyId"].as_str().unwrap_or("")).unwrap_or_default();
                unchecked.push((id, url));
                continue;
            };
            let id: [u8; 32] = Sha256::digest(&der).into();
            let valid = Window::read(&log["publicKey"]["validFor"])
                .map_err(|why| TrustRootError::Validity { of: format!("the log {url}"), why })?;
            logs.push(Log { url, id, key, valid });
        }
        let mut authorities = Vec::new();
        for ca in root["certificateAuthorities"].as_array().into_iter().flatten() {
            let uri = ca["uri"].as_str().unwrap_or("a certificate authority").to_string();
            let chain = ca["certChain"]["certificates"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| bytes(&c["rawBytes"], "a certificate"))
                .collect::<Result<Vec<_>, _>>()?;
            if chain.is_empty() {
                return Err(TrustRootError::NoCertificates(uri));
            }
            let valid = Window::read(&ca["validFor"])
                .map_err(|why| TrustRootError::Validity { of: format!("the authority {uri}"), why })?;
            authorities.push(Authority { uri, chain, valid });
        }
        if logs.is_empty() || authorities.is_empty() {
            return Err(TrustRootError::Incomplete);
        }
        Ok(TrustRoot { authorities, logs, unchecked })
    }
}

/// Whose keyless signatures count: an OIDC issuer and an identity (exact,
/// or a regular expression matching it whole), under a trust root.
#[derive(Debug, Clone)]
pub struct Signer {
    /// Where it is configured, for messages.
    pub origin: String,
    pub root: TrustRoot,
    pub issuer: String,
    pub identity: Identity,
}

/// How a signer's identity is named.
#[derive(Debug, Clone)]
pub enum Identity {
    Exact(String),
    Pattern(regex::Regex),
}

impl Identity {
    /// A regular expression that must match an identity whole.
    pub fn pattern(text: &str) -> Result<Identity, IdentityError> {
        regex::Regex::new(&format!("^(?:{text})$"))
            .map(Identity::Pattern)
            .map_err(|e| IdentityError { pattern: text.to_string(), why: e.to_string() })
    }

    fn matches(&self, identity: &str) -> bool {
        match self {
            Identity::Exact(want) => want == identity,
            Identity::Pattern(re) => re.is_match(identity),
        }
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identity::Exact(want) => f.write_str(want),
            Identity::Pattern(re) => write!(f, "/{}/", &re.as_str()[4..re.as_str().len() - 2]),
        }
    }
}

/// Who a verified bundle says signed, for the review.
#[derive(Debug, PartialEq, Eq)]
pub struct Verified {
    pub who: String,
}

/// What the bundle's signature is over.
enum Content {
    /// A message signature over the message whose SHA-256 is this.
    Message([u8; 32]),
    /// A DSSE envelope: its payload and the bytes signed (PAE).
    Dsse { payload: Vec<u8>, signed: Vec<u8> },
}

/// Verifies the Sigstore bundle `bundle` (JSON) for the manifest `digest`
/// (`sha256:HEX`): signed by one of `keys`, or keyless by one of `signers`.
pub fn verify(bundle: &[u8], digest: &str, keys: &[CosignKey], signers: &[Signer]) -> Result<Verified, BundleError> {
    let want = digest
        .strip_prefix("sha256:")
        .and_then(|hex| decode_hex(hex).ok())
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .ok_or_else(|| BundleError::NotDigest(digest.to_string()))?;
    let bundle: Value = serde_json::from_slice(bundle).map_err(|e| BundleError::NotJson(e.to_string()))?;
    let media = bundle["mediaType"].as_str().unwrap_or("");
    let proof_required = match media {
        "application/vnd.dev.sigstore.bundle+json;version=0.1" => false,
        "application/vnd.dev.sigstore.bundle+json;version=0.2" | "application/vnd.dev.sigstore.bundle.v0.3+json" => {
            true
        }
        other => return Err(BundleError::MediaType(other.to_string())),
    };
    let (content, signature) = content(&bundle, &want).map_err(BundleError::Malformed)?;
    let material = &bundle["verificationMaterial"];
    if material.get("publicKey").is_some() {
        let key = keys
            .iter()
            .find(|k| {
                let key = Key::P256(k.key);
                match &content {
                    Content::Message(d) => key.verify_digest(d, &signature),
                    Content::Dsse { signed, .. } => key.verify(signed, &signature),
                }
            })
            .ok_or(BundleError::UnknownKey)?;
        return Ok(Verified { who: format!("the trusted key of {}", key.origin) });
    }
    let malformed = |what: &str| BundleError::Malformed(what.to_string());
    let leaf = match (material["certificate"]["rawBytes"].as_str(), &material["x509CertificateChain"]["certificates"]) {
        (Some(raw), _) => STANDARD.decode(raw).map_err(|_| malformed("a bundle's certificate is not base64"))?,
        (None, Value::Array(chain)) if !chain.is_empty() => STANDARD
            .decode(chain[0]["rawBytes"].as_str().unwrap_or(""))
            .map_err(|_| malformed("a bundle's certificate is not base64"))?,
        _ => return Err(malformed("a bundle has neither a certificate nor a public key")),
    };
    let certificate = x509_cert::Certificate::from_der(&leaf)
        .map_err(|e| malformed(&format!("a bundle's certificate does not read ({e})")))?;
    let spki = certificate
        .tbs_certificate()
        .subject_public_key_info()
        .to_der()
        .map_err(|e| malformed(&format!("a bundle's certificate has no key ({e})")))?;
    let key =
        Key::from_spki(&spki).ok_or_else(|| malformed("a bundle's certificate holds no ECDSA P-256 or P-384 key"))?;
    let signed = match &content {
        Content::Message(d) => key.verify_digest(d, &signature),
        Content::Dsse { signed, .. } => key.verify(signed, &signature),
    };
    if !signed {
        return Err(BundleError::BadSignature);
    }
    let (identity, issuer) = identity_of(&certificate).map_err(BundleError::Malformed)?;
    let entries = bundle["verificationMaterial"]["tlogEntries"].as_array().cloned().unwrap_or_default();
    if entries.is_empty() {
        return Err(BundleError::NotLogged);
    }
    let mut why = Vec::new();
    for signer in signers {
        if signer.issuer != issuer || !signer.identity.matches(&identity) {
            why.push(format!(
                "signed by {identity} (issuer {issuer}), not {} (issuer {}) as {} trusts",
                signer.identity, signer.issuer, signer.origin
            ));
            continue;
        }
        let mut found = None;
        for entry in &entries {
            match logged(entry, &signer.root, &leaf, &signature, &content, proof_required) {
                Ok(ok) => {
                    found = Some(ok);
                    break;
                }
                Err(e) => why.push(e),
            }
        }
        let Some((time, log)) = found else { continue };
        match chain(&leaf, &signer.root, time) {
            Ok(ca) => {
                return Ok(Verified {
                    who: format!(
                        "{identity} (issuer {issuer}; certificate by {ca}; logged in {} at {})",
                        log.0,
                        chrono::DateTime::from_timestamp(time, 0).map_or(time.to_string(), |t| t.to_rfc3339())
                    ),
                });
            }
            Err(e) => why.push(e),
        }
    }
    if signers.is_empty() {
        why.push(format!("it is signed keyless by {identity} (issuer {issuer}) and no Sigstore signer is trusted"));
    }
    Err(BundleError::Refused(why))
}

/// The bundle's content bound to the manifest `want`, and its signature.
fn content(bundle: &Value, want: &[u8; 32]) -> Result<(Content, Vec<u8>), String> {
    let b64 =
        |v: &Value, what: &str| STANDARD.decode(v.as_str().unwrap_or("")).map_err(|_| format!("{what} is not base64"));
    if let Some(message) = bundle.get("messageSignature") {
        if message["messageDigest"]["algorithm"] != "SHA2_256" {
            return Err("a bundle's message digest is not SHA-256".into());
        }
        let digest = b64(&message["messageDigest"]["digest"], "a bundle's message digest")?;
        if digest != want {
            return Err(format!("a bundle signs the message sha256:{}, not this manifest", hex(&digest)));
        }
        return Ok((Content::Message(*want), b64(&message["signature"], "a bundle's signature")?));
    }
    let envelope = bundle.get("dsseEnvelope").ok_or("a bundle holds neither a message signature nor an envelope")?;
    let payload_type = envelope["payloadType"].as_str().unwrap_or("");
    if payload_type != "application/vnd.in-toto+json" {
        return Err(format!("a bundle's envelope holds {payload_type:?}, not an in-toto statement"));
    }
    let payload = b64(&envelope["payload"], "a bundle's envelope payload")?;
    let signatures = envelope["signatures"].as_array().map_or(&[][..], Vec::as_slice);
    let [signature] = signatures else {
        return Err(format!("a bundle's envelope has {} signatures, not one", signatures.len()));
    };
    let statement: Value =
        serde_json::from_slice(&payload).map_err(|e| format!("a bundle's in-toto statement is not JSON ({e})"))?;
    if !matches!(
        statement["_type"].as_str(),
        Some("https://in-toto.io/Statement/v1" | "https://in-toto.io/Statement/v0.1")
    ) {
        return Err("a bundle's envelope holds no in-toto statement".into());
    }
    let predicate = statement["predicateType"].as_str().unwrap_or("");
    if predicate != SIGN_PREDICATE {
        return Err(format!("a bundle attests {predicate:?}: an attestation, not a signature ({SIGN_PREDICATE})"));
    }
    let want_hex = hex(want);
    let names = statement["subject"].as_array().into_iter().flatten();
    if !names.clone().any(|s| s["digest"]["sha256"].as_str().is_some_and(|d| d.eq_ignore_ascii_case(&want_hex))) {
        return Err("a bundle's statement does not name this manifest".into());
    }
    let mut signed = format!("DSSEv1 {} {payload_type} {} ", payload_type.len(), payload.len()).into_bytes();
    signed.extend_from_slice(&payload);
    Ok((Content::Dsse { payload, signed }, b64(&signature["sig"], "a bundle's envelope signature")?))
}

/// The certificate's identity (an email or URI alternative name) and OIDC
/// issuer; it must be for code signing.
fn identity_of(certificate: &x509_cert::Certificate) -> Result<(String, String), String> {
    use x509_cert::ext::pkix::SubjectAltName;
    use x509_cert::ext::pkix::name::GeneralName;
    let extensions = certificate.tbs_certificate().extensions().map_or(&[][..], |e| e.as_slice());
    let find = |oid: &str| extensions.iter().find(|e| e.extn_id.to_string() == oid).map(|e| e.extn_value.as_bytes());
    let usages = find(EKU).ok_or("a bundle's certificate names no extended key usage")?;
    let usages = x509_cert::ext::pkix::ExtendedKeyUsage::from_der(usages)
        .map_err(|e| format!("a certificate's key usages do not read ({e})"))?;
    if !usages.0.iter().any(|u| u.as_bytes() == CODE_SIGNING) {
        return Err("a bundle's certificate is not for code signing".into());
    }
    let names = find(SAN).ok_or("a bundle's certificate names no identity")?;
    let names = SubjectAltName::from_der(names).map_err(|e| format!("a certificate's names do not read ({e})"))?;
    let identity = names
        .0
        .iter()
        .find_map(|n| match n {
            GeneralName::Rfc822Name(s) | GeneralName::UniformResourceIdentifier(s) => Some(s.to_string()),
            _ => None,
        })
        .ok_or("a bundle's certificate has no email or URI identity")?;
    let issuer = match (find(ISSUER_V2), find(ISSUER_V1)) {
        (Some(v2), _) => x509_cert::der::asn1::Utf8StringRef::from_der(v2)
            .map(|s| s.as_str().to_string())
            .map_err(|_| "a certificate's issuer extension does not read")?,
        (None, Some(v1)) => String::from_utf8(v1.to_vec()).map_err(|_| "a certificate's issuer is not text")?,
        (None, None) => return Err("a bundle's certificate names no OIDC issuer".into()),
    };
    Ok((identity, issuer))
}

/// The leaf `leaf` chains, at `time`, to an authority of `root` valid then
/// (its URI).
fn chain(leaf: &[u8], root: &TrustRoot, time: i64) -> Result<String, String> {
    use rustls_pki_types::{CertificateDer, UnixTime};
    let leaf = CertificateDer::from(leaf);
    let end = webpki::EndEntityCert::try_from(&leaf).map_err(|e| format!("a certificate does not read ({e:?})"))?;
    let at = UnixTime::since_unix_epoch(std::time::Duration::from_secs(u64::try_from(time).unwrap_or(0)));
    let mut why = Vec::new();
    for ca in root.authorities.iter().filter(|ca| ca.valid.holds(time)) {
        let (anchor, between) = ca.chain.split_last().expect("chains are not empty");
        let anchor = CertificateDer::from(anchor.as_slice());
        let Ok(anchor) = webpki::anchor_from_trusted_cert(&anchor) else {
            why.push(format!("{}: its root does not read", ca.uri));
            continue;
        };
        let between: Vec<CertificateDer<'_>> = between.iter().map(|c| CertificateDer::from(c.as_slice())).collect();
        // Code signing on the leaf is checked by `identity_of`; authorities
        // need not name it.
        let usage = webpki::KeyUsage::required_if_present(CODE_SIGNING);
        match end.verify_for_usage(webpki::ALL_VERIFICATION_ALGS, &[anchor], &between, at, usage, None, None) {
            Ok(_) => return Ok(ca.uri.clone()),
            Err(e) => why.push(format!("{}: {e:?}", ca.uri)),
        }
    }
    if why.is_empty() {
        return Err("no certificate authority of the trust root was valid when it was logged".into());
    }
    Err(format!("its certificate does not chain to the trust root when it was logged ({})", why.join("; ")))
}

/// Verifies a transparency log entry: of a log of `root`, its signed entry
/// timestamp, its inclusion proof (required when `proof_required`), and
/// its body naming this signature, certificate and content. The time it
/// was logged, and the log's URL and the entry's index.
fn logged(
    entry: &Value,
    root: &TrustRoot,
    leaf: &[u8],
    signature: &[u8],
    content: &Content,
    proof_required: bool,
) -> Result<(i64, (String, u64)), String> {
    let number = |v: &Value| v.as_i64().or_else(|| v.as_str().and_then(|s| s.parse().ok()));
    let id = STANDARD.decode(entry["logId"]["keyId"].as_str().unwrap_or("")).unwrap_or_default();
    let Some(log) = root.logs.iter().find(|l| l.id[..] == id[..]) else {
        if let Some((_, url)) = root.unchecked.iter().find(|(known, _)| !id.is_empty() && known[..] == id[..]) {
            return Err(format!(
                "its transparency log entry is in {url}, a log whose key type (Ed25519 or RSA, as Rekor v2's logs have) this verifier does not check"
            ));
        }
        return Err("its transparency log entry is in a log the trust root does not name".into());
    };
    let body_b64 = entry["canonicalizedBody"].as_str().ok_or("its log entry has no body")?;
    let body = STANDARD.decode(body_b64).map_err(|_| "its log entry's body is not base64")?;
    let time = number(&entry["integratedTime"]).ok_or("its log entry has no time")?;
    let index = number(&entry["logIndex"]).and_then(|i| u64::try_from(i).ok()).ok_or("its log entry has no index")?;
    // The signed entry timestamp: the log's promise, with the time.
    let set = STANDARD
        .decode(entry["inclusionPromise"]["signedEntryTimestamp"].as_str().unwrap_or(""))
        .map_err(|_| "its log entry's signed timestamp is not base64")?;
    if set.is_empty() {
        return Err(
            "its log entry has no signed entry timestamp, so when it was logged cannot be trusted offline".into()
        );
    }
    let promised = format!(
        r#"{{"body":{},"integratedTime":{time},"logID":"{}","logIndex":{index}}}"#,
        Value::from(body_b64),
        hex(&log.id)
    );
    if !log.key.verify(promised.as_bytes(), &set) {
        return Err(format!("its log entry's signed entry timestamp is not {}'s signature", log.url));
    }
    if !log.valid.holds(time) {
        return Err(format!("it was logged when {}'s key was not valid", log.url));
    }
    match entry.get("inclusionProof") {
        Some(proof) => included(proof, &body, log)?,
        None if proof_required => return Err("its log entry has no inclusion proof".into()),
        None => {}
    }
    matches_body(&body, &entry["kindVersion"], leaf, signature, content)?;
    Ok((time, (log.url.clone(), index)))
}

/// The Merkle inclusion proof of `body` (RFC 9162), up to a checkpoint
/// `log` signed.
fn included(proof: &Value, body: &[u8], log: &Log) -> Result<(), String> {
    let number = |v: &Value| v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok()));
    let index = number(&proof["logIndex"]).ok_or("its inclusion proof has no index")?;
    let size = number(&proof["treeSize"]).ok_or("its inclusion proof has no tree size")?;
    let root: [u8; 32] = STANDARD
        .decode(proof["rootHash"].as_str().unwrap_or(""))
        .ok()
        .and_then(|r| r.try_into().ok())
        .ok_or("its inclusion proof's root hash is not 32 bytes of base64")?;
    let hashes = proof["hashes"].as_array().map_or(&[][..], Vec::as_slice);
    if hashes.len() > 64 {
        return Err("its inclusion proof is longer than any tree's".into());
    }
    let hashes: Vec<[u8; 32]> = hashes
        .iter()
        .map(|h| STANDARD.decode(h.as_str().unwrap_or("")).ok().and_then(|h| h.try_into().ok()))
        .collect::<Option<_>>()
        .ok_or("its inclusion proof's hashes are not 32 bytes of base64")?;
    let leaf: [u8; 32] = Sha256::new().chain_update([0u8]).chain_update(body).finalize().into();
    if !merkle_inclusion(index, size, leaf, &hashes, root) {
        return Err(format!("its inclusion proof does not lead from the entry to {}'s tree", log.url));
    }
    let note = proof["checkpoint"]["envelope"].as_str().ok_or("its inclusion proof has no checkpoint")?;
    let (size_signed, root_signed) = checkpoint(note, log)?;
    if size_signed != size || root_signed != root {
        return Err("its inclusion proof is not to the tree its checkpoint names".into());
    }
    Ok(())
}

/// Whether `proof` leads from `leaf`, the `index`th of a tree of `size`,
/// to `root` (RFC 9162, 2.1.3.2).
pub fn merkle_inclusion(index: u64, size: u64, leaf: [u8; 32], proof: &[[u8; 32]], root: [u8; 32]) -> bool {
    if index >= size {
        return false;
    }
    let node = |left: &[u8], right: &[u8]| -> [u8; 32] {
        Sha256::new().chain_update([1u8]).chain_update(left).chain_update(right).finalize().into()
    };
    let (mut f, mut s, mut r) = (index, size - 1, leaf);
    for p in proof {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            r = node(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    s == 0 && r == root
}

/// A checkpoint (a signed note: origin, tree size, root hash) signed by
/// `log`: its size and root.
fn checkpoint(note: &str, log: &Log) -> Result<(u64, [u8; 32]), String> {
    let (text, signatures) = note.split_once("\n\n").ok_or("its checkpoint is not a signed note")?;
    let text = format!("{text}\n");
    let mut lines = text.lines();
    let (_origin, size, root) = (lines.next(), lines.next(), lines.next());
    let size: u64 = size.and_then(|s| s.parse().ok()).ok_or("its checkpoint names no tree size")?;
    let root: [u8; 32] = root
        .and_then(|r| STANDARD.decode(r).ok())
        .and_then(|r| r.try_into().ok())
        .ok_or("its checkpoint names no root hash")?;
    let signed = signatures.lines().filter_map(|line| line.strip_prefix("\u{2014} ")).any(|line| {
        let Some((_name, sig)) = line.rsplit_once(' ') else { return false };
        let Ok(sig) = STANDARD.decode(sig) else { return false };
        sig.len() > 4 && sig[..4] == log.id[..4] && log.key.verify(text.as_bytes(), &sig[4..])
    });
    if !signed {
        return Err(format!("its checkpoint is not signed by {}", log.url));
    }
    Ok((size, root))
}

/// The log entry's body names this signature, certificate and content.
fn matches_body(body: &[u8], kind: &Value, leaf: &[u8], signature: &[u8], content: &Content) -> Result<(), String> {
    let body: Value = serde_json::from_slice(body).map_err(|_| "its log entry's body is not JSON")?;
    let (name, version) = (body["kind"].as_str().unwrap_or(""), body["apiVersion"].as_str().unwrap_or(""));
    if kind["kind"].as_str().is_some_and(|k| k != name) || kind["version"].as_str().is_some_and(|v| v != version) {
        return Err("its log entry's kind is not its body's".into());
    }
    let b64 = |v: &Value| STANDARD.decode(v.as_str().unwrap_or("")).unwrap_or_default();
    let is_leaf = |v: &Value| pem_der(&b64(v)).is_some_and(|der| der == leaf);
    let spec = &body["spec"];
    let same = match (name, version, content) {
        ("hashedrekord", "0.0.1", Content::Message(digest)) => {
            spec["data"]["hash"]["algorithm"] == "sha256"
                && spec["data"]["hash"]["value"].as_str().is_some_and(|v| v.eq_ignore_ascii_case(&hex(digest)))
                && b64(&spec["signature"]["content"]) == signature
                && is_leaf(&spec["signature"]["publicKey"]["content"])
        }
        ("dsse", "0.0.1", Content::Dsse { payload, .. }) => {
            let payload_hash = hex(&Sha256::digest(payload));
            spec["payloadHash"]["algorithm"] == "sha256"
                && spec["payloadHash"]["value"].as_str().is_some_and(|v| v.eq_ignore_ascii_case(&payload_hash))
                && spec["signatures"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|s| b64(&s["signature"]) == signature && is_leaf(&s["verifier"]))
        }
        _ => return Err(format!("its log entry is a {name} {version}, which does not fit its bundle")),
    };
    if !same {
        return Err("its log entry is not of this signature, certificate and artifact".into());
    }
    Ok(())
}

/// The DER of a PEM certificate.
fn pem_der(pem: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(pem).ok()?;
    let body: String = text.lines().filter(|l| !l.starts_with("-----")).map(str::trim).collect();
    STANDARD.decode(body).ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_hex(text: &str) -> Result<Vec<u8>, ()> {
    if !text.len().is_multiple_of(2) {
        return Err(());
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2).ok_or(())?, 16).map_err(|_| ())).collect()
}

#[cfg(any(test, feature = "fixture"))]
pub mod fixture;
#[cfg(test)]
mod tests;
