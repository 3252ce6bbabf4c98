//! Bash, BashOutput and KillShell over the host's process capability.

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
    call(&sb, "Bash", &input, &["--mode", "bypassPermissions"])
        .assert_error("Command timed out after 500 ms and was killed.");
    assert!(started.elapsed() < Duration::from_secs(15));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!running(&format!("sleep {marker}")), "the forked grandchild was killed too");
}

#[test]
fn timeout_over_ten_minutes_is_refused() {
    let sb = Sandbox::new();
    call(&sb, "Bash", &json!({"command": "true", "timeout": 600001}), &[]).assert_error("`timeout`");
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

#[test]
fn a_hundred_megabytes_of_output_is_capped_and_memory_stays_bounded() {
    let sb = Sandbox::new();
    let host = host(&sb, PermissionMode::Default);
    let hwm = || -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
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
    let before = hwm();
    let r = host.call(
        &host.ephemeral_session(),
        &tool_use("Bash", json!({"command": "head -c 100000000 /dev/zero | tr '\\0' a"})),
        &CallOptions::default(),
    );
    let grown_mib = (hwm().saturating_sub(before)) / 1024;
    let text = r.text();
    assert!(!r.is_error, "{}", &text[..200.min(text.len())]);
    assert!(text.len() < 40_000, "{}", text.len());
    assert!(
        text.contains("[99970000 bytes of output cut; the first 15000 and last 15000 bytes are shown]"),
        "{}",
        &text[14_990..15_200]
    );
    assert!(grown_mib < 64, "the host grew by {grown_mib} MiB for 100 MB of output");
}

#[test]
fn output_that_is_not_utf8_is_shown_lossily() {
    let sb = Sandbox::new();
    assert_eq!(bash(&sb, r"printf '\xff\xfe ok\n'", &[]).assert_ok(), "\u{fffd}\u{fffd} ok");
}

#[test]
fn background_runs_are_read_and_killed_through_their_companions() {
    let sb = Sandbox::new();
    let host = host(&sb, PermissionMode::BypassPermissions);
    let session = host.ephemeral_session();
    let run = |name: &str, input| host.call(&session, &tool_use(name, input), &CallOptions::default());
    let started = run("Bash", json!({"command": "echo first; sleep 0.3; echo second", "run_in_background": true}));
    let id = started.text().split("ID: ").nth(1).unwrap().split('.').next().unwrap().to_string();
    let mut all = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = run("BashOutput", json!({"bash_id": id})).text();
        all.push_str(&out);
        if out.contains("<status>completed</status>") || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(all.contains("first") && all.contains("second") && all.contains("<exit_code>0</exit_code>"), "{all}");

    let long = run("Bash", json!({"command": "sleep 33.333", "run_in_background": true}));
    let id = long.text().split("ID: ").nth(1).unwrap().split('.').next().unwrap().to_string();
    assert_eq!(run("KillShell", json!({"shell_id": id})).text(), format!("Successfully killed shell: {id}"));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!running("sleep 33.333"));
    let other = host.ephemeral_session();
    let r = host.call(&other, &tool_use("BashOutput", json!({"bash_id": id})), &CallOptions::default());
    assert!(r.is_error && r.text().contains("no background process"), "another session cannot see it: {r:?}");
}

#[test]
fn a_child_cannot_write_outside_the_working_directories() {
    let sb = Sandbox::new();
    let outside = sb.root.join("outside.txt");
    let command = format!("touch {0}; echo pwned > {0}; touch inside.txt; mktemp", outside.display());
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
