//! A certificate authority and a transparency log of their own, making
//! bundles as cosign and Sigstore do: for the tests here, the end-to-end
//! tests (feature `fixture`) and the fuzz target.

use super::*;
use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, PKCS_ECDSA_P384_SHA384, PublicKeyData as _, SanType, SigningKey as _,
    date_time_ymd,
};
use serde_json::json;

pub const ISSUER: &str = "https://issuer.example";
pub const ALICE: &str = "alice@example.com";
/// 2026-01-01T12:00:00Z: inside the leaf's validity.
pub const LOGGED: i64 = 1_767_268_800;

pub fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// A CA (a P-384 root and intermediate, as Fulcio's), a log key, and
/// the trust root naming both.
pub struct World {
    intermediate: Issuer<'static, KeyPair>,
    chain: Vec<Vec<u8>>,
    /// The log's key.
    pub log: KeyPair,
    /// The log's ID.
    pub log_id: [u8; 32],
}

impl Default for World {
    fn default() -> World {
        World::new()
    }
}

impl World {
    pub fn new() -> World {
        let ca = |name: &str| {
            let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
            params.distinguished_name.push(DnType::CommonName, name);
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
            params.not_before = date_time_ymd(2025, 1, 1);
            params.not_after = date_time_ymd(2030, 1, 1);
            (params, KeyPair::generate_for(&PKCS_ECDSA_P384_SHA384).unwrap())
        };
        let (root_params, root_key) = ca("test sigstore root");
        let root_cert = root_params.self_signed(&root_key).unwrap();
        let root = Issuer::new(root_params, root_key);
        let (params, key) = ca("test sigstore intermediate");
        let intermediate_cert = params.signed_by(&key, &root).unwrap();
        let log = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        World {
            intermediate: Issuer::new(params, key),
            chain: vec![intermediate_cert.der().to_vec(), root_cert.der().to_vec()],
            log_id: Sha256::digest(log.subject_public_key_info()).into(),
            log,
        }
    }

    /// Another CA, which logs to this one's log.
    pub fn stranger(&self) -> World {
        let mut other = World::new();
        other.log = KeyPair::try_from(self.log.serialize_der().as_slice()).unwrap();
        other.log_id = self.log_id;
        other
    }

    /// The trust root naming its CA and log, as `trusted_root.json`.
    pub fn trust_root(&self) -> String {
        json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [{"baseUrl": "https://log.test", "hashAlgorithm": "SHA2_256",
                "publicKey": {"rawBytes": b64(&self.log.subject_public_key_info()), "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                    "validFor": {"start": "2025-01-01T00:00:00Z"}},
                "logId": {"keyId": b64(&self.log_id)}}],
            "certificateAuthorities": [{"subject": {"commonName": "test"}, "uri": "https://ca.test",
                "certChain": {"certificates": self.chain.iter().map(|c| json!({"rawBytes": b64(c)})).collect::<Vec<_>>()},
                "validFor": {"start": "2025-01-01T00:00:00.000Z"}}],
            "ctlogs": [],
        })
        .to_string()
    }

    pub fn signer(&self, identity: Identity) -> Signer {
        Signer {
            origin: "the test's settings".into(),
            root: TrustRoot::parse(&self.trust_root()).unwrap(),
            issuer: ISSUER.into(),
            identity,
        }
    }

    /// A short-lived signing certificate for `email`, valid on 2026-01-01.
    pub fn leaf(&self, email: &str, issuer: &str) -> (KeyPair, Vec<u8>) {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = vec![SanType::Rfc822Name(email.try_into().unwrap())];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
        params.not_before = date_time_ymd(2026, 1, 1);
        params.not_after = date_time_ymd(2026, 1, 2);
        let mut utf8 = vec![0x0c, issuer.len() as u8];
        utf8.extend_from_slice(issuer.as_bytes());
        params.custom_extensions = vec![CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 57264, 1, 8], utf8)];
        let cert = params.signed_by(&key, &self.intermediate).unwrap();
        (key, cert.der().to_vec())
    }

    /// A log entry of `body` (the 6th of 7), logged at `time`: its signed
    /// entry timestamp, inclusion proof and checkpoint.
    pub fn entry(&self, body: &Value, time: i64) -> Value {
        let kind = body["kind"].clone();
        let body = serde_json::to_vec(body).unwrap();
        let leaf =
            |bytes: &[u8]| -> [u8; 32] { Sha256::new().chain_update([0u8]).chain_update(bytes).finalize().into() };
        let leaves: Vec<[u8; 32]> =
            (0..7).map(|i| if i == 5 { leaf(&body) } else { leaf(format!("entry {i}").as_bytes()) }).collect();
        let root = tree_hash(&leaves);
        let proof = tree_path(5, &leaves);
        let note = format!("log.test - 42\n7\n{}\n", b64(&root));
        let mut signature = self.log_id[..4].to_vec();
        signature.extend(self.log.sign(note.as_bytes()).unwrap());
        let envelope = format!("{note}\n\u{2014} log.test {}\n", b64(&signature));
        let promised = format!(
            r#"{{"body":"{}","integratedTime":{time},"logID":"{}","logIndex":1005}}"#,
            b64(&body),
            hex(&self.log_id)
        );
        json!({
            "logIndex": "1005",
            "logId": {"keyId": b64(&self.log_id)},
            "kindVersion": {"kind": kind, "version": "0.0.1"},
            "integratedTime": time.to_string(),
            "inclusionPromise": {"signedEntryTimestamp": b64(&self.log.sign(promised.as_bytes()).unwrap())},
            "inclusionProof": {"logIndex": "5", "rootHash": b64(&root), "treeSize": "7",
                "hashes": proof.iter().map(|h| b64(h)).collect::<Vec<_>>(),
                "checkpoint": {"envelope": envelope}},
            "canonicalizedBody": b64(&body),
        })
    }

    /// A bundle as `cosign sign` makes it (cosign 3): a DSSE envelope of the
    /// signing statement for `digest`, signed keyless by `email`, logged.
    pub fn bundle(&self, digest: &str, email: &str) -> Value {
        let (key, leaf) = self.leaf(email, ISSUER);
        let (payload, signature) = dsse(digest, |m| key.sign(m).unwrap());
        let pem = format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", b64(&leaf));
        let body = json!({"apiVersion": "0.0.1", "kind": "dsse", "spec": {
            "envelopeHash": {"algorithm": "sha256", "value": "00"},
            "payloadHash": {"algorithm": "sha256", "value": hex(&Sha256::digest(&payload))},
            "signatures": [{"signature": b64(&signature), "verifier": b64(pem.as_bytes())}]}});
        json!({
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": {"certificate": {"rawBytes": b64(&leaf)}, "tlogEntries": [self.entry(&body, LOGGED)]},
            "dsseEnvelope": {"payload": b64(&payload), "payloadType": "application/vnd.in-toto+json",
                "signatures": [{"sig": b64(&signature), "keyid": ""}]},
        })
    }
}

impl World {
    /// A bundle as `cosign sign-blob --bundle` makes it (v0.2): a message
    /// signature of the artifact whose SHA-256 is `digest`, signed keyless
    /// by `email`, logged as a `hashedrekord`.
    pub fn message_bundle(&self, digest: &str, email: &str) -> Value {
        use p256::ecdsa::signature::hazmat::PrehashSigner as _;
        use p256::pkcs8::DecodePrivateKey as _;
        let (key, leaf) = self.leaf(email, ISSUER);
        let hex_digest = digest.trim_start_matches("sha256:");
        let digest = decode_hex(hex_digest).unwrap();
        let signing = p256::ecdsa::SigningKey::from_pkcs8_der(&key.serialize_der()).unwrap();
        let signature: p256::ecdsa::Signature = signing.sign_prehash(&digest).unwrap();
        let signature = signature.to_der().as_bytes().to_vec();
        let pem = format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", b64(&leaf));
        let body = json!({"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": hex_digest}},
            "signature": {"content": b64(&signature), "publicKey": {"content": b64(pem.as_bytes())}}}});
        json!({
            "mediaType": "application/vnd.dev.sigstore.bundle+json;version=0.2",
            "verificationMaterial": {"x509CertificateChain": {"certificates": [{"rawBytes": b64(&leaf)}]},
                "tlogEntries": [self.entry(&body, LOGGED)]},
            "messageSignature": {"messageDigest": {"algorithm": "SHA2_256", "digest": b64(&digest)},
                "signature": b64(&signature)},
        })
    }
}

/// The signing statement for `digest`, and its DSSE signature by `sign`.
pub fn dsse(digest: &str, sign: impl Fn(&[u8]) -> Vec<u8>) -> (Vec<u8>, Vec<u8>) {
    let statement = json!({"_type": "https://in-toto.io/Statement/v1",
        "subject": [{"digest": {"sha256": digest.trim_start_matches("sha256:")}}],
        "predicateType": SIGN_PREDICATE, "predicate": {}});
    let payload = serde_json::to_vec(&statement).unwrap();
    let mut pae = format!("DSSEv1 28 application/vnd.in-toto+json {} ", payload.len()).into_bytes();
    pae.extend_from_slice(&payload);
    let signature = sign(&pae);
    (payload, signature)
}

fn node(l: &[u8; 32], r: &[u8; 32]) -> [u8; 32] {
    Sha256::new().chain_update([1u8]).chain_update(l).chain_update(r).finalize().into()
}

/// The largest power of two below `n` (n > 1).
fn split(n: usize) -> usize {
    1 << (usize::BITS - 1 - (n - 1).leading_zeros())
}

/// RFC 6962's MTH.
pub fn tree_hash(leaves: &[[u8; 32]]) -> [u8; 32] {
    if leaves.len() == 1 {
        return leaves[0];
    }
    let k = split(leaves.len());
    node(&tree_hash(&leaves[..k]), &tree_hash(&leaves[k..]))
}

/// RFC 6962's PATH(m, D).
pub fn tree_path(m: usize, leaves: &[[u8; 32]]) -> Vec<[u8; 32]> {
    if leaves.len() == 1 {
        return Vec::new();
    }
    let k = split(leaves.len());
    if m < k {
        let mut path = tree_path(m, &leaves[..k]);
        path.push(tree_hash(&leaves[k..]));
        path
    } else {
        let mut path = tree_path(m - k, &leaves[k..]);
        path.push(tree_hash(&leaves[..k]));
        path
    }
}

/// A bundle signed with the cosign key `signing` (key-pair, not logged), as
/// `cosign sign --key --tlog-upload=false` makes it.
pub fn key_bundle(digest: &str, signing: &p256::ecdsa::SigningKey) -> Value {
    use p256::ecdsa::signature::Signer as _;
    let (payload, signature) = dsse(digest, |m| {
        let s: p256::ecdsa::Signature = signing.sign(m);
        s.to_der().as_bytes().to_vec()
    });
    json!({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {"publicKey": {"hint": ""}, "tlogEntries": []},
        "dsseEnvelope": {"payload": b64(&payload), "payloadType": "application/vnd.in-toto+json",
            "signatures": [{"sig": b64(&signature)}]},
    })
}
