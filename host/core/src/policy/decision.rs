//! The permission decision (step 5 of the pipeline): a pure function of the
//! call's [`Facts`].
//!
//! The order is the one of the seeds: deny rules → hook decision → ask rules →
//! the tool's own `check-permissions` → the mode → allow rules → ask (with
//! sensitive paths, protected in every mode, before the tool's check). An
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

/// The permission mode (see the README).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PermissionMode {
    /// Read-only calls inside the working directories run; anything else asks.
    #[default]
    Default,
    /// Read-only calls run; everything else is refused.
    Plan,
    /// Like `default`, and file edits inside the working directories run.
    AcceptEdits,
    /// Like `default`, but whatever would ask is refused.
    DontAsk,
    /// Everything runs except what a deny rule or the tool itself forbids.
    BypassPermissions,
}

impl PermissionMode {
    /// Every mode, from the most to the least restrictive.
    pub const ALL: [PermissionMode; 5] = [
        PermissionMode::Plan,
        PermissionMode::DontAsk,
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::BypassPermissions,
    ];

    /// The name used on the command line and in settings.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::Plan => "plan",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::BypassPermissions => "bypassPermissions",
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for PermissionMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        PermissionMode::ALL.into_iter().find(|m| m.as_str() == s).ok_or_else(|| {
            format!("unknown permission mode `{s}` (expected default, plan, acceptEdits, dontAsk or bypassPermissions)")
        })
    }
}

/// The tool's own view of a call (its `check-permissions`), after the host has
/// decided how far to trust it.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolCheck {
    Allow(Option<Value>),
    Deny(String),
    Ask { message: String, suggested_rules: Vec<String> },
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
        }
    }
}

/// The outcome of step 5.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Run, with the input rewritten when `input` is set.
    Allow { input: Option<Value>, source: Source },
    /// Refuse; `message` goes to the model.
    Deny { message: String, source: Source },
    /// Ask the user.
    Ask { message: String, suggested_rules: Vec<String>, source: Source },
}

/// What step 5 needs to know about the call.
#[derive(Clone, Debug)]
pub struct Facts<'a> {
    pub tool: &'a str,
    pub mode: PermissionMode,
    pub read_only: bool,
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
/// → the tool's own check → the mode → allow rules → ask; the safety checks
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
        ToolCheck::Deny(reason) => {
            return Decision::Deny { message: reason.clone(), source: Source::Tool };
        }
        ToolCheck::Allow(input) if facts.read_only || mode != PermissionMode::Plan => {
            return Decision::Allow { input: input.clone(), source: Source::Tool };
        }
        ToolCheck::Ask { message, suggested_rules } => held = Some((message, suggested_rules)),
        ToolCheck::Allow(_) | ToolCheck::Passthrough => {}
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
pub fn sensitive_path(path: &Path) -> Option<String> {
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
pub fn sensitive_write(subject: &Subject<'_>, places: &Places) -> Option<String> {
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

    #[test]
    fn modes_parse_by_their_settings_names() {
        for m in PermissionMode::ALL {
            assert_eq!(m.as_str().parse::<PermissionMode>().unwrap(), m);
        }
        assert!("yolo".parse::<PermissionMode>().is_err());
    }
}
