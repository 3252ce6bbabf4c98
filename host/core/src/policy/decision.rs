//! The permission decision (step 5 of the pipeline): a pure function of the
//! call's [`Facts`].
//!
//! The order is the one of the seeds: deny rules → hook decision → ask rules →
//! the tool's own `check-permissions` → the mode → allow rules → ask (with
//! sensitive paths, protected in every mode, before the tool's check), except
//! that every refusal comes first: a deny rule, a hook's deny, the tool's own
//! deny. An
//! `ask` goes to the [`super::Approver`] when there is one; without one it is
//! refused with a message naming the rule or mode that would allow the call.

use super::hooks::HookDecision;
use super::rules::{Behavior, Places, RuleEntry, Subject, Verdicts};
use crate::fsx::{normalize, resolve};
use crate::registry::PathAccess;
use serde_json::Value;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

pub use crate::config::PermissionMode;

/// The tool's own view of a call (its `check-permissions`), after the host has
/// decided how far to trust it.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolCheck {
    /// Allow, with the input rewritten when it is set.
    Allow(Option<Value>),
    /// Refuse, with the reason for the model.
    Deny(String),
    /// Ask the user, with rules that would allow the call from now on.
    Ask {
        /// Why, for the user.
        message: String,
        /// Rules that would allow the call from now on.
        suggested_rules: Vec<String>,
    },
    /// No opinion: the rules and the mode decide.
    Passthrough,
}

/// What decided a call.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A rule of the settings.
    Rule { behavior: Behavior, rule: String, origin: Arc<str> },
    /// A PreToolUse hook (its command).
    Hook(String),
    /// The tool's own `check-permissions`.
    Tool,
    /// A safety check: a sensitive path, a command the rules cannot check.
    Safety,
    /// The permission mode.
    Mode(PermissionMode),
    /// The user, asked through the [`Approver`].
    User,
    /// A quota of the caller's identity ([`crate::quotas`]).
    Quota(crate::quotas::QuotaKind),
}

impl Source {
    fn rule(entry: &RuleEntry) -> Source {
        Source::Rule { behavior: entry.behavior, rule: entry.rule.to_string(), origin: Arc::clone(&entry.origin) }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Rule { behavior, rule, origin } => write!(f, "{} rule `{rule}` ({origin})", behavior.as_str()),
            Source::Hook(command) => write!(f, "hook `{command}`"),
            Source::Tool => f.write_str("tool"),
            Source::Safety => f.write_str("safety check"),
            Source::Mode(m) => write!(f, "mode:{m}"),
            Source::User => f.write_str("user"),
            Source::Quota(kind) => write!(f, "quota {}", kind.setting()),
        }
    }
}

/// The outcome of step 5.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Run, with the input rewritten when `input` is set.
    Allow {
        /// The rewritten input, if any.
        input: Option<Value>,
        /// What decided.
        source: Source,
    },
    /// Refuse; `message` goes to the model.
    Deny {
        /// Why, for the model.
        message: String,
        /// What decided.
        source: Source,
    },
    /// Ask the user.
    Ask {
        /// Why, for the user.
        message: String,
        /// Rules that would allow the call from now on.
        suggested_rules: Vec<String>,
        /// What decided.
        source: Source,
    },
}

/// What step 5 needs to know about the call.
#[derive(Clone, Debug)]
pub struct Facts<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The permission mode of the call.
    pub mode: PermissionMode,
    /// Whether the call only reads.
    pub read_only: bool,
    /// The tool's own check, as far as the host trusts it.
    pub check: ToolCheck,
    /// The rule of each list that applies.
    pub rules: Verdicts<'a>,
    /// The PreToolUse hooks' combined decision.
    pub hook: Option<&'a HookDecision>,
    /// Why the call writes a protected path, if it does.
    pub sensitive: Option<String>,
}

impl<'a> Facts<'a> {
    /// A call with no rule, hook or protected path: decided by the tool's
    /// check and the mode.
    pub fn new(tool: &'a str, mode: PermissionMode, read_only: bool, check: ToolCheck) -> Facts<'a> {
        Facts { tool, mode, read_only, check, rules: Verdicts::default(), hook: None, sensitive: None }
    }
}

/// Decides in the order of the seeds: deny rules → hook decision → ask rules
/// → the tool's own check → the mode → allow rules → ask, the tool's deny
/// moved up beside the other refusals; the safety checks
/// (sensitive paths, commands the rules cannot check) come right after a
/// hook's deny, so nothing but a deny overrides them.
pub fn decide(facts: &Facts<'_>) -> Decision {
    let mode = facts.mode;
    // An ask as the mode resolves it: bypass runs it (unless it protects a
    // sensitive path), plan and dontAsk refuse it, the others ask.
    let ask = |message: String, suggested_rules: Vec<String>, source: Source| match mode {
        PermissionMode::BypassPermissions if source != Source::Safety => {
            Decision::Allow { input: None, source: Source::Mode(mode) }
        }
        PermissionMode::Plan => Decision::Deny {
            message: format!("{message} Plan mode refuses whatever would need approval."),
            source: Source::Mode(mode),
        },
        PermissionMode::DontAsk => Decision::Deny {
            message: format!("{message} dontAsk mode refuses whatever would need approval."),
            source: Source::Mode(mode),
        },
        PermissionMode::Default | PermissionMode::AcceptEdits | PermissionMode::BypassPermissions => {
            Decision::Ask { message, suggested_rules, source }
        }
    };
    // 1. Deny rules beat everything, hooks included.
    if let Some(rule) = facts.rules.deny {
        return Decision::Deny { message: format!("The {rule} forbids it."), source: Source::rule(rule) };
    }
    // 2. A hook's deny.
    if let Some(HookDecision::Deny { reason, hook }) = facts.hook {
        return Decision::Deny { message: reason.clone(), source: Source::Hook(hook.clone()) };
    }
    // The tool's own refusal: a refusal, like the two above, so nothing
    // below (a hook's allow or ask, an ask rule resolved by bypass mode, the
    // user) turns it into a run (`tests::every_combination_is_monotone`
    // found an ask rule doing that in bypass mode).
    if let ToolCheck::Deny(reason) = &facts.check {
        return Decision::Deny { message: reason.clone(), source: Source::Tool };
    }
    // Safety checks, asked in every mode and whatever allows the call (a
    // hook's allow included): commands the deny and ask rules cannot be
    // checked against, writes to sensitive paths.
    if let Some(why) = &facts.rules.unclear {
        return ask(why.clone(), Vec::new(), Source::Safety);
    }
    if let Some(why) = &facts.sensitive {
        return ask(why.clone(), Vec::new(), Source::Safety);
    }
    // 3. A hook's ask or allow (deny rules were checked first).
    match facts.hook {
        Some(HookDecision::Ask { reason, hook }) => {
            let message = reason.clone().unwrap_or_else(|| format!("The hook `{hook}` asks for approval."));
            return ask(message, Vec::new(), Source::Hook(hook.clone()));
        }
        Some(HookDecision::Allow { hook, .. }) => {
            return Decision::Allow { input: None, source: Source::Hook(hook.clone()) };
        }
        Some(HookDecision::Deny { .. }) | None => {}
    }
    // 4. Ask rules.
    if let Some(rule) = facts.rules.ask {
        return ask(format!("The {rule} asks for approval."), Vec::new(), Source::rule(rule));
    }
    // 5. The tool's own check.
    let mut held = None;
    match &facts.check {
        ToolCheck::Allow(input) if facts.read_only || mode != PermissionMode::Plan => {
            return Decision::Allow { input: input.clone(), source: Source::Tool };
        }
        ToolCheck::Ask { message, suggested_rules } => held = Some((message, suggested_rules)),
        ToolCheck::Allow(_) | ToolCheck::Passthrough | ToolCheck::Deny(_) => {}
    }
    // 6. The mode.
    match mode {
        PermissionMode::BypassPermissions => return Decision::Allow { input: None, source: Source::Mode(mode) },
        PermissionMode::Plan if !facts.read_only => {
            return Decision::Deny {
                message: format!("Plan mode only runs read-only calls, and this {} call is not read-only.", facts.tool),
                source: Source::Mode(mode),
            };
        }
        PermissionMode::Default | PermissionMode::AcceptEdits | PermissionMode::DontAsk | PermissionMode::Plan => {
            if facts.read_only && held.is_none() {
                return Decision::Allow { input: None, source: Source::Mode(mode) };
            }
        }
    }
    // 7. Allow rules.
    if let Some(rule) = facts.rules.allow {
        return Decision::Allow { input: None, source: Source::rule(rule) };
    }
    // 8. Ask.
    match held {
        Some((message, suggested)) => ask(message.clone(), suggested.clone(), Source::Tool),
        None => ask(
            format!("{} is not read-only and needs approval.", facts.tool),
            vec![facts.tool.to_string()],
            Source::Mode(mode),
        ),
    }
}

/// Why writing `path` needs the user's approval in every mode, if it does:
/// files that configure shells, git, editors, SSH or toolhost itself (a call
/// that may rewrite them could grant itself more).
pub(crate) fn sensitive_path(path: &Path) -> Option<String> {
    const DIRS: &[&str] = &[".git", ".ssh", ".toolhost", ".claude", ".vscode", ".idea", ".husky", ".gnupg", ".aws"];
    const FILES: &[&str] = &[
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".zshrc",
        ".zprofile",
        ".zshenv",
        ".zlogin",
        ".gitconfig",
        ".gitmodules",
        ".envrc",
        ".netrc",
        ".npmrc",
        ".pypirc",
        ".mcp.json",
    ];
    let mut components = path.components().map(|c| c.as_os_str().to_str().unwrap_or(""));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let why = if let Some(dir) = components.find(|c| DIRS.contains(c)) {
        format!("{} is inside a `{dir}` directory, which is protected.", path.display())
    } else if FILES.contains(&name) {
        format!("{} is a protected configuration file.", path.display())
    } else {
        return None;
    };
    Some(format!("{why} Writing it always needs approval."))
}

/// Why the call writes a protected path (see [`sensitive_path`]), if it
/// does: a path it edits, or what its command redirects into.
pub(crate) fn sensitive_write(subject: &Subject<'_>, places: &Places) -> Option<String> {
    let check = |written: &str| {
        let path = normalize(&places.cwd.join(written));
        sensitive_path(&path).or_else(|| sensitive_path(&resolve(&path)?))
    };
    let edits = subject.paths.iter().filter(|(_, access)| *access == PathAccess::Edit);
    if let Some(why) = edits.filter_map(|(path, _)| check(path)).next() {
        return Some(why);
    }
    let home = places.home.as_deref();
    subject.command?.commands.iter().flat_map(|c| &c.redirections).filter(|r| r.writes()).find_map(|r| {
        match (r.target.strip_prefix("~/"), home) {
            (Some(rest), Some(home)) => check(&home.join(rest).to_string_lossy()),
            (Some(_), None) => None,
            (None, _) => check(&r.target),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use PermissionMode::*;

    fn facts(mode: PermissionMode, read_only: bool, check: ToolCheck) -> Facts<'static> {
        Facts::new("T", mode, read_only, check)
    }

    fn kind(d: &Decision) -> &'static str {
        match d {
            Decision::Allow { .. } => "allow",
            Decision::Deny { .. } => "deny",
            Decision::Ask { .. } => "ask",
        }
    }

    #[test]
    fn modes_decide_passthrough_calls() {
        let table = [
            (Default, true, "allow"),
            (Default, false, "ask"),
            (Plan, true, "allow"),
            (Plan, false, "deny"),
            (AcceptEdits, true, "allow"),
            (AcceptEdits, false, "ask"),
            (DontAsk, true, "allow"),
            (DontAsk, false, "deny"),
            (BypassPermissions, true, "allow"),
            (BypassPermissions, false, "allow"),
        ];
        for (mode, ro, want) in table {
            assert_eq!(kind(&decide(&facts(mode, ro, ToolCheck::Passthrough))), want, "{mode} read_only={ro}");
        }
    }

    #[test]
    fn the_tools_own_check_comes_first() {
        let ask = ToolCheck::Ask { message: "outside".into(), suggested_rules: vec![] };
        for mode in PermissionMode::ALL {
            assert_eq!(kind(&decide(&facts(mode, true, ToolCheck::Deny("no".into())))), "deny", "{mode}");
        }
        assert_eq!(kind(&decide(&facts(Default, true, ask.clone()))), "ask");
        assert_eq!(kind(&decide(&facts(Plan, true, ask.clone()))), "deny");
        assert_eq!(kind(&decide(&facts(DontAsk, true, ask.clone()))), "deny");
        assert_eq!(kind(&decide(&facts(BypassPermissions, true, ask))), "allow");
        assert_eq!(kind(&decide(&facts(AcceptEdits, false, ToolCheck::Allow(None)))), "allow");
        assert_eq!(kind(&decide(&facts(Plan, false, ToolCheck::Allow(None)))), "deny", "plan never runs writes");
    }

    /// Every input `decide` has, in every combination.
    struct Space {
        rules: [RuleEntry; 3],
        hooks: [Option<HookDecision>; 4],
    }

    fn space() -> Space {
        let entry = |behavior| RuleEntry {
            rule: crate::policy::rules::Rule { tool: "T".into(), content: None },
            behavior,
            origin: Arc::from("test"),
            base: None,
        };
        Space {
            rules: [entry(Behavior::Deny), entry(Behavior::Ask), entry(Behavior::Allow)],
            hooks: [
                None,
                Some(HookDecision::Allow { reason: None, hook: "h".into() }),
                Some(HookDecision::Ask { reason: None, hook: "h".into() }),
                Some(HookDecision::Deny { reason: "no".into(), hook: "h".into() }),
            ],
        }
    }

    fn checks() -> [ToolCheck; 5] {
        [
            ToolCheck::Passthrough,
            ToolCheck::Allow(None),
            ToolCheck::Allow(Some(serde_json::json!({"rewritten": true}))),
            ToolCheck::Ask { message: "tool asks".into(), suggested_rules: vec!["T(x)".into()] },
            ToolCheck::Deny("tool denies".into()),
        ]
    }

    /// Calls `f` with the facts of every combination: mode × read-only ×
    /// the tool's check × each rule list matching or not × the rules being
    /// uncheckable × the hook's decision × a sensitive path.
    fn every_combination<'s>(space: &'s Space, mut f: impl FnMut(&Facts<'s>)) -> usize {
        let mut n = 0;
        for mode in PermissionMode::ALL {
            for read_only in [false, true] {
                for check in checks() {
                    for lists in 0..8u8 {
                        for unclear in [None, Some("cannot tell".to_string())] {
                            for hook in &space.hooks {
                                for sensitive in [None, Some(".git/config is protected".to_string())] {
                                    let rules = Verdicts {
                                        deny: (lists & 1 != 0).then_some(&space.rules[0]),
                                        ask: (lists & 2 != 0).then_some(&space.rules[1]),
                                        allow: (lists & 4 != 0).then_some(&space.rules[2]),
                                        unclear: unclear.clone(),
                                    };
                                    let facts = Facts {
                                        tool: "T",
                                        mode,
                                        read_only,
                                        check: check.clone(),
                                        rules,
                                        hook: hook.as_ref(),
                                        sensitive,
                                    };
                                    f(&facts);
                                    n += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        n
    }

    /// The decision on `facts` with one change.
    fn changed<'s>(facts: &Facts<'s>, change: impl FnOnce(&mut Facts<'s>)) -> Decision {
        let mut other = facts.clone();
        change(&mut other);
        decide(&other)
    }

    /// Where a mode stands, from the most (0) to the least restrictive.
    fn rank(mode: PermissionMode) -> usize {
        PermissionMode::ALL.iter().position(|m| *m == mode).unwrap()
    }

    #[test]
    fn every_combination_keeps_the_invariants() {
        let space = space();
        let n = every_combination(&space, |facts| {
            let d = decide(facts);
            let why = || format!("{facts:?} -> {d:?}");
            let hook_denies = matches!(facts.hook, Some(HookDecision::Deny { .. }));
            // A deny rule, then a hook's deny, always wins.
            if facts.rules.deny.is_some() {
                assert!(
                    matches!(&d, Decision::Deny { source: Source::Rule { behavior: Behavior::Deny, .. }, .. }),
                    "{}",
                    why()
                );
                return;
            }
            if hook_denies {
                assert!(matches!(&d, Decision::Deny { source: Source::Hook(_), .. }), "{}", why());
                return;
            }
            // A safety check is never waved through, not by bypass, a hook's
            // allow or an allow rule.
            if facts.rules.unclear.is_some() || facts.sensitive.is_some() {
                assert!(!matches!(d, Decision::Allow { .. }), "{}", why());
            }
            // Then the tool's own deny, whatever else allows or asks.
            if matches!(facts.check, ToolCheck::Deny(_)) {
                assert!(matches!(&d, Decision::Deny { source: Source::Tool, .. }), "{}", why());
                return;
            }
            // Plan and dontAsk never ask; plan runs a call that is not
            // read-only only on a hook's word.
            if matches!(facts.mode, PermissionMode::Plan | PermissionMode::DontAsk) {
                assert!(!matches!(d, Decision::Ask { .. }), "{}", why());
            }
            if facts.mode == PermissionMode::Plan && !facts.read_only {
                assert!(
                    !matches!(d, Decision::Allow { .. }) || matches!(facts.hook, Some(HookDecision::Allow { .. })),
                    "{}",
                    why()
                );
            }
            // Bypass asks only for a safety check.
            if facts.mode == PermissionMode::BypassPermissions && matches!(d, Decision::Ask { .. }) {
                assert!(matches!(&d, Decision::Ask { source: Source::Safety, .. }), "{}", why());
            }
            // Only the tool's own check rewrites the input.
            if let Decision::Allow { input: Some(_), source } = &d {
                assert_eq!(*source, Source::Tool, "{}", why());
            }
            // An ask rule or a hook's ask never ends in an allow, but in
            // bypass mode.
            if (facts.rules.ask.is_some() || matches!(facts.hook, Some(HookDecision::Ask { .. })))
                && !matches!(facts.hook, Some(HookDecision::Allow { .. }))
                && facts.mode != PermissionMode::BypassPermissions
            {
                assert!(!matches!(d, Decision::Allow { .. }), "{}", why());
            }
        });
        assert_eq!(n, 5 * 2 * 5 * 8 * 2 * 4 * 2);
    }

    /// What changes when one input changes, all else equal: a deny rule or
    /// an ask rule never makes a call run; an allow rule never turns a
    /// refusal from a deny, a hook, the tool or a safety check into a run; a
    /// call that writes is never treated better than the same call reading;
    /// a stricter mode never allows more.
    #[test]
    fn every_combination_is_monotone() {
        let space = space();
        every_combination(&space, |facts| {
            let d = decide(facts);
            let allowed = matches!(d, Decision::Allow { .. });
            let runs = |d: &Decision| matches!(d, Decision::Allow { .. });
            if !allowed {
                let denied = changed(facts, |f| f.rules.deny = Some(&space.rules[0]));
                assert!(!runs(&denied), "a deny rule allowed {facts:?}");
                let asked = changed(facts, |f| f.rules.ask = Some(&space.rules[1]));
                assert!(!runs(&asked), "an ask rule allowed {facts:?}");
            }
            if let Decision::Deny {
                source: Source::Rule { .. } | Source::Hook(_) | Source::Tool | Source::Safety,
                ..
            } = d
            {
                let more = changed(facts, |f| f.rules.allow = Some(&space.rules[2]));
                assert_eq!(more, d, "an allow rule changed a refusal of {facts:?}");
            }
            if allowed && !facts.read_only {
                assert!(runs(&changed(facts, |f| f.read_only = true)), "{facts:?} runs writing but not reading");
            }
            if allowed {
                for mode in PermissionMode::ALL.into_iter().filter(|m| rank(*m) > rank(facts.mode)) {
                    assert!(runs(&changed(facts, |f| f.mode = mode)), "{facts:?} runs, yet not in the looser {mode}");
                }
            }
            if matches!(d, Decision::Deny { .. }) {
                for mode in PermissionMode::ALL.into_iter().filter(|m| rank(*m) < rank(facts.mode)) {
                    assert!(
                        matches!(changed(facts, |f| f.mode = mode), Decision::Deny { .. }),
                        "{facts:?} is refused, yet not in the stricter {mode}"
                    );
                }
            }
        });
    }

    #[test]
    fn protected_paths_are_named_with_why() {
        for (path, why) in [
            ("/w/.git/config", "inside a `.git` directory"),
            ("/w/sub/.ssh/id_rsa", "inside a `.ssh` directory"),
            ("/home/u/.bashrc", "a protected configuration file"),
            ("/w/.mcp.json", "a protected configuration file"),
        ] {
            let message = sensitive_path(Path::new(path)).unwrap_or_else(|| panic!("{path} not protected"));
            assert!(message.starts_with(path) && message.contains(why), "{message}");
            assert!(message.ends_with("Writing it always needs approval."), "{message}");
        }
        for path in ["/w/src/main.rs", "/w/git/config", "/w/bashrc", "/w/.bashrc.d/x", "/w/.gitignore"] {
            assert_eq!(sensitive_path(Path::new(path)), None, "{path}");
        }
    }

    #[test]
    fn protected_writes_by_edits_and_redirections() {
        let cwd = tempfile::tempdir().unwrap();
        let places = Places {
            cwd: cwd.path().to_path_buf(),
            working: vec![cwd.path().to_path_buf()],
            home: Some("/home/u".into()),
        };
        let subject = |paths: Vec<(&'static str, PathAccess)>, command: Option<&'static toolhost_shell::Parsed>| {
            Subject { tool: "T", paths, command, text: None, addresses: Vec::new() }
        };
        // A path the call edits, relative to the working directory; one it
        // only reads is not a write.
        assert!(sensitive_write(&subject(vec![(".git/hooks/pre-commit", PathAccess::Edit)], None), &places).is_some());
        assert_eq!(sensitive_write(&subject(vec![(".git/config", PathAccess::Read)], None), &places), None);
        assert_eq!(sensitive_write(&subject(vec![("src/a.rs", PathAccess::Edit)], None), &places), None);
        // Redirections: into a protected file, under `~/`, and not.
        let parsed = |c: &str| -> &'static toolhost_shell::Parsed { Box::leak(Box::new(crate::shell::parse(c))) };
        let why = sensitive_write(&subject(Vec::new(), Some(parsed("echo x >> .envrc"))), &places).unwrap();
        assert!(why.contains(".envrc"), "{why}");
        let why = sensitive_write(&subject(Vec::new(), Some(parsed("echo x > ~/.zshrc"))), &places).unwrap();
        assert!(why.starts_with("/home/u/.zshrc"), "{why}");
        assert_eq!(sensitive_write(&subject(Vec::new(), Some(parsed("cat .envrc > out.txt"))), &places), None);
        assert_eq!(sensitive_write(&subject(Vec::new(), Some(parsed("cat < .envrc"))), &places), None);
        let homeless = Places { home: None, ..places.clone() };
        assert_eq!(sensitive_write(&subject(Vec::new(), Some(parsed("echo x > ~/.zshrc"))), &homeless), None);
    }

    #[test]
    fn modes_and_sources_print_as_the_audit_log_names_them() {
        let printed: Vec<String> = PermissionMode::ALL.iter().map(ToString::to_string).collect();
        assert_eq!(printed, ["plan", "dontAsk", "default", "acceptEdits", "bypassPermissions"]);
        let space = space();
        let sources = [
            (Source::rule(&space.rules[0]), "deny rule `T` (test)"),
            (Source::Hook("check.sh".into()), "hook `check.sh`"),
            (Source::Tool, "tool"),
            (Source::Safety, "safety check"),
            (Source::Mode(Plan), "mode:plan"),
            (Source::User, "user"),
        ];
        for (source, text) in sources {
            assert_eq!(source.to_string(), text);
        }
    }

    #[test]
    fn modes_parse_by_their_settings_names() {
        for m in PermissionMode::ALL {
            assert_eq!(m.as_str().parse::<PermissionMode>().unwrap(), m);
        }
        assert!("yolo".parse::<PermissionMode>().is_err());
    }
}
