//! The interactive permission prompt, driven through a pseudo-terminal.
//!
//! `toolhost` asks only when both stdin and stderr are terminals, so these
//! tests give the child a pty's slave side as stdin and stderr (stdout stays a
//! pipe, so the `--json` result parses cleanly), read the prompt from the
//! master side and type the answer there.

use crate::support::*;
use serde_json::{Value, json};
use std::fs::File;
use std::io::{Read, Write};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// How long any one wait may take before the test fails instead of hanging.
const DEADLINE: Duration = Duration::from_secs(30);

/// A `toolhost call NAME INPUT --json` running with stdin and stderr on a pty.
struct Prompted {
    child: Child,
    /// The master side, to type answers into.
    master: File,
    /// What the child wrote to the terminal (stderr, and the echo of our input).
    terminal: mpsc::Receiver<Vec<u8>>,
    seen: String,
    stdout: mpsc::Receiver<String>,
}

impl Prompted {
    fn start(sb: &Sandbox, name: &str, input: &Value) -> Prompted {
        Prompted::start_with(sb, &[], name, input)
    }

    /// [`Prompted::start`] with `args` before the subcommand.
    fn start_with(sb: &Sandbox, args: &[&str], name: &str, input: &Value) -> Prompted {
        let (master, slave) = openpty();
        let mut child = toolhost_command(sb)
            .args(args)
            .args(["call", name, &input.to_string(), "--json"])
            .stdin(Stdio::from(slave.try_clone().expect("dup pty slave")))
            .stderr(Stdio::from(slave))
            .stdout(Stdio::piped())
            .spawn()
            .expect("run toolhost");
        // The `Command` (and with it our copies of the slave) is gone here,
        // so the master reads EOF/EIO once the child exits.

        let (tx, terminal) = mpsc::channel();
        let mut reader = master.try_clone().expect("dup pty master");
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Ends on EOF, or EIO once the last slave descriptor is closed.
            while let Ok(n @ 1..) = reader.read(&mut buf) {
                if tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });

        let (tx, stdout) = mpsc::channel();
        let mut out = child.stdout.take().expect("piped stdout");
        thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            let _ = tx.send(s);
        });

        Prompted { child, master, terminal, seen: String::new(), stdout }
    }

    /// Reads the terminal until `needle` shows up; returns everything seen so far.
    fn expect(&mut self, needle: &str) -> String {
        let end = Instant::now() + DEADLINE;
        while !self.seen.contains(needle) {
            let left = end.saturating_duration_since(Instant::now());
            match self.terminal.recv_timeout(left) {
                Ok(bytes) => self.seen.push_str(&String::from_utf8_lossy(&bytes)),
                Err(e) => {
                    let _ = self.child.kill();
                    panic!("no {needle:?} on the terminal ({e}); it showed:\n{}", self.seen);
                }
            }
        }
        self.seen.clone()
    }

    /// Types `line` and Enter.
    fn answer(&mut self, line: &str) {
        self.master.write_all(format!("{line}\n").as_bytes()).expect("write to the pty");
        self.master.flush().expect("flush the pty");
    }

    /// Waits for the child to exit and returns what it did.
    fn finish(mut self) -> Run {
        let end = Instant::now() + DEADLINE;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for toolhost") {
                break status;
            }
            if Instant::now() >= end {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("toolhost did not exit within {DEADLINE:?}; the terminal showed:\n{}", self.seen);
            }
            thread::sleep(Duration::from_millis(20));
        };
        let stdout = self.stdout.recv_timeout(DEADLINE).expect("toolhost's stdout did not close");
        // Whatever else reached the terminal, without waiting for more.
        while let Ok(bytes) = self.terminal.recv_timeout(Duration::from_millis(100)) {
            self.seen.push_str(&String::from_utf8_lossy(&bytes));
        }
        Run { code: status.code().unwrap_or(-1), stdout, stderr: self.seen }
    }
}

fn local_settings(sb: &Sandbox) -> std::path::PathBuf {
    sb.ws(".toolhost/settings.local.json")
}

/// Starts `touch made.txt` and waits for its prompt, checking what it shows.
fn prompt_for_touch(sb: &Sandbox) -> Prompted {
    let mut run = Prompted::start(sb, "Bash", &json!({"command": "touch made.txt"}));
    let shown = run.expect("Allow? [y/a/n]");
    assert!(shown.contains(r#"Bash wants to run with {"command":"touch made.txt"}"#), "{shown}");
    assert!(shown.contains("adds `Bash(touch made.txt)` to the local settings"), "{shown}");
    assert!(!sb.ws("made.txt").exists(), "it ran before the answer");
    run
}

#[test]
fn allow_once_runs_the_call() {
    let sb = Sandbox::new();
    let mut run = prompt_for_touch(&sb);
    run.answer("y");
    let r = run.finish();
    r.assert_ok();
    assert!(sb.ws("made.txt").exists(), "{r:?}");
    assert!(!local_settings(&sb).exists(), "allow once wrote the local settings");
}

#[test]
fn allow_always_saves_the_rule_to_the_local_settings() {
    let sb = Sandbox::new();
    let mut run = prompt_for_touch(&sb);
    run.answer("a");
    let r = run.finish();
    r.assert_ok();
    assert!(sb.ws("made.txt").exists(), "{r:?}");

    let file = local_settings(&sb);
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}; {r:?}", file.display()));
    let settings: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}:\n{text}", file.display()));
    assert_eq!(settings["permissions"]["allow"], json!(["Bash(touch made.txt)"]), "{text}");

    // Without a terminal nobody can be asked, yet the saved rule allows it.
    std::fs::remove_file(sb.ws("made.txt")).expect("remove made.txt");
    call(&sb, "Bash", &json!({"command": "touch made.txt"}), &[]).assert_ok();
    assert!(sb.ws("made.txt").exists());
}

#[test]
fn deny_with_a_reason_tells_the_model() {
    let sb = Sandbox::new();
    let mut run = prompt_for_touch(&sb);
    run.answer("n not now");
    let r = run.finish();
    let text = r.assert_error("denied");
    assert!(text.contains("not now"), "{text}");
    assert!(!sb.ws("made.txt").exists(), "{r:?}");
    assert!(!local_settings(&sb).exists());
}

#[test]
fn without_a_terminal_there_is_no_prompt() {
    let sb = Sandbox::new();
    let start = Instant::now();
    let r = call(&sb, "Bash", &json!({"command": "touch x.txt"}), &[]);
    r.assert_error("--allow 'Bash(touch x.txt)'");
    assert!(!r.stderr.contains("Allow?"), "{r:?}");
    assert!(start.elapsed() < DEADLINE, "took {:?}", start.elapsed());
    assert!(!sb.ws("x.txt").exists());
}

/// A workspace with the Grantee tool and the file it wants to read.
fn grantee_workspace() -> (Sandbox, Value) {
    let sb = Sandbox::new();
    sb.install(toolhost_tests::GRANTEE);
    std::fs::create_dir_all(sb.ws("data")).unwrap();
    std::fs::write(sb.ws("data/notes.txt"), "granted data").unwrap();
    let input = json!({"action": "read", "path": p(&sb.ws("data/notes.txt"))});
    (sb, input)
}

/// Starts Grantee's read and waits for the question its capability fault
/// raises, checking what it shows.
fn prompt_for_grant(sb: &Sandbox, input: &Value) -> Prompted {
    let mut run = Prompted::start_with(sb, &["--allow", "Grantee"], "Grantee", input);
    let shown = run.expect("Allow? [y/a/n]");
    let data = p(&sb.ws("data").canonicalize().unwrap());
    assert!(shown.contains("it requested what it was not granted: directory"), "{shown}");
    assert!(shown.contains(&format!("directory {data} (read-only)")), "{shown}");
    assert!(shown.contains("adds `toolGrants.Grantee: {"), "{shown}");
    run
}

#[test]
fn a_capability_fault_asks_and_a_grant_once_retries_the_call() {
    let (sb, input) = grantee_workspace();
    let mut run = prompt_for_grant(&sb, &input);
    run.answer("y");
    assert_eq!(run.finish().assert_ok(), "granted data");
    assert!(!local_settings(&sb).exists(), "a grant once wrote the local settings");
    // Not granted for the next call.
    let text = call(&sb, "Grantee", &input, &["--allow", "Grantee"]).assert_error("refused");
    assert!(text.contains("Grantee requested what it was not granted"), "{text}");
}

#[test]
fn a_grant_always_is_kept_in_the_local_settings() {
    let (sb, input) = grantee_workspace();
    let mut run = prompt_for_grant(&sb, &input);
    run.answer("a");
    assert_eq!(run.finish().assert_ok(), "granted data");
    let text = std::fs::read_to_string(local_settings(&sb)).expect("the local settings were written");
    let settings: Value = serde_json::from_str(&text).unwrap();
    let data = p(&sb.ws("data").canonicalize().unwrap());
    let grant = &settings["toolGrants"]["Grantee"];
    assert_eq!(grant["directories"], json!([{"path": data, "access": "read-only"}]), "{text}");
    assert_eq!(grant["env"], json!(["GREETING", "NOT_GRANTED"]), "{text}");
    // The next start reads it: granted without asking.
    assert_eq!(call(&sb, "Grantee", &input, &["--allow", "Grantee"]).assert_ok(), "granted data");
}

#[test]
fn a_refused_grant_leaves_the_error_naming_it() {
    let (sb, input) = grantee_workspace();
    let mut run = prompt_for_grant(&sb, &input);
    run.answer("n");
    let text = run.finish().assert_error("refused");
    assert!(text.contains("under toolGrants.Grantee in a settings file"), "{text}");
    assert!(!local_settings(&sb).exists());
}
