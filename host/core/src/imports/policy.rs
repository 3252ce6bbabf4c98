//! `policy`: what the permission rules keep from the call, so a tool that
//! walks directories skips what the host did not check.

use super::CallView;
use crate::contract::bindings::toolhost::tool::policy;
use crate::process::CommandRules;

/// The permission rules as they apply to one call, for the host imports:
/// the paths its directory walks must skip, and (through
/// [`CommandRules`]) the commands it may start. The policy implements it.
pub(crate) trait CallRules: CommandRules {
    /// Absolute glob patterns of what deny and ask rules keep from the
    /// tool's reads (a trailing `/`: directories only).
    fn hidden_paths(&self) -> Vec<String>;

    /// The same for a search the host runs for the tool (`search.run`),
    /// which reads whatever the tool's fields declare.
    fn hidden_from_searches(&self) -> Vec<String>;
}

impl policy::Host for CallView<'_> {
    fn hidden_paths(&mut self) -> Vec<String> {
        match &self.scope.rules {
            Some(rules) => rules.hidden_paths(),
            None => Vec::new(),
        }
    }
}
