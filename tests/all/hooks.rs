//! Hooks and settings files through the real binary: real scripts answering
//! PreToolUse / PostToolUse / PostToolUseFailure events.

use crate::support::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Writes an executable script into the sandbox's home.
fn script(sb: &Sandbox, name: &str, body: &str) -> String {
    let path = sb.home.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// Project settings, trusted as written.
fn settings(sb: &Sandbox, value: Value) -> PathBuf {
    let file = sb.write(".toolhost/settings.json", serde_json::to_string_pretty(&value).unwrap());
    let r = toolhost(sb, &["trust"]);
    assert_eq!(r.code, 0, "{r:?}");
    file
}

fn pre_hook(sb: &Sandbox, command: &str, timeout: Option<f64>) {
    let mut hook = json!({"type": "command", "command": command});
    if let Some(t) = timeout {
        hook["timeout"] = json!(t);
    }
    settings(sb, json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}}));
}

fn decision(which: &str, reason: &str) -> String {
    format!(
        r#"cat >/dev/null; echo '{{"hookSpecificOutput":{{"hookEventName":"PreToolUse","permissionDecision":"{which}","permissionDecisionReason":"{reason}"}}}}'"#
    )
}

fn bash(sb: &Sandbox, command: &str, extra: &[&str]) -> Run {
    call(sb, "Bash", &json!({"command": command}), extra)
}

#[test]
fn a_hook_allows_denies_or_asks() {
    let sb = Sandbox::new();
    pre_hook(&sb, &script(&sb, "allow.sh", &decision("allow", "fine by policy")), None);
    bash(&sb, "touch made.txt", &[]).assert_ok();
    assert!(sb.ws("made.txt").exists(), "allowed by the hook without a prompt");

    pre_hook(&sb, &script(&sb, "deny.sh", &decision("deny", "no listing today")), None);
    let text = bash(&sb, "ls", &[]).assert_error("Permission to use Bash was denied");
    assert!(text.contains("no listing today"), "{text}");

    pre_hook(&sb, &script(&sb, "ask.sh", &decision("ask", "a human should look")), None);
    let text = bash(&sb, "ls", &[]).assert_error("denied");
    assert!(text.contains("a human should look") && text.contains("could not ask"), "{text}");
}

#[test]
fn a_deny_rule_beats_a_hooks_allow() {
    let sb = Sandbox::new();
    pre_hook(&sb, &script(&sb, "allow.sh", &decision("allow", "ok")), None);
    let text = bash(&sb, "touch nope.txt", &["--deny", "Bash(touch:*)"]).assert_error("denied");
    assert!(text.contains("deny rule `Bash(touch:*)` (command line)"), "{text}");
    assert!(!sb.ws("nope.txt").exists());
}

#[test]
fn exit_code_2_blocks_with_stderr_as_the_reason() {
    let sb = Sandbox::new();
    pre_hook(&sb, &script(&sb, "block.sh", "cat >/dev/null; echo 'rm is not welcome here' >&2; exit 2"), None);
    let text = bash(&sb, "ls", &[]).assert_error("denied");
    assert!(text.contains("rm is not welcome here"), "{text}");
}

#[test]
fn failing_hooks_fail_closed() {
    let sb = Sandbox::new();
    for (name, body, why) in [
        ("crash.sh", "cat >/dev/null; echo boom >&2; exit 1", "exit code 1"),
        ("garbage.sh", "cat >/dev/null; echo 'this is not json'", "not a JSON object"),
        ("signal.sh", "cat >/dev/null; kill -9 $$", "signal"),
    ] {
        pre_hook(&sb, &script(&sb, name, body), None);
        let text = bash(&sb, "touch x.txt", &["--mode", "bypassPermissions"]).assert_error("denied");
        assert!(text.contains(why) && text.contains("not allowed on its say-so"), "{name}: {text}");
        assert!(!sb.ws("x.txt").exists());
    }
}

#[test]
fn a_hanging_hook_times_out_and_fails_closed() {
    let sb = Sandbox::new();
    pre_hook(&sb, &script(&sb, "hang.sh", "cat >/dev/null; sleep 30"), Some(0.5));
    let started = Instant::now();
    let text = bash(&sb, "ls", &[]).assert_error("denied");
    assert!(text.contains("timed out"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(20), "the call did not wait for the hook's sleep");
}

#[test]
fn a_hook_rewrites_the_input_and_the_rewrite_is_validated() {
    let sb = Sandbox::new();
    let rewrite = r#"cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"echo rewritten"}}}'"#;
    pre_hook(&sb, &script(&sb, "rewrite.sh", rewrite), None);
    assert_eq!(bash(&sb, "echo original", &[]).assert_ok(), "rewritten");

    let broken =
        r#"cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"cmd":"ls"}}}'"#;
    pre_hook(&sb, &script(&sb, "broken.sh", broken), None);
    let text = bash(&sb, "echo original", &[]).assert_error("rewrote the input");
    assert!(text.contains("command"), "names the failing field: {text}");

    // A rewritten input is decided on as rewritten: no hook decision, so
    // the mode decides on the new, writing command.
    let sneaky = r#"cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":"touch sneaky.txt"}}}'"#;
    pre_hook(&sb, &script(&sb, "sneaky.sh", sneaky), None);
    bash(&sb, "ls", &[]).assert_error("denied");
    assert!(!sb.ws("sneaky.txt").exists());
}

#[test]
fn hooks_receive_the_event() {
    let sb = Sandbox::new();
    let seen = sb.home.join("seen");
    let copy = format!("cat > {}-$(date +%s%N).json", seen.display());
    settings(
        &sb,
        json!({"hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": copy}]}],
            "PostToolUse": [{"hooks": [{"type": "command", "command": copy}]}],
            "PostToolUseFailure": [{"hooks": [{"type": "command", "command": copy}]}]
        }}),
    );
    let r =
        toolhost(&sb, &["call", "Bash", r#"{"command":"echo hi"}"#, "--json", "--id", "toolu_42", "--session", "s1"]);
    assert_eq!(r.code, 0, "{r:?}");
    toolhost(&sb, &["call", "Bash", r#"{"command":"exit 3"}"#, "--json", "--mode", "bypassPermissions"]);
    let mut events: Vec<Value> = std::fs::read_dir(&sb.home)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("seen-"))
        .map(|e| serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap())
        .collect();
    events.sort_by_key(|e| e["hook_event_name"].as_str().unwrap().to_string());
    let names: Vec<&str> = events.iter().map(|e| e["hook_event_name"].as_str().unwrap()).collect();
    assert_eq!(names, ["PostToolUse", "PostToolUseFailure", "PreToolUse", "PreToolUse"]);
    let pre = events.iter().find(|e| e["hook_event_name"] == "PreToolUse" && e["tool_use_id"] == "toolu_42").unwrap();
    assert_eq!(pre["tool_name"], "Bash");
    assert_eq!(pre["tool_input"], json!({"command": "echo hi"}));
    assert_eq!(pre["session_id"], "s1");
    assert_eq!(pre["permission_mode"], "default");
    assert_eq!(pre["cwd"], p(&sb.workspace.canonicalize().unwrap()));
    let post = &events[0];
    assert_eq!(post["tool_response"], json!([{"type": "text", "text": "hi"}]), "{post}");
    let failure = &events[1];
    assert_eq!(failure["error"], "Exit code 3", "{failure}");
}

#[test]
fn post_hooks_add_context_and_can_stop_the_agent() {
    let sb = Sandbox::new();
    let context = r#"cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"remember to run the linter"}}'"#;
    let stop = r#"cat >/dev/null; echo '{"continue":false,"stopReason":"the build is broken, stop here"}'"#;
    settings(
        &sb,
        json!({"hooks": {
            "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": script(&sb, "ctx.sh", context)}]}],
            "PostToolUseFailure": [{"hooks": [{"type": "command", "command": script(&sb, "stop.sh", stop)}]}]
        }}),
    );
    let r = bash(&sb, "echo done", &[]);
    assert_eq!(r.code, 0, "{r:?}");
    let content = &r.json()["content"];
    assert_eq!(content[0]["text"], "done");
    assert!(content[1]["text"].as_str().unwrap().contains("remember to run the linter"), "{content}");

    let r = bash(&sb, "exit 4", &["--mode", "bypassPermissions"]);
    assert_eq!(r.json()["stop_reason"], "the build is broken, stop here", "{r:?}");
    assert!(r.stderr.contains("a hook asked to stop"), "{r:?}");
}

#[test]
fn decisions_go_to_the_audit_log() {
    let sb = Sandbox::new();
    let log = sb.home.join("audit/log.jsonl");
    settings(&sb, json!({"permissions": {"deny": ["Bash(rm:*)"]}, "auditLog": log.display().to_string()}));
    bash(&sb, "ls", &["--id", "toolu_a"]).assert_ok();
    bash(&sb, "rm -rf x", &["--id", "toolu_b"]).assert_error("denied");
    call(&sb, "Write", &json!({"file_path": p(&sb.ws("w.txt")), "content": "x"}), &["--id", "toolu_c"])
        .assert_error("denied");
    let all: Vec<Value> = audit_lines(&log);
    let (lines, usage): (Vec<Value>, Vec<Value>) = all.into_iter().partition(|l| l["event"] == "decision");
    assert_eq!(lines.len(), 3, "{lines:?}");
    // Each call's usage follows its decision.
    let ids: Vec<&str> = usage.iter().map(|l| l["tool_use_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["toolu_a", "toolu_b", "toolu_c"], "{usage:?}");
    assert!(usage.iter().all(|l| l["event"] == "usage" && l["usage"]["wall_us"].as_u64().unwrap() > 0), "{usage:?}");
    assert!(usage[0]["usage"]["peak_memory_bytes"].as_u64().unwrap() > 0, "Bash ran: {}", usage[0]);
    let brief: Vec<(String, String, String)> = lines
        .iter()
        .map(|l| {
            (
                l["tool_use_id"].as_str().unwrap().to_string(),
                l["decision"].as_str().unwrap().to_string(),
                l["source"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let own = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    assert_eq!(
        brief,
        [own("toolu_a", "allow", "mode"), own("toolu_b", "deny", "rule"), own("toolu_c", "deny", "mode")]
    );
    assert_eq!(lines[1]["rule"], "deny:Bash(rm:*)");
    assert!(lines[1]["origin"].as_str().unwrap().contains(".toolhost/settings.json"), "{}", lines[1]);
    for l in &lines {
        assert!(l["time"].as_str().unwrap().ends_with('Z') && l["duration_us"].is_u64() && l["session"].is_string());
    }
}

#[test]
fn malformed_settings_are_errors_naming_file_and_line() {
    let sb = Sandbox::new();
    let file = sb.write(".toolhost/settings.json", "{\n  \"permissions\": {\n    \"allow\": [\"Bash(ls\"]\n  }\n}\n");
    let r = toolhost(&sb, &["tools"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains(&p(&file)) && r.stderr.contains("line 3"), "{}", r.stderr);

    sb.write(".toolhost/settings.json", "{\"permissions\": {}}");
    let local = sb.write(".toolhost/settings.local.json", "{\n\"permissions\": {\"deny\": [\"Read\",]}\n}");
    let r = toolhost(&sb, &["tools"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains(&p(&local)) && r.stderr.contains("line 2 column"), "{}", r.stderr);

    std::fs::remove_file(&local).unwrap();
    let hooks =
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash(", "hooks": [{"type": "command", "command": "true"}]}]}});
    sb.write(".toolhost/settings.json", hooks.to_string());
    let r = toolhost(&sb, &["tools"]);
    assert!(r.code == 2 && r.stderr.contains("invalid matcher"), "{r:?}");
}

#[test]
fn settings_layers_through_the_cli() {
    let sb = Sandbox::new();
    // The user allows, the project denies: deny wins whatever the layer.
    let user = sb.home.join(".config/toolhost/settings.json");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, r#"{"permissions": {"allow": ["Bash(touch:*)"], "defaultMode": "plan"}}"#).unwrap();
    bash(&sb, "touch a.txt", &[]).assert_error("Plan mode");
    bash(&sb, "touch a.txt", &["--mode", "default"]).assert_ok();
    settings(&sb, json!({"permissions": {"deny": ["Bash(touch b.txt)"], "defaultMode": "default"}}));
    bash(&sb, "touch a.txt", &[]).assert_ok();
    bash(&sb, "touch b.txt", &[]).assert_error("deny rule `Bash(touch b.txt)`");
    // Managed settings beat the command line.
    std::fs::write(
        sb.home.join("managed-settings.json"),
        r#"{"permissions": {"disableBypassPermissionsMode": "disable"}}"#,
    )
    .unwrap();
    let r = bash(&sb, "ls", &["--mode", "bypassPermissions"]);
    assert!(r.code == 2 && r.stderr.contains("disabled by the managed settings"), "{r:?}");
    // --settings adds a file on the command-line layer.
    let extra = sb.write("extra.json", r#"{"permissions": {"deny": ["Bash(ls:*)"]}}"#);
    bash(&sb, "ls", &["--settings", &p(&extra)]).assert_error("deny rule `Bash(ls:*)`");
}

#[test]
fn workspace_settings_need_trust_to_run_hooks_or_allow() {
    let sb = Sandbox::new();
    let marker = sb.home.join("hook-ran");
    let hook = script(&sb, "mark.sh", &format!("cat >/dev/null; touch {}", marker.display()));
    let project = json!({
        "permissions": {"allow": ["Bash(touch:*)"], "deny": ["Bash(rm:*)"], "defaultMode": "bypassPermissions"},
        "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": hook}]}]}
    });
    // As a cloned repository would bring it: only its deny rules count.
    sb.write(".toolhost/settings.json", project.to_string());
    let r = bash(&sb, "touch a.txt", &[]);
    r.assert_error("denied");
    assert!(r.stderr.contains("is not trusted") && r.stderr.contains("allow rules, defaultMode, hooks"), "{r:?}");
    assert!(!marker.exists(), "an untrusted hook must not run");
    bash(&sb, "rm -f a.txt", &["--mode", "bypassPermissions"]).assert_error("deny rule `Bash(rm:*)`");

    let r = toolhost(&sb, &["trust"]);
    assert!(r.code == 0 && r.stdout.contains(&hook) && r.stdout.contains("Bash(touch:*)"), "{r:?}");
    bash(&sb, "touch a.txt", &[]).assert_ok();
    assert!(marker.exists(), "the trusted hook ran");

    // Changed since it was trusted (a pull, or a command a tool ran): untrusted again.
    std::fs::remove_file(&marker).unwrap();
    sb.write(".toolhost/settings.json", project.to_string() + "\n");
    let r = bash(&sb, "touch b.txt", &[]);
    r.assert_error("denied");
    assert!(r.stderr.contains("is not trusted") && !marker.exists(), "{r:?}");
}
