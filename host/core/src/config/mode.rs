//! The permission mode, as settings and the command line name it.

use std::fmt;

/// The permission mode (see `docs/permissions.md`, "Modes").
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
