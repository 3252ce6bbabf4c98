//! Capability grants: a third-party tool gets what it requested (its
//! `toolhost:requests` section) and the operator granted (`toolGrants`),
//! and nothing else: no other directory, no escape by `..` or symlinks, no
//! other variable; its memory and time are its own.

use crate::support::*;
use serde_json::{Value, json};
use toolhost_tests::GRANTEE;

fn workspace() -> Sandbox {
    let sb = Sandbox::new();
    sb.install(GRANTEE);
    for (path, text) in [("data/notes.txt", "granted data"), ("other/private.txt", "not granted")] {
        std::fs::create_dir_all(sb.ws(path).parent().unwrap()).unwrap();
        std::fs::write(sb.ws(path), text).unwrap();
    }
    std::fs::create_dir_all(sb.ws("out")).unwrap();
    std::os::unix::fs::symlink(sb.ws("other"), sb.ws("data/escape")).unwrap();
    sb
}

fn grant() -> String {
    json!({"toolGrants": {"Grantee": {
        "directories": [{"path": "data", "access": "read-only"}, {"path": "out", "access": "read-write"}],
        "env": ["GREETING"],
    }}})
    .to_string()
}

fn grantee(sb: &Sandbox, input: Value, settings: Option<&str>) -> String {
    let mut args = vec!["--allow", "Grantee"];
    if let Some(s) = settings {
        args.extend(["--settings", s]);
    }
    let input = input.to_string();
    let mut cmd = toolhost_command(sb);
    cmd.args(&args).args(["call", "Grantee", &input, "--json"]);
    cmd.env("GREETING", "hello").env("NOT_GRANTED", "a secret");
    let out = cmd.output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    });
    content_text(&v)
}

#[test]
fn without_a_grant_a_tool_gets_nothing_it_requested() {
    let sb = workspace();
    let text = grantee(&sb, json!({"action": "read", "path": p(&sb.ws("data/notes.txt"))}), None);
    assert!(text.starts_with("refused"), "{text}");
    // The error names the exact grants the tool lacks.
    let data = p(&sb.ws("data"));
    assert!(
        text.contains(&format!("Grantee requested what it was not granted: directory {data} (read-only);")),
        "{text}"
    );
    assert!(text.contains("under toolGrants.Grantee in a settings file"), "{text}");
    let text = grantee(&sb, json!({"action": "env"}), None);
    assert_eq!(text, "env: []");
}

#[test]
fn a_tool_gets_requested_and_granted_and_no_more() {
    let sb = workspace();
    let settings = grant();
    let s = Some(settings.as_str());
    let read = |path: &str| grantee(&sb, json!({"action": "read", "path": path}), s);
    assert_eq!(read(&p(&sb.ws("data/notes.txt"))), "granted data");
    for escape in [
        p(&sb.ws("other/private.txt")),
        format!("{}/../other/private.txt", p(&sb.ws("data"))),
        p(&sb.ws("data/escape/private.txt")),
        "/etc/passwd".to_string(),
    ] {
        let text = read(&escape);
        assert!(text.starts_with("refused"), "{escape}: {text}");
    }
    // Read-only where granted read-only; read-write where granted so.
    let write = |path: &str| grantee(&sb, json!({"action": "write", "path": path}), s);
    assert!(write(&p(&sb.ws("data/new.txt"))).starts_with("refused"));
    assert!(!sb.ws("data/new.txt").exists());
    assert_eq!(write(&p(&sb.ws("out/new.txt"))), "wrote");
    assert_eq!(std::fs::read_to_string(sb.ws("out/new.txt")).unwrap(), "written by Grantee");
    // Only the granted variable, with the host's value.
    assert_eq!(grantee(&sb, json!({"action": "env"}), s), "env: [GREETING=hello]");

    // `tools` shows what it requests, what it got and what it lacks.
    let tools = toolhost(&sb, &["--settings", &settings, "tools"]);
    let out = &tools.stdout;
    assert!(out.contains("requests:      directory data (read-only), directory out (read-write), host example.com:443, variable GREETING, variable NOT_GRANTED, secret API_TOKEN, memory 48 MiB, time 1500 ms"), "{out}");
    assert!(out.contains(&format!("granted:       directory {} (read-only), directory {} (read-write), variable GREETING, memory 48 MiB, time 1500 ms", p(&sb.ws("data")), p(&sb.ws("out")))), "{out}");
    assert!(out.contains("not granted:   variable NOT_GRANTED; secret API_TOKEN; host example.com:443"), "{out}");
    assert!(out.contains("toolGrants.Grantee"), "{out}");
}

#[test]
fn a_tool_runs_within_the_memory_and_time_it_requested() {
    let sb = workspace();
    // Requested 48 MiB and 1.5 s, not granted more: at most the defaults,
    // and no more than it asked for.
    assert_eq!(grantee(&sb, json!({"action": "alloc", "amount": 8}), None), "allocated 8 MiB");
    let text = grantee(&sb, json!({"action": "alloc", "amount": 100}), None);
    assert!(text.contains("exceeded its memory limit of 48 MiB"), "{text}");
    let text = grantee(&sb, json!({"action": "sleep", "amount": 5000}), None);
    assert!(text.contains("timed out after 1500 ms"), "{text}");
    // Granted less than it asked: the grant wins.
    let less = json!({"toolGrants": {"Grantee": {"timeout_ms": 300}}}).to_string();
    let text = grantee(&sb, json!({"action": "sleep", "amount": 5000}), Some(&less));
    assert!(text.contains("timed out after 300 ms"), "{text}");
}

#[test]
fn a_workspace_file_grants_nothing_until_trusted() {
    let sb = workspace();
    std::fs::create_dir_all(sb.ws(".toolhost")).unwrap();
    std::fs::write(sb.ws(".toolhost/settings.json"), grant()).unwrap();
    let notes = p(&sb.ws("data/notes.txt"));
    let text = grantee(&sb, json!({"action": "read", "path": notes}), None);
    assert!(text.starts_with("refused"), "{text}");
    let tools = toolhost(&sb, &["tools"]);
    assert!(tools.stderr.contains("toolGrants"), "the warning names what was ignored: {}", tools.stderr);
    let trust = toolhost(&sb, &["trust"]);
    assert_eq!(trust.code, 0, "{trust:?}");
    assert!(trust.stdout.contains("toolGrants Grantee: directory data (read-only)"), "{}", trust.stdout);
    assert_eq!(grantee(&sb, json!({"action": "read", "path": notes}), None), "granted data");
}

#[test]
fn every_result_says_what_the_call_used() {
    let sb = workspace();
    let out = toolhost(&sb, &["--allow", "Grantee", "call", "Grantee", r#"{"action":"alloc","amount":8}"#, "--json"]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let usage = &v["usage"];
    assert!(usage["peak_memory_bytes"].as_u64().unwrap() >= 8 << 20, "{v}");
    assert_eq!(usage["output_bytes"], json!("allocated 8 MiB".len()), "{v}");
    // One thread: its CPU time is within the wall time (two clocks, so a
    // millisecond of leeway).
    assert!(usage["cpu_us"].as_u64().unwrap() <= usage["wall_us"].as_u64().unwrap() + 1_000, "{v}");
    assert!(usage["cpu_us"].as_u64().unwrap() > 0, "filling 8 MiB takes CPU: {v}");
    // `run` writes it with each result.
    let mut child = spawn_piped(&sb, &["--allow", "Grantee", "run"]);
    use std::io::Write as _;
    let line = json!({"type": "tool_use", "id": "u", "name": "Grantee", "input": {"action": "env"}});
    writeln!(child.stdin.take().unwrap(), "{line}").unwrap();
    let out = child.wait_with_output().unwrap();
    let result: Value = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["usage"]["output_bytes"], json!("env: []".len()), "{result}");
}

#[test]
fn the_working_directories_and_the_process_are_granted_only_when_asked_and_granted() {
    use toolhost_tests::{FILES_THIEF, PROCESS_THIEF};
    let sb = Sandbox::new();
    sb.install(FILES_THIEF);
    sb.install(PROCESS_THIEF);
    let victim = sb.write("victim.txt", "original");
    // Without a grant both are left out at load, with the request that
    // would ask for what they import.
    let r = toolhost(&sb, &["tools"]);
    assert!(!r.stdout.contains("Thief") && !r.stdout.contains("Spawner"), "{r:?}");
    assert!(r.stderr.contains(r#"with `"workspace": "read-write"` in its requests"#), "{r:?}");
    assert!(r.stderr.contains(r#"with `"process": true` in its requests"#), "{r:?}");

    let settings =
        json!({"toolGrants": {"Thief": {"workspace": "read-write"}, "Spawner": {"process": true}}}).to_string();
    let r = toolhost(&sb, &["--settings", &settings, "tools"]);
    assert!(r.stdout.contains("granted:       the working directories (read-write)"), "{r:?}");
    assert!(r.stdout.contains("granted:       the process capability"), "{r:?}");
    // Granted the working directories, it writes inside them and nowhere else.
    let thief = |path: &std::path::Path| {
        call(&sb, "Thief", &json!({"path": p(path)}), &["--settings", &settings, "--allow", "Thief"])
    };
    thief(&victim).assert_ok();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "pwned");
    let outside = sb.root.join("outside.txt");
    std::fs::write(&outside, "safe").unwrap();
    let r = thief(&outside);
    assert!(r.is_error(), "{r:?}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "safe");
    // Granted the process capability, it starts commands, under its own
    // rules: a deny rule for it holds (it declares no command field, so
    // `Spawner(touch:*)` cannot be read as a command rule and forbids every
    // call).
    let made = sb.ws("spawned.txt");
    let spawn = |extra: &[&str]| {
        let input = json!({"command": format!("touch {}", p(&made))});
        let mut args = vec!["--settings", settings.as_str(), "--allow", "Spawner"];
        args.extend_from_slice(extra);
        call(&sb, "Spawner", &input, &args)
    };
    let r = spawn(&["--deny", "Spawner(touch:*)"]);
    assert!(r.is_error() && !made.exists(), "{r:?}");
    spawn(&[]).assert_ok();
    assert!(made.exists());
}

/// The `search` capability (the host's ripgrep) reaches only what the call
/// may read: the granted working directories, not a path outside them, not
/// through a symlink, not what a deny rule hides.
#[test]
fn the_search_capability_stays_inside_what_the_call_may_read() {
    use toolhost_tests::FILES_THIEF;
    let sb = Sandbox::new();
    sb.install(FILES_THIEF);
    sb.write("src/mine.txt", "needle inside\n");
    sb.write("secret/key.txt", "needle secret\n");
    let outside = sb.root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("loot.txt"), "needle outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, sb.ws("door")).unwrap();
    std::os::unix::fs::symlink(outside.join("loot.txt"), sb.ws("src/loot-link.txt")).unwrap();
    let settings = json!({"toolGrants": {"Thief": {"workspace": "read-write"}}}).to_string();
    let search = |path: &std::path::Path| {
        let input = json!({"path": p(path), "search": "needle"});
        call(&sb, "Thief", &input, &["--settings", &settings, "--allow", "Thief", "--deny", "Read(./secret/**)"])
    };
    let found = search(&sb.ws(""));
    let text = found.assert_ok();
    assert!(text.contains("needle inside"), "{found:?}");
    assert!(!text.contains("outside"), "symlinks are not followed: {found:?}");
    assert!(!text.contains("needle secret"), "what a deny rule hides is skipped: {found:?}");
    for escape in [outside.clone(), sb.ws("door"), sb.ws("src/loot-link.txt"), sb.ws("src/../../outside")] {
        let r = search(&escape);
        assert!(r.is_error() && r.text().contains("outside the directories this call may read"), "{escape:?}: {r:?}");
    }
}

/// `toolhost secret set TOOL NAME`, the value on standard input.
fn set_secret(sb: &Sandbox, tool: &str, name: &str, value: &str) -> std::process::Output {
    set_secret_with(sb, tool, name, value, |_| {})
}

/// [`set_secret`], the command changed by `change` first.
fn set_secret_with(
    sb: &Sandbox,
    tool: &str,
    name: &str,
    value: &str,
    change: impl FnOnce(&mut std::process::Command),
) -> std::process::Output {
    use std::io::Write as _;
    let mut cmd = toolhost_command(sb);
    change(&mut cmd);
    let mut child = cmd
        .args(["secret", "set", tool, name])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(format!("{value}\n").as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_granted_secret_reaches_its_tool_as_a_variable_and_never_comes_back_out() {
    let sb = workspace();
    let token = "tok-5e3c8a1f9b2d";
    let out = set_secret(&sb, "Grantee", "API_TOKEN", token);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Kept outside the workspace, readable by the user alone.
    let file = sb.home.join(".config/toolhost/secrets.json");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let list = toolhost(&sb, &["secret", "list"]);
    assert_eq!(list.stdout, "Grantee API_TOKEN file\n");
    assert!(!list.stdout.contains(token) && !String::from_utf8_lossy(&out.stdout).contains(token));
    // Stored but not granted: the tool does not get it.
    assert_eq!(grantee(&sb, json!({"action": "env"}), Some(&grant())), "env: [GREETING=hello]");
    // Granted: it gets it under its name, and what it echoes is masked.
    let audit = sb.root.join("audit.jsonl");
    let settings =
        json!({"auditLog": p(&audit), "toolGrants": {"Grantee": {"env": ["GREETING"], "secrets": ["API_TOKEN"]}}});
    std::fs::write(sb.home.join(".config/toolhost/settings.json"), settings.to_string()).unwrap();
    let mut cmd = toolhost_command(&sb);
    cmd.args(["--allow", "Grantee", "call", "Grantee", r#"{"action": "env"}"#, "--json"]);
    cmd.env("GREETING", "hello").env("RUST_LOG", "toolhost=trace");
    let out = cmd.output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    assert_eq!(content_text(&v), "env: [API_TOKEN=[secret API_TOKEN],GREETING=hello]");
    let tools = toolhost(&sb, &["tools"]);
    assert!(tools.stdout.contains("granted:       variable GREETING, secret API_TOKEN"), "{}", tools.stdout);
    let audit = std::fs::read_to_string(&audit).unwrap();
    assert!(audit.contains("Grantee"), "{audit}");
    for (what, text) in [("the result", &*stdout), ("the tracing output", &*stderr), ("the audit log", &audit)] {
        assert!(!text.contains(token), "the secret's value is in {what}: {text}");
    }
    // Removed: gone from the store and from the tool.
    assert_eq!(toolhost(&sb, &["secret", "rm", "Grantee", "API_TOKEN"]).code, 0);
    assert_eq!(toolhost(&sb, &["secret", "list"]).stdout, "");
    let out =
        toolhost_command(&sb).args(["--allow", "Grantee", "call", "Grantee", r#"{"action": "env"}"#]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("API_TOKEN"), "{out:?}");
    // Values too short to mask, and names that are not names, are refused.
    assert!(!set_secret(&sb, "Grantee", "API_TOKEN", "abc").status.success());
    let out = set_secret(&sb, "Grantee", "9LIVES", token);
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a secret name"), "{out:?}");
}

#[test]
fn with_an_unlocked_os_keyring_secrets_live_there_and_reach_their_tool_alone() {
    use toolhost_tests::keyring::SessionKeyring;
    let keyring = SessionKeyring::unlocked();
    let sb = workspace();
    let in_keyring = |args: &[&str]| run_with(&sb, args, |cmd| _ = keyring.apply(cmd));
    let audit = sb.root.join("audit.jsonl");
    let settings = json!({"auditLog": p(&audit), "toolGrants": {"Grantee": {"secrets": ["API_TOKEN"]}}});
    std::fs::create_dir_all(sb.home.join(".config/toolhost")).unwrap();
    std::fs::write(sb.home.join(".config/toolhost/settings.json"), settings.to_string()).unwrap();
    let call = || {
        run_with(&sb, &["--allow", "Grantee", "call", "Grantee", r#"{"action": "env"}"#, "--json"], |cmd| {
            _ = keyring.apply(cmd).env("RUST_LOG", "toolhost=trace")
        })
    };
    // A value stored in the file before there was a keyring keeps working.
    let (old, token) = ("old-5e3c8a1f", "tok-kr-7d41e09c");
    let out = set_secret_with(&sb, "Grantee", "API_TOKEN", old, |cmd| _ = cmd.env("TOOLHOST_SECRET_STORE", "file"));
    assert!(out.status.success(), "{out:?}");
    let list = in_keyring(&["secret", "list"]);
    assert_eq!(list.stdout, "Grantee API_TOKEN file\n", "{list:?}");
    assert!(list.stderr.contains("new secrets go to the OS keyring"), "{list:?}");
    let before = call();
    assert_eq!(before.text(), "env: [API_TOKEN=[secret API_TOKEN]]");
    assert!(!before.stdout.contains(old) && !before.stderr.contains(old), "{before:?}");
    // Stored again, it goes to the keyring (as libsecret's own client reads
    // it) and leaves the file.
    let out = set_secret_with(&sb, "Grantee", "API_TOKEN", token, |cmd| _ = keyring.apply(cmd));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.contains("in the OS keyring (Secret Service)"), "{out:?}");
    let found = keyring.secret_tool(&["lookup", "application", "toolhost", "tool", "Grantee", "name", "API_TOKEN"]);
    assert_eq!(found.as_deref(), Ok(token));
    let file = std::fs::read_to_string(sb.home.join(".config/toolhost/secrets.json")).unwrap();
    assert!(!file.contains(old) && !file.contains(token), "{file}");
    assert_eq!(in_keyring(&["secret", "list"]).stdout, "Grantee API_TOKEN keyring\n");
    // Granted, the keyring's value reaches the tool (only the value handed
    // to it is masked), and nothing of it reaches the audit log or the
    // tracing output.
    let after = call();
    assert_eq!(after.text(), "env: [API_TOKEN=[secret API_TOKEN]]");
    let audit = std::fs::read_to_string(&audit).unwrap();
    for text in [&after.stdout, &after.stderr, &audit] {
        assert!(!text.contains(token) && !text.contains(old), "a value leaked: {text}");
    }
    // Removed from the keyring.
    assert_eq!(in_keyring(&["secret", "rm", "Grantee", "API_TOKEN"]).code, 0);
    assert_eq!(in_keyring(&["secret", "list"]).stdout, "");
    assert!(keyring.secret_tool(&["lookup", "application", "toolhost", "name", "API_TOKEN"]).is_err());
    assert_eq!(call().text(), "env: []");
}

#[test]
fn without_a_usable_keyring_secrets_stay_in_the_file_or_are_refused_when_the_keyring_is_required() {
    use toolhost_tests::keyring::SessionKeyring;
    let sb = workspace();
    // A Secret Service nobody logged in to (no default collection): never
    // prompted, the file stands in, and `list` says why.
    let keyring = SessionKeyring::without_login();
    let out = set_secret_with(&sb, "Grantee", "API_TOKEN", "tok-f1le-3a9c", |cmd| _ = keyring.apply(cmd));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.contains(".config/toolhost/secrets.json"), "{out:?}");
    let list = run_with(&sb, &["secret", "list"], |cmd| _ = keyring.apply(cmd));
    assert_eq!(list.stdout, "Grantee API_TOKEN file\n");
    assert!(list.stderr.contains("no default collection"), "{list:?}");
    // Required, it is an error that says what to do.
    let required = |cmd: &mut std::process::Command| _ = keyring.apply(cmd).env("TOOLHOST_SECRET_STORE", "keyring");
    let out = set_secret_with(&sb, "Grantee", "OTHER", "tok-f1le-3a9c", required);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("no usable OS keyring"), "{out:?}");
    assert!(said.contains("TOOLHOST_SECRET_STORE=file"), "{said}");
    // No session bus at all: the file.
    let list = run_with(&sb, &["secret", "list"], |cmd| {
        _ = cmd.env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus").env_remove("TOOLHOST_SECRET_STORE")
    });
    assert_eq!(list.stdout, "Grantee API_TOKEN file\n", "{list:?}");
    // A store that is not one is refused by name.
    let list = run_with(&sb, &["secret", "list"], |cmd| _ = cmd.env("TOOLHOST_SECRET_STORE", "vault"));
    assert!(list.code != 0 && list.stderr.contains("auto, keyring or file"), "{list:?}");
}
