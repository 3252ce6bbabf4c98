//! Quick compiles: a large component's first load runs code from the quick
//! engine (Winch) until its optimized compile is done. Every limit holds on
//! that code as on the optimized code, and the switch loses no call.

use crate::support::*;
use serde_json::json;
use std::time::{Duration, Instant};
use toolhost::{CallOptions, Host, ToolUse};
use toolhost_tests::{ADVERSARY, ECHO, Sandbox, with_custom_section};

/// `guest` as bytes no earlier run has seen, so that the shared cache holds
/// no optimized compile of it (which a load would use instead).
fn unseen(guest: &str) -> Vec<u8> {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let tag = format!("{} {nanos}", std::process::id());
    with_custom_section(&std::fs::read(guest).unwrap(), "toolhost-test-unseen", tag.as_bytes())
}

/// Every component counts as large.
const QUICK: [&str; 2] = ["--quick-compile-above", "0"];

/// A library host of `sb` compiling every plugin quick first.
fn quick_host(sb: &Sandbox) -> Host {
    crate::support::host_builder(sb)
        .plugins_dir(Some(sb.plugins.clone()))
        .quick_compile_above(Some(0))
        .build()
        .expect("host")
}

/// An option on the command line wins over its environment variable,
/// before the command's name as after it (both places read the variable).
#[test]
fn an_option_on_the_command_line_wins_over_its_environment_variable() {
    let sb = Sandbox::new();
    let file = p(&sb.plugins.join("echo.wasm"));
    std::fs::write(&file, unseen(ECHO)).unwrap();
    let check = |args: &[&str], variable: &str| {
        let variable = variable.to_string();
        let out = run_with(&sb, args, |cmd| {
            cmd.env("TOOLHOST_QUICK_COMPILE_ABOVE", variable);
        });
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        out.stdout.lines().find(|l| l.trim_start().starts_with("compiled:")).map(str::to_string).unwrap_or_default()
    };
    let quick = |line: &str| line.contains("quick (Winch)");
    // Quick while no optimized compile of it is cached: those first.
    assert!(quick(&check(&["--quick-compile-above", "0", "check", &file], "off")), "before the name");
    assert!(quick(&check(&["check", "--quick-compile-above", "0", &file], "off")), "after the name");
    assert!(quick(&check(&["check", &file], "0")), "the variable alone");
    assert!(!quick(&check(&["--quick-compile-above", "off", "check", &file], "0")), "before the name");
    assert!(!quick(&check(&["check", &file], "off")), "the variable alone");
}

#[test]
fn every_limit_holds_on_quick_code() {
    let sb = Sandbox::new();
    let file = p(&sb.plugins.join("adversary.wasm"));
    std::fs::write(&file, unseen(ADVERSARY)).unwrap();
    let check = |above: &str| toolhost(&sb, &["--quick-compile-above", above, "check", &file]);
    let checked = check("0");
    assert!(checked.stdout.contains("compiled:      quick (Winch)"), "{}", checked.stdout);
    let with = |more: &[&'static str]| -> Vec<&'static str> { QUICK.iter().chain(more).copied().collect() };
    let adversary = |action: serde_json::Value, more: &[&'static str]| call(&sb, "Adversary", &action, &with(more));

    let text = adversary(json!({"action": "panic"}), &[]).assert_error("Adversary crashed");
    assert!(text.contains("adversary panicked on purpose"), "{text}");
    adversary(json!({"action": "trap"}), &[]).assert_error("Adversary crashed");
    adversary(json!({"action": "stack"}), &[]).assert_error("Adversary crashed");
    adversary(json!({"action": "alloc"}), &["--memory-mib", "64"])
        .assert_error("Adversary exceeded its memory limit of 64 MiB");
    adversary(json!({"action": "env"}), &[]).assert_ok();

    // Spinning in wasm and waiting in a host call, in every export a call
    // goes through: stopped at the deadline.
    crate::limits::every_wait_is_stopped(&sb, &QUICK);
    // A one-shot command leaves it quick (it would not live to use the
    // optimized compile).
    let checked = check("0");
    assert!(checked.stdout.contains("compiled:      quick (Winch)"), "{}", checked.stdout);
    // Turned off, the first load compiles optimized.
    let checked = check("off");
    assert!(checked.code == 0 && !checked.stdout.contains("compiled:"), "{}", checked.stdout);
}

/// A long-running host compiles a quick tool optimized in the background and
/// swaps it in; calls made all along are answered, by one code or the other.
#[test]
fn a_quick_tool_is_promoted_while_calls_go_on() {
    let sb = Sandbox::new();
    std::fs::write(sb.plugins.join("echo.wasm"), unseen(ECHO)).unwrap();
    let host = quick_host(&sb);
    let mut changes = host.tools_changed();
    let session = host.ephemeral_session();
    let echo = |n: usize| {
        let tool_use =
            ToolUse { id: format!("toolu_{n}"), name: "Echo".into(), input: json!({"text": format!("{n}")}) };
        host.call(&session, &tool_use, &CallOptions::default())
    };
    assert!(host.tool("Echo").expect("Echo loaded").quick(), "loaded quick");
    assert!(host.tool("Read").is_some_and(|t| !t.quick()), "a built-in never is");
    let until = Instant::now() + Duration::from_secs(180);
    let mut calls = 0;
    while host.tool("Echo").unwrap().quick() {
        assert!(Instant::now() < until, "not promoted within 180 s ({calls} calls made)");
        let r = echo(calls);
        assert!(!r.is_error && r.text() == calls.to_string(), "call {calls}: {}", r.text());
        calls += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    for n in calls..calls + 20 {
        let r = echo(n);
        assert!(!r.is_error && r.text() == n.to_string(), "call {n} after the swap: {}", r.text());
    }
    // The tools offered did not change: no reload is announced.
    assert!(changes.try_recv().is_err(), "a reload was announced");
    assert!(host.problems().is_empty(), "{:?}", host.problems());

    // The next host finds the optimized compile in the cache.
    drop(host);
    let again = quick_host(&sb);
    assert!(!again.tool("Echo").unwrap().quick());
}
