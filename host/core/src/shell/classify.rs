//! Whether a command only reads: an allow-list that fails closed. A command
//! is read-only only when every simple command in it is a known read-only
//! command used with read-only arguments, nothing writes to a file through a
//! redirection, and there is no command or process substitution, background
//! job or parse error.

use super::parse::{Operator, Parsed, Redirection, SimpleCommand, parse};
use super::wrappers::{self, Effect, Wrapped};

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
    if parsed.too_long {
        return Classification::no("the command is too long to check");
    }
    if let Some(fault) = &parsed.fault {
        return Classification::no(format!("the shell parser failed on the command: {fault}"));
    }
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
pub(crate) fn assignment_changes_what_runs(assignment: &str) -> bool {
    dangerous_assignment(assignment)
}

/// Whether the variable `name` changes what programs load or what a shell
/// runs before the command (`LD_PRELOAD`, `BASH_ENV`, ...).
pub(crate) fn changes_loading(name: &str) -> bool {
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
fn read_only_command(mut argv: &[String], mut dynamic: &[bool]) -> Result<(), String> {
    loop {
        let Some(first) = argv.first() else { return Ok(()) };
        if dynamic.first().copied().unwrap_or(false) {
            return Err(format!("its command name `{first}` comes from an expansion"));
        }
        let name = match first.strip_prefix("/usr/bin/").or_else(|| first.strip_prefix("/bin/")) {
            Some(base) if !base.contains('/') => base,
            _ if first.contains('/') => return Err(format!("`{first}` runs a program by path")),
            _ => first.as_str(),
        };
        // A wrapper that writes nothing itself only reads when the command
        // it runs does; the others (`time -o FILE`, `nohup`, `sudo`, `xargs`,
        // ...) are not read-only, whatever they run.
        match wrappers::wrapped(argv) {
            Some(wrapped) if matches!(wrapped.effect, Effect::Schedules | Effect::Environment) => {
                wrapper_read_only(name, argv, dynamic, &wrapped)?;
                argv = &argv[wrapped.start..];
                dynamic = dynamic.get(wrapped.start..).unwrap_or_default();
            }
            _ => return program_read_only(name, &argv[1..]),
        }
    }
}

/// Whether the wrapper `name` itself lets the command it runs be judged: its
/// options all known and none of its words from an expansion (which may
/// split into more options or another command), so where that command starts
/// is certain, and the variables it sets (`env A=1`) changing nothing about
/// what runs.
fn wrapper_read_only(name: &str, argv: &[String], dynamic: &[bool], wrapped: &Wrapped) -> Result<(), String> {
    if !wrapped.options_known {
        return Err(format!("`{name}` has an option toolhost does not know, so what it runs cannot be told"));
    }
    if let Some(word) = (1..wrapped.start).find(|&at| dynamic.get(at).copied().unwrap_or(true)).map(|at| &argv[at]) {
        return Err(format!("`{name}` takes `{word}` from an expansion, which may hold options or another command"));
    }
    match argv[wrapped.assignments.clone()].iter().find(|a| dangerous_assignment(a)) {
        Some(assignment) => Err(format!("`{name}` sets `{assignment}`, which can change what runs")),
        None => Ok(()),
    }
}

/// Whether the program `name` with `args`, not a wrapper looked through,
/// only reads, or why not.
fn program_read_only(name: &str, args: &[String]) -> Result<(), String> {
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
mod tests;
