//! Command rules (`Bash(npm run:*)`): reading a rule's content as words
//! or, where it is not one plain command, as text the way Claude Code reads
//! it; matching a parsed command against them (through the wrappers it
//! runs, and the scripts of nested shells), and telling when a command
//! cannot be checked.

use super::*;
use regex::Regex;

/// One tool's command rules.
#[derive(Debug, Default)]
pub(super) struct Commands {
    /// Rules that are one plain command (`git push:*`), by program.
    by_program: HashMap<String, Vec<CommandRule>>,
    /// Rules read as text (`echo (x)`, `git * status`).
    texts: Vec<TextRule>,
}

/// A rule made of words, compared word by word with a command's, after
/// unquoting: `Bash(git push origin main)`, `Bash(npm run test:*)`.
#[derive(Debug)]
pub(super) struct CommandRule {
    pub(super) words: Vec<String>,
    pub(super) prefix: bool,
    pub(super) entry: usize,
}

/// A rule whose content is not one plain command, matched as Claude Code
/// matches it: as text. An exact rule matches the whole command as written
/// (what the user approved, character for character) or one simple command
/// of it; a prefix or wildcard rule matches one simple command at a time,
/// so it never reaches past `&&`, `;` or `|`. A simple command's text is
/// its words, unquoted, joined by single spaces; a word that holds white
/// space (or none) stays quoted, so that `'ls && rm' -rf /` (a program
/// named `ls && rm`) is not the text `ls && rm -rf /`.
#[derive(Debug)]
pub(super) struct TextRule {
    pattern: TextPattern,
    entry: usize,
}

#[derive(Debug)]
enum TextPattern {
    /// `echo (x)`: that text.
    Exact(String),
    /// `echo (x):*`: that text, alone or followed by a space.
    Prefix(String),
    /// `git * status`: `*` is any text (`\*` a literal `*`); a single
    /// trailing ` *` may also match nothing (`git *` matches `git`).
    Wildcard(Regex),
}

impl TextPattern {
    fn matches(&self, text: &str) -> bool {
        let text = text.trim();
        match self {
            TextPattern::Exact(exact) => text == exact,
            TextPattern::Prefix(prefix) => {
                text.strip_prefix(prefix.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
            }
            TextPattern::Wildcard(regex) => regex.is_match(text),
        }
    }
}

impl Commands {
    /// Adds the rule `entry` with `content`: words where the content is one
    /// plain command, else text.
    pub(super) fn add(&mut self, content: &str, entry: usize) -> Result<(), ContentError> {
        match command_rule(content, entry)? {
            Ok(rule) => self.by_program.entry(rule.words[0].clone()).or_default().push(rule),
            Err(text) => self.texts.push(text),
        }
        Ok(())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.by_program.is_empty() && self.texts.is_empty()
    }

    /// The first exact text rule that is the whole command `text`.
    pub(super) fn whole_text(&self, text: &str) -> Option<usize> {
        self.texts
            .iter()
            .filter(|t| matches!(t.pattern, TextPattern::Exact(_)) && t.pattern.matches(text))
            .map(|t| t.entry)
            .min()
    }

    /// The first text rule matching the command `text` as a whole, for deny
    /// and ask rules (any pattern).
    fn any_text(&self, text: &str) -> Option<usize> {
        self.texts.iter().filter(|t| t.pattern.matches(text)).map(|t| t.entry).min()
    }

    /// The first text rule matching the simple command `argv`. With
    /// `strict` (allow rules), none matches a word only known when it runs.
    pub(super) fn text_of(&self, argv: &[String], dynamic: &[bool], strict: bool) -> Option<usize> {
        if self.texts.is_empty() || (strict && dynamic.iter().any(|&d| d)) {
            return None;
        }
        self.any_text(&line(argv))
    }

    /// The first text rule matching `cmd` written out whole, with its
    /// assignments and redirections (`Bash(rm x > y)`); as
    /// [`Commands::text_of`] otherwise.
    pub(super) fn text_of_whole(&self, cmd: &SimpleCommand, strict: bool) -> Option<usize> {
        if self.texts.is_empty() || (cmd.assignments.is_empty() && cmd.redirections.is_empty()) {
            return None;
        }
        if strict && cmd.dynamic.iter().any(|&d| d) {
            return None;
        }
        let redirections = cmd.redirections.iter().map(|r| {
            let descriptor = r.descriptor.as_deref().unwrap_or("");
            format!("{descriptor}{} {}", r.operator, r.target)
        });
        let words: Vec<String> = cmd.assignments.iter().cloned().chain([line(&cmd.argv)]).chain(redirections).collect();
        self.any_text(&words.join(" "))
    }
}

/// The words of a simple command as one text (see [`TextRule`]).
fn line(argv: &[String]) -> String {
    let word = |w: &String| match w.is_empty() || w.contains(char::is_whitespace) {
        true => shell::quote(w),
        false => w.clone(),
    };
    argv.iter().map(word).collect::<Vec<_>>().join(" ")
}

/// The first deny/ask rule matching `parsed` (the command `text`, where
/// known) as a whole or any simple command of it, looking through wrappers
/// (`timeout 5 rm` is `rm`), paths to programs (`/bin/rm` is `rm`), and the
/// scripts of nested shells (`bash -c 'rm x'`, `eval`).
pub(super) fn command_any(commands: &Commands, parsed: &Parsed, text: Option<&str>) -> Option<usize> {
    if commands.is_empty() {
        return None;
    }
    command_any_within(commands, parsed, text, 0)
}

/// How deep `bash -c "bash -c '…'"` is followed.
pub(super) const NESTED_SHELLS: usize = 4;

pub(super) fn command_any_within(
    commands: &Commands,
    parsed: &Parsed,
    text: Option<&str>,
    depth: usize,
) -> Option<usize> {
    let mut best: Option<usize> = text.and_then(|t| commands.any_text(t));
    let mut keep = |hit: Option<usize>| {
        if let Some(h) = hit {
            best = Some(best.map_or(h, |b| b.min(h)));
        }
    };
    for cmd in &parsed.commands {
        keep(commands.text_of_whole(cmd, false));
        for (argv, dynamic) in candidates(cmd, true) {
            keep(match_command(commands, &argv[0], argv, dynamic, true));
            keep(commands.text_of(argv, dynamic, false));
            let program = program_name(&argv[0]);
            if program != argv[0] {
                keep(match_command(commands, program, argv, dynamic, true));
            }
            if depth < NESTED_SHELLS
                && let Some(script) = nested_script(argv)
            {
                keep(command_any_within(commands, &shell::parse(&script), Some(&script), depth + 1));
            }
        }
    }
    best
}

/// Why the programs `parsed` runs cannot all be known (so deny and ask
/// rules cannot be checked): a parse error, a program named by an
/// expansion, a shell or `source` reading a script the host cannot see.
pub(super) fn unclear(parsed: &Parsed, depth: usize) -> Option<String> {
    if parsed.parse_error {
        return Some("toolhost cannot parse the command, so it cannot check it against the rules on commands.".into());
    }
    for cmd in &parsed.commands {
        for (argv, dynamic) in candidates(cmd, true) {
            if dynamic.first() == Some(&true) {
                return Some(format!(
                    "The program `{}` is only known when the command runs, so the rules on commands cannot be checked.",
                    argv[0]
                ));
            }
            if let Some(why) = unclear_wrapper(argv, dynamic) {
                return Some(why);
            }
            let program = program_name(&argv[0]);
            let is_shell = matches!(program, "bash" | "sh" | "dash" | "zsh" | "ksh" | "ash" | "busybox");
            match nested_script(argv) {
                Some(script) if depth < NESTED_SHELLS => {
                    let flag = argv.iter().position(|a| *a == script).unwrap_or(0);
                    if dynamic.get(flag).copied().unwrap_or(false) {
                        return Some(format!("`{program}` runs a script only known when the command runs."));
                    }
                    if let Some(why) = unclear(&shell::parse(&script), depth + 1) {
                        return Some(why);
                    }
                }
                Some(_) => return Some("The command nests shells too deeply to check.".into()),
                None if is_shell || matches!(program, "source" | ".") => {
                    return Some(format!(
                        "`{program}` runs a script toolhost cannot see, so the rules on commands cannot be checked."
                    ));
                }
                None => {}
            }
        }
    }
    None
}

/// Why toolhost cannot tell which command the wrapper `argv` runs, if it is
/// one and cannot: an option it does not know (it may take the next word,
/// `sudo -X rm f`), or a word before the command made by an expansion
/// (`timeout $D rm f` may split into more words; for `find`, any word, since
/// any may be `-exec`). A deny rule on the command inside could be missed
/// either way, so the call is asked instead. [`candidates`] walks the chain.
fn unclear_wrapper(argv: &[String], dynamic: &[bool]) -> Option<String> {
    let program = program_name(&argv[0]);
    if program == "find" && dynamic.iter().any(|&d| d) {
        return Some("A word of `find` is only known when it runs, and could make it run a command.".into());
    }
    let wrapped = shell::wrapped(argv)?;
    if !wrapped.options_known {
        return Some(format!(
            "toolhost does not know every option given to `{program}`, so it cannot tell which command it runs."
        ));
    }
    if dynamic.iter().take(wrapped.start).skip(1).any(|&d| d) {
        return Some(format!(
            "A word before the command `{program}` runs is only known when it runs, so the rules on commands \
             cannot be checked."
        ));
    }
    None
}

/// The program a command word names: `/usr/bin/rm` and `\rm` are `rm`.
pub(super) fn program_name(word: &str) -> &str {
    let word = word.strip_prefix("$'").and_then(|w| w.strip_suffix('\'')).unwrap_or(word);
    word.rsplit('/').next().unwrap_or(word).trim_start_matches('\\')
}

/// The script a shell is told to run (`bash -c SCRIPT`, `sh -ec SCRIPT`,
/// `eval WORDS`), if `argv` runs one.
pub(super) fn nested_script(argv: &[String]) -> Option<String> {
    match program_name(&argv[0]) {
        "bash" | "sh" | "dash" | "zsh" | "ksh" | "ash" | "busybox" => {
            let flag = argv
                .iter()
                .skip(1)
                .position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c') || a == "-c")?;
            argv.get(flag + 2).cloned()
        }
        "eval" => Some(argv[1..].join(" ")),
        _ => None,
    }
}

/// The word rule of `commands` matching `argv`, its program called `name`. With
/// `loose` (deny and ask rules), a prefix rule also matches when options sit
/// between its words (`git -C . push --force` matches `Bash(git push:*)`).
pub(super) fn match_command(
    commands: &Commands,
    name: &str,
    argv: &[String],
    dynamic: &[bool],
    loose: bool,
) -> Option<usize> {
    let rules = commands.by_program.get(name)?;
    if dynamic.first() == Some(&true) {
        return None;
    }
    rules
        .iter()
        .filter(|r| {
            let n = r.words.len();
            let fits = if r.prefix { argv.len() >= n } else { argv.len() == n };
            let exact =
                || r.words[1..].iter().zip(&argv[1..]).zip(dynamic.iter().skip(1)).all(|((w, a), &d)| !d && w == a);
            (fits && exact()) || (loose && r.prefix && past_options(&r.words[1..], argv, dynamic))
        })
        .map(|r| r.entry)
        .min()
}

/// Whether `words` follow the program in `argv` in order, with nothing
/// between them but options and the values right after options.
pub(super) fn past_options(words: &[String], argv: &[String], dynamic: &[bool]) -> bool {
    let mut i = 1;
    for word in words {
        loop {
            let Some(arg) = argv.get(i) else { return false };
            if !dynamic.get(i).copied().unwrap_or(true) && arg == word {
                i += 1;
                break;
            }
            let after_option = argv[i - 1].starts_with('-') && !argv[i - 1].contains('=') && i > 1;
            if !(arg.starts_with('-') || after_option) {
                return false;
            }
            i += 1;
        }
    }
    true
}

/// The word lists a rule may match for one simple command: its argv, and
/// the argv of the command a wrapper runs. `thorough` (deny and ask) also
/// looks through wrappers that change how a command runs (`env`, `sudo`,
/// `xargs`, …); allow rules look only through those that merely time or
/// prioritise it.
pub(super) fn candidates(cmd: &SimpleCommand, thorough: bool) -> Vec<(&[String], &[bool])> {
    let mut out = Vec::new();
    let (mut argv, mut dynamic) = (cmd.argv.as_slice(), cmd.dynamic.as_slice());
    while !argv.is_empty() {
        out.push((argv, dynamic));
        let Some(wrapped) = shell::wrapped(argv) else { break };
        let times = matches!(wrapped.effect, Effect::Schedules | Effect::SchedulesAndWrites);
        if !(thorough || times) || wrapped.start >= argv.len() {
            break;
        }
        argv = &argv[wrapped.start..];
        dynamic = &dynamic[wrapped.start.min(dynamic.len())..];
    }
    out
}

/// The rule the content of a command rule makes: words (`Ok`) where it is
/// one plain command, else text (`Err`), as Claude Code reads it: `X:*` a
/// prefix, an unescaped `*` a wildcard, anything else the exact text.
fn command_rule(content: &str, entry: usize) -> Result<Result<CommandRule, TextRule>, ContentError> {
    let text = |pattern| Ok(Err(TextRule { pattern, entry }));
    if content.trim() == ":*" {
        return Err(ContentError::EmptyPrefix);
    }
    if let Some(prefix) = content.strip_suffix(":*") {
        return match words(prefix.trim_end(), entry, true) {
            Some(rule) => Ok(Ok(rule)),
            None => text(TextPattern::Prefix(prefix.trim().to_string())),
        };
    }
    let star = star_outside_quotes(content);
    if let Some(prefix) = content.strip_suffix(" *")
        && !star_outside_quotes(prefix)
        && let Some(rule) = words(prefix.trim_end(), entry, true)
    {
        return Ok(Ok(rule));
    }
    if star {
        return text(TextPattern::Wildcard(wildcard(content)?));
    }
    match words(content, entry, false) {
        Some(rule) => Ok(Ok(rule)),
        None => text(TextPattern::Exact(content.trim().to_string())),
    }
}

/// The words of `text`, if it is one plain command: no operator,
/// redirection, assignment, substitution or expansion, nothing the parser
/// cannot read.
fn words(text: &str, entry: usize, prefix: bool) -> Option<CommandRule> {
    if text.trim().is_empty() || star_outside_quotes(text) {
        return None;
    }
    let parsed = shell::parse(text);
    let simple = parsed.commands.len() == 1
        && parsed.operators.is_empty()
        && !parsed.parse_error
        && !parsed.command_substitution
        && !parsed.process_substitution
        && parsed.commands[0].assignments.is_empty()
        && parsed.commands[0].redirections.is_empty()
        && !parsed.commands[0].dynamic.iter().any(|&d| d);
    simple.then(|| CommandRule { words: parsed.commands[0].argv.clone(), prefix, entry })
}

/// Whether `text` has a `*` that the shell would not take literally: not
/// inside quotes, not after a backslash.
fn star_outside_quotes(text: &str) -> bool {
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in text.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '*' if !single && !double => return true,
            _ => {}
        }
    }
    false
}

/// Claude Code's wildcard pattern as a regular expression over a whole
/// command's text: `*` any text (new lines too), `\*` a literal `*`, `\\`
/// a literal backslash, `/**/` any number of directories; a single `*` as
/// ` *` at the end may also match nothing.
fn wildcard(content: &str) -> Result<Regex, ContentError> {
    // Stand-ins, out of the way of what follows: a literal `*`, and `/**/`.
    const STAR: char = '\u{0}';
    const GLOBSTAR: char = '\u{1}';
    let mut marked = String::new();
    let mut chars = content.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some('*')) => {
                chars.next();
                marked.push(STAR);
            }
            ('\\', Some('\\')) => {
                chars.next();
                marked.push('\\');
            }
            _ => marked.push(c),
        }
    }
    let stars = marked.matches('*').count();
    let globstars = Regex::new(r"/(?:\*\*/)+").expect("a valid expression");
    let marked = globstars.replace_all(&marked, format!("/{GLOBSTAR}"));
    let mut pattern = String::from("(?s)^");
    for piece in marked.split_inclusive(['*', GLOBSTAR]) {
        let (literal, wild) = match piece.chars().last() {
            Some('*') => (&piece[..piece.len() - 1], ".*"),
            Some(GLOBSTAR) => (&piece[..piece.len() - 1], "(?:.*/)?"),
            _ => (piece, ""),
        };
        pattern.push_str(&regex::escape(&literal.replace(STAR, "*")));
        pattern.push_str(wild);
    }
    if stars == 1 && pattern.ends_with(" .*") {
        pattern.truncate(pattern.len() - " .*".len());
        pattern.push_str("(?: .*)?");
    }
    pattern.push('$');
    Regex::new(&pattern).map_err(|e| ContentError::Pattern(e.to_string()))
}

#[cfg(test)]
pub(super) fn wildcard_for_tests(pattern: &str) -> Regex {
    wildcard(pattern).expect("a pattern")
}
