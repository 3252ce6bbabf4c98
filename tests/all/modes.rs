//! Permission modes together with each tool's own check.

use crate::support::*;
use serde_json::json;

#[test]
fn writes_follow_the_mode() {
    let sb = Sandbox::new();
    let write = |name: &str, mode: &str| {
        call(&sb, "Write", &json!({"file_path": p(&sb.ws(name)), "content": "x"}), &["--mode", mode])
    };
    let text = write("default.txt", "default").assert_error("Permission to use Write was denied");
    assert!(text.contains("--mode acceptEdits"), "the refusal names the mode that would allow it: {text}");
    write("plan.txt", "plan").assert_error("Plan mode only runs read-only calls");
    write("dontask.txt", "dontAsk").assert_error("dontAsk mode refuses");
    write("accept.txt", "acceptEdits").assert_ok();
    write("bypass.txt", "bypassPermissions").assert_ok();
    let made: Vec<bool> = ["default.txt", "plan.txt", "dontask.txt", "accept.txt", "bypass.txt"]
        .iter()
        .map(|f| sb.ws(f).exists())
        .collect();
    assert_eq!(made, [false, false, false, true, true]);
}

#[test]
fn read_only_tools_run_in_every_mode() {
    let sb = Sandbox::new();
    let file = sb.write("r.txt", "ok\n");
    for mode in ["default", "plan", "acceptEdits", "dontAsk", "bypassPermissions"] {
        call(&sb, "Read", &json!({"file_path": p(&file)}), &["--mode", mode]).assert_ok();
        call(&sb, "Glob", &json!({"pattern": "*.txt"}), &["--mode", mode]).assert_ok();
        call(&sb, "Grep", &json!({"pattern": "ok"}), &["--mode", mode]).assert_ok();
    }
}

#[test]
fn the_pooling_allocator_falls_back_when_address_space_is_short() {
    let sb = Sandbox::new();
    let file = sb.write("a.txt", "fine\n");
    let input = json!({"file_path": p(&file)}).to_string();
    // 16 GB of address space: too little for the pool's reservation, plenty
    // for on-demand instances.
    let run = |args: &str| {
        let script = format!("ulimit -v 16000000; exec \"$0\" --workspace \"$1\" {args}");
        sb.command("sh")
            .args(["-c", &script, env!("CARGO_BIN_EXE_toolhost")])
            .arg(&sb.workspace)
            .arg(&input)
            .output()
            .unwrap()
    };
    let auto = run("--allocator auto tools");
    assert!(auto.status.success(), "{auto:?}");
    assert!(
        String::from_utf8_lossy(&auto.stderr).contains("pooling allocator unavailable; using the on-demand allocator")
    );
    let pooling = run("--allocator pooling tools");
    assert_eq!(pooling.status.code(), Some(2), "{pooling:?}");
    assert!(String::from_utf8_lossy(&pooling.stderr).contains("could not create the wasm engine"));
    // `call` makes one call, with no pool under `auto`; a pool asked for is
    // still set up (and fails here).
    let one = run("--allocator auto call Read \"$2\"");
    assert!(one.status.success(), "{one:?}");
    assert_eq!(String::from_utf8_lossy(&one.stdout), "1\tfine\n2\t\n");
    assert!(!String::from_utf8_lossy(&one.stderr).contains("pooling allocator unavailable"), "{one:?}");
    let pooled = run("--allocator pooling call Read \"$2\"");
    assert_eq!(pooled.status.code(), Some(2), "{pooled:?}");
}

#[test]
fn unknown_modes_are_rejected_by_the_cli() {
    let sb = Sandbox::new();
    let r = toolhost(&sb, &["--mode", "yolo", "tools"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("unknown permission mode `yolo`"), "{}", r.stderr);
}
