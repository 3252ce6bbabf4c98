//! Bundles the public Sigstore made (production and staging Fulcio and
//! Rekor), checked against the trust roots those instances publish: what
//! the fixture's CA and log cannot show is that this verifier reads the
//! real formats (certificates, signed entry timestamps, checkpoints, log
//! entry bodies) as Sigstore writes them. The files and where they come
//! from: `tests/data/README.md`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};
use std::path::Path;
use toolhost_verify::sigstore::{Identity, Signer, TrustRoot, verify};

fn data(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)).unwrap()
}

fn root(instance: &str) -> TrustRoot {
    let text = String::from_utf8(data(&format!("{instance}.trusted_root.json"))).unwrap();
    TrustRoot::parse(&text).unwrap()
}

fn signer(instance: &str, issuer: &str, identity: Identity) -> Signer {
    Signer { origin: format!("the test's {instance} signer"), root: root(instance), issuer: issuer.into(), identity }
}

/// `sha256:HEX` of a file.
fn digest_of(name: &str) -> String {
    format!("sha256:{}", hex(&Sha256::digest(data(name))))
}

/// `sha256:HEX` as the bundle's message signature names it (the artifacts
/// themselves are large and not kept here).
fn digest_named_in(bundle: &str) -> String {
    let json: serde_json::Value = serde_json::from_slice(&data(bundle)).unwrap();
    let b64 = json["messageSignature"]["messageDigest"]["digest"].as_str().unwrap();
    format!("sha256:{}", hex(&STANDARD.decode(b64).unwrap()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

const GITHUB_LOGIN: &str = "https://github.com/login/oauth";

#[test]
fn a_staging_bundle_v0_3_verifies_for_its_file_and_signer_only() {
    let bundle = data("bundle_v3.txt.sigstore.json");
    let digest = digest_of("bundle_v3.txt");
    let who = signer("staging", GITHUB_LOGIN, Identity::Exact("william@yossarian.net".into()));
    let verified = verify(&bundle, &digest, &[], std::slice::from_ref(&who)).unwrap();
    assert!(verified.who.starts_with("william@yossarian.net (issuer https://github.com/login/oauth"), "{verified:?}");

    // Another file, another identity, another instance's trust root.
    let why = verify(&bundle, &digest_of("bundle.txt"), &[], std::slice::from_ref(&who)).unwrap_err().to_string();
    assert!(why.contains("not this manifest") || why.contains("digest"), "{why}");
    let someone_else = signer("staging", GITHUB_LOGIN, Identity::Exact("a@tny.town".into()));
    assert!(verify(&bundle, &digest, &[], &[someone_else]).is_err());
    let production = signer("production", GITHUB_LOGIN, Identity::Exact("william@yossarian.net".into()));
    let why = verify(&bundle, &digest, &[], &[production]).unwrap_err().to_string();
    assert!(!why.is_empty());
}

#[test]
fn a_staging_bundle_v0_1_verifies() {
    let bundle = data("bundle.txt.sigstore.json");
    let who = signer("staging", GITHUB_LOGIN, Identity::Exact("a@tny.town".into()));
    verify(&bundle, &digest_of("bundle.txt"), &[], &[who]).unwrap();
}

/// The signature of CPython 3.12.5's source release, a v0.1 bundle whose
/// inclusion proof lacks the checkpoint it needs: refused, as sigstore-python
/// refuses it. v0.1 bundles may go without a proof (the log's signed entry
/// timestamp is the promise), and without it the same bundle verifies.
#[test]
fn the_python_3_12_5_release_signature_verifies_against_production() {
    let name = "Python-3.12.5.tgz.sigstore.json";
    // The release's published SHA-256 is the one its bundle names.
    let digest = digest_named_in(name);
    assert_eq!(digest, "sha256:38dc4e2c261d49c661196066edbfb70fdb16be4a79cc8220c224dfeb5636d405");
    let who = || signer("production", "https://accounts.google.com", Identity::Exact("thomas@python.org".into()));
    let why = verify(&data(name), &digest, &[], &[who()]).unwrap_err().to_string();
    assert!(why.contains("no checkpoint"), "{why}");

    let mut bundle: serde_json::Value = serde_json::from_slice(&data(name)).unwrap();
    let entry = bundle["verificationMaterial"]["tlogEntries"][0].as_object_mut().unwrap();
    entry.remove("inclusionProof").unwrap();
    let promised = serde_json::to_vec(&bundle).unwrap();
    let verified = verify(&promised, &digest, &[], &[who()]).unwrap();
    assert!(verified.who.starts_with("thomas@python.org (issuer https://accounts.google.com"), "{verified:?}");

    // Its signed entry timestamp covers the entry: a changed time is refused.
    let entry = bundle["verificationMaterial"]["tlogEntries"][0].as_object_mut().unwrap();
    entry.insert("integratedTime".into(), "1722976368".into());
    assert!(verify(&serde_json::to_vec(&bundle).unwrap(), &digest, &[], &[who()]).is_err());
}

#[test]
fn a_github_actions_release_verifies_by_its_workflow_identity() {
    let name = "bundle_v3_github.whl.sigstore.json";
    let workflow =
        Identity::pattern(r"https://github\.com/trailofbits/rfc8785\.py/\.github/workflows/release\.yml@refs/tags/v.*")
            .unwrap();
    let who = signer("production", "https://token.actions.githubusercontent.com", workflow);
    verify(&data(name), &digest_named_in(name), &[], &[who]).unwrap();
    let other_repo = Identity::pattern(r"https://github\.com/trailofbits/other/.*").unwrap();
    let who = signer("production", "https://token.actions.githubusercontent.com", other_repo);
    assert!(verify(&data(name), &digest_named_in(name), &[], &[who]).is_err());
}

/// CVE-2022-36056: the log entry is for another signature than the
/// bundle's, though each is valid on its own.
#[test]
fn a_log_entry_for_another_signature_is_refused() {
    let name = "bundle_cve_2022_36056.txt.sigstore.json";
    let who = signer("staging", GITHUB_LOGIN, Identity::pattern(".*").unwrap());
    let why = verify(&data(name), &digest_named_in(name), &[], &[who]).unwrap_err().to_string();
    assert!(why.contains("log"), "{why}");
}

/// Rekor v2 entries carry no signed timestamp of the log's; their time
/// comes from a timestamp authority, which this verifier does not check:
/// refused with the reason, never taken on trust.
#[test]
fn a_rekor_v2_bundle_is_refused_with_the_reason() {
    let name = "staging-rekor-v2.txt.sigstore.json";
    let who = signer("staging", GITHUB_LOGIN, Identity::pattern(".*").unwrap());
    let why = verify(&data(name), &digest_of("staging-rekor-v2.txt"), &[], &[who]).unwrap_err().to_string();
    assert!(why.contains("log2025-alpha1.rekor.sigstage.dev, a log whose key type"), "{why}");
}
