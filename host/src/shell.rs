//! Shell commands, parsed by the host with tree-sitter-bash: their structure
//! (the `shell` capability) and whether they only read (the classification
//! the Bash tool's concurrency-safety and the permission checks rely on).
//!
//! The classification is an allow-list and fails closed: a command is
//! read-only only when every simple command in it is a known read-only
//! command used with read-only arguments, nothing writes to a file through a
//! redirection, and there is no command or process substitution, background
//! job or parse error.

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
    pub parse_error: bool,
}

/// Parses `source` as bash. Never fails: what cannot be parsed sets
/// [`Parsed::parse_error`].
pub fn parse(source: &str) -> Parsed {
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

/// The verdict on a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    pub read_only: bool,
    /// Why it is not read-only (none when it is).
    pub reason: Option<String>,
}

impl Classification {
    fn no(reason: impl Into<String>) -> Classification {
        Classification { read_only: false, reason: Some(reason.into()) }
    }
}

/// Whether `source` only reads (see the module docs).
pub fn classify(source: &str) -> Classification {
    classify_parsed(&parse(source))
}

/// [`classify`] on an already parsed command.
pub fn classify_parsed(parsed: &Parsed) -> Classification {
    if parsed.parse_error {
        return Classification::no("the command could not be parsed");
    }
    if parsed.command_substitution {
        return Classification::no("it contains a command substitution");
    }
    if parsed.process_substitution {
        return Classification::no("it contains a process substitution");
    }
    if parsed.operators.contains(&Operator::Background) {
        return Classification::no("it starts a background job");
    }
    for cmd in &parsed.commands {
        if let Some(r) = cmd.redirections.iter().find(|r| r.writes()) {
            return Classification::no(format!("it writes to `{}` through a redirection", r.target));
        }
        if let Some(a) = cmd.assignments.iter().find(|a| dangerous_assignment(a)) {
            return Classification::no(format!("it sets `{a}`, which can change what runs"));
        }
        if let Err(why) = read_only_command(&cmd.argv, &cmd.dynamic) {
            return Classification::no(why);
        }
    }
    Classification { read_only: true, reason: None }
}

/// Whether one simple command only reads, on its own: a known read-only
/// command with read-only arguments, no redirection writing a file, no
/// assignment that changes what runs.
pub fn command_read_only(cmd: &SimpleCommand) -> bool {
    !cmd.redirections.iter().any(Redirection::writes)
        && !cmd.assignments.iter().any(|a| dangerous_assignment(a))
        && read_only_command(&cmd.argv, &cmd.dynamic).is_ok()
}

/// Whether an assignment before a command (`NAME=value`) can change what
/// runs (`PATH`, `LD_PRELOAD`, `GIT_*`, ...).
pub fn assignment_changes_what_runs(assignment: &str) -> bool {
    dangerous_assignment(assignment)
}

/// Whether the variable `name` changes what programs load or what a shell
/// runs before the command (`LD_PRELOAD`, `BASH_ENV`, ...).
pub fn changes_loading(name: &str) -> bool {
    name.starts_with("LD_")
        || name.starts_with("DYLD_")
        || matches!(name, "BASH_ENV" | "ENV" | "SHELLOPTS" | "BASHOPTS" | "PS4" | "PROMPT_COMMAND" | "IFS")
}

/// Whether an assignment before a command can change what runs: beyond
/// [`changes_loading`], the search path and the programs others start.
fn dangerous_assignment(assignment: &str) -> bool {
    let name = assignment.split(['=', '+', '[']).next().unwrap_or(assignment);
    changes_loading(name)
        || name.starts_with("GIT_")
        || matches!(
            name,
            "PATH"
                | "PAGER"
                | "LESSOPEN"
                | "LESSCLOSE"
                | "EDITOR"
                | "VISUAL"
                | "MANPAGER"
                | "BROWSER"
                | "PYTHONSTARTUP"
                | "NODE_OPTIONS"
        )
}

/// Commands that only read, whatever their arguments.
const ALWAYS_READ_ONLY: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "pwd",
    "true",
    "false",
    ":",
    "echo",
    "printf",
    "sleep",
    "which",
    "whereis",
    "type",
    "stat",
    "file",
    "du",
    "df",
    "realpath",
    "readlink",
    "basename",
    "dirname",
    "uname",
    "id",
    "whoami",
    "groups",
    "ps",
    "uptime",
    "free",
    "nproc",
    "cut",
    "tr",
    "comm",
    "diff",
    "cmp",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "od",
    "hexdump",
    "strings",
    "column",
    "seq",
    "test",
    "[",
    "[[",
    "expr",
    "grep",
    "egrep",
    "fgrep",
    "jq",
    "less",
    "more",
    "nl",
    "fold",
    "paste",
    "rev",
    "tac",
    "base64",
    "cd",
    "pushd",
    "popd",
    "printenv",
    "locale",
    "lsblk",
    "getconf",
    "arch",
    "tty",
    "look",
    "numfmt",
    "join",
    "expand",
    "unexpand",
    "zcat",
];

/// Whether `argv` (with `dynamic` marking expanded words) only reads, or why not.
fn read_only_command(argv: &[String], dynamic: &[bool]) -> Result<(), String> {
    let Some(first) = argv.first() else { return Ok(()) };
    if dynamic.first().copied().unwrap_or(false) {
        return Err(format!("its command name `{first}` comes from an expansion"));
    }
    let name = match first.strip_prefix("/usr/bin/").or_else(|| first.strip_prefix("/bin/")) {
        Some(base) if !base.contains('/') => base,
        _ if first.contains('/') => return Err(format!("`{first}` runs a program by path")),
        _ => first.as_str(),
    };
    let args = &argv[1..];
    let has = |flags: &[&str]| {
        args.iter().any(|a| flags.iter().any(|f| a == f || (f.starts_with("--") && a.starts_with(&format!("{f}=")))))
    };
    let not = |why: &str| Err(format!("`{name}` {why}"));
    if ALWAYS_READ_ONLY.contains(&name) {
        return Ok(());
    }
    match name {
        "find" => {
            let writes = ["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"];
            match args.iter().find(|a| writes.contains(&a.as_str())) {
                Some(a) => not(&format!("with `{a}` runs commands or changes files")),
                None => Ok(()),
            }
        }
        "rg" if has(&["--pre"]) => not("with `--pre` runs a command on every file"),
        "rg" => Ok(()),
        "sort"
            if args.iter().any(|a| a == "-o" || a.starts_with("--output") || (a.starts_with("-o") && a.len() > 2)) =>
        {
            not("with `-o` writes a file")
        }
        "sort" if has(&["--compress-program"]) => not("with `--compress-program` runs a program"),
        "sort" => Ok(()),
        "uniq" if positional(args).len() > 1 => not("with two file names writes the second"),
        "uniq" => Ok(()),
        "tree" if has(&["-o"]) => not("with `-o` writes a file"),
        "tree" => Ok(()),
        "xxd" if positional(args).len() > 1 => not("with two file names writes the second"),
        "xxd" => Ok(()),
        "date" if has(&["-s", "--set"]) => not("with `--set` changes the clock"),
        "date" => Ok(()),
        "hostname" if !positional(args).is_empty() => not("with an argument changes the host name"),
        "hostname" => Ok(()),
        "sed" => sed(args),
        "git" => git(args),
        "env" => {
            // `env` alone prints; `env [-i] [-u NAME] [NAME=value...] cmd` runs cmd.
            let mut i = 0;
            while let Some(a) = args.get(i) {
                if a == "-u" || a == "--unset" {
                    i += 2;
                } else if a.starts_with('-') {
                    i += 1;
                } else if a.contains('=') {
                    if dangerous_assignment(a) {
                        return not(&format!("sets `{a}`, which can change what runs"));
                    }
                    i += 1;
                } else {
                    break;
                }
            }
            let rest = &argv[1 + i.min(args.len())..];
            read_only_command(rest, &vec![false; rest.len()])
        }
        "timeout" => {
            // timeout [options] DURATION cmd...
            let mut rest = args.iter().skip_while(|a| a.starts_with('-'));
            rest.next();
            let rest: Vec<String> = rest.cloned().collect();
            let dynamic = vec![false; rest.len()];
            read_only_command(&rest, &dynamic)
        }
        "command" if has(&["-v", "-V"]) => Ok(()),
        _ => Err(format!("`{name}` is not a known read-only command")),
    }
}

/// The arguments that are not options.
fn positional(args: &[String]) -> Vec<&String> {
    args.iter().filter(|a| !a.starts_with('-') || a.as_str() == "-").collect()
}

/// `sed` only reads without `-i` and without the `w`, `W` or `e` commands.
fn sed(args: &[String]) -> Result<(), String> {
    // `-i`, `-i.bak`, `-ni`, `--in-place[=SUFFIX]`.
    if args
        .iter()
        .any(|a| a.starts_with("--in-place") || (a.starts_with('-') && !a.starts_with("--") && a[1..].contains('i')))
    {
        return Err("`sed -i` edits files in place".into());
    }
    let scripts: Vec<String> = {
        let mut out = Vec::new();
        let mut iter = args.iter();
        let mut saw_e = false;
        while let Some(a) = iter.next() {
            if a == "-e" || a == "--expression" {
                saw_e = true;
                out.extend(iter.next().cloned());
            } else if let Some(script) = a.strip_prefix("--expression=") {
                saw_e = true;
                out.push(script.to_string());
            } else if a == "-f" || a == "--file" || a.starts_with("--file=") {
                return Err("`sed -f` runs a script file that may write".into());
            } else if let Some(cluster) = a.strip_prefix('-').filter(|c| !c.starts_with('-') && !c.is_empty()) {
                // `-ne SCRIPT`, `-e'SCRIPT'` (stuck), `-nf FILE`.
                if let Some(at) = cluster.find(['e', 'f']) {
                    if cluster.as_bytes()[at] == b'f' {
                        return Err("`sed -f` runs a script file that may write".into());
                    }
                    saw_e = true;
                    match &cluster[at + 1..] {
                        "" => out.extend(iter.next().cloned()),
                        stuck => out.push(stuck.to_string()),
                    }
                }
            }
        }
        if !saw_e {
            out.extend(positional(args).into_iter().next().cloned());
        }
        out
    };
    let writes = |script: &str| {
        script.split([';', '\n', '}', '{']).any(|part| {
            let cmd = part.trim_start();
            // The command follows an optional address (`/re/`, `1,5`, `$`).
            let cmd = cmd.trim_start_matches(|c: char| c.is_ascii_digit() || matches!(c, ',' | '$' | '!' | ' '));
            let cmd =
                if let Some(rest) = cmd.strip_prefix('/') { rest.split_once('/').map_or("", |(_, r)| r) } else { cmd };
            let first = cmd.trim_start().chars().next();
            matches!(first, Some('w' | 'W' | 'e'))
                || (cmd.trim_start().starts_with('s') && s_flags_write(cmd.trim_start()))
        })
    };
    match scripts.iter().find(|s| writes(s)) {
        Some(s) => Err(format!("`sed` script `{s}` writes a file or runs a command")),
        None => Ok(()),
    }
}

/// The flags of an `s` command (`s/a/b/w file`, `s/a/b/e`) that write or run.
fn s_flags_write(cmd: &str) -> bool {
    let mut chars = cmd.chars();
    chars.next(); // 's'
    let Some(delim) = chars.next() else { return false };
    let rest: String = chars.collect();
    let mut parts = 0;
    let mut escaped = false;
    let mut flags = String::new();
    for c in rest.chars() {
        if parts == 2 {
            flags.push(c);
            continue;
        }
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == delim {
            parts += 1;
        }
    }
    flags.contains('w') || flags.contains('e')
}

/// `git` with a read-only subcommand and read-only options.
fn git(args: &[String]) -> Result<(), String> {
    let mut iter = args.iter().peekable();
    // Global options before the subcommand.
    while let Some(a) = iter.peek() {
        match a.as_str() {
            "-c" | "--config-env" => return Err("`git -c` can make git run any command".into()),
            s if s.starts_with("--exec-path") || s.starts_with("--config-env=") => {
                return Err(format!("`git {s}` can make git run other programs"));
            }
            // Another repository brings its own configuration (hooks, pagers,
            // fsmonitor): not read-only in the sense that matters here.
            "-C" => {
                iter.next();
                match iter.next() {
                    Some(dir) if !dir.starts_with('/') && !dir.starts_with('~') && !dir.split('/').any(|c| c == "..") => {}
                    _ => return Err("`git -C` outside the working directory works on a repository whose configuration can run commands".into()),
                }
            }
            s if s.starts_with("--git-dir") || s.starts_with("--work-tree") => {
                return Err(format!("`git {s}` works on a repository whose configuration can run commands"));
            }
            "--namespace" => {
                iter.next();
                iter.next();
            }
            s if s.starts_with('-') => {
                iter.next();
            }
            _ => break,
        }
    }
    let Some(sub) = iter.next() else { return Ok(()) };
    let rest: Vec<&String> = iter.collect();
    let has =
        |flags: &[&str]| rest.iter().any(|a| flags.iter().any(|f| a.as_str() == *f || a.starts_with(&format!("{f}="))));
    let positional: Vec<&&String> = rest.iter().filter(|a| !a.starts_with('-')).collect();
    let ok = match sub.as_str() {
        "status" | "log" | "show" | "diff" | "rev-parse" | "ls-files" | "ls-tree" | "blame" | "shortlog"
        | "describe" | "cat-file" | "grep" | "count-objects" | "merge-base" | "name-rev" | "for-each-ref"
        | "show-ref" | "whatchanged" | "version" | "help" | "rev-list" | "show-branch" | "check-ignore"
        | "annotate" | "var" => {
            !has(&["--output", "--ext-diff", "--textconv", "-O", "--open-files-in-pager"])
                && !rest.iter().any(|a| a.starts_with("-O"))
        }
        "branch" => {
            let listing = has(&[
                "--list",
                "-l",
                "--show-current",
                "-a",
                "--all",
                "-r",
                "--remotes",
                "-v",
                "-vv",
                "--verbose",
                "--contains",
                "--no-contains",
                "--merged",
                "--no-merged",
                "--points-at",
                "--format",
                "--sort",
                "--column",
            ]);
            let changes = has(&[
                "-d",
                "-D",
                "--delete",
                "-m",
                "-M",
                "--move",
                "-c",
                "-C",
                "--copy",
                "-u",
                "--set-upstream-to",
                "--unset-upstream",
                "--edit-description",
                "-f",
                "--force",
            ]);
            !changes && (positional.is_empty() || listing)
        }
        "tag" => {
            let changes =
                has(&["-d", "--delete", "-a", "-s", "-u", "-f", "-m", "-F", "--annotate", "--sign", "--force"]);
            !changes && (positional.is_empty() || has(&["-l", "--list", "-n", "--contains", "--points-at", "--merged"]))
        }
        "remote" => {
            positional.is_empty()
                || matches!(positional[0].as_str(), "show" | "get-url")
                || (rest.len() == 1 && rest[0] == "-v")
        }
        "config" => {
            has(&["--get", "--get-all", "--get-regexp", "--list", "-l", "--get-urlmatch"])
                && !has(&[
                    "--add",
                    "--unset",
                    "--unset-all",
                    "--replace-all",
                    "--edit",
                    "-e",
                    "--rename-section",
                    "--remove-section",
                ])
        }
        "stash" => positional.first().is_some_and(|p| matches!(p.as_str(), "list" | "show")),
        "reflog" => positional.first().is_none_or(|p| p.as_str() == "show"),
        "worktree" => positional.first().is_some_and(|p| p.as_str() == "list"),
        _ => false,
    };
    if ok { Ok(()) } else { Err(format!("`git {sub}` is not a read-only git command here")) }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// (command, read-only?)
    const TABLE: &[(&str, bool)] = &[
        // Plain read-only commands.
        ("ls", true),
        ("ls -la /tmp", true),
        ("cat README.md", true),
        ("head -n 20 src/main.rs", true),
        ("tail -f log.txt", true),
        ("wc -l *.rs", true),
        ("grep -rn TODO src", true),
        ("rg -n 'fn main' --type rust", true),
        ("find . -name '*.rs' -type f", true),
        ("find . -newer Cargo.toml -print", true),
        ("echo hi", true),
        ("printf '%s\\n' a b", true),
        ("pwd", true),
        ("true", true),
        ("false", true),
        ("sleep 1", true),
        ("date", true),
        ("date +%s", true),
        ("which cargo", true),
        ("stat Cargo.toml", true),
        ("file /bin/ls", true),
        ("du -sh target", true),
        ("df -h", true),
        ("sort names.txt", true),
        ("uniq -c names.txt", true),
        ("diff a.txt b.txt", true),
        ("jq .name package.json", true),
        ("sed -n '1,5p' file.txt", true),
        ("sed 's/a/b/g' file.txt", true),
        ("cd src && ls", true),
        ("/bin/ls -l", true),
        ("env", true),
        ("env LANG=C sort f", true),
        ("timeout 5 cat f", true),
        ("command -v git", true),
        ("[ -f Cargo.toml ]", true),
        ("test -d src", true),
        // git.
        ("git status", true),
        ("git log --oneline -5", true),
        ("git diff HEAD~1", true),
        ("git show HEAD:README.md", true),
        ("git branch", true),
        ("git branch --list", true),
        ("git branch -a", true),
        ("git -C sub status", true),
        ("git --no-pager log", true),
        ("git config --get user.name", true),
        ("git remote -v", true),
        ("git stash list", true),
        ("git tag", true),
        ("git rev-parse HEAD", true),
        ("git blame src/lib.rs", true),
        ("git branch new-feature", false),
        ("git branch -D old", false),
        ("git tag v1.0", false),
        ("git commit -m x", false),
        ("git push", false),
        ("git checkout main", false),
        ("git reset --hard", false),
        ("git -c core.pager=evil log", false),
        ("git config user.name x", false),
        ("git stash", false),
        ("git diff --output=patch.txt", false),
        // Pipelines and lists: every part must be read-only.
        ("ls | grep foo | wc -l", true),
        ("cat a && cat b || echo none", true),
        ("git status; git log -1", true),
        ("git status; rm x", false),
        ("ls && rm -rf /", false),
        ("echo hi | tee f", false),
        ("cat f | xargs rm", false),
        // Redirections.
        ("ls > out.txt", false),
        ("echo hi >> log", false),
        ("ls 2>&1", true),
        ("ls 2>/dev/null", true),
        ("ls &> all.txt", false),
        ("cat < input.txt", true),
        ("grep x <<< \"$VAR\"", true),
        ("cat <<EOF\nhello\nEOF", true),
        ("cat <<EOF > out.txt\nhello\nEOF", false),
        ("(ls; pwd) > out", false),
        // Substitutions, expansions, jobs.
        ("cat $(rm -rf x)", false),
        ("echo `whoami`", false),
        ("diff <(ls a) <(ls b)", false),
        ("cat \"$FILE\"", true),
        ("$CMD --help", false),
        ("sleep 100 &", false),
        // Environment prefixes.
        ("FOO=1 ls", true),
        ("LANG=C grep x f", true),
        ("LD_PRELOAD=/tmp/evil.so ls", false),
        ("PATH=/tmp ls", false),
        ("GIT_EXTERNAL_DIFF=evil git diff", false),
        // Writers and runners.
        ("find . -delete", false),
        ("find . -name x -exec rm {} \\;", false),
        ("find . -fprint out", false),
        ("sed -i 's/a/b/' f", false),
        ("sed -i.bak 's/a/b/' f", false),
        ("sed --in-place 's/a/b/' f", false),
        ("sed -e'1e touch pwned' README.md", false),
        ("sed --expression='1e touch pwned' f", false),
        ("sed -ne '1e touch pwned' f", false),
        ("sed -nf script.sed f", false),
        ("sed --file=script.sed f", false),
        ("sed -n -e '1,3p' f", true),
        ("sed -ne 's/a/b/p' f", true),
        ("git grep -O'touch pwned' -e x", false),
        ("git grep --open-files-in-pager=vim x", false),
        ("git --git-dir=evil --work-tree=. status", false),
        ("git -C ../other log", false),
        ("sort -S 16k --compress-program=sh f", false),
        ("sed 's/a/b/w out' f", false),
        ("sed -n 'w out' f", false),
        ("sort -o out.txt in.txt", false),
        ("uniq in.txt out.txt", false),
        ("rg --pre ./script x", false),
        ("rm -rf target", false),
        ("mv a b", false),
        ("cp a b", false),
        ("touch x", false),
        ("mkdir d", false),
        ("chmod +x f", false),
        ("curl https://example.com", false),
        ("python3 -c 'print(1)'", false),
        ("bash -c ls", false),
        ("sh script.sh", false),
        ("./configure", false),
        ("npm install", false),
        ("cargo build", false),
        ("awk '{print}' f", false),
        ("xargs ls", false),
        ("date -s '2020-01-01'", false),
        ("env rm x", false),
        ("timeout 5 rm x", false),
        ("exec ls", false),
        ("eval ls", false),
        ("export FOO=1", false),
        // Control flow over read-only commands.
        ("for f in *.rs; do cat \"$f\"; done", true),
        ("if [ -f x ]; then cat x; fi", true),
        ("while true; do rm x; done", false),
        ("f() { rm x; }; f", false),
        // Parse errors.
        ("echo 'unterminated", false),
        ("ls \"unterminated", false),
        ("ls &&", false),
    ];

    #[test]
    fn classification_table() {
        assert!(TABLE.len() >= 80, "{} cases", TABLE.len());
        let mut wrong = Vec::new();
        for (command, expected) in TABLE {
            let c = classify(command);
            if c.read_only != *expected {
                wrong.push(format!("{command:?}: expected read_only={expected}, got {c:?}"));
            }
        }
        assert!(wrong.is_empty(), "{} wrong:\n{}", wrong.len(), wrong.join("\n"));
    }

    #[test]
    fn very_long_commands_parse() {
        let long = vec!["cat README.md"; 2000].join(" && ");
        let c = classify(&long);
        assert!(c.read_only, "{c:?}");
        assert_eq!(parse(&long).commands.len(), 2000);
        let long_bad = format!("{long} && rm x");
        assert!(!classify(&long_bad).read_only);
    }

    #[test]
    fn reasons_say_why() {
        assert_eq!(classify("ls > out.txt").reason.unwrap(), "it writes to `out.txt` through a redirection");
        assert_eq!(classify("rm x").reason.unwrap(), "`rm` is not a known read-only command");
        assert!(classify("ls").reason.is_none());
    }
}
