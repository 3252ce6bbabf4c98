//! Bash, TaskOutput and TaskStop (BashOutput and KillShell by their old
//! names) over the host's process capability.

use crate::support::*;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost::{CallOptions, Host, PermissionMode, ToolUse};

fn bash(sb: &Sandbox, command: &str, extra: &[&str]) -> Run {
    call(sb, "Bash", &json!({"command": command}), extra)
}

fn host(sb: &Sandbox, mode: PermissionMode) -> Host {
    Host::builder()
        .workspace(&sb.workspace)
        .plugins_dir(None)
        .data_dir(&sb.data)
        .cache_dir(Some(toolhost_tests::shared_cache_dir()))
        .mode(mode)
        .build()
        .expect("host")
}

fn tool_use(name: &str, input: serde_json::Value) -> ToolUse {
    ToolUse { id: "toolu_bash".into(), name: name.into(), input }
}

/// Whether a process whose command line contains `marker` still runs.
fn running(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).replace('\0', " ").contains(marker))
    })
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
    std::thread::sleep(Duration::from_millis(300));
    assert!(!running(&format!("sleep {marker}")), "the forked grandchild was killed too");
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
    std::thread::sleep(Duration::from_millis(200));
    assert!(!running("sleep 27.1828"));
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

/// Loads TaskOutput and TaskStop, deferred as in Claude Code.
fn load_task_tools(run: impl Fn(&str, serde_json::Value) -> toolhost::ToolResult) {
    let r = run("ToolSearch", json!({"query": "select:TaskOutput,TaskStop"}));
    assert!(!r.is_error, "{r:?}");
}

/// The id in Bash's answer to a background start.
fn task_id(started: &toolhost::ToolResult) -> String {
    let text = started.text();
    let id = text.strip_prefix("Command running in background with ID: ").and_then(|t| t.strip_suffix('.'));
    let id = id.unwrap_or_else(|| panic!("not a background start: {text}")).to_string();
    assert!(id.len() == 26 && id.starts_with('b'), "{id}");
    id
}

#[test]
fn background_runs_are_read_and_stopped_through_task_output_and_task_stop() {
    let sb = Sandbox::new();
    let host = host(&sb, PermissionMode::BypassPermissions);
    let session = host.ephemeral_session();
    let run = |name: &str, input| host.call(&session, &tool_use(name, input), &CallOptions::default());
    load_task_tools(run);
    let id =
        task_id(&run("Bash", json!({"command": "echo first; sleep 0.3; echo second >&2", "run_in_background": true})));
    // Blocking (the default) waits for the end; every read shows all of it.
    for _ in 0..2 {
        let r = run("TaskOutput", json!({"task_id": id}));
        assert_eq!(
            (r.is_error, r.text()),
            (
                false,
                format!(
                    "<retrieval_status>success</retrieval_status>\n\n<task_id>{id}</task_id>\n\n\
                     <task_type>local_bash</task_type>\n\n<status>completed</status>\n\n<exit_code>0</exit_code>\n\n\
                     <output>\nfirst\nsecond\n</output>"
                )
            )
        );
    }
    let r = run("TaskStop", json!({"task_id": id}));
    assert_eq!(
        (r.is_error, r.text()),
        (true, format!("<tool_use_error>Task {id} is not running (status: completed)</tool_use_error>"))
    );

    let long = task_id(&run("Bash", json!({"command": "echo waiting; sleep 33.333", "run_in_background": true})));
    let started = Instant::now();
    let r = run("TaskOutput", json!({"task_id": long, "block": true, "timeout": 600}));
    assert!(started.elapsed() >= Duration::from_millis(550), "{:?}", started.elapsed());
    assert!(r.text().starts_with("<retrieval_status>timeout</retrieval_status>"), "{}", r.text());
    assert!(r.text().ends_with("<status>running</status>\n\n<output>\nwaiting\n</output>"), "{}", r.text());
    let r = run("TaskOutput", json!({"task_id": long, "block": false}));
    assert!(r.text().starts_with("<retrieval_status>not_ready</retrieval_status>"), "{}", r.text());
    let r = run("TaskStop", json!({"task_id": long}));
    assert_eq!(
        r.text(),
        format!(
            r#"{{"message":"Successfully stopped task: {long} (echo waiting; sleep 33.333)","task_id":"{long}","task_type":"local_bash","command":"echo waiting; sleep 33.333"}}"#
        )
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(!running("sleep 33.333"));
    let r = run("TaskOutput", json!({"task_id": long, "block": false}));
    assert!(r.text().contains("<status>killed</status>\n\n<output>\nwaiting\n</output>"), "{}", r.text());
    let other = host.ephemeral_session();
    let load = tool_use("ToolSearch", json!({"query": "select:TaskOutput"}));
    assert!(!host.call(&other, &load, &CallOptions::default()).is_error);
    let r = host.call(&other, &tool_use("TaskOutput", json!({"task_id": long})), &CallOptions::default());
    assert_eq!(
        (r.is_error, r.text()),
        (true, format!("<tool_use_error>No task found with ID: {long}</tool_use_error>"))
    );
}

#[test]
fn the_old_names_and_fields_still_work() {
    let sb = Sandbox::new();
    let host = host(&sb, PermissionMode::BypassPermissions);
    let session = host.ephemeral_session();
    let run = |name: &str, input| host.call(&session, &tool_use(name, input), &CallOptions::default());
    load_task_tools(run);
    let id = task_id(&run("Bash", json!({"command": "printf 'ok 1\\nskip\\nok 2\\n'", "run_in_background": true})));
    std::thread::sleep(Duration::from_millis(300));
    // BashOutput: only what is new, only the lines the filter keeps.
    let first = run("BashOutput", json!({"bash_id": id, "filter": "^ok"})).text();
    assert!(
        first.starts_with(
            "<status>completed</status>\n\n<exit_code>0</exit_code>\n\n<stdout>\nok 1\nok 2\n</stdout>\n\n<timestamp>"
        ),
        "{first}"
    );
    let again = run("BashOutput", json!({"bash_id": id})).text();
    assert!(again.starts_with("<status>completed</status>\n\n<exit_code>0</exit_code>\n\n<timestamp>"), "{again}");
    let r = run("BashOutput", json!({"bash_id": "b000000000"}));
    assert_eq!(
        (r.is_error, r.text()),
        (true, "<tool_use_error>No shell found with ID: b000000000</tool_use_error>".to_string())
    );

    let long = task_id(&run("Bash", json!({"command": "sleep 44.444", "run_in_background": true})));
    let r = run("KillShell", json!({"shell_id": long}));
    assert!(!r.is_error && r.text().contains(&format!("Successfully stopped task: {long} (sleep 44.444)")), "{r:?}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!running("sleep 44.444"));
    let r = run("KillShell", json!({}));
    assert_eq!(r.text(), "<tool_use_error>Missing required parameter: task_id</tool_use_error>");
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
