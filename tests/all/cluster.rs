//! Several `toolhost serve --http` instances sharing one workspace and a
//! real `redis-server`, as behind a load balancer: a client's requests
//! land on any of them. Each instance has a data directory of its own (a
//! machine of its own, as far as files go). The same flows without the
//! shared store fail, so the tests prove the store is what carries them.

use crate::support::*;
use serde_json::{Value, json};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use toolhost_tests::redis::RedisServer;

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";
const LEGACY: &str = "2025-06-18";
const MODERN: &str = "2026-07-28";

/// One `toolhost serve --http` instance.
struct Instance {
    child: Child,
    url: String,
    name: &'static str,
}

impl Instance {
    /// Instance `name` in `sb`'s workspace, its state in `state` (a Redis
    /// URL) or its own memory, taking alice's and bob's tokens.
    fn start(sb: &Sandbox, name: &'static str, state: Option<&str>, extra: &[&str]) -> Instance {
        let tokens = sb.root.join("tokens");
        std::fs::write(&tokens, format!("# who calls\nalice {ALICE}\nbob {BOB}\n")).unwrap();
        let mut cmd = toolhost_command(sb);
        cmd.env("TOOLHOST_DATA_DIR", sb.root.join(format!("data-{name}")));
        cmd.args(["--instance", name]);
        if let Some(url) = state {
            cmd.args(["--state", url]);
        }
        cmd.args(["serve", "--http", "0", "--token-file"]).arg(&tokens);
        cmd.args(["--allow", "Edit", "--allow", "Bash(sleep:*)"]).args(extra);
        cmd.stdin(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start toolhost serve --http");
        let url = toolhost_tests::serving_url(&mut child, &format!("instance {name}"));
        Instance { child, url, name }
    }

    /// Another path of this server.
    fn path(&self, path: &str) -> String {
        self.url.replace("/mcp", path)
    }

    fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, signal) }, 0);
    }
}

impl AsRef<str> for Instance {
    fn as_ref(&self) -> &str {
        &self.url
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An answer from the MCP endpoint: the status, the response's head, and
/// the JSON-RPC message with a result or an error, if any.
struct Answer {
    status: u16,
    head: String,
    message: Value,
}

impl Answer {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }

    /// A `tools/call` result's text and `isError`.
    #[track_caller]
    fn tool_result(&self) -> (String, bool) {
        assert_eq!(self.status, 200, "{}\n{}", self.head, self.message);
        let result = &self.message["result"];
        assert!(result.is_object(), "no result in the answer (cut short?): {}\n{}", self.head, self.message);
        let text = result["content"].as_array().into_iter().flatten().filter_map(|b| b["text"].as_str());
        (text.collect::<Vec<_>>().join("\n"), result["isError"].as_bool().unwrap_or(false))
    }

    #[track_caller]
    fn ok(&self) -> String {
        let (text, is_error) = self.tool_result();
        assert!(!is_error, "an error: {text}");
        text
    }

    #[track_caller]
    fn error(&self, needle: &str) -> String {
        let (text, is_error) = self.tool_result();
        assert!(is_error && text.contains(needle), "expected an error with {needle:?}: {text}");
        text
    }
}

/// One request to `at`'s MCP endpoint.
fn send(at: &impl AsRef<str>, method: &str, token: &str, headers: &[(&str, &str)], body: &Value) -> Answer {
    let bearer = format!("Bearer {token}");
    let mut all = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", bearer.as_str()),
    ];
    all.extend_from_slice(headers);
    let body = if body.is_null() { String::new() } else { body.to_string() };
    let (status, response) = raw_http(at.as_ref(), method, &all, &body);
    let (head, rest) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    // The message is a line of its own in a JSON body or an event stream
    // (chunked or not).
    let message = rest
        .lines()
        .map(|l| l.strip_prefix("data:").unwrap_or(l).trim())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
        .unwrap_or(Value::Null);
    Answer { status, head: head.to_string(), message }
}

/// A client of a revision with sessions, as a load balancer sees it.
struct Legacy {
    session: String,
    token: &'static str,
    next: u64,
}

impl Legacy {
    /// `initialize` on `at`, then `notifications/initialized` on `then`.
    fn open(at: &Instance, then: &Instance, token: &'static str) -> Legacy {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "cluster-test", "version": "0"}}});
        let answer = send(at, "POST", token, &[], &init);
        assert_eq!(answer.status, 200, "{}", answer.head);
        let session = answer.header("mcp-session-id").expect("a session id");
        let client = Legacy { session, token, next: 2 };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let answer = send(then, "POST", token, &client.headers(), &initialized);
        assert_eq!(answer.status, 202, "{}", answer.head);
        client
    }

    fn headers(&self) -> [(&str, &str); 2] {
        [("Mcp-Session-Id", self.session.as_str()), ("MCP-Protocol-Version", LEGACY)]
    }

    fn call(&mut self, at: &impl AsRef<str>, tool: &str, arguments: Value) -> Answer {
        self.next += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        send(at, "POST", self.token, &self.headers(), &body)
    }
}

/// A 2026-07-28 request: everything in `_meta` and the standard headers.
fn modern(at: &impl AsRef<str>, token: &str, tool: &str, mut params: Value) -> Answer {
    params["name"] = json!(tool);
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "cluster-test", "version": "0"},
    });
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
    let headers = [("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"), ("Mcp-Name", tool)];
    send(at, "POST", token, &headers, &body)
}

fn handle_of(answer: &Answer) -> String {
    let text = answer.ok();
    let at = text.find("session_").expect("a handle");
    text[at..].split('"').next().unwrap().to_string()
}

#[test]
fn a_session_goes_on_at_any_instance_sharing_redis() {
    let redis = RedisServer::start();
    let url = redis.url(0);
    let sb = Sandbox::new();
    let audit = sb.root.join("audit.jsonl");
    let user = sb.home.join(".config/toolhost/settings.json");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, json!({"auditLog": audit}).to_string()).unwrap();
    let file = sb.write("notes.txt", "one\n");
    let [a, b, c] = ["a", "b", "c"].map(|n| Instance::start(&sb, n, Some(&url), &[]));
    let edit = |from: &str, to: &str| json!({"file_path": p(&file), "old_string": from, "new_string": to});

    let mut alice = Legacy::open(&a, &b, ALICE);
    // Read on A, Edit on B.
    alice.call(&a, "Read", json!({"file_path": p(&file)})).ok();
    alice.call(&b, "Edit", edit("one", "two")).ok();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "two\n");
    // A change made outside is caught as stale on C.
    // (`changed` names two places in it: the edit cannot go on without a new Read.)
    std::fs::write(&file, "changed outside, changed\n").unwrap();
    filetime_bump(&file);
    alice.call(&c, "Edit", edit("changed", "again")).error("modified since");
    // Another identity presenting the session is told it does not exist.
    let mut mallory = Legacy { session: alice.session.clone(), token: BOB, next: 10 };
    let refused = mallory.call(&b, "Read", json!({"file_path": p(&file)}));
    assert_eq!(refused.status, 404, "{}", refused.head);

    // A killed outright: the session goes on at B with what A recorded.
    alice.call(&a, "Read", json!({"file_path": p(&file)})).ok();
    a.signal(libc::SIGKILL);
    alice.call(&b, "Edit", edit("outside", "inside")).ok();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "changed inside, changed\n");

    // A background process lives on the instance that started it; another
    // names where it runs.
    let started = alice.call(&b, "Bash", json!({"command": "sleep 30", "run_in_background": true})).ok();
    let id = started.split("ID: ").nth(1).and_then(|t| t.split('.').next()).expect("an id").to_string();
    let elsewhere = alice.call(&c, "TaskStop", json!({"task_id": id}));
    let text = elsewhere.error("was started on instance `b`");
    assert!(text.contains("reached instance `c`"), "{text}");
    alice.call(&b, "TaskStop", json!({"task_id": id})).ok();

    // Deleted on C: gone on every instance, B (which serves it) too.
    let deleted = send(&c, "DELETE", ALICE, &alice.headers(), &Value::Null);
    assert_eq!(deleted.status, 204, "{}", deleted.head);
    for at in [&b, &c] {
        let gone = alice.call(at, "Read", json!({"file_path": p(&file)}));
        assert_eq!(gone.status, 404, "on {}: {}", at.name, gone.head);
    }

    // Who called is in the audit log.
    let lines = std::fs::read_to_string(&audit).unwrap();
    assert!(lines.lines().any(|l| l.contains("\"identity\":\"alice\"") && l.contains("\"tool\":\"Edit\"")), "{lines}");
    // Each instance counts what it ran, for Prometheus.
    let (status, metrics) = raw_http(&b.path("/metrics"), "GET", &[], "");
    assert_eq!(status, 200, "{metrics}");
    assert!(metrics.contains("toolhost_calls_total{tool=\"Edit\",outcome=\"ok\"} 2"), "{metrics}");
    assert!(metrics.contains("toolhost_decisions_total{decision=\"allow\"}"), "{metrics}");
    for path in ["/healthz", "/readyz"] {
        assert_eq!(raw_http(&c.path(path), "GET", &[], "").0, 200, "{path}");
    }
    // The store gone: C is alive but not ready.
    drop(redis);
    let (status, why) = raw_http(&c.path("/readyz"), "GET", &[], "");
    assert_eq!(status, 503, "{why}");
    assert_eq!(raw_http(&c.path("/healthz"), "GET", &[], "").0, 200);
}

#[test]
fn without_a_shared_store_another_instance_does_not_know_the_session() {
    let sb = Sandbox::new();
    let file = sb.write("notes.txt", "one\n");
    let [a, b] = ["a", "b"].map(|n| Instance::start(&sb, n, None, &[]));
    let mut alice = Legacy::open(&a, &a, ALICE);
    alice.call(&a, "Read", json!({"file_path": p(&file)})).ok();
    let elsewhere = alice.call(&b, "Edit", json!({"file_path": p(&file), "old_string": "one", "new_string": "two"}));
    assert_eq!(elsewhere.status, 404, "{}", elsewhere.head);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\n");
    let handle = handle_of(&modern(&a, ALICE, "StartSession", json!({})));
    let read = json!({"arguments": {"file_path": p(&file), "toolhost_session": handle}});
    modern(&b, ALICE, "Read", read).error("Unknown toolhost_session");
}

#[test]
fn a_2026_07_28_client_s_handle_and_approval_work_across_instances() {
    let redis = RedisServer::start();
    let url = redis.url(0);
    let sb = Sandbox::new();
    let file = sb.write("notes.txt", "one\n");
    let [a, b, c] = ["a", "b", "c"].map(|n| Instance::start(&sb, n, Some(&url), &[]));
    let handle = handle_of(&modern(&a, ALICE, "StartSession", json!({})));
    let with = |mut args: Value| {
        args["toolhost_session"] = json!(handle);
        json!({"arguments": args})
    };
    modern(&b, ALICE, "Read", with(json!({"file_path": p(&file)}))).ok();
    modern(&c, ALICE, "Edit", with(json!({"file_path": p(&file), "old_string": "one", "new_string": "two"}))).ok();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "two\n");
    // Bob presenting alice's handle gets what an unknown handle gets.
    let stolen = modern(&b, BOB, "Read", with(json!({"file_path": p(&file)})));
    stolen.error("Unknown toolhost_session");

    // An approval asked on A is answered by a retry that reaches B, once.
    let touch = with(json!({"command": format!("touch {}", p(&sb.workspace.join("made")))}));
    let asked = modern(&a, ALICE, "Bash", touch.clone());
    assert_eq!(asked.message["result"]["resultType"], "input_required", "{}", asked.message);
    let state = asked.message["result"]["requestState"].as_str().expect("requestState").to_string();
    let mut retry = touch.clone();
    retry["requestState"] = json!(state);
    retry["inputResponses"] = json!({"approval": {"action": "accept", "content": {"decision": "allow once"}}});
    // Bob cannot use it up.
    modern(&c, BOB, "Bash", retry.clone()).error("unknown or has expired");
    modern(&b, ALICE, "Bash", retry.clone()).ok();
    assert!(sb.workspace.join("made").exists());
    modern(&c, ALICE, "Bash", retry).error("unknown or has expired");
}

/// The handles one identity may hold.
const MAX_HANDLES: usize = toolhost_mcp::handles::MAX_PER_OWNER;

#[test]
fn an_identity_s_handles_are_capped_across_the_fleet_and_the_front_keeps_to_its_namespace() {
    let redis = RedisServer::start();
    let url = redis.url(0);
    let sb = Sandbox::new();
    let file = sb.write("notes.txt", "one\n");
    let [a, b] = ["a", "b"].map(|n| Instance::start(&sb, n, Some(&url), &[]));
    let bobs = handle_of(&modern(&b, BOB, "StartSession", json!({})));
    // Alice starts more than she may hold, half on each instance.
    let alices: Vec<String> = (0..MAX_HANDLES + 2)
        .map(|i| handle_of(&modern(if i % 2 == 0 { &a } else { &b }, ALICE, "StartSession", json!({}))))
        .collect();
    let read = |at: &Instance, token: &str, handle: &str| {
        modern(at, token, "Read", json!({"arguments": {"file_path": p(&file), "toolhost_session": handle}}))
    };
    // The two she made first are ended for every instance (each was made
    // on one and is looked up on the other too); the rest go on.
    for at in [&a, &b] {
        read(at, ALICE, &alices[0]).error("Unknown toolhost_session");
        read(at, ALICE, &alices[1]).error("Unknown toolhost_session");
        read(at, ALICE, &alices[2]).ok();
        read(at, ALICE, alices.last().unwrap()).ok();
    }
    // Bob's is his own count.
    read(&a, BOB, &bobs).ok();

    // The front's records are under a namespace of their own in Redis,
    // apart from sessions' state; none of them is named like a session.
    let keys = redis_keys(&redis, "toolhost:*");
    let front: Vec<&String> = keys.iter().filter(|k| k.starts_with("toolhost:ns:mcp-front:")).collect();
    let sessions: Vec<&String> = keys.iter().filter(|k| k.starts_with("toolhost:session:")).collect();
    assert_eq!(keys.len(), front.len() + sessions.len(), "{keys:?}");
    assert!(front.iter().any(|k| k.ends_with(alices.last().unwrap().as_str())), "{front:?}");
    assert!(!front.iter().any(|k| k.ends_with(alices[0].as_str())), "an ended handle's record is gone");
    assert!(sessions.iter().all(|k| !k.ends_with(".front")), "{sessions:?}");
}

/// The keys of `redis` matching `pattern`, asked with `redis-cli`.
fn redis_keys(redis: &RedisServer, pattern: &str) -> Vec<String> {
    let out = std::process::Command::new("redis-cli")
        .args(["-u", &redis.url(0), "--scan", "--pattern", pattern])
        .output()
        .expect("redis-cli (installed with redis-server)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

#[test]
fn an_identity_over_its_quota_is_refused_by_every_instance_while_another_is_served() {
    let redis = RedisServer::start();
    let url = redis.url(0);
    let sb = Sandbox::new();
    let file = sb.write("notes.txt", "one\n");
    let audit = sb.root.join("audit.jsonl");
    let settings = json!({"auditLog": p(&audit), "quotas": [
        {"identity": "alice", "callsPerMinute": 4},
        {"identity": "*", "tool": "Bash", "callsInFlight": 1},
    ]})
    .to_string();
    let fleet = ["a", "b", "c"].map(|n| Instance::start(&sb, n, Some(&url), &["--settings", &settings]));
    let read = |at: &Instance, token: &str| modern(at, token, "Read", json!({"arguments": {"file_path": p(&file)}}));
    // Alice's four calls a minute, spread over the fleet; then every
    // instance refuses her, up front, while bob is served.
    for i in 0..4 {
        read(&fleet[i % 3], ALICE).ok();
    }
    for at in &fleet {
        let refused = read(at, ALICE);
        assert_eq!(refused.status, 429, "{}: {}\n{}", at.name, refused.head, refused.message);
        let retry: u64 = refused.header("retry-after").expect("Retry-After").parse().unwrap();
        assert!((1..=60).contains(&retry), "Retry-After: {retry}");
        let error = &refused.message["error"];
        assert_eq!(error["data"]["quota"], "callsPerMinute", "{error}");
        assert_eq!(refused.message["id"], 7);
        let text = error["message"].as_str().unwrap();
        assert!(text.starts_with("Over quota: 4 calls a minute for identity `alice`"), "{text}");
        read(at, BOB).ok();
    }
    // One Bash call of bob's in flight, on a: none more anywhere until it
    // ends.
    let (at_a, bash) = (fleet[0].url.clone(), |command: &str| json!({"arguments": {"command": command}}));
    let slow = std::thread::spawn(move || modern(&at_a, BOB, "Bash", json!({"arguments": {"command": "sleep 3"}})));
    let running = Instant::now();
    while !raw_http(&fleet[0].path("/metrics"), "GET", &[], "").1.contains("toolhost_calls_running 1\n") {
        assert!(running.elapsed() < Duration::from_secs(30), "bob's call never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let refused = modern(&fleet[1], BOB, "Bash", bash("sleep 0"));
    assert_eq!(refused.status, 429, "{}\n{}", refused.head, refused.message);
    assert_eq!(refused.message["error"]["data"]["quota"], "callsInFlight");
    slow.join().unwrap().ok();
    modern(&fleet[2], BOB, "Bash", bash("sleep 0")).ok();

    // Each refusal is counted where it happened, and audited.
    let metrics = raw_http(&fleet[2].path("/metrics"), "GET", &[], "").1;
    assert!(
        metrics.contains("toolhost_quota_refusals_total{quota=\"calls_per_minute\",identity=\"alice\"} 1\n"),
        "{metrics}"
    );
    let refusals: Vec<Value> = audit_lines(&audit).into_iter().filter(|l| l["source"] == "quota").collect();
    let who: Vec<(&str, &str)> =
        refusals.iter().map(|l| (l["identity"].as_str().unwrap(), l["quota"].as_str().unwrap())).collect();
    assert_eq!(who, [("alice", "callsPerMinute"); 3].into_iter().chain([("bob", "callsInFlight")]).collect::<Vec<_>>());
    // The counts are in the shared store, in a namespace of their own.
    assert!(!redis_keys(&redis, "toolhost:ns:quotas:*").is_empty());
}

#[test]
fn sigterm_drains_running_calls_and_cancels_what_outlasts_the_bound() {
    let sb = Sandbox::new();
    let server = Instance::start(&sb, "a", None, &["--drain-timeout", "3"]);
    let mut alice = Legacy::open(&server, &server, ALICE);
    // A call that ends within the drain gets its result.
    let (url, session) = (server.url.clone(), alice.session.clone());
    let short = std::thread::spawn(move || {
        let mut client = Legacy { session, token: ALICE, next: 50 };
        client.call(&url, "Bash", json!({"command": "sleep 1.0731"})).tool_result()
    });
    // It runs; then the server is told to stop.
    wait_running("sleep 1.0731", Duration::from_secs(20));
    let started = Instant::now();
    server.signal(libc::SIGTERM);
    let (text, is_error) = short.join().unwrap();
    assert!(!is_error, "{text}");
    // Not ready while draining; then gone, within the bound.
    let mut server = server;
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "still running after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");

    // A call outlasting the bound is cancelled, and the server exits.
    let server = Instance::start(&sb, "b", None, &["--drain-timeout", "1"]);
    alice = Legacy::open(&server, &server, ALICE);
    let (url, session) = (server.url.clone(), alice.session.clone());
    let long = std::thread::spawn(move || {
        let mut client = Legacy { session, token: ALICE, next: 50 };
        let answer = client.call(&url, "Bash", json!({"command": "sleep 60.0731"}));
        (answer.status, answer.message)
    });
    wait_running("sleep 60.0731", Duration::from_secs(20));
    let started = Instant::now();
    server.signal(libc::SIGTERM);
    let mut server = server;
    while server.child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(8), "still running after the drain bound");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = long.join().unwrap();
}
