//! Path rules (`Read(./src/**)`, `Edit(~/notes/*)`): a rule's content as an
//! absolute glob with its scope, the words of a command that may name files,
//! and matching a path against the rules of each behavior.

use super::*;

/// The rule-language names of the two path families: `Read(…)` covers what
/// any tool reads or searches, `Edit(…)` what any tool edits.
pub(super) const READ_FAMILY: &str = "Read";
pub(super) const EDIT_FAMILY: &str = "Edit";

#[derive(Debug, Default)]
pub(super) struct PathRules {
    pub(super) set: GlobSet,
    pub(super) globs: Vec<PathGlob>,
}

#[derive(Debug)]
pub(super) struct PathGlob {
    /// The absolute pattern, as compiled.
    pub(super) pattern: String,
    pub(super) behavior: Behavior,
    pub(super) scope: PathScope,
    pub(super) dir_only: bool,
    pub(super) entry: usize,
}

/// Which paths a path rule covers.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum PathScope {
    /// `Read(…)`: every path a tool reads or searches.
    Reads,
    /// `Edit(…)`: every path a tool edits.
    Edits,
    /// `Tool(…)`: the paths of that tool.
    Tool(String),
}

impl PathScope {
    pub(super) fn of(rule_tool: &str) -> PathScope {
        match rule_tool {
            READ_FAMILY => PathScope::Reads,
            EDIT_FAMILY => PathScope::Edits,
            tool => PathScope::Tool(tool.to_string()),
        }
    }

    /// Whether the rule covers `tool` using a path for `access`.
    pub(super) fn covers(&self, tool: &str, access: PathAccess) -> bool {
        match self {
            PathScope::Reads => matches!(access, PathAccess::Read | PathAccess::Search),
            PathScope::Edits => access == PathAccess::Edit,
            PathScope::Tool(t) => t == tool,
        }
    }
}

/// The literal words of a command that may name files it reads: arguments
/// that are not options, the value of `--opt=value`, `<` sources.
pub(super) fn literal_paths(parsed: &Parsed) -> impl Iterator<Item = &str> {
    file_words(parsed).filter(|(_, _, dynamic)| !dynamic).filter_map(|(_, value, _)| value)
}

/// The words of a command that may name files: every argument (its value
/// when it is `--opt=value`, none when it is another option) and the `<`
/// sources, each with whether an expansion makes it.
pub(super) fn file_words(parsed: &Parsed) -> impl Iterator<Item = (&str, Option<&str>, bool)> {
    parsed.commands.iter().flat_map(|cmd| {
        let words = cmd.argv.iter().zip(&cmd.dynamic).skip(1).map(|(w, &dynamic)| {
            let value = match w.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => Some(value),
                _ if w.starts_with('-') => None,
                _ => Some(w.as_str()),
            };
            (w.as_str(), value, dynamic)
        });
        let inputs = cmd
            .redirections
            .iter()
            .filter(|r| r.operator == "<")
            .map(|r| (r.target.as_str(), Some(r.target.as_str()), false));
        words.chain(inputs)
    })
}

/// The absolute glob for a path rule's content, and whether it only matches
/// directories.
pub(super) fn path_pattern(
    content: &str,
    base: Option<&Path>,
    places: &Places,
) -> Result<(String, bool), ContentError> {
    let (content, dir_only) = match content.strip_suffix('/') {
        Some(c) if !c.is_empty() && !c.ends_with('/') => (c, true),
        _ => (content, false),
    };
    let escaped = |p: &Path| globset::escape(&p.to_string_lossy()).trim_end_matches('/').to_string();
    let pattern = if content == "." || content == "./" {
        escaped(&places.cwd)
    } else if let Some(abs) = content.strip_prefix("//") {
        format!("/{abs}")
    } else if content == "~" || content.starts_with("~/") {
        let home = places.home.as_deref().ok_or(ContentError::NoHome)?;
        format!("{}{}", escaped(home), &content[1..])
    } else if let Some(rel) = content.strip_prefix('/') {
        let base = escaped(base.unwrap_or(&places.cwd));
        if rel.is_empty() { base } else { format!("{base}/{rel}") }
    } else if let Some(rel) = content.strip_prefix("./") {
        format!("{}/{rel}", escaped(&places.cwd))
    } else if content.contains('/') {
        format!("{}/{content}", escaped(&places.cwd))
    } else {
        format!("{}/**/{content}", escaped(&places.cwd))
    };
    Ok((collapse_dots(&pattern), dir_only))
}

/// A pattern with `.` and `..` components resolved, as the paths it is
/// matched against are (`Read(../shared/secrets/**)`).
pub(super) fn collapse_dots(pattern: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in pattern.split('/') {
        match part {
            "." => {}
            ".." if out.len() > 1 => {
                out.pop();
            }
            ".." => {}
            other => out.push(other),
        }
    }
    out.join("/")
}

/// The first path rule of each list applying to `path`, checked as written
/// (absolute, `..` removed) and as resolved: a deny or ask rule matching
/// either form applies, an allow rule must match both.
pub(super) fn path_match(rules: &PathRules, tool: &str, access: PathAccess, path: &Path) -> [Option<usize>; 3] {
    let lexical = normalize(path);
    let written = match_one(rules, tool, access, &lexical);
    let Some(real) = resolve(&lexical).filter(|r| *r != lexical) else {
        return written;
    };
    let real = match_one(rules, tool, access, &real);
    let (allow, ask, deny) = (Behavior::Allow.index(), Behavior::Ask.index(), Behavior::Deny.index());
    let mut out = [None; 3];
    out[allow] = match (written[allow], real[allow]) {
        (Some(a), Some(b)) => Some(a.min(b)),
        _ => None,
    };
    out[ask] = earliest(written[ask], real[ask]);
    out[deny] = earliest(written[deny], real[deny]);
    out
}

/// The first rule of each list matching `path` or a directory above it; for
/// a directory searched (Glob, Grep), also a rule on what is inside
/// (`dir/**`).
pub(super) fn match_one(rules: &PathRules, tool: &str, access: PathAccess, path: &Path) -> [Option<usize>; 3] {
    let mut best: [Option<usize>; 3] = [None; 3];
    let mut hits = Vec::new();
    let mut leaf_is_dir: Option<bool> = None;
    let mut record = |hits: &[usize], depth: Option<usize>, leaf_is_dir: &mut Option<bool>| {
        for &g in hits {
            let glob = &rules.globs[g];
            if !glob.scope.covers(tool, access) {
                continue;
            }
            if glob.dir_only && depth == Some(0) && !*leaf_is_dir.get_or_insert_with(|| path.is_dir()) {
                continue;
            }
            let slot = &mut best[glob.behavior.index()];
            *slot = Some(slot.map_or(glob.entry, |b| b.min(glob.entry)));
        }
    };
    if access == PathAccess::Search && *leaf_is_dir.get_or_insert_with(|| path.is_dir()) {
        rules.set.matches_into(path.join("\u{0}inside"), &mut hits);
        record(&hits, None, &mut leaf_is_dir);
    }
    // Up to the root: `Read(//)` covers every path.
    for (depth, candidate) in path.ancestors().enumerate() {
        if candidate.as_os_str().is_empty() {
            break;
        }
        rules.set.matches_into(candidate, &mut hits);
        record(&hits, Some(depth), &mut leaf_is_dir);
    }
    best
}
