//! Whether an operator's keys vouch for a component: its SHA-256 against
//! `--sha256`, and its signature (minisign beside a file; cosign or a
//! Sigstore bundle in a registry) against the trusted keys.

use super::*;

impl Installer<'_> {
    /// Compares `bytes` with the pinned SHA-256, saying what it found; their
    /// SHA-256.
    pub(super) fn check_hash(&self, bytes: &[u8], pinned: Option<&str>) -> Result<String, String> {
        let hash = toolhost::content_hash(bytes);
        match pinned {
            Some(pinned) if pinned != hash => {
                return Err(format!("its SHA-256 is {hash}, not {pinned} as --sha256 requires"));
            }
            Some(_) => println!("sha256:          {hash} (as pinned)"),
            None => println!("sha256:          {hash} (not pinned: --sha256 HEX checks it)"),
        }
        Ok(hash)
    }

    /// Checks `bytes` (read from `file`) against the pinned hash and, with
    /// trusted keys, against the signature beside `file` (`FILE.minisig`, or
    /// a Sigstore bundle `FILE.sigstore.json` as `cosign sign-blob --bundle`
    /// writes it); returns the minisign signature's text (if any) or why the
    /// file is refused.
    pub(super) fn vouch(
        &self,
        file: &Path,
        bytes: &[u8],
        pinned: Option<&str>,
    ) -> anyhow::Result<Result<Option<String>, String>> {
        let hash = match self.check_hash(bytes, pinned) {
            Ok(hash) => hash,
            Err(why) => return Ok(Err(why)),
        };
        let signature_file = beside(file, "minisig");
        let signature = match std::fs::read_to_string(&signature_file) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Ok(Err(format!("cannot read its signature {}: {e}", signature_file.display()))),
        };
        let bundle_file = beside(file, "sigstore.json");
        let bundle = match std::fs::File::open(&bundle_file) {
            Ok(f) => {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut std::io::Read::take(f, sigstore::MAX_BUNDLE), &mut bytes)
                    .with_context(|| format!("reading {}", bundle_file.display()))?;
                Some(bytes)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Ok(Err(format!("cannot read its bundle {}: {e}", bundle_file.display()))),
        };
        let keys = self.trusted_keys()?;
        if keys.is_empty() {
            match (&signature, &bundle) {
                (None, None) => {
                    println!("signature:       not checked: no trusted keys are configured, and it has none")
                }
                _ => println!(
                    "signature:       not checked: no trusted keys are configured ({} is not verified)",
                    if signature.is_some() { &signature_file } else { &bundle_file }.display()
                ),
            }
            return Ok(Ok(signature));
        }
        let mut why = Vec::new();
        if let Some(text) = &signature {
            if keys.minisign.is_empty() {
                why.push(format!(
                    "{} is a minisign signature, and no trusted key is a minisign key",
                    signature_file.display()
                ));
            } else {
                match verify::verify(bytes, text, &keys.minisign) {
                    Ok(verified) => {
                        println!(
                            "signature:       verified: signed with the trusted key {} ({}); trusted comment: {}",
                            verified.key.text, verified.key.origin, verified.trusted_comment
                        );
                        return Ok(Ok(signature));
                    }
                    Err(e) => why.push(format!("its signature {} {e}", signature_file.display())),
                }
            }
        }
        if let Some(bundle) = &bundle {
            if !keys.vouch_for_registries() {
                why.push(format!(
                    "{} is a Sigstore bundle, and no trusted key is a cosign key or a Sigstore signer",
                    bundle_file.display()
                ));
            } else {
                match sigstore::verify(bundle, &format!("sha256:{hash}"), &keys.cosign, &keys.sigstore) {
                    Ok(verified) => {
                        println!(
                            "signature:       verified: the Sigstore bundle {} signed by {}",
                            bundle_file.display(),
                            verified.who
                        );
                        return Ok(Ok(signature));
                    }
                    Err(e) => why.push(format!("its bundle {}: {e}", bundle_file.display())),
                }
            }
        }
        if why.is_empty() {
            return Ok(Err(format!(
                "it has no signature ({} and {} are missing), and with trusted keys configured ({}) \
                 a component is installed only signed by one of them",
                signature_file.display(),
                bundle_file.display(),
                keys.origins().join("; ")
            )));
        }
        Ok(Err(why.join("; ")))
    }

    /// The keys a component must be signed with: `trustedPluginKeys` of the
    /// user and managed settings, and the keys file of the configuration
    /// directory. A key that does not read is an error naming where it is.
    pub(super) fn trusted_keys(&self) -> anyhow::Result<Keys> {
        let mut keys = Keys::default();
        for (text, file) in &self.settings.trusted_plugin_keys {
            keys.add(text, format!("trustedPluginKeys of {file}")).map_err(anyhow::Error::msg)?;
        }
        for (signer, file) in &self.settings.trusted_plugin_signers {
            keys.sigstore.push(sigstore_signer(signer, file)?);
        }
        let file = toolhost::config_dir().join(KEYS_FILE);
        match std::fs::read_to_string(&file) {
            Ok(text) => {
                keys.extend(verify::parse_key_file(&text, &file.display().to_string()).map_err(anyhow::Error::msg)?)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("reading the trusted keys {}", file.display())),
        }
        Ok(keys)
    }

    /// The local settings were changed by the operator's own answer: if
    /// they trusted the file, it stays trusted (as "allow always" keeps it).
    pub(super) fn keep_trusted(&self, file: &Path) {
        if let Some((store, true)) = &self.settings.trust {
            let mut trusted = TrustStore::load(store);
            if let Err(e) = trusted.trust(file).and_then(|()| trusted.save(store)) {
                eprintln!(
                    "toolhost: warning: could not record {} as trusted in {}: {e}",
                    file.display(),
                    store.display()
                );
            }
        }
    }
}

/// Who vouches for the pulled component: a cosign signature beside it (the
/// `.sig` tag) by a trusted key, or a Sigstore bundle attached to it (OCI
/// referrers) by a trusted key or signer. Why none does, otherwise.
pub(super) fn vouch(pulled: &oci::Pulled, keys: &verify::Keys) -> Result<String, String> {
    let mut why = Vec::new();
    match &pulled.signatures {
        Ok(found) if found.is_empty() => {}
        Ok(found) => match cosign::verify(found, &pulled.manifest, &keys.cosign) {
            Ok(key) => {
                return Ok(format!("a cosign signature of {} by the trusted key of {}", pulled.manifest, key.origin));
            }
            Err(e) => why.push(e.to_string()),
        },
        Err(e) => why.push(format!("its cosign signatures could not be read: {e}")),
    }
    match &pulled.bundles {
        Ok(bundles) => {
            for bundle in bundles {
                match sigstore::verify(bundle, &pulled.manifest, &keys.cosign, &keys.sigstore) {
                    Ok(verified) => {
                        return Ok(format!("a Sigstore bundle of {} signed by {}", pulled.manifest, verified.who));
                    }
                    Err(e) => why.push(format!("a Sigstore bundle: {e}")),
                }
            }
        }
        Err(e) => why.push(format!("its Sigstore bundles could not be read: {e}")),
    }
    if why.is_empty() {
        return Err(format!(
            "it has no cosign signature (no {} in its repository) and no Sigstore bundle attached, and with trusted \
             keys configured a component is installed only signed by one of them",
            cosign::signature_tag(&pulled.manifest)
        ));
    }
    Err(format!("nothing attached to it vouches for it: {}", why.join("; ")))
}

/// A `trustedPluginSigners` entry of `file`, its trust root read.
pub(super) fn sigstore_signer(
    signer: &toolhost::settings::TrustedSigner,
    file: &str,
) -> anyhow::Result<sigstore::Signer> {
    let origin = format!("trustedPluginSigners of {file}");
    let root = std::fs::read_to_string(&signer.trust_root)
        .with_context(|| format!("{origin}: reading the trust root {}", signer.trust_root.display()))?;
    let root = sigstore::TrustRoot::parse(&root)
        .map_err(|e| anyhow::anyhow!("{origin}: the trust root {}: {e}", signer.trust_root.display()))?;
    let identity = match (&signer.identity, &signer.identity_regexp) {
        (Some(exact), _) => sigstore::Identity::Exact(exact.clone()),
        (None, Some(pattern)) => sigstore::Identity::pattern(pattern).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?,
        (None, None) => anyhow::bail!("{origin}: a signer names an identity or an identityRegexp"),
    };
    Ok(sigstore::Signer { origin, root, issuer: signer.issuer.clone(), identity })
}
