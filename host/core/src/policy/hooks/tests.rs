use super::*;
use crate::config::hooks::{HookCommand, HooksConfig, LABEL_MAX, MatcherGroup};
use output::clip;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

const ORIGIN: &str = "/home/u/.toolhost/settings.json";

/// A temporary directory holding the scripts and what they write.
struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().expect("a temp dir"))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    fn cwd(&self) -> &str {
        self.0.path().to_str().expect("a UTF-8 temp dir")
    }

    /// Writes a shell script and returns the command running it (through
    /// `sh`, so that no executable file is open for writing while another
    /// test thread forks).
    fn script(&self, name: &str, body: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write the script");
        format!("sh '{}'", path.display())
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).expect("read what the hook wrote")
    }
}

fn compile(config: Value) -> Hooks {
    let config: HooksConfig = serde_json::from_value(config).expect("a valid configuration");
    Hooks::compile(&[(config, ORIGIN.into())]).expect("compiles")
}

fn compile_err(config: Value) -> String {
    let config: HooksConfig = serde_json::from_value(config).expect("deserializes");
    Hooks::compile(&[(config, ORIGIN.into())]).expect_err("a configuration error").to_string()
}

/// PreToolUse hooks for every tool, each `(command, timeout)`.
fn pre_hooks(commands: &[(&str, f64)]) -> Hooks {
    let hooks: Vec<Value> =
        commands.iter().map(|(c, t)| json!({"type": "command", "command": c, "timeout": t})).collect();
    compile(json!({"PreToolUse": [{"hooks": hooks}]}))
}

fn input<'a>(cwd: &'a str, tool_input: &'a Value) -> EventInput<'a> {
    EventInput {
        session_id: "sess-1",
        cwd,
        permission_mode: "default",
        tool_name: "Bash",
        tool_input,
        tool_use_id: "toolu_01",
        tool_response: None,
        error: None,
    }
}

fn run_pre(hooks: &Hooks, dir: &Dir) -> Outcome {
    let tool_input = json!({"command": "rm -rf /"});
    hooks.run(HookEvent::PreToolUse, &input(dir.cwd(), &tool_input))
}

/// A hook printing `output` as its JSON answer.
fn answering(dir: &Dir, name: &str, output: Value) -> String {
    dir.script(name, &format!("cat >/dev/null\ncat <<'JSON'\n{output}\nJSON"))
}

fn deny_reason(outcome: &Outcome) -> &str {
    match &outcome.decision {
        Some(HookDecision::Deny { reason, .. }) => reason,
        other => panic!("expected a deny, got {other:?}"),
    }
}

#[test]
fn allow_via_json() {
    let dir = Dir::new();
    let cmd = answering(
        &dir,
        "allow.sh",
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
               "permissionDecisionReason": "looks fine"}}),
    );
    let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
    assert_eq!(outcome.decision, Some(HookDecision::Allow { reason: Some("looks fine".into()), hook: cmd.clone() }));
    assert_eq!(outcome.updated_input, None);
    assert_eq!(outcome.stop, None);
    assert_eq!(outcome.ran.len(), 1);
    assert_eq!(outcome.ran[0].0, cmd);
}

#[test]
fn deny_via_json() {
    let dir = Dir::new();
    let cmd = answering(
        &dir,
        "deny.sh",
        json!({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no rm"}}),
    );
    let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
    assert_eq!(outcome.decision, Some(HookDecision::Deny { reason: "no rm".into(), hook: cmd }));
}

#[test]
fn ask_via_json() {
    let dir = Dir::new();
    let cmd = answering(&dir, "ask.sh", json!({"hookSpecificOutput": {"permissionDecision": "ask"}}));
    let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
    assert_eq!(outcome.decision, Some(HookDecision::Ask { reason: None, hook: cmd }));
}

#[test]
fn legacy_decisions() {
    let dir = Dir::new();
    let approve = answering(&dir, "approve.sh", json!({"decision": "approve", "reason": "ok"}));
    let outcome = run_pre(&pre_hooks(&[(&approve, 10.0)]), &dir);
    assert_eq!(outcome.decision, Some(HookDecision::Allow { reason: Some("ok".into()), hook: approve }));
    let block = answering(&dir, "block.sh", json!({"decision": "block"}));
    let outcome = run_pre(&pre_hooks(&[(&block, 10.0)]), &dir);
    assert_eq!(deny_reason(&outcome), format!("blocked by hook `{block}`"));
}

#[test]
fn updated_input() {
    let dir = Dir::new();
    let cmd = answering(
        &dir,
        "rewrite.sh",
        json!({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "ls"}}}),
    );
    let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
    assert!(matches!(outcome.decision, Some(HookDecision::Allow { .. })));
    assert_eq!(outcome.updated_input, Some(json!({"command": "ls"})));
}

#[test]
fn exit_2_blocks_with_stderr() {
    let dir = Dir::new();
    let cmd = dir.script("block.sh", "echo 'first line' >&2\necho '  rm is not allowed here  ' >&2\nexit 2");
    let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
    assert_eq!(
        outcome.decision,
        Some(HookDecision::Deny { reason: "first line\n  rm is not allowed here".into(), hook: cmd })
    );

    let silent = dir.script("silent.sh", "exit 2");
    let outcome = run_pre(&pre_hooks(&[(&silent, 10.0)]), &dir);
    assert_eq!(deny_reason(&outcome), format!("blocked by hook `{silent}`"));
}

#[test]
fn timeout_kills_the_process_group() {
    let dir = Dir::new();
    let cmd = dir.script("slow.sh", "echo $$ > shell.pid\nsleep 30 &\necho $! > sleep.pid\nwait");
    let started = Instant::now();
    let outcome = run_pre(&pre_hooks(&[(&cmd, 0.5)]), &dir);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let reason = deny_reason(&outcome);
    assert!(reason.contains(&format!("hook `{cmd}` timed out after 0.5 s")), "{reason}");
    assert!(reason.contains("not allowed on its say-so"), "{reason}");
    for file in ["shell.pid", "sleep.pid"] {
        let pid: libc::pid_t = dir.read(file).trim().parse().expect("a pid");
        assert!(toolhost_tests::wait_gone(pid, Duration::from_secs(3)), "{file}: {pid} is still running");
    }
}

#[test]
fn output_left_open_by_a_background_process_times_out() {
    let dir = Dir::new();
    let cmd = dir.script("leak.sh", "sleep 30 &\necho $! > sleep.pid\necho '{}'");
    let started = Instant::now();
    let outcome = run_pre(&pre_hooks(&[(&cmd, 0.5)]), &dir);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(deny_reason(&outcome).contains("timed out"), "{outcome:?}");
    let pid: libc::pid_t = dir.read("sleep.pid").trim().parse().expect("a pid");
    assert!(toolhost_tests::wait_gone(pid, Duration::from_secs(3)), "{pid} is still running");
}

#[test]
fn crash_fails_closed() {
    let dir = Dir::new();
    let cmd = dir.script("crash.sh", "echo 'noise' >&2\necho 'jq: command not found' >&2\nexit 1");
    let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
    assert_eq!(
        deny_reason(&outcome),
        format!(
            "hook `{cmd}` failed: exit code 1 (stderr: noise / jq: command not found) \
             — the call is not allowed on its say-so"
        )
    );
}

#[test]
fn killed_by_signal_fails_closed() {
    let dir = Dir::new();
    let outcome = run_pre(&pre_hooks(&[("kill -9 $$", 10.0)]), &dir);
    let reason = deny_reason(&outcome);
    assert!(reason.starts_with("hook `kill -9 $$` failed: killed by signal 9"), "{reason}");
}

#[test]
fn garbage_output_fails_closed() {
    let dir = Dir::new();
    let cmd = dir.script("garbage.sh", "echo 'hello world'");
    let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
    let reason = deny_reason(&outcome);
    assert!(reason.contains("printed output that is not a JSON object: hello world"), "{reason}");
}

#[test]
fn non_object_json_fails_closed() {
    let dir = Dir::new();
    for (i, output) in ["[1, 2]", "\"allow\"", "true"].iter().enumerate() {
        let cmd = dir.script(&format!("json{i}.sh"), &format!("echo '{output}'"));
        let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
        let reason = deny_reason(&outcome);
        assert!(reason.contains(&format!("not a JSON object: {output}")), "{reason}");
    }
}

#[test]
fn unknown_permission_decision_fails_closed() {
    let dir = Dir::new();
    let cmd = answering(&dir, "maybe.sh", json!({"hookSpecificOutput": {"permissionDecision": "maybe"}}));
    let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
    let reason = deny_reason(&outcome);
    assert!(reason.contains("unknown `permissionDecision` \"maybe\""), "{reason}");
}

#[test]
fn malformed_fields_fail_closed() {
    let dir = Dir::new();
    let outputs = [
        json!({"continue": "no"}),
        json!({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": "ls"}}),
        json!({"hookSpecificOutput": {"additionalContext": 3}}),
        json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "allow"}}),
        json!({"decision": "perhaps"}),
    ];
    for (i, output) in outputs.into_iter().enumerate() {
        let cmd = answering(&dir, &format!("bad{i}.sh"), output.clone());
        let outcome = run_pre(&pre_hooks(&[(&cmd, 10.0)]), &dir);
        let reason = deny_reason(&outcome);
        assert!(reason.starts_with(&format!("hook `{cmd}` failed: ")), "{output}: {reason}");
        assert_eq!(outcome.updated_input, None);
    }
}

#[test]
fn spawn_failure_fails_closed() {
    let hooks = pre_hooks(&[("true", 10.0)]);
    let tool_input = json!({});
    let outcome = hooks.run(HookEvent::PreToolUse, &input("/nonexistent/toolhost-hooks-test", &tool_input));
    assert!(deny_reason(&outcome).contains("could not start"), "{outcome:?}");
}

#[test]
fn decisions_combine_deny_over_ask_over_allow() {
    let dir = Dir::new();
    let allow = answering(
        &dir,
        "allow.sh",
        json!({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "ls"}}}),
    );
    let ask = answering(
        &dir,
        "ask.sh",
        json!({"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "unsure"}}),
    );
    let deny = answering(
        &dir,
        "deny.sh",
        json!({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}}),
    );
    let deny2 = dir.script("deny2.sh", "echo 'never' >&2; exit 2");

    let outcome = run_pre(&pre_hooks(&[(&allow, 10.0), (&ask, 10.0), (&deny, 10.0)]), &dir);
    assert_eq!(outcome.decision, Some(HookDecision::Deny { reason: "no".into(), hook: deny.clone() }));
    assert_eq!(outcome.updated_input, None, "a deny discards updated input");
    assert_eq!(outcome.ran.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>(), [&allow, &ask, &deny]);

    let outcome = run_pre(&pre_hooks(&[(&allow, 10.0), (&ask, 10.0)]), &dir);
    assert_eq!(outcome.decision, Some(HookDecision::Ask { reason: Some("unsure".into()), hook: ask.clone() }));
    assert_eq!(outcome.updated_input, Some(json!({"command": "ls"})));

    let outcome = run_pre(&pre_hooks(&[(&deny, 10.0), (&allow, 10.0), (&deny2, 10.0)]), &dir);
    assert_eq!(
        outcome.decision,
        Some(HookDecision::Deny { reason: "no; never".into(), hook: format!("{deny}, {deny2}") })
    );
}

#[test]
fn hooks_run_concurrently() {
    let dir = Dir::new();
    // Each hook marks its start, then waits (up to 10 s) for the other's
    // mark: run one after the other, the first would give up and fail.
    let rendezvous = |me: &str, other: &str| {
        format!(
            "touch {me}.started\ni=0\nwhile [ ! -e {other}.started ]; do\n  i=$((i+1))\n  \
             [ $i -gt 200 ] && {{ echo 'alone' >&2; exit 1; }}\n  sleep 0.05\ndone\n\
             echo '{{\"hookSpecificOutput\": {{\"permissionDecision\": \"allow\"}}}}'"
        )
    };
    let a = dir.script("a.sh", &rendezvous("a", "b"));
    let b = dir.script("b.sh", &rendezvous("b", "a"));
    let outcome = run_pre(&pre_hooks(&[(&a, 30.0), (&b, 30.0)]), &dir);
    assert_eq!(outcome.decision, Some(HookDecision::Allow { reason: None, hook: format!("{a}, {b}") }));
    assert_eq!(outcome.ran.len(), 2);
}

#[test]
fn event_json_sent_to_the_hook() {
    let dir = Dir::new();
    let cmd = dir.script(
        "record.sh",
        "cat > \"$0.event.json\"\npwd -P > \"$0.cwd\"\nprintf %s \"$TOOLHOST_PROJECT_DIR\" > \"$0.env\"",
    );
    let hooks = compile(json!({
        "PreToolUse": [{"hooks": [{"type": "command", "command": cmd}]}],
        "PostToolUse": [{"hooks": [{"type": "command", "command": cmd}]}],
        "PostToolUseFailure": [{"hooks": [{"type": "command", "command": cmd}]}],
    }));
    let tool_input = json!({"command": "ls", "timeout": 5});
    let response = json!({"content": [{"type": "text", "text": "a\nb"}]});
    let base = input(dir.cwd(), &tool_input);
    let cases = [
        (HookEvent::PreToolUse, base, json!({})),
        (
            HookEvent::PostToolUse,
            EventInput { tool_response: Some(&response), ..base },
            json!({"tool_response": response}),
        ),
        (
            HookEvent::PostToolUseFailure,
            EventInput { error: Some("exit status 1"), ..base },
            json!({"error": "exit status 1"}),
        ),
    ];
    let event_file = format!("{}.event.json", dir.path("record.sh").display());
    for (event, input, extra) in cases {
        let outcome = hooks.run(event, &input);
        assert_eq!(outcome.ran.len(), 1);
        let got: Value = serde_json::from_str(&std::fs::read_to_string(&event_file).expect("the event file"))
            .expect("the hook got JSON");
        let mut want = json!({
            "session_id": "sess-1",
            "cwd": dir.cwd(),
            "permission_mode": "default",
            "hook_event_name": event.as_str(),
            "tool_name": "Bash",
            "tool_input": {"command": "ls", "timeout": 5},
            "tool_use_id": "toolu_01",
        });
        if let (Value::Object(want), Value::Object(extra)) = (&mut want, extra) {
            want.extend(extra);
        }
        assert_eq!(got, want, "{event}");
    }
    let canonical = std::fs::canonicalize(dir.cwd()).expect("canonical cwd");
    assert_eq!(dir.read("record.sh.cwd").trim(), canonical.to_str().expect("UTF-8"));
    assert_eq!(dir.read("record.sh.env"), dir.cwd());
}

#[test]
fn matchers() {
    let hook = json!([{"type": "command", "command": "true"}]);
    let only = |matcher: Value| {
        let group = match matcher {
            Value::Null => json!({"hooks": hook}),
            m => json!({"matcher": m, "hooks": hook}),
        };
        compile(json!({"PreToolUse": [group]}))
    };
    let bash_write = only(json!("Bash|Write"));
    assert!(bash_write.any(HookEvent::PreToolUse, "Bash"));
    assert!(bash_write.any(HookEvent::PreToolUse, "Write"));
    assert!(!bash_write.any(HookEvent::PreToolUse, "Read"));
    assert!(!bash_write.any(HookEvent::PreToolUse, "BashOutput"));
    assert!(!bash_write.any(HookEvent::PostToolUse, "Bash"));

    let bas = only(json!("Bas"));
    assert!(!bas.any(HookEvent::PreToolUse, "Bash"));
    assert!(bas.any(HookEvent::PreToolUse, "Bas"));

    let mcp = only(json!("mcp__.*"));
    assert!(mcp.any(HookEvent::PreToolUse, "mcp__github__search"));
    assert!(!mcp.any(HookEvent::PreToolUse, "Read"));

    for all in [json!("*"), json!(""), Value::Null] {
        let hooks = only(all.clone());
        assert!(hooks.any(HookEvent::PreToolUse, "Bash"), "{all}");
        assert!(hooks.any(HookEvent::PreToolUse, "mcp__x__y"), "{all}");
    }

    let empty = Hooks::compile(&[(HooksConfig::default(), ORIGIN.into())]).expect("compiles");
    assert!(empty.is_empty());
    assert!(!bash_write.is_empty());

    // A hook that does not match does not run.
    let dir = Dir::new();
    let tool_input = json!({});
    let outcome =
        bash_write.run(HookEvent::PreToolUse, &EventInput { tool_name: "Read", ..input(dir.cwd(), &tool_input) });
    assert_eq!(outcome, Outcome::default());
}

#[test]
fn the_same_command_runs_once() {
    let dir = Dir::new();
    let cmd = dir.script("count.sh", "echo run >> \"$0.count\"");
    let hooks = compile(json!({"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": cmd}]},
        {"hooks": [{"type": "command", "command": cmd}]},
    ]}));
    let outcome = run_pre(&hooks, &dir);
    assert_eq!(outcome.ran.len(), 1);
    assert_eq!(dir.read("count.sh.count"), "run\n");
}

#[test]
fn configuration_errors_name_the_origin() {
    let err =
        compile_err(json!({"PostToolUse": [{"matcher": "Bash(", "hooks": [{"type": "command", "command": "x"}]}]}));
    assert!(err.starts_with(&format!("{ORIGIN}: hooks.PostToolUse[0]: invalid matcher `Bash(`")), "{err}");

    let err =
        compile_err(json!({"PreToolUse": [{"matcher": "a)|(b", "hooks": [{"type": "command", "command": "x"}]}]}));
    assert!(err.contains("invalid matcher `a)|(b`"), "{err}");

    let err = compile_err(json!({"PreToolUse": [
        {"hooks": [{"type": "command", "command": "x"}]},
        {"hooks": [{"type": "command", "command": "x"}, {"type": "prompt", "command": "y"}]},
    ]}));
    assert!(
        err.starts_with(&format!("{ORIGIN}: hooks.PreToolUse[1].hooks[1]: unsupported hook type `prompt`")),
        "{err}"
    );

    for timeout in [json!(0), json!(-1), json!(1e9)] {
        let err =
            compile_err(json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": timeout}]}]}));
        assert!(err.contains("timeout must be a positive number"), "{err}");
    }
    let err = compile_err(json!({"PreToolUse": [{"hooks": [{"type": "command", "command": " "}]}]}));
    assert!(err.ends_with("empty command"), "{err}");

    // The second file is the bad one.
    let good: HooksConfig =
        serde_json::from_value(json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "x"}]}]}))
            .expect("deserializes");
    let bad: HooksConfig =
        serde_json::from_value(json!({"PreToolUse": [{"matcher": "[", "hooks": []}]})).expect("deserializes");
    let err = Hooks::compile(&[(good, "/a/settings.json".into()), (bad, "/b/settings.json".into())])
        .expect_err("an error")
        .to_string();
    assert!(err.starts_with("/b/settings.json: "), "{err}");
}

#[test]
fn configuration_shape() {
    // Claude Code's other events are accepted and never run; typos are errors.
    let foreign: HooksConfig = serde_json::from_value(json!({"Stop": [], "SessionStart": []})).unwrap();
    assert!(Hooks::compile(&[(foreign, "f".into())]).unwrap().is_empty());
    let typo: HooksConfig = serde_json::from_value(json!({"PreToolUSE": []})).unwrap();
    let err = Hooks::compile(&[(typo, "f".into())]).unwrap_err().to_string();
    assert!(err.contains("PreToolUSE") && err.contains("PostToolUseFailure"), "{err}");
    assert!(serde_json::from_value::<HooksConfig>(json!({"PreToolUse": [{"hooks": [{"command": "x"}]}]})).is_err());
    assert!(serde_json::from_value::<HooksConfig>(json!({"PreToolUse": [{"hooks": [{"type": "command"}]}]})).is_err());
    // Unknown keys of a group are tolerated.
    let config: HooksConfig = serde_json::from_value(json!({"PostToolUse": [
        {"matcher": "Edit", "comment": "format after edits", "hooks": [{"type": "command", "command": "fmt", "timeout": 2.5}]}
    ]}))
    .expect("deserializes");
    assert_eq!(
        config.post_tool_use,
        [MatcherGroup {
            matcher: Some("Edit".into()),
            hooks: vec![HookCommand { r#type: "command".into(), command: "fmt".into(), timeout: Some(2.5) }],
        }]
    );
}

#[test]
fn continue_false_stops() {
    let dir = Dir::new();
    let first = answering(&dir, "stop1.sh", json!({"continue": false, "stopReason": "budget exhausted"}));
    let second = answering(&dir, "stop2.sh", json!({"continue": false}));
    let outcome = run_pre(&pre_hooks(&[(&first, 10.0), (&second, 10.0)]), &dir);
    assert_eq!(outcome.stop.as_deref(), Some("budget exhausted"));
    assert_eq!(outcome.decision, None);

    let outcome = run_pre(&pre_hooks(&[(&second, 10.0)]), &dir);
    assert_eq!(outcome.stop, Some(format!("hook `{second}` stopped the agent")));
}

#[test]
fn post_tool_use_context_and_block() {
    let dir = Dir::new();
    let context = answering(
        &dir,
        "context.sh",
        json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "lint: 2 warnings"}}),
    );
    let block = answering(&dir, "block.sh", json!({"decision": "block", "reason": "tests now fail"}));
    let exit2 = dir.script("exit2.sh", "echo 'formatting changed the file' >&2; exit 2");
    let crash = dir.script("crash.sh", "exit 3");
    let hooks = compile(json!({"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": context},
        {"type": "command", "command": block},
        {"type": "command", "command": exit2},
        {"type": "command", "command": crash},
    ]}]}));
    let tool_input = json!({"command": "ls"});
    let response = json!("a\nb");
    let outcome = hooks
        .run(HookEvent::PostToolUse, &EventInput { tool_response: Some(&response), ..input(dir.cwd(), &tool_input) });
    assert_eq!(outcome.decision, None);
    assert_eq!(
        outcome.additional_context,
        [
            "lint: 2 warnings".to_string(),
            "tests now fail".into(),
            "formatting changed the file".into(),
            format!("hook `{crash}` failed: exit code 3"),
        ]
    );
    assert_eq!(outcome.ran.len(), 4);
}

#[test]
fn floods_of_output_do_not_hang() {
    let dir = Dir::new();
    let stdout = dir.script("stdout.sh", "head -c 5000000 /dev/zero | tr '\\000' a");
    let outcome = run_pre(&pre_hooks(&[(&stdout, 30.0)]), &dir);
    let reason = deny_reason(&outcome);
    assert!(reason.contains("not a JSON object: aaaa"), "{}", clip(reason, 300));
    assert!(reason.len() < 1000);

    let stderr = dir.script(
        "stderr.sh",
        "head -c 5000000 /dev/zero | tr '\\000' e >&2\necho '{\"hookSpecificOutput\": {\"permissionDecision\": \"allow\"}}'",
    );
    let outcome = run_pre(&pre_hooks(&[(&stderr, 30.0)]), &dir);
    assert_eq!(outcome.decision, Some(HookDecision::Allow { reason: None, hook: stderr }));
}

#[test]
fn long_commands_are_clipped_in_messages() {
    let long = format!("true {}", "x".repeat(200));
    let hooks = pre_hooks(&[(&long, 10.0)]);
    let dir = Dir::new();
    let outcome = run_pre(&hooks, &dir);
    assert_eq!(outcome.ran[0].0.chars().count(), LABEL_MAX + 1);
    assert!(outcome.ran[0].0.ends_with('…'));
}
