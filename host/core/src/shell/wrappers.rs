//! Commands that run another command (`timeout 5 make`, `env -u X cmd`,
//! `sudo -u root cmd`, `find . -exec cmd {} +`): which they are, what they do
//! to the command they run, and where in their arguments that command starts.
//! The permission rules look through them to the command they run; the
//! read-only classifier checks the command they run.

use std::ops::Range;

/// What a wrapper does besides running its command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Only prioritises the command or limits its time, and writes nothing
    /// itself (`nice`, `timeout`).
    Schedules,
    /// Times the command or keeps it running after a hangup, and may write a
    /// file itself (`time -o FILE`, `nohup` appending to `nohup.out`).
    SchedulesAndWrites,
    /// Sets or unsets variables in the command's environment (`env`).
    Environment,
    /// Changes as whom, where, with what buffering or with which arguments
    /// the command runs (`sudo`, `stdbuf`, `xargs`, `exec`, `find -exec`, ...).
    Changes,
}

/// One command that runs another after its options.
struct Wrapper {
    name: &'static str,
    effect: Effect,
    /// Options that take the next word as their value (`-n 5`).
    with_value: &'static [&'static str],
    /// Options known to take no value. An option in neither list is read as
    /// taking none, but the reading is then not certain.
    flags: &'static [&'static str],
    /// Words after the options and before the command (`timeout`'s duration).
    operands: usize,
    /// Whether words holding `=` after the options are variables it sets.
    assignments: bool,
}

const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        name: "time",
        effect: Effect::SchedulesAndWrites,
        // GNU time's; the shell keyword takes only `-p`.
        with_value: &["-o", "-f", "--output", "--format"],
        flags: &["-p", "--portability", "-a", "--append", "-v", "--verbose", "-q", "--quiet"],
        operands: 0,
        assignments: false,
    },
    Wrapper {
        name: "nohup",
        effect: Effect::SchedulesAndWrites,
        with_value: &[],
        flags: &["--"],
        operands: 0,
        assignments: false,
    },
    Wrapper {
        name: "nice",
        effect: Effect::Schedules,
        with_value: &["-n", "--adjustment"],
        flags: &[],
        operands: 0,
        assignments: false,
    },
    Wrapper {
        name: "timeout",
        effect: Effect::Schedules,
        with_value: &["-s", "-k", "--signal", "--kill-after"],
        flags: &["-v", "--verbose", "--preserve-status", "--foreground"],
        operands: 1,
        assignments: false,
    },
    Wrapper {
        name: "env",
        effect: Effect::Environment,
        with_value: &["-u", "-C", "--unset", "--chdir"],
        flags: &["-", "-i", "--ignore-environment", "-0", "--null", "-v", "--debug"],
        operands: 0,
        assignments: true,
    },
    Wrapper {
        name: "stdbuf",
        effect: Effect::Changes,
        with_value: &["-i", "-o", "-e", "--input", "--output", "--error"],
        flags: &[],
        operands: 0,
        assignments: false,
    },
    Wrapper {
        name: "sudo",
        effect: Effect::Changes,
        with_value: &[
            "-u",
            "-g",
            "-C",
            "-D",
            "-p",
            "-h",
            "-r",
            "-t",
            "-U",
            "-T",
            "-R",
            "--user",
            "--group",
            "--close-from",
            "--chdir",
            "--prompt",
            "--host",
            "--role",
            "--type",
            "--other-user",
            "--command-timeout",
            "--chroot",
        ],
        flags: &[
            "-A",
            "-B",
            "-b",
            "-E",
            "-e",
            "-H",
            "-i",
            "-K",
            "-k",
            "-l",
            "-N",
            "-n",
            "-P",
            "-S",
            "-s",
            "-V",
            "-v",
            "--askpass",
            "--bell",
            "--background",
            "--preserve-env",
            "--edit",
            "--set-home",
            "--login",
            "--remove-timestamp",
            "--reset-timestamp",
            "--list",
            "--no-update",
            "--non-interactive",
            "--preserve-groups",
            "--stdin",
            "--shell",
            "--version",
            "--validate",
        ],
        operands: 0,
        assignments: false,
    },
    Wrapper {
        name: "doas",
        effect: Effect::Changes,
        with_value: &["-u", "-g", "-C", "-D"],
        flags: &["-n", "-s", "-L"],
        operands: 0,
        assignments: false,
    },
    Wrapper {
        name: "setsid",
        effect: Effect::Changes,
        with_value: &[],
        flags: &["-c", "--ctty", "-f", "--fork", "-w", "--wait"],
        operands: 0,
        assignments: false,
    },
    Wrapper { name: "unshare", effect: Effect::Changes, with_value: &[], flags: &[], operands: 0, assignments: false },
    Wrapper {
        name: "xargs",
        effect: Effect::Changes,
        with_value: &[
            "-n",
            "-I",
            "-P",
            "-d",
            "-L",
            "-s",
            "-E",
            "-a",
            "--max-args",
            "--max-procs",
            "--delimiter",
            "--max-chars",
            "--arg-file",
            "--process-slot-var",
        ],
        flags: &["-0", "--null", "-r", "--no-run-if-empty", "-t", "--verbose", "-p", "--interactive", "-x", "--exit"],
        operands: 0,
        assignments: false,
    },
    Wrapper {
        name: "command",
        effect: Effect::Changes,
        with_value: &[],
        flags: &["-p"],
        operands: 0,
        assignments: false,
    },
    Wrapper { name: "builtin", effect: Effect::Changes, with_value: &[], flags: &[], operands: 0, assignments: false },
    Wrapper {
        name: "exec",
        effect: Effect::Changes,
        with_value: &["-a"],
        flags: &["-c", "-l"],
        operands: 0,
        assignments: false,
    },
];

/// What `find` runs a command with: the word after it starts the command.
const FIND_RUNS: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

/// A command another one runs: where it sits in the wrapper's argv.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Wrapped {
    pub(crate) effect: Effect,
    /// The `NAME=value` words the wrapper sets (`env A=1 cmd`).
    pub(crate) assignments: Range<usize>,
    /// Where the command starts; the argv's length when nothing follows.
    pub(crate) start: usize,
    /// Whether every option was one listed here, so `start` is certain.
    pub(crate) options_known: bool,
}

/// Whether `program` (a name, not a path) runs a command given in its
/// arguments as a wrapper does.
pub(crate) fn is_wrapper(program: &str) -> bool {
    program == "find" || WRAPPERS.iter().any(|w| w.name == program)
}

/// The command `argv` runs, when its program (by the last part of its path)
/// is a wrapper. GNU-style options come first and end at the first word
/// not starting with `-`; a word starting with `-` is read as an option even
/// after `--`, where the reading is not certain.
pub(crate) fn wrapped(argv: &[String]) -> Option<Wrapped> {
    let first = argv.first()?;
    let program = first.rsplit('/').next().unwrap_or(first);
    if program == "find" {
        let at = argv.iter().position(|a| FIND_RUNS.contains(&a.as_str()))?;
        return Some(Wrapped { effect: Effect::Changes, assignments: at..at, start: at + 1, options_known: true });
    }
    let wrapper = WRAPPERS.iter().find(|w| w.name == program)?;
    let mut i = 1;
    let mut options_known = true;
    let mut ended = false;
    while let Some(arg) = argv.get(i).filter(|a| a.starts_with('-')) {
        options_known &= !ended && option_known(wrapper, arg);
        ended |= arg == "--";
        i += if wrapper.with_value.contains(&arg.as_str()) { 2 } else { 1 };
    }
    let options_end = i.min(argv.len());
    let mut assignments_end = options_end;
    if wrapper.assignments {
        while argv.get(assignments_end).is_some_and(|a| a.contains('=')) {
            assignments_end += 1;
        }
    }
    let start = (assignments_end + wrapper.operands).min(argv.len());
    Some(Wrapped { effect: wrapper.effect, assignments: options_end..assignments_end, start, options_known })
}

/// Whether `arg` is an option of `wrapper` listed here: `--` that ends
/// them, a listed flag, an option taking a value with it separate
/// (`-n 5`), joined (`-n5`) or after `=` (`--signal=KILL`).
fn option_known(wrapper: &Wrapper, arg: &str) -> bool {
    let listed = |name: &str| wrapper.with_value.contains(&name) || wrapper.flags.contains(&name);
    let joined_short = arg.len() > 2
        && !arg.starts_with("--")
        && arg.get(..2).is_some_and(|short| wrapper.with_value.contains(&short));
    let long_with_value = arg.starts_with("--") && arg.split_once('=').is_some_and(|(name, _)| listed(name));
    arg == "--" || listed(arg) || joined_short || long_with_value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(command: &str) -> Option<(String, bool)> {
        let argv: Vec<String> = command.split_whitespace().map(String::from).collect();
        wrapped(&argv).map(|w| (argv[w.start..].join(" "), w.options_known))
    }

    /// Each wrapper's option forms, and where the command it runs starts.
    #[test]
    fn each_wrapper_and_its_options() {
        for (command, runs) in [
            ("time cat f", "cat f"),
            ("time -p cat f", "cat f"),
            ("nohup cat f", "cat f"),
            ("nice cat f", "cat f"),
            ("nice -n 5 cat f", "cat f"),
            ("nice -n5 cat f", "cat f"),
            ("/usr/bin/nice -n 5 cat f", "cat f"),
            ("timeout 5 cat f", "cat f"),
            ("timeout -s KILL 5 cat f", "cat f"),
            ("timeout -sKILL 5 cat f", "cat f"),
            ("timeout --signal KILL 5 cat f", "cat f"),
            ("timeout --signal=KILL 5 cat f", "cat f"),
            ("timeout -k 1 -s TERM 5 cat f", "cat f"),
            ("timeout --kill-after 1 5 cat f", "cat f"),
            ("timeout --preserve-status -v 5 cat f", "cat f"),
            ("timeout -- 5 cat f", "cat f"),
            ("env cat f", "cat f"),
            ("env -i cat f", "cat f"),
            ("env - cat f", "cat f"),
            ("env -u X A=1 cat f", "cat f"),
            ("env -uX cat f", "cat f"),
            ("env --unset X cat f", "cat f"),
            ("env --unset=X cat f", "cat f"),
            ("env -C dir cat f", "cat f"),
            ("env --chdir=dir A=1 B=2 cat f", "cat f"),
            ("stdbuf -o L cat f", "cat f"),
            ("stdbuf -oL cat f", "cat f"),
            ("sudo -u root -g wheel cat f", "cat f"),
            ("doas -u root cat f", "cat f"),
            ("setsid -f cat f", "cat f"),
            ("unshare -r cat f", "cat f"),
            ("xargs -n 1 -I {} cat f", "cat f"),
            ("command cat f", "cat f"),
            ("builtin cat f", "cat f"),
            ("exec cat f", "cat f"),
            ("find . -name x -exec cat f", "cat f"),
            ("find . -okdir cat f", "cat f"),
        ] {
            assert_eq!(read(command).map(|(r, _)| r).as_deref(), Some(runs), "{command}");
        }
        for command in ["cat f", "find . -name x", "envy x", "timed x"] {
            assert_eq!(read(command), None, "{command}");
        }
    }

    #[test]
    fn nothing_after_the_options_is_an_empty_command() {
        for command in ["env", "env A=1", "nice -n", "timeout", "timeout -s KILL", "sudo -u", "find . -exec"] {
            assert_eq!(read(command), Some((String::new(), true)), "{command}");
        }
    }

    /// An option not listed is read as taking no value, and said so.
    #[test]
    fn unknown_options_make_the_reading_uncertain() {
        for (command, runs) in [
            ("env -S x cat f", "x cat f"),
            ("env -iu X cat f", "X cat f"),
            ("env --block-signal=INT cat f", "cat f"),
            ("nice -5 cat f", "cat f"),
            ("nice --niceness 5 cat f", "5 cat f"),
            ("timeout -x 5 cat f", "cat f"),
            ("timeout -- -v 5 cat f", "cat f"),
            ("sudo -Z cat f", "cat f"),
        ] {
            assert_eq!(read(command), Some((runs.to_string(), false)), "{command}");
        }
    }

    #[test]
    fn env_assignments_sit_between_its_options_and_its_command() {
        let argv: Vec<String> = "env -u X A=1 B=2 cat f".split(' ').map(String::from).collect();
        let w = wrapped(&argv).unwrap();
        assert_eq!((w.assignments, w.start, w.effect), (3..5, 5, Effect::Environment));
        let argv: Vec<String> = "timeout 5 cat".split(' ').map(String::from).collect();
        let w = wrapped(&argv).unwrap();
        assert_eq!((w.assignments, w.start), (1..1, 2), "the duration is no assignment");
    }

    #[test]
    fn wrappers_are_known_by_name() {
        for name in ["find", "env", "timeout", "nice", "unshare", "exec"] {
            assert!(is_wrapper(name), "{name}");
        }
        assert!(!is_wrapper("bash") && !is_wrapper("cat"));
    }
}
