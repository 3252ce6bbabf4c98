//! Session state shared through a store: two processes with data
//! directories of their own (two machines, as far as files go) share a
//! session through a real `redis-server`, and do not without it.

use crate::support::*;
use serde_json::json;
use toolhost_tests::redis::RedisServer;

/// `toolhost call` as a process of another machine: its own data directory.
fn call_on(sb: &Sandbox, machine: &str, tool: &str, input: &serde_json::Value, extra: &[&str]) -> Run {
    let data = sb.root.join(format!("data-{machine}"));
    let input = input.to_string();
    let mut args = vec!["call", tool, input.as_str(), "--json", "--mode", "acceptEdits"];
    args.extend_from_slice(extra);
    run_with(sb, &args, |cmd| {
        cmd.env("TOOLHOST_DATA_DIR", &data);
    })
}

#[test]
fn a_read_on_one_machine_counts_for_an_edit_on_another_through_redis() {
    let server = RedisServer::start();
    let url = server.url(0);
    let sb = Sandbox::new();
    let file = sb.write("notes.txt", "one\n");
    let read = json!({"file_path": p(&file)});
    let edit = |from: &str, to: &str| json!({"file_path": p(&file), "old_string": from, "new_string": to});
    let shared = ["--session", "work", "--state", url.as_str()];
    call_on(&sb, "a", "Read", &read, &shared).assert_ok();
    call_on(&sb, "b", "Edit", &edit("one", "two"), &shared).assert_ok();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "two\n");
    // A change made outside is caught as stale on either machine.
    // (`changed` names two places in it: the edit cannot go on without a new Read.)
    std::fs::write(&file, "changed outside, changed\n").unwrap();
    filetime_bump(&file);
    call_on(&sb, "a", "Edit", &edit("changed", "again"), &shared).assert_error("modified since");
    // The store chosen by the settings: the user's file counts.
    let user = sb.home.join(".config/toolhost/settings.json");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, json!({"stateStore": url}).to_string()).unwrap();
    call_on(&sb, "a", "Read", &read, &["--session", "work2"]).assert_ok();
    call_on(&sb, "b", "Edit", &edit("outside", "inside"), &["--session", "work2"]).assert_ok();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "changed inside, changed\n");
}

#[test]
fn a_background_process_asked_for_on_another_instance_is_named_there() {
    let server = RedisServer::start();
    let url = server.url(0);
    let sb = Sandbox::new();
    let on = |machine: &'static str| ["--session", "bg", "--state", url.as_str(), "--instance", machine];
    // Loaded on one machine, TaskStop is loaded in the session on both.
    call_on(&sb, "a", "ToolSearch", &json!({"query": "select:TaskStop"}), &on("a")).assert_ok();
    let started = call_on(&sb, "a", "Bash", &json!({"command": "sleep 5", "run_in_background": true}), &on("a"));
    let text = started.assert_ok();
    let id = text.split("ID: ").nth(1).and_then(|t| t.split('.').next()).expect("an id").to_string();
    assert!(id.len() == 26 && id.starts_with('b'), "{text}");
    let stop = json!({"task_id": id});
    let elsewhere = call_on(&sb, "b", "TaskStop", &stop, &on("b"));
    let text = elsewhere.assert_error("was started on instance `a`");
    assert!(text.contains("reached instance `b`"), "{text}");
    // An id no instance started is unknown, as before.
    let unknown = json!({"task_id": format!("b{}", "0".repeat(25))});
    let text = call_on(&sb, "b", "TaskStop", &unknown, &on("b")).assert_error("");
    assert!(!text.contains("instance"), "{text}");
}

#[test]
fn without_a_shared_store_the_other_machine_has_not_read_the_file() {
    let sb = Sandbox::new();
    let file = sb.write("notes.txt", "one\n");
    call_on(&sb, "a", "Read", &json!({"file_path": p(&file)}), &["--session", "work"]).assert_ok();
    let edit = json!({"file_path": p(&file), "old_string": "one", "new_string": "two"});
    call_on(&sb, "b", "Edit", &edit, &["--session", "work"]).assert_error("has not been read");
    // On the same machine (its data directory), it has.
    call_on(&sb, "a", "Edit", &edit, &["--session", "work"]).assert_ok();
}

#[test]
fn an_unreachable_store_is_refused_at_start() {
    let server = RedisServer::start();
    let url = format!("redis://127.0.0.1:{}/0", server.port);
    drop(server);
    let sb = Sandbox::new();
    let out = toolhost(&sb, &["--state", &url, "tools"]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("opening the state store") && out.stderr.contains("Redis"), "{out:?}");
}
