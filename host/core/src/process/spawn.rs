//! Starting a process for a call: the checks every start passes (the grant,
//! the call's approval, the permission rules again, the working directory,
//! the environment), and the foreground process a call reads and waits for.

use super::confine::{self, Confinement};
use super::runner::{Child, Status, Stream};
use crate::fsx::Dirs;
use crate::shell;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use toolhost_primitives::path::{Containment, containment, is_inside, normalize};

/// Host variables a child inherits (plus every `LC_*`).
const ENV_ALLOW: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR", "SHELL"];

/// The variables of the host's environment a child it starts gets (Bash's
/// commands, MCP servers): `PATH`, `HOME`, `USER`, `LOGNAME`, `LANG`,
/// `LANGUAGE`, `TERM`, `TZ`, `TMPDIR`, `SHELL` and `LC_*`; nothing else of
/// it (no tokens a user keeps in their shell).
pub fn child_environment() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let kept = |key: &std::ffi::OsString| {
        let k = key.to_string_lossy();
        ENV_ALLOW.contains(&k.as_ref()) || k.starts_with("LC_")
    };
    std::env::vars_os().filter(|(key, _)| kept(key)).collect()
}

/// What a call may start, decided by the permission step. Whatever it is,
/// a command a deny rule forbids never starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Approval {
    /// Nothing (before the permission decision, or no grant).
    #[default]
    Nothing,
    /// Only commands the host classifies as read-only.
    ReadOnly,
    /// Read-only commands and those the allow rules cover (the call was
    /// allowed by a rule).
    Rules,
    /// This command, as approved by the user or a hook, and what
    /// [`Approval::Rules`] allows.
    Command(String),
    /// Any command.
    Any,
}

/// Why a start or an operation was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ProcessError {
    NotPermitted(String),
    BadDirectory(String),
    SpawnFailed(String),
    UnknownId(String),
}

/// What to run.
#[derive(Clone, Debug)]
pub(crate) enum Program {
    Shell(String),
    Argv(Vec<String>),
}

impl Program {
    /// The command as a shell would read it (what the classification sees).
    fn as_shell(&self) -> String {
        match self {
            Program::Shell(s) => s.clone(),
            Program::Argv(argv) => argv.iter().map(|a| shell::quote(a)).collect::<Vec<_>>().join(" "),
        }
    }
}

/// A request to start a process.
#[derive(Clone, Debug)]
pub(crate) struct Spawn {
    pub program: Program,
    pub cwd: Option<String>,
    pub env: Vec<(String, String)>,
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
}

/// The permission rules on commands, checked again at every start (so a
/// component cannot run something other than what the call was approved
/// for). The policy implements it.
pub(crate) trait CommandRules: Send + Sync {
    /// Whether there are no rules at all (then nothing is checked).
    fn is_empty(&self) -> bool;
    /// The rules' verdict on a command: `text` as a shell reads it, and its
    /// parse.
    fn check_command(&self, text: &str, parsed: &shell::Parsed) -> CommandVerdict;
}

/// What the rules say about one command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CommandVerdict {
    /// The deny rule that forbids it, as a sentence's subject
    /// (`deny rule \`Bash(rm:*)\` (origin)`).
    pub deny: Option<String>,
    /// Why the rules cannot be checked against it (a program only known
    /// when it runs): only an explicit approval of this very command runs it.
    pub unclear: Option<String>,
    /// An allow rule covers every part of it that does not only read.
    pub allowed: bool,
}

/// The facts of the call that decide whether a start is allowed.
pub(crate) struct Permit<'a> {
    /// The tool is granted the process capability.
    pub granted: bool,
    pub approval: Approval,
    pub dirs: &'a Dirs,
    /// Where the session keeps its files (the children's private temporary
    /// directory goes there).
    pub session_dir: &'a Path,
    /// Whether children keep the network.
    pub network: bool,
    pub confinement: Confinement,
    /// The permission rules, checked again on every command.
    pub rules: Option<&'a dyn CommandRules>,
}

/// Checks a request against the grant, the approval, the directories and the
/// environment rules, and builds the command, confined.
pub(super) fn prepare(request: &Spawn, permit: &Permit<'_>) -> Result<(Command, confine::Confined), ProcessError> {
    if !permit.granted {
        return Err(ProcessError::NotPermitted("this tool is not granted the process capability".into()));
    }
    let text = request.program.as_shell();
    if permit.approval == Approval::Nothing {
        return Err(ProcessError::NotPermitted(
            "processes can only be started while the call runs, after its permission check".into(),
        ));
    }
    let rules = permit.rules.filter(|r| !r.is_empty());
    if permit.approval != Approval::Any || rules.is_some() {
        let parsed = shell::parse(&text);
        let verdicts = rules.map(|r| r.check_command(&text, &parsed)).unwrap_or_default();
        if let Some(rule) = verdicts.deny {
            return Err(ProcessError::NotPermitted(format!("the {rule} forbids `{}`", clip(&text))));
        }
        if let Some(why) = &verdicts.unclear
            && !matches!(&permit.approval, Approval::Command(c) if *c == text)
        {
            return Err(ProcessError::NotPermitted(format!("`{}` was not approved: {why}", clip(&text))));
        }
        let read_only = || shell::classify_parsed(&parsed);
        match &permit.approval {
            Approval::Nothing | Approval::Any => {}
            Approval::ReadOnly => {
                let verdict = read_only();
                if !verdict.read_only {
                    return Err(ProcessError::NotPermitted(format!(
                        "this call was approved only for read-only commands, and `{}` is not read-only: {}",
                        clip(&text),
                        verdict.reason.unwrap_or_default()
                    )));
                }
            }
            Approval::Rules | Approval::Command(_) => {
                let approved = matches!(&permit.approval, Approval::Command(c) if *c == text);
                if !approved && !verdicts.allowed && !read_only().read_only {
                    return Err(ProcessError::NotPermitted(format!(
                        "`{}` is neither the command this call was approved for, nor read-only, nor covered by an allow rule",
                        clip(&text)
                    )));
                }
            }
        }
    }
    let cwd = working_dir(request.cwd.as_deref(), permit.dirs)?;
    let mut cmd = match &request.program {
        Program::Shell(s) => {
            let mut c = Command::new("bash");
            c.arg("-c").arg(s);
            c
        }
        Program::Argv(argv) => {
            let Some((first, rest)) = argv.split_first() else {
                return Err(ProcessError::SpawnFailed("empty argv".into()));
            };
            let mut c = Command::new(first);
            c.args(rest);
            c
        }
    };
    cmd.env_clear();
    cmd.envs(child_environment());
    for (key, value) in &request.env {
        if !valid_env_name(key) {
            return Err(ProcessError::NotPermitted(format!("`{key}` is not a valid environment variable name")));
        }
        if shell::changes_loading(key) {
            return Err(ProcessError::NotPermitted(format!("setting `{key}` can change what programs load; refused")));
        }
        // What was approved is the command as written; a variable that
        // changes which programs it runs (`PATH`, `GIT_*`, `PAGER`, …) would
        // run something else.
        if permit.approval != Approval::Any && shell::assignment_changes_what_runs(&format!("{key}=")) {
            return Err(ProcessError::NotPermitted(format!(
                "setting `{key}` can change what the approved command runs; refused"
            )));
        }
        cmd.env(key, value);
    }
    cmd.current_dir(&cwd);
    let tmp = confine::temp_dir(permit.session_dir)
        .map_err(|e| ProcessError::SpawnFailed(format!("could not create the private temporary directory: {e}")))?;
    cmd.env("TMPDIR", &tmp);
    let mut writable = permit.dirs.working.clone();
    writable.push(tmp);
    let plan = confine::Plan { writable, network: permit.network, mode: permit.confinement };
    let confined = confine::apply(&mut cmd, &plan).map_err(ProcessError::NotPermitted)?;
    Ok((cmd, confined))
}

fn clip(s: &str) -> String {
    if s.chars().count() > 200 { format!("{}…", s.chars().take(200).collect::<String>()) } else { s.to_string() }
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The working directory of a request: the call's by default; otherwise an
/// absolute directory that lies, also after resolving symlinks, inside the
/// working directories.
fn working_dir(requested: Option<&str>, dirs: &Dirs) -> Result<PathBuf, ProcessError> {
    let Some(requested) = requested else { return Ok(dirs.cwd.clone()) };
    let path = Path::new(requested);
    if !path.is_absolute() {
        return Err(ProcessError::BadDirectory(format!("`{requested}` is not an absolute path")));
    }
    // As written (normalized) and as resolved: the one containment the
    // file tools' paths get too.
    let path = normalize(path);
    let working = || dirs.working.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ");
    match containment(&path, |p| is_inside(p, &dirs.working)) {
        Containment::Inside => {}
        Containment::Outside => {
            return Err(ProcessError::BadDirectory(format!(
                "`{requested}` is outside the working directories ({})",
                working()
            )));
        }
        Containment::ResolvesOutside(real) => {
            return Err(ProcessError::BadDirectory(format!(
                "`{requested}` resolves outside the working directories ({}) through a symlink, to {}",
                working(),
                real.display()
            )));
        }
    }
    let canonical = path
        .canonicalize()
        .map_err(|e| ProcessError::BadDirectory(format!("`{requested}` cannot be used as a working directory: {e}")))?;
    if !canonical.is_dir() {
        return Err(ProcessError::BadDirectory(format!("`{requested}` is not a directory")));
    }
    Ok(canonical)
}

/// A foreground process of a call (the `child` resource of the contract):
/// killed with its group at its deadline, on cancellation, and when dropped.
#[allow(unreachable_pub)] // named by the bindings, which re-export it
pub struct Foreground {
    child: Child,
    deadline: Instant,
    timed_out: bool,
    cancelled: bool,
    /// Confinement the host could not apply (best-effort mode).
    unconfined: Vec<String>,
    /// The process's span, from its start until this is dropped: a child of
    /// the guest call that started it.
    span: tracing::Span,
}

/// How a foreground process finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Finished {
    pub status: Status,
    pub timed_out: bool,
    pub cancelled: bool,
    pub unconfined: Vec<String>,
}

impl Foreground {
    /// Starts a foreground process, stopped at its own timeout or at the
    /// call's deadline, whichever comes first.
    pub(crate) fn spawn(
        request: Spawn,
        permit: &Permit<'_>,
        call_deadline: Option<Instant>,
    ) -> Result<Foreground, ProcessError> {
        let (mut cmd, confined) = prepare(&request, permit)?;
        // The program's name only: its arguments are the model's input.
        let executable = cmd.get_program().to_string_lossy().into_owned();
        let span = tracing::info_span!(
            "process",
            otel.name = %format_args!("process {executable}"),
            process.executable.name = %executable,
            process.pid = tracing::field::Empty,
            process.exit.code = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let child = Child::start(&mut cmd, request.stdin).map_err(|e| ProcessError::SpawnFailed(e.to_string()))?;
        span.record("process.pid", child.id());
        let mut deadline = deadline_after(request.timeout);
        if let Some(call) = call_deadline {
            deadline = deadline.min(call);
        }
        Ok(Foreground { child, deadline, timed_out: false, cancelled: false, unconfined: confined.missing, span })
    }

    /// Kills the group if the deadline passed or the call was cancelled.
    fn enforce(&mut self, cancel: Option<&AtomicBool>) {
        if self.timed_out || self.cancelled {
            return;
        }
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            self.cancelled = true;
            self.child.kill();
        } else if Instant::now() >= self.deadline {
            self.timed_out = true;
            self.child.kill();
        }
    }

    /// Output that arrived within `wait` (at most a second); `None` once both
    /// streams closed.
    pub(crate) fn read(&mut self, wait: Duration, cancel: Option<&AtomicBool>) -> Option<Vec<(Stream, Vec<u8>)>> {
        let until = Instant::now() + wait.min(Duration::from_secs(1));
        loop {
            self.enforce(cancel);
            // In slices, so deadlines and cancellation hold while waiting.
            let slice = until.min(Instant::now() + Duration::from_millis(20));
            match self.child.read(slice) {
                Some(chunks) if chunks.is_empty() => {
                    // Killed, and a grandchild that left the group still
                    // holds a pipe: do not wait for it.
                    if (self.timed_out || self.cancelled) && self.child.exited() {
                        return None;
                    }
                    if Instant::now() >= until {
                        return Some(chunks);
                    }
                }
                other => return other,
            }
        }
    }

    /// Waits for the process to end, killing it at its deadline or on
    /// cancellation.
    pub(crate) fn wait(&mut self, cancel: Option<&AtomicBool>) -> Finished {
        let deadline = self.deadline;
        if !self.child.wait_exit(deadline, &mut || cancel.is_some_and(|c| c.load(Ordering::Relaxed))) {
            self.enforce(cancel);
            self.child.wait_exit(far_future(), &mut || false);
        }
        // The leader is gone; so is the rest of its group.
        self.child.kill();
        let status = self.child.reap();
        match status {
            Status::Exited(code) => self.span.record("process.exit.code", code),
            Status::Signaled(signal) => self.span.record("process.exit.code", 128 + signal),
        };
        if self.timed_out || self.cancelled || status != Status::Exited(0) {
            self.span.record("otel.status_code", "error");
            let why = if self.timed_out {
                "timeout"
            } else if self.cancelled {
                "cancelled"
            } else {
                "exit_status"
            };
            self.span.record("error.type", why);
        }
        Finished { status, timed_out: self.timed_out, cancelled: self.cancelled, unconfined: self.unconfined.clone() }
    }

    /// Kills the process group.
    pub(crate) fn kill(&mut self) {
        self.child.kill();
    }
}

/// Now plus `timeout`, saturating: a tool may ask for any timeout.
pub(super) fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout).unwrap_or_else(far_future)
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::process::fixtures::{dirs, permit, shell};

    fn run(child: &mut Foreground) -> (String, Finished) {
        let mut out = Vec::new();
        while let Some(chunks) = child.read(Duration::from_millis(200), None) {
            for (_, data) in chunks {
                out.extend(data);
            }
        }
        (String::from_utf8_lossy(&out).into_owned(), child.wait(None))
    }

    #[test]
    fn a_working_directory_is_inside_as_written_and_as_resolved() {
        let (t, dirs) = dirs();
        let outside = tempfile::tempdir().unwrap();
        let out = outside.path().canonicalize().unwrap();
        std::fs::create_dir(dirs.cwd.join("sub")).unwrap();
        std::os::unix::fs::symlink(&out, dirs.cwd.join("out")).unwrap();
        std::os::unix::fs::symlink(dirs.cwd.join("sub"), out.join("in")).unwrap();
        let text = |p: &std::path::Path| p.to_str().unwrap().to_string();
        assert_eq!(working_dir(None, &dirs).unwrap(), dirs.cwd);
        assert_eq!(working_dir(Some(&text(&dirs.cwd.join("sub/../sub"))), &dirs).unwrap(), dirs.cwd.join("sub"));
        let refused = |p: &std::path::Path| match working_dir(Some(&text(p)), &dirs) {
            Err(ProcessError::BadDirectory(why)) => why,
            other => panic!("{p:?}: {other:?}"),
        };
        assert!(refused(&dirs.cwd.join("out")).contains("resolves outside"));
        // Outside as written, though it leads inside.
        assert!(refused(&out.join("in")).contains("is outside"));
        assert!(refused(&dirs.cwd.join("sub/../..")).contains("is outside"));
        assert!(refused(Path::new("sub")).contains("not an absolute path"));
        assert!(refused(&dirs.cwd.join("missing")).contains("cannot be used"));
        drop(t);
    }

    #[test]
    fn runs_and_reports_output_and_status() {
        let (_t, dirs) = dirs();
        let permit = permit(&dirs, Approval::Any);
        let mut child = Foreground::spawn(shell("echo out; echo err >&2; exit 3"), &permit, None).unwrap();
        let (out, finished) = run(&mut child);
        assert!(out.contains("out\n") && out.contains("err\n"), "{out}");
        assert_eq!(finished.status, Status::Exited(3));
        let mut child =
            Foreground::spawn(Spawn { stdin: Some(b"piped".to_vec()), ..shell("cat; pwd") }, &permit, None).unwrap();
        let (out, _) = run(&mut child);
        assert_eq!(out, format!("piped{}\n", dirs.cwd.display()));
    }

    #[test]
    fn policy_is_enforced_at_spawn() {
        let (_t, dirs) = dirs();
        let read_only = permit(&dirs, Approval::ReadOnly);
        assert!(Foreground::spawn(shell("ls"), &read_only, None).is_ok());
        let err = Foreground::spawn(shell("rm -rf x"), &read_only, None).err().unwrap();
        assert!(matches!(&err, ProcessError::NotPermitted(m) if m.contains("approved only for read-only")), "{err:?}");
        let argv = Spawn { program: Program::Argv(vec!["rm".into(), "x".into()]), ..shell("") };
        assert!(matches!(Foreground::spawn(argv, &read_only, None), Err(ProcessError::NotPermitted(_))));
        let nothing = Permit { approval: Approval::Nothing, ..read_only };
        assert!(matches!(Foreground::spawn(shell("ls"), &nothing, None), Err(ProcessError::NotPermitted(_))));
        let ungranted = Permit { granted: false, ..permit(&dirs, Approval::Any) };
        assert!(matches!(Foreground::spawn(shell("ls"), &ungranted, None), Err(ProcessError::NotPermitted(_))));
        let any = permit(&dirs, Approval::Any);
        let outside = Spawn { cwd: Some("/tmp".into()), ..shell("ls") };
        assert!(
            matches!(Foreground::spawn(outside, &any, None), Err(ProcessError::BadDirectory(m)) if m.contains("outside"))
        );
        let evil = Spawn { env: vec![("LD_PRELOAD".into(), "/x.so".into())], ..shell("ls") };
        assert!(matches!(Foreground::spawn(evil, &any, None), Err(ProcessError::NotPermitted(_))));
        let path = || Spawn { env: vec![("PATH".into(), "/tmp/evil".into())], ..shell("ls") };
        assert!(
            matches!(Foreground::spawn(path(), &read_only, None), Err(ProcessError::NotPermitted(m)) if m.contains("PATH"))
        );
        assert!(
            !matches!(Foreground::spawn(path(), &any, None), Err(ProcessError::NotPermitted(_))),
            "a call allowed to run anything may set PATH"
        );
    }

    #[test]
    fn any_timeout_is_accepted() {
        let (_t, dirs) = dirs();
        let permit = permit(&dirs, Approval::Any);
        let request = Spawn { timeout: Duration::MAX, ..shell("true") };
        let (_, finished) = run(&mut Foreground::spawn(request, &permit, None).unwrap());
        assert_eq!(finished.status, Status::Exited(0));
    }

    #[test]
    fn the_environment_is_an_allow_list() {
        let (_t, dirs) = dirs();
        let permit = permit(&dirs, Approval::Any);
        // SAFETY: tests in this module do not read this variable concurrently.
        unsafe { std::env::set_var("TOOLHOST_TEST_SECRET", "leak") };
        let request = Spawn { env: vec![("MINE".into(), "1".into())], ..shell("env") };
        let (out, _) = run(&mut Foreground::spawn(request, &permit, None).unwrap());
        assert!(!out.contains("TOOLHOST_TEST_SECRET") && out.contains("MINE=1") && out.contains("PATH="), "{out}");
    }

    #[test]
    fn timeouts_kill_the_whole_group() {
        let (_t, dirs) = dirs();
        let permit = permit(&dirs, Approval::Any);
        let marker = dirs.cwd.join("grandchild-survived");
        let script = format!("(sleep 1; touch {}) & sleep 30", marker.display());
        let started = Instant::now();
        let mut child =
            Foreground::spawn(Spawn { timeout: Duration::from_millis(300), ..shell(&script) }, &permit, None).unwrap();
        let (_, finished) = run(&mut child);
        assert!(finished.timed_out && matches!(finished.status, Status::Signaled(9)), "{finished:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!marker.exists(), "the grandchild was killed with its group");
    }
}
