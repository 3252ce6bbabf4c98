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
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod commands;
mod paths;
mod suggest;
mod syntax;

use commands::*;
use paths::*;
pub(crate) use suggest::suggest;
pub use syntax::Rule;
pub(crate) use syntax::RuleError;

/// Which list a rule is in. Strength: deny > ask > allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Behavior {
    /// The call runs without asking.
    Allow,
    /// The user is asked.
    Ask,
    /// The call is refused.
    Deny,
}

impl Behavior {
    /// Every behavior, in the order rules are listed in settings.
    pub const ALL: [Behavior; 3] = [Behavior::Allow, Behavior::Ask, Behavior::Deny];

    fn index(self) -> usize {
        match self {
            Behavior::Allow => 0,
            Behavior::Ask => 1,
            Behavior::Deny => 2,
        }
    }

    /// The name of the list in settings.
    pub fn as_str(self) -> &'static str {
        match self {
            Behavior::Allow => "allow",
            Behavior::Ask => "ask",
            Behavior::Deny => "deny",
        }
    }
}

/// What is wrong with a rule's content.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ContentError {
    #[error("Prefix cannot be empty before :*. Specify a command prefix before :*. Examples: Bash(npm *), Bash(git *)")]
    EmptyPrefix,
    #[error("not a pattern toolhost can match: {0}")]
    Pattern(String),
    #[error("`~` is used but the home directory is unknown")]
    NoHome,
    #[error("not a valid path pattern: {0}")]
    Glob(String),
}

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

/// A rule in a list, with where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleEntry {
    /// The rule.
    pub rule: Rule,
    /// What it does to a call it matches.
    pub behavior: Behavior,
    /// Where it was written: a settings file's path, or `command line`.
    pub origin: Arc<str>,
    /// The directory `/p` path patterns are relative to (the settings
    /// file's directory); `None`: the working directory.
    pub base: Option<PathBuf>,
}

impl fmt::Display for RuleEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} rule `{}` ({})", self.behavior.as_str(), self.rule, self.origin)
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
    let by_pattern = list.patterns.iter().find(|(p, _)| syntax::tool_pattern_matches(p, tool)).map(|(_, i)| *i);
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
mod tests {
    use super::*;

    /// Rule texts from every combination of a tool name, spacing and up to
    /// three pieces of content (parentheses, escapes, globs, prefixes,
    /// domains, paths): whatever parses prints as a text that parses back to
    /// the same rule, and printing again changes nothing.
    #[test]
    fn every_rule_prints_back_to_itself() {
        const TOOLS: &[&str] = &["Bash", "Read", "mcp__srv__tool", "mcp__srv", "a.b-c_d", "", "Bad Tool", "T(x)"];
        const PIECES: &[&str] = &[
            "",
            "*",
            ":*",
            "(",
            ")",
            "\\",
            "\\(",
            " ",
            "a b",
            "**/x",
            "domain:x.com",
            "~/",
            "//abs",
            "./r",
            "npm run",
            "\"q\"",
        ];
        let mut parsed = 0;
        for tool in TOOLS {
            for a in PIECES {
                for b in PIECES {
                    for c in PIECES {
                        let content = format!("{a}{b}{c}");
                        for text in [
                            format!("{tool}({content})"),
                            format!(" {tool} ( {content} ) "),
                            format!("{tool}{content}"),
                        ] {
                            let Ok(rule) = Rule::parse(&text) else { continue };
                            parsed += 1;
                            let printed = rule.to_string();
                            assert_eq!(Rule::parse(&printed).as_ref(), Ok(&rule), "{text:?} printed as {printed:?}");
                            assert_eq!(Rule::parse(&printed).unwrap().to_string(), printed, "{text:?}");
                        }
                    }
                }
            }
        }
        assert!(parsed > 10_000, "{parsed} texts parsed");
    }
    use crate::registry::PathField;
    use serde_json::json;

    fn entries(list: &[(Behavior, &str)]) -> Vec<RuleEntry> {
        list.iter()
            .map(|&(behavior, text)| RuleEntry {
                rule: Rule::parse(text).unwrap(),
                behavior,
                origin: Arc::from("test"),
                base: Some(PathBuf::from("/etc/toolhost")),
            })
            .collect()
    }

    fn places() -> Places {
        Places { cwd: "/work/p".into(), working: vec!["/work/p".into()], home: Some("/home/u".into()) }
    }

    /// What the test tools declare: the built-ins' declarations, a fetcher
    /// with a URL, a third-party tool moving files from one path to another,
    /// and tools that declare nothing.
    fn roles(tool: &str) -> InputRoles {
        let paths = |fields: &[(&str, PathAccess)]| InputRoles {
            paths: fields.iter().map(|&(f, access)| PathField { field: f.into(), access }).collect(),
            ..InputRoles::default()
        };
        match tool {
            "Bash" | "Shell" => InputRoles { command: Some("command".into()), ..InputRoles::default() },
            "Read" => paths(&[("file_path", PathAccess::Read)]),
            "Write" | "Edit" => paths(&[("file_path", PathAccess::Edit)]),
            "Glob" | "Grep" => paths(&[("path", PathAccess::Search)]),
            "Mover" => paths(&[("/from/path", PathAccess::Read), ("to", PathAccess::Edit)]),
            "WebFetch" => InputRoles { addresses: vec!["url".into(), "hosts".into()], ..InputRoles::default() },
            _ => InputRoles::default(),
        }
    }

    fn catalog() -> Catalog {
        ["Bash", "Shell", "Read", "Write", "Edit", "Glob", "Grep", "Mover", "WebFetch", "Other", "Third"]
            .into_iter()
            .map(|t| (t.to_string(), ContentKind::of(&roles(t))))
            .collect()
    }

    #[test]
    fn a_rule_naming_an_alias_applies_to_the_tool() {
        let mut catalog = Catalog::default();
        catalog.add("TaskStop", &["KillShell".to_string()], ContentKind::Opaque);
        catalog.add("Other", &["TaskStop".to_string()], ContentKind::Opaque);
        let s = RuleSet::compile(entries(&[(Behavior::Deny, "KillShell")]), places(), &catalog).unwrap();
        assert!(s.denies_tool("TaskStop").is_some());
        assert!(s.denies_tool("KillShell").is_none());
        let s = RuleSet::compile(entries(&[(Behavior::Deny, "TaskStop")]), places(), &catalog).unwrap();
        assert!(s.denies_tool("Other").is_none(), "a name taken by a tool is never another's alias");
    }

    fn set(list: &[(Behavior, &str)]) -> RuleSet {
        RuleSet::compile(entries(list), places(), &catalog()).unwrap()
    }

    /// Which list decides, by strength, and the rule's text.
    fn strongest(set: &RuleSet, tool: &str, input: Value) -> Option<String> {
        let roles = roles(tool);
        let parsed = roles.command_in(&input).map(shell::parse);
        let v = set.check(&Subject::of(tool, &roles, &input, parsed.as_ref()));
        v.deny.or(v.ask).or(v.allow).map(|e| format!("{} {}", e.behavior.as_str(), e.rule))
    }

    #[test]
    fn rules_parse_and_print() {
        for (text, tool, content) in [
            ("Bash", "Bash", None),
            ("Bash()", "Bash", None),
            ("Bash(*)", "Bash", None),
            ("Bash(npm run test:*)", "Bash", Some("npm run test:*")),
            (" Read( ./src/** ) ", "Read", Some("./src/**")),
            ("mcp__github__create_pr", "mcp__github__create_pr", None),
            ("Bash(echo (x))", "Bash", Some("echo (x)")),
        ] {
            let rule = Rule::parse(text).unwrap();
            assert_eq!((rule.tool.as_str(), rule.content.as_deref()), (tool, content), "{text}");
        }
        assert_eq!(Rule::parse("Bash(ls -la)").unwrap().to_string(), "Bash(ls -la)");
        for bad in ["", "(ls)", "Bash(ls", "Ba sh", "Bash(ls) x"] {
            assert!(Rule::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_server_rule_covers_every_tool_of_that_server_only() {
        use Behavior::*;
        let s = set(&[(Deny, "mcp__fs"), (Allow, "mcp__git__*"), (Ask, "mcp__git__push")]);
        assert_eq!(strongest(&s, "mcp__fs__read_file", json!({})).as_deref(), Some("deny mcp__fs"));
        assert_eq!(strongest(&s, "mcp__fsx__read_file", json!({})), None, "another server");
        assert_eq!(strongest(&s, "mcp__git__status", json!({})).as_deref(), Some("allow mcp__git__*"));
        assert_eq!(strongest(&s, "mcp__git__push", json!({})).as_deref(), Some("ask mcp__git__push"));
        assert!(s.denies_tool("mcp__fs__write_file").is_some() && s.denies_tool("mcp__git__push").is_none());
        assert!(s.denies_tool("mcp__fs").is_some(), "the rule names itself");
        assert!(Rule::parse("mcp__fs__*").is_ok());
    }

    #[test]
    fn wildcard_tool_names_deny_and_ask_anywhere_and_allow_within_a_server() {
        use Behavior::*;
        for (text, behavior, ok) in [
            ("mcp__github__get_*", Allow, true),
            ("mcp__github__*", Allow, true),
            ("mcp__git*", Allow, false),
            ("mcp__*", Allow, false),
            ("mcp__*__x", Allow, false),
            ("Bash*", Allow, false),
            ("*", Allow, false),
            ("Web*", Deny, true),
            ("*", Ask, true),
            ("mcp__*", Deny, true),
        ] {
            assert_eq!(Rule::parse_in(text, behavior).is_ok(), ok, "{text} in {behavior:?}");
        }
        assert!(Rule::parse("Bash*(ls)").is_err(), "a pattern takes no content");
        let s = set(&[(Deny, "Web*"), (Ask, "mcp__*__push"), (Allow, "mcp__github__get_*")]);
        assert_eq!(strongest(&s, "WebFetch", json!({})).as_deref(), Some("deny Web*"));
        assert!(s.denies_tool("WebSearch").is_some() && s.denies_tool("Read").is_none());
        assert_eq!(strongest(&s, "mcp__git__push", json!({})).as_deref(), Some("ask mcp__*__push"));
        assert_eq!(strongest(&s, "mcp__github__get_issue", json!({})).as_deref(), Some("allow mcp__github__get_*"));
        assert_eq!(strongest(&s, "mcp__github__create_issue", json!({})), None);
        for (pattern, name, matches) in [
            ("*", "", true),
            ("a*", "a", true),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "acb", false),
            ("ab*ba", "aba", false),
            ("*x*", "yyxyy", true),
            ("Read", "Read", true),
            ("Read", "ReadX", false),
        ] {
            assert_eq!(syntax::tool_pattern_matches(pattern, name), matches, "{pattern} ~ {name}");
        }
    }

    #[test]
    fn malformed_contents_are_errors() {
        for bad in ["Bash(:*)", "Read([)"] {
            let e = RuleSet::compile(entries(&[(Behavior::Allow, bad)]), places(), &catalog()).unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn bash_prefix_and_exact_rules() {
        use Behavior::*;
        let s = set(&[(Allow, "Bash(npm run test:*)"), (Allow, "Bash(git push origin main)"), (Deny, "Bash(rm:*)")]);
        let cmd = |c: &str| strongest(&s, "Bash", json!({"command": c}));
        assert_eq!(cmd("npm run test").as_deref(), Some("allow Bash(npm run test:*)"));
        assert_eq!(cmd("npm run test -- --watch").as_deref(), Some("allow Bash(npm run test:*)"));
        assert_eq!(cmd("npm   run 'test' x").as_deref(), Some("allow Bash(npm run test:*)"));
        assert_eq!(cmd("npm run testing"), None);
        assert_eq!(cmd("npm run test && rm -rf /").as_deref(), Some("deny Bash(rm:*)"));
        assert_eq!(cmd("npm run test && curl x"), None, "every part needs a rule");
        assert_eq!(
            cmd("npm run test && ls").as_deref(),
            Some("allow Bash(npm run test:*)"),
            "read-only parts need none"
        );
        assert_eq!(cmd("npm run test $(curl x)"), None, "substitution");
        assert_eq!(cmd("git push origin main").as_deref(), Some("allow Bash(git push origin main)"));
        assert_eq!(cmd("git push origin main --force"), None, "exact");
        assert_eq!(cmd("git status"), None, "read-only: the mode decides, not a rule");
        assert_eq!(cmd("timeout 5 rm x").as_deref(), Some("deny Bash(rm:*)"));
        assert_eq!(cmd("FOO=1 env X=2 rm x").as_deref(), Some("deny Bash(rm:*)"));
        assert_eq!(cmd("find . | xargs rm").as_deref(), Some("deny Bash(rm:*)"));
        assert_eq!(cmd("setsid -f rm x").as_deref(), Some("deny Bash(rm:*)"));
        assert_eq!(cmd("echo $(rm x)").as_deref(), Some("deny Bash(rm:*)"));
        assert_eq!(cmd("/bin/rm x").as_deref(), Some("deny Bash(rm:*)"));
        assert_eq!(cmd("\\rm x").as_deref(), Some("deny Bash(rm:*)"));
        assert_eq!(cmd("bash -c 'ls; rm x'").as_deref(), Some("deny Bash(rm:*)"));
        assert_eq!(cmd("sh -ec \"bash -c 'rm -rf x'\"").as_deref(), Some("deny Bash(rm:*)"));
        assert_eq!(cmd("eval rm x").as_deref(), Some("deny Bash(rm:*)"));
        assert_eq!(cmd("find . -name '*.o' -exec rm {} +").as_deref(), Some("deny Bash(rm:*)"));
        assert_eq!(cmd("f() { rm x; }; f").as_deref(), Some("deny Bash(rm:*)"));
        assert_eq!(cmd("/tmp/npm run test"), None, "a path is not the program an allow rule names");
        assert_eq!(cmd("$'rm' -rf x").as_deref(), Some("deny Bash(rm:*)"));
        let git = set(&[(Allow, "Bash(git:*)"), (Ask, "Bash(git push:*)")]);
        let g = |c: &str| strongest(&git, "Bash", json!({"command": c}));
        assert_eq!(g("git -C . push --force").as_deref(), Some("ask Bash(git push:*)"), "options between the words");
        assert_eq!(g("git --no-pager push").as_deref(), Some("ask Bash(git push:*)"));
        assert_eq!(g("git commit -m push").as_deref(), Some("allow Bash(git:*)"), "a word that is no option stops it");
        assert_eq!(cmd("PATH=/tmp npm run test"), None, "an assignment that changes what runs");
        assert_eq!(cmd("npm run test > out.log").as_deref(), Some("allow Bash(npm run test:*)"));
        assert_eq!(cmd("npm run test > /etc/x"), None, "writes outside the working directories");
        assert_eq!(cmd("npm run test > ../x"), None);
    }

    #[test]
    fn commands_the_rules_cannot_check_are_unclear() {
        use Behavior::*;
        let limited = set(&[(Deny, "Bash(rm:*)")]);
        let open = set(&[(Allow, "Bash(npm run:*)")]);
        for (command, unclear) in [
            ("ls -la", false),
            ("bash -c 'ls && echo ok'", false),
            ("$x -rf y", true),
            ("echo rm x | sh", true),
            ("bash deploy.sh", true),
            ("source env.sh", true),
            ("bash -c \"$CMD\"", true),
            ("ls (", true),
            ("sh -c 'sh -c \"$X\"'", true),
            // Wrappers: an option toolhost does not know may take the next
            // word; an expanded word before the command may split.
            ("sudo -u root ls", false),
            ("sudo -X rm f", true),
            ("timeout $D rm f", true),
            ("nice -n $N rm f", true),
            ("env -S 'rm f' ls", true),
            ("timeout -s KILL 5 ls", false),
            ("find . $ARGS", true),
            ("find . -name '*.rs'", false),
        ] {
            let input = json!({"command": command});
            let parsed = shell::parse(command);
            let (bash, shell) = (roles("Bash"), roles("Shell"));
            let subject = Subject::of("Bash", &bash, &input, Some(&parsed));
            assert_eq!(limited.check(&subject).unclear.is_some(), unclear, "{command}");
            assert!(open.check(&subject).unclear.is_none(), "no deny or ask rule to check: {command}");
            let other_tool = Subject::of("Shell", &shell, &input, Some(&parsed));
            assert!(limited.check(&other_tool).unclear.is_none(), "Bash rules limit Bash only: {command}");
        }
    }

    #[test]
    fn path_rules_are_gitignore_style() {
        use Behavior::*;
        let s = set(&[
            (Allow, "Edit(./src/**)"),
            (Deny, "Read(*.env)"),
            (Deny, "Edit(~/.ssh/**)"),
            (Ask, "Read(//etc/secrets)"),
            (Deny, "Write(/policy.json)"),
            (Deny, "Read(build/)"),
        ]);
        let call = |tool: &str, path: &str| {
            let field = if matches!(tool, "Glob" | "Grep") { "path" } else { "file_path" };
            strongest(&s, tool, json!({ field: path }))
        };
        assert_eq!(call("Edit", "/work/p/src/a/b.rs").as_deref(), Some("allow Edit(./src/**)"));
        assert_eq!(call("Write", "src/new.rs").as_deref(), Some("allow Edit(./src/**)"), "relative to cwd");
        assert_eq!(call("Edit", "/work/p/src/../secret.rs"), None, "`..` is resolved");
        assert_eq!(call("Read", "/work/p/.env").as_deref(), Some("deny Read(*.env)"));
        assert_eq!(call("Read", "/work/p/deep/x/prod.env").as_deref(), Some("deny Read(*.env)"));
        assert_eq!(call("Grep", "/work/p/prod.env").as_deref(), Some("deny Read(*.env)"), "Read rules cover Grep");
        assert_eq!(call("Edit", "/work/p/.env"), None, "Read rules do not cover Edit");
        assert_eq!(call("Write", "/home/u/.ssh/config").as_deref(), Some("deny Edit(~/.ssh/**)"));
        assert_eq!(call("Read", "/etc/secrets/a/b").as_deref(), Some("ask Read(//etc/secrets)"), "inside a dir");
        assert_eq!(call("Write", "/etc/toolhost/policy.json").as_deref(), Some("deny Write(/policy.json)"));
        assert_eq!(call("Edit", "/etc/toolhost/policy.json"), None, "Write(…) covers Write only");
        assert_eq!(call("Read", "/work/p/build/out.o").as_deref(), Some("deny Read(build/)"));
        let up = set(&[(Deny, "Read(../shared/secrets/**)")]);
        assert_eq!(
            strongest(&up, "Read", json!({"file_path": "/work/shared/secrets/k"})).as_deref(),
            Some("deny Read(../shared/secrets/**)")
        );
    }

    #[test]
    fn symlinks_are_checked_on_both_forms() {
        use Behavior::*;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("secret")).unwrap();
        std::os::unix::fs::symlink(root.join("secret"), root.join("src/link")).unwrap();
        let places = Places { cwd: root.clone(), working: vec![root.clone()], home: None };
        let s =
            RuleSet::compile(entries(&[(Allow, "Edit(./src/**)"), (Deny, "Read(./secret/**)")]), places, &catalog())
                .unwrap();
        let link = root.join("src/link/key").to_string_lossy().into_owned();
        assert_eq!(strongest(&s, "Edit", json!({"file_path": link})), None, "allow must match the real path too");
        assert_eq!(
            strongest(&s, "Read", json!({"file_path": link})).as_deref(),
            Some("deny Read(./secret/**)"),
            "deny matches the real path"
        );
    }

    #[test]
    fn hidden_paths_cover_every_form_of_a_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap().join("w");
        std::fs::create_dir(&real).unwrap();
        let link = dir.path().canonicalize().unwrap().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let places = Places { cwd: real.clone(), working: vec![real.clone(), link.clone()], home: None };
        let list = [(Behavior::Deny, "Read(./.env)"), (Behavior::Allow, "Read(./x)")];
        let s = RuleSet::compile(entries(&list), places, &catalog()).unwrap();
        let hidden = s.hidden_paths("Grep", &roles("Grep"));
        assert_eq!(hidden, [format!("{}/.env", real.display()), format!("{}/.env", link.display())]);
        assert!(s.hidden_paths("Edit", &roles("Edit")).is_empty(), "Read rules do not hide from Edit");
        assert_eq!(s.hidden_paths("Mover", &roles("Mover")).len(), 2, "a tool that reads a path gets them too");
        assert!(s.hidden_paths("Other", &roles("Other")).is_empty(), "a tool that declares no path reads none");
    }

    #[test]
    fn domains_and_other_tools() {
        use Behavior::*;
        let s = set(&[
            (Allow, "WebFetch(domain:example.com)"),
            (Deny, "WebFetch(domain:*.evil.com)"),
            (Deny, "Plugin(whatever)"),
            (Allow, "Other(whatever)"),
            (Ask, "Third"),
        ]);
        let fetch = |u: &str| strongest(&s, "WebFetch", json!({"url": u}));
        assert_eq!(fetch("https://example.com/x").as_deref(), Some("allow WebFetch(domain:example.com)"));
        assert_eq!(fetch("https://EXAMPLE.com./x").as_deref(), Some("allow WebFetch(domain:example.com)"));
        assert_eq!(fetch("https://example.com@other.org/"), None, "the host, not the user info");
        assert_eq!(fetch("https://a.example.com/"), None);
        assert_eq!(fetch("https://a.evil.com/").as_deref(), Some("deny WebFetch(domain:*.evil.com)"));
        assert_eq!(strongest(&s, "Plugin", json!({})).as_deref(), Some("deny Plugin(whatever)"), "fails closed");
        assert_eq!(strongest(&s, "Other", json!({})), None, "an allow it cannot interpret allows nothing");
        assert_eq!(strongest(&s, "Third", json!({"a": 1})).as_deref(), Some("ask Third"));
        assert_eq!(s.warnings().len(), 2);
    }

    #[test]
    fn suggestions_would_allow_the_call() {
        let p = places();
        for (tool, input, want) in [
            ("Bash", json!({"command": "npm run build -- --prod"}), vec!["Bash(npm run:*)"]),
            ("Bash", json!({"command": "rm -rf dist && mkdir dist"}), vec!["Bash(rm -rf dist)", "Bash(mkdir dist)"]),
            ("Bash", json!({"command": "echo $(whoami)"}), vec![]),
            ("Bash", json!({"command": "make all $(whoami)"}), vec![]),
            ("Bash", json!({"command": "make all <(ls)"}), vec![]),
            ("Bash", json!({"command": "make ("}), vec![]),
            ("Bash", json!({"command": "timeout 60 make -j4 all"}), vec!["Bash(make -j4 all)"]),
            ("Bash", json!({"command": "timeout 60 cargo build --release"}), vec!["Bash(cargo build:*)"]),
            ("Bash", json!({"command": "sudo apt install x"}), vec!["Bash(sudo apt install x)"]),
            ("Bash", json!({"command": "unshare bash -c x"}), vec!["Bash(unshare bash -c x)"]),
            ("Bash", json!({"command": "python3 -c 'import os' x"}), vec!["Bash(python3 -c 'import os' x)"]),
            ("Bash", json!({"command": "git '' status x"}), vec!["Bash(git '' status x)"]),
            ("Write", json!({"file_path": "/work/p/src/a.rs"}), vec!["Edit(./src/a.rs)"]),
            ("Glob", json!({"pattern": "*"}), vec!["Read(.)"]),
            ("Grep", json!({"pattern": "x", "path": "/work/p/src"}), vec!["Read(./src)"]),
            ("Edit", json!({"file_path": "/opt/x"}), vec!["Edit(//opt/x)"]),
            ("WebFetch", json!({"url": "https://docs.rs/x"}), vec!["WebFetch(domain:docs.rs)"]),
            (
                "WebFetch",
                json!({"hosts": ["a.org:8080", "b.net"]}),
                vec!["WebFetch(domain:a.org)", "WebFetch(domain:b.net)"],
            ),
            ("Shell", json!({"command": "make deploy"}), vec!["Shell(make deploy)"]),
            ("Mover", json!({"from": {"path": "a"}, "to": "/work/p/b"}), vec!["Read(./a)", "Edit(./b)"]),
            ("Thing", json!({}), vec!["Thing"]),
        ] {
            let roles = roles(tool);
            let parsed = roles.command_in(&input).map(shell::parse);
            let subject = Subject::of(tool, &roles, &input, parsed.as_ref());
            let got = suggest(&subject, &p);
            assert_eq!(got, want, "{input}");
            if !got.is_empty() {
                let allow: Vec<_> = got.iter().map(|r| (Behavior::Allow, r.as_str())).collect();
                let s = set(&allow);
                assert!(s.check(&subject).allow.is_some(), "{got:?} allows {input}");
            }
        }
    }

    #[test]
    fn third_party_tools_get_rules_from_what_they_declare() {
        use Behavior::*;
        let s = set(&[
            (Allow, "Mover(./inbox/**)"),
            (Deny, "Edit(./locked/**)"),
            (Deny, "Read(./secret/**)"),
            (Deny, "Shell(rm:*)"),
            (Allow, "Shell(make:*)"),
        ]);
        let mover = |from: &str, to: &str| strongest(&s, "Mover", json!({"from": {"path": from}, "to": to}));
        assert_eq!(mover("inbox/a", "inbox/b").as_deref(), Some("allow Mover(./inbox/**)"), "both paths allowed");
        assert_eq!(mover("inbox/a", "outbox/b"), None, "an allow rule must cover every path");
        assert_eq!(mover("inbox/a", "locked/b").as_deref(), Some("deny Edit(./locked/**)"), "the path it edits");
        assert_eq!(mover("secret/k", "inbox/b").as_deref(), Some("deny Read(./secret/**)"), "the path it reads");
        assert_eq!(strongest(&s, "Edit", json!({"file_path": "inbox/a"})), None, "Mover's rule is Mover's");
        let shell = |c: &str| strongest(&s, "Shell", json!({"command": c}));
        assert_eq!(shell("make all && rm -rf /").as_deref(), Some("deny Shell(rm:*)"));
        assert_eq!(shell("make all").as_deref(), Some("allow Shell(make:*)"));
        assert_eq!(strongest(&s, "Bash", json!({"command": "rm x"})), None, "Shell's rules are not Bash's");
        let fetch = |hosts: Value| strongest(&set(&[(Allow, "WebFetch(domain:a.org)")]), "WebFetch", hosts);
        assert_eq!(fetch(json!({"hosts": ["a.org"]})).as_deref(), Some("allow WebFetch(domain:a.org)"), "a bare host");
        assert_eq!(fetch(json!({"hosts": ["a.org", "b.org"]})), None, "an allow rule must cover every address");
        // Content for a tool that declares nothing it could mean fails closed.
        let opaque = set(&[(Deny, "Other(x)")]);
        assert_eq!(strongest(&opaque, "Other", json!({})).as_deref(), Some("deny Other(x)"));
    }

    // The tests below pin behaviour that mutation testing (`cargo mutants`,
    // docs/development.md, "Mutation testing") found no test of.

    #[test]
    fn a_subdomain_rule_needs_a_whole_label_before_the_domain() {
        use Behavior::*;
        let s = set(&[(Deny, "WebFetch(domain:*.evil.com)")]);
        let fetch = |u: &str| strongest(&s, "WebFetch", json!({"url": u}));
        assert!(fetch("https://a.evil.com/").is_some());
        assert!(fetch("https://a.b.evil.com/").is_some());
        for not_under in ["https://evil.com/", "https://xevil.com/", "https://a.xevil.com/", "https://vil.com/"] {
            assert_eq!(fetch(not_under), None, "{not_under}");
        }
        // A host that is the dot and the domain alone names no subdomain.
        assert!(!Domain::Under("evil.com".into()).matches(".evil.com"));
        assert!(Domain::Under("evil.com".into()).matches("a.evil.com"));
    }

    #[test]
    fn domain_content_for_a_tool_not_loaded_is_read_as_domains() {
        use Behavior::*;
        // `Later` is not in the catalog (not loaded when the rules compiled).
        let s = set(&[(Deny, "Later(domain:evil.com)")]);
        let subject = |addresses: Vec<&'static str>| Subject {
            tool: "Later",
            paths: vec![],
            command: None,
            text: None,
            addresses,
        };
        assert!(s.check(&subject(vec!["https://evil.com/x"])).deny.is_some());
        assert!(s.check(&subject(vec!["https://good.org/x"])).deny.is_none(), "a domain rule, not every call");
        assert!(s.warnings().is_empty(), "{:?}", s.warnings());
        // Other content it cannot read: the rule applies to every call.
        let s = set(&[(Deny, "Later(something)")]);
        assert!(s.check(&subject(vec!["https://good.org/x"])).deny.is_some());
    }

    #[test]
    fn the_places_and_the_patterns_hidden_from_searches() {
        use Behavior::*;
        let s = set(&[(Deny, "Read(./.env)"), (Ask, "Read(//etc/secret/)"), (Allow, "Read(./x)"), (Deny, "Edit(./y)")]);
        assert_eq!(s.places().cwd, Path::new("/work/p"));
        assert_eq!(s.places().home.as_deref(), Some(Path::new("/home/u")));
        // A search through the host reads: the deny and ask rules on reads
        // are hidden from it, whatever tool asks; allow and edit rules are not.
        for tool in ["Grep", "Other"] {
            assert_eq!(s.hidden_from_searches(tool), ["/work/p/.env", "/etc/secret/"], "{tool}");
        }
    }

    #[test]
    fn the_root_and_the_settings_directory_as_path_rules() {
        use Behavior::*;
        let hidden = |content: &str| set(&[(Deny, content)]).hidden_from_searches("Grep");
        assert_eq!(hidden("Read(//)"), ["/"], "the root");
        assert_eq!(hidden("Read(//../etc/x)"), ["/etc/x"], "nothing above the root");
        assert_eq!(hidden("Read(../../../../x)"), ["/x"]);
        assert_eq!(hidden("Read(./a/./b/../c)"), ["/work/p/a/c"]);
        let root = set(&[(Deny, "Read(//)")]);
        assert!(strongest(&root, "Read", json!({"file_path": "/etc/passwd"})).is_some(), "the root covers all");
        assert_eq!(hidden("Read(/)"), ["/etc/toolhost"], "the settings file's directory");
        assert_eq!(hidden("Read(//tmp/)"), ["/tmp/"], "a directory only");
        assert_eq!(hidden("Read(~)"), ["/home/u"]);
        let s = set(&[(Deny, "Read(/)")]);
        let read = |p: &str| strongest(&s, "Read", json!({"file_path": p}));
        assert_eq!(read("/etc/toolhost/settings.json").as_deref(), Some("deny Read(/)"));
        assert_eq!(read("/etc/other"), None);
    }

    /// A working directory on disk with a home beside it, and a rule set
    /// over it.
    fn on_disk(list: &[(Behavior, &str)]) -> (tempfile::TempDir, RuleSet) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (work, home) = (root.join("w"), root.join("h"));
        for d in [&work, &home] {
            std::fs::create_dir(d).unwrap();
        }
        for (file, inside) in [(".env", &work), ("secret", &home), ("x", &home), ("~x", &work)] {
            std::fs::write(inside.join(file), "k").unwrap();
        }
        let places = Places { cwd: work.clone(), working: vec![work], home: Some(home) };
        let set = RuleSet::compile(entries(list), places, &catalog()).unwrap();
        (dir, set)
    }

    #[test]
    fn files_a_command_names_meet_the_read_rules() {
        use Behavior::*;
        let (_dir, s) = on_disk(&[(Deny, "Read(./.env)"), (Ask, "Read(~/secret)"), (Deny, "Read(~/x)")]);
        let cmd = |c: &str| strongest(&s, "Bash", json!({"command": c}));
        assert_eq!(cmd("cat .env").as_deref(), Some("deny Read(./.env)"));
        assert_eq!(cmd("wc -l < .env").as_deref(), Some("deny Read(./.env)"), "a `<` source");
        assert_eq!(cmd("grep --file=.env x").as_deref(), Some("deny Read(./.env)"), "`--opt=value`");
        assert_eq!(cmd("cat ~/secret").as_deref(), Some("ask Read(~/secret)"), "`~/` is home");
        assert_eq!(cmd("cat ~x"), None, "`~x` is another user's home, not `x` in ours");
        assert_eq!(cmd("cat missing.env"), None);
        // Only deny and ask rules on reads look into commands.
        let (_dir, s) = on_disk(&[(Deny, "Edit(./.env)"), (Allow, "Read(./.env)")]);
        assert_eq!(strongest(&s, "Bash", json!({"command": "cat .env"})), None);
    }

    #[test]
    fn paths_outside_the_working_directories() {
        let s = set(&[]);
        let outside = |c: &str| s.path_outside(&shell::parse(c)).map(str::to_string);
        for (command, want) in [
            ("cat src/a.rs", None),
            ("cat /work/p/src/a.rs", None),
            ("cat /etc/passwd", Some("/etc/passwd")),
            ("cat ~/notes", Some("~/notes")),
            ("cat ../other/x", Some("../other/x")),
            ("ls ..", Some("..")),
            ("cat src/../../x", Some("src/../../x")),
            ("cat src/../a", None),
            ("cat < /etc/passwd", Some("/etc/passwd")),
            ("sort --output=/etc/x a", Some("--output=/etc/x")),
            ("echo a=/etc/x", None),
            ("ls -a/../../etc", None),
            ("cat /dev/null /dev/stdin", None),
            ("cat /dev/sda", Some("/dev/sda")),
            ("cat $HOME/x", Some("$HOME/x")),
            ("cat \"$D\"/x", Some("\"$D\"/x")),
            ("cat x$Y", None),
            ("cat x$Y/../../z", Some("x$Y/../../z")),
        ] {
            assert_eq!(outside(command).as_deref(), want, "{command}");
        }
    }

    #[test]
    fn allow_rules_never_cover_what_runs_unseen() {
        use Behavior::*;
        let s = set(&[(Allow, "Bash(npm run:*)")]);
        let cmd = |c: &str| strongest(&s, "Bash", json!({"command": c}));
        assert_eq!(cmd("npm run test").as_deref(), Some("allow Bash(npm run:*)"));
        for unseen in ["npm run test $(ls)", "npm run test `ls`", "npm run test <(ls)", "npm run test ("] {
            assert_eq!(cmd(unseen), None, "{unseen}");
        }
    }

    #[test]
    fn nested_shells_are_followed_four_deep() {
        use Behavior::*;
        let s = set(&[(Deny, "Bash(rm:*)")]);
        let check = |c: &str| {
            let parsed = shell::parse(c);
            let roles = roles("Bash");
            let input = json!({"command": c});
            let v = s.check(&Subject::of("Bash", &roles, &input, Some(&parsed)));
            (v.deny.is_some(), v.unclear)
        };
        assert_eq!(check("eval eval eval eval rm x"), (true, None));
        let (deny, unclear) = check("eval eval eval eval eval rm x");
        assert!(!deny, "not followed past four shells");
        assert_eq!(unclear.as_deref(), Some("The command nests shells too deeply to check."));
        // The script a shell is given, past its options.
        assert!(check("bash --norc -c 'rm x'").0);
        assert!(check("bash -e -c 'rm x'").0);
        assert!(check("sh -ec 'rm x'").0);
        // A script file with arguments: nothing the host can see.
        assert!(check("bash deploy.sh prod").1.is_some());
        // A script only known when it runs.
        let (_, unclear) = check("bash -c \"ls $X\"");
        assert_eq!(unclear.as_deref(), Some("`bash` runs a script only known when the command runs."));
    }

    #[test]
    fn prefix_rules_look_past_options_and_their_values() {
        use Behavior::*;
        let s = set(&[(Allow, "Bash(git:*)"), (Ask, "Bash(git push:*)"), (Ask, "Bash(git remote add:*)")]);
        let g = |c: &str| strongest(&s, "Bash", json!({"command": c}));
        assert_eq!(g("git -C . remote add x y").as_deref(), Some("ask Bash(git remote add:*)"));
        assert_eq!(g("git -c user.name=x push").as_deref(), Some("ask Bash(git push:*)"), "an option's value");
        assert_eq!(g("git -x commit other push").as_deref(), Some("allow Bash(git:*)"), "two words are no option");
        assert_eq!(g("git -C ."), None, "no word after the option's value (and read-only)");
        assert_eq!(g("git --work-tree=x push").as_deref(), Some("ask Bash(git push:*)"));
    }

    #[test]
    fn wrappers_are_looked_through() {
        use Behavior::*;
        let s = set(&[(Deny, "Bash(rm:*)"), (Allow, "Bash(make:*)")]);
        let cmd = |c: &str| strongest(&s, "Bash", json!({"command": c}));
        // Deny rules: through every wrapper.
        for wrapped in [
            "time rm x",
            "nohup rm x",
            "nice -n 5 rm x",
            "timeout -s KILL 5 rm x",
            "stdbuf -oL rm x",
            "env -u A X=1 rm x",
            "sudo -u root rm x",
            "doas rm x",
            "setsid rm x",
            "unshare -r rm x",
            "xargs -n 1 rm",
            "command rm x",
            "builtin rm x",
            "exec rm x",
            "find . -execdir rm {} +",
        ] {
            assert_eq!(cmd(wrapped).as_deref(), Some("deny Bash(rm:*)"), "{wrapped}");
        }
        // Allow rules: only through wrappers that time or prioritise.
        for allowed in ["make", "time make", "nohup make", "nice -n 5 make", "timeout 5 make"] {
            assert_eq!(cmd(allowed).as_deref(), Some("allow Bash(make:*)"), "{allowed}");
        }
        for not_allowed in [
            "stdbuf -oL make",
            "env X=1 make",
            "sudo make",
            "setsid make",
            "xargs make",
            "exec make",
            "command make",
            "find . -exec make {} +",
        ] {
            assert_eq!(cmd(not_allowed), None, "{not_allowed}");
        }
        // A wrapper with nothing after its options wraps nothing.
        for bare in ["time -p", "env X=1", "nice -n", "sudo -u"] {
            assert_eq!(cmd(bare), None, "{bare}");
        }
    }

    /// Each wrapper's options that take a value, separate or joined: the
    /// rules reach the command after them.
    #[test]
    fn wrapper_options_with_values_are_skipped() {
        use Behavior::*;
        let deny = set(&[(Deny, "Bash(cat:*)")]);
        for wrapped in [
            "timeout -s KILL 5 cat f",
            "timeout -sKILL 5 cat f",
            "timeout --signal KILL --kill-after 1 5 cat f",
            "timeout --signal=KILL 5 cat f",
            "nice -n 5 cat f",
            "nice -n5 cat f",
            "env -u X A=1 cat f",
            "env --unset X --chdir d cat f",
            "env -C d A=1 B=2 cat f",
            "stdbuf -o L -e 0 cat f",
            "sudo -u root -g wheel cat f",
            "doas -C conf cat f",
            "xargs -I {} -n 1 -P 2 cat f",
            "timeout 5 nice -n 5 env -u X cat f",
            "sudo -p pw cat f",
            "sudo --prompt pw cat f",
            "sudo -T 5 cat f",
            "exec -a name cat f",
            "time -o out cat f",
            "nice --adjustment 5 cat f",
            "xargs --max-args 1 cat",
            "stdbuf --output L cat f",
        ] {
            assert_eq!(
                strongest(&deny, "Bash", json!({"command": wrapped})).as_deref(),
                Some("deny Bash(cat:*)"),
                "{wrapped}"
            );
            // Read with certainty: not asked as unclear.
            let (bash, parsed) = (roles("Bash"), shell::parse(wrapped));
            let input = json!({"command": wrapped});
            let unclear = deny.check(&Subject::of("Bash", &bash, &input, Some(&parsed))).unclear;
            assert!(unclear.is_none(), "{wrapped}: {unclear:?}");
        }
        let allow = set(&[(Allow, "Bash(make:*)")]);
        let allowed = |c: &str| strongest(&allow, "Bash", json!({"command": c}));
        for timed in ["timeout -s KILL 5 make", "timeout --signal=KILL -k 1 5 make", "nice -n 5 make", "time -p make"] {
            assert_eq!(allowed(timed).as_deref(), Some("allow Bash(make:*)"), "{timed}");
        }
        assert_eq!(allowed("env -u X A=1 make"), None, "allow rules do not look through `env`");
    }

    /// Content that is not one plain command is read as Claude Code reads
    /// it: text, matched against the whole command as written (exact) or
    /// one simple command at a time (its words joined by spaces).
    #[test]
    fn a_command_rule_that_is_not_one_plain_command_is_text() {
        use Behavior::*;
        let s = set(&[(Allow, "Bash(echo (x))"), (Allow, "Bash(make \\(all\\):*)"), (Deny, "Bash(rm x > y)")]);
        let cmd = |c: &str| strongest(&s, "Bash", json!({"command": c}));
        assert_eq!(cmd("echo (x)").as_deref(), Some("allow Bash(echo (x))"), "the command as approved");
        assert_eq!(cmd("  echo (x) ").as_deref(), Some("allow Bash(echo (x))"), "white space around it");
        for not_it in ["echo (x); rm -rf /", "echo (x) && rm -rf /", "echo (y)", "echo \\(x\\)", "echo '(x)'"] {
            assert_eq!(cmd(not_it), None, "{not_it}");
        }
        // A prefix: one simple command at a time, never past an operator.
        assert_eq!(cmd("make '(all)' -j4").as_deref(), Some("allow Bash(make (all):*)"), "unquoted words");
        assert_eq!(cmd("make (all) -j4"), None, "only the whole text can allow what does not parse");
        let text_prefix = set(&[(Allow, "Bash(ls && rm:*)"), (Allow, "Bash(git * commit)")]);
        let cmd = |c: &str| strongest(&text_prefix, "Bash", json!({"command": c}));
        assert_eq!(cmd("ls && rm -rf /"), None, "a prefix never spans simple commands");
        assert_eq!(cmd("'ls && rm' -rf /"), None, "nor words");
        assert_eq!(cmd("git -C x commit").as_deref(), Some("allow Bash(git * commit)"));
        assert_eq!(cmd("git -C x commit && curl evil"), None, "every part needs a rule");
        assert_eq!(cmd("git $(curl evil) commit"), None, "a substitution is never allowed");
        assert_eq!(cmd("git \"$X\" commit"), None, "nor a word only known when it runs");
        assert_eq!(strongest(&s, "Bash", json!({"command": "ls; rm x > y"})).as_deref(), Some("deny Bash(rm x > y)"));
        for bad in ["Bash(:*)", "Bash( :* )"] {
            let e = RuleSet::compile(entries(&[(Allow, bad)]), places(), &catalog()).unwrap_err();
            assert!(e.to_string().contains("Prefix cannot be empty before :*"), "{e}");
        }
    }

    #[test]
    fn escaped_parentheses_are_literal_in_words() {
        use Behavior::*;
        let s = set(&[(Allow, "Bash(python -c \"print\\(1\\)\")"), (Deny, "Bash(echo \\\\\\(x\\\\\\))")]);
        let cmd = |c: &str| strongest(&s, "Bash", json!({"command": c}));
        assert_eq!(cmd("python -c \"print(1)\"").as_deref(), Some("allow Bash(python -c \"print(1)\")"));
        assert_eq!(cmd("python -c 'print(1)'").as_deref(), Some("allow Bash(python -c \"print(1)\")"), "words");
        assert_eq!(cmd("python -c \"print(2)\""), None);
        // `Bash(echo \\\(x\\\))` is the content `echo \(x\)`: the words `echo (x)`.
        assert_eq!(cmd("ls; echo '(x)'").as_deref(), Some("deny Bash(echo \\\\\\(x\\\\\\))"));
    }

    #[test]
    fn wildcards_follow_claude_code() {
        for (pattern, text, matches) in [
            ("git * status", "git -C x status", true),
            ("git * status", "git status", false),
            ("git *", "git", true),
            ("git *", "gitx", false),
            ("npm run*", "npm runx", true),
            ("a \\* b", "a * b", true),
            ("a \\* b", "a x b", false),
            ("ls src/**/x *", "ls src/x", false),
            ("ls src/**/x *", "ls src/a/x y", true),
            ("ls src/**/x*", "ls src/x", true),
            ("ls src/**/x*", "ls src/a/b/x.rs", true),
            ("echo (*)", "echo (a b)", true),
            ("echo *", "echo a\nb", true),
            ("a.b*", "axb", false),
        ] {
            let regex = super::commands::wildcard_for_tests(pattern);
            assert_eq!(regex.is_match(text), matches, "{pattern} ~ {text}: {regex}");
        }
    }

    #[test]
    fn addresses_without_a_scheme_are_read_as_hosts() {
        use Behavior::*;
        let s = set(&[(Deny, "WebFetch(domain:evil.com)"), (Allow, "WebFetch(domain:a.org)")]);
        let hosts = |h: &[&str]| strongest(&s, "WebFetch", json!({ "hosts": h }));
        for evil in ["evil.com", "EVIL.com.", "evil.com:8080", "evil.com/x", "user@evil.com", "//evil.com/x"] {
            assert_eq!(hosts(&[evil]).as_deref(), Some("deny WebFetch(domain:evil.com)"), "{evil}");
        }
        for good in ["a.org", "a.org:443", "a.org/x?y", "https://a.org/", "me@a.org"] {
            assert_eq!(hosts(&[good]).as_deref(), Some("allow WebFetch(domain:a.org)"), "{good}");
        }
        // An address whose host cannot be told: deny and ask rules apply,
        // allow rules do not.
        for unreadable in ["a b", "https://", "a.org:x"] {
            assert_eq!(hosts(&[unreadable]).as_deref(), Some("deny WebFetch(domain:evil.com)"), "{unreadable:?}");
            let allow_only = set(&[(Allow, "WebFetch(domain:a.org)")]);
            assert_eq!(strongest(&allow_only, "WebFetch", json!({ "hosts": [unreadable] })), None, "{unreadable:?}");
        }
        assert_eq!(host_of("a.org:x"), None, "not a port");
    }

    #[test]
    fn directories_on_disk_meet_directory_rules() {
        use Behavior::*;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["build", "secret", "src/real"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("out"), "a file").unwrap();
        std::os::unix::fs::symlink(root.join("src/real"), root.join("src/link")).unwrap();
        let places = Places { cwd: root.clone(), working: vec![root.clone()], home: None };
        let list =
            [(Deny, "Read(build/)"), (Deny, "Read(out/)"), (Deny, "Read(./secret/**)"), (Allow, "Edit(./src/**)")];
        let s = RuleSet::compile(entries(&list), places, &catalog()).unwrap();
        let call = |tool: &str, path: &Path| {
            let field = if matches!(tool, "Glob" | "Grep") { "path" } else { "file_path" };
            strongest(&s, tool, json!({ field: path }))
        };
        assert_eq!(call("Grep", &root.join("build")).as_deref(), Some("deny Read(build/)"), "a directory");
        assert_eq!(call("Read", &root.join("out")), None, "`out/` names directories; `out` is a file");
        // Searching a directory whose contents are denied is denied; the
        // directory itself is not read.
        assert_eq!(call("Grep", &root.join("secret")).as_deref(), Some("deny Read(./secret/**)"));
        assert_eq!(call("Read", &root.join("secret")), None);
        assert_eq!(call("Read", &root.join("secret/k")).as_deref(), Some("deny Read(./secret/**)"));
        // A link and its target both allowed: allowed.
        assert_eq!(call("Edit", &root.join("src/link/a.rs")).as_deref(), Some("allow Edit(./src/**)"));
    }
}
