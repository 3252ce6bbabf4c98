//! The bash parser: tree-sitter-bash run by the host, turned into the
//! simple commands, operators and constructs the policy and the `shell`
//! interface need. Commands longer than [`MAX_COMMAND`] are not parsed.

use std::cell::RefCell;
use tree_sitter::{Node, Parser};

/// A control operator between commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    /// `&&`
    And,
    /// `||`
    Or,
    /// `;` or a newline between statements.
    Sequence,
    /// `|` or `|&`
    Pipe,
    /// `&` (run in the background)
    Background,
}

/// A redirection of a simple command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirection {
    /// The file descriptor written before the operator (`2` in `2>err`).
    pub descriptor: Option<String>,
    /// `>`, `>>`, `<`, `&>`, `>&`, `<<`, `<<<`, ...
    pub operator: String,
    /// The target word as written (for a heredoc: its delimiter).
    pub target: String,
}

impl Redirection {
    /// Whether it may write to a file: an output operator whose target is not
    /// `/dev/null` and not a file descriptor (`2>&1`).
    pub fn writes(&self) -> bool {
        let output = matches!(self.operator.as_str(), ">" | ">>" | ">|" | "&>" | "&>>" | ">&" | "<>" | "&>|");
        let dup = matches!(self.operator.as_str(), ">&" | "<&")
            && self.target.chars().all(|c| c.is_ascii_digit() || c == '-');
        output && !dup && self.target != "/dev/null"
    }
}

/// One simple command: `NAME=value cmd arg... >redirect`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The command name and its arguments, unquoted.
    pub argv: Vec<String>,
    /// For each word of `argv`, whether its value depends on an expansion or
    /// substitution (so `argv` holds only its source text).
    pub dynamic: Vec<bool>,
    /// Assignments before the name (`FOO=1` in `FOO=1 ls`), as written.
    pub assignments: Vec<String>,
    pub redirections: Vec<Redirection>,
}

/// The structure of a shell command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Every simple command, in source order (inside pipelines, lists,
    /// subshells, loops and substitutions alike).
    pub commands: Vec<SimpleCommand>,
    /// The control operators, in source order.
    pub operators: Vec<Operator>,
    pub command_substitution: bool,
    pub process_substitution: bool,
    pub variable_expansion: bool,
    pub heredoc: bool,
    pub subshell: bool,
    /// `if`, `for`, `while`, `case` or a function definition.
    pub control_flow: bool,
    /// The command (or part of it) could not be parsed; also set for one
    /// longer than [`MAX_COMMAND`].
    pub parse_error: bool,
    /// The command is longer than [`MAX_COMMAND`] and was not parsed.
    pub too_long: bool,
}

/// Longest command the host parses: anything longer is a parse error (and
/// so never read-only, and never allowed by a rule).
pub const MAX_COMMAND: usize = 64 * 1024;

/// Parses `source` as bash. Never fails: what cannot be parsed sets
/// [`Parsed::parse_error`].
pub fn parse(source: &str) -> Parsed {
    if source.len() > MAX_COMMAND {
        return Parsed { parse_error: true, too_long: true, ..Parsed::default() };
    }
    thread_local! {
        static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
    }
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let parser = slot.get_or_insert_with(|| {
            let mut p = Parser::new();
            p.set_language(&tree_sitter_bash::LANGUAGE.into()).expect("tree-sitter-bash matches the tree-sitter ABI");
            p
        });
        let Some(tree) = parser.parse(source, None) else {
            return Parsed { parse_error: true, ..Parsed::default() };
        };
        let root = tree.root_node();
        // A command nested deeper than any real one is refused.
        if deeper_than(root, MAX_DEPTH) {
            return Parsed { parse_error: true, ..Parsed::default() };
        }
        let mut parsed = Parsed { parse_error: root.has_error(), ..Parsed::default() };
        Walker { src: source.as_bytes(), out: &mut parsed }.statement(root);
        parsed
    })
}

struct Walker<'a> {
    src: &'a [u8],
    out: &'a mut Parsed,
}

impl Walker<'_> {
    fn text(&self, node: Node<'_>) -> String {
        String::from_utf8_lossy(&self.src[node.byte_range()]).into_owned()
    }

    /// Visits a statement-level node and everything inside it.
    fn statement(&mut self, node: Node<'_>) {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.statement_here(node))
    }

    fn statement_here(&mut self, node: Node<'_>) {
        match node.kind() {
            "command" => self.command(node, Vec::new()),
            "redirected_statement" => {
                let mut redirects = Vec::new();
                let mut cursor = node.walk();
                for child in node.children_by_field_name("redirect", &mut cursor) {
                    self.redirect(child, &mut redirects);
                }
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    if child.kind() == "herestring_redirect" {
                        self.redirect(child, &mut redirects);
                    }
                }
                match node.child_by_field_name("body") {
                    Some(body) if body.kind() == "command" => self.command(body, redirects),
                    Some(body) => {
                        // As in bash, the redirections of `a | b > f` belong to
                        // the last command (of `(a; b) > f`, to all of it:
                        // the last command stands for it).
                        let before = self.out.commands.len();
                        self.statement(body);
                        match self.out.commands.get_mut(before..).and_then(|added| added.last_mut()) {
                            Some(last) => last.redirections.extend(redirects),
                            None => self
                                .out
                                .commands
                                .push(SimpleCommand { redirections: redirects, ..SimpleCommand::default() }),
                        }
                    }
                    None => {
                        self.out.commands.push(SimpleCommand { redirections: redirects, ..SimpleCommand::default() })
                    }
                }
            }
            "variable_assignment" | "variable_assignments" => {
                self.scan(node);
                self.out
                    .commands
                    .push(SimpleCommand { assignments: vec![self.text(node)], ..SimpleCommand::default() });
            }
            "declaration_command" | "unset_command" | "test_command" => self.builtin_like(node),
            "subshell" => {
                self.out.subshell = true;
                self.children(node);
            }
            "if_statement"
            | "for_statement"
            | "c_style_for_statement"
            | "while_statement"
            | "case_statement"
            | "function_definition" => {
                self.out.control_flow = true;
                self.children(node);
            }
            "comment" => {}
            _ => self.children(node),
        }
    }

    /// Visits the children of a node, recording operators between statements.
    fn children(&mut self, node: Node<'_>) {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.children_here(node))
    }

    fn children_here(&mut self, node: Node<'_>) {
        let mut cursor = node.walk();
        let mut previous_statement_end: Option<usize> = None;
        for child in node.children(&mut cursor) {
            if !child.is_named() {
                let op = match child.kind() {
                    "&&" => Some(Operator::And),
                    "||" => Some(Operator::Or),
                    ";" | ";;" => Some(Operator::Sequence),
                    "|" | "|&" => Some(Operator::Pipe),
                    "&" => Some(Operator::Background),
                    _ => None,
                };
                if let Some(op) = op {
                    self.out.operators.push(op);
                    previous_statement_end = None;
                }
                continue;
            }
            let is_statement = is_statement(child.kind());
            if is_statement {
                // Two statements with no operator between them were on two lines.
                if previous_statement_end.is_some()
                    && matches!(node.kind(), "program" | "compound_statement" | "do_group" | "subshell")
                {
                    self.out.operators.push(Operator::Sequence);
                }
                previous_statement_end = Some(child.end_byte());
            }
            if is_statement
                || matches!(
                    child.kind(),
                    "do_group" | "else_clause" | "elif_clause" | "case_item" | "compound_statement"
                )
            {
                self.statement(child);
            } else {
                self.scan(child);
            }
        }
    }

    /// A simple command; `redirects` come from an enclosing redirected statement.
    fn command(&mut self, node: Node<'_>, mut redirects: Vec<Redirection>) {
        let mut cmd = SimpleCommand::default();
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "variable_assignment" => {
                    self.scan(child);
                    cmd.assignments.push(self.text(child));
                }
                "command_name" => {
                    let (word, dynamic) = self.word(child);
                    cmd.argv.push(word);
                    cmd.dynamic.push(dynamic);
                }
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" => self.redirect(child, &mut redirects),
                "subshell" => self.statement(child),
                _ => {
                    let (word, dynamic) = self.word(child);
                    cmd.argv.push(word);
                    cmd.dynamic.push(dynamic);
                }
            }
        }
        cmd.redirections = redirects;
        self.out.commands.push(cmd);
    }

    /// `declare`, `export`, `unset`, `[[ ... ]]` and friends: recorded as a
    /// command named by their first word.
    fn builtin_like(&mut self, node: Node<'_>) {
        self.scan(node);
        let mut argv = Vec::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            argv.push(self.text(child));
            if argv.len() == 1 {
                // The keyword, then the rest as one word: these are only ever
                // checked by name.
                let rest = String::from_utf8_lossy(&self.src[child.end_byte()..node.end_byte()]).trim().to_string();
                if !rest.is_empty() {
                    argv.push(rest);
                }
                break;
            }
        }
        let dynamic = vec![false; argv.len()];
        self.out.commands.push(SimpleCommand { argv, dynamic, ..SimpleCommand::default() });
    }

    fn redirect(&mut self, node: Node<'_>, out: &mut Vec<Redirection>) {
        self.scan(node);
        if node.kind() == "heredoc_redirect" {
            self.out.heredoc = true;
        }
        let descriptor = node.child_by_field_name("descriptor").map(|d| self.text(d));
        let mut operator = String::new();
        let mut target = String::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if !child.is_named() && operator.is_empty() {
                operator = self.text(child);
            } else if child.is_named() && child.kind() != "file_descriptor" && target.is_empty() {
                target = match child.kind() {
                    "heredoc_start" => self.text(child),
                    _ => self.word(child).0,
                };
            }
        }
        if node.kind() == "herestring_redirect" && operator.is_empty() {
            operator = "<<<".into();
        }
        out.push(Redirection { descriptor, operator, target });
        // A heredoc can carry more redirections, and a pipeline or list, after
        // its start word (`cat <<EOF > out | wc`).
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if matches!(child.kind(), "file_redirect" | "herestring_redirect") {
                self.redirect(child, out);
            } else if is_statement(child.kind()) {
                self.statement(child);
            }
        }
    }

    /// The value of a word and whether it is dynamic; flags what it contains.
    fn word(&mut self, node: Node<'_>) -> (String, bool) {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.word_here(node))
    }

    fn word_here(&mut self, node: Node<'_>) -> (String, bool) {
        self.scan(node);
        let dynamic = contains(
            node,
            &["simple_expansion", "expansion", "command_substitution", "process_substitution", "arithmetic_expansion"],
        );
        let text = match node.kind() {
            "command_name" => match node.named_child(0) {
                Some(inner) => return self.word(inner),
                None => self.text(node),
            },
            "raw_string" => {
                let t = self.text(node);
                t.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')).unwrap_or(&t).to_string()
            }
            "string" if !dynamic => {
                let t = self.text(node);
                unescape_double(t.strip_prefix('"').and_then(|t| t.strip_suffix('"')).unwrap_or(&t))
            }
            "concatenation" if !dynamic => {
                let mut s = String::new();
                let mut cursor = node.walk();
                for part in node.children(&mut cursor) {
                    s.push_str(&self.word(part).0);
                }
                s
            }
            "word" => unescape_word(&self.text(node)),
            _ => self.text(node),
        };
        (text, dynamic)
    }

    /// Flags substitutions and expansions anywhere under `node`, and records
    /// the commands inside command substitutions.
    fn scan(&mut self, node: Node<'_>) {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.scan_here(node))
    }

    fn scan_here(&mut self, node: Node<'_>) {
        match node.kind() {
            "command_substitution" => {
                self.out.command_substitution = true;
                self.children(node);
                return;
            }
            "process_substitution" => {
                self.out.process_substitution = true;
                self.children(node);
                return;
            }
            "simple_expansion" | "expansion" => self.out.variable_expansion = true,
            "heredoc_redirect" => self.out.heredoc = true,
            _ => {}
        }
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            self.scan(child);
        }
    }
}

fn is_statement(kind: &str) -> bool {
    matches!(
        kind,
        "command"
            | "redirected_statement"
            | "pipeline"
            | "list"
            | "subshell"
            | "compound_statement"
            | "negated_command"
            | "if_statement"
            | "for_statement"
            | "c_style_for_statement"
            | "while_statement"
            | "case_statement"
            | "function_definition"
            | "variable_assignment"
            | "variable_assignments"
            | "declaration_command"
            | "unset_command"
            | "test_command"
    )
}

/// How deep a syntax tree may nest before the command counts as unparsable
/// (a 64 KiB command of `a&&` nests about 16,000 deep).
const MAX_DEPTH: usize = 20_000;
/// The walk recurses once per level of nesting; when less than this much
/// stack is left it continues on a fresh heap-allocated segment, so deep
/// commands cannot overflow the stack of the thread running a call.
const RED_ZONE: usize = 64 * 1024;
const STACK_SEGMENT: usize = 1024 * 1024;

/// Whether the tree under `root` nests deeper than `limit`, found without
/// recursion.
fn deeper_than(root: Node<'_>, limit: usize) -> bool {
    let mut cursor = root.walk();
    let mut depth = 0usize;
    loop {
        if cursor.goto_first_child() {
            depth += 1;
            if depth > limit {
                return true;
            }
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return false;
            }
            depth -= 1;
        }
    }
}

fn contains(node: Node<'_>, kinds: &[&str]) -> bool {
    stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || contains_here(node, kinds))
}

fn contains_here(node: Node<'_>, kinds: &[&str]) -> bool {
    if kinds.contains(&node.kind()) {
        return true;
    }
    let mut cursor = node.walk();
    node.named_children(&mut cursor).any(|c| contains(c, kinds))
}

/// `a\ b` → `a b`
fn unescape_word(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The escapes bash honours inside double quotes.
fn unescape_double(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && matches!(chars.peek(), Some('"' | '\\' | '$' | '`' | '\n')) {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::classify;

    #[test]
    fn deep_nesting_does_not_overflow_the_stack() {
        for deep in
            ["(".repeat(30_000) + "ls" + &")".repeat(30_000), "echo $(".repeat(10_000) + "x" + &")".repeat(10_000)]
        {
            let parsed = parse(&deep);
            assert!(parsed.parse_error);
            assert!(!classify(&deep).read_only);
        }
        assert!(!parse(&("(".repeat(50) + "ls" + &")".repeat(50))).parse_error, "real nesting still parses");
    }

    #[test]
    fn structure_of_a_compound_command() {
        let p = parse("FOO=1 git status && ls -la src | grep '\\.rs' > out.txt 2>&1; echo \"done $X\"");
        assert!(!p.parse_error);
        let argvs: Vec<Vec<&str>> = p.commands.iter().map(|c| c.argv.iter().map(String::as_str).collect()).collect();
        assert_eq!(
            argvs,
            vec![vec!["git", "status"], vec!["ls", "-la", "src"], vec!["grep", "\\.rs"], vec!["echo", "\"done $X\""]]
        );
        assert_eq!(p.commands[0].assignments, vec!["FOO=1"]);
        assert_eq!(p.operators, vec![Operator::And, Operator::Pipe, Operator::Sequence]);
        let r = &p.commands[2].redirections;
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!((r[0].operator.as_str(), r[0].target.as_str(), r[0].writes()), (">", "out.txt", true));
        assert_eq!(
            (r[1].descriptor.as_deref(), r[1].operator.as_str(), r[1].target.as_str(), r[1].writes()),
            (Some("2"), ">&", "1", false)
        );
        assert!(p.variable_expansion && !p.command_substitution);
        assert_eq!(p.commands[3].dynamic, vec![false, true]);
    }

    #[test]
    fn flags_substitutions_heredocs_subshells_and_errors() {
        assert!(parse("cat $(rm -rf x)").command_substitution);
        assert!(parse("diff <(ls a) <(ls b)").process_substitution);
        assert!(parse("cat <<EOF\nhello\nEOF").heredoc);
        assert!(parse("(cd /tmp && ls)").subshell);
        assert!(parse("for f in *; do cat \"$f\"; done").control_flow);
        assert!(parse("echo 'unterminated").parse_error);
        let parsed = parse("cat $(rm -rf x)");
        let inner: Vec<&str> = parsed.commands.iter().map(|c| c.argv[0].as_str()).collect();
        assert_eq!(inner, vec!["rm", "cat"], "commands inside substitutions are listed too");
    }

    #[test]
    fn newlines_separate_statements() {
        let p = parse("git status\nrm x");
        assert_eq!(p.operators, vec![Operator::Sequence]);
        assert_eq!(p.commands.len(), 2);
    }
}
