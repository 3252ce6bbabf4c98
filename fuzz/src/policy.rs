//! Permission rules (their syntax, and `decide` over rule sets and
//! commands), settings files and hook output.

use arbitrary::{Result, Unstructured};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use toolhost::Behavior;
use toolhost::InputRoles;
use toolhost::PermissionMode;
use toolhost::internals::{Catalog, ContentKind, Places, Rule, RuleEntry, RuleSet, Subject};
use toolhost::internals::{Decision, Facts, ToolCheck, decide as decide_step};
use toolhost::internals::{HookDecision, HookEvent, outcome_of_exits};

/// A rule's text: what parses prints back to itself.
pub fn rules(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(rule) = Rule::parse(text) {
        let printed = rule.to_string();
        assert_eq!(Rule::parse(&printed), Ok(rule.clone()), "{text:?} printed as {printed:?}");
    }
}

const MODES: [PermissionMode; 5] = [
    PermissionMode::Default,
    PermissionMode::Plan,
    PermissionMode::AcceptEdits,
    PermissionMode::DontAsk,
    PermissionMode::BypassPermissions,
];

/// Words commands and rules are made of: read-only commands and ones that
/// write, wrappers the rules see through, flags, files.
const WORDS: &[&str] = &[
    "ls", "cat", "rm", "git", "status", "push", "log", "npm", "run", "test", "-rf", "-la", "x", "src", "sudo",
    "timeout", "5", "env", "bash", "-c", "xargs", "echo", "touch", "sed", "-i", "find", "-delete", "curl", "nice",
];

fn words(u: &mut Unstructured, most: usize) -> Result<Vec<&'static str>> {
    (0..u.int_in_range(1..=most)?).map(|_| u.choose(WORDS).copied()).collect()
}

/// One simple command, sometimes with a redirection or inside a
/// substitution.
fn part(u: &mut Unstructured) -> Result<String> {
    let mut text = words(u, 4)?.join(" ");
    match u.int_in_range(0..=7)? {
        0 => text.push_str(" > out.txt"),
        1 => text.push_str(" 2>&1"),
        2 => text = format!("echo $({text})"),
        3 => text = format!("({text})"),
        _ => {}
    }
    Ok(text)
}

const OPERATORS: &[&str] = &[" && ", " || ", "; ", " | "];

fn command(u: &mut Unstructured) -> Result<Vec<String>> {
    (0..u.int_in_range(1..=3)?).map(|_| part(u)).collect()
}

fn join(parts: &[String], u: &mut Unstructured) -> Result<String> {
    let mut text = parts[0].clone();
    for p in &parts[1..] {
        text.push_str(u.choose(OPERATORS)?);
        text.push_str(p);
    }
    Ok(text)
}

fn rule_text(u: &mut Unstructured) -> Result<String> {
    let w = words(u, 3)?.join(" ");
    Ok(match u.int_in_range(0..=5)? {
        0 => "Bash".to_string(),
        1 => format!("Bash({w})"),
        2 => format!("Bash({w}*)"),
        _ => format!("Bash({w}:*)"),
    })
}

struct World {
    places: Places,
    catalog: Catalog,
    roles: InputRoles,
}

fn world() -> &'static World {
    static WORLD: std::sync::OnceLock<World> = std::sync::OnceLock::new();
    WORLD.get_or_init(|| {
        let cwd = std::env::temp_dir().join("toolhost-fuzz-decide");
        let _ = std::fs::create_dir_all(&cwd);
        let roles = InputRoles { command: Some("command".into()), ..InputRoles::default() };
        World {
            places: Places { cwd: cwd.clone(), working: vec![cwd], home: Some(PathBuf::from("/home/fuzz")) },
            catalog: [("Bash".to_string(), ContentKind::of(&roles))].into_iter().collect(),
            roles,
        }
    })
}

fn entry(text: &str, behavior: Behavior) -> Option<RuleEntry> {
    Some(RuleEntry { rule: Rule::parse(text).ok()?, behavior, origin: Arc::from("fuzz"), base: None })
}

fn decision(set: &RuleSet, mode: PermissionMode, command: &str) -> Decision {
    let w = world();
    let parsed = toolhost::internals::parse(command);
    let read_only = toolhost::internals::classify_parsed(&parsed).read_only;
    let input = json!({ "command": command });
    let subject = Subject::of("Bash", &w.roles, &input, Some(&parsed));
    decide_step(&Facts { rules: set.check(&subject), ..Facts::new("Bash", mode, read_only, ToolCheck::Passthrough) })
}

fn allowed(d: &Decision) -> bool {
    matches!(d, Decision::Allow { .. })
}

/// `decide` over generated rule sets and commands, in every mode: adding a
/// deny rule never makes a call allowed; a compound command is allowed only
/// if each of its parts is; a part that is denied alone is never allowed
/// inside a compound.
pub fn decide(data: &[u8]) {
    crate::shell::prepare();
    let mut u = Unstructured::new(data);
    let Ok((entries, extra_deny, parts)) = (|| -> Result<_> {
        let n = u.int_in_range(0..=6)?;
        let mut entries = Vec::new();
        for _ in 0..n {
            let behavior = *u.choose(&Behavior::ALL)?;
            entries.extend(entry(&rule_text(&mut u)?, behavior));
        }
        Ok((entries, rule_text(&mut u)?, command(&mut u)?))
    })() else {
        return;
    };
    let Ok(whole) = join(&parts, &mut u) else { return };
    let w = world();
    let compile = |entries: Vec<RuleEntry>| RuleSet::compile(entries, w.places.clone(), &w.catalog);
    let Ok(set) = compile(entries.clone()) else { return };
    let mut with_deny = entries;
    with_deny.extend(entry(&extra_deny, Behavior::Deny));
    let Ok(denying) = compile(with_deny) else { return };
    for mode in MODES {
        let before = decision(&set, mode, &whole);
        let after = decision(&denying, mode, &whole);
        assert!(
            !allowed(&after) || allowed(&before),
            "adding deny {extra_deny:?} allowed {whole:?} in {mode:?}: {before:?} -> {after:?}"
        );
        if parts.len() > 1 {
            let alone: Vec<Decision> = parts.iter().map(|p| decision(&set, mode, p)).collect();
            if allowed(&before) {
                for (p, d) in parts.iter().zip(&alone) {
                    assert!(allowed(d), "{whole:?} is allowed in {mode:?} but its part {p:?} is not: {d:?}");
                }
            }
            for (p, d) in parts.iter().zip(&alone) {
                if matches!(d, Decision::Deny { .. }) {
                    assert!(!allowed(&before), "{p:?} is denied alone, yet {whole:?} is allowed in {mode:?}");
                }
            }
        }
    }
}

/// A settings file (as `--settings` JSON text): never a panic; what loads
/// names only rules that print back to themselves.
pub fn settings(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let text = if text.trim_start().starts_with('{') { text.to_string() } else { format!("{{{text}") };
    let sources = toolhost::Sources { command_line_files: vec![text], ..toolhost::Sources::default() };
    let cwd = std::env::temp_dir();
    if let Ok(settings) = toolhost::settings::load(&sources, &cwd) {
        for e in &settings.rules {
            assert_eq!(Rule::parse(&e.rule.to_string()).as_ref(), Ok(&e.rule));
        }
        assert_ne!(settings.max_tool_concurrency, Some(0));
        // A quota that is kept limits something, and can be met.
        for (q, _) in &settings.quotas {
            assert!(q.calls_per_minute.or(q.calls_in_flight).is_some() || q.cpu_seconds_per_hour.is_some(), "{q:?}");
            assert!(q.calls_per_minute != Some(0) && q.calls_in_flight != Some(0), "{q:?}");
            assert!(q.cpu_seconds_per_hour.is_none_or(|s| s.is_finite() && s > 0.0), "{q:?}");
            assert!(!q.identity.is_empty() && q.tool.as_deref() != Some(""), "{q:?}");
        }
    }
}

/// Hook output, as the hooks' exits are read and combined: a PreToolUse
/// hook that fails (an exit code other than 0 and 2, output that is not a
/// JSON object) denies; a hook after the call never decides or rewrites;
/// a rewritten input is a JSON object and never survives a denial; texts
/// stay within their cap.
pub fn hooks(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok((event, exits)) = (|| -> Result<_> {
        let event = *u.choose(&HookEvent::ALL)?;
        let exits: Vec<(i32, Vec<u8>, Vec<u8>)> = (0..u.int_in_range(1..=3)?)
            .map(|_| {
                let code = *u.choose(&[0, 0, 0, 2, 1, 127, -1])?;
                let stdout = match u.int_in_range(0..=4)? {
                    0 => u.arbitrary::<Vec<u8>>()?,
                    1 => br#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"a":1}}}"#.to_vec(),
                    2 => br#"{"decision":"block","reason":"no","continue":false}"#.to_vec(),
                    3 => format!(
                        r#"{{"hookSpecificOutput":{{"permissionDecision":{},"updatedInput":{},"additionalContext":{}}}}}"#,
                        serde_json::to_string(&u.arbitrary::<String>()?).unwrap_or_default(),
                        u.choose(&["{}", "[]", "1", "null", "{\"x\":[]}"])?,
                        serde_json::to_string(&"c".repeat(u.int_in_range(0..=12_000)?)).unwrap_or_default(),
                    )
                    .into_bytes(),
                    _ => Vec::new(),
                };
                Ok((code, stdout, u.arbitrary::<Vec<u8>>()?))
            })
            .collect::<Result<_>>()?;
        Ok((event, exits))
    })() else {
        return;
    };
    let failed_pre = event == HookEvent::PreToolUse && exits.iter().any(|(code, _, _)| !matches!(code, 0 | 2));
    let outcome = outcome_of_exits(event, exits);
    if failed_pre {
        assert!(matches!(outcome.decision, Some(HookDecision::Deny { .. })), "a failed hook did not deny: {outcome:?}");
    }
    if event != HookEvent::PreToolUse {
        assert!(outcome.decision.is_none() && outcome.updated_input.is_none(), "{event:?} decided: {outcome:?}");
    }
    if let Some(input) = &outcome.updated_input {
        assert!(input.is_object(), "a rewritten input that is not an object: {input}");
        assert!(!matches!(outcome.decision, Some(HookDecision::Deny { .. })), "a rewrite survived a denial");
    }
    for text in outcome.additional_context.iter().chain(&outcome.stop) {
        assert!(text.chars().count() <= 10_001 + 200, "a hook text of {} characters", text.chars().count());
    }
}
