//! Permission rules: `Tool` or `Tool(content)` in the `allow`, `ask` and
//! `deny` lists of the settings, compiled once into a [`RuleSet`] that tells,
//! for one call, which rule of each list applies.
//!
//! What `content` means depends on what the tool declares its input to be
//! (the contract's `input-roles`), never on its name:
//! - for a tool with a command field (Bash), `Tool(git status)` is one exact
//!   command and `Tool(npm run test:*)` every command starting with those
//!   words. They apply to every simple command of the host's parse: a
//!   compound command is allowed only when each part is (read-only parts
//!   need no rule), denied or asked when any part is. Substitutions and
//!   unparsable commands are never allowed by a rule.
//! - for a tool with path fields, `Tool(…)` is a gitignore-style glob:
//!   `//abs` absolute, `~/p` under the home directory, `/p` relative to the
//!   settings file's directory, `./p` (or a pattern with a slash) relative to
//!   the working directory, a pattern without a slash matches at any depth.
//!   A rule on a directory covers what is inside. Two families name no tool
//!   but an access: `Read(…)` covers every path a tool reads or searches
//!   (Read, Glob, Grep, and any tool declaring such a path), `Edit(…)` every
//!   path a tool edits (Write, Edit, …). A path is checked as written (made
//!   absolute, `..` removed) and as resolved (symlinks followed): deny and
//!   ask rules match either form, an allow rule must match both.
//! - for a tool with address fields (and for a tool not loaded),
//!   `Tool(domain:example.com)` (or `domain:*.example.com`) matches the host
//!   of the URL or host name.
//! - Content the host cannot interpret for a tool (it declares nothing its
//!   content could mean) makes a deny or ask rule match every call of the
//!   tool, and an allow rule match none: failing closed.

use crate::fsx::{normalize, resolve};
use crate::registry::{InputRoles, PathAccess};
use crate::shell::{self, Effect, Parsed, SimpleCommand};
use globset::{GlobSet, GlobSetBuilder};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

mod commands;
mod paths;
mod suggest;

pub(crate) use crate::config::rule::Behavior;
pub(crate) use crate::config::rule::Rule;
use crate::config::rule::tool_pattern_matches;
pub(crate) use crate::config::rule::{ContentError, RuleEntry, RuleError};
use commands::*;
use paths::*;
pub(crate) use suggest::suggest;

/// What a rule's content means for a tool: what the tool declares its input
/// to be (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContentKind {
    /// Commands: the tool has a command field.
    Command,
    /// Domains: the tool has address fields.
    Address,
    /// Path globs: the tool has path fields.
    Path,
    /// Nothing the host can match.
    Opaque,
}

impl ContentKind {
    /// The kind of rule content that fits a tool declaring `roles`.
    pub fn of(roles: &InputRoles) -> ContentKind {
        if roles.command.is_some() {
            ContentKind::Command
        } else if !roles.addresses.is_empty() {
            ContentKind::Address
        } else if !roles.paths.is_empty() {
            ContentKind::Path
        } else {
            ContentKind::Opaque
        }
    }
}

/// What the loaded tools are, for compiling rules: a tool's name (and each
/// alias) → the kind of content its rules have; and each alias → its tool's
/// name, so a rule written with an older name (`KillShell`) applies to the
/// tool under its current one (`TaskStop`).
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    kinds: HashMap<String, ContentKind>,
    names: HashMap<String, String>,
}

impl Catalog {
    /// Adds a tool; a name or alias already known keeps its first holder.
    pub fn add(&mut self, name: &str, aliases: &[String], kind: ContentKind) {
        if self.kinds.contains_key(name) {
            return;
        }
        self.kinds.insert(name.to_string(), kind);
        for alias in aliases {
            if !self.kinds.contains_key(alias) {
                self.kinds.insert(alias.clone(), kind);
                self.names.insert(alias.clone(), name.to_string());
            }
        }
    }

    fn get(&self, tool: &str) -> Option<&ContentKind> {
        self.kinds.get(tool)
    }

    /// The tool a rule naming `tool` applies to: the tool's own name when
    /// `tool` is one of its aliases.
    fn canonical<'a>(&'a self, tool: &'a str) -> &'a str {
        self.names.get(tool).map_or(tool, String::as_str)
    }
}

impl FromIterator<(String, ContentKind)> for Catalog {
    fn from_iter<I: IntoIterator<Item = (String, ContentKind)>>(tools: I) -> Catalog {
        let mut catalog = Catalog::default();
        for (name, kind) in tools {
            catalog.add(&name, &[], kind);
        }
        catalog
    }
}

impl<const N: usize> From<[(String, ContentKind); N]> for Catalog {
    fn from(tools: [(String, ContentKind); N]) -> Catalog {
        tools.into_iter().collect()
    }
}

/// Where relative things are: the working directory, the other working
/// directories, the home directory.
#[derive(Clone, Debug, Default)]
pub struct Places {
    /// The working directory of the call.
    pub cwd: PathBuf,
    /// The working directories.
    pub working: Vec<PathBuf>,
    /// The user's home directory, for `~/` rules.
    pub home: Option<PathBuf>,
}

/// The rules of every list, compiled.
#[derive(Debug, Default)]
pub struct RuleSet {
    entries: Vec<RuleEntry>,
    lists: [List; 3],
    /// The path rules of every list, in one set: one pass over a path.
    paths: PathRules,
    places: Places,
    warnings: Vec<String>,
}

#[derive(Debug, Default)]
struct List {
    /// Tool → the first rule naming it wholesale.
    whole: HashMap<String, usize>,
    /// Rules naming tools by a pattern (`mcp__github__get_*`, in deny and
    /// ask lists `Web*` or `*`), in order.
    patterns: Vec<(String, usize)>,
    /// Tool → command rules.
    commands: HashMap<String, Commands>,
    /// Tool → domain rules.
    domains: HashMap<String, Vec<(Domain, usize)>>,
    /// Tool → the first rule whose content the host cannot interpret.
    opaque: HashMap<String, usize>,
}

#[derive(Debug)]
enum Domain {
    Exact(String),
    /// `*.example.com`: any subdomain of `example.com`.
    Under(String),
}

impl Domain {
    /// Whether `host` ([`host_of`]'s) is this domain's.
    fn matches(&self, host: &str) -> bool {
        match self {
            Domain::Exact(d) => host == d,
            Domain::Under(d) => toolhost_primitives::host::is_under(host, d),
        }
    }
}

/// One call, as the rules see it: the tool and what its declared input
/// fields hold.
#[derive(Clone, Debug)]
pub struct Subject<'a> {
    /// The tool's canonical name.
    pub tool: &'a str,
    /// The paths the call names and how it uses each (relative ones are
    /// taken from the working directory; an empty search path is the working
    /// directory itself).
    pub paths: Vec<(&'a str, PathAccess)>,
    /// The host's parse of the command the call runs.
    pub command: Option<&'a Parsed>,
    /// The command as written, where known.
    pub text: Option<&'a str>,
    /// The URLs or host names the call connects to.
    pub addresses: Vec<&'a str>,
}

impl<'a> Subject<'a> {
    /// The call of `tool` with `input`, read through the tool's declared
    /// `roles`; `command` is the parse of its command field.
    pub fn of(tool: &'a str, roles: &'a InputRoles, input: &'a Value, command: Option<&'a Parsed>) -> Subject<'a> {
        let (paths, addresses, text) = (roles.paths_in(input), roles.addresses_in(input), roles.command_in(input));
        Subject { tool, paths, command, text, addresses }
    }

    /// A command started through the process capability by `tool`: `text`
    /// as a shell reads it, and its parse.
    pub fn command(tool: &'a str, text: &'a str, parsed: &'a Parsed) -> Subject<'a> {
        Subject { tool, paths: Vec::new(), command: Some(parsed), text: Some(text), addresses: Vec::new() }
    }
}

/// The rule of each list that applies to a call, if any.
#[derive(Clone, Debug, Default)]
pub struct Verdicts<'a> {
    pub deny: Option<&'a RuleEntry>,
    pub ask: Option<&'a RuleEntry>,
    pub allow: Option<&'a RuleEntry>,
    /// Why the call cannot be checked against the deny and ask rules there
    /// are (a Bash command whose programs cannot all be known): it needs
    /// approval whatever the mode.
    pub unclear: Option<String>,
}

/// The first rule of `list` naming `tool` wholesale: by its name, for an
/// MCP server's tool by its server's (`mcp__SERVER`, `mcp__SERVER__*`), or
/// by a pattern its name matches.
fn whole(list: &List, tool: &str) -> Option<usize> {
    let by_name = list.whole.get(tool).copied();
    let server = crate::registry::server_of(tool).filter(|s| tool.len() > "mcp__".len() + s.len());
    let by_server = server.and_then(|s| list.whole.get(&format!("mcp__{s}")).copied());
    // (A pattern that names a server literally, the only kind an allow list
    // takes, starts `mcp__SERVER__`: only that server's tools match it.)
    let by_pattern = list.patterns.iter().find(|(p, _)| tool_pattern_matches(p, tool)).map(|(_, i)| *i);
    earliest(earliest(by_name, by_server), by_pattern)
}

impl RuleSet {
    /// Compiles `entries`, reading each rule's content as what the tool it
    /// names declares its input to be (`catalog`; `Read(…)` and `Edit(…)`
    /// are always paths, and a tool not loaded takes `domain:` content as
    /// domains). Fails on a rule whose content is malformed for that (a
    /// command rule that is not one simple command, a bad glob).
    pub fn compile(entries: Vec<RuleEntry>, places: Places, catalog: &Catalog) -> Result<RuleSet, RuleError> {
        let mut set = RuleSet { places, ..RuleSet::default() };
        let (mut path_builder, mut path_globs) = (GlobSetBuilder::new(), Vec::new());
        for (index, entry) in entries.iter().enumerate() {
            let list = &mut set.lists[entry.behavior.index()];
            let rule = &entry.rule;
            let tool = catalog.canonical(&rule.tool);
            let Some(content) = &rule.content else {
                let tool = tool.strip_suffix("__*").filter(|t| t.starts_with("mcp__")).unwrap_or(tool);
                if tool.contains('*') {
                    list.patterns.push((tool.to_string(), index));
                } else {
                    list.whole.entry(tool.to_string()).or_insert(index);
                }
                continue;
            };
            let fail = |problem: ContentError| RuleError::Content { entry: entry.to_string(), problem };
            let kind = match tool {
                READ_FAMILY | EDIT_FAMILY => ContentKind::Path,
                tool => match catalog.get(tool) {
                    Some(kind) => *kind,
                    None if content.starts_with("domain:") => ContentKind::Address,
                    None => ContentKind::Opaque,
                },
            };
            let domain = content.strip_prefix("domain:");
            match (kind, domain) {
                (ContentKind::Command, _) => {
                    list.commands.entry(tool.to_string()).or_default().add(content, index).map_err(fail)?;
                }
                (ContentKind::Path, _) => {
                    let (pattern, dir_only) =
                        path_pattern(content, entry.base.as_deref(), &set.places).map_err(fail)?;
                    let glob =
                        toolhost_hidden_paths::glob(&pattern).map_err(|e| fail(ContentError::Glob(e.to_string())))?;
                    path_builder.add(glob);
                    let scope = PathScope::of(tool);
                    path_globs.push(PathGlob { pattern, behavior: entry.behavior, scope, dir_only, entry: index });
                }
                (ContentKind::Address, Some(domain)) => {
                    let domain = domain.trim();
                    let domain = match domain.strip_prefix("*.") {
                        Some(d) => Domain::Under(toolhost_primitives::host::normalize(d)),
                        None => Domain::Exact(toolhost_primitives::host::normalize(domain)),
                    };
                    list.domains.entry(tool.to_string()).or_default().push((domain, index));
                }
                (ContentKind::Address, None) | (ContentKind::Opaque, _) => {
                    set.warnings.push(format!(
                        "{entry}: toolhost cannot interpret `{content}` for {}; {}",
                        rule.tool,
                        match entry.behavior {
                            Behavior::Allow => "the rule allows nothing",
                            Behavior::Ask | Behavior::Deny => "the rule applies to every call of the tool",
                        }
                    ));
                    list.opaque.entry(tool.to_string()).or_insert(index);
                }
            }
        }
        let compiled = path_builder.build().map_err(|e| RuleError::PathSet(e.to_string()))?;
        set.paths = PathRules { set: compiled, globs: path_globs };
        set.entries = entries;
        Ok(set)
    }

    /// Every rule, in the order given.
    pub fn entries(&self) -> &[RuleEntry] {
        &self.entries
    }

    /// Rules that compiled but cannot take effect as written.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Where relative paths are resolved.
    pub fn places(&self) -> &Places {
        &self.places
    }

    /// The absolute patterns of the deny and ask path rules covering what
    /// `tool` reads or searches through the fields of `roles` (dir-only ones
    /// end in `/`): what a directory walk must skip, since only the path
    /// given to the tool was checked.
    pub fn hidden_paths(&self, tool: &str, roles: &InputRoles) -> Vec<String> {
        let reads: Vec<PathAccess> = roles.paths.iter().map(|p| p.access).filter(|a| *a != PathAccess::Edit).collect();
        self.hidden_from(tool, &reads)
    }

    /// The patterns of [`RuleSet::hidden_paths`] for a search `tool` runs
    /// through the host (the `search` capability), whatever its fields
    /// declare: a search reads.
    pub fn hidden_from_searches(&self, tool: &str) -> Vec<String> {
        self.hidden_from(tool, &[PathAccess::Search])
    }

    fn hidden_from(&self, tool: &str, reads: &[PathAccess]) -> Vec<String> {
        self.paths
            .globs
            .iter()
            .filter(|g| g.behavior != Behavior::Allow && reads.iter().any(|a| g.scope.covers(tool, *a)))
            .flat_map(|g| {
                let pattern = toolhost_hidden_paths::pattern(&g.pattern, g.dir_only);
                // A working directory known by two paths (through a symlink):
                // the walk may see either, so hide under both.
                let mut forms = vec![pattern.clone()];
                for (a, b) in self.same_dirs() {
                    if let Some(rest) = pattern.strip_prefix(&a).filter(|r| r.starts_with('/')) {
                        forms.push(format!("{b}{rest}"));
                    }
                }
                forms
            })
            .collect()
    }

    /// Pairs of working-directory paths (as glob text) naming the same
    /// directory.
    fn same_dirs(&self) -> Vec<(String, String)> {
        let working = &self.places.working;
        let real: Vec<Option<PathBuf>> = working.iter().map(|w| w.canonicalize().ok()).collect();
        let mut pairs = Vec::new();
        for (i, a) in working.iter().enumerate() {
            for (j, b) in working.iter().enumerate() {
                if i != j && real[i].is_some() && real[i] == real[j] {
                    pairs.push((globset::escape(&a.to_string_lossy()), globset::escape(&b.to_string_lossy())));
                }
            }
        }
        pairs
    }

    /// The deny rule naming `tool` wholesale: such a tool is not offered.
    pub fn denies_tool(&self, tool: &str) -> Option<&RuleEntry> {
        whole(&self.lists[Behavior::Deny.index()], tool).map(|i| &self.entries[i])
    }

    /// Which rule of each list applies to the call.
    pub fn check(&self, subject: &Subject<'_>) -> Verdicts<'_> {
        if self.entries.is_empty() {
            return Verdicts::default();
        }
        let tool = subject.tool;
        // Path rules: only when one covers the tool (resolving symlinks costs
        // a system call per path component). Deny and ask rules match any
        // path of the call; an allow rule covers the call only when every
        // path has one.
        let mut by_path = [None; 3];
        let mut all_allowed = !subject.paths.is_empty();
        for &(written, access) in &subject.paths {
            if !self.paths.globs.iter().any(|g| g.scope.covers(tool, access)) {
                all_allowed = false;
                continue;
            }
            let path = if written.is_empty() { self.places.cwd.clone() } else { self.places.cwd.join(written) };
            let hits = path_match(&self.paths, tool, access, &path);
            for behavior in [Behavior::Ask, Behavior::Deny] {
                let slot = &mut by_path[behavior.index()];
                *slot = earliest(*slot, hits[behavior.index()]);
            }
            let allow = Behavior::Allow.index();
            match hits[allow] {
                Some(hit) => by_path[allow] = earliest(by_path[allow], Some(hit)),
                None => all_allowed = false,
            }
        }
        if !all_allowed {
            by_path[Behavior::Allow.index()] = None;
        }
        // What a command names as files is read as a file tool would read
        // it: `cat .env` meets `Read(./.env)` (deny and ask rules only).
        if let Some(parsed) = subject.command
            && self.paths.globs.iter().any(|g| g.behavior != Behavior::Allow && g.scope == PathScope::Reads)
        {
            for word in literal_paths(parsed) {
                // Only what exists can be read (one system call rules out
                // subcommands and patterns: `run`, `test`, `TODO`).
                let path = self.expand(word);
                if std::fs::symlink_metadata(&path).is_err() {
                    continue;
                }
                let hits = path_match(&self.paths, READ_FAMILY, PathAccess::Read, &path);
                for behavior in [Behavior::Ask, Behavior::Deny] {
                    let slot = &mut by_path[behavior.index()];
                    *slot = earliest(*slot, hits[behavior.index()]);
                }
            }
        }
        let mut verdicts = Verdicts::default();
        if let (Some(parsed), true) = (subject.command, self.has_command_limits(tool)) {
            verdicts.unclear = unclear(parsed, 0);
        }
        for behavior in Behavior::ALL {
            let found = self.find(behavior, subject).or(by_path[behavior.index()]).map(|i| &self.entries[i]);
            match behavior {
                Behavior::Allow => verdicts.allow = found,
                Behavior::Ask => verdicts.ask = found,
                Behavior::Deny => verdicts.deny = found,
            }
        }
        verdicts
    }

    /// A word of a command as a path: `~/x` under home, relative ones under
    /// the working directory.
    fn expand(&self, word: &str) -> PathBuf {
        match (word.strip_prefix('~'), &self.places.home) {
            (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
                home.join(rest.trim_start_matches('/'))
            }
            _ => self.places.cwd.join(word),
        }
    }

    /// The first word of a Bash command naming a path outside the working
    /// directories (absolute, under `~`, or climbing out with `..`), or one
    /// whose value is only known when it runs (`$HOME/x`): such a command is
    /// not read-only "inside the working directories", so the mode does not
    /// run it unasked.
    pub fn path_outside<'p>(&self, parsed: &'p Parsed) -> Option<&'p str> {
        for (word, value, dynamic) in file_words(parsed) {
            // A word an expansion starts (`$HOME/x`, `${DIR}`) can name anything.
            if dynamic && (word.starts_with('$') || word.starts_with('"') || word.contains("..")) {
                return Some(word);
            }
            let Some(value) = value else { continue };
            let climbs = value.split('/').any(|c| c == "..");
            if !(value.starts_with('/') || value.starts_with('~') || climbs) {
                continue;
            }
            let path = normalize(&self.expand(value));
            let inside = toolhost_primitives::path::is_inside(&path, &self.places.working);
            let device = matches!(
                path.to_str(),
                Some(
                    "/dev/null"
                        | "/dev/zero"
                        | "/dev/random"
                        | "/dev/urandom"
                        | "/dev/stdin"
                        | "/dev/stdout"
                        | "/dev/stderr"
                )
            );
            if !inside && !device {
                return Some(word);
            }
        }
        None
    }

    /// Whether some deny or ask rule names commands of `tool`.
    fn has_command_limits(&self, tool: &str) -> bool {
        [Behavior::Deny, Behavior::Ask].iter().any(|b| self.lists[b.index()].commands.contains_key(tool))
    }

    /// The rule of one list applying to the call, path rules aside.
    fn find(&self, behavior: Behavior, subject: &Subject<'_>) -> Option<usize> {
        let list = &self.lists[behavior.index()];
        let tool = subject.tool;
        if let Some(i) = whole(list, tool) {
            return Some(i);
        }
        if behavior != Behavior::Allow
            && let Some(&i) = list.opaque.get(tool)
        {
            return Some(i);
        }
        let by_command = match (subject.command, list.commands.get(tool)) {
            (Some(parsed), Some(commands)) => match behavior {
                Behavior::Allow => self.command_allow(commands, parsed, subject.text),
                Behavior::Ask | Behavior::Deny => command_any(commands, parsed, subject.text),
            },
            _ => None,
        };
        let by_address = list.domains.get(tool).and_then(|domains| {
            // Deny and ask: any address matching; allow: every address.
            let hits: Vec<Option<usize>> = subject
                .addresses
                .iter()
                .map(|a| match host_of(a) {
                    Some(host) => domains.iter().find(|(d, _)| d.matches(&host)).map(|&(_, i)| i),
                    // No host can be told: the deny and ask rules on the
                    // tool's addresses apply (fail closed); allow rules do not.
                    None if behavior == Behavior::Allow => None,
                    None => domains.iter().map(|&(_, i)| i).min(),
                })
                .collect();
            match behavior {
                Behavior::Allow if hits.iter().all(Option::is_some) => hits.into_iter().flatten().min(),
                Behavior::Allow => None,
                Behavior::Ask | Behavior::Deny => hits.into_iter().flatten().min(),
            }
        });
        earliest(by_command, by_address)
    }

    /// The rule allowing every part of a command that is not read-only by
    /// itself, or a rule that is the whole command `text` word for word;
    /// `None` when some part has none or the command cannot be allowed by
    /// rules at all.
    fn command_allow(&self, commands: &Commands, parsed: &Parsed, text: Option<&str>) -> Option<usize> {
        // What the user approved, character for character: whatever it is
        // made of, it runs as approved.
        if let Some(exact) = text.and_then(|t| commands.whole_text(t)) {
            return Some(exact);
        }
        if parsed.parse_error
            || parsed.command_substitution
            || parsed.process_substitution
            || parsed.commands.is_empty()
        {
            return None;
        }
        let mut first = None;
        for cmd in &parsed.commands {
            if shell::command_read_only(cmd) {
                continue;
            }
            if cmd.assignments.iter().any(|a| shell::assignment_changes_what_runs(a)) {
                return None;
            }
            if cmd.redirections.iter().any(|r| r.writes() && !self.inside_working(&r.target)) {
                return None;
            }
            let found = candidates(cmd, false)
                .into_iter()
                .find_map(|(argv, dynamic)| {
                    match_command(commands, &argv[0], argv, dynamic, false)
                        .or_else(|| commands.text_of(argv, dynamic, true))
                })
                .or_else(|| commands.text_of_whole(cmd, true))?;
            first = Some(first.map_or(found, |f: usize| f.min(found)));
        }
        first
    }

    /// Whether a redirection target stays inside the working directories.
    fn inside_working(&self, target: &str) -> bool {
        if target.contains(['$', '`', '*', '?', '[', '~']) {
            return false;
        }
        toolhost_primitives::path::is_inside(&normalize(&self.places.cwd.join(target)), &self.places.working)
    }
}

/// The earlier of two rule indexes, if any.
fn earliest(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The host an address names, lower-cased and without a trailing dot: a
/// URL's host, else the host of the address read as `http://ADDRESS` (a
/// bare host, `host:port`, `host/path`, `user@host`, as a tool taking
/// addresses may well accept them). `None` when neither has one.
fn host_of(address: &str) -> Option<String> {
    // `example.com:8080` parses as a URL of scheme `example.com`: a URL
    // counts only when it has a host.
    let host_in = |text: &str| url::Url::parse(text).ok().and_then(|u| u.host_str().map(str::to_string));
    let host = host_in(address).or_else(|| match address.contains("://") {
        true => None,
        false => host_in(&format!("http://{address}")),
    })?;
    let host = toolhost_primitives::host::normalize(&host);
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests;
