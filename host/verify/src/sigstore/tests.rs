//! Each check shown to hold and to refuse what it must, on bundles of the
//! fixture's CA and log.

use super::fixture::*;
use super::*;
use serde_json::json;

const DIGEST: &str = "sha256:3f1a2b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a";

fn check(bundle: &Value, signers: &[Signer]) -> Result<Verified, String> {
    kind(bundle, signers).map_err(|e| e.to_string())
}

fn kind(bundle: &Value, signers: &[Signer]) -> Result<Verified, BundleError> {
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
    assert!(matches!(kind(&bundle, &[]), Err(BundleError::Refused(why)) if why.len() == 1));
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
    assert_eq!(kind(&bundle, &signer).unwrap_err(), BundleError::BadSignature);
}

#[test]
fn the_certificate_must_chain_to_the_trust_root_when_logged() {
    let world = World::new();
    let signer = world.signer(Identity::Exact(ALICE.into()));
    // Another CA's certificate, with a log entry of the trusted log.
    let stranger = world.stranger();
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
    assert_eq!(kind(&bundle, &signer).unwrap_err(), BundleError::NotLogged);
}

#[test]
fn a_message_signature_logged_as_a_hashedrekord_verifies() {
    let world = World::new();
    let signer = [world.signer(Identity::Exact(ALICE.into()))];
    let bundle = world.message_bundle(DIGEST, ALICE);
    assert!(check(&bundle, &signer).is_ok());
    let other = world.message_bundle("sha256:1111111111111111111111111111111111111111111111111111111111111111", ALICE);
    assert!(check(&other, &signer).unwrap_err().contains("signs the message sha256:1111"));
    // The log entry of another artifact's signature does not vouch.
    let mut bundle = bundle;
    bundle["verificationMaterial"]["tlogEntries"] = other["verificationMaterial"]["tlogEntries"].clone();
    assert!(check(&bundle, &signer).unwrap_err().contains("not of this signature"));
}

#[test]
fn a_key_pair_bundle_verifies_with_a_trusted_key_only() {
    use p256::pkcs8::EncodePublicKey as _;
    let signing = p256::ecdsa::SigningKey::from_slice(&[7; 32]).unwrap();
    let bundle = key_bundle(DIGEST, &signing);
    let pem = signing.verifying_key().to_public_key_pem(Default::default()).unwrap();
    let trusted = CosignKey::parse(&pem, "trustedPluginKeys of the test".into()).unwrap();
    let bytes = serde_json::to_vec(&bundle).unwrap();
    let verified = verify(&bytes, DIGEST, std::slice::from_ref(&trusted), &[]).unwrap();
    assert_eq!(verified.who, "the trusted key of trustedPluginKeys of the test");
    let other = p256::ecdsa::SigningKey::from_slice(&[8; 32]).unwrap();
    let other = CosignKey::parse(&other.verifying_key().to_public_key_pem(Default::default()).unwrap(), "x".into());
    let refused = verify(&bytes, DIGEST, &[other.unwrap()], &[]).unwrap_err();
    assert_eq!(refused, BundleError::UnknownKey);
    assert!(refused.to_string().contains("not signed by any of the trusted"));
    assert!(matches!(verify(b"{", DIGEST, &[], &[]), Err(BundleError::NotJson(_))));
    assert!(matches!(verify(&bytes, "sha256:xyz", &[], &[]), Err(BundleError::NotDigest(_))));
}

#[test]
fn trust_roots_that_do_not_read_are_refused_with_the_reason() {
    assert!(TrustRoot::parse("{}").unwrap_err().to_string().contains("not a Sigstore trusted root"));
    assert!(matches!(TrustRoot::parse("[").unwrap_err(), TrustRootError::NotJson(_)));
    let bad = Identity::pattern("(").unwrap_err();
    assert!(bad.pattern == "(" && bad.to_string().starts_with("`(` is not a regular expression"));
    let world = World::new();
    let mut root: Value = serde_json::from_str(&world.trust_root()).unwrap();
    root["certificateAuthorities"][0]["validFor"]["start"] = json!("yesterday");
    assert!(TrustRoot::parse(&root.to_string()).unwrap_err().to_string().contains("not an RFC 3339 time"));
    root["certificateAuthorities"] = json!([]);
    assert!(TrustRoot::parse(&root.to_string()).unwrap_err().to_string().contains("no certificate authority"));
    assert_eq!(TrustRoot::parse(&root.to_string()).unwrap_err(), TrustRootError::Incomplete);
}
