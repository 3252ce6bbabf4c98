//! Which exit codes mean failure, by command, as Claude Code 2.1.88 reads
//! them (`tools/BashTool/commandSemantics.ts`): `grep` and `rg` exit 1 when
//! nothing matched, `find` when some directories were unreadable, `diff`
//! when the files differ, `test` and `[` when the condition is false; none
//! of those is an error, 2 and above are. Every other command fails on any
//! code but 0.
//!
//! The command that decides is the last one of the command line, found the
//! way Claude Code finds it: the line is split at `&&`, `||`, `;`, `;;`,
//! `|` and newlines, redirections to a plain file or a descriptor are
//! dropped, and the first word of the last piece names the command. Other
//! operators (`&`, `(`, `)`, `<`, `|&`) stay pieces of their own, so
//! `grep x < file` and `(grep x)` take the default reading, as there.

/// How a finished command's exit code reads.
#[derive(Debug, PartialEq, Eq)]
pub struct Interpretation {
    /// The result is an error.
    pub is_error: bool,
    /// What a code with a special meaning means (shown to people, not sent
    /// to the model).
    pub message: Option<String>,
}

/// Interprets `code` for `command`.
pub fn interpret(command: &str, code: i32) -> Interpretation {
    let special =
        |message: &str| Interpretation { is_error: code >= 2, message: (code == 1).then(|| message.to_string()) };
    match base_command(command).as_str() {
        "grep" | "rg" => special("No matches found"),
        "find" => special("Some directories were inaccessible"),
        "diff" => special("Files differ"),
        "test" | "[" => special("Condition is false"),
        _ => Interpretation {
            is_error: code != 0,
            message: (code != 0).then(|| format!("Command failed with exit code {code}")),
        },
    }
}

/// The first word of the last piece of `command` (see the module's doc).
pub fn base_command(command: &str) -> String {
    let pieces = split(command);
    let last = pieces.last().map_or(command, String::as_str);
    last.split_whitespace().next().unwrap_or_default().to_string()
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Op(&'static str),
    /// A line break: ends the piece before it.
    Break,
    Comment(String),
}

/// Operators, longest first.
const OPERATORS: [&str; 14] = ["<<<", "&&", "||", ";;", "|&", "<(", ">>", ">&", "&", ";", "(", ")", "|", ">"];
/// Operators that only separate commands: dropped from the pieces.
const SEPARATORS: [&str; 5] = ["&&", "||", ";", ";;", "|"];

/// The command line as pieces (see the module's doc).
fn split(command: &str) -> Vec<String> {
    let tokens = tokenize(&command.replace("\\\n", ""));
    // Words run together into one piece; operators are pieces of their own.
    let mut parts: Vec<Option<Token>> = Vec::new();
    for token in tokens {
        match (token, parts.last_mut()) {
            (Token::Word(w), Some(Some(Token::Word(prev)))) => {
                prev.push(' ');
                prev.push_str(&w);
            }
            (Token::Break, _) => parts.push(None),
            (token, _) => parts.push(Some(token)),
        }
    }
    // Redirections to a plain file or a descriptor are dropped, with the
    // descriptor number ending the piece before them (`2` in `2>/dev/null`).
    // A dropped part becomes an empty word, so the next redirection does not
    // see past it.
    let word = |p: Option<&Option<Token>>| match p {
        Some(Some(Token::Word(w))) => Some(w.clone()),
        _ => None,
    };
    let fd = |s: &str| matches!(s, "0" | "1" | "2");
    let ends_with_fd = |s: &str| {
        let b = s.as_bytes();
        b.len() >= 3 && b[b.len() - 2] == b' ' && matches!(b[b.len() - 1], b'0'..=b'2')
    };
    for i in 0..parts.len() {
        let op = match &parts[i] {
            Some(Token::Op(op @ (">" | ">>" | ">&"))) => *op,
            _ => continue,
        };
        let Some(next) = word(parts.get(i + 1)) else { continue };
        let redirect_after = matches!(parts.get(i + 2), Some(Some(Token::Op(">" | ">>" | ">&"))));
        // `> /dev/null 2>&1` reads `/dev/null 2` as one piece: the ` 2`
        // belongs to the next redirection.
        let target = if op != ">&" && ends_with_fd(&next) && redirect_after { &next[..next.len() - 2] } else { &next };
        let (strip, third) = if op == ">&" && fd(&next) {
            (true, false)
        } else if op == ">" && next == "&" {
            (word(parts.get(i + 2)).is_some_and(|w| fd(&w)), true)
        } else if op == ">" && next.starts_with('&') && next.len() > 1 && fd(&next[1..]) {
            (true, false)
        } else {
            (op != ">&" && static_target(target), false)
        };
        if !strip {
            continue;
        }
        if i > 0
            && let Some(Some(Token::Word(prev))) = parts.get_mut(i - 1)
            && ends_with_fd(prev)
        {
            prev.truncate(prev.len() - 2);
        }
        let end = if third { i + 3 } else { i + 2 };
        for part in parts.iter_mut().take(end).skip(i) {
            *part = Some(Token::Word(String::new()));
        }
    }
    parts
        .into_iter()
        .filter_map(|p| match p? {
            Token::Word(w) => Some(w),
            Token::Comment(c) => Some(c),
            Token::Op(op) if SEPARATORS.contains(&op) || matches!(op, ">" | ">>" | ">&") => None,
            Token::Op(op) => Some(op.to_string()),
            Token::Break => None,
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether a redirection target is a plain file name (no expansion, glob,
/// quote or space): Claude Code drops only those.
fn static_target(target: &str) -> bool {
    !target.is_empty()
        && !target.contains(|c: char| c.is_whitespace() || matches!(c, '\'' | '"'))
        && !target.starts_with(['#', '!', '=', '&'])
        && !target.contains(['$', '`', '*', '?', '[', '{', '~', '(', '<'])
}

/// Words (quotes kept as written), operators, comments and line breaks.
/// Heredoc bodies are skipped.
fn tokenize(command: &str) -> Vec<Token> {
    let chars: Vec<char> = command.chars().collect();
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    let mut i = 0;
    let flush = |word: &mut String, tokens: &mut Vec<Token>| {
        if !word.is_empty() {
            tokens.push(Token::Word(std::mem::take(word)));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                word.push(c);
                if let Some(&next) = chars.get(i + 1) {
                    word.push(next);
                }
                i += 2;
            }
            '\'' | '"' => {
                let end = (i + 1..chars.len())
                    .find(|&j| chars[j] == c && (c == '\'' || chars[j - 1] != '\\'))
                    .unwrap_or(chars.len() - 1);
                word.extend(&chars[i..=end]);
                i = end + 1;
            }
            '#' if word.is_empty() => {
                flush(&mut word, &mut tokens);
                let end = (i..chars.len()).find(|&j| chars[j] == '\n').unwrap_or(chars.len());
                tokens.push(Token::Comment(chars[i..end].iter().collect()));
                i = end;
            }
            '\n' => {
                flush(&mut word, &mut tokens);
                tokens.push(Token::Break);
                i += 1;
                // Skip the bodies of heredocs opened on the line just ended.
                for (delimiter, strip_tabs) in std::mem::take(&mut heredocs) {
                    while i < chars.len() {
                        let end = (i..chars.len()).find(|&j| chars[j] == '\n').unwrap_or(chars.len());
                        let line: String = chars[i..end].iter().collect();
                        i = (end + 1).min(chars.len());
                        let line = if strip_tabs { line.trim_start_matches('\t') } else { line.as_str() };
                        if line == delimiter {
                            break;
                        }
                    }
                }
            }
            c if c.is_whitespace() => {
                flush(&mut word, &mut tokens);
                i += 1;
            }
            _ => {
                let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
                if rest.starts_with("<<") && !rest.starts_with("<<<") {
                    // A heredoc: `<<EOF`, `<<-EOF`, `<<'EOF'`; its body
                    // starts on the next line.
                    flush(&mut word, &mut tokens);
                    let strip_tabs = chars.get(i + 2) == Some(&'-');
                    let mut j = i + if strip_tabs { 3 } else { 2 };
                    while chars.get(j).is_some_and(|c| *c == ' ' || *c == '\t') {
                        j += 1;
                    }
                    let start = j;
                    while chars.get(j).is_some_and(|c| !c.is_whitespace() && !";&|()<>".contains(*c)) {
                        j += 1;
                    }
                    let raw: String = chars[start..j].iter().collect();
                    word = chars[i..j].iter().collect();
                    heredocs.push((raw.replace(['\'', '"', '\\'], ""), strip_tabs));
                    i = j;
                } else if let Some(op) = OPERATORS.iter().find(|op| rest.starts_with(**op)) {
                    flush(&mut word, &mut tokens);
                    tokens.push(Token::Op(op));
                    i += op.chars().count();
                } else if c == '<' {
                    flush(&mut word, &mut tokens);
                    tokens.push(Token::Op("<"));
                    i += 1;
                } else {
                    word.push(c);
                    i += 1;
                }
            }
        }
    }
    flush(&mut word, &mut tokens);
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(command: &str, code: i32) -> bool {
        interpret(command, code).is_error
    }

    #[test]
    fn the_commands_whose_exit_one_is_no_error() {
        for command in ["grep foo a.txt", "rg foo", "find . -name x", "diff a b", "test -f x", "[ -f x ]"] {
            assert!(!error(command, 1), "{command} exiting 1");
            assert!(error(command, 2), "{command} exiting 2");
            assert!(!error(command, 0), "{command} exiting 0");
        }
        assert_eq!(interpret("grep x f", 1).message.as_deref(), Some("No matches found"));
        assert_eq!(interpret("diff a b", 1).message.as_deref(), Some("Files differ"));
        assert_eq!(interpret("[ -d x ]", 1).message.as_deref(), Some("Condition is false"));
        assert_eq!(interpret("find /x", 1).message.as_deref(), Some("Some directories were inaccessible"));
        assert_eq!(interpret("ls x", 2).message.as_deref(), Some("Command failed with exit code 2"));
        for command in ["ls nothing", "cat x", "wc -l x", "egrep x f", "git diff"] {
            assert!(error(command, 1), "{command} exiting 1 is an error");
        }
    }

    #[test]
    fn the_last_command_decides() {
        assert_eq!(base_command("cat a.txt | grep foo"), "grep");
        assert_eq!(base_command("cd src && diff a b"), "diff");
        assert_eq!(base_command("grep foo a || echo none"), "echo");
        assert_eq!(base_command("make; test -f out"), "test");
        assert_eq!(base_command("ls\ngrep x y"), "grep");
        assert_eq!(base_command("grep -q 'a && b' file"), "grep", "operators inside quotes do not split");
        assert_eq!(base_command("echo \"x; y\" | rg z"), "rg");
        assert!(!error("cat a.txt | grep foo", 1));
        assert!(error("grep foo a.txt | wc -l", 1));
    }

    #[test]
    fn redirections_to_files_and_descriptors_are_dropped() {
        assert_eq!(base_command("grep x f 2>/dev/null"), "grep");
        assert_eq!(base_command("grep x f > out.txt"), "grep");
        assert_eq!(base_command("grep x f >> out.txt"), "grep");
        assert_eq!(base_command("grep x f 2>&1"), "grep");
        assert_eq!(base_command("grep x f > /dev/null 2>&1"), "grep");
        assert_eq!(base_command("grep x f >&2"), "grep");
        assert_eq!(base_command("grep € > out"), "grep", "multi-byte text before a redirection");
    }

    #[test]
    fn what_claude_code_reads_the_default_way() {
        // The piece after `<` is the file; after `&`, the operator itself;
        // a subshell ends with `)`; assignments are the first word.
        assert_eq!(base_command("grep x < file"), "file");
        assert_eq!(base_command("grep x &"), "&");
        assert_eq!(base_command("(grep x f)"), ")");
        assert_eq!(base_command("FOO=1 grep x"), "FOO=1");
        assert_eq!(base_command("grep x f # look"), "#");
        assert_eq!(base_command("grep x > \"$OUT\""), "\"$OUT\"", "a dynamic target stays");
        assert!(error("grep x < file", 1));
        assert!(error("FOO=1 grep x", 1));
    }

    #[test]
    fn heredoc_bodies_and_continuations() {
        assert_eq!(base_command("grep x <<'EOF'\nls\nEOF"), "grep");
        assert_eq!(base_command("cat <<-EOF\n\tgrep\n\tEOF\ndiff a b"), "diff");
        assert_eq!(base_command("grep \\\n  x f"), "grep");
        assert_eq!(base_command(""), "");
        assert_eq!(base_command("   "), "");
    }
}
