//! Permission decisions (step 5 of the pipeline).
//!
//! The order is the one of the seeds: deny rules → hook decision → ask rules →
//! the tool's own `check-permissions` → the mode → allow rules → ask. This
//! module implements the tool's check and the mode; rules and hooks (settings
//! files) plug in through [`Policy`], whose default has none. An `ask` goes to
//! the [`Approver`] when there is one; without one it is refused with a message
//! naming the mode that would allow the call.

use serde_json::Value;
use std::fmt;

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
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The tool's own `check-permissions`.
    Tool,
    /// The permission mode.
    Mode(PermissionMode),
    /// The user, asked through the [`Approver`].
    User,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Tool => f.write_str("tool"),
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
pub struct Facts {
    pub tool: String,
    pub mode: PermissionMode,
    pub read_only: bool,
    pub check: ToolCheck,
}

/// Decides with the tool's check and the mode.
pub fn decide(facts: &Facts) -> Decision {
    let mode = facts.mode;
    let ask = |message: String, suggested_rules: Vec<String>, source: Source| match mode {
        PermissionMode::BypassPermissions => Decision::Allow { input: None, source: Source::Mode(mode) },
        PermissionMode::Plan => Decision::Deny {
            message: format!("{message} Plan mode only runs read-only calls."),
            source: Source::Mode(mode),
        },
        PermissionMode::DontAsk => Decision::Deny {
            message: format!("{message} dontAsk mode refuses whatever would need approval."),
            source: Source::Mode(mode),
        },
        PermissionMode::Default | PermissionMode::AcceptEdits => Decision::Ask { message, suggested_rules, source },
    };
    match &facts.check {
        ToolCheck::Deny(reason) => {
            return Decision::Deny { message: reason.clone(), source: Source::Tool };
        }
        ToolCheck::Ask { message, suggested_rules } => {
            return ask(message.clone(), suggested_rules.clone(), Source::Tool);
        }
        ToolCheck::Allow(input) if facts.read_only || mode != PermissionMode::Plan => {
            return Decision::Allow { input: input.clone(), source: Source::Tool };
        }
        ToolCheck::Allow(_) | ToolCheck::Passthrough => {}
    }
    if facts.read_only {
        return Decision::Allow { input: None, source: Source::Mode(mode) };
    }
    match mode {
        PermissionMode::BypassPermissions => Decision::Allow { input: None, source: Source::Mode(mode) },
        PermissionMode::Default | PermissionMode::AcceptEdits | PermissionMode::DontAsk | PermissionMode::Plan => ask(
            format!("{} is not read-only and needs approval.", facts.tool),
            vec![facts.tool.clone()],
            Source::Mode(mode),
        ),
    }
}

/// A request to the user.
#[derive(Clone, Debug)]
pub struct AskRequest {
    pub tool: String,
    pub tool_use_id: String,
    pub input: Value,
    pub message: String,
    pub suggested_rules: Vec<String>,
}

/// The user's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    AllowOnce,
    Deny(String),
}

/// Asks the user about a call (the CLI's terminal prompt, an MCP elicitation,
/// a library callback). Called on the thread running the call.
pub trait Approver: Send + Sync {
    fn ask(&self, request: &AskRequest) -> Answer;
}

/// The rules and hooks that take part in decisions. Issue #4 fills this in
/// (settings files, PreToolUse hooks); today it holds none and every call is
/// decided by the tool's check and the mode.
#[derive(Clone, Debug, Default)]
pub struct Policy {}

#[cfg(test)]
mod tests {
    use super::*;
    use PermissionMode::*;

    fn facts(mode: PermissionMode, read_only: bool, check: ToolCheck) -> Facts {
        Facts { tool: "T".into(), mode, read_only, check }
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
