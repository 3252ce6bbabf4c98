//! `toolhost install oci://…` against a real registry (Debian's
//! `docker-registry`, started per test behind htpasswd credentials):
//! components pushed the way wkg and Wassette publish them, credentials from
//! the docker config, the containers auth file or the environment, pinning
//! by digest, the review and the record, and `--upgrade` by tag.

use crate::support::*;
use base64::Engine as _;
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use p256::ecdsa::SigningKey;
use p256::ecdsa::signature::Signer as _;
use p256::pkcs8::EncodePublicKey as _;
use serde_json::{Value, json};
use std::path::PathBuf;
use toolhost_tests::registry::Registry;
use toolhost_tests::{ECHO, GRANTEE};

/// The media types wkg (`wkg oci push`) and Wassette give a component.
const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
const WASM_LAYER: &str = "application/wasm";

/// Pushes `layers` (bytes and media type) as `REPOSITORY:TAG` with the
/// registry's credentials; the manifest's digest.
fn push_layers(registry: &Registry, repo_tag: &str, layers: &[(&[u8], &str)]) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    runtime.block_on(async {
        let client = Client::new(ClientConfig { protocol: ClientProtocol::Http, ..ClientConfig::default() });
        let reference: Reference = format!("{}/{repo_tag}", registry.address).parse().unwrap();
        let auth = RegistryAuth::Basic(registry.user.into(), registry.password.into());
        let layers: Vec<ImageLayer> =
            layers.iter().map(|(bytes, media_type)| ImageLayer::new(bytes.to_vec(), media_type.to_string(), None)).collect();
        let config = json!({"architecture": "wasm", "os": "wasip2", "layerDigests": layers.iter().map(|l| l.sha256_digest()).collect::<Vec<_>>()});
        let config = Config::new(serde_json::to_vec(&config).unwrap(), WASM_CONFIG.into(), None);
        let manifest = OciImageManifest::build(&layers, &config, None);
        client.push(&reference, &layers, config, &auth, Some(manifest)).await.expect("push");
        client.fetch_manifest_digest(&reference, &auth).await.expect("the pushed manifest's digest")
    })
}

/// Pushes a cosign signature of the manifest `digest` in `repository`, as
/// `cosign sign --key` keeps it: under the tag `sha256-HEX.sig`, a layer
/// holding the simple-signing payload, its signature in an annotation.
fn push_signature(registry: &Registry, repository: &str, digest: &str, signer: &SigningKey, signs: &str) {
    let payload = json!({"critical": {"identity": {"docker-reference": format!("{}/{repository}", registry.address)},
        "image": {"docker-manifest-digest": signs}, "type": "cosign container image signature"}, "optional": null});
    let payload = serde_json::to_vec(&payload).unwrap();
    let signature: p256::ecdsa::Signature = signer.sign(&payload);
    let signature = base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    runtime.block_on(async {
        let client = Client::new(ClientConfig { protocol: ClientProtocol::Http, ..ClientConfig::default() });
        let tag = format!("{}.sig", digest.replacen(':', "-", 1));
        let reference: Reference = format!("{}/{repository}:{tag}", registry.address).parse().unwrap();
        let auth = RegistryAuth::Basic(registry.user.into(), registry.password.into());
        let annotations = [("dev.cosignproject.cosign/signature".to_string(), signature)].into_iter().collect();
        let layer =
            ImageLayer::new(payload, "application/vnd.dev.cosign.simplesigning.v1+json".into(), Some(annotations));
        let config = Config::new(b"{}".to_vec(), "application/vnd.oci.image.config.v1+json".into(), None);
        let manifest = OciImageManifest::build(std::slice::from_ref(&layer), &config, None);
        client.push(&reference, &[layer], config, &auth, Some(manifest)).await.expect("push the signature");
    })
}

/// Attaches the Sigstore bundle `bundle` to the manifest `digest` of
/// `repository` as cosign 3 does on a registry without the referrers API:
/// an artifact manifest (its one layer the bundle, its subject the
/// manifest) and the referrers index under the tag `sha256-HEX`, listing
/// every bundle attached so far.
fn attach_bundle(registry: &Registry, repository: &str, digest: &str, bundle: &Value) {
    use oci_client::manifest::{
        ImageIndexEntry, OCI_IMAGE_INDEX_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageIndex, OciManifest,
    };
    use toolhost_verify::sigstore::BUNDLE_ARTIFACT;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    runtime.block_on(async {
        let client = Client::new(ClientConfig { protocol: ClientProtocol::Http, ..ClientConfig::default() });
        let auth = RegistryAuth::Basic(registry.user.into(), registry.password.into());
        let at = |what: &str| -> Reference { format!("{}/{repository}{what}", registry.address).parse().unwrap() };
        let subject = at(&format!("@{digest}"));
        let (raw, _) = client.pull_manifest_raw(&subject, &auth, &[OCI_IMAGE_MEDIA_TYPE]).await.unwrap();
        let layer = ImageLayer::new(serde_json::to_vec(bundle).unwrap(), BUNDLE_ARTIFACT.into(), None);
        let config = Config::new(b"{}".to_vec(), "application/vnd.oci.empty.v1+json".into(), None);
        let mut manifest = OciImageManifest::build(std::slice::from_ref(&layer), &config, None);
        manifest.artifact_type = Some(BUNDLE_ARTIFACT.into());
        manifest.subject = Some(OciDescriptor {
            media_type: OCI_IMAGE_MEDIA_TYPE.into(),
            digest: digest.into(),
            size: raw.len() as i64,
            ..OciDescriptor::default()
        });
        let tag = at(&format!(":bundle-{}", layer.sha256_digest().trim_start_matches("sha256:")));
        client.push(&tag, &[layer], config, &auth, Some(manifest)).await.expect("push the bundle");
        let (raw, bundle_digest) = client.pull_manifest_raw(&tag, &auth, &[OCI_IMAGE_MEDIA_TYPE]).await.unwrap();
        let entry = ImageIndexEntry {
            media_type: OCI_IMAGE_MEDIA_TYPE.into(),
            digest: bundle_digest,
            size: raw.len() as i64,
            platform: None,
            annotations: None,
            artifact_type: Some(BUNDLE_ARTIFACT.into()),
        };
        let referrers = at(&format!(":{}", digest.replacen(':', "-", 1)));
        let mut manifests = match client.pull_manifest(&referrers, &auth).await {
            Ok((OciManifest::ImageIndex(index), _)) => index.manifests,
            _ => Vec::new(),
        };
        manifests.push(entry);
        let index = OciImageIndex {
            schema_version: 2,
            media_type: Some(OCI_IMAGE_INDEX_MEDIA_TYPE.into()),
            manifests,
            artifact_type: None,
            annotations: None,
        };
        client.push_manifest(&referrers, &OciManifest::ImageIndex(index)).await.expect("push the referrers index");
    })
}

/// A P-256 key pair from `seed`: the signer and its public key in PEM, as
/// `cosign generate-key-pair` writes `cosign.pub`.
fn cosign_key(seed: u8) -> (SigningKey, String) {
    let signer = SigningKey::from_slice(&[seed; 32]).unwrap();
    let pem = signer.verifying_key().to_public_key_pem(Default::default()).unwrap();
    (signer, pem)
}

/// Pushes the component `wasm` as `REPOSITORY:TAG`; the manifest's digest.
fn push(registry: &Registry, repo_tag: &str, wasm: &[u8]) -> String {
    push_layers(registry, repo_tag, &[(wasm, WASM_LAYER)])
}

/// A docker config directory holding the registry's credentials.
fn docker_config(sb: &Sandbox, registry: &Registry) -> PathBuf {
    let dir = sb.root.join("docker");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), registry.docker_config()).unwrap();
    dir
}

/// `toolhost install ARGS…` with `DOCKER_CONFIG` set to `docker`, and no
/// other credentials in reach.
fn install(sb: &Sandbox, docker: Option<&PathBuf>, args: &[&str]) -> Run {
    let mut all = vec!["install"];
    all.extend_from_slice(args);
    run_with(sb, &all, |cmd| {
        cmd.env_remove("TOOLHOST_OCI_USERNAME").env_remove("TOOLHOST_OCI_PASSWORD").env_remove("REGISTRY_AUTH_FILE");
        cmd.env("XDG_RUNTIME_DIR", sb.root.join("no-runtime-dir"));
        match docker {
            Some(dir) => cmd.env("DOCKER_CONFIG", dir),
            None => cmd.env("DOCKER_CONFIG", sb.root.join("no-docker-config")),
        };
    })
}

fn record(sb: &Sandbox, tool: &str) -> Value {
    let file = sb.plugins.join(format!("{tool}.wasm.oci.json"));
    serde_json::from_slice(&std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))).unwrap()
}

#[test]
fn a_component_pushed_as_wkg_does_installs_with_the_docker_configs_credentials() {
    let registry = Registry::start();
    let sb = Sandbox::new();
    let wasm = std::fs::read(ECHO).unwrap();
    let digest = push(&registry, "tools/echo:1.0", &wasm);
    let source = format!("oci://{}/tools/echo:1.0", registry.address);
    let docker = docker_config(&sb, &registry);
    let r = install(&sb, Some(&docker), &[&source, "--yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains(&format!("source:          {source}")), "{}", r.stdout);
    assert!(
        r.stdout.contains(&format!("manifest:        {digest} (pulled with credentials from the docker config)")),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains(&format!("sha256:          {}", toolhost::content_hash(&wasm))), "{}", r.stdout);
    assert_eq!(std::fs::read(sb.plugins.join("Echo.wasm")).unwrap(), wasm, "the bytes pushed are the bytes installed");
    let recorded = record(&sb, "Echo");
    assert_eq!(recorded["source"], source.as_str());
    assert_eq!(recorded["manifest"], digest.as_str());
    assert_eq!(recorded["component"], format!("sha256:{}", toolhost::content_hash(&wasm)));
    // Installed means callable.
    let out = call(&sb, "Echo", &json!({"text": "from a registry"}), &["--allow", "Echo"]);
    assert!(out.assert_ok().contains("from a registry"));
    // Uninstalling takes the record too.
    assert_eq!(toolhost(&sb, &["uninstall", "Echo"]).code, 0);
    assert!(!sb.plugins.join("Echo.wasm.oci.json").exists());
}

#[test]
fn credentials_come_from_the_environment_or_the_containers_auth_file_and_none_is_refused() {
    let registry = Registry::start();
    let sb = Sandbox::new();
    push(&registry, "tools/echo:1.0", &std::fs::read(ECHO).unwrap());
    let source = format!("oci://{}/tools/echo:1.0", registry.address);
    // Anonymous: the registry says no, and the message says who asked.
    let r = install(&sb, None, &[&source]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("not installing") && r.stderr.contains("(anonymous)"), "{}", r.stderr);
    assert!(!sb.plugins.join("Echo.wasm").exists());
    // The containers auth file (podman, skopeo), named by REGISTRY_AUTH_FILE.
    let auth_file = sb.root.join("auth.json");
    std::fs::write(&auth_file, registry.docker_config()).unwrap();
    let mut all = vec!["install", source.as_str()];
    all.push("--yes");
    let r = run_with(&sb, &all, |cmd| {
        cmd.env("REGISTRY_AUTH_FILE", &auth_file).env("DOCKER_CONFIG", sb.root.join("none"));
    });
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("pulled with credentials from the containers auth file"), "{}", r.stdout);
    // The environment, first; a wrong password is refused by the registry.
    let r = run_with(&sb, &all, |cmd| {
        cmd.env("TOOLHOST_OCI_USERNAME", registry.user)
            .env("TOOLHOST_OCI_PASSWORD", "wrong")
            .env("REGISTRY_AUTH_FILE", &auth_file);
    });
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("credentials from TOOLHOST_OCI_USERNAME"), "{}", r.stderr);
    let r = run_with(&sb, &all, |cmd| {
        cmd.env("TOOLHOST_OCI_USERNAME", registry.user).env("TOOLHOST_OCI_PASSWORD", registry.password);
    });
    assert_eq!(r.code, 0, "{r:?}");
}

#[test]
fn a_digest_pins_the_manifest_and_a_wrong_one_is_refused() {
    let registry = Registry::start();
    let sb = Sandbox::new();
    let docker = docker_config(&sb, &registry);
    let wasm = std::fs::read(ECHO).unwrap();
    let digest = push(&registry, "tools/echo:1.0", &wasm);
    let pinned = format!("oci://{}/tools/echo@{digest}", registry.address);
    let r = install(&sb, Some(&docker), &[&pinned, "--yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(record(&sb, "Echo")["manifest"], digest.as_str());
    // A digest the registry does not have.
    let wrong = format!("oci://{}/tools/echo@sha256:{}", registry.address, "0".repeat(64));
    let r = install(&sb, Some(&docker), &[&wrong]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("not installing"), "{}", r.stderr);
    // The component's own hash pins too.
    let source = format!("oci://{}/tools/echo:1.0", registry.address);
    let r = install(&sb, Some(&docker), &[&source, "--sha256", &"ab".repeat(32)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("--sha256 requires"), "{}", r.stderr);
    // Pinned by digest, there is nothing to upgrade to.
    let r = install(&sb, Some(&docker), &["--upgrade", "Echo"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("installed by digest"), "{}", r.stderr);
}

#[test]
fn what_is_not_one_wasm_component_is_refused_with_the_reason() {
    let registry = Registry::start();
    let sb = Sandbox::new();
    let docker = docker_config(&sb, &registry);
    push_layers(&registry, "images/app:1", &[(b"not a tarball really", "application/vnd.oci.image.layer.v1.tar+gzip")]);
    let r = install(&sb, Some(&docker), &[&format!("oci://{}/images/app:1", registry.address)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains("holds no wasm component: its layers are application/vnd.oci.image.layer.v1.tar+gzip"),
        "{}",
        r.stderr
    );
    push(&registry, "tools/junk:1", b"\0asm but not really");
    let r = install(&sb, Some(&docker), &[&format!("oci://{}/tools/junk:1", registry.address)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("does not load as a tool"), "{}", r.stderr);
    let r = install(&sb, Some(&docker), &[&format!("oci://{}/tools/missing:1", registry.address)]);
    assert_eq!(r.code, 1, "{r:?}");
    let r = install(&sb, Some(&docker), &["oci://tools/echo:1"]);
    assert!(r.code == 1 && r.stderr.contains("names no registry"), "{r:?}");
    assert!(plugin_files_are_none(&sb));
}

fn plugin_files_are_none(sb: &Sandbox) -> bool {
    std::fs::read_dir(&sb.plugins).map_or(true, |d| d.count() == 0)
}

#[test]
fn upgrade_pulls_the_tag_again_and_asks_for_what_is_new() {
    let registry = Registry::start();
    let sb = Sandbox::new();
    let docker = docker_config(&sb, &registry);
    // Version 1 asks for one variable; version 2 for more.
    let version = |n: u8, requests: &str| {
        let file = sb.root.join(format!("echo-{n}.wasm"));
        let stamped = toolhost(&sb, &["stamp", ECHO, requests, "--out", &p(&file)]);
        assert_eq!(stamped.code, 0, "{stamped:?}");
        std::fs::read(file).unwrap()
    };
    let (v1, v2) = (
        version(1, r#"{"env": ["GREETING"]}"#),
        version(2, r#"{"env": ["GREETING", "LANG"], "hosts": ["example.com:443"]}"#),
    );
    let first = push(&registry, "tools/echo:stable", &v1);
    let source = format!("oci://{}/tools/echo:stable", registry.address);
    let r = install(&sb, Some(&docker), &[&source, "--yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    // Nothing new: up to date, nothing written.
    let r = install(&sb, Some(&docker), &["--upgrade", "Echo"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains(&format!("up to date:      {source} is still {first}")), "{}", r.stdout);
    // A new version under the same tag.
    let second = push(&registry, "tools/echo:stable", &v2);
    let r = install(&sb, Some(&docker), &["--upgrade", "Echo"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains(&format!("upgrading:       {first} → {second}")), "{}", r.stdout);
    assert!(r.stdout.contains("new requests:    host example.com:443, variable LANG"), "{}", r.stdout);
    assert!(!r.stdout.contains("no longer asks"), "{}", r.stdout);
    // Asked again, not at a terminal: the new requests are not granted; the
    // old grant stays and is not asked for.
    assert!(r.stdout.contains("already granted: variable GREETING"), "{}", r.stdout);
    assert!(r.stdout.contains("not granted:     host example.com:443, variable LANG"), "{}", r.stdout);
    assert_eq!(record(&sb, "Echo")["manifest"], second.as_str());
    assert_eq!(std::fs::read(sb.plugins.join("Echo.wasm")).unwrap(), v2);
    // A tool installed from a file has no tag to pull.
    let r = install(&sb, Some(&docker), &[GRANTEE, "--yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = install(&sb, Some(&docker), &["--upgrade", "Grantee"]);
    assert!(r.code == 1 && r.stderr.contains("installed from a file"), "{r:?}");
}

#[test]
fn with_a_trusted_cosign_key_only_a_component_it_signed_installs() {
    let registry = Registry::start();
    let sb = Sandbox::new();
    let docker = docker_config(&sb, &registry);
    let (signer, public) = cosign_key(3);
    let (stranger, _) = cosign_key(4);
    let config = sb.home.join(".config/toolhost");
    std::fs::create_dir_all(&config).unwrap();
    // cosign.pub appended to the trusted keys as it is.
    std::fs::write(config.join("trusted-keys"), format!("# release team\n{public}")).unwrap();
    let wasm = std::fs::read(ECHO).unwrap();
    let digest = push(&registry, "tools/echo:1.0", &wasm);
    let source = format!("oci://{}/tools/echo:1.0", registry.address);
    let refused = |why: &str| refused_echo(&sb, &docker, &source, why);
    refused("it has no cosign signature");
    // Signed by a key nobody trusts; then by the trusted key, over another
    // manifest.
    push_signature(&registry, "tools/echo", &digest, &stranger, &digest);
    refused("not made with any of the trusted cosign keys");
    let other = push(&registry, "tools/echo:0.9", &std::fs::read(GRANTEE).unwrap());
    push_signature(&registry, "tools/echo", &digest, &signer, &other);
    refused(&format!("is for the manifest {other}, not {digest}"));
    // Signed as cosign signs it.
    push_signature(&registry, "tools/echo", &digest, &signer, &digest);
    let r = install(&sb, Some(&docker), &[&source, "--yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout.contains(&format!("signature:       verified: a cosign signature of {digest} by the trusted key of")),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("trusted-keys: line 2"), "{}", r.stdout);
    // The other version is not signed: refused, though the tag's is.
    refused_as(&sb, &docker, &format!("oci://{}/tools/echo:0.9", registry.address), "it has no cosign signature");
    // Only minisign keys trusted: a registry component has no minisign
    // signature, and is refused saying which kind of key it needs.
    let minisign_key = minisign::KeyPair::generate_unencrypted_keypair().unwrap().pk.to_base64();
    std::fs::write(config.join("trusted-keys"), format!("{minisign_key}\n")).unwrap();
    refused_as(&sb, &docker, &source, "none is a cosign key");
}

/// `install SOURCE --yes` of the echo component is refused with `why`,
/// and nothing is copied.
fn refused_echo(sb: &Sandbox, docker: &PathBuf, source: &str, why: &str) {
    let r = install(sb, Some(docker), &[source, "--yes"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(why), "{}", r.stderr);
    assert!(!sb.plugins.join("Echo.wasm").exists(), "a refused install copied something");
}

fn refused_as(sb: &Sandbox, docker: &PathBuf, source: &str, why: &str) {
    let r = install(sb, Some(docker), &[source]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(why), "{}", r.stderr);
}

#[test]
fn with_trusted_sigstore_signers_only_a_bundle_they_signed_installs() {
    use toolhost_verify::sigstore::fixture::{ALICE, ISSUER, World, key_bundle};
    let registry = Registry::start();
    let sb = Sandbox::new();
    let docker = docker_config(&sb, &registry);
    // A Sigstore of the test's own: its trust root, as trusted_root.json.
    let world = World::new();
    let root = sb.root.join("trusted_root.json");
    std::fs::write(&root, world.trust_root()).unwrap();
    let config = sb.home.join(".config/toolhost");
    std::fs::create_dir_all(&config).unwrap();
    let signers = json!({"trustedPluginSigners": [{"trustRoot": p(&root), "issuer": ISSUER, "identity": ALICE}]});
    std::fs::write(config.join("settings.json"), signers.to_string()).unwrap();
    let digest = push(&registry, "tools/echo:1.0", &std::fs::read(ECHO).unwrap());
    let source = format!("oci://{}/tools/echo:1.0", registry.address);
    let refused = |why: &str| refused_echo(&sb, &docker, &source, why);
    refused("no Sigstore bundle attached");
    // Signed keyless by someone else; by Alice, with a certificate of a CA
    // the trust root does not name; by Alice, for another manifest.
    attach_bundle(&registry, "tools/echo", &digest, &world.bundle(&digest, "mallory@example.org"));
    refused("signed by mallory@example.org (issuer https://issuer.example), not alice@example.com");
    attach_bundle(&registry, "tools/echo", &digest, &world.stranger().bundle(&digest, ALICE));
    refused("does not chain to the trust root");
    let other = push(&registry, "tools/echo:0.9", &std::fs::read(GRANTEE).unwrap());
    attach_bundle(&registry, "tools/echo", &digest, &world.bundle(&other, ALICE));
    refused("does not name this manifest");
    // Signed by Alice, as cosign 3 attaches it.
    attach_bundle(&registry, "tools/echo", &digest, &world.bundle(&digest, ALICE));
    let r = install(&sb, Some(&docker), &[&source, "--yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    let said = format!(
        "signature:       verified: a Sigstore bundle of {digest} signed by alice@example.com (issuer https://issuer.example; certificate by https://ca.test; logged in https://log.test at 2026-01-01T12:00:00"
    );
    assert!(r.stdout.contains(&said), "{}", r.stdout);
    // A key-pair bundle (cosign sign --key, new bundle format) vouches when
    // its key is trusted.
    let (signer, public) = cosign_key(5);
    let grantee = push(&registry, "tools/grantee:1.0", &std::fs::read(GRANTEE).unwrap());
    attach_bundle(&registry, "tools/grantee", &grantee, &key_bundle(&grantee, &signer));
    let source = format!("oci://{}/tools/grantee:1.0", registry.address);
    refused_as(&sb, &docker, &source, "a key-pair bundle was not signed by any of the trusted cosign keys");
    std::fs::write(config.join("trusted-keys"), &public).unwrap();
    let r = install(&sb, Some(&docker), &[&source, "--yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("signed by the trusted key of"), "{}", r.stdout);
    // A trust root that is not there stops every install, naming it.
    std::fs::remove_file(&root).unwrap();
    let r = install(&sb, Some(&docker), &[&source, "--yes"]);
    assert!(r.code != 0 && r.stderr.contains(&format!("reading the trust root {}", p(&root))), "{r:?}");
}
