//! Signatures of tools, checked before a tool is installed, in this process
//! (no external program): minisign signatures of component files
//! ([`minisign`]), cosign key-pair signatures of components pulled from OCI
//! registries ([`cosign`]), and Sigstore bundles attached to them
//! ([`sigstore`]: key-pair or keyless, against a trust root, offline),
//! against the keys and signers the operator trusts. What
//! they read comes from a tool's author or a registry, so both are fuzzed
//! (`fuzz/`, target `signatures`).

pub mod cosign;
pub mod minisign;
pub mod sigstore;
