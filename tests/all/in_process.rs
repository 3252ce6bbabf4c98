//! The library API: one host serving many calls, whatever the tools do.

use crate::support::{host_builder, tool_use};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use toolhost::{CallOptions, Host};
use toolhost_tests::{ADVERSARY, DECLARED, ECHO, Sandbox, WARM};

fn host(sb: &Sandbox, configure: impl FnOnce(toolhost::HostBuilder) -> toolhost::HostBuilder) -> Host {
    sb.install(ADVERSARY);
    sb.install(ECHO);
    let builder = host_builder(sb).plugins_dir(Some(sb.plugins.clone()));
    let host = configure(builder).build().expect("host");
    assert!(host.problems().is_empty(), "{:?}", host.problems());
    host
}

/// A cancellation flag, and the thread that sets it after `delay`.
fn cancelled_after(delay: Duration) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(delay);
        flag.store(true, Ordering::Relaxed);
    });
    (cancel, canceller)
}

#[test]
fn one_host_keeps_serving_after_every_misbehaviour() {
    let sb = Sandbox::new();
    let host = host(&sb, |b| b.timeout(Duration::from_millis(400)).memory_limit(64 << 20));
    let session = host.ephemeral_session();
    let actions =
        ["panic", "trap", "stack", "loop", "alloc", "bad-json", "bad-structured", "bad-image", "invalid", "nonsense"];
    for action in actions {
        let r = host.call(&session, &tool_use("Adversary", json!({"action": action})), &CallOptions::default());
        assert!(r.is_error, "{action}: {r:?}");
        assert_eq!(r.tool_use_id, "toolu_Adversary");
        let ok = host.call(&session, &tool_use("Echo", json!({"text": "alive"})), &CallOptions::default());
        assert_eq!((ok.is_error, ok.text()), (false, "alive".to_string()), "after {action}");
    }
}

#[test]
fn every_builtin_schema_compiles_and_is_enforced() {
    let sb = Sandbox::new();
    let host = host(&sb, |b| b);
    let session = host.ephemeral_session();
    let deferred = host.deferred_tools();
    let select = json!({"query": format!("select:{}", deferred.join(","))});
    assert!(!host.call(&session, &tool_use("ToolSearch", select), &CallOptions::default()).is_error);
    for tool in host.pool().iter().filter(|t| *t.origin() == toolhost::Origin::Builtin) {
        let r = host.call(&session, &tool_use(&tool.spec().name, json!({})), &CallOptions::default());
        assert!(r.is_error, "{}: {r:?}", tool.spec().name);
        // TaskStop requires no field (either of two ids does); its own
        // validation refuses an empty input.
        let requires = tool.spec().input_schema["required"].as_array().is_some_and(|r| !r.is_empty());
        let refused = match requires {
            true => r.text().contains("InputValidationError") && r.text().contains("is missing"),
            false => r.text().starts_with("<tool_use_error>"),
        };
        assert!(refused, "{}: {}", tool.spec().name, r.text());
    }
}

#[test]
fn cancellation_stops_a_spinning_guest() {
    let sb = Sandbox::new();
    let host = host(&sb, |b| b.timeout(Duration::from_secs(60)).mode(toolhost::PermissionMode::BypassPermissions));
    let session = host.ephemeral_session();
    let (cancel, canceller) = cancelled_after(Duration::from_millis(200));
    let started = Instant::now();
    let options = CallOptions { cancel: Some(cancel), ..CallOptions::default() };
    let r = host.call(&session, &tool_use("Adversary", json!({"action": "loop"})), &options);
    canceller.join().unwrap();
    assert!(r.is_error && r.text().contains("Adversary was cancelled"), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "stopped promptly: {:?}", started.elapsed());
}

#[test]
fn many_threads_share_one_host_through_a_small_pool() {
    let sb = Sandbox::new();
    let host = host(&sb, |b| b.max_instances(2));
    let session = host.ephemeral_session();
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let (host, session) = (host.clone(), Arc::clone(&session));
            std::thread::spawn(move || {
                for i in 0..40 {
                    let text = format!("{t}-{i}");
                    let r = host.call(&session, &tool_use("Echo", json!({"text": text})), &CallOptions::default());
                    assert_eq!((r.is_error, r.text()), (false, text));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn progress_goes_to_the_sink() {
    let sb = Sandbox::new();
    let host = host(&sb, |b| b);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let options = CallOptions {
        progress: Some(Arc::new(move |p: toolhost::Progress| sink.lock().unwrap().push((p.tool_use_id, p.message)))),
        ..CallOptions::default()
    };
    let r = host.call(&host.ephemeral_session(), &tool_use("Echo", json!({"text": "x", "progress": 2})), &options);
    assert!(!r.is_error);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [("toolu_Echo".to_string(), "step 0".to_string()), ("toolu_Echo".to_string(), "step 1".to_string())]
    );
}

#[test]
fn a_declared_classification_is_used_without_asking_the_tool() {
    let sb = Sandbox::new();
    sb.install(DECLARED);
    let host = host(&sb, |b| b);
    // Its is-concurrency-safe export traps: asked, the answer would be false.
    assert!(host.is_concurrency_safe(&tool_use("Declared", json!({"text": "x"}))));
    let session = host.ephemeral_session();
    assert!(host.is_concurrency_safe_in(&session, &tool_use("Declared", json!({"text": "x"}))));
    // Input that fails the schema is still not concurrency-safe.
    assert!(!host.is_concurrency_safe(&tool_use("Declared", json!({"text": 1}))));
    // The adversary declares nothing: asked, it answers false.
    assert!(!host.is_concurrency_safe(&tool_use("Adversary", json!({"action": "ok"}))));
}

#[test]
fn a_reuse_instance_tool_keeps_its_warm_instance() {
    let sb = Sandbox::new();
    sb.install(WARM);
    let host = host(&sb, |b| b.quick_compile_above(None));
    let session = host.ephemeral_session();
    let served = |text: &str| host.call(&session, &tool_use("Warm", json!({"text": text})), &CallOptions::default());
    assert_eq!(served("a").text(), "served 1");
    assert_eq!(served("b").text(), "served 2");
    // A refusal in validate-input is no fault: the instance stays.
    assert!(served("refuse").is_error);
    assert_eq!(served("c").text(), "served 3");
}

#[test]
fn the_library_runs_scripts_and_cancels_them_with_their_calls() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let host = host(&sb, |b| b.code_mode(true).mode(toolhost::PermissionMode::BypassPermissions));
    let session = host.ephemeral_session();
    let code = format!("(await tools.Read({{ file_path: {} }})).includes('alpha')", json!(sb.ws("a.txt")));
    let r = host.call(&session, &tool_use("Script", json!({ "code": code })), &CallOptions::default());
    assert_eq!((r.is_error, r.text()), (false, "true".to_string()), "{r:?}");
    // Cancelling the Script call stops the program and the calls it waits on.
    let (cancel, canceller) = cancelled_after(Duration::from_millis(300));
    let started = Instant::now();
    let code = "await Promise.all([tools.Adversary({ action: 'loop' }), tools.Adversary({ action: 'loop' })])";
    let options = CallOptions { cancel: Some(cancel), ..CallOptions::default() };
    let r = host.call(&session, &tool_use("Script", json!({ "code": code })), &options);
    canceller.join().unwrap();
    assert!(r.is_error && r.text().contains("Script was cancelled"), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "stopped promptly: {:?}", started.elapsed());
    // The host goes on.
    let r = host.call(&session, &tool_use("Echo", json!({"text": "after"})), &CallOptions::default());
    assert_eq!(r.text(), "after");
}
