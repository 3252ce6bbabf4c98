//! Command rules (`Bash(npm run:*)`): parsing a rule's words, matching a
//! parsed command against them (through the wrappers it runs, and the
//! scripts of nested shells), and telling when a command cannot be checked.

use super::*;

/// One tool's command rules, by first word.
pub(super) type Commands = HashMap<String, Vec<CommandRule>>;

#[derive(Debug)]
pub(super) struct CommandRule {
    pub(super) words: Vec<String>,
    pub(super) prefix: bool,
    pub(super) entry: usize,
}

/// The first deny/ask rule matching any simple command of `parsed`, looking
/// through wrappers (`timeout 5 rm` is `rm`), paths to programs (`/bin/rm`
/// is `rm`), and the scripts of nested shells (`bash -c 'rm x'`, `eval`).
pub(super) fn command_any(commands: &Commands, parsed: &Parsed) -> Option<usize> {
    if commands.is_empty() {
        return None;
    }
    command_any_within(commands, parsed, 0)
}

/// How deep `bash -c "bash -c '…'"` is followed.
pub(super) const NESTED_SHELLS: usize = 4;

pub(super) fn command_any_within(commands: &Commands, parsed: &Parsed, depth: usize) -> Option<usize> {
    let mut best: Option<usize> = None;
    let mut keep = |hit: Option<usize>| {
        if let Some(h) = hit {
            best = Some(best.map_or(h, |b| b.min(h)));
        }
    };
    for cmd in &parsed.commands {
        for (argv, dynamic) in candidates(cmd, true) {
            keep(match_command(commands, &argv[0], argv, dynamic, true));
            let program = program_name(&argv[0]);
            if program != argv[0] {
                keep(match_command(commands, program, argv, dynamic, true));
            }
            if depth < NESTED_SHELLS
                && let Some(script) = nested_script(argv)
            {
                keep(command_any_within(commands, &shell::parse(&script), depth + 1));
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

/// The rule of `list` matching `argv`, its program called `name`. With
/// `loose` (deny and ask rules), a prefix rule also matches when options sit
/// between its words (`git -C . push --force` matches `Bash(git push:*)`).
pub(super) fn match_command(
    commands: &Commands,
    name: &str,
    argv: &[String],
    dynamic: &[bool],
    loose: bool,
) -> Option<usize> {
    let rules = commands.get(name)?;
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

/// Parses a command rule's content into words.
pub(super) fn command_rule(content: &str, entry: usize) -> Result<CommandRule, ContentError> {
    let (text, prefix) = match content.strip_suffix(":*").or_else(|| content.strip_suffix(" *")) {
        Some(t) => (t.trim_end(), true),
        None => (content, false),
    };
    if text.contains('*') && !text.contains(['\'', '"']) {
        return Err(ContentError::StarInside);
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
    if !simple || text.trim().is_empty() {
        return Err(ContentError::NotOneCommand);
    }
    Ok(CommandRule { words: parsed.commands[0].argv.clone(), prefix, entry })
}
