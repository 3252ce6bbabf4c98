//! The walker over tree-sitter-bash's syntax tree that builds a [`Parsed`].
//!
//! It runs tree-sitter's C on its input: the host only ever runs it inside
//! the wasm module this crate builds (see the crate docs); natively it runs
//! only under the fuzzers.

use crate::{MAX_COMMAND, MAX_DEPTH, Operator, Parsed, Redirection, SimpleCommand};
use tree_sitter::{Node, Parser};

/// Parses `source` as bash. Never fails: what cannot be parsed sets
/// [`Parsed::parse_error`].
///
/// Unguarded: tree-sitter-bash is C, and a command can make it read out of
/// bounds (tree-sitter-bash issue #337: `{` before a 4-byte character). Call
/// it only where that cannot hurt: inside a wasm instance, or a fuzzer.
pub fn parse_unguarded(source: &str) -> Parsed {
    if source.len() > MAX_COMMAND {
        return Parsed::too_long();
    }
    let mut parser = Parser::new();
    parser.set_language(&tree_sitter_bash::LANGUAGE.into()).expect("tree-sitter-bash matches the tree-sitter ABI");
    let Some(tree) = parser.parse(source, None) else {
        return Parsed { parse_error: true, ..Parsed::default() };
    };
    let root = tree.root_node();
    // A command nested deeper than any real one is refused before the walk,
    // which recurses once per level.
    if deeper_than(root, MAX_DEPTH) {
        return Parsed { parse_error: true, ..Parsed::default() };
    }
    let mut parsed = Parsed { parse_error: root.has_error(), ..Parsed::default() };
    Walker { src: source.as_bytes(), out: &mut parsed }.statement(root);
    parsed
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
        // `a && b && c` is `((a && b) && c)`: a list (or pipeline) nests to
        // the left once per operator. Its spine is walked in a loop, the
        // innermost link first, so a long list costs no stack.
        let mut spine = vec![node];
        while let Some(inner) = spine.last().and_then(|n| chain_link(*n)) {
            spine.push(inner);
        }
        let innermost = spine.pop().expect("the spine holds `node`");
        self.children_after(innermost, false);
        while let Some(link) = spine.pop() {
            self.children_after(link, true);
        }
    }

    /// Visits the children of `node` (but its first when `skip_first`: a
    /// link of a chain already walked), recording operators between
    /// statements.
    fn children_after(&mut self, node: Node<'_>, skip_first: bool) {
        let mut cursor = node.walk();
        let mut previous_statement_end: Option<usize> = None;
        for child in node.children(&mut cursor).skip(usize::from(skip_first)) {
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

/// The inner link of a list or pipeline chain (its first child, of its own
/// kind), if `node` is one.
fn chain_link(node: Node<'_>) -> Option<Node<'_>> {
    let first = node.child(0)?;
    (matches!(node.kind(), "list" | "pipeline") && first.kind() == node.kind()).then_some(first)
}

/// Whether the tree under `root` nests deeper than `limit`, found without
/// recursion. The links of a chain ([`chain_link`]) do not count: the walk
/// takes them in a loop.
fn deeper_than(root: Node<'_>, limit: usize) -> bool {
    let mut cursor = root.walk();
    // For each level the cursor is below: whether it counted.
    let mut counted: Vec<bool> = Vec::new();
    let mut depth = 0usize;
    loop {
        let parent = cursor.node();
        if cursor.goto_first_child() {
            let counts = chain_link(parent) != Some(cursor.node());
            counted.push(counts);
            depth += usize::from(counts);
            if depth > limit {
                return true;
            }
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                // A sibling is never a chain's inner link: it counts.
                if counted.last() == Some(&false) {
                    *counted.last_mut().expect("just checked") = true;
                    depth += 1;
                    if depth > limit {
                        return true;
                    }
                }
                break;
            }
            if !cursor.goto_parent() {
                return false;
            }
            depth -= usize::from(counted.pop().expect("one entry per level below the root"));
        }
    }
}

fn contains(node: Node<'_>, kinds: &[&str]) -> bool {
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
