//! `toolhost install FILE` and `toolhost uninstall NAME`: the pinned hash,
//! signatures against trusted keys, the review, grants from the answers
//! (`--yes`, a terminal, none), the atomic copy, replacing and removing.

use crate::support::*;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use toolhost_tests::{ECHO, FILES_THIEF, GRANTEE};

/// A fresh minisign key pair: its public key (base64) and a signer of bytes
/// (the text of a `.minisig` file).
fn key_pair() -> (String, impl Fn(&[u8]) -> String) {
    let pair = minisign::KeyPair::generate_unencrypted_keypair().expect("a key pair");
    let public = pair.pk.to_base64();
    let sign = move |bytes: &[u8]| {
        let signature = minisign::sign(Some(&pair.pk), &pair.sk, std::io::Cursor::new(bytes), None, None);
        signature.expect("signing").to_string()
    };
    (public, sign)
}

/// A copy of `guest` outside the plugins directory, as if downloaded.
fn download(sb: &Sandbox, guest: &str, name: &str) -> PathBuf {
    let dir = sb.root.join("downloads");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    std::fs::copy(guest, &file).unwrap();
    file
}

/// `FILE.minisig`.
fn signature_of(file: &Path) -> PathBuf {
    PathBuf::from(format!("{}.minisig", file.display()))
}

/// The names of the files in the plugins directory, sorted.
fn plugin_files(sb: &Sandbox) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(&sb.plugins)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The user's configuration directory in `sb` (`$HOME/.config/toolhost`).
fn config_dir(sb: &Sandbox) -> PathBuf {
    let dir = sb.home.join(".config/toolhost");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn local_settings(sb: &Sandbox) -> Value {
    let file = sb.ws(".toolhost/settings.local.json");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    serde_json::from_str(&text).unwrap()
}

/// `toolhost install ARGS…` with stdin not a terminal.
fn install(sb: &Sandbox, args: &[&str]) -> Run {
    let mut all = vec!["install"];
    all.extend_from_slice(args);
    toolhost(sb, &all)
}

/// Grantee's workspace: the directories it requests, and a file to read.
fn grantee_workspace(sb: &Sandbox) {
    sb.write("data/notes.txt", "granted data");
    std::fs::create_dir_all(sb.ws("out")).unwrap();
}

#[test]
fn installs_a_file_whose_hash_matches_the_pinned_one() {
    let sb = Sandbox::new();
    let file = download(&sb, ECHO, "echo-1.0.wasm");
    let bytes = std::fs::read(&file).unwrap();
    let hash = toolhost::content_hash(&bytes);
    // Pinned in capitals, as some tools print it.
    let r = install(&sb, &[&p(&file), "--sha256", &hash.to_ascii_uppercase()]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains(&format!("sha256:          {hash} (as pinned)")), "{}", r.stdout);
    assert!(r.stdout.contains("signature:       not checked: no trusted keys are configured"), "{}", r.stdout);
    assert!(r.stdout.contains("tool:            Echo: "), "{}", r.stdout);
    assert!(r.stdout.contains("contract:        1.6.0"), "{}", r.stdout);
    assert!(r.stdout.contains("requests:        nothing"), "{}", r.stdout);
    let target = sb.plugins.join("Echo.wasm");
    assert!(r.stdout.contains(&format!("installed:       Echo as {}", target.display())), "{}", r.stdout);
    // Named after its tool, byte for byte, and nothing else left behind.
    assert_eq!(plugin_files(&sb), ["Echo.wasm"]);
    assert_eq!(std::fs::read(&target).unwrap(), bytes);
    let tools = toolhost(&sb, &["tools"]);
    assert!(tools.stdout.contains(&format!("[{}]", target.display())), "{tools:?}");
}

#[test]
fn a_file_whose_hash_differs_is_refused_and_nothing_is_copied() {
    let sb = Sandbox::new();
    let file = download(&sb, ECHO, "echo.wasm");
    let hash = toolhost::content_hash(&std::fs::read(&file).unwrap());
    let pinned = "0".repeat(64);
    let r = install(&sb, &[&p(&file), "--sha256", &pinned]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(&format!("its SHA-256 is {hash}, not {pinned} as --sha256 requires")), "{}", r.stderr);
    assert!(plugin_files(&sb).is_empty());
    // Not a hash at all: a usage error, before anything is read.
    let r = install(&sb, &[&p(&file), "--sha256", "abc"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("is not a SHA-256"), "{}", r.stderr);
}

#[test]
fn a_file_that_does_not_load_is_refused_with_the_reason() {
    let sb = Sandbox::new();
    let garbage = sb.root.join("garbage.wasm");
    std::fs::write(&garbage, "not a component").unwrap();
    let r = install(&sb, &[&p(&garbage), "--yes"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("does not load as a tool: not a WebAssembly file"), "{}", r.stderr);
    let r = install(&sb, &[&p(&sb.root.join("missing.wasm"))]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("cannot read it"), "{}", r.stderr);
    assert!(plugin_files(&sb).is_empty());
}

#[test]
fn with_a_trusted_key_only_a_good_signature_installs() {
    let sb = Sandbox::new();
    let (public, sign) = key_pair();
    let (_, sign_other) = key_pair();
    std::fs::write(
        config_dir(&sb).join("trusted-keys"),
        format!("untrusted comment: minisign public key of the release team\n{public}\n"),
    )
    .unwrap();
    let file = download(&sb, ECHO, "echo.wasm");
    let bytes = std::fs::read(&file).unwrap();

    let r = install(&sb, &[&p(&file)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("it has no signature"), "{}", r.stderr);
    assert!(r.stderr.contains("trusted-keys: line 2"), "names where the key is: {}", r.stderr);

    std::fs::write(signature_of(&file), sign_other(&bytes)).unwrap();
    let r = install(&sb, &[&p(&file)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("was made with a key that is not one of the trusted keys"), "{}", r.stderr);

    std::fs::write(signature_of(&file), sign(&bytes)).unwrap();
    let mut changed = bytes.clone();
    changed.extend_from_slice(b"\0");
    std::fs::write(&file, &changed).unwrap();
    let r = install(&sb, &[&p(&file)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("does not match the file"), "{}", r.stderr);
    assert!(plugin_files(&sb).is_empty(), "a refused install copied something");

    std::fs::write(&file, &bytes).unwrap();
    let r = install(&sb, &[&p(&file)]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout.contains(&format!("signature:       verified: signed with the trusted key {public}")),
        "{}",
        r.stdout
    );
    // The signature goes along, so the plugins directory can be checked again.
    assert_eq!(plugin_files(&sb), ["Echo.wasm", "Echo.wasm.minisig"]);
    assert_eq!(
        std::fs::read(sb.plugins.join("Echo.wasm.minisig")).unwrap(),
        std::fs::read(signature_of(&file)).unwrap()
    );
}

#[test]
fn trusted_keys_come_from_user_settings_not_from_the_workspace() {
    let sb = Sandbox::new();
    let (public, sign) = key_pair();
    let (attacker, _) = key_pair();
    let file = download(&sb, ECHO, "echo.wasm");
    // A workspace cannot make installs trust its key (nor require one).
    sb.write(".toolhost/settings.json", json!({"trustedPluginKeys": [attacker]}).to_string());
    let r = install(&sb, &[&p(&file)]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("signature:       not checked"), "{}", r.stdout);
    assert!(r.stderr.contains("trustedPluginKeys only counts in user or managed settings"), "{}", r.stderr);

    std::fs::write(config_dir(&sb).join("settings.json"), json!({"trustedPluginKeys": [public]}).to_string()).unwrap();
    let r = install(&sb, &[&p(&file)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("it has no signature"), "{}", r.stderr);
    assert!(r.stderr.contains("trustedPluginKeys of "), "{}", r.stderr);
    std::fs::write(signature_of(&file), sign(&std::fs::read(&file).unwrap())).unwrap();
    let r = install(&sb, &[&p(&file)]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("signature:       verified"), "{}", r.stdout);

    // A key that does not read stops the install, naming it.
    std::fs::write(config_dir(&sb).join("trusted-keys"), "RWQnot-a-key\n").unwrap();
    let r = install(&sb, &[&p(&file)]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("trusted-keys: line 1: `RWQnot-a-key` is not a minisign public key"), "{}", r.stderr);
}

#[test]
fn yes_grants_what_it_requests_and_the_tool_runs_with_it() {
    let sb = Sandbox::new();
    grantee_workspace(&sb);
    let r = install(&sb, &[GRANTEE, "--yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout.contains(
            "requests:        directory data (read-only), directory out (read-write), host example.com:443, \
             variable GREETING, variable NOT_GRANTED, secret API_TOKEN, memory 48 MiB, time 1500 ms"
        ),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("already granted: nothing"), "{}", r.stdout);
    assert_eq!(
        local_settings(&sb),
        json!({"toolGrants": {"Grantee": {
            "directories": [{"path": "data", "access": "read-only"}, {"path": "out", "access": "read-write"}],
            "hosts": ["example.com:443"],
            "env": ["GREETING", "NOT_GRANTED"],
            "secrets": ["API_TOKEN"],
            "memory_mib": 48,
            "timeout_ms": 1500
        }}})
    );
    // The local file toolhost wrote stays trusted: the grants count.
    let read = json!({"action": "read", "path": p(&sb.ws("data/notes.txt"))}).to_string();
    let out = toolhost_command(&sb).args(["--allow", "Grantee", "call", "Grantee", &read, "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(content_text(&v), "granted data", "{}", String::from_utf8_lossy(&out.stderr));
    let env = json!({"action": "env"}).to_string();
    let out = toolhost_command(&sb)
        .args(["--allow", "Grantee", "call", "Grantee", &env, "--json"])
        .env("GREETING", "hello")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(content_text(&v), "env: [GREETING=hello]");

    // Installing again asks for nothing more.
    let r = install(&sb, &[GRANTEE]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(!r.stdout.contains("not granted"), "{}", r.stdout);
    assert!(r.stdout.contains("replacing:       "), "{}", r.stdout);
}

#[test]
fn a_tool_importing_files_loads_once_installed_with_yes() {
    let sb = Sandbox::new();
    let victim = sb.write("victim.txt", "mine");
    let r = install(&sb, &[FILES_THIEF, "--yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("capabilities:    "), "{}", r.stdout);
    assert!(r.stdout.contains("files"), "{}", r.stdout);
    assert!(!r.stdout.contains("will not load"), "{}", r.stdout);
    assert_eq!(local_settings(&sb)["toolGrants"]["Thief"], json!({"workspace": "read-write"}));
    let r = call(&sb, "Thief", &json!({"path": p(&victim)}), &["--allow", "Thief"]);
    assert_eq!(r.assert_ok(), "done");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "pwned");
}

#[test]
fn without_a_terminal_it_installs_granting_nothing_and_says_how_to_grant() {
    let sb = Sandbox::new();
    let r = install(&sb, &[FILES_THIEF]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("not at a terminal, so nothing is asked and nothing granted"), "{}", r.stdout);
    assert!(r.stdout.contains("not granted:     the working directories (read-write)"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("warning:         Thief will not load until it is granted the working directories (read-write)"),
        "{}",
        r.stdout
    );
    assert!(!sb.ws(".toolhost/settings.local.json").exists(), "it granted something");
    assert_eq!(plugin_files(&sb), ["Thief.wasm"]);
    // Installed but not granted: the host reports it and leaves it out.
    let tools = toolhost(&sb, &["tools"]);
    assert!(tools.stderr.contains("imports the `files` capability, which is not granted"), "{tools:?}");
    assert!(!tools.stdout.contains("Thief"), "{tools:?}");
    // The JSON it prints is the grant, exactly.
    let start = r.stdout.find("\n{").expect("the grant as JSON") + 1;
    let end = start + r.stdout[start..].find("\n}").expect("the end of the JSON") + 2;
    let grant: Value = serde_json::from_str(&r.stdout[start..end]).unwrap();
    assert_eq!(grant, json!({"toolGrants": {"Thief": {"workspace": "read-write"}}}));
    let tools = toolhost(&sb, &["--settings", &grant.to_string(), "tools"]);
    assert!(tools.stdout.contains("Thief"), "{tools:?}");
}

#[test]
fn at_a_terminal_the_answers_become_the_grants() {
    let sb = Sandbox::new();
    grantee_workspace(&sb);
    let (master, slave) = openpty();
    let mut child = toolhost_command(&sb)
        .args(["install", GRANTEE])
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Typed ahead: the terminal keeps the lines until they are read, one
    // per question: choose; data yes, out no, the host no, GREETING yes,
    // NOT_GRANTED no, the secret no, memory and time yes.
    let mut typing = master.try_clone().unwrap();
    typing.write_all(b"c\ny\nn\nn\ny\nn\nn\ny\ny\n").unwrap();
    let mut reader = master.try_clone().unwrap();
    let terminal = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // Ends with EIO once the child, the last holder of the slave, exits.
        while let Ok(n @ 1..) = reader.read(&mut buf) {
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let mut stdout = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    let status = child.wait().unwrap();
    let terminal = terminal.join().unwrap();
    drop(master);
    assert!(status.success(), "{stdout}\n{terminal}");
    assert!(terminal.contains("Grantee requests, and is not granted yet:"), "{terminal}");
    assert!(terminal.contains("  5. variable NOT_GRANTED"), "{terminal}");
    assert!(terminal.contains("Grant Grantee all of this? [y] all, [n] none, [c] choose one by one"), "{terminal}");
    assert!(terminal.contains("  grant directory out (read-write)? [y/N]"), "{terminal}");
    assert_eq!(
        local_settings(&sb)["toolGrants"]["Grantee"],
        json!({"directories": [{"path": "data", "access": "read-only"}], "env": ["GREETING"], "memory_mib": 48, "timeout_ms": 1500})
    );
    assert!(
        stdout.contains(
            "not granted:     directory out (read-write), host example.com:443, variable NOT_GRANTED, secret API_TOKEN"
        ),
        "{stdout}"
    );
}

#[test]
fn a_component_of_the_same_tool_is_replaced_and_another_tools_file_is_not() {
    let sb = Sandbox::new();
    let by_hand = sb.install(ECHO);
    std::fs::write(signature_of(&by_hand), "a stale signature").unwrap();
    let r = install(&sb, &[ECHO]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains(&format!("replacing:       {} (the installed Echo)", by_hand.display())), "{}", r.stdout);
    assert_eq!(plugin_files(&sb), ["Echo.wasm"], "two components of one tool would clash");

    // A file of that name holding another tool is left alone.
    std::fs::copy(GRANTEE, sb.plugins.join("Echo.wasm")).unwrap();
    let r = install(&sb, &[ECHO]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("Echo.wasm holds another tool, `Grantee`"), "{}", r.stderr);
    assert_eq!(std::fs::read(sb.plugins.join("Echo.wasm")).unwrap(), std::fs::read(GRANTEE).unwrap());
}

#[test]
fn installing_compiles_into_the_cache() {
    let sb = Sandbox::new();
    let cache = sb.root.join("cache");
    let out = toolhost_command(&sb).env("TOOLHOST_CACHE_DIR", &cache).args(["install", ECHO]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Its description is saved beside its compiled form, so the next start
    // instantiates nothing to know it.
    let components = cache.join("components");
    let saved: Vec<String> = std::fs::read_dir(&components)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".json"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .filter(|text| text.contains(r#""name":"Echo""#))
        .collect();
    assert_eq!(saved.len(), 1, "no saved description of Echo in {}", components.display());
}

#[test]
fn uninstall_removes_the_tool_and_its_grants() {
    let sb = Sandbox::new();
    grantee_workspace(&sb);
    sb.write(".toolhost/settings.local.json", json!({"permissions": {"allow": ["Read"]}}).to_string());
    // The local file was there before and is not trusted: the grants are
    // written, and count once it is.
    let r = install(&sb, &[GRANTEE, "--yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("is not trusted"), "{}", r.stdout);
    assert!(r.stdout.contains("run `toolhost trust`"), "{}", r.stdout);
    assert_eq!(install(&sb, &[ECHO]).code, 0);
    assert!(toolhost(&sb, &["tools"]).stdout.contains("Grantee"));

    let r = toolhost(&sb, &["uninstall", "Grantee"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains(&format!("removed Grantee: {}", sb.plugins.join("Grantee.wasm").display())), "{r:?}");
    assert!(r.stdout.contains("removed toolGrants.Grantee from "), "{r:?}");
    assert_eq!(plugin_files(&sb), ["Echo.wasm"]);
    assert_eq!(local_settings(&sb), json!({"permissions": {"allow": ["Read"]}}));
    let tools = toolhost(&sb, &["tools"]);
    assert!(!tools.stdout.contains("Grantee") && tools.stdout.contains("Echo"), "{tools:?}");

    let r = toolhost(&sb, &["uninstall", "Grantee"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("no installed tool is called Grantee"), "{}", r.stderr);
    assert!(r.stderr.contains("holds Echo (Echo.wasm)"), "{}", r.stderr);

    // --keep-grants leaves them; a file's name works as well as its tool's.
    assert_eq!(install(&sb, &[GRANTEE, "--yes"]).code, 0);
    std::fs::rename(sb.plugins.join("Grantee.wasm"), sb.plugins.join("grantee-2.wasm")).unwrap();
    let r = toolhost(&sb, &["uninstall", "grantee-2", "--keep-grants"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(plugin_files(&sb), ["Echo.wasm"]);
    assert!(local_settings(&sb)["toolGrants"]["Grantee"].is_object());
}

#[test]
fn a_built_in_cannot_be_uninstalled() {
    let sb = Sandbox::new();
    let r = toolhost(&sb, &["uninstall", "Read"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("Read is a built-in tool, which cannot be uninstalled"), "{}", r.stderr);
    assert!(toolhost(&sb, &["tools"]).stdout.contains("Read"));
}

#[test]
fn a_sigstore_bundle_beside_the_file_vouches_when_its_signer_is_trusted() {
    use toolhost_verify::sigstore::fixture::{ALICE, ISSUER, World};
    let sb = Sandbox::new();
    let world = World::new();
    let root = sb.root.join("trusted_root.json");
    std::fs::write(&root, world.trust_root()).unwrap();
    let signers = json!({"trustedPluginSigners": [{"trustRoot": p(&root), "issuer": ISSUER,
        "identityRegexp": "alice@example\\.(com|org)"}]});
    std::fs::write(config_dir(&sb).join("settings.json"), signers.to_string()).unwrap();
    let file = download(&sb, ECHO, "echo.wasm");
    let digest = format!("sha256:{}", toolhost::content_hash(&std::fs::read(&file).unwrap()));
    let bundle = PathBuf::from(format!("{}.sigstore.json", p(&file)));
    let refused = |why: &str| {
        let r = install(&sb, &[&p(&file)]);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(r.stderr.contains(why), "{}", r.stderr);
        assert!(plugin_files(&sb).is_empty(), "a refused install copied something");
    };
    refused("echo.wasm.sigstore.json are missing");
    // Signed by someone else, or for other bytes.
    std::fs::write(&bundle, world.message_bundle(&digest, "mallory@example.com").to_string()).unwrap();
    refused("signed by mallory@example.com");
    let other = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
    std::fs::write(&bundle, world.message_bundle(other, ALICE).to_string()).unwrap();
    refused("signs the message sha256:2222");
    // As `cosign sign-blob --bundle echo.wasm.sigstore.json` writes it.
    std::fs::write(&bundle, world.message_bundle(&digest, ALICE).to_string()).unwrap();
    let r = install(&sb, &[&p(&file)]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("signature:       verified: the Sigstore bundle"), "{}", r.stdout);
    assert!(r.stdout.contains("signed by alice@example.com (issuer https://issuer.example"), "{}", r.stdout);
}
