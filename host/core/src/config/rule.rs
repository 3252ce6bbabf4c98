//! A permission rule as settings write it: which list it is in
//! ([`Behavior`]), where it came from ([`RuleEntry`]), and its text, read as
//! Claude Code 2.1.328 reads it (`EM`, `Dr` and
//! `PBe` in its package; see `host/core/src/policy/testdata/README.md`):
//! `Tool` or `Tool(content)`, the content running from the first unescaped
//! `(` to the last unescaped `)`, which must end the rule. Inside, a
//! parenthesis is literal, escaped (`\(`) or not; the content is unescaped
//! (`\(` → `(`, `\)` → `)`, then `\\` → `\`). Printing escapes again where
//! it must, so a printed rule reads back as the same rule.
//!
//! Differences kept on purpose (each is a row of the corpus in
//! `testdata/claude-code-rules.json`, which the tests compare with Claude
//! Code's own parser):
//! - white space around the rule, around the tool name and around the
//!   content is dropped (Claude Code keeps it, which makes `"Bash(ls) "`
//!   malformed and `"Bash (ls)"` a rule on a tool named `Bash `): settings
//!   written by hand often have a stray space, and the rule meant is clear;
//! - `Tool()` is the whole tool, as Claude Code's parser reads it (its
//!   settings check refuses it: "Empty parentheses");
//! - a tool name must be a name (letters, digits, `_`, `-`, `.`), and a
//!   rule must name one (`(x)` is refused; Claude Code takes it as a tool
//!   named `(x)`, which matches nothing); tool-name wildcards other than
//!   `mcp__SERVER__*` are refused in every list;
//! - what the content means for a tool (`domain:` for WebFetch, `:*` for
//!   paths) is checked when the rules are compiled, against what the tool
//!   declares, not here.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

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

    pub(crate) fn index(self) -> usize {
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
    /// A command rule's `:*` with nothing before it.
    #[error("Prefix cannot be empty before :*. Specify a command prefix before :*. Examples: Bash(npm *), Bash(git *)")]
    EmptyPrefix,
    /// A command wildcard no regular expression can stand for.
    #[error("not a pattern toolhost can match: {0}")]
    Pattern(String),
    /// A path rule starts with `~`, and there is no home directory.
    #[error("`~` is used but the home directory is unknown")]
    NoHome,
    /// A path rule that is not a glob.
    #[error("not a valid path pattern: {0}")]
    Glob(String),
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

/// One rule as written: a tool name and optional content.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    /// The tool the rule names.
    pub tool: String,
    /// What is inside the parentheses, unescaped, if anything.
    pub content: Option<String>,
}

/// A rule that cannot be used, and why. The texts after the rule are
/// Claude Code 2.1.328's, where it refuses the same rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// The rule is empty.
    #[error("a rule is empty: Permission rule cannot be empty")]
    Empty,
    #[error(
        "rule `{0}`: Malformed Tool(content) rule. Rules take the form Tool or Tool(content) and must end at the \
         closing \")\"; parentheses inside the content are literal"
    )]
    /// The rule is not `Tool` or `Tool(content)`.
    Malformed(String),
    #[error("rule `{0}`: Empty parentheses with no tool name. Specify a tool name before the parentheses")]
    /// `(content)` with no tool before it.
    NoToolBeforeParens(String),
    /// The rule names no tool.
    #[error("rule `{0}` names no tool")]
    NoTool(String),
    #[error("rule `{rule}`: `{tool}` is not a tool name (expected `Tool` or `Tool(content)`)")]
    /// What names the tool is not a tool name.
    BadTool {
        /// The rule.
        rule: String,
        /// What stands where the tool's name should.
        tool: String,
    },
    #[error(
        "rule `{rule}`: Wildcard tool name \"{tool}\" is not supported in allow rules. An allow pattern must name \
         the scope it widens: a `*` may only follow a literal `mcp__SERVER__` prefix (`mcp__github__get_*`); deny \
         and ask rules accept wildcards anywhere"
    )]
    /// An allow rule's tool name is a wildcard that widens no named scope.
    WildcardTool {
        /// The rule.
        rule: String,
        /// The wildcard.
        tool: String,
    },
    #[error(
        "rule `{rule}`: a wildcard tool name stands for whole tools and takes no content; name the tool to limit \
         what it may do"
    )]
    /// A wildcard tool name with content.
    WildcardContent {
        /// The rule.
        rule: String,
    },
    #[error("rule `{rule}`: Ambiguous \"\\(\" or \"\\)\" beside an unescaped parenthesis. {suggestion}")]
    /// An escaped parenthesis beside an unescaped one: the content's end
    /// is ambiguous.
    Ambiguous {
        /// The rule.
        rule: String,
        /// How to write it unambiguously.
        suggestion: String,
    },
    #[error("rule `{rule}`: MCP rules do not support patterns in parentheses. {suggestion}")]
    /// An MCP tool's rule with content.
    McpContent {
        /// The rule.
        rule: String,
        /// What to write instead.
        suggestion: String,
    },
    /// The content is malformed for what the tool's input is.
    #[error("{entry}: {problem}")]
    Content {
        /// The rule, and where it was written.
        entry: String,
        /// What is wrong with its content.
        problem: ContentError,
    },
    /// The path rules, each valid, are too many or too large to match together.
    #[error("path rules: {0}")]
    PathSet(String),
}

impl Rule {
    /// Parses `Tool` or `Tool(content)` as Claude Code does (see the module
    /// docs, with the differences kept). `Tool()` and `Tool(*)` are the
    /// whole tool.
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(RuleError::Empty);
        }
        let (open, close) = (first_unescaped(text, '('), last_unescaped(text, ')'));
        let (tool, content) = match (open, close) {
            // No parenthesis, or only escaped ones: a bare name.
            (None, None) => (text, None),
            (Some(open), Some(close))
                if close > open && close == text.len() - 1 && !text[..open].contains(['(', ')']) =>
            {
                let (tool, raw) = (text[..open].trim_end(), &text[open + 1..close]);
                if tool.is_empty() {
                    return Err(match raw.is_empty() {
                        true => RuleError::NoToolBeforeParens(text.to_string()),
                        false => RuleError::NoTool(text.to_string()),
                    });
                }
                if let Some(suggestion) = mcp_content(tool, raw) {
                    return Err(RuleError::McpContent { rule: text.to_string(), suggestion });
                }
                if ambiguous(raw) {
                    return Err(RuleError::Ambiguous { rule: text.to_string(), suggestion: disambiguate(tool) });
                }
                let raw = trim_unescaped(raw);
                (tool, (!raw.is_empty() && raw != "*").then(|| unescape(raw)))
            }
            _ => return Err(RuleError::Malformed(text.to_string())),
        };
        // `mcp__SERVER__*`: every tool of an MCP server, as `mcp__SERVER` is.
        let named =
            tool.strip_prefix("mcp__").and_then(|t| t.strip_suffix("__*")).map_or(tool, |_| &tool[..tool.len() - 3]);
        if !named.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*')) {
            return Err(RuleError::BadTool { rule: text.to_string(), tool: tool.to_string() });
        }
        if named.contains('*') && content.is_some() {
            return Err(RuleError::WildcardContent { rule: text.to_string() });
        }
        Ok(Rule { tool: tool.to_string(), content })
    }

    /// [`Rule::parse`], and the check of the list it is in: an allow rule
    /// may not widen by a wildcard tool name, but for the tools of one MCP
    /// server (`mcp__SERVER__PATTERN`), as 2.1.328 checks it.
    pub fn parse_in(text: &str, behavior: Behavior) -> Result<Rule, RuleError> {
        let rule = Rule::parse(text)?;
        if behavior == Behavior::Allow && rule.tool.contains('*') {
            // The server is what follows `mcp__` up to the next `__`.
            let server = rule.tool.strip_prefix("mcp__").map(|rest| rest.split("__").next().unwrap_or(rest));
            if !server.is_some_and(|s| !s.is_empty() && !s.contains('*')) {
                return Err(RuleError::WildcardTool { rule: text.trim().to_string(), tool: rule.tool });
            }
        }
        Ok(rule)
    }
}

/// Whether `name` matches `pattern`, where `*` stands for any text (none
/// included) and every other character for itself.
pub(crate) fn tool_pattern_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(rest) = name.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
    let Some(mut rest) = rest.strip_suffix(last) else { return false };
    for part in middle.iter().filter(|p| !p.is_empty()) {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

impl fmt::Display for Rule {
    /// The rule as written when that reads back as the same rule, else
    /// with the content escaped as Claude Code escapes it (`\` → `\\`,
    /// `(` → `\(`, `)` → `\)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(content) = &self.content else { return f.write_str(&self.tool) };
        let plain = format!("{}({content})", self.tool);
        if Rule::parse(&plain).as_ref() == Ok(self) {
            return f.write_str(&plain);
        }
        write!(f, "{}({})", self.tool, escape(content))
    }
}

/// Whether the `ch` at byte `at` of `text` is escaped: an odd number of
/// backslashes before it.
fn escaped(text: &str, at: usize) -> bool {
    text.as_bytes()[..at].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

fn first_unescaped(text: &str, ch: char) -> Option<usize> {
    text.match_indices(ch).map(|(i, _)| i).find(|&i| !escaped(text, i))
}

fn last_unescaped(text: &str, ch: char) -> Option<usize> {
    text.rmatch_indices(ch).map(|(i, _)| i).find(|&i| !escaped(text, i))
}

/// Claude Code's ambiguity check: the content has a `\(` or `\)` after
/// something other than a backslash, and its unescaped `(` and `)` do not
/// pair up in number. `Bash(C:\tools\(x86)\run.exe)` is one: a path
/// separator before a literal parenthesis, or an escaped one?
fn ambiguous(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    let escape_after_other = (0..bytes.len().saturating_sub(1))
        .any(|i| bytes[i] == b'\\' && matches!(bytes[i + 1], b'(' | b')') && (i == 0 || bytes[i - 1] != b'\\'));
    let count = |ch: char| raw.match_indices(ch).filter(|&(i, _)| !escaped(raw, i)).count();
    escape_after_other && count('(') != count(')')
}

/// What Claude Code suggests for an ambiguous rule on `tool`: its file
/// tools get another example (Windows paths).
fn disambiguate(tool: &str) -> String {
    match matches!(tool, "Read" | "Write" | "Edit" | "Glob" | "NotebookRead" | "NotebookEdit" | "Cd") {
        true => format!(
            "Write a Windows path with forward slashes, or spell a literal parenthesis as [(] or [)]. Examples: \
             {tool}(C:/Projects/(drafts)/**), {tool}(C:\\Projects\\[(]drafts)\\**)"
        ),
        false => format!(
            "Double a backslash that is a path separator (\"\\\\(\"), and escape literal parentheses in pairs. \
             Examples: {tool}(C:\\tools\\\\(x86)\\run.exe *)"
        ),
    }
}

/// Claude Code's refusal of an MCP rule with content (`mcp__srv__tool(x)`):
/// its suggestion and examples, if `tool` names an MCP server or tool and
/// `raw` is not empty.
fn mcp_content(tool: &str, raw: &str) -> Option<String> {
    let rest = tool.strip_prefix("mcp__")?;
    let (server, name) = match rest.find("__") {
        Some(0) => return None,
        Some(at) => (&rest[..at], Some(&rest[at + 2..])),
        None if rest.is_empty() => return None,
        None => (rest, None),
    };
    if raw.is_empty() {
        return None;
    }
    // A name without a wildcard may also be part of a server's name.
    let whole = name.filter(|n| !n.is_empty() && !n.contains('*')).map(|_| format!("{tool}__*"));
    let suggestion = match (&whole, name) {
        (Some(whole), Some(name)) => format!(
            "Use \"{tool}\" without parentheses. For all tools of a server, use \"mcp__{server}__*\" for the \
             server \"{server}\", or \"{whole}\" for a server named \"{server}__{name}\""
        ),
        _ => format!("Use \"{tool}\" without parentheses, or use \"mcp__{server}__*\" for all tools"),
    };
    let mut examples = vec![format!("mcp__{server}"), format!("mcp__{server}__*")];
    examples.extend(name.filter(|n| !n.is_empty() && *n != "*").map(|n| format!("mcp__{server}__{n}")));
    examples.extend(whole);
    Some(format!("{suggestion}. Examples: {}", examples.join(", ")))
}

/// `raw` without white space at either end, but for a white space right
/// after a backslash (`echo \ `): kept, with all before it. (Not "after an
/// odd number of backslashes": unescaping changes how many there are, and
/// a printed rule must read back the same.)
fn trim_unescaped(raw: &str) -> &str {
    let raw = raw.trim_start();
    let trimmed = raw.trim_end();
    match raw[trimmed.len()..].chars().next() {
        Some(space) if trimmed.ends_with('\\') => &raw[..trimmed.len() + space.len_utf8()],
        _ => trimmed,
    }
}

/// The content as meant: `\(` → `(`, `\)` → `)`, then `\\` → `\`, each
/// left to right as JavaScript's `replaceAll` does.
fn unescape(raw: &str) -> String {
    raw.replace("\\(", "(").replace("\\)", ")").replace("\\\\", "\\")
}

/// The content escaped so that [`unescape`] gives it back.
fn escape(content: &str) -> String {
    content.replace('\\', "\\\\").replace('(', "\\(").replace(')', "\\)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// What toolhost makes of `text`, in the corpus's terms.
    fn outcome(text: &str) -> Value {
        match Rule::parse(text) {
            Ok(Rule { tool, content: None }) => json!({ "tool": tool }),
            Ok(Rule { tool, content: Some(content) }) => json!({ "tool": tool, "content": content }),
            Err(e) => json!({ "error": e.to_string() }),
        }
    }

    /// Whether `ours` is what `theirs` says: the same tool and content, or
    /// an error whose text holds theirs.
    fn agrees(ours: &Value, theirs: &Value) -> bool {
        match (ours.get("error"), theirs.get("error")) {
            (Some(ours), Some(theirs)) => ours.as_str().unwrap_or("").contains(theirs.as_str().unwrap_or("?")),
            (None, None) => ours["tool"] == theirs["tool"] && ours.get("content") == theirs.get("content"),
            _ => false,
        }
    }

    /// Every rule of the corpus (`testdata/claude-code-rules.json`, made
    /// by Claude Code's own parser) parses as Claude Code 2.1.328 parses
    /// it, but for the differences listed there, each with its reason; and
    /// prints back to itself.
    #[test]
    fn claude_code_corpus() {
        let corpus: Value = serde_json::from_str(include_str!("../policy/testdata/claude-code-rules.json")).unwrap();
        let reasons = corpus["kept"].as_object().expect("`kept`: the reasons");
        let rules = corpus["rules"].as_array().expect("`rules`");
        assert!(rules.len() >= 150, "{} rules", rules.len());
        let mut problems = Vec::new();
        for entry in rules {
            let text = entry["rule"].as_str().expect("`rule`");
            let (ours, theirs) = (outcome(text), &entry["2.1.328"]);
            match (agrees(&ours, theirs), entry.get("toolhost")) {
                (true, None) => {}
                (true, Some(_)) => problems.push(format!("{text:?}: listed as kept, but toolhost agrees now")),
                (false, None) => {
                    problems.push(format!("{}", json!({ "rule": text, "toolhost": ours, "2.1.328": theirs })))
                }
                (false, Some(kept)) => {
                    if !agrees(&ours, kept) {
                        problems.push(format!("{text:?}: toolhost gives {ours}, the corpus says {kept}"));
                    }
                    if !entry["why"].as_str().is_some_and(|why| reasons.contains_key(why)) {
                        problems.push(format!("{text:?}: `why` names no reason under `kept`"));
                    }
                }
            }
            // What Claude Code refuses in allow lists, toolhost refuses there.
            if theirs.get("allow_error").is_some() && Rule::parse_in(text, Behavior::Allow).is_ok() {
                problems.push(format!("{text:?}: Claude Code refuses it in allow lists, toolhost takes it"));
            }
            if let Ok(rule) = Rule::parse(text) {
                assert_eq!(Rule::parse(&rule.to_string()), Ok(rule.clone()), "{text:?} printed as {rule}");
            }
        }
        assert!(problems.is_empty(), "{} differences with Claude Code:\n{}", problems.len(), problems.join("\n"));
    }

    #[test]
    fn escaping_reverses_unescaping() {
        for content in ["", "a", "\\", "\\\\", "(", "\\(", "\\\\(", ")(", "a\\b(c)d\\", "\\)\\(\\"] {
            assert_eq!(unescape(&escape(content)), content, "{content:?}");
        }
    }

    #[test]
    fn trimming_keeps_an_escaped_space() {
        assert_eq!(trim_unescaped("  echo \\  "), "echo \\ ");
        assert_eq!(trim_unescaped(" a\\\\  "), "a\\\\ ");
        assert_eq!(trim_unescaped(" a "), "a");
    }
}
