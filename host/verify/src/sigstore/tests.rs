//! A certificate authority, a transparency log and signers of the tests'
//! own, making bundles as cosign and Sigstore do; each check shown to hold
//! and to refuse what it must.

use super::*;
use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, PKCS_ECDSA_P384_SHA384, PublicKeyData as _, SanType, SigningKey as _,
    date_time_ymd,
};
use serde_json::json;

const DIGEST: &str = "sha256:3f1a2b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a";
const ISSUER: &str = "https://issuer.example";
const ALICE: &str = "alice@example.com";
/// 2026-01-01T12:00:00Z: inside the leaf's validity.
const LOGGED: i64 = 1_767_268_800;

fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// A CA (a P-384 root and intermediate, as Fulcio's), a log key, and
/// the trust root naming both.
struct World {
    intermediate: Issuer<'static, KeyPair>,
    chain: Vec<Vec<u8>>,
    log: KeyPair,
    log_id: [u8; 32],
}

impl World {
    fn new() -> World {
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

    fn trust_root(&self) -> String {
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

    fn signer(&self, identity: Identity) -> Signer {
        Signer {
            origin: "the test's settings".into(),
            root: TrustRoot::parse(&self.trust_root()).unwrap(),
            issuer: ISSUER.into(),
            identity,
        }
    }

    /// A short-lived signing certificate for `email`, valid on 2026-01-01.
    fn leaf(&self, email: &str, issuer: &str) -> (KeyPair, Vec<u8>) {
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
    fn entry(&self, body: &Value, time: i64) -> Value {
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
            "kindVersion": {"kind": "dsse", "version": "0.0.1"},
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
    fn bundle(&self, digest: &str, email: &str) -> Value {
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

/// The signing statement for `digest`, and its DSSE signature by `sign`.
fn dsse(digest: &str, sign: impl Fn(&[u8]) -> Vec<u8>) -> (Vec<u8>, Vec<u8>) {
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
fn tree_hash(leaves: &[[u8; 32]]) -> [u8; 32] {
    if leaves.len() == 1 {
        return leaves[0];
    }
    let k = split(leaves.len());
    node(&tree_hash(&leaves[..k]), &tree_hash(&leaves[k..]))
}

/// RFC 6962's PATH(m, D).
fn tree_path(m: usize, leaves: &[[u8; 32]]) -> Vec<[u8; 32]> {
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

fn check(bundle: &Value, signers: &[Signer]) -> Result<Verified, String> {
    verify(&serde_json::to_vec(bundle).unwrap(), DIGEST, &[], signers)
}

#[test]
fn merkle_proofs_hold_for_every_leaf_of_every_small_tree() {
    for size in 1..=33usize {
        let leaves: Vec<[u8; 32]> = (0..size).map(|i| Sha256::digest(i.to_le_bytes()).into()).collect();
        let root = tree_hash(&leaves);
        for index in 0..size {
            let proof = tree_path(index, &leaves);
            assert!(merkle_inclusion(index as u64, size as u64, leaves[index], &proof, root), "{index} of {size}");
            let other = (index + 1) % size;
            if other != index {
                assert!(!merkle_inclusion(index as u64, size as u64, leaves[other], &proof, root));
            }
            assert!(size == 1 || !merkle_inclusion(index as u64, size as u64, leaves[index], &proof, leaves[index]));
            assert!(!merkle_inclusion(size as u64, size as u64, leaves[index], &proof, root));
        }
    }
}

#[test]
fn a_keyless_bundle_by_a_trusted_identity_verifies() {
    let world = World::new();
    let bundle = world.bundle(DIGEST, ALICE);
    let verified = check(&bundle, &[world.signer(Identity::Exact(ALICE.into()))]).unwrap();
    assert!(verified.who.starts_with("alice@example.com (issuer https://issuer.example; certificate by https://ca.test; logged in https://log.test at 2026-01-01T12:00:00"), "{verified:?}");
    let pattern = world.signer(Identity::pattern(r".*@example\.com").unwrap());
    assert!(check(&bundle, &[pattern]).is_ok());
}

#[test]
fn who_signed_must_be_a_trusted_identity_and_issuer() {
    let world = World::new();
    let bundle = world.bundle(DIGEST, "mallory@example.org");
    let why = check(&bundle, &[world.signer(Identity::Exact(ALICE.into()))]).unwrap_err();
    assert!(
        why.contains("signed by mallory@example.org (issuer https://issuer.example), not alice@example.com"),
        "{why}"
    );
    // A pattern matches the whole identity only.
    let why = check(&bundle, &[world.signer(Identity::pattern("mallory@example").unwrap())]).unwrap_err();
    assert!(why.contains("not /mallory@example/"), "{why}");
    let mut other_issuer = world.signer(Identity::Exact("mallory@example.org".into()));
    other_issuer.issuer = "https://accounts.example".into();
    assert!(check(&bundle, &[other_issuer]).unwrap_err().contains("issuer https://accounts.example"));
    assert!(check(&bundle, &[]).unwrap_err().contains("no Sigstore signer is trusted"));
}

#[test]
fn the_bundle_must_sign_this_manifest_as_a_signature() {
    let world = World::new();
    let signer = [world.signer(Identity::Exact(ALICE.into()))];
    let other = world.bundle("sha256:1111111111111111111111111111111111111111111111111111111111111111", ALICE);
    assert!(check(&other, &signer).unwrap_err().contains("does not name this manifest"));
    // An attestation of another predicate is not a signature.
    let mut bundle = world.bundle(DIGEST, ALICE);
    let mut statement: Value =
        serde_json::from_slice(&STANDARD.decode(bundle["dsseEnvelope"]["payload"].as_str().unwrap()).unwrap()).unwrap();
    statement["predicateType"] = json!("https://slsa.dev/provenance/v1");
    bundle["dsseEnvelope"]["payload"] = json!(b64(&serde_json::to_vec(&statement).unwrap()));
    assert!(check(&bundle, &signer).unwrap_err().contains("an attestation, not a signature"));
    // A payload changed after signing.
    let mut bundle = world.bundle(DIGEST, ALICE);
    statement["predicateType"] = json!(SIGN_PREDICATE);
    statement["subject"][0]["name"] = json!("changed");
    bundle["dsseEnvelope"]["payload"] = json!(b64(&serde_json::to_vec(&statement).unwrap()));
    assert!(check(&bundle, &signer).unwrap_err().contains("does not verify with its certificate's key"));
}

#[test]
fn the_certificate_must_chain_to_the_trust_root_when_logged() {
    let world = World::new();
    let signer = world.signer(Identity::Exact(ALICE.into()));
    // Another CA's certificate, with a log entry of the trusted log.
    let stranger = World {
        log: KeyPair::try_from(world.log.serialize_der().as_slice()).unwrap(),
        log_id: world.log_id,
        ..World::new()
    };
    let bundle = stranger.bundle(DIGEST, ALICE);
    let why = check(&bundle, std::slice::from_ref(&signer)).unwrap_err();
    assert!(why.contains("does not chain to the trust root"), "{why}");
    // Logged when the certificate had expired (re-logged with that time).
    let mut bundle = world.bundle(DIGEST, ALICE);
    let body: Value = serde_json::from_slice(
        &STANDARD
            .decode(bundle["verificationMaterial"]["tlogEntries"][0]["canonicalizedBody"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    bundle["verificationMaterial"]["tlogEntries"][0] = world.entry(&body, LOGGED + 3 * 86_400);
    let why = check(&bundle, std::slice::from_ref(&signer)).unwrap_err();
    assert!(why.contains("does not chain") && why.contains("Expired"), "{why}");
}

#[test]
fn the_log_entry_must_be_signed_included_and_about_this_signature() {
    let world = World::new();
    let signer = [world.signer(Identity::Exact(ALICE.into()))];
    let good = world.bundle(DIGEST, ALICE);
    fn entry(b: &mut Value) -> &mut Value {
        &mut b["verificationMaterial"]["tlogEntries"][0]
    }
    // The time moved: the signed entry timestamp no longer holds.
    let mut bundle = good.clone();
    entry(&mut bundle)["integratedTime"] = json!((LOGGED + 60).to_string());
    assert!(check(&bundle, &signer).unwrap_err().contains("signed entry timestamp is not"));
    // No timestamp: the time cannot be trusted.
    let mut bundle = good.clone();
    entry(&mut bundle).as_object_mut().unwrap().remove("inclusionPromise");
    assert!(check(&bundle, &signer).unwrap_err().contains("no signed entry timestamp"));
    // A proof that leads elsewhere, or a checkpoint the log did not sign.
    let mut bundle = good.clone();
    entry(&mut bundle)["inclusionProof"]["hashes"][0] = json!(b64(&[7u8; 32]));
    assert!(check(&bundle, &signer).unwrap_err().contains("does not lead from the entry"));
    let mut bundle = good.clone();
    let note = entry(&mut bundle)["inclusionProof"]["checkpoint"]["envelope"].as_str().unwrap().replace("42", "43");
    entry(&mut bundle)["inclusionProof"]["checkpoint"]["envelope"] = json!(note);
    assert!(check(&bundle, &signer).unwrap_err().contains("checkpoint is not signed"));
    // v0.3 requires the proof; v0.1 does not.
    let mut bundle = good.clone();
    entry(&mut bundle).as_object_mut().unwrap().remove("inclusionProof");
    assert!(check(&bundle, &signer).unwrap_err().contains("no inclusion proof"));
    bundle["mediaType"] = json!("application/vnd.dev.sigstore.bundle+json;version=0.1");
    assert!(check(&bundle, &signer).is_ok());
    // An entry of another signature, honestly logged, does not vouch.
    let other = world.bundle(DIGEST, ALICE);
    let mut bundle = good.clone();
    *entry(&mut bundle) = other["verificationMaterial"]["tlogEntries"][0].clone();
    assert!(check(&bundle, &signer).unwrap_err().contains("not of this signature"));
    // A log the trust root does not name.
    let mut bundle = good.clone();
    entry(&mut bundle)["logId"]["keyId"] = json!(b64(&[9u8; 32]));
    assert!(check(&bundle, &signer).unwrap_err().contains("a log the trust root does not name"));
    // No entry at all.
    let mut bundle = good;
    bundle["verificationMaterial"]["tlogEntries"] = json!([]);
    assert!(check(&bundle, &signer).unwrap_err().contains("no transparency log entry"));
}

#[test]
fn a_message_signature_logged_as_a_hashedrekord_verifies() {
    let world = World::new();
    let (key, leaf) = world.leaf(ALICE, ISSUER);
    // A signature of the manifest's bytes: a prehashed signature of its digest.
    let digest = decode_hex(DIGEST.trim_start_matches("sha256:")).unwrap();
    let signing = p256::ecdsa::SigningKey::from_pkcs8_der(&key.serialize_der()).unwrap();
    use p256::ecdsa::signature::hazmat::PrehashSigner as _;
    use p256::pkcs8::DecodePrivateKey as _;
    let signature: p256::ecdsa::Signature = signing.sign_prehash(&digest).unwrap();
    let signature = signature.to_der().as_bytes().to_vec();
    let pem = format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", b64(&leaf));
    let body = json!({"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": {
        "data": {"hash": {"algorithm": "sha256", "value": DIGEST.trim_start_matches("sha256:")}},
        "signature": {"content": b64(&signature), "publicKey": {"content": b64(pem.as_bytes())}}}});
    let mut entry = world.entry(&body, LOGGED);
    entry["kindVersion"] = json!({"kind": "hashedrekord", "version": "0.0.1"});
    let bundle = json!({
        "mediaType": "application/vnd.dev.sigstore.bundle+json;version=0.2",
        "verificationMaterial": {"x509CertificateChain": {"certificates": [{"rawBytes": b64(&leaf)}]}, "tlogEntries": [entry]},
        "messageSignature": {"messageDigest": {"algorithm": "SHA2_256", "digest": b64(&digest)}, "signature": b64(&signature)},
    });
    assert!(check(&bundle, &[world.signer(Identity::Exact(ALICE.into()))]).is_ok());
}

#[test]
fn a_key_pair_bundle_verifies_with_a_trusted_key_only() {
    use p256::ecdsa::signature::Signer as _;
    use p256::pkcs8::EncodePublicKey as _;
    let signing = p256::ecdsa::SigningKey::from_slice(&[7; 32]).unwrap();
    let (payload, signature) = dsse(DIGEST, |m| {
        let s: p256::ecdsa::Signature = signing.sign(m);
        s.to_der().as_bytes().to_vec()
    });
    let bundle = json!({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {"publicKey": {"hint": "ignored"}, "tlogEntries": []},
        "dsseEnvelope": {"payload": b64(&payload), "payloadType": "application/vnd.in-toto+json",
            "signatures": [{"sig": b64(&signature)}]},
    });
    let pem = signing.verifying_key().to_public_key_pem(Default::default()).unwrap();
    let trusted = CosignKey::parse(&pem, "trustedPluginKeys of the test".into()).unwrap();
    let bytes = serde_json::to_vec(&bundle).unwrap();
    let verified = verify(&bytes, DIGEST, std::slice::from_ref(&trusted), &[]).unwrap();
    assert_eq!(verified.who, "the trusted key of trustedPluginKeys of the test");
    let other = p256::ecdsa::SigningKey::from_slice(&[8; 32]).unwrap();
    let other = CosignKey::parse(&other.verifying_key().to_public_key_pem(Default::default()).unwrap(), "x".into());
    assert!(verify(&bytes, DIGEST, &[other.unwrap()], &[]).unwrap_err().contains("not signed by any of the trusted"));
}

#[test]
fn trust_roots_that_do_not_read_are_refused_with_the_reason() {
    assert!(TrustRoot::parse("{}").unwrap_err().contains("not a Sigstore trusted root"));
    let world = World::new();
    let mut root: Value = serde_json::from_str(&world.trust_root()).unwrap();
    root["certificateAuthorities"][0]["validFor"]["start"] = json!("yesterday");
    assert!(TrustRoot::parse(&root.to_string()).unwrap_err().contains("not an RFC 3339 time"));
    root["certificateAuthorities"] = json!([]);
    assert!(TrustRoot::parse(&root.to_string()).unwrap_err().contains("no certificate authority"));
}
