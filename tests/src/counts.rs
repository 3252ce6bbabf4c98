//! Instruction counts of toolhost's hot paths, under valgrind's callgrind:
//! the same figure for the same build and inputs whatever else the machine
//! is doing (but for work in the background against the clock, which
//! [`held`] counts again), so a 5% rise is seen on a machine whose clock
//! moves 1.5–2× between hours.
//!
//! A [`Scenario`] is a process and a dialogue with it over stdin and stdout:
//! some opening exchanges, then one exchange per operation (a call). It
//! runs twice under callgrind, with `warm` operations and with `warm +
//! measured`; the difference over `measured` is the cost of one operation
//! after warm-up, start-up and shut-down cancelled out ([`per_op`]). A
//! scenario with no operation (a one-shot command) is counted whole.
//!
//! Valgrind counts the instructions of every thread of the process, in user
//! space only: the kernel's work for a system call is not in `ir`, which is
//! why the number of system calls is counted beside it (`--collect-systime`).
//!
//! Used by `cargo bench -p toolhost-cli --bench counts` (every scenario, the
//! floors, the table in docs/benchmarks.md) and by the end-to-end test that
//! holds the quick ones to their baselines in CI.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The longest wait for one answer under valgrind (a Grep of 50 MB is the
/// slowest: about a minute).
const ANSWER_WITHIN: Duration = Duration::from_secs(600);

/// A rise of the instructions per operation over the baseline that fails
/// the comparison.
pub const TOLERANCE: f64 = 0.05;

/// A program and how it is started.
#[derive(Clone, Debug)]
pub struct Program {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(String, OsString)>,
    pub cwd: PathBuf,
}

impl Program {
    pub fn new(program: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Program {
        Program { program: program.into(), args: Vec::new(), env: Vec::new(), cwd: cwd.into() }
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Program {
        self.args.push(arg.into());
        self
    }

    pub fn args<I: Into<OsString>>(mut self, args: impl IntoIterator<Item = I>) -> Program {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, key: &str, value: impl Into<OsString>) -> Program {
        self.env.push((key.to_string(), value.into()));
        self
    }

    /// The command, run as it is (`under` empty) or under a tool such as
    /// valgrind (`under` its program and arguments). The environment is only
    /// what the program is given plus `PATH` (the same in every run: the
    /// size of the environment moves the count).
    pub fn command(&self, under: &[OsString]) -> Command {
        let mut c = match under.split_first() {
            Some((tool, tool_args)) => {
                let mut c = Command::new(tool);
                c.args(tool_args).arg(&self.program);
                c
            }
            None => Command::new(&self.program),
        };
        c.args(&self.args).current_dir(&self.cwd).env_clear();
        if let Some(path) = std::env::var_os("PATH") {
            c.env("PATH", path);
        }
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }
}

/// What one line sent waits for: the line of the answer that ends the
/// exchange, or nothing.
pub type Until = Box<dyn Fn(&str) -> bool + Send + Sync>;

/// One line sent, and the answer awaited.
pub struct Exchange {
    pub send: String,
    pub until: Option<Until>,
}

impl Exchange {
    /// A JSON-RPC request answered by the response with its `id`.
    pub fn request(id: u64, method: &str, params: Value) -> Exchange {
        Exchange {
            send: json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
            until: Some(Box::new(move |line| {
                serde_json::from_str::<Value>(line).is_ok_and(|v| v["id"] == id && v.get("method").is_none())
            })),
        }
    }

    /// A JSON-RPC notification (no answer).
    pub fn notification(method: &str) -> Exchange {
        Exchange { send: json!({"jsonrpc": "2.0", "method": method}).to_string(), until: None }
    }

    /// A `toolhost run` call, answered by its `tool_result` line.
    pub fn tool_use(id: &str, name: &str, input: Value) -> Exchange {
        let wanted = id.to_string();
        Exchange {
            send: json!({"type": "tool_use", "id": id, "name": name, "input": input}).to_string(),
            until: Some(Box::new(move |line| {
                serde_json::from_str::<Value>(line)
                    .is_ok_and(|v| v["type"] == "tool_result" && v["tool_use_id"] == wanted.as_str())
            })),
        }
    }

    /// A line answered by one line, whatever it says.
    pub fn line(send: String) -> Exchange {
        Exchange { send, until: Some(Box::new(|_| true)) }
    }
}

/// What is counted.
pub struct Scenario {
    /// Its name in the table and the baselines (`group.what`).
    pub name: String,
    /// What one operation is, for the table.
    pub what: String,
    pub program: Program,
    /// Sent first, in every run.
    pub opening: Vec<Exchange>,
    /// Operation `i`; `None` for a one-shot command, counted whole.
    pub op: Option<Box<dyn Fn(usize) -> Exchange + Send + Sync>>,
    pub warm: usize,
    pub measured: usize,
    /// A native run before counting, for what a first run only does once
    /// (filling the compile cache, linking every tool in the background).
    pub warm_up: Option<WarmUp>,
    /// The scenarios whose sum this one is compared with (its floor).
    pub floor: Vec<String>,
    /// Directories removed before each counted run (a cache that must start
    /// empty).
    pub reset: Vec<PathBuf>,
    /// Its standard input and output one socket pair rather than two pipes.
    pub socket: bool,
}

/// How a scenario's native first run knows it is done: it waits, after its
/// operations, for a line on stderr containing `done` (with `RUST_LOG` set
/// to `log`), at most `within`.
pub struct WarmUp {
    pub log: String,
    pub done: String,
    pub within: Duration,
}

/// The count of one process under callgrind.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counts {
    /// Instructions executed, every thread, user space.
    pub ir: u64,
    /// System calls made.
    pub syscalls: u64,
}

/// The cost of one operation (or of the whole process, for a one-shot).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PerOp {
    /// Instructions, under callgrind (what the baselines hold a build to).
    pub ir: f64,
    /// System calls, under callgrind.
    pub syscalls: f64,
    /// Minor page faults, in a native run (the kernel's share of a fresh
    /// instance: the copy-on-write faults of the pages a guest writes).
    #[serde(default)]
    pub faults: f64,
}

/// A child killed when dropped (a dialogue that fails midway).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `program` under `under` (or natively), sends the opening and `ops`
/// operations one at a time, each waiting for its answer, then closes stdin
/// and waits for the process to end. `stderr` gets its standard error;
/// `watch` (a line containing it on stderr) is awaited before stdin closes.
fn converse(
    scenario: &Scenario,
    program: &Program,
    under: &[OsString],
    ops: usize,
    stderr: &Path,
    watch: Option<(&str, Duration)>,
) -> Result<(), String> {
    let mut command = program.command(under);
    let log = std::fs::File::create(stderr).map_err(|e| format!("{}: {e}", stderr.display()))?;
    let socket = match scenario.socket {
        true => Some(crate::socket_stdio(&mut command).map_err(|e| format!("a socket pair: {e}"))?),
        false => {
            command.stdin(Stdio::piped()).stdout(Stdio::piped());
            None
        }
    };
    match watch {
        Some((needle, within)) => {
            let (seen_tx, seen_rx) = mpsc::channel::<()>();
            command.stderr(Stdio::piped());
            let mut child = command.spawn().map_err(|e| format!("starting {:?}: {e}", program.program))?;
            let err = child.stderr.take().expect("piped stderr");
            let needle = needle.to_string();
            std::thread::spawn(move || {
                let mut log = log;
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    let _ = writeln!(log, "{line}");
                    if line.contains(&needle) {
                        let _ = seen_tx.send(());
                    }
                }
            });
            drop(command);
            talk(scenario, Running(child), socket, ops, stderr, Some((seen_rx, within)))
        }
        None => {
            command.stderr(log);
            let child = command.spawn().map_err(|e| format!("starting {:?}: {e}", program.program))?;
            drop(command);
            talk(scenario, Running(child), socket, ops, stderr, None)
        }
    }
}

/// Holds the dialogue with `child`: over its piped standard input and
/// output, or over `socket`, the other end of the socket pair it has as
/// both.
fn talk(
    scenario: &Scenario,
    mut child: Running,
    socket: Option<UnixStream>,
    ops: usize,
    stderr: &Path,
    watch: Option<(mpsc::Receiver<()>, Duration)>,
) -> Result<(), String> {
    let failed = |why: String| {
        let log = std::fs::read_to_string(stderr).unwrap_or_default();
        let tail: String =
            log.lines().rev().take(20).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
        format!("{}: {why}\nits stderr ends:\n{tail}", scenario.name)
    };
    let clone = |s: &UnixStream| s.try_clone().map_err(|e| failed(format!("the socket pair: {e}")));
    let (out, mut stdin): (Box<dyn std::io::Read + Send>, Box<dyn Write>) = match &socket {
        Some(s) => (Box::new(clone(s)?), Box::new(clone(s)?)),
        None => (
            Box::new(child.0.stdout.take().expect("piped stdout")),
            Box::new(child.0.stdin.take().expect("piped stdin")),
        ),
    };
    let (tx, lines) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut exchange = |e: &Exchange| -> Result<(), String> {
        writeln!(stdin, "{}", e.send).and_then(|()| stdin.flush()).map_err(|err| failed(format!("writing: {err}")))?;
        let Some(until) = &e.until else { return Ok(()) };
        loop {
            let line =
                lines.recv_timeout(ANSWER_WITHIN).map_err(|err| failed(format!("no answer to {} ({err})", e.send)))?;
            if until(&line) {
                return Ok(());
            }
        }
    };
    for e in &scenario.opening {
        exchange(e)?;
    }
    if let Some(op) = &scenario.op {
        for i in 0..ops {
            exchange(&op(i))?;
        }
    }
    if let Some((seen, within)) = watch {
        seen.recv_timeout(within).map_err(|_| failed(format!("no sign of the warm-up's end within {within:?}")))?;
    }
    drop(stdin);
    if let Some(s) = &socket {
        s.shutdown(std::net::Shutdown::Write).map_err(|e| failed(format!("closing the socket pair: {e}")))?;
    }
    let status = wait(&mut child.0, ANSWER_WITHIN).map_err(failed)?;
    if !status.success() {
        return Err(failed(format!("exited with {status}")));
    }
    Ok(())
}

fn wait(child: &mut Child, within: Duration) -> Result<std::process::ExitStatus, String> {
    let until = std::time::Instant::now() + within;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if std::time::Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => return Err(format!("still running {within:?} after its input closed")),
            Err(e) => return Err(format!("waiting: {e}")),
        }
    }
}

/// Whether valgrind can be run, and if not why.
pub fn valgrind() -> Result<(), String> {
    match Command::new("valgrind").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!("valgrind --version failed: {}", String::from_utf8_lossy(&o.stderr))),
        Err(e) => Err(format!("valgrind cannot be run ({e}); install it (apt-get install valgrind)")),
    }
}

/// Runs the scenario once natively (its warm-up), if it has one.
pub fn warm_up(scenario: &Scenario, dir: &Path) -> Result<(), String> {
    let Some(w) = &scenario.warm_up else { return Ok(()) };
    let program = scenario.program.clone().env("RUST_LOG", &w.log);
    let stderr = dir.join(format!("{}.warm-up.log", scenario.name));
    converse(scenario, &program, &[], scenario.warm.max(1), &stderr, Some((&w.done, w.within)))
}

/// One run of the scenario under callgrind with `ops` operations.
pub fn count(scenario: &Scenario, ops: usize, dir: &Path) -> Result<Counts, String> {
    for gone in &scenario.reset {
        match std::fs::remove_dir_all(gone) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(format!("{}: {e}", gone.display())),
            _ => {}
        }
    }
    let out = dir.join(format!("{}.{ops}.callgrind", scenario.name));
    let under: Vec<OsString> =
        ["valgrind", "--tool=callgrind", "--collect-systime=yes", "--trace-children=no", "--log-file=/dev/null"]
            .into_iter()
            .map(OsString::from)
            .chain([OsString::from(format!("--callgrind-out-file={}", out.display()))])
            .collect();
    converse(scenario, &scenario.program, &under, ops, &dir.join(format!("{}.{ops}.log", scenario.name)), None)?;
    summary(&out)
}

/// The totals of a callgrind output file: its `events:` and `summary:` lines.
pub fn summary(file: &Path) -> Result<Counts, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let field = |prefix: &str| text.lines().find_map(|l| l.strip_prefix(prefix)).map(str::split_whitespace);
    let (Some(events), Some(totals)) = (field("events:"), field("summary:")) else {
        return Err(format!("{}: no events or summary line", file.display()));
    };
    let mut counts = Counts::default();
    for (event, total) in events.zip(totals) {
        let total: u64 = total.parse().map_err(|e| format!("{}: summary {total:?}: {e}", file.display()))?;
        match event {
            "Ir" => counts.ir = total,
            "sysCount" => counts.syscalls = total,
            _ => {}
        }
    }
    Ok(counts)
}

/// The minor page faults of one native run with `ops` operations, as
/// `/usr/bin/time` reports them.
pub fn faults(scenario: &Scenario, ops: usize, dir: &Path) -> Result<u64, String> {
    let file = dir.join(format!("{}.{ops}.time", scenario.name));
    let under: Vec<OsString> =
        ["/usr/bin/time", "-f", "%R", "-o"].into_iter().map(OsString::from).chain([file.clone().into()]).collect();
    converse(scenario, &scenario.program, &under, ops, &dir.join(format!("{}.{ops}.native.log", scenario.name)), None)?;
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let last = text.lines().last().unwrap_or_default().trim();
    last.parse().map_err(|e| format!("{}: {last:?}: {e}", file.display()))
}

/// Whether `/usr/bin/time` (Debian's `time`) can be run, and if not why.
pub fn time() -> Result<(), String> {
    match Command::new("/usr/bin/time").args(["-f", "%R", "true"]).output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err("/usr/bin/time cannot be run; install it (apt-get install time)".into()),
    }
}

/// The cost of one operation: runs with `warm` and with `warm + measured`
/// operations, the difference over `measured` (the whole run for a
/// one-shot scenario).
pub fn per_op(scenario: &Scenario, dir: &Path) -> Result<PerOp, String> {
    if scenario.op.is_none() {
        let c = count(scenario, 0, dir)?;
        let f = faults(scenario, 0, dir)?;
        return Ok(PerOp { ir: c.ir as f64, syscalls: c.syscalls as f64, faults: f as f64 });
    }
    let (few, many) = (scenario.warm, scenario.warm + scenario.measured);
    let base = count(scenario, few, dir)?;
    let more = count(scenario, many, dir)?;
    let faults_few = faults(scenario, few, dir)?;
    let faults_many = faults(scenario, many, dir)?;
    let n = scenario.measured.max(1) as f64;
    let per = |a: u64, b: u64| (b as f64 - a as f64) / n;
    Ok(PerOp {
        ir: per(base.ir, more.ir),
        syscalls: per(base.syscalls, more.syscalls),
        faults: per(faults_few, faults_many),
    })
}

/// Where one operation's instructions go: the functions whose own
/// instructions (not their callees') grew most between the scenario's two
/// counted runs, per operation, from `callgrind_annotate` (the output files
/// [`per_op`] left in `dir`). Functions of guest code have no name there (an
/// address: wasmtime's compiled code).
pub fn explain(scenario: &Scenario, dir: &Path, top: usize) -> Result<Vec<(f64, String)>, String> {
    let (few, many) = (scenario.warm, scenario.warm + scenario.measured);
    let file = |ops: usize| dir.join(format!("{}.{ops}.callgrind", scenario.name));
    let (a, b) = (functions(&file(few))?, functions(&file(many))?);
    let n = scenario.measured.max(1) as f64;
    let mut grew: Vec<(f64, String)> = b
        .iter()
        .map(|(name, &ir)| ((ir as f64 - a.get(name).copied().unwrap_or(0) as f64) / n, name.clone()))
        .collect();
    grew.sort_by(|x, y| y.0.total_cmp(&x.0));
    grew.truncate(top);
    Ok(grew)
}

/// Each function's own instructions in a callgrind output file.
fn functions(file: &Path) -> Result<BTreeMap<String, u64>, String> {
    let out = Command::new("callgrind_annotate")
        .args(["--show=Ir", "--threshold=100", "--inclusive=no"])
        .arg(file)
        .output()
        .map_err(|e| format!("callgrind_annotate: {e}"))?;
    if !out.status.success() {
        return Err(format!("callgrind_annotate {}: {}", file.display(), String::from_utf8_lossy(&out.stderr)));
    }
    Ok(annotated(&String::from_utf8_lossy(&out.stdout)))
}

/// The function lines of `callgrind_annotate --show=Ir`'s output
/// (`  1,234 (12.34%)  file:function [object]`), summed by function.
fn annotated(text: &str) -> BTreeMap<String, u64> {
    let mut by_function = BTreeMap::new();
    let lines = text.lines().skip_while(|l| !l.contains("file:function")).skip(1);
    for line in lines {
        let mut parts = line.trim_start().splitn(2, ' ');
        let (Some(count), Some(rest)) = (parts.next(), parts.next()) else { continue };
        let Ok(count) = count.replace(',', "").parse::<u64>() else { continue };
        let rest = rest.trim_start();
        let rest = rest.strip_prefix('(').and_then(|r| r.split_once(')')).map_or(rest, |(_, after)| after).trim();
        let name = rest.rsplit_once(" [").map_or(rest, |(name, _)| name);
        let name = name.split_once(':').map_or(name, |(_, function)| function);
        *by_function.entry(name.to_string()).or_insert(0) += count;
    }
    by_function
}

/// The committed baselines: for each build profile (`ci`, `release`), each
/// scenario's instructions and system calls per operation.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Baselines {
    /// How the figures were made (toolchain, machine, date).
    #[serde(default)]
    pub recorded: BTreeMap<String, String>,
    #[serde(default)]
    pub profiles: BTreeMap<String, BTreeMap<String, PerOp>>,
}

impl Baselines {
    /// The file, or empty baselines if there is none.
    pub fn load(file: &Path) -> Result<Baselines, String> {
        match std::fs::read_to_string(file) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Baselines::default()),
            Err(e) => Err(format!("{}: {e}", file.display())),
        }
    }

    pub fn save(&self, file: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).expect("baselines serialize") + "\n";
        std::fs::write(file, text).map_err(|e| format!("{}: {e}", file.display()))
    }
}

/// How a count compares with its baseline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// No baseline for it.
    New,
    /// Within the tolerance (the change, as a fraction).
    Within(f64),
    /// Fewer by more than the tolerance: the baseline is due for a `--save`.
    Fell(f64),
    /// More by more than the tolerance.
    Rose(f64),
}

/// How many times a scenario is counted at most before a rise over its
/// baseline is believed.
pub const COUNTED_AT_MOST: usize = 3;

/// The scenario's cost per operation held to `baseline`: counted again
/// while it is over the tolerance, at most [`COUNTED_AT_MOST`] times in
/// all, the lowest count kept; with every count made, in order. A change in
/// the code rises in every count; work a run does in the background against
/// the clock need not (the link of every tool and the making of spare
/// instances go on beside the dialogue and stop with the process). The
/// same build counted a Script between -0.5% and +0.3% of its baseline in
/// nine runs, but -4.9% in one beside busy loops and +6.7% in a loaded
/// end-to-end run on a fresh compile cache.
pub fn held(scenario: &Scenario, dir: &Path, baseline: Option<PerOp>) -> Result<(PerOp, Verdict, Vec<f64>), String> {
    held_by(|| per_op(scenario, dir), baseline)
}

/// [`held`] with `count` making each count.
fn held_by(
    mut count: impl FnMut() -> Result<PerOp, String>,
    baseline: Option<PerOp>,
) -> Result<(PerOp, Verdict, Vec<f64>), String> {
    let mut lowest = count()?;
    let mut counted = vec![lowest.ir];
    while matches!(compare(lowest, baseline), Verdict::Rose(_)) && counted.len() < COUNTED_AT_MOST {
        let again = count()?;
        counted.push(again.ir);
        if again.ir < lowest.ir {
            lowest = again;
        }
    }
    Ok((lowest, compare(lowest, baseline), counted))
}

pub fn compare(now: PerOp, baseline: Option<PerOp>) -> Verdict {
    let Some(base) = baseline else { return Verdict::New };
    let change = (now.ir - base.ir) / base.ir.max(1.0);
    if change > TOLERANCE {
        Verdict::Rose(change)
    } else if change < -TOLERANCE {
        Verdict::Fell(change)
    } else {
        Verdict::Within(change)
    }
}

/// The profile a binary was built in: the name of its directory under
/// `target/` (`ci`, `release`, `debug`).
pub fn profile_of(binary: &Path) -> String {
    binary.parent().and_then(Path::file_name).and_then(|n| n.to_str()).unwrap_or("unknown").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_line_gives_the_totals_by_event() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("out");
        std::fs::write(
            &file,
            "version: 1\nevents: Ir sysCount sysTime\nfn=(1) main\n3 5\nsummary: 1234 56 789\ntotals: 1 2 3\n",
        )
        .unwrap();
        assert_eq!(summary(&file).unwrap(), Counts { ir: 1234, syscalls: 56 });
        std::fs::write(&file, "events: Ir\n").unwrap();
        assert!(summary(&file).unwrap_err().contains("no events or summary"));
        std::fs::write(&file, "events: Ir\nsummary: lots\n").unwrap();
        assert!(summary(&file).is_err());
    }

    #[test]
    fn a_rise_over_the_tolerance_fails_and_a_fall_asks_for_new_baselines() {
        let at = |ir| PerOp { ir, syscalls: 0.0, faults: 0.0 };
        assert_eq!(compare(at(100.0), None), Verdict::New);
        assert!(matches!(compare(at(105.0), Some(at(100.0))), Verdict::Within(_)));
        assert!(matches!(compare(at(95.0), Some(at(100.0))), Verdict::Within(_)));
        assert!(matches!(compare(at(105.1), Some(at(100.0))), Verdict::Rose(c) if (c - 0.051).abs() < 1e-9));
        assert!(matches!(compare(at(94.0), Some(at(100.0))), Verdict::Fell(_)));
    }

    #[test]
    fn a_rise_is_believed_only_when_every_count_shows_it() {
        let at = |ir| PerOp { ir, syscalls: 0.0, faults: 0.0 };
        let base = Some(at(100.0));
        let counts = |figures: &'static [f64]| {
            let mut next = figures.iter();
            move || next.next().map(|&ir| at(ir)).ok_or_else(|| "counted once too often".to_string())
        };
        // Within at the first count: counted once.
        let (now, verdict, counted) = held_by(counts(&[103.0]), base).unwrap();
        assert_eq!((now.ir, counted), (103.0, vec![103.0]));
        assert!(matches!(verdict, Verdict::Within(_)));
        // A rise that does not repeat: the lowest count is kept.
        let (now, verdict, counted) = held_by(counts(&[107.0, 101.0]), base).unwrap();
        assert_eq!((now.ir, counted), (101.0, vec![107.0, 101.0]));
        assert!(matches!(verdict, Verdict::Within(_)));
        // A rise in every count fails, at its lowest.
        let (now, verdict, counted) = held_by(counts(&[107.0, 109.0, 106.0]), base).unwrap();
        assert_eq!((now.ir, counted.len()), (106.0, COUNTED_AT_MOST));
        assert!(matches!(verdict, Verdict::Rose(c) if (c - 0.06).abs() < 1e-9));
        // No baseline, or a fall: counted once.
        assert_eq!(held_by(counts(&[500.0]), None).unwrap().2.len(), 1);
        assert!(matches!(held_by(counts(&[50.0]), base).unwrap().1, Verdict::Fell(_)));
        // A count that fails fails the whole.
        assert!(held_by(|| Err("valgrind died".to_string()), base).is_err());
    }

    #[test]
    fn baselines_round_trip_and_a_missing_file_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("baseline.json");
        assert!(Baselines::load(&file).unwrap().profiles.is_empty());
        let mut b = Baselines::default();
        b.profiles
            .entry("ci".into())
            .or_default()
            .insert("mcp.read".into(), PerOp { ir: 1.0, syscalls: 2.0, faults: 3.0 });
        b.save(&file).unwrap();
        assert_eq!(Baselines::load(&file).unwrap().profiles, b.profiles);
        std::fs::write(&file, "{").unwrap();
        assert!(Baselines::load(&file).is_err());
    }

    #[test]
    fn annotated_lines_sum_by_function() {
        let text = "Ir  file:function\n-----\n1,234 (12.34%)  ???:a::b [/x/toolhost]\n  \
                    10 ( 0.10%)  ./s/memmove.S:__memcpy [/lib/libc.so.6]\n  6 ( 0.01%)  ???:a::b [/x/toolhost]\n\
                    garbage\n";
        let f = annotated(text);
        assert_eq!(f.get("a::b"), Some(&1240));
        assert_eq!(f.get("__memcpy"), Some(&10));
        assert_eq!(f.len(), 2);
    }

    #[test]
    fn the_profile_is_the_binarys_directory() {
        assert_eq!(profile_of(Path::new("/w/target/ci/toolhost")), "ci");
        assert_eq!(profile_of(Path::new("/w/target/release/toolhost")), "release");
    }
}
