//! Bash and TaskStop (KillShell and KillBash by its old names) over the
//! host's process capability; background output in files Read reads.

use crate::support::*;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost::{CallOptions, Host, PermissionMode};

fn bash(sb: &Sandbox, command: &str, extra: &[&str]) -> Run {
    call(sb, "Bash", &json!({"command": command}), extra)
}

fn host(sb: &Sandbox, mode: PermissionMode) -> Host {
    host_builder(sb).mode(mode).build().expect("host")
}

#[test]
fn echo_prints_its_output() {
    let sb = Sandbox::new();
    let r = toolhost(&sb, &["call", "Bash", r#"{"command":"echo hi"}"#]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "hi\n"), "{r:?}");
    assert_eq!(bash(&sb, "pwd", &[]).assert_ok(), p(&sb.workspace), "it runs in the workspace");
}

#[test]
fn commands_that_write_need_approval() {
    let sb = Sandbox::new();
    let text = bash(&sb, "touch made.txt", &[]).assert_error("Permission to use Bash was denied");
    assert!(
        text.contains("`touch` is not a known read-only command")
            && text.contains("--allow 'Bash(touch made.txt)'")
            && text.contains("--mode bypassPermissions"),
        "{text}"
    );
    assert!(!sb.ws("made.txt").exists());
    bash(&sb, "touch made.txt", &["--mode", "acceptEdits"]).assert_error("was denied");
    bash(&sb, "touch made.txt", &["--mode", "bypassPermissions"]).assert_ok();
    assert!(sb.ws("made.txt").exists());
    // Read-only commands run in every mode, plan included.
    assert_eq!(bash(&sb, "ls made.txt", &["--mode", "plan"]).assert_ok(), "made.txt");
}

#[test]
fn a_failing_command_is_an_error_that_keeps_its_output() {
    let sb = Sandbox::new();
    let text = bash(&sb, "echo before; ls no-such-file; echo after >&2; false", &["--mode", "bypassPermissions"])
        .assert_error("Exit code 1");
    assert!(text.contains("before") && text.contains("no-such-file") && text.contains("after"), "{text}");
}

#[test]
fn timeouts_kill_the_whole_process_tree() {
    let sb = Sandbox::new();
    let marker = "31.4159";
    let started = Instant::now();
    let input = json!({"command": format!("(sleep {marker}; touch survived) & sleep {marker}"), "timeout": 500});
    // Claude Code's text for a command it killed at its timeout: SIGTERM's code.
    let text = call(&sb, "Bash", &input, &["--mode", "bypassPermissions"]).assert_error("Exit code 143");
    assert_eq!(text, "Exit code 143");
    assert!(started.elapsed() < Duration::from_secs(15));
    // The forked grandchild was killed too.
    wait_gone(&format!("sleep {marker}"), Duration::from_secs(10));
}

#[test]
fn a_timeout_over_ten_minutes_is_cut_to_ten() {
    let sb = Sandbox::new();
    let r = call(&sb, "Bash", &json!({"command": "true", "timeout": 600001}), &[]);
    assert_eq!(r.assert_ok(), "(Bash completed with no output)");
}

#[test]
fn cancellation_kills_the_command() {
    let sb = Sandbox::new();
    let host = host(&sb, PermissionMode::BypassPermissions);
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        flag.store(true, Ordering::Relaxed);
    });
    let started = Instant::now();
    let options = CallOptions { cancel: Some(cancel), ..CallOptions::default() };
    let r = host.call(&host.ephemeral_session(), &tool_use("Bash", json!({"command": "sleep 27.1828"})), &options);
    assert!(r.is_error && r.text().contains("cancelled"), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    wait_gone("sleep 27.1828", Duration::from_secs(10));
}

#[test]
fn progress_arrives_while_the_command_runs_and_in_order() {
    let sb = Sandbox::new();
    let host = host(&sb, PermissionMode::Default);
    let seen: Arc<Mutex<Vec<(Instant, String)>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let options = CallOptions {
        progress: Some(Arc::new(move |p: toolhost::Progress| sink.lock().unwrap().push((Instant::now(), p.message)))),
        ..CallOptions::default()
    };
    let command = "for i in 1 2 3; do echo line$i; sleep 0.3; done";
    let r = host.call(&host.ephemeral_session(), &tool_use("Bash", json!({"command": command})), &options);
    let ended = Instant::now();
    assert_eq!((r.is_error, r.text()), (false, "line1\nline2\nline3".to_string()), "{r:?}");
    let seen = seen.lock().unwrap();
    let lines: Vec<&str> = seen.iter().flat_map(|(_, m)| m.lines()).collect();
    assert_eq!(lines, ["line1", "line2", "line3"]);
    assert!(
        ended - seen[0].0 >= Duration::from_millis(500),
        "the first line came {:?} before the end",
        ended - seen[0].0
    );
}

/// Measured in a `toolhost run` process of its own: the peak memory of the
/// test process counts every test running beside this one.
#[test]
fn a_hundred_megabytes_of_output_is_capped_and_memory_stays_bounded() {
    use std::io::{BufRead as _, Write as _};
    let sb = Sandbox::new();
    sb.write("a.txt", "one\n");
    let mut child = crate::support::spawn_piped(&sb, &["run"]);
    let pid = child.id();
    let hwm = || -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .unwrap()
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .unwrap()
    };
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut result = |line: serde_json::Value| -> serde_json::Value {
        writeln!(stdin, "{line}").unwrap();
        loop {
            let mut text = String::new();
            assert!(stdout.read_line(&mut text).unwrap() > 0, "the stream ended");
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            if v["type"] == "tool_result" {
                return v;
            }
        }
    };
    // Started, and a call served, before the baseline.
    let read = result(json!({"type": "tool_use", "id": "r", "name": "Read", "input": {"file_path": sb.ws("a.txt")}}));
    assert_eq!(read["is_error"], false, "{read}");
    let before = hwm();
    let command = "head -c 100000000 /dev/zero | tr '\\0' a";
    let r = result(json!({"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": command}}));
    let grown_mib = hwm().saturating_sub(before) / 1024;
    let text = crate::support::content_text(&r);
    assert_eq!(r["is_error"], false, "{}", &text[..200.min(text.len())]);
    assert!(text.len() < 5_000, "{}", text.len());
    // Saved to a file, with a preview: the host's answer to a result over
    // Bash's 30,000 characters.
    assert!(text.starts_with("<persisted-output>\n") && text.contains("aaaa"), "{text}");
    assert!(grown_mib < 64, "the host grew by {grown_mib} MiB for 100 MB of output");
    drop(stdin);
    let _ = child.wait();
}

#[test]
fn output_that_is_not_utf8_is_shown_lossily() {
    let sb = Sandbox::new();
    assert_eq!(bash(&sb, r"printf '\xff\xfe ok\n'", &[]).assert_ok(), "\u{fffd}\u{fffd} ok");
}

/// Loads TaskStop, deferred as in Claude Code.
fn load_task_stop(run: impl Fn(&str, serde_json::Value) -> toolhost::ToolResult) {
    let r = run("ToolSearch", json!({"query": "select:TaskStop"}));
    assert!(!r.is_error, "{r:?}");
}

/// The id and the output file in Bash's answer to a background start, which
/// is checked whole.
fn started(r: &toolhost::ToolResult) -> (String, String) {
    let text = r.text();
    let pattern = regex::Regex::new(
        r"^Command running in background with ID: (b[0-9a-z]{25})\. Output is being written to: (/\S+/(b[0-9a-z]{25})\.output)\. (.*)$",
    )
    .unwrap();
    let caps = pattern.captures(&text).unwrap_or_else(|| panic!("not a background start: {text}"));
    assert!(!r.is_error && caps[1] == caps[3], "{text}");
    assert_eq!(
        &caps[4],
        "Nothing notifies you when the command finishes: read the output file that the result names to check on \
         it. The file gets no line when the command ends, so if you need to know that it has, end the command with \
         an `echo` of your own."
    );
    (caps[1].to_string(), caps[2].to_string())
}

/// Waits until `file` holds `text` (or 10 s passed), and returns what it holds.
fn wait_for(file: &str, text: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let held = std::fs::read_to_string(file).unwrap_or_default();
        if held.contains(text) || Instant::now() > deadline {
            return held;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn background_output_goes_to_a_file_that_read_reads_and_task_stop_stops_the_command() {
    let sb = Sandbox::new();
    let host = host(&sb, PermissionMode::BypassPermissions);
    let session = host.ephemeral_session();
    let run = |name: &str, input| host.call(&session, &tool_use(name, input), &CallOptions::default());
    load_task_stop(run);
    let (id, file) =
        started(&run("Bash", json!({"command": "echo first; sleep 0.3; echo second >&2", "run_in_background": true})));
    assert!(file.starts_with(&p(&sb.data)), "in the session's own directory: {file}");
    // Both streams, in the order they came; no closing line of the host's.
    assert_eq!(wait_for(&file, "second"), "first\nsecond\n");
    let r = run("Read", json!({"file_path": file}));
    assert_eq!((r.is_error, r.text()), (false, "1\tfirst\n2\tsecond\n3\t".to_string()));
    // The host records the end a moment after the last output (a TaskStop
    // before that would stop it).
    std::thread::sleep(Duration::from_secs(1));
    let r = run("TaskStop", json!({"task_id": id}));
    assert_eq!(r.text(), format!("<tool_use_error>Task {id} is not running (status: completed)</tool_use_error>"));

    let (long, file) =
        started(&run("Bash", json!({"command": "echo waiting; sleep 33.333", "run_in_background": true})));
    assert_eq!(wait_for(&file, "waiting"), "waiting\n");
    let r = run("TaskStop", json!({"task_id": long}));
    assert_eq!(
        r.text(),
        format!(
            r#"{{"message":"Successfully stopped task: {long} (echo waiting; sleep 33.333)","task_id":"{long}","task_type":"local_bash","command":"echo waiting; sleep 33.333"}}"#
        )
    );
    wait_gone("sleep 33.333", Duration::from_secs(10));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "waiting\n");

    // Another session neither stops it nor reads its file.
    let other = host.ephemeral_session();
    let in_other = |name: &str, input| host.call(&other, &tool_use(name, input), &CallOptions::default());
    load_task_stop(in_other);
    let r = in_other("TaskStop", json!({"task_id": long}));
    assert_eq!(
        (r.is_error, r.text()),
        (true, format!("<tool_use_error>No task found with ID: {long}</tool_use_error>"))
    );
    let r = in_other("Read", json!({"file_path": file}));
    assert!(r.is_error && r.text().contains("outside the working directories"), "{r:?}");
}

#[test]
fn task_output_is_gone_and_task_stop_keeps_its_old_names() {
    let sb = Sandbox::new();
    let host = host(&sb, PermissionMode::BypassPermissions);
    let session = host.ephemeral_session();
    let run = |name: &str, input| host.call(&session, &tool_use(name, input), &CallOptions::default());
    // Claude Code 2.1.328 removed TaskOutput and its aliases: the generic
    // unknown-tool error, in Claude Code's words.
    for name in ["TaskOutput", "BashOutput", "BashOutputTool", "AgentOutputTool"] {
        let r = run(name, json!({"task_id": "b1"}));
        assert_eq!(
            (r.is_error, r.text()),
            (true, format!("<tool_use_error>Error: No such tool available: {name}</tool_use_error>"))
        );
    }
    let r = run("ToolSearch", json!({"query": "select:TaskOutput"}));
    assert!(!r.text().contains("\"TaskOutput\""), "{}", r.text());
    load_task_stop(run);
    for old in ["KillShell", "KillBash"] {
        let (id, _) = started(&run("Bash", json!({"command": "sleep 44.444", "run_in_background": true})));
        let r = run(old, json!({"shell_id": id}));
        assert!(!r.is_error && r.text().contains(&format!("Successfully stopped task: {id} (sleep 44.444)")), "{r:?}");
        let r = run(old, json!({}));
        assert_eq!(r.text(), "<tool_use_error>Missing required parameter: task_id</tool_use_error>");
    }
    wait_gone("sleep 44.444", Duration::from_secs(10));
}

#[test]
fn a_background_command_is_stopped_at_its_timeout() {
    let sb = Sandbox::new();
    let host = host(&sb, PermissionMode::BypassPermissions);
    let session = host.ephemeral_session();
    let run = |name: &str, input| host.call(&session, &tool_use(name, input), &CallOptions::default());
    load_task_stop(run);
    // Past the foreground maximum is allowed in the background.
    let input = |marker: &str, timeout: u64| json!({"command": format!("echo up; sleep {marker}"), "run_in_background": true, "timeout": timeout});
    let (slow, _) = started(&run("Bash", input("55.555", 900_000)));
    let (id, file) = started(&run("Bash", input("55.556", 400)));
    assert_eq!(wait_for(&file, "up"), "up\n");
    // Generous: a loaded 2-core machine once took over 10 s here (CI,
    // 2026-12-06); the figures below say where the process was if it fails.
    let deadline = Instant::now() + Duration::from_secs(30);
    while running("sleep 55.556") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = processes("sleep 55.556");
    let stop = run("TaskStop", json!({"task_id": id}));
    assert!(left.is_empty(), "stopped at its timeout; still there: {left:?}; TaskStop says {}", stop.text());
    std::thread::sleep(Duration::from_secs(1));
    let r = run("TaskStop", json!({"task_id": id}));
    assert_eq!(r.text(), format!("<tool_use_error>Task {id} is not running (status: failed)</tool_use_error>"));
    assert!(running("sleep 55.555"), "the one with the long timeout runs on");
    assert!(!run("TaskStop", json!({"task_id": slow})).is_error);
}

#[test]
fn disabling_the_sandbox_asks_and_never_unconfines() {
    let sb = Sandbox::new();
    let input = json!({"command": "ls", "dangerouslyDisableSandbox": true});
    // Asked even for a read-only command; `call` has nobody to ask.
    let text = call(&sb, "Bash", &input, &[]).assert_error("was denied");
    assert!(text.contains("dangerouslyDisableSandbox") && text.contains("still runs confined"), "{text}");
    // Deny rules come first.
    let text =
        call(&sb, "Bash", &input, &["--mode", "bypassPermissions", "--deny", "Bash(ls:*)"]).assert_error("denied");
    assert!(!text.contains("dangerouslyDisableSandbox"), "{text}");
    // Run, and confined still.
    let outside = sb.root.join("unsandboxed.txt");
    let input = json!({"command": format!("touch {}", outside.display()), "dangerouslyDisableSandbox": true});
    let text = call(&sb, "Bash", &input, &["--mode", "bypassPermissions"]).assert_error("Exit code 1");
    assert!(text.contains("Permission denied"), "{text}");
    assert!(!outside.exists());
}

#[test]
fn exit_codes_as_claude_code_reads_them() {
    let sb = Sandbox::new();
    sb.write("a.txt", "one\n");
    let bypass = ["--mode", "bypassPermissions"];
    // grep finding nothing is not an error, and prints nothing.
    assert_eq!(bash(&sb, "grep nothing a.txt", &bypass).assert_ok(), "(Bash completed with no output)");
    assert_eq!(bash(&sb, "cat a.txt | grep nothing", &bypass).assert_ok(), "(Bash completed with no output)");
    assert_eq!(bash(&sb, "grep nothing a.txt | cat", &[]).assert_ok(), "(Bash completed with no output)");
    assert_eq!(
        bash(&sb, "grep nothing no-such.txt", &bypass).assert_error("Exit code 2"),
        "Exit code 2\ngrep: no-such.txt: No such file or directory"
    );
    assert_eq!(
        // The streams are two pipes, merged as they arrive: a pause orders them.
        bash(&sb, "echo out; sleep 0.2; echo err >&2; exit 3", &bypass).assert_error("Exit code 3"),
        "Exit code 3\nout\nerr"
    );
    assert_eq!(bash(&sb, "printf '\\n\\n  x  \\n\\n'", &[]).assert_ok(), "  x");
}

#[test]
fn a_child_cannot_write_outside_the_working_directories() {
    let sb = Sandbox::new();
    let outside = sb.root.join("outside.txt");
    // One stream for both, so mktemp's path is the last line: over two pipes a busy machine can deliver stdout first.
    let command = format!("exec 2>&1; touch {0}; echo pwned > {0}; touch inside.txt; mktemp", outside.display());
    let text = bash(&sb, &command, &["--mode", "bypassPermissions"]).assert_ok();
    assert!(text.contains("Permission denied"), "{text}");
    assert!(!outside.exists(), "Landlock kept the child inside the workspace");
    assert!(sb.ws("inside.txt").exists(), "but it can write the workspace");
    let tmp = text.lines().last().unwrap();
    assert!(tmp.starts_with(&p(&sb.data)), "its TMPDIR is private to the session: {tmp}");
}

#[test]
fn a_child_cannot_open_a_socket() {
    let sb = Sandbox::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let text = bash(&sb, &command, &["--mode", "bypassPermissions"]).assert_error("Exit code");
    assert!(text.contains("Network is unreachable") && !text.contains("connected"), "{text}");
    assert!(listener.accept().is_err(), "nothing reached the listener");
}

#[test]
fn confinement_mode_is_a_flag() {
    let sb = Sandbox::new();
    let r = toolhost(&sb, &["--child-confinement", "best-effort", "call", "Bash", r#"{"command":"echo ok"}"#]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "ok\n"), "{r:?}");
    let r = toolhost(&sb, &["--child-confinement", "sometimes", "tools"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("unknown confinement mode"), "{}", r.stderr);
}
