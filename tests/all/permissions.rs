//! The permission decision, table-driven: (rule set, mode, call) → which
//! decision and what decided it, observed through the audit log of a real
//! host running the real built-in components.

use crate::support::*;
use PermissionMode::{AcceptEdits as Edits, BypassPermissions as Bypass, Default as Dflt, DontAsk, Plan};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use toolhost::Behavior;
use toolhost::internals::{Rule, RuleEntry};
use toolhost::settings::{self, Settings, Sources};
use toolhost::{Answer, AskRequest, CallOptions, PermissionMode, ToolUse};

/// A workspace with the files the cases touch.
fn workspace(sb: &Sandbox) {
    sb.write("src/main.rs", "fn main() {}\n");
    sb.write("src/secret.rs", "// secret\n");
    sb.write("notes.txt", "notes\n");
    sb.write(".env", "TOKEN=1\n");
    sb.write("secret/key", "k\n");
    sb.write(".git/config", "[core]\n");
    sb.write(".bashrc", "# rc\n");
    std::os::unix::fs::symlink(sb.ws("secret"), sb.ws("src/link")).unwrap();
}

/// A PreToolUse hook for Bash that answers after a word in the command.
fn hook_script(sb: &Sandbox) -> PathBuf {
    let script = sb.home.join("decide.sh");
    std::fs::write(
        &script,
        r#"#!/bin/sh
input=$(cat)
answer() { printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"%s","permissionDecisionReason":"the hook says %s"}}' "$1" "$1"; }
case "$input" in
  *hook-allow*) answer allow ;;
  *hook-deny*) answer deny ;;
  *hook-ask*) answer ask ;;
esac
"#,
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    script
}

fn rules(list: &[(&str, &str)]) -> Vec<RuleEntry> {
    list.iter()
        .map(|&(behavior, text)| RuleEntry {
            rule: Rule::parse(text).unwrap(),
            behavior: match behavior {
                "allow" => Behavior::Allow,
                "ask" => Behavior::Ask,
                "deny" => Behavior::Deny,
                other => panic!("{other}"),
            },
            origin: Arc::from("table"),
            base: None,
        })
        .collect()
}

/// Runs `calls` on a host with `settings` and returns, for each, what the
/// audit log says decided it: `allow:mode`, `deny:rule:Bash(rm:*)`,
/// `ask` (the approver was asked), `none` (no decision: not in the pool).
fn decide(sb: &Sandbox, mut settings: Settings, mode: PermissionMode, tool: &str, input: &Value) -> String {
    let audit = sb.home.join(format!("audit-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&audit);
    settings.audit_log = Some(audit.clone());
    let host = crate::support::host_builder(sb)
        .plugins_dir(Some(sb.plugins.clone()))
        .mode(mode)
        .settings(settings)
        .approver(Arc::new(|_: &AskRequest| Answer::Deny("asked".into())))
        .child_confinement(toolhost::Confinement::BestEffort)
        .build()
        .expect("host");
    let session = host.ephemeral_session();
    let mut input = input.clone();
    // Edit and Write check before the permission step, as Claude Code does,
    // that an existing file was read and that old_string is in it: read the
    // file first in the session, and edit its whole text.
    if let ("Edit" | "Write", Some(path)) = (tool, input["file_path"].as_str().map(str::to_owned)) {
        let read = ToolUse { id: "toolu_read".into(), name: "Read".into(), input: json!({"file_path": path}) };
        host.call(&session, &read, &CallOptions::default());
        if let (Ok(text), "Edit") = (std::fs::read_to_string(&path), tool) {
            input["old_string"] = json!(text);
            input["new_string"] = json!(format!("{text}x"));
        }
    }
    let before = std::fs::read_to_string(&audit).unwrap_or_default().lines().count();
    let tool_use = ToolUse { id: "toolu_table".into(), name: tool.into(), input };
    let result = host.call(&session, &tool_use, &CallOptions::default());
    let text = std::fs::read_to_string(&audit).unwrap_or_default();
    let lines: Vec<Value> = text
        .lines()
        .skip(before)
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["event"] == "decision")
        .collect();
    if lines.is_empty() {
        return match result.text() {
            t if t.contains("No such tool available") => "none".into(),
            t => format!("no decision: {t}"),
        };
    }
    assert_eq!(lines.len(), 1, "one decision per call: {text}");
    let line = &lines[0];
    if line["asked"] == true {
        return "ask".into();
    }
    let decision = line["decision"].as_str().unwrap();
    match line["source"].as_str().unwrap() {
        "rule" => format!("{decision}:rule:{}", line["rule"].as_str().unwrap().split_once(':').unwrap().1),
        "hook" => format!("{decision}:hook"),
        source => format!("{decision}:{source}"),
    }
}

#[test]
fn decisions_follow_rules_hooks_and_modes() {
    let sb = Sandbox::new();
    workspace(&sb);
    sb.install(toolhost_tests::ECHO);
    let ws = |rel: &str| p(&sb.ws(rel));
    let read = |rel: &str| json!({"file_path": ws(rel)});
    let write = |rel: &str| json!({"file_path": ws(rel), "content": "x"});
    let edit = |rel: &str| json!({"file_path": ws(rel), "old_string": "a", "new_string": "b"});
    let bash = |c: &str| json!({"command": c});
    let glob = json!({"pattern": "**/*.rs"});
    let grep = |path: &str| json!({"pattern": "x", "path": ws(path)});

    let none: Vec<RuleEntry> = Vec::new();
    let bash_rules = rules(&[("allow", "Bash(npm run test:*)"), ("deny", "Bash(rm:*)"), ("ask", "Bash(git push:*)")]);
    let path_rules = rules(&[
        ("allow", "Edit(./src/**)"),
        ("deny", "Read(./.env)"),
        ("deny", "Read(./secret/**)"),
        ("ask", "Write(./notes.txt)"),
    ]);
    let no_bash = rules(&[("deny", "Bash")]);
    let any_bash = rules(&[("allow", "Bash"), ("ask", "Bash(curl:*)")]);
    let third_party = rules(&[("ask", "Echo")]);
    let no_echo = rules(&[("deny", "Echo")]);

    #[rustfmt::skip]
    let table: Vec<(&Vec<RuleEntry>, PermissionMode, &str, Value, &str)> = vec![
        // No rules: the tool's check and the mode.
        (&none, Dflt, "Read", read("src/main.rs"), "allow:mode"),
        (&none, Plan, "Read", read("src/main.rs"), "allow:mode"),
        (&none, Edits, "Read", read("src/main.rs"), "allow:mode"),
        (&none, DontAsk, "Read", read("src/main.rs"), "allow:mode"),
        (&none, Bypass, "Read", read("src/main.rs"), "allow:mode"),
        (&none, Dflt, "Glob", glob.clone(), "allow:mode"),
        (&none, Plan, "Glob", glob.clone(), "allow:mode"),
        (&none, Edits, "Glob", glob.clone(), "allow:mode"),
        (&none, DontAsk, "Glob", glob.clone(), "allow:mode"),
        (&none, Bypass, "Glob", glob.clone(), "allow:mode"),
        (&none, Dflt, "Grep", grep("src"), "allow:mode"),
        (&none, Plan, "Grep", grep("src"), "allow:mode"),
        (&none, Edits, "Grep", grep("src"), "allow:mode"),
        (&none, DontAsk, "Grep", grep("src"), "allow:mode"),
        (&none, Bypass, "Grep", grep("src"), "allow:mode"),
        (&none, Dflt, "Write", write("new.txt"), "ask"),
        (&none, Plan, "Write", write("new.txt"), "deny:mode"),
        (&none, Edits, "Write", write("new.txt"), "allow:tool"),
        (&none, DontAsk, "Write", write("new.txt"), "deny:mode"),
        (&none, Bypass, "Write", write("new.txt"), "allow:mode"),
        (&none, Dflt, "Edit", edit("src/main.rs"), "ask"),
        (&none, Plan, "Edit", edit("src/main.rs"), "deny:mode"),
        (&none, Edits, "Edit", edit("src/main.rs"), "allow:tool"),
        (&none, DontAsk, "Edit", edit("src/main.rs"), "deny:mode"),
        (&none, Bypass, "Edit", edit("src/main.rs"), "allow:mode"),
        (&none, Dflt, "Bash", bash("ls"), "allow:mode"),
        (&none, Plan, "Bash", bash("git status"), "allow:mode"),
        (&none, Dflt, "Bash", bash("touch x"), "ask"),
        (&none, Plan, "Bash", bash("touch x"), "deny:mode"),
        (&none, Edits, "Bash", bash("touch x"), "ask"),
        (&none, DontAsk, "Bash", bash("touch x"), "deny:mode"),
        (&none, Bypass, "Bash", bash("touch x"), "allow:mode"),
        // dangerouslyDisableSandbox asks, even for a read-only command; the
        // mode resolves the ask, and deny rules come first.
        (&none, Dflt, "Bash", json!({"command": "ls", "dangerouslyDisableSandbox": true}), "ask"),
        (&none, Plan, "Bash", json!({"command": "ls", "dangerouslyDisableSandbox": true}), "deny:mode"),
        (&none, DontAsk, "Bash", json!({"command": "ls", "dangerouslyDisableSandbox": true}), "deny:mode"),
        (&none, Bypass, "Bash", json!({"command": "ls", "dangerouslyDisableSandbox": true}), "allow:mode"),
        (&bash_rules, Bypass, "Bash", json!({"command": "rm -f x", "dangerouslyDisableSandbox": true}), "deny:rule:Bash(rm:*)"),
        (&none, Dflt, "Echo", json!({"text": "hi"}), "allow:mode"),
        // Sensitive paths: asked in every mode.
        (&none, Edits, "Write", write(".git/config"), "ask"),
        (&none, Bypass, "Write", write(".git/config"), "ask"),
        (&none, Bypass, "Write", write(".toolhost/settings.local.json"), "ask"),
        (&none, Edits, "Edit", edit(".bashrc"), "ask"),
        (&none, DontAsk, "Write", write(".git/config"), "deny:mode"),
        (&none, Plan, "Write", write(".git/config"), "deny:mode"),
        (&none, Dflt, "Read", read(".git/config"), "allow:mode"),
        (&none, Bypass, "Bash", bash("echo '[core]' > .git/config"), "ask"),
        (&none, Bypass, "Bash", bash("echo alias ls=rm >> ~/.bashrc"), "ask"),
        (&none, Bypass, "Bash", bash("echo ok > out.txt"), "allow:mode"),
        // Bash rules, applied to every sub-command.
        (&bash_rules, Dflt, "Bash", bash("npm run test"), "allow:rule:Bash(npm run test:*)"),
        (&bash_rules, Dflt, "Bash", bash("npm run test -- --watch"), "allow:rule:Bash(npm run test:*)"),
        (&bash_rules, Dflt, "Bash", bash("npm run test && rm -rf /nonexistent"), "deny:rule:Bash(rm:*)"),
        (&bash_rules, Bypass, "Bash", bash("npm run test && rm -rf /nonexistent"), "deny:rule:Bash(rm:*)"),
        (&bash_rules, Dflt, "Bash", bash("npm run test && curl example.com"), "ask"),
        (&bash_rules, Dflt, "Bash", bash("npm run test; ls"), "allow:rule:Bash(npm run test:*)"),
        (&bash_rules, Dflt, "Bash", bash("npm run testing"), "ask"),
        (&bash_rules, Dflt, "Bash", bash("npm run test $(whoami)"), "ask"),
        (&bash_rules, Dflt, "Bash", bash("npm run test |"), "ask"),
        (&bash_rules, Dflt, "Bash", bash("PATH=/tmp npm run test"), "ask"),
        (&bash_rules, Edits, "Bash", bash("npm run test > out.log"), "allow:rule:Bash(npm run test:*)"),
        (&bash_rules, Dflt, "Bash", bash("npm run test > /tmp/out.log"), "ask"),
        (&bash_rules, Dflt, "Bash", bash("nice -n 5 npm run test"), "allow:rule:Bash(npm run test:*)"),
        (&bash_rules, DontAsk, "Bash", bash("npm run test"), "allow:rule:Bash(npm run test:*)"),
        (&bash_rules, Plan, "Bash", bash("npm run test"), "deny:mode"),
        (&bash_rules, Dflt, "Bash", bash("rm -rf x"), "deny:rule:Bash(rm:*)"),
        (&bash_rules, Bypass, "Bash", bash("rm -rf x"), "deny:rule:Bash(rm:*)"),
        (&bash_rules, Plan, "Bash", bash("rm -rf x"), "deny:rule:Bash(rm:*)"),
        (&bash_rules, Dflt, "Bash", bash("timeout 5 rm x"), "deny:rule:Bash(rm:*)"),
        (&bash_rules, Dflt, "Bash", bash("ls | xargs rm"), "deny:rule:Bash(rm:*)"),
        (&bash_rules, Dflt, "Bash", bash("sudo rm x"), "deny:rule:Bash(rm:*)"),
        (&bash_rules, Dflt, "Bash", bash("echo $(rm x)"), "deny:rule:Bash(rm:*)"),
        (&bash_rules, Bypass, "Bash", bash("/bin/rm -f x"), "deny:rule:Bash(rm:*)"),
        (&bash_rules, Bypass, "Bash", bash("bash -c 'ls && rm -f x'"), "deny:rule:Bash(rm:*)"),
        (&bash_rules, Bypass, "Bash", bash("find . -name x -exec rm {} +"), "deny:rule:Bash(rm:*)"),
        (&bash_rules, Dflt, "Bash", bash("git push origin main"), "ask"),
        (&bash_rules, Dflt, "Bash", bash("echo ok && git push"), "ask"),
        (&bash_rules, Bypass, "Bash", bash("git push origin main"), "allow:mode"),
        (&bash_rules, DontAsk, "Bash", bash("git push origin main"), "deny:mode"),
        (&bash_rules, Dflt, "Bash", bash("ls -la"), "allow:mode"),
        // Path rules, gitignore-style, on both the written and the real path.
        (&path_rules, Dflt, "Edit", edit("src/main.rs"), "allow:rule:Edit(./src/**)"),
        (&path_rules, Dflt, "Write", write("src/new.rs"), "allow:rule:Edit(./src/**)"),
        (&path_rules, DontAsk, "Edit", edit("src/main.rs"), "allow:rule:Edit(./src/**)"),
        (&path_rules, Plan, "Edit", edit("src/main.rs"), "deny:mode"),
        (&path_rules, Dflt, "Write", write("src/../new.txt"), "ask"),
        (&path_rules, Dflt, "Edit", edit("src/link/key"), "ask"),
        (&path_rules, Dflt, "Read", read(".env"), "deny:rule:Read(./.env)"),
        (&path_rules, Bypass, "Read", read(".env"), "deny:rule:Read(./.env)"),
        (&path_rules, Plan, "Read", read(".env"), "deny:rule:Read(./.env)"),
        (&path_rules, Dflt, "Read", read("src/../.env"), "deny:rule:Read(./.env)"),
        (&path_rules, Dflt, "Grep", grep(".env"), "deny:rule:Read(./.env)"),
        (&path_rules, Dflt, "Read", read("secret/key"), "deny:rule:Read(./secret/**)"),
        (&path_rules, Dflt, "Read", read("src/link/key"), "deny:rule:Read(./secret/**)"),
        (&path_rules, Dflt, "Glob", json!({"pattern": "*", "path": ws("secret")}), "deny:rule:Read(./secret/**)"),
        (&path_rules, Dflt, "Glob", glob.clone(), "allow:mode"),
        (&path_rules, Dflt, "Read", read("src/main.rs"), "allow:mode"),
        (&path_rules, Dflt, "Write", write("notes.txt"), "ask"),
        (&path_rules, Edits, "Write", write("notes.txt"), "ask"),
        (&path_rules, Bypass, "Write", write("notes.txt"), "allow:mode"),
        (&path_rules, Edits, "Edit", edit("notes.txt"), "allow:tool"),
        (&path_rules, Bypass, "Bash", bash("cat .env"), "deny:rule:Read(./.env)"),
        (&path_rules, Dflt, "Bash", bash("grep -r TOKEN secret/key"), "deny:rule:Read(./secret/**)"),
        (&path_rules, Dflt, "Bash", bash("wc -l < src/../.env"), "deny:rule:Read(./.env)"),
        (&none, Dflt, "Bash", bash("cat /etc/hostname"), "ask"),
        (&none, Dflt, "Bash", bash("cat ~/.ssh/id_rsa"), "ask"),
        (&none, Dflt, "Bash", bash("cat ../outside.txt"), "ask"),
        (&none, Dflt, "Bash", bash("cat $HOME/.netrc"), "ask"),
        (&none, Plan, "Bash", bash("cat /etc/hostname"), "deny:mode"),
        (&none, Dflt, "Bash", bash("ls src > /dev/null"), "allow:mode"),
        // Whole tools.
        (&no_bash, Dflt, "Bash", bash("ls"), "none"),
        (&no_bash, Bypass, "Bash", bash("ls"), "none"),
        (&no_bash, Dflt, "Read", read("src/main.rs"), "allow:mode"),
        (&any_bash, Dflt, "Bash", bash("touch x"), "allow:rule:Bash"),
        (&any_bash, Dflt, "Bash", bash("echo $(touch y)"), "allow:rule:Bash"),
        (&any_bash, Dflt, "Bash", bash("curl example.com"), "ask"),
        (&any_bash, Plan, "Bash", bash("touch x"), "deny:mode"),
        (&third_party, Dflt, "Echo", json!({"text": "hi"}), "ask"),
        (&third_party, DontAsk, "Echo", json!({"text": "hi"}), "deny:mode"),
        (&third_party, Bypass, "Echo", json!({"text": "hi"}), "allow:mode"),
        (&no_echo, Bypass, "Echo", json!({"text": "hi"}), "none"),
    ];

    let mut failures = Vec::new();
    for (i, (rules, mode, tool, input, want)) in table.iter().enumerate() {
        let settings = Settings { rules: (*rules).clone(), ..Settings::default() };
        let got = decide(&sb, settings, *mode, tool, input);
        if got != *want {
            failures.push(format!("case {i}: {mode} {tool} {input}: want {want}, got {got}"));
        }
    }
    let hooks = hook_cases(&sb);
    let files = precedence_cases(&sb);
    failures.extend(hooks.1);
    failures.extend(files.1);
    let total = table.len() + hooks.0 + files.0;
    assert!(total >= 100, "{total} cases");
    assert!(failures.is_empty(), "{} of {total} cases failed:\n{}", failures.len(), failures.join("\n"));
}

/// Hooks in the decision: deny rules beat a hook's allow; a hook's ask beats
/// the mode's allow.
fn hook_cases(sb: &Sandbox) -> (usize, Vec<String>) {
    let script = hook_script(sb);
    let hooks: toolhost::settings::HooksConfig = serde_json::from_value(json!({
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": script.display().to_string()}]}]
    }))
    .unwrap();
    let settings = || Settings {
        rules: rules(&[("deny", "Bash(rm:*)")]),
        hooks: vec![(hooks.clone(), "table".into())],
        ..Settings::default()
    };
    let bash = |c: &str| json!({"command": c});
    #[rustfmt::skip]
    let table = [
        (Dflt, bash("echo hook-allow && touch x"), "allow:hook"),
        (Dflt, bash("rm hook-allow"), "deny:rule:Bash(rm:*)"),
        (Bypass, bash("echo hook-deny"), "deny:hook"),
        (Dflt, bash("ls hook-ask"), "ask"),
        (DontAsk, bash("ls hook-ask"), "deny:mode"),
        (Bypass, bash("ls hook-ask"), "allow:mode"),
        (Plan, bash("touch hook-allow"), "allow:hook"),
        (Dflt, bash("ls"), "allow:mode"),
        (Dflt, bash("touch y"), "ask"),
        (Bypass, bash("echo hook-allow > .git/config"), "ask"),
        (Bypass, bash("echo hook-deny > .git/config"), "deny:hook"),
    ];
    let mut failures = Vec::new();
    for (mode, input, want) in &table {
        let got = decide(sb, settings(), *mode, "Bash", input);
        if got != *want {
            failures.push(format!("hook case {mode} {input}: want {want}, got {got}"));
        }
    }
    (table.len(), failures)
}

/// Rules from every layer apply together, the strongest list wins; the
/// strongest layer's mode wins.
fn precedence_cases(sb: &Sandbox) -> (usize, Vec<String>) {
    let dir = sb.home.join("layers");
    let file = |name: &str, v: Value| -> PathBuf {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        path
    };
    let sources = Sources {
        managed: Some(file("managed.json", json!({"permissions": {"ask": ["Bash(touch:*)"]}}))),
        user: Some(file(
            "user.json",
            json!({"permissions": {"allow": ["Bash(rm:*)", "Bash(touch:*)"], "ask": ["Edit"], "defaultMode": "plan"}}),
        )),
        project: Some(file(
            "project.json",
            json!({"permissions": {"deny": ["Bash(rm -rf /nonexistent:*)"], "defaultMode": "acceptEdits"}}),
        )),
        local: Some(file("local.json", json!({"permissions": {"allow": ["Edit(./src/**)"]}}))),
        command_line_rules: vec![(Behavior::Deny, "Read(./src/secret.rs)".into())],
        ..Sources::default()
    };
    let loaded = settings::load(&sources, &sb.workspace).unwrap();
    assert_eq!(loaded.mode, Some(Edits), "project beats user");
    let ws = |rel: &str| p(&sb.ws(rel));
    #[rustfmt::skip]
    let table = [
        ("Bash", json!({"command": "rm x"}), "allow:rule:Bash(rm:*)"),
        ("Bash", json!({"command": "rm -rf /nonexistent y"}), "deny:rule:Bash(rm -rf /nonexistent:*)"),
        ("Bash", json!({"command": "touch a"}), "ask"),
        ("Edit", json!({"file_path": ws("src/main.rs"), "old_string": "a", "new_string": "b"}), "ask"),
        ("Read", json!({"file_path": ws("src/secret.rs")}), "deny:rule:Read(./src/secret.rs)"),
        ("Write", json!({"file_path": ws("fresh.txt"), "content": "x"}), "allow:tool"),
    ];
    let mut failures = Vec::new();
    for (tool, input, want) in &table {
        // The builder's mode is what --mode would not override: the settings' mode wins.
        let got = decide(sb, loaded.clone(), Dflt, tool, input);
        if got != *want {
            failures.push(format!("layers case {tool} {input}: want {want}, got {got}"));
        }
    }
    (table.len(), failures)
}

#[test]
fn denied_tools_leave_the_pool() {
    let sb = Sandbox::new();
    let listed = |extra: &[&str]| {
        let mut args = extra.to_vec();
        args.extend(["tools", "--json"]);
        let r = toolhost(&sb, &args);
        assert_eq!(r.code, 0, "{r:?}");
        let tools: Value = serde_json::from_str(&r.stdout).unwrap();
        tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    assert!(listed(&[]).contains(&"Bash".to_string()));
    let without = listed(&["--deny", "Bash", "--deny", "Bash(rm:*)"]);
    assert!(!without.contains(&"Bash".to_string()) && without.contains(&"Read".to_string()), "{without:?}");
    let r = call(&sb, "Bash", &json!({"command": "ls"}), &["--deny", "Bash"]);
    r.assert_error("No such tool available: Bash");
}

#[test]
fn the_library_callback_answers_asks() {
    let sb = Sandbox::new();
    let local = sb.ws(".toolhost/settings.local.json");
    let asked = Arc::new(std::sync::Mutex::new(Vec::<AskRequest>::new()));
    let log = Arc::clone(&asked);
    let approver = move |request: &AskRequest| {
        let mut log = log.lock().unwrap();
        log.push(request.clone());
        match log.len() {
            1 => Answer::AllowAlways(request.suggested_rules[0].clone()),
            _ => Answer::Deny("not this one".into()),
        }
    };
    let host = crate::support::host_builder(&sb)
        .settings(Settings { local_file: Some(local.clone()), ..Settings::default() })
        .approver(Arc::new(approver))
        .child_confinement(toolhost::Confinement::BestEffort)
        .build()
        .expect("host");
    let session = host.ephemeral_session();
    let run = |command: &str| {
        let tool_use = ToolUse { id: "toolu_lib".into(), name: "Bash".into(), input: json!({"command": command}) };
        host.call(&session, &tool_use, &CallOptions::default())
    };
    assert!(!run("touch a.txt").is_error);
    {
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].suggested_rules, ["Bash(touch a.txt)"]);
        assert!(asked[0].message.contains("touch a.txt"), "{}", asked[0].message);
    }
    assert!(!run("touch a.txt").is_error, "allowed always: not asked again");
    assert_eq!(asked.lock().unwrap().len(), 1);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&local).unwrap()).unwrap();
    assert_eq!(saved, json!({"permissions": {"allow": ["Bash(touch a.txt)"]}}));
    let denied = run("touch b.txt");
    assert!(denied.is_error && denied.text().contains("not this one"), "{}", denied.text());
    assert!(sb.ws("a.txt").exists() && !sb.ws("b.txt").exists());
}

#[test]
fn walks_skip_what_read_rules_hide() {
    let sb = Sandbox::new();
    workspace(&sb);
    sb.write("build/out.txt", "TOKEN in build\n");
    sb.write("src/key.pem", "TOKEN in pem\n");
    let rules =
        ["--deny", "Read(./.env)", "--deny", "Read(./secret/**)", "--ask", "Read(*.pem)", "--deny", "Read(build/)"];
    let grep = call(&sb, "Grep", &json!({"pattern": "TOKEN|k", "output_mode": "files_with_matches"}), &rules);
    let text = grep.assert_ok();
    assert!(
        !text.contains(".env") && !text.contains("secret") && !text.contains(".pem") && !text.contains("build"),
        "{text}"
    );
    let glob = call(&sb, "Glob", &json!({"pattern": "**/*"}), &rules).assert_ok();
    assert!(glob.contains("main.rs"), "{glob}");
    assert!(
        !glob.contains(".env")
            && !glob.contains("secret/key")
            && !glob.contains("key.pem")
            && !glob.contains("out.txt"),
        "{glob}"
    );
    let inside = call(&sb, "Glob", &json!({"pattern": "secret/*"}), &rules).assert_ok();
    assert_eq!(inside, "No files found");
    // Without the rules, the same walks find them.
    let all = call(&sb, "Glob", &json!({"pattern": "**/*"}), &[]).assert_ok();
    assert!(all.contains(".env") && all.contains("secret/key") && all.contains("key.pem"), "{all}");
}
