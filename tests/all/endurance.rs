//! The fault soak: a seeded run of many calls through `toolhost run`,
//! `serve` over stdio and `serve --http` at once, mixing every attack of the
//! test adversary, hot reloads and removals of plugins, cancellations and
//! interrupts, clients gone mid-call, `run` and `serve` killed with SIGKILL
//! mid-call, a
//! full disk (the `run` front's data on a small tmpfs in a private mount
//! namespace), and a corrupt, truncated or unwritable compile cache. Then it
//! checks that nothing was lost:
//!
//! - every request is answered exactly once (requests in flight when their
//!   process or client was killed are answered at most once);
//! - every audit line is whole JSON, every decision has one line, and a call
//!   whose decision could not be written was refused, saying so;
//! - session state (the reads `run` and `serve --session` recorded) survives
//!   each SIGKILL up to the last call whose result came out;
//! - no child process, session temp directory or descriptor is left, and the
//!   HTTP server's memory stops growing once the mix has reached every tool
//!   (its second half of calls adds little).
//!
//! `cargo test --release -p toolhost-cli --test e2e endurance::` runs 1,000 calls
//! from a fixed seed (CI); `TOOLHOST_SOAK_CALLS=10000 TOOLHOST_SOAK_SEED=random`
//! (or a seed printed by an earlier run) the long one. Needs root (a tmpfs in
//! a private mount namespace, through `unshare` and `nsenter`).

use crate::support::*;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// xorshift64*, from the seed: the same schedule every time.
#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, per_thousand: u64) -> bool {
        self.below(1000) < per_thousand
    }
}

/// Child processes of Bash calls carry this in their command line, so the
/// end can look for any left behind.
const MARKER: &str = "soak-marker-7f3a";

/// What the soak tallied.
#[derive(Default)]
struct Tally {
    sent: usize,
    answered: usize,
    /// Allowance in flight when their process or connection was killed.
    abandoned: usize,
    refused_unrecorded: usize,
    kills: usize,
    /// Edits after a restart of files read before it (the reads were kept).
    kept_reads: usize,
    reloads: usize,
    disk_full_calls: usize,
}

/// One call the soak makes, as a tool name and input.
fn a_call(rng: &mut Rng, sb: &Sandbox, n: usize) -> (String, Value) {
    let file = |name: &str| sb.ws(name).display().to_string();
    let adversary = |action: &str, extra: Value| {
        let mut input = json!({"action": action});
        if let (Value::Object(a), Value::Object(b)) = (&mut input, extra) {
            a.extend(b);
        }
        ("Adversary".to_string(), input)
    };
    match rng.below(100) {
        0..=14 => ("Read".into(), json!({"file_path": file(&format!("f{}.txt", rng.below(8)))})),
        15..=19 => ("Glob".into(), json!({"pattern": "*.txt"})),
        20..=24 => ("Grep".into(), json!({"pattern": "line", "output_mode": "count"})),
        25..=31 => ("Bash".into(), json!({"command": format!("ls; cat f{}.txt | wc -l", rng.below(8))})),
        32..=34 => ("Bash".into(), json!({"command": format!("exec -a {MARKER} sleep 0.3"), "timeout": 20_000})),
        35..=38 => ("Write".into(), json!({"file_path": file(&format!("new{n}.txt")), "content": "w\n"})),
        39..=42 => ("Echo".into(), json!({"text": format!("echo {n}")})),
        43..=45 => ("Bash".into(), json!({"command": "{\u{E0000}"})),
        46..=47 => ("Bash".into(), json!({"command": "seq 1 20000"})),
        48..=49 => ("Nope".into(), json!({})),
        50..=52 => ("Read".into(), json!({"file_path": 5})),
        53..=58 => adversary("ok", json!({})),
        59..=61 => adversary("panic", json!({})),
        62..=64 => adversary("trap", json!({})),
        65..=66 => adversary("stack", json!({})),
        67..=68 => adversary("alloc", json!({})),
        69..=71 => adversary("huge", json!({"count": 300_000})),
        72 => adversary("huge-error", json!({"count": 200_000})),
        73..=74 => adversary("bad-json", json!({})),
        75 => adversary("bad-structured", json!({})),
        76 => adversary("bad-image", json!({})),
        77..=78 => adversary("read", json!({"path": "/etc/passwd"})),
        79 => adversary("connect", json!({"path": "127.0.0.1:9"})),
        80 => adversary("env", json!({})),
        81 => adversary("session-flood", json!({})),
        82..=83 => adversary("stream", json!({"count": 1})),
        84 => adversary("progress-flood", json!({})),
        85..=87 => adversary("shell", json!({"path": "ls | {\u{1F600} && cat"})),
        88 => adversary("loop", json!({})),
        89 => adversary("wait", json!({"in": "call", "how": "sleep"})),
        90 => adversary("wait", json!({"in": "permissions", "how": "block"})),
        91 => adversary("wait", json!({"in": "classify", "how": "poll"})),
        92 => adversary("self-allow", json!({})),
        93 => adversary("invalid", json!({})),
        _ => ("Read".into(), json!({"file_path": file("f0.txt")})),
    }
}

/// Flags every front runs with: the adversary and the echo tool allowed,
/// edits allowed, short deadlines and memory, child processes confined as
/// well as the machine allows.
fn flags() -> Vec<String> {
    [
        "--allow",
        "Adversary",
        "--allow",
        "Echo",
        "--mode",
        "acceptEdits",
        "--timeout-ms",
        "1500",
        "--memory-mib",
        "64",
        "--child-confinement",
        "best-effort",
    ]
    .map(String::from)
    .to_vec()
}

/// A long-lived process holding a private mount namespace with a small
/// tmpfs at `dir`; processes started through [`Ns::command`] see it.
struct Ns {
    holder: Child,
    dir: PathBuf,
}

impl Ns {
    fn new(dir: &Path, size: &str) -> Ns {
        std::fs::create_dir_all(dir).unwrap();
        let script =
            format!("mount -t tmpfs -o size={size} soak '{}' && echo ready && exec sleep 100000", dir.display());
        let mut holder = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &script])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("unshare (util-linux) runs: the soak needs it, and root, for its full disk");
        let mut ready = String::new();
        BufReader::new(holder.stdout.take().unwrap()).read_line(&mut ready).unwrap();
        if ready.trim() != "ready" {
            let mut err = String::new();
            let _ = holder.stderr.take().unwrap().read_to_string(&mut err);
            panic!("could not mount a tmpfs in a private mount namespace (the soak needs root): {err}");
        }
        Ns { holder, dir: dir.to_path_buf() }
    }

    /// `program` in the namespace (sees the tmpfs).
    fn command(&self, base: Command) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.arg("-t").arg(self.holder.id().to_string()).args(["-m", "--"]);
        cmd.arg(base.get_program()).args(base.get_args());
        for (k, v) in base.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        if let Some(dir) = base.get_current_dir() {
            cmd.current_dir(dir);
        }
        cmd
    }

    fn sh(&self, script: &str) -> String {
        let out = self.command(Command::new("sh").tap(|c| c.args(["-c", script]))).output().expect("nsenter");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Fills the tmpfs with a filler file that leaves `room` KiB free (with
    /// some room, small writes pass and large ones fail; with none, every
    /// write fails), or, given `None`, frees it.
    fn full(&self, room: Option<u64>) {
        let filler = self.dir.join("filler");
        if let Some(room) = room {
            let dir = self.dir.display();
            self.sh(&format!(
                "free=$(df -k --output=avail '{dir}' | tail -1); head -c $(( (free - {room}) * 1024 )) /dev/zero > '{}' 2>/dev/null; true",
                filler.display()
            ));
        } else {
            self.sh(&format!("rm -f '{}'", filler.display()));
        }
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

trait Tap: Sized {
    fn tap(self, f: impl FnOnce(&mut Self) -> &mut Self) -> Self;
}

impl Tap for Command {
    fn tap(mut self, f: impl FnOnce(&mut Self) -> &mut Self) -> Self {
        f(&mut self);
        self
    }
}

/// The `run` front: one `toolhost run --session soak` at a time, on the
/// tmpfs, killed and restarted now and then; its cache sometimes corrupt or
/// unwritable.
struct RunFront {
    child: Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<Value>,
    /// Files read in this session whose result came out.
    read: Vec<String>,
}

/// The JSON lines a front writes, as they come (lines that are not JSON
/// are skipped), until it closes its output or nobody listens.
fn json_lines(stdout: std::process::ChildStdout) -> std::sync::mpsc::Receiver<Value> {
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && tx.send(v).is_err()
            {
                return;
            }
        }
    });
    lines
}

fn start_run(sb: &Sandbox, ns: &Ns, cache: &Path) -> RunFront {
    let mut base = toolhost_command(sb);
    base.env("TOOLHOST_DATA_DIR", &ns.dir).env("TOOLHOST_CACHE_DIR", cache);
    base.args(flags()).args(["--settings", &json!({"auditLog": ns.dir.join("audit.jsonl")}).to_string()]);
    base.args(["run", "--session", "soak"]);
    let mut child =
        ns.command(base).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let lines = json_lines(child.stdout.take().unwrap());
    RunFront { child, stdin, lines, read: Vec::new() }
}

/// Waits for the result of `id` from `run`; `None` if none came in time.
fn run_result(front: &RunFront, id: &str, answered: &mut HashSet<String>) -> Option<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Ok(v) = front.lines.recv_timeout(left) else { return None };
        if v["type"] == "tool_result" {
            let got = v["tool_use_id"].as_str().unwrap_or_default().to_string();
            assert!(answered.insert(got.clone()), "run answered {got} twice");
            if got == id {
                return Some(v);
            }
        }
    }
    None
}

fn drive_run(sb: &Sandbox, ns: &Ns, calls: usize, mut rng: Rng, tally: &Mutex<Tally>, results: &Mutex<Vec<Value>>) {
    let began = Instant::now();
    let cache = sb.root.join("run-cache");
    let mut front = start_run(sb, ns, &cache);
    let mut answered = HashSet::new();
    let mut full = false;
    for n in 0..calls {
        // Now and then: a full disk, or room again.
        if rng.chance(40) {
            full = !full;
            ns.full(full.then(|| [0, 4, 64][rng.below(3) as usize]));
        }
        // Now and then: SIGKILL mid-call, then check what was recorded.
        if rng.chance(15) && !full {
            let id = format!("run-{n}-killed");
            let command = format!("exec -a {MARKER} sleep 600");
            let line = json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": command}});
            let _ = writeln!(front.stdin, "{line}");
            std::thread::sleep(Duration::from_millis(rng.below(300)));
            let _ = front.child.kill();
            let _ = front.child.wait();
            let mut t = tally.lock().unwrap();
            t.kills += 1;
            t.sent += 1;
            t.abandoned += 1;
            drop(t);
            // Between starts the cache is damaged, a way per restart in
            // turn: an entry truncated and another overwritten, then a cache
            // that cannot be written (a file where its directory should be:
            // every start compiles, so only once), then left as it is.
            let restarts = tally.lock().unwrap().kills;
            match restarts % 3 {
                1 => corrupt_cache(&cache, &mut rng),
                2 if restarts == 2 => {
                    let _ = std::fs::remove_dir_all(&cache);
                    std::fs::write(&cache, "a file where the cache directory should be").unwrap();
                }
                _ => {}
            }
            let read = std::mem::take(&mut front.read);
            front = start_run(sb, ns, &cache);
            front.read = read;
            // What was read before the kill may be edited now: the reads were
            // on disk before their results came out.
            if let Some(path) = front.read.last().cloned() {
                let id = format!("run-{n}-after-kill");
                let text = std::fs::read_to_string(&path).unwrap();
                let old = text.lines().next().unwrap_or_default().to_string();
                let input = json!({"file_path": path, "old_string": old, "new_string": format!("{old}!")});
                let line = json!({"type": "tool_use", "id": id, "name": "Edit", "input": input});
                writeln!(front.stdin, "{line}").unwrap();
                let r = run_result(&front, &id, &mut answered).expect("run answers after a restart");
                let text = content_text(&r);
                assert_eq!(r["is_error"], false, "a read recorded before SIGKILL was lost: {text}");
                let mut t = tally.lock().unwrap();
                t.sent += 1;
                t.answered += 1;
                t.kept_reads += 1;
            }
            if cache.is_file() {
                let _ = std::fs::remove_file(&cache);
            }
        }
        let (tool, input) = a_call(&mut rng, sb, n);
        let id = format!("run-{n}");
        let line = json!({"type": "tool_use", "id": id, "name": tool, "input": input});
        writeln!(front.stdin, "{line}").unwrap();
        front.stdin.flush().unwrap();
        tally.lock().unwrap().sent += 1;
        if tool == "Bash" && rng.chance(200) {
            std::thread::sleep(Duration::from_millis(50));
            let _ = writeln!(front.stdin, "{}", json!({"type": "interrupt"}));
        }
        let r = run_result(&front, &id, &mut answered).unwrap_or_else(|| panic!("run did not answer {id} ({line})"));
        let mut t = tally.lock().unwrap();
        t.answered += 1;
        t.disk_full_calls += usize::from(full);
        if content_text(&r).contains("could not be recorded") {
            t.refused_unrecorded += 1;
        }
        drop(t);
        if tool == "Read" && r["is_error"] == false && !full {
            front.read.push(input["file_path"].as_str().unwrap().to_string());
        }
        results.lock().unwrap().push(json!({"front": "run", "id": id, "tool": tool, "result": r}));
    }
    ns.full(None);
    drop(front.stdin);
    let status = front.child.wait().unwrap();
    assert!(status.success(), "run ended with {status}");
    eprintln!("soak: the run front's {calls} calls took {:.0} s", began.elapsed().as_secs_f64());
}

/// Damages the compile cache: a compiled component truncated, another
/// overwritten with garbage.
fn corrupt_cache(cache: &Path, rng: &mut Rng) {
    let mut files: Vec<PathBuf> = ["components", "shell-parser"]
        .iter()
        .flat_map(|d| std::fs::read_dir(cache.join(d)).into_iter().flatten().flatten().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    files.sort();
    if files.is_empty() {
        return;
    }
    let a = &files[rng.below(files.len() as u64) as usize];
    let len = std::fs::metadata(a).map_or(0, |m| m.len());
    let _ = std::fs::OpenOptions::new().write(true).open(a).and_then(|f| f.set_len(len / 2));
    let b = &files[rng.below(files.len() as u64) as usize];
    let _ = std::fs::write(b, b"not a compiled component");
}

/// One MCP client over a `toolhost serve --session soak-stdio` it started
/// on stdio.
struct StdioFront {
    child: Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<Value>,
}

fn start_stdio(sb: &Sandbox) -> StdioFront {
    let mut child = toolhost_command(sb)
        .args(flags())
        .args(["--settings", &json!({"auditLog": sb.data.join("audit-stdio.jsonl")}).to_string()])
        .args(["serve", "--session", "soak-stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = json_lines(child.stdout.take().unwrap());
    writeln!(stdin, "{INITIALIZE}").unwrap();
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    let front = StdioFront { child, stdin, lines };
    loop {
        let v = front.lines.recv_timeout(Duration::from_secs(60)).expect("serve answers initialize");
        if v["id"] == "init" {
            break;
        }
    }
    front
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"soak","version":"1"}}}"#;

fn drive_stdio(sb: &Sandbox, calls: usize, mut rng: Rng, tally: &Mutex<Tally>, results: &Mutex<Vec<Value>>) {
    let began = Instant::now();
    let mut front = start_stdio(sb);
    let mut answered: HashSet<String> = HashSet::new();
    // A file only this front reads and edits: read in the session before a
    // SIGKILL, it may be edited after the restart.
    let own = sb.write("stdio-own.txt", "stdio\n").display().to_string();
    let mut own_read = false;
    for n in 0..calls {
        let (tool, input) = match rng.chance(50) {
            true => ("Read".to_string(), json!({"file_path": &own})),
            false => a_call(&mut rng, sb, n),
        };
        let reads_own = input["file_path"] == own;
        let id = format!("stdio-{n}");
        let request =
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": input}});
        writeln!(front.stdin, "{request}").unwrap();
        tally.lock().unwrap().sent += 1;
        // Now and then the client goes away mid-call, or the server is
        // killed (SIGKILL) mid-call.
        if rng.chance(10) {
            std::thread::sleep(Duration::from_millis(rng.below(100)));
            let mut child = front.child;
            let killed = rng.chance(2);
            if killed {
                let _ = child.kill();
            }
            drop(front.stdin);
            drop(front.lines);
            let started = Instant::now();
            loop {
                match child.try_wait().unwrap() {
                    Some(_) => break,
                    None if started.elapsed() > Duration::from_secs(30) => {
                        let _ = child.kill();
                        panic!("serve outlived its client by 30 s");
                    }
                    None => std::thread::sleep(Duration::from_millis(20)),
                }
            }
            let mut t = tally.lock().unwrap();
            t.kills += 1;
            t.abandoned += 1;
            drop(t);
            front = start_stdio(sb);
            // The session's reads outlive the server, however it ended.
            if own_read {
                let text = std::fs::read_to_string(&own).unwrap();
                let old = text.lines().next().unwrap_or_default().to_string();
                let arguments = json!({"file_path": own, "old_string": old, "new_string": format!("{old}!")});
                let id = format!("stdio-{n}-after-{}", if killed { "kill" } else { "hang-up" });
                let edit = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "Edit", "arguments": arguments}});
                writeln!(front.stdin, "{edit}").unwrap();
                let r = loop {
                    let v = front.lines.recv_timeout(Duration::from_secs(60)).expect("serve answers after a restart");
                    if v["id"] == id {
                        break v;
                    }
                };
                assert_eq!(r["result"]["isError"], false, "a read recorded before the server ended was lost: {r}");
                assert!(answered.insert(r["id"].to_string()));
                let mut t = tally.lock().unwrap();
                t.sent += 1;
                t.answered += 1;
                t.kept_reads += 1;
            }
            continue;
        }
        // Now and then the call is cancelled: the server need not answer it.
        let cancelled = tool == "Bash" && rng.chance(200);
        if cancelled {
            let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}});
            writeln!(front.stdin, "{cancel}").unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(if cancelled { 3 } else { 60 });
        let mut got = None;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            let Ok(v) = front.lines.recv_timeout(left) else { break };
            if v.get("result").is_some() || v.get("error").is_some() {
                let key = v["id"].to_string();
                assert!(answered.insert(key.clone()), "serve answered {key} twice");
                if v["id"] == id {
                    got = Some(v);
                    break;
                }
            }
        }
        match got {
            Some(v) => {
                tally.lock().unwrap().answered += 1;
                own_read |= reads_own && v["result"]["isError"] == false;
                results.lock().unwrap().push(json!({"front": "stdio", "id": id, "tool": tool, "result": v}));
            }
            None if cancelled => tally.lock().unwrap().abandoned += 1,
            None => panic!("serve did not answer {id} ({request})"),
        }
    }
    drop(front.stdin);
    let status = front.child.wait().unwrap();
    assert!(status.success(), "serve ended with {status}");
    eprintln!("soak: the stdio front's {calls} calls took {:.0} s", began.elapsed().as_secs_f64());
}

/// A request to the HTTP server; the JSON-RPC messages of its answer (JSON
/// or server-sent events) and the session id it gave.
fn http(
    addr: &str,
    session: Option<&str>,
    body: &Value,
    hang_up_after: Option<Duration>,
) -> (Vec<Value>, Option<String>) {
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let body = body.to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(s) = session {
        request.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream.write_all(request.as_bytes()).unwrap();
    if let Some(after) = hang_up_after {
        std::thread::sleep(after);
        return (Vec::new(), None);
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let (head, rest) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let session = head.lines().find_map(|l| {
        l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id")).map(|(_, v)| v.trim().to_string())
    });
    let messages = rest
        .lines()
        .filter_map(|l| {
            l.strip_prefix("data:").map(str::trim).or_else(|| l.trim().starts_with('{').then_some(l.trim()))
        })
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (messages, session)
}

/// Ends an MCP session over HTTP (`DELETE`), as a client that is done.
fn end_session(addr: &str, session: &str) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let request = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    assert!(response.starts_with("HTTP/1.1 2"), "ending a session: {response}");
}

fn drive_http(sb: &Sandbox, calls: usize, mut rng: Rng, tally: &Mutex<Tally>, results: &Mutex<Vec<Value>>) -> Memory {
    let mut child = toolhost_command(sb)
        .args(flags())
        .args([
            "--settings",
            &json!({"auditLog": sb.data.join("audit-http.jsonl")}).to_string(),
            "serve",
            "--http",
            "0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let addr = loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "serve --http ended before it listened");
        if let Some(rest) = line.split("serving MCP at http://").nth(1) {
            break rest.trim().trim_end_matches("/mcp").to_string();
        }
    };
    std::thread::spawn(move || for _ in stderr.lines() {});
    let pid = child.id();
    let began = Instant::now();
    let init = serde_json::from_str::<Value>(INITIALIZE).unwrap();
    let session = || {
        let (_, s) = http(&addr, None, &init, None);
        let s = s.expect("the server gives a session");
        http(&addr, Some(&s), &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), None);
        s
    };
    let mut current = session();
    let mut answered: HashSet<String> = HashSet::new();
    let (mut warm, mut half) = ((0, 0), 0);
    for n in 0..calls {
        if n == calls / 10 {
            warm = (fds(pid), rss_kib(pid));
        }
        if n == calls / 2 {
            half = rss_kib(pid);
        }
        // Now and then the client starts a new session: it ends the old one
        // most times, and sometimes just leaves it (the server reaps it
        // after its idle time).
        if rng.chance(20) {
            if rng.chance(800) {
                end_session(&addr, &current);
            }
            current = session();
        }
        let (tool, input) = a_call(&mut rng, sb, n);
        let id = format!("http-{n}");
        let request =
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": input}});
        tally.lock().unwrap().sent += 1;
        // Now and then the client hangs up mid-call.
        if rng.chance(15) {
            http(&addr, Some(&current), &request, Some(Duration::from_millis(rng.below(100))));
            let mut t = tally.lock().unwrap();
            t.abandoned += 1;
            t.kills += 1;
            continue;
        }
        let (messages, _) = http(&addr, Some(&current), &request, None);
        let answers: Vec<&Value> =
            messages.iter().filter(|m| m.get("result").is_some() || m.get("error").is_some()).collect();
        assert_eq!(answers.len(), 1, "{id} ({request}) got {} answers: {messages:?}", answers.len());
        assert!(answered.insert(id.clone()), "{id} answered twice");
        tally.lock().unwrap().answered += 1;
        results.lock().unwrap().push(json!({"front": "http", "id": id, "tool": tool, "result": answers[0]}));
    }
    eprintln!("soak: the HTTP front's {calls} calls took {:.0} s", began.elapsed().as_secs_f64());
    // What calls left behind is dropped as they end. A client that hung up
    // mid-call leaves its call running to its end (a hanging guest to its
    // deadline), later on a loaded machine: wait for the descriptors to come
    // back (a leak's never do), at most 30 s.
    let settled = Instant::now() + Duration::from_secs(30);
    while fds(pid) > warm.0 + FDS_OVER_WARM && Instant::now() < settled {
        std::thread::sleep(Duration::from_millis(100));
    }
    let end = (fds(pid), rss_kib(pid));
    // Interrupted, the server ends cleanly, however its clients left.
    let interrupted = Command::new("kill").args(["-INT", &pid.to_string()]).status().unwrap();
    assert!(interrupted.success());
    let stopping = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if stopping.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("serve --http did not end within 30 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "serve --http ended with {status}");
    Memory { warm_fds: warm.0, end_fds: end.0, warm_rss: warm.1, half_rss: half, end_rss: end.1 }
}

/// Descriptors the HTTP server may hold at the end over what it held warm
/// (sessions and connections open at either moment).
const FDS_OVER_WARM: usize = 8;

/// The HTTP server's descriptors and RSS (KiB): warm (a tenth of its calls
/// in), half-way, and at the end.
struct Memory {
    warm_fds: usize,
    end_fds: usize,
    warm_rss: u64,
    half_rss: u64,
    end_rss: u64,
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Hot reloads and removals while the fronts run: tools appear, change,
/// break and go.
fn reloads(sb: &Sandbox, mut rng: Rng, stop: &std::sync::atomic::AtomicBool, tally: &Mutex<Tally>) {
    let echo = std::fs::read(toolhost_tests::ECHO).unwrap();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(200 + rng.below(800)));
        let name = format!("extra{}.wasm", rng.below(3));
        let path = sb.plugins.join(&name);
        match rng.below(4) {
            0 => {
                let _ = std::fs::write(&path, &echo);
            }
            1 => {
                let _ = std::fs::write(
                    &path,
                    toolhost_tests::with_custom_section(&echo, "soak", &rng.next().to_le_bytes()),
                );
            }
            2 => {
                let _ = std::fs::copy(toolhost_tests::BROKEN_INFO, &path);
            }
            _ => {
                let _ = std::fs::remove_file(&path);
            }
        }
        tally.lock().unwrap().reloads += 1;
    }
}

/// The decision lines of an audit log, by session and call id: each line
/// whole JSON, each decision once.
fn audit_lines(text: &str, what: &str) -> BTreeMap<(String, String), Value> {
    let mut decisions = BTreeMap::new();
    for line in text.lines() {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{what}: a broken audit line {line:?}: {e}"));
        if v["event"] == "decision" {
            let key = (v["session"].as_str().unwrap_or_default().to_string(), v["tool_use_id"].to_string());
            assert!(decisions.insert(key.clone(), v).is_none(), "{what}: {key:?} has two decision lines");
        }
    }
    decisions
}

/// Every call that ran (a result that is not an error: it passed the
/// decision) has its decision line: by id where the client chose the ids
/// (`run`), by count where the server did (MCP).
fn check_audit(results: &[Value], front: &str, decisions: &BTreeMap<(String, String), Value>) {
    let ran: Vec<&Value> = results
        .iter()
        .filter(|r| r["front"] == front)
        .filter(|r| r["result"]["is_error"] == false || r["result"]["result"]["isError"] == false)
        .collect();
    if front == "run" {
        for r in &ran {
            let key = ("soak".to_string(), r["id"].to_string());
            assert!(decisions.contains_key(&key), "run: {} ran without a decision line: {r}", r["id"]);
        }
    } else {
        let allowed = decisions.values().filter(|d| d["decision"] == "allow").count();
        assert!(ran.len() <= allowed, "{front}: {} calls ran, {allowed} were allowed in the audit log", ran.len());
    }
}

#[test]
fn fault_soak() {
    let calls: usize = std::env::var("TOOLHOST_SOAK_CALLS").ok().and_then(|c| c.parse().ok()).unwrap_or(1_000);
    let seed = match std::env::var("TOOLHOST_SOAK_SEED").ok().as_deref() {
        Some("random") | Some("") => {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
        }
        Some(s) => s.parse().expect("TOOLHOST_SOAK_SEED: a number or `random`"),
        None => 0x5eed_2025_0000_0001,
    };
    eprintln!("soak: {calls} calls, seed {seed} (TOOLHOST_SOAK_SEED={seed} reproduces it)");
    let started = Instant::now();
    let sb = Sandbox::new();
    sb.install(toolhost_tests::ADVERSARY);
    sb.install(toolhost_tests::ECHO);
    for i in 0..8 {
        sb.write(&format!("f{i}.txt"), (0..50).map(|l| format!("line {l} of f{i}\n")).collect::<String>());
    }
    // Warm the shared cache with every tool compiled optimized, so no front
    // compiles in the background while its memory is measured.
    let _ = toolhost(&sb, &["--quick-compile-above", "off", "tools"]);
    // Room for what the run front keeps, so the disk is full when the soak
    // fills it.
    let ns = Ns::new(&sb.root.join("tmpfs"), &format!("{}m", 32 + calls / 50));
    let tally = Mutex::new(Tally::default());
    let results = Mutex::new(Vec::new());
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut rng = Rng(seed);
    let (run_rng, stdio_rng, http_rng, reload_rng) =
        (Rng(rng.next() | 1), Rng(rng.next() | 1), Rng(rng.next() | 1), Rng(rng.next() | 1));
    let memory = std::thread::scope(|s| {
        let reloading = s.spawn(|| reloads(&sb, reload_rng, &stop, &tally));
        let run = s.spawn(|| drive_run(&sb, &ns, calls / 2, run_rng, &tally, &results));
        let stdio = s.spawn(|| drive_stdio(&sb, calls / 4, stdio_rng, &tally, &results));
        let http = s.spawn(|| drive_http(&sb, calls - calls / 2 - calls / 4, http_rng, &tally, &results));
        let outcomes = [run.join().err(), stdio.join().err()];
        let memory = http.join();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = reloading.join();
        if let Some(panic) = outcomes.into_iter().flatten().next() {
            std::panic::resume_unwind(panic);
        }
        memory.unwrap_or_else(|p| std::panic::resume_unwind(p))
    });

    let results = results.into_inner().unwrap();
    // The audit logs: the run front's is on the tmpfs, read from inside.
    let run_audit = ns.sh(&format!("cat '{}'", ns.dir.join("audit.jsonl").display()));
    check_audit(&results, "run", &audit_lines(&run_audit, "run"));
    for (front, file) in [("stdio", "audit-stdio.jsonl"), ("http", "audit-http.jsonl")] {
        let text = std::fs::read_to_string(sb.data.join(file)).unwrap_or_default();
        check_audit(&results, front, &audit_lines(&text, front));
    }
    // Nothing left behind: no child process, no session temp directory.
    std::thread::sleep(Duration::from_secs(1));
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(MARKER))
        .collect();
    assert!(left.is_empty(), "child processes left: {left:?}");
    // (A named session keeps its temporary directory between calls, as it
    // keeps its state.)
    for data in [sb.data.clone(), ns.dir.clone()] {
        let temps = ns.sh(&format!("find '{}' -type d -path '*/ephemeral-*/tmp'", data.display()));
        assert!(temps.trim().is_empty(), "session temp directories left: {temps}");
    }
    let Memory { warm_fds, end_fds, warm_rss, half_rss, end_rss } = memory;
    assert!(
        end_fds <= warm_fds + FDS_OVER_WARM,
        "the HTTP server held {warm_fds} descriptors warm, {end_fds} at the end (30 s after its last call)"
    );
    // RSS rises while the mix first reaches each tool (its code paged in,
    // its instance slot's pages kept for fast resets, allocator caches),
    // then stays: the second half of the calls may not add what a leak of
    // tens of KiB per call would.
    assert!(
        end_rss <= half_rss + half_rss / 4 + 8 * 1024,
        "the HTTP server's RSS went on growing: {warm_rss} KiB warm, {half_rss} KiB half-way, {end_rss} KiB at the end"
    );
    let t = tally.into_inner().unwrap();
    eprintln!(
        "soak: {} requests, {} answered once, {} abandoned by a kill or hang-up ({} kills, {} reads kept through one), {} \
         refused for want of an audit line, {} calls with the disk full, {} reloads; descriptors {warm_fds} -> {end_fds}, RSS {warm_rss} \
         -> {half_rss} -> {end_rss} KiB; {:.0} s",
        t.sent,
        t.answered,
        t.abandoned,
        t.kills,
        t.kept_reads,
        t.refused_unrecorded,
        t.disk_full_calls,
        t.reloads,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(t.answered + t.abandoned, t.sent, "requests neither answered nor abandoned");
}
