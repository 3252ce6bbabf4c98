//! Third-party components: loading, sandboxing, and every way they can misbehave.

use crate::support::*;
use serde_json::json;
use toolhost_tests::{
    ADVERSARY, BROKEN_INFO, CONTRACT_1_0, DECLARED, ECHO, FILES_THIEF, FUTURE_CONTRACT, MOVER, PROCESS_THIEF, WARM,
};

fn adversary(sb: &Sandbox, action: serde_json::Value, extra: &[&str]) -> Run {
    call(sb, "Adversary", &action, extra)
}

#[test]
fn a_plugin_is_loaded_and_called() {
    let sb = Sandbox::new();
    sb.install(ECHO);
    assert_eq!(call(&sb, "Echo", &json!({"text": "hi"}), &[]).assert_ok(), "hi");
    // Aliases resolve.
    assert_eq!(call(&sb, "Parrot", &json!({"text": "polly"}), &[]).assert_ok(), "polly");
}

#[test]
fn progress_reaches_the_caller_in_order() {
    let sb = Sandbox::new();
    sb.install(ECHO);
    let r = call(&sb, "Echo", &json!({"text": "done", "progress": 3}), &[]);
    r.assert_ok();
    let lines: Vec<&str> = r.stderr.lines().filter(|l| l.starts_with("[progress]")).collect();
    assert_eq!(lines, ["[progress] step 0", "[progress] step 1", "[progress] step 2"]);
}

#[test]
fn plugin_session_state_is_private_and_persistent() {
    let sb = Sandbox::new();
    sb.install(ECHO);
    let file = sb.write("f.txt", "x\n");
    let s = ["--session", "plug"];
    call(&sb, "Read", &json!({"file_path": p(&file)}), &s).assert_ok();
    assert_eq!(call(&sb, "Echo", &json!({"text": "a", "count": true}), &s).assert_ok(), "a (call 1; keys [\"calls\"])");
    assert_eq!(call(&sb, "Echo", &json!({"text": "b", "count": true}), &s).assert_ok(), "b (call 2; keys [\"calls\"])");
    // A different session starts over.
    assert!(
        call(&sb, "Echo", &json!({"text": "c", "count": true}), &["--session", "other"])
            .assert_ok()
            .starts_with("c (call 1;")
    );
}

#[test]
fn traps_and_panics_are_error_results() {
    let sb = Sandbox::new();
    sb.install(ADVERSARY);
    let text = adversary(&sb, json!({"action": "panic"}), &[]).assert_error("Adversary crashed");
    assert!(text.contains("adversary panicked on purpose"), "the panic message is shown: {text}");
    adversary(&sb, json!({"action": "trap"}), &[]).assert_error("Adversary crashed");
    adversary(&sb, json!({"action": "stack"}), &[]).assert_error("Adversary crashed");
}

#[test]
fn endless_loops_time_out() {
    let sb = Sandbox::new();
    sb.install(ADVERSARY);
    let started = std::time::Instant::now();
    adversary(&sb, json!({"action": "loop"}), &["--timeout-ms", "300"])
        .assert_error("Adversary timed out after 300 ms");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn memory_bombs_hit_the_limit() {
    let sb = Sandbox::new();
    sb.install(ADVERSARY);
    adversary(&sb, json!({"action": "alloc"}), &["--memory-mib", "64"])
        .assert_error("Adversary exceeded its memory limit of 64 MiB");
}

#[test]
fn malformed_output_is_an_error_result() {
    let sb = Sandbox::new();
    sb.install(ADVERSARY);
    adversary(&sb, json!({"action": "bad-json"}), &[]).assert_error("a json block is not valid JSON");
    adversary(&sb, json!({"action": "bad-structured"}), &[]).assert_error("does not match its output schema");
    adversary(&sb, json!({"action": "bad-image"}), &[]).assert_error("unsupported media type `application/x-evil`");
    adversary(&sb, json!({"action": "invalid"}), &[]).assert_error("the adversary refuses this input");
}

#[test]
fn huge_outputs_are_persisted_not_returned() {
    let sb = Sandbox::new();
    sb.install(ADVERSARY);
    let r = adversary(&sb, json!({"action": "huge", "count": 50_000_000}), &[]);
    let text = r.assert_ok();
    assert!(text.len() < 10_000, "the model gets a preview, not 50 MB ({} bytes)", text.len());
    assert!(text.contains("Output too large (50000000 characters)"), "{}", &text[..300]);
    // What is kept on disk is capped too, for an error as for a result.
    for (action, ok) in [("huge", true), ("huge-error", false)] {
        let r = adversary(&sb, json!({"action": action, "count": 100_000_000}), &[]);
        let text = if ok { r.assert_ok() } else { r.assert_error("Output too large (100000000 characters)") };
        assert!(text.contains("more bytes of this output were dropped: at most 16 MiB"), "{}", &text[..400]);
        let path = text.split("saved to: ").nth(1).unwrap().lines().next().unwrap();
        let saved = std::fs::metadata(path).unwrap().len();
        assert!(saved <= (16 << 20) + 200, "{action}: {saved} bytes on disk");
    }
}

#[test]
fn streamed_output_is_merged_and_capped() {
    let sb = Sandbox::new();
    sb.install(ADVERSARY);
    let r = adversary(&sb, json!({"action": "stream", "count": 2}), &["--mode", "bypassPermissions"]);
    let text = r.assert_ok();
    // 2 MiB streamed plus the returned text: over the tool's 10,000-character limit, so persisted.
    assert!(text.contains("Output too large (2097156 characters)"), "{}", &text[..200]);
    let path = text.split("saved to: ").nth(1).unwrap().lines().next().unwrap();
    let saved = std::fs::read_to_string(path).unwrap();
    assert!(saved.starts_with("sss") && saved.ends_with("s|end"), "{}", &saved[saved.len() - 20..]);

    let r = adversary(&sb, json!({"action": "stream", "count": 70}), &[]);
    let text = r.assert_ok();
    let path = text.split("saved to: ").nth(1).unwrap().lines().next().unwrap();
    let saved = std::fs::read_to_string(path).unwrap();
    assert!(saved.len() <= (16 << 20) + 200, "the host keeps at most 16 MiB of a result: {}", saved.len());
    assert!(saved.ends_with("MiB of a result is kept.]\n"), "{}", &saved[saved.len() - 80..]);
    assert!(text.contains("streamed more than 64 MiB") || text.contains("more bytes of this output were dropped"));
}

#[test]
fn no_capability_without_a_grant() {
    let sb = Sandbox::new();
    sb.install(ADVERSARY);
    let secret = sb.write("secret.txt", "in the workspace");
    for path in [p(&secret), "/etc/passwd".into(), "secret.txt".into()] {
        let text = adversary(&sb, json!({"action": "read", "path": path}), &[]).assert_ok();
        assert!(text.starts_with("denied:"), "{text}");
    }
    let text = adversary(&sb, json!({"action": "env"}), &[]).assert_ok();
    assert_eq!(text, "env: []; args: [\"Adversary\"]", "no environment leaks into a plugin");
}

#[test]
fn no_network_without_a_grant() {
    let sb = Sandbox::new();
    sb.install(ADVERSARY);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    for target in [addr.as_str(), "1.1.1.1:443", "localhost:22"] {
        let text = adversary(&sb, json!({"action": "connect", "path": target}), &[]).assert_ok();
        assert!(text.starts_with("denied:"), "{target}: {text}");
    }
    let accepted = listener.accept();
    assert!(
        accepted.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "nothing reached the listener: {accepted:?}"
    );
}

#[test]
fn a_plugin_cannot_grant_itself_permission() {
    let sb = Sandbox::new();
    sb.install(ADVERSARY);
    adversary(&sb, json!({"action": "self-allow"}), &[]).assert_error("Permission to use Adversary was denied");
    adversary(&sb, json!({"action": "self-allow"}), &["--mode", "bypassPermissions"]).assert_ok();
}

#[test]
fn floods_are_bounded() {
    let sb = Sandbox::new();
    sb.install(ADVERSARY);
    let text = adversary(&sb, json!({"action": "session-flood"}), &["--session", "flood"]).assert_ok();
    let stored: usize = text.trim_start_matches("stored ").parse().unwrap();
    assert!(stored > 0 && stored * 60_000 <= 1024 * 1024 + 60_000, "{text}");
    let r = adversary(&sb, json!({"action": "progress-flood"}), &[]);
    r.assert_ok();
    let events = r.stderr.lines().filter(|l| l.starts_with("[progress]")).count();
    assert_eq!(events, 10_000, "progress is capped per call");
}

#[test]
fn broken_components_are_left_out_and_the_rest_serve() {
    let sb = Sandbox::new();
    sb.install(ECHO);
    sb.install(BROKEN_INFO);
    sb.install(FUTURE_CONTRACT);
    sb.install(FILES_THIEF);
    sb.install(PROCESS_THIEF);
    std::fs::write(sb.plugins.join("garbage.wasm"), "this is not wasm").unwrap();
    std::fs::write(sb.plugins.join("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    let r = toolhost(&sb, &["tools"]);
    assert_eq!(r.code, 0, "{r:?}");
    // One line per tool; the capability lines under a tool are indented.
    let names: Vec<&str> =
        r.stdout.lines().filter(|l| !l.starts_with(' ')).map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(
        names,
        ["Bash", "Edit", "Glob", "Grep", "NotebookEdit", "Read", "TaskStop", "ToolSearch", "WebFetch", "Write", "Echo"]
    );
    for expected in [
        "broken on purpose while describing itself",
        "was built against toolhost contract 2.0.0, but this host implements contract 1.6.0",
        "imports the `files` capability, which is not granted to it",
        "toolhost_guest_process_thief.wasm: imports the `process` capability, which is not granted to it",
        "garbage.wasm: not a WebAssembly file",
        "core.wasm: a core WebAssembly module, not a component",
    ] {
        assert!(r.stderr.contains(expected), "missing {expected:?} in:\n{}", r.stderr);
    }
    assert_eq!(call(&sb, "Echo", &json!({"text": "still serving"}), &[]).assert_ok(), "still serving");
    call(&sb, "Future", &json!({}), &[]).assert_error("No such tool available: Future");
}

#[test]
fn a_component_built_against_the_frozen_1_0_contract_loads_and_runs() {
    let sb = Sandbox::new();
    sb.install(CONTRACT_1_0);
    let r = toolhost(&sb, &["check", CONTRACT_1_0]);
    assert!(r.stdout.contains("contract:      1.0.0"), "{r:?}");
    let s = ["--session", "legacy", "--deny", "Read(./.env)"];
    let first = call(&sb, "Legacy", &json!({"text": "old"}), &s);
    // Its imports work: progress, session state, the policy's hidden paths
    // (none: a 1.0.0 tool cannot declare a path it reads).
    assert!(first.stderr.contains("[progress] legacy progress"), "{first:?}");
    assert!(first.assert_ok().starts_with("old (call 1, 0 hidden, id "), "{first:?}");
    assert!(call(&sb, "Legacy", &json!({"text": "again"}), &s).assert_ok().starts_with("again (call 2,"));
    // Its errors come back in the current contract's shape.
    call(&sb, "Legacy", &json!({"text": "refuse"}), &[]).assert_error("1.0.0 refuses this text");
    call(&sb, "Legacy", &json!({"nope": 1}), &[]).assert_error("text");
}

#[test]
fn a_warm_instance_tool_is_still_asked_what_it_did_not_declare() {
    let sb = Sandbox::new();
    sb.install(WARM);
    let r = toolhost(&sb, &["check", WARM]);
    // It cannot say which exports do nothing: all are asked.
    let asks = "asks is-concurrency-safe, validate-input, check-permissions, call; declared read-only; \
                a warm instance per session";
    assert!(r.stdout.contains(asks), "{r:?}");
    assert_eq!(call(&sb, "Warm", &json!({"text": "hi"}), &[]).assert_ok(), "served 1");
    call(&sb, "Warm", &json!({"text": "refuse"}), &[]).assert_error("validated away");
    call(&sb, "Warm", &json!({"text": "deny"}), &[]).assert_error("denied by the tool");
}

#[test]
fn a_tool_is_not_asked_what_it_declared() {
    let sb = Sandbox::new();
    sb.install(DECLARED);
    let r = toolhost(&sb, &["check", DECLARED]);
    let asks = "asks call; declared concurrency-safe, read-only; a fresh instance each";
    assert!(r.stdout.contains(asks), "{r:?}");
    // Each export it declared away traps: the calls succeed only if none
    // is called, whatever the mode and the front.
    assert_eq!(call(&sb, "Declared", &json!({"text": "one"}), &[]).assert_ok(), "one");
    assert_eq!(call(&sb, "Declared", &json!({"text": "plan"}), &["--mode", "plan"]).assert_ok(), "plan");
    let calls: Vec<_> = (0..4)
        .map(|i| json!({"type": "tool_use", "id": format!("d{i}"), "name": "Declared", "input": {"text": format!("t{i}")}}))
        .collect();
    let out = run_stream(&sb, &[], &calls);
    let results: Vec<_> = out.iter().filter(|l| l["type"] == "tool_result").collect();
    assert_eq!(results.len(), 4, "{out:?}");
    assert!(results.iter().all(|r| r["is_error"] == false), "{out:?}");
    // A schema error is still the host's to catch.
    call(&sb, "Declared", &json!({"nope": 1}), &[]).assert_error("text");
}

#[test]
fn a_tool_that_declares_paths_is_confined_and_matched_like_read() {
    let sb = Sandbox::new();
    sb.install(MOVER);
    sb.write("src/a.txt", "a");
    sb.write("secret/key", "k");
    let outside = sb.root.join("outside.txt");
    std::fs::write(&outside, "o").unwrap();
    std::os::unix::fs::symlink(&outside, sb.ws("src/link.txt")).unwrap();
    let mv = |source: &str, destination: &str, extra: &[&str]| {
        call(&sb, "Mover", &json!({"source": source, "destination": destination}), extra)
    };
    let bypass = ["--mode", "bypassPermissions"];
    // Confined before it runs, whatever the mode: outside, through `..`, through a symlink.
    mv(&p(&outside), "src/b.txt", &bypass).assert_error("is outside the working directories");
    mv("src/a.txt", "../b.txt", &bypass).assert_error("is outside the working directories");
    mv("src/link.txt", "src/b.txt", &bypass).assert_error("resolves outside the working directories");
    // Not read-only, so it asks; without a prompt the refusal names the rules that would allow it.
    mv("src/a.txt", "src/b.txt", &[]).assert_error("add `Read(./src/a.txt)`, `Edit(./src/b.txt)`");
    // Its own rules match its paths.
    let allow = ["--allow", "Mover(./src/**)"];
    assert_eq!(mv("src/a.txt", "src/b.txt", &allow).assert_ok(), "would move src/a.txt to src/b.txt");
    mv("src/a.txt", "dst/b.txt", &allow).assert_error("Permission to use Mover was denied");
    mv("src/a.txt", "src/b.txt", &["--allow", "Mover(./src/**)", "--deny", "Mover(./src/b.txt)"])
        .assert_error("deny rule `Mover(./src/b.txt)`");
    // The families cover it: what it reads meets Read rules, what it edits Edit rules.
    mv("secret/key", "src/b.txt", &["--allow", "Mover", "--deny", "Read(./secret/**)"])
        .assert_error("deny rule `Read(./secret/**)`");
    mv("src/a.txt", "src/b.txt", &["--allow", "Mover", "--deny", "Edit(./src/**)"])
        .assert_error("deny rule `Edit(./src/**)`");
    // Writing a sensitive path asks in every mode.
    mv("src/a.txt", ".git/config", &bypass).assert_error(".git");
}
