//! What a tool's author or a registry hands `toolhost install` to check:
//! trusted-keys files, minisign signatures of component files, and cosign
//! signature layers (a base64 ECDSA signature over a JSON payload).

use arbitrary::{Result, Unstructured};
use base64::Engine as _;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::EncodePublicKey as _;
use std::sync::OnceLock;
use toolhost_verify::cosign::{self, CosignKey, Found};
use toolhost_verify::minisign::{self, TrustedKey};

const DIGEST: &str = "sha256:3f1a2b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a";

/// The operator's cosign key (the checker holds its secret half, to sign
/// what the fuzzer writes and reach the payload checks).
fn cosign_key() -> &'static (SigningKey, String) {
    static KEY: OnceLock<(SigningKey, String)> = OnceLock::new();
    KEY.get_or_init(|| {
        let signing = SigningKey::from_slice(&[7; 32]).expect("a P-256 scalar");
        let pem = signing.verifying_key().to_public_key_pem(Default::default()).expect("PEM");
        (signing, pem)
    })
}

/// The operator's minisign key pair (the `minisign` crate signs).
struct Pair {
    public: String,
    pair: ::minisign::KeyPair,
}

impl Pair {
    fn sign(&self, bytes: &[u8]) -> String {
        let signed = ::minisign::sign(Some(&self.pair.pk), &self.pair.sk, std::io::Cursor::new(bytes), None, None);
        signed.map(|s| s.to_string()).unwrap_or_default()
    }
}

fn minisign_key() -> &'static Pair {
    static KEY: OnceLock<Pair> = OnceLock::new();
    KEY.get_or_init(|| {
        let pair = ::minisign::KeyPair::generate_unencrypted_keypair().expect("a key pair");
        Pair { public: pair.pk.to_base64(), pair }
    })
}

fn payload(u: &mut Unstructured) -> Result<Vec<u8>> {
    Ok(match u.int_in_range(0..=3)? {
        0 => u.arbitrary::<Vec<u8>>()?,
        1 => serde_json::to_vec(&serde_json::json!({"critical": {
            "image": {"docker-manifest-digest": DIGEST}, "type": "cosign container image signature"}}))
        .unwrap_or_default(),
        _ => {
            let digest = if u.arbitrary()? { DIGEST.to_string() } else { u.arbitrary::<String>()? };
            let kind = if u.arbitrary()? { "cosign container image signature".to_string() } else { u.arbitrary()? };
            serde_json::to_vec(
                &serde_json::json!({"critical": {"image": {"docker-manifest-digest": digest}, "type": kind}}),
            )
            .unwrap_or_default()
        }
    })
}

fn check(u: &mut Unstructured) -> Result<()> {
    // A trusted-keys file of any text: read or refused, never a panic.
    let file: String = u.arbitrary()?;
    let _ = minisign::parse_key_file(&file, "fuzz");

    // cosign: a signature the fuzzer writes never vouches; one the trusted
    // key made vouches exactly when its payload names the manifest.
    let (signing, pem) = cosign_key();
    let keys = [CosignKey::parse(pem, "trusted".into()).expect("the trusted key")];
    let forged = Found { payload: payload(u)?, signature: u.arbitrary()? };
    assert!(cosign::verify(&[forged], DIGEST, &keys).is_err(), "a signature the checker did not make vouched");
    let body = payload(u)?;
    let made: Signature = signing.sign(&body);
    let der = base64::engine::general_purpose::STANDARD.encode(made.to_der().as_bytes());
    let names_it = serde_json::from_slice::<serde_json::Value>(&body).is_ok_and(|v| {
        v["critical"]["image"]["docker-manifest-digest"] == DIGEST
            && v["critical"]["type"] == "cosign container image signature"
    });
    let signed = Found { payload: body.clone(), signature: der };
    assert_eq!(
        cosign::verify(&[signed], DIGEST, &keys).is_ok(),
        names_it,
        "payload {:?}",
        String::from_utf8_lossy(&body)
    );

    // minisign: text the fuzzer writes never verifies; the trusted key's
    // signature of the bytes does, and of other bytes does not.
    let pair = minisign_key();
    let trusted = [TrustedKey::parse(&pair.public, "trusted".into()).expect("the trusted key")];
    let bytes: Vec<u8> = u.arbitrary()?;
    let text: String = u.arbitrary()?;
    assert!(
        minisign::verify(&bytes, &text, &trusted).is_err(),
        "a minisign signature the checker did not make verified"
    );
    let signature = pair.sign(&bytes);
    assert!(minisign::verify(&bytes, &signature, &trusted).is_ok());
    let mut other = bytes.clone();
    other.push(0);
    assert!(minisign::verify(&other, &signature, &trusted).is_err(), "a signature verified other bytes");
    Ok(())
}

/// The install checks on the fuzzer's bytes: see the module.
pub fn signatures(data: &[u8]) {
    let _ = check(&mut Unstructured::new(data));
}

/// The Sigstore checks on the fuzzer's bytes: see [`sigstore_check`].
pub fn sigstore(data: &[u8]) {
    let _ = sigstore_check(&mut Unstructured::new(data));
}

/// A Sigstore of the checker's own (a CA and a log whose keys are made
/// afresh in each process, so no saved input can carry their signatures),
/// its signer trusting Alice.
fn world() -> &'static (toolhost_verify::sigstore::fixture::World, toolhost_verify::sigstore::Signer) {
    use toolhost_verify::sigstore::fixture::{ALICE, World};
    static WORLD: OnceLock<(World, toolhost_verify::sigstore::Signer)> = OnceLock::new();
    WORLD.get_or_init(|| {
        let world = World::new();
        let signer = world.signer(toolhost_verify::sigstore::Identity::Exact(ALICE.into()));
        (world, signer)
    })
}

/// What a registry or a tool's author hands the Sigstore checks: trust
/// roots and bundles. Invariants: nothing panics; a bundle the fuzzer wrote
/// never verifies; a bundle the checker made for Alice and the manifest,
/// then changed where the fuzzer says, never verifies for another manifest
/// or another signer, and still verifies when the change left every byte
/// the checks read as it was.
fn sigstore_check(u: &mut Unstructured) -> Result<()> {
    use serde_json::Value;
    use toolhost_verify::sigstore::{self, Identity, TrustRoot, fixture::ALICE};
    let (world, signer) = world();
    let (_, pem) = cosign_key();
    let keys = [CosignKey::parse(pem, "trusted".into()).expect("the trusted key")];
    let signers = std::slice::from_ref(signer);
    match u.int_in_range(0..=2)? {
        0 => {
            let text: String = u.arbitrary()?;
            let _ = TrustRoot::parse(&text);
        }
        1 => {
            let bytes: Vec<u8> = u.arbitrary()?;
            assert!(
                sigstore::verify(&bytes, DIGEST, &keys, signers).is_err(),
                "a bundle the checker did not make verified"
            );
        }
        _ => {
            let mut bundle =
                if u.arbitrary()? { world.bundle(DIGEST, ALICE) } else { world.message_bundle(DIGEST, ALICE) };
            let original = bundle.clone();
            // Changes at paths the fuzzer picks: a value replaced by one it
            // writes, or removed.
            for _ in 0..u.int_in_range(0..=3)? {
                let mut pointer = String::new();
                for _ in 0..u.int_in_range(1..=6)? {
                    let step = match bundle.pointer(&pointer) {
                        Some(Value::Object(map)) if !map.is_empty() => {
                            let key = map.keys().nth(u.choose_index(map.len())?).cloned().unwrap_or_default();
                            key.replace('~', "~0").replace('/', "~1")
                        }
                        Some(Value::Array(items)) if !items.is_empty() => u.choose_index(items.len())?.to_string(),
                        _ => break,
                    };
                    pointer = format!("{pointer}/{step}");
                }
                let Some(at) = bundle.pointer_mut(&pointer) else { continue };
                *at = match u.int_in_range(0..=3)? {
                    0 => Value::Null,
                    1 => Value::String(u.arbitrary()?),
                    2 => Value::from(u.arbitrary::<i64>()?),
                    _ => serde_json::from_str(&u.arbitrary::<String>()?).unwrap_or(Value::Null),
                };
            }
            let bytes = serde_json::to_vec(&bundle).unwrap_or_default();
            let other = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
            assert!(sigstore::verify(&bytes, other, &keys, signers).is_err(), "a bundle verified another manifest");
            let mut mallory = signer.clone();
            mallory.identity = Identity::Exact("mallory@example.com".into());
            assert!(
                sigstore::verify(&bytes, DIGEST, &keys, std::slice::from_ref(&mallory)).is_err(),
                "a bundle verified for a signer who did not sign it"
            );
            let verified = sigstore::verify(&bytes, DIGEST, &keys, signers);
            if bundle == original {
                assert!(verified.is_ok(), "the checker's own bundle did not verify: {verified:?}");
            }
        }
    }
    Ok(())
}
