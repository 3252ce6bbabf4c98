use super::*;
use toolhost::grants::{DirAccess, DirRequest};

#[test]
fn every_request_is_an_item_of_its_own() {
    let requests = Allowance {
        workspace: Some(DirAccess::ReadOnly),
        directories: vec![DirRequest { path: "data".into(), access: DirAccess::ReadWrite }],
        hosts: vec!["example.com:443".into(), "*.docs.rs".into()],
        env: vec!["TOKEN".into()],
        secrets: vec!["API_KEY".into()],
        process: true,
        memory_mib: Some(64),
        timeout_ms: Some(5000),
    };
    let described: Vec<String> = items(&requests).iter().map(|a| a.describe()).collect();
    assert_eq!(
        described,
        [
            "the working directories (read-only)",
            "directory data (read-write)",
            "host example.com:443",
            "host *.docs.rs",
            "variable TOKEN",
            "secret API_KEY",
            "the process capability",
            "memory 64 MiB",
            "time 5000 ms",
        ]
    );
    let mut again = Allowance::default();
    for item in items(&requests) {
        again.add(&item);
    }
    assert_eq!(again, requests, "the items add up to the requests");
    assert!(items(&Allowance::default()).is_empty());
}

#[test]
fn a_signature_sits_beside_its_file() {
    assert_eq!(beside(Path::new("/p/tool.wasm"), "minisig"), Path::new("/p/tool.wasm.minisig"));
}
