//! Pulling a tool component published as an OCI artifact, the way the
//! Bytecode Alliance's wasm-pkg tools (`wkg oci push`) and Wassette publish
//! them: an image manifest whose one wasm layer is the component.
//!
//! Credentials, first found wins: `TOOLHOST_OCI_USERNAME` and
//! `TOOLHOST_OCI_PASSWORD`; the containers auth file (podman, skopeo:
//! `REGISTRY_AUTH_FILE`, else `$XDG_RUNTIME_DIR/containers/auth.json`); the
//! docker config (`$DOCKER_CONFIG/config.json`, else
//! `~/.docker/config.json`, with its credential helpers); else anonymous.
//! Registries on a loopback address are spoken to over plain HTTP (as
//! docker does); every other over HTTPS.
//!
//! Every reply is bounded ([`registry`]): a manifest or a list at 4 MiB, a
//! token at 64 KiB, the component at the size its manifest declares (at
//! most 512 MiB), signatures and bundles at their own caps, all counted as
//! they arrive; the whole pull ends by its deadline (`--pull-timeout`,
//! [`PULL_TIMEOUT`] unless set), and its progress is shown on stderr.

mod error;
mod progress;
mod registry;

pub use error::{PullError, ReferenceError};

use oci_client::Reference;
use oci_client::manifest::{OciDescriptor, OciImageIndex, OciManifest};
use progress::Progress;
use registry::{Credentials, MANIFESTS, Repository};
use std::time::Duration;
use toolhost_verify::cosign::{self, Found};
use toolhost_verify::sigstore;

/// How an OCI reference is written on the command line.
pub const SCHEME: &str = "oci://";

/// The media types of a layer that is a wasm component: `application/wasm`
/// (the CNCF wasm artifact layout, as wkg and Wassette push it), and the
/// older layouts of wasm-to-oci and early wasm-pkg tools.
const WASM_LAYERS: [&str; 3] = [
    "application/wasm",
    "application/vnd.wasm.content.layer.v1+wasm",
    "application/vnd.bytecodealliance.wasm.component.layer.v0+wasm",
];

/// The largest component pulled: a registry cannot make the host hold more.
const MAX_COMPONENT: u64 = 512 << 20;
/// The most bundles read for one manifest.
const MAX_BUNDLES: usize = 16;
/// The largest signed payload read (cosign's are a few hundred bytes).
const MAX_PAYLOAD: u64 = 64 << 10;
/// How long a whole pull may take unless `--pull-timeout` says otherwise.
pub const PULL_TIMEOUT: Duration = Duration::from_secs(600);

/// A component pulled from a registry.
pub struct Pulled {
    /// The component's bytes, checked against the layer's digest.
    pub bytes: Vec<u8>,
    /// `oci://REGISTRY/REPOSITORY[:TAG][@DIGEST]`, as given.
    pub source: String,
    /// The digest of the manifest pulled (what `@sha256:…` pins).
    pub manifest: String,
    /// Where the credentials came from ("anonymous" when none).
    pub credentials: String,
    /// The cosign signatures kept beside the manifest (none is no
    /// error), or why they could not be read.
    pub signatures: Result<Vec<Found>, String>,
    /// The Sigstore bundles attached to the manifest (OCI referrers).
    pub bundles: Result<Vec<Vec<u8>>, String>,
}

/// The reference in `source` when it is an `oci://` one: `None` for a
/// file, else the reference or why it does not parse.
pub fn parse(source: &str) -> Option<Result<Reference, ReferenceError>> {
    let rest = source.strip_prefix(SCHEME)?;
    Some(match rest.parse::<Reference>() {
        // A reference without a registry would mean docker.io: say it.
        Ok(_) if !rest.split('/').next().is_some_and(|first| first.contains(['.', ':']) || first == "localhost") => {
            Err(ReferenceError::NoRegistry { source: source.to_string() })
        }
        Ok(reference) => Ok(reference),
        Err(e) => Err(ReferenceError::Malformed { source: source.to_string(), why: e.to_string() }),
    })
}

/// Pulls the component `reference` names within `timeout`, or says why it
/// cannot.
pub fn pull(source: &str, reference: &Reference, timeout: Duration) -> Result<Pulled, PullError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| PullError::Client(format!("cannot start the network client: {e}")))?;
    runtime.block_on(pull_async(source, reference, timeout))
}

async fn pull_async(source: &str, reference: &Reference, timeout: Duration) -> Result<Pulled, PullError> {
    // ring, as the host's other TLS client has it; already set is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let registry = reference.resolve_registry().to_string();
    let (auth, credentials) = credentials(&registry).map_err(PullError::Credentials)?;
    let mut repository = Repository::new(&registry, reference.repository(), loopback(&registry), auth, timeout)
        .map_err(PullError::Client)?;
    let failed =
        |why: String| PullError::Registry { registry: registry.clone(), credentials: credentials.clone(), why };
    let asked = reference.digest().or(reference.tag()).unwrap_or("latest");
    let (manifest, digest) = repository
        .manifest(asked, MANIFESTS)
        .await
        .map_err(failed)?
        .ok_or_else(|| failed(format!("the registry has no manifest {asked} in {}", reference.repository())))?;
    if let Some(pinned) = reference.digest()
        && pinned != digest
    {
        return Err(PullError::OtherDigest { answered: digest, pinned: pinned.to_string() });
    }
    let manifest: OciManifest =
        serde_json::from_slice(&manifest).map_err(|e| failed(format!("the manifest is not one ({e})")))?;
    let image = match manifest {
        OciManifest::Image(image) => image,
        OciManifest::ImageIndex(_) => {
            return Err(PullError::ImageIndex { source: source.to_string() });
        }
    };
    let layer = wasm_layer(&image.layers).map_err(PullError::Layers)?;
    let size = u64::try_from(layer.size).map_err(|_| PullError::NegativeSize(layer.size))?;
    if size > MAX_COMPONENT {
        return Err(PullError::TooLarge { size, max: MAX_COMPONENT });
    }
    let mut progress = Progress::new();
    let bytes = repository
        .blob(&layer.digest, size, MAX_COMPONENT, "the component", Some(&mut progress))
        .await
        .map_err(failed)?;
    let signatures = signatures(&mut repository, &digest).await;
    let bundles = bundles(&mut repository, &digest).await;
    Ok(Pulled { bytes, source: source.to_string(), manifest: digest, credentials, signatures, bundles })
}

/// The cosign signatures of the manifest `digest`, from the tag cosign keeps
/// them under in the same repository.
async fn signatures(repository: &mut Repository, digest: &str) -> Result<Vec<Found>, String> {
    let tag = cosign::signature_tag(digest);
    let manifest = match repository.manifest(&tag, MANIFESTS).await {
        Ok(Some((manifest, _))) => manifest,
        Ok(None) => return Ok(Vec::new()),
        Err(e) => return Err(format!("reading {tag} failed: {e}")),
    };
    let manifest = match serde_json::from_slice(&manifest) {
        Ok(OciManifest::Image(manifest)) => manifest,
        Ok(OciManifest::ImageIndex(_)) => return Err(format!("{tag} is an image index, not cosign signatures")),
        Err(e) => return Err(format!("{tag} is not a manifest ({e})")),
    };
    let mut found = Vec::new();
    for layer in manifest.layers.iter().filter(|l| l.media_type == cosign::SIMPLE_SIGNING) {
        let Some(signature) = layer.annotations.as_ref().and_then(|a| a.get(cosign::SIGNATURE_ANNOTATION)) else {
            continue;
        };
        let payload = small_blob(repository, layer, MAX_PAYLOAD, &format!("a signed payload of {tag}")).await?;
        found.push(Found { payload, signature: signature.clone() });
    }
    Ok(found)
}

/// The Sigstore bundles attached to the manifest `digest` (OCI referrers:
/// the registry's API, else the `sha256-HEX` tag cosign keeps for a registry
/// without it), as cosign 3 attaches them.
async fn bundles(repository: &mut Repository, digest: &str) -> Result<Vec<Vec<u8>>, String> {
    let index = match repository.referrers(digest).await {
        Ok(Some(index)) => index,
        Ok(None) => return Ok(Vec::new()),
        Err(e) => return Err(format!("listing what refers to {digest} failed: {e}")),
    };
    let index: OciImageIndex =
        serde_json::from_slice(&index).map_err(|e| format!("the list of what refers to {digest} is not one ({e})"))?;
    let mut found = Vec::new();
    let attached = index.manifests.iter().filter(|m| m.artifact_type.as_deref() == Some(sigstore::BUNDLE_ARTIFACT));
    for entry in attached.take(MAX_BUNDLES) {
        let manifest = match repository.manifest(&entry.digest, MANIFESTS).await {
            Ok(Some((manifest, _))) => manifest,
            Ok(None) => continue,
            Err(e) => return Err(format!("reading the bundle manifest {} failed: {e}", entry.digest)),
        };
        let Ok(OciManifest::Image(manifest)) = serde_json::from_slice(&manifest) else { continue };
        for layer in manifest.layers.iter().filter(|l| l.media_type == sigstore::BUNDLE_ARTIFACT) {
            found.push(small_blob(repository, layer, sigstore::MAX_BUNDLE, &format!("a bundle of {digest}")).await?);
        }
    }
    Ok(found)
}

/// The blob `layer` (`what`, in messages: "a bundle of sha256:…"), of at
/// most `max` bytes, checked against its digest.
async fn small_blob(
    repository: &mut Repository,
    layer: &OciDescriptor,
    max: u64,
    what: &str,
) -> Result<Vec<u8>, String> {
    let size = u64::try_from(layer.size).unwrap_or(u64::MAX);
    repository.blob(&layer.digest, size, max, what, None).await.map_err(|e| format!("reading {what} failed: {e}"))
}

/// The manifest's one wasm layer.
fn wasm_layer(layers: &[OciDescriptor]) -> Result<&OciDescriptor, String> {
    let wasm: Vec<&OciDescriptor> = layers.iter().filter(|l| WASM_LAYERS.contains(&l.media_type.as_str())).collect();
    match wasm.as_slice() {
        [one] => Ok(one),
        [] => {
            let types: Vec<&str> = layers.iter().map(|l| l.media_type.as_str()).collect();
            Err(format!(
                "it holds no wasm component: its layers are {} (a component's layer is `application/wasm`)",
                if types.is_empty() { "none".into() } else { types.join(", ") }
            ))
        }
        _ => Err(format!("it holds {} wasm layers, and a tool is one component", wasm.len())),
    }
}

/// Whether `registry` (`HOST[:PORT]`) is on a loopback address.
fn loopback(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => registry.rsplit_once(':').map_or(registry, |(host, _)| host),
    };
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The credentials for `registry`, and where they came from.
fn credentials(registry: &str) -> Result<(Credentials, String), String> {
    let user = std::env::var("TOOLHOST_OCI_USERNAME").ok().filter(|v| !v.is_empty());
    let password = std::env::var("TOOLHOST_OCI_PASSWORD").ok().filter(|v| !v.is_empty());
    match (user, password) {
        (Some(user), Some(password)) => {
            return Ok((Credentials::Basic { user, password }, "credentials from TOOLHOST_OCI_USERNAME".into()));
        }
        (None, None) => {}
        _ => return Err("set both TOOLHOST_OCI_USERNAME and TOOLHOST_OCI_PASSWORD, or neither".into()),
    }
    // Docker keeps Docker Hub's credentials under its old address.
    let server = if matches!(registry, "docker.io" | "index.docker.io" | "registry-1.docker.io") {
        "https://index.docker.io/v1/"
    } else {
        registry
    };
    let found = [
        ("the containers auth file", docker_credential::get_podman_credential(server)),
        ("the docker config", docker_credential::get_credential(server)),
    ];
    for (from, credential) in found {
        use docker_credential::{CredentialRetrievalError as E, DockerCredential};
        match credential {
            Ok(DockerCredential::UsernamePassword(user, password)) => {
                return Ok((Credentials::Basic { user, password }, format!("credentials from {from}")));
            }
            Ok(DockerCredential::IdentityToken(token)) => {
                return Ok((Credentials::Identity(token), format!("a token from {from}")));
            }
            Err(E::ConfigNotFound | E::ConfigReadError | E::NoCredentialConfigured) => {}
            Err(e) => return Err(format!("reading the credentials for {registry} from {from} failed: {e}")),
        }
    }
    Ok((Credentials::Anonymous, "anonymous".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_name_a_registry() {
        let r = parse("oci://ghcr.io/owner/tool:1.0").unwrap().unwrap();
        assert_eq!((r.registry(), r.repository(), r.tag()), ("ghcr.io", "owner/tool", Some("1.0")));
        let r = parse(
            "oci://127.0.0.1:5000/t/echo@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert!(r.digest().is_some_and(|d| d.starts_with("sha256:0123")));
        assert!(parse("oci://localhost/echo:1").unwrap().is_ok());
        let no_registry = parse("oci://owner/tool:1").unwrap().unwrap_err();
        assert_eq!(no_registry, ReferenceError::NoRegistry { source: "oci://owner/tool:1".into() });
        assert!(no_registry.to_string().contains("names no registry"), "{no_registry}");
        let malformed = parse("oci://ghcr.io/Bad Name").unwrap().unwrap_err();
        assert!(matches!(malformed, ReferenceError::Malformed { .. }), "{malformed:?}");
        assert!(malformed.to_string().contains("not an OCI reference"), "{malformed}");
        assert!(parse("tool.wasm").is_none());
    }

    #[test]
    fn loopback_registries_are_told_apart() {
        for yes in ["localhost", "localhost:5000", "127.0.0.1:5000", "127.1.2.3", "[::1]:5000"] {
            assert!(loopback(yes), "{yes}");
        }
        for no in ["ghcr.io", "10.0.0.1:5000", "localhost.example.com", "[2001:db8::1]:443"] {
            assert!(!loopback(no), "{no}");
        }
    }

    #[test]
    fn the_one_wasm_layer_is_the_component() {
        let layer = |media_type: &str| OciDescriptor { media_type: media_type.into(), ..OciDescriptor::default() };
        let layers = [layer("application/vnd.example.policy+yaml"), layer("application/wasm")];
        assert_eq!(wasm_layer(&layers).unwrap().media_type, "application/wasm");
        assert!(wasm_layer(&[layer("application/vnd.oci.image.layer.v1.tar+gzip")]).unwrap_err().contains("no wasm"));
        assert!(wasm_layer(&[layer("application/wasm"), layer("application/wasm")]).unwrap_err().contains("2 wasm"));
    }
}
