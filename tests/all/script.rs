//! Code mode: the Script built-in runs a model's JavaScript program in its
//! component, and every tool call the program makes goes through the whole
//! pipeline (schema, rules and mode, audit, limits), over every front.

use crate::support::*;
use serde_json::{Value, json};
use toolhost_tests::{ECHO, SLEEPER};

const ON: &str = "--code-mode";

fn script(sb: &Sandbox, code: &str, extra: &[&str]) -> Run {
    let mut args = vec![ON];
    args.extend_from_slice(extra);
    call(sb, "Script", &json!({ "code": code }), &args)
}

/// A workspace with five notes, two of which mention a deadline.
fn notes(sb: &Sandbox) {
    sb.write("notes/a.md", "# A\ndeadline: friday\nmore\n");
    sb.write("notes/b.md", "# B\nnothing here\n");
    sb.write("notes/c.md", "# C\nno deadline yet\n");
    sb.write("notes/d.txt", "deadline in a text file\n");
    sb.write("notes/e.md", "# E\n");
}

#[test]
fn script_is_offered_only_in_code_mode_with_the_tools_declared() {
    let sb = Sandbox::new();
    sb.install(ECHO);
    let names = |r: Run| -> Vec<String> {
        let list: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
        list.iter().map(|t| t["name"].as_str().unwrap_or_default().to_string()).collect()
    };
    assert!(!names(toolhost(&sb, &["tools", "--json"])).contains(&"Script".to_string()));
    let refused = call(&sb, "Script", &json!({"code": "1"}), &[]);
    refused.assert_error("No such tool available: Script");

    for enable in [vec![ON], vec!["--settings", r#"{"codeMode": true}"#]] {
        let mut args = enable.clone();
        args.extend(["tools", "--json"]);
        let r = toolhost(&sb, &args);
        let list: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
        let script = list.iter().find(|t| t["name"] == "Script").unwrap_or_else(|| panic!("{}", r.stdout));
        assert_eq!(script["input_schema"]["required"], json!(["code"]));
        let prompt = script["description"].as_str().unwrap();
        for needle in ["declare const tools: {", "  Read(input: {", "    file_path: string;", "  Echo(input: {"] {
            assert!(prompt.contains(needle), "{needle:?} not in:\n{prompt}");
        }
        assert!(!prompt.contains("  Script(input"), "a script cannot call itself:\n{prompt}");
        // NotebookEdit and TaskStop are deferred: named, not declared.
        assert!(prompt.contains("Deferred tools") && prompt.contains("NotebookEdit"), "{prompt}");
        assert!(!prompt.contains("  NotebookEdit(input"), "{prompt}");
    }
    // A deny rule that removes a tool removes it from the declarations.
    let r = toolhost(&sb, &[ON, "--deny", "Echo", "tools", "--json"]);
    assert!(!r.stdout.contains("Echo(input"), "{}", r.stdout);
    // The environment variable takes the words people write for yes and no.
    for (value, on) in [("1", true), ("yes", true), ("true", true), ("on", true), ("0", false), ("no", false)] {
        let r = run_with(&sb, &["tools", "--json"], |c| {
            c.env("TOOLHOST_CODE_MODE", value);
        });
        assert_eq!(r.code, 0, "TOOLHOST_CODE_MODE={value}: {r:?}");
        assert_eq!(names(r).contains(&"Script".to_string()), on, "TOOLHOST_CODE_MODE={value}");
    }
}

#[test]
fn a_script_finds_reads_and_filters_in_one_call() {
    let sb = Sandbox::new();
    notes(&sb);
    let code = r#"
        const found = await tools.Glob({ pattern: "notes/*.md" });
        const files = found.split("\n").filter((l) => l.endsWith(".md")).sort();
        const texts = await Promise.all(files.map((f) => tools.Read({ file_path: f.startsWith("/") ? f : WS + "/" + f })));
        const hits = files.filter((f, i) => /deadline/.test(texts[i]));
        console.log(`read ${files.length} files`);
        hits.map((f) => f.split("/").pop())
    "#
    .replace("WS", &serde_json::to_string(&p(&sb.workspace)).unwrap());
    let r = script(&sb, &code, &[]);
    let text = r.assert_ok();
    assert!(text.starts_with("[\n  \"a.md\",\n  \"c.md\"\n]"), "{text}");
    assert!(text.ends_with("Console output:\nread 4 files"), "{text}");
    let structured = &r.json()["structured_content"];
    assert!(structured.is_null() || structured["result"] == json!(["a.md", "c.md"]), "{structured}");
}

#[test]
fn tool_errors_are_exceptions_the_script_can_catch() {
    let sb = Sandbox::new();
    sb.write("secret.txt", "the secret\n");
    sb.write("open.txt", "open\n");
    let outside = tempfile::tempdir().unwrap();
    let elsewhere = outside.path().join("x.txt");
    std::fs::write(&elsewhere, "outside\n").unwrap();
    let code = format!(
        r#"
        const tryRead = async (file_path) => {{
            try {{ return (await tools.Read({{ file_path }})).includes("open") ? "read" : "other" }}
            catch (e) {{ return e.name + ": " + e.message.split("\n")[0] }}
        }};
        const out = {{}};
        for (const f of [{open}, {secret}, {elsewhere}]) out[f.split("/").pop()] = await tryRead(f);
        try {{ await tools.NoSuchTool({{}}) }} catch (e) {{ out.unknown = e.message }}
        try {{ await tools.Read({{ wrong: 1 }}) }} catch (e) {{ out.schema = e.message }}
        out
        "#,
        open = serde_json::to_string(&p(&sb.ws("open.txt"))).unwrap(),
        secret = serde_json::to_string(&p(&sb.ws("secret.txt"))).unwrap(),
        elsewhere = serde_json::to_string(&p(&elsewhere)).unwrap(),
    );
    let r = script(&sb, &code, &["--deny", "Read(./secret.txt)"]);
    let out: Value = serde_json::from_str(&r.assert_ok()).unwrap();
    assert_eq!(out["open.txt"], "read", "{out}");
    let secret = out["secret.txt"].as_str().unwrap();
    assert!(secret.starts_with("ToolError: ") && secret.contains("deny"), "{secret}");
    let elsewhere = out["x.txt"].as_str().unwrap();
    assert!(elsewhere.contains("outside the working directories"), "{elsewhere}");
    assert!(out["unknown"].as_str().unwrap().contains("No such tool available: NoSuchTool"), "{out}");
    assert!(out["schema"].as_str().unwrap().contains("InputValidationError"), "{out}");
    // An exception the script does not catch fails the call, saying so.
    let r = script(
        &sb,
        &format!("await tools.Read({{ file_path: {} }})", json!(p(&sb.ws("secret.txt")))),
        &["--deny", "Read(./secret.txt)"],
    );
    r.assert_error("The script threw ToolError");
}

#[test]
fn inner_calls_are_decided_by_the_mode_and_audited_under_the_script() {
    let sb = Sandbox::new();
    let log = sb.root.join("audit.jsonl");
    let settings = json!({"auditLog": log}).to_string();
    let target = sb.ws("made.txt");
    let code = format!("await tools.Write({{ file_path: {}, content: 'made by a script\\n' }})", json!(p(&target)));
    // Writing asks in the default mode; with no one to ask, it is refused.
    let r = call(&sb, "Script", &json!({"code": code}), &[ON, "--settings", &settings, "--id", "toolu_script"]);
    r.assert_error("The script threw ToolError");
    assert!(!target.exists());
    // acceptEdits allows it.
    let r = call(
        &sb,
        "Script",
        &json!({"code": code}),
        &[ON, "--settings", &settings, "--mode", "acceptEdits", "--id", "toolu_script2"],
    );
    r.assert_ok();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "made by a script\n");
    let lines: Vec<Value> = audit_lines(&log).into_iter().filter(|v| v["event"] == "decision").collect();
    let inner: Vec<&Value> = lines.iter().filter(|l| l["tool"] == "Write").collect();
    assert_eq!(inner.len(), 2, "{lines:?}");
    assert_eq!(inner[0]["parent_tool_use_id"], "toolu_script", "{lines:?}");
    assert_eq!(inner[0]["tool_use_id"], "toolu_script/1", "{lines:?}");
    assert_ne!(inner[0]["decision"], "allow", "{lines:?}");
    assert_eq!(inner[1]["parent_tool_use_id"], "toolu_script2", "{lines:?}");
    assert_eq!(inner[1]["decision"], "allow", "{lines:?}");
    assert!(lines.iter().any(|l| l["tool"] == "Script" && l["tool_use_id"] == "toolu_script"), "{lines:?}");
}

#[test]
fn concurrency_safe_calls_started_together_run_together() {
    let sb = Sandbox::new();
    sb.install(SLEEPER);
    let code = r#"
        const [safe1, safe2] = await Promise.all([
            tools.Sleeper({ label: "s1", ms: 400, safe: true }),
            tools.Sleeper({ label: "s2", ms: 400, safe: true }),
        ]);
        const [u1, u2] = await Promise.all([
            tools.Sleeper({ label: "u1", ms: 200 }),
            tools.Sleeper({ label: "u2", ms: 200 }),
        ]);
        [safe1, safe2, u1, u2].map(JSON.parse)
    "#;
    // The calls that are not read-only need approval, like direct calls.
    let r = script(&sb, code, &["--allow", "Sleeper"]);
    let runs: Vec<Value> = serde_json::from_str(&r.assert_ok()).unwrap();
    let span = |i: usize| (runs[i]["start_us"].as_f64().unwrap(), runs[i]["end_us"].as_f64().unwrap());
    let overlap = |a: (f64, f64), b: (f64, f64)| a.0 < b.1 && b.0 < a.1;
    assert!(overlap(span(0), span(1)), "two concurrency-safe calls ran one after the other: {runs:?}");
    assert!(!overlap(span(2), span(3)), "two calls that are not concurrency-safe overlapped: {runs:?}");
}

#[test]
fn a_script_is_stopped_at_every_limit_and_the_host_goes_on() {
    let sb = Sandbox::new();
    sb.install(ECHO);
    sb.install(SLEEPER);
    let calls: Vec<(&str, &str, Value)> = vec![
        ("spin", "while (true) {}", json!("timed out")),
        (
            "allocate",
            "const s = 'x'.repeat(1 << 22); const keep = []; while (true) keep.push(s + keep.length);",
            json!("memory limit"),
        ),
        ("recurse", "function f(n) { return f(n + 1) + 1 } f(0)", json!("The script stopped")),
        // Each call within its own limit; the script's runs out while it waits.
        (
            "wait",
            "for (;;) await tools.Sleeper({ label: 'one', ms: 900, safe: true })",
            json!("Script timed out after 4000 ms"),
        ),
        ("never", "await new Promise(() => {})", json!("nothing will settle")),
        ("itself", "await tools.Script({ code: '1' })", json!("cannot call Script")),
        ("flood", "for (let i = 0; i < 1e4; i++) console.log('x'.repeat(100)); 'flooded'", json!("console output cut")),
        ("big", "'y'.repeat(3 * 1024 * 1024)", json!("a script may return at most")),
        ("after", "(await tools.Echo({ text: 'still here' }))", json!("still here")),
    ];
    let lines: Vec<Value> = calls
        .iter()
        .map(|(id, code, _)| json!({"type": "tool_use", "id": id, "name": "Script", "input": {"code": code}}))
        .collect();
    let out = run_stream(&sb, &[ON, "--timeout-ms", "4000", "--memory-mib", "64"], &lines);
    let results: Vec<&Value> = out.iter().filter(|l| l["type"] == "tool_result").collect();
    assert_eq!(results.len(), calls.len(), "{out:?}");
    for (id, _, expected) in &calls {
        let result = results.iter().find(|r| r["tool_use_id"] == *id).unwrap_or_else(|| panic!("no result for {id}"));
        let text = content_text(result);
        let needles: Vec<&str> = match expected {
            Value::Array(all) => all.iter().filter_map(Value::as_str).collect(),
            one => vec![one.as_str().unwrap()],
        };
        for needle in needles {
            assert!(text.contains(needle), "{id}: {needle:?} not in {text}");
        }
        let should_fail = !matches!(*id, "flood" | "after");
        assert_eq!(result["is_error"] == true, should_fail, "{id}: {result}");
    }
    // Calls in a tight loop meet the budget of calls (with the default time
    // limit, so a slow machine does not meet that first).
    let budget =
        "let n = 0; try { for (;;) { await tools.Echo({ text: 'x' }); n++ } } catch (e) { return [n, e.message] }";
    let r = script(&sb, budget, &[]);
    let out: Value = serde_json::from_str(&r.assert_ok()).unwrap();
    assert_eq!(out[0].as_f64(), Some(1000.0), "{out}");
    assert!(out[1].as_str().unwrap().contains("already started 1000 tool calls"), "{out}");
}

#[test]
fn an_interrupt_stops_the_script_and_its_calls() {
    use std::io::{BufRead as _, Write as _};
    let sb = Sandbox::new();
    sb.install(SLEEPER);
    let _ = toolhost(&sb, &["tools"]);
    let mut child = spawn_piped(&sb, &[ON, "run"]);
    let mut stdin = child.stdin.take().unwrap();
    let code = "await Promise.all([1, 2, 3].map((i) => tools.Sleeper({ label: 'l' + i, ms: 30000, progress_ms: 50, safe: true })))";
    let started = std::time::Instant::now();
    writeln!(stdin, "{}", json!({"type": "tool_use", "id": "s", "name": "Script", "input": {"code": code}})).unwrap();
    stdin.flush().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines().map_while(Result::ok);
    // Once the calls run (their progress comes out), interrupt.
    for line in lines.by_ref() {
        if line.contains("Sleeper: l") {
            break;
        }
    }
    writeln!(stdin, "{}", json!({"type": "interrupt"})).unwrap();
    drop(stdin);
    let result: Value = lines
        .map(|l| serde_json::from_str::<Value>(&l).unwrap())
        .find(|v| v["type"] == "tool_result")
        .expect("a result");
    assert_eq!(result["is_error"], true, "{result}");
    assert!(content_text(&result).contains("cancelled") || content_text(&result).contains("Interrupted"), "{result}");
    assert!(child.wait().unwrap().success());
    // The three 30-second calls were stopped with it.
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
}

#[test]
fn inner_progress_streams_out() {
    let sb = Sandbox::new();
    sb.install(SLEEPER);
    let code = "await tools.Sleeper({ label: 'p', ms: 300, progress_ms: 50, safe: true }); 'ok'";
    let out =
        run_stream(&sb, &[ON], &[json!({"type": "tool_use", "id": "s", "name": "Script", "input": {"code": code}})]);
    let progress: Vec<&Value> = out.iter().filter(|l| l["type"] == "progress").collect();
    assert!(
        progress
            .iter()
            .any(|p| p["tool_use_id"] == "s" && p["message"].as_str().unwrap_or("").starts_with("Sleeper: p at")),
        "{out:?}"
    );
    assert!(out.iter().any(|l| l["type"] == "tool_result" && content_text(l) == "ok"), "{out:?}");
}

#[test]
fn scripts_run_over_mcp() {
    let sb = Sandbox::new();
    notes(&sb);
    with_served_args(&sb, &[ON], |client, _| async move {
        let tools = client.list_all_tools().await.expect("tools/list");
        let script = tools.iter().find(|t| t.name == "Script").expect("Script listed");
        let prompt = script.description.as_deref().unwrap_or("");
        assert!(prompt.contains("Grep(input: {"), "{prompt}");
        // Over MCP every tool is listed in full and callable at once: the
        // deferred ones are declared too.
        assert!(prompt.contains("NotebookEdit(input: {") && !prompt.contains("Deferred tools"), "{prompt}");
        let code = "const t = await tools.Grep({ pattern: 'deadline', output_mode: 'count' }); t.split('\\n')[0]";
        let r = client.call_tool(mcp_call("Script", json!({"code": code}))).await.expect("call");
        assert_ne!(r.is_error, Some(true), "{r:?}");
        assert!(mcp_text(&r).contains(':'), "{r:?}");
        client
    });
}

#[test]
fn a_third_party_component_cannot_import_the_script_capability() {
    // Its interface is linked for the built-in only: a component importing
    // it is refused at load, naming why.
    let sb = Sandbox::new();
    let script = toolhost_tests::repo_root().join("target/wasm/wasm32-wasip2/plugin/toolhost_plugin_script.wasm");
    let copy = sb.plugins.join("script-copy.wasm");
    std::fs::copy(&script, &copy).expect("the built Script component");
    let r = toolhost(&sb, &["check", copy.to_str().unwrap()]);
    assert_ne!(r.code, 0, "{r:?}");
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(all.contains("toolhost:script/tools") && all.contains("no other component is given it"), "{all}");
}

#[test]
fn hooks_see_and_decide_the_calls_a_script_makes() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let hook = sb.home.join("deny-read.sh");
    // The hook sees each inner call's input; it denies Reads of a.txt.
    std::fs::write(
        &hook,
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *a.txt*) echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"no a.txt today\"}}';; esac\n",
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let hooks =
        json!({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": p(&hook)}]}]}});
    sb.write(".toolhost/settings.json", hooks.to_string());
    assert_eq!(toolhost(&sb, &["trust"]).code, 0);
    let code = format!(
        "try {{ await tools.Read({{ file_path: {} }}); return 'read' }} catch (e) {{ return e.message }}",
        json!(p(&sb.ws("a.txt")))
    );
    let text = script(&sb, &code, &[]).assert_ok();
    assert!(text.contains("no a.txt today"), "{text}");
}

#[test]
fn a_deferred_tool_is_declared_once_toolsearch_loads_it() {
    let sb = Sandbox::new();
    sb.install(ECHO);
    let call_echo = "try { return await tools.Echo({ text: 'hi' }) } catch (e) { return 'refused: ' + e.message }";
    let lines = [
        json!({"type": "tool_use", "id": "before", "name": "Script", "input": {"code": call_echo}}),
        json!({"type": "tool_use", "id": "load", "name": "ToolSearch", "input": {"query": "select:Echo"}}),
        json!({"type": "tool_use", "id": "after", "name": "Script", "input": {"code": call_echo}}),
    ];
    let out = run_stream(&sb, &[ON, "--settings", r#"{"deferToolsAfter": 0}"#], &lines);
    let text = |id: &str| {
        let r = out.iter().find(|l| l["type"] == "tool_result" && l["tool_use_id"] == id).expect("a result");
        content_text(r)
    };
    assert!(text("before").starts_with("refused: ") && text("before").contains("deferred"), "{}", text("before"));
    let loaded = text("load");
    assert!(loaded.contains("In Script programs") && loaded.contains("Echo(input: {"), "{loaded}");
    assert_eq!(text("after"), "hi");
    // The Script prompt names it among the deferred tools, without declaring it.
    let r = toolhost(&sb, &[ON, "--settings", r#"{"deferToolsAfter": 0}"#, "tools", "--json"]);
    let list: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
    let prompt = list.iter().find(|t| t["name"] == "Script").unwrap()["description"].as_str().unwrap().to_string();
    assert!(
        prompt.contains("Deferred tools") && prompt.contains("Echo") && !prompt.contains("  Echo(input"),
        "{prompt}"
    );
}

/// An MCP client that answers toolhost's approval forms: it allows what
/// names `allowed.txt` and denies the rest, keeping each question.
#[derive(Clone, Default)]
struct Approving {
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for Approving {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::ClientConfig::default();
        let mut elicitation = rmcp::model::ElicitationCapability::default();
        elicitation.form = Some(Default::default());
        info.capabilities.elicitation = Some(elicitation);
        info
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let message = match &request {
            rmcp::model::ElicitRequestParams::FormElicitationParams { message, .. } => message.clone(),
            _ => String::new(),
        };
        self.asked.lock().unwrap().push(message.clone());
        let decision = if message.contains("allowed.txt") { "allow once" } else { "deny" };
        Ok(rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
            .with_content(json!({"decision": decision, "reason": "not that file"})))
    }
}

#[test]
fn an_inner_call_that_asks_asks_the_mcp_client() {
    use rmcp::ServiceExt as _;
    let sb = Sandbox::new();
    let (allowed, other) = (sb.ws("allowed.txt"), sb.ws("other.txt"));
    let code = format!(
        r#"
        const write = async (file_path) => {{
            try {{ await tools.Write({{ file_path, content: "x\n" }}); return "written" }}
            catch (e) {{ return e.message }}
        }};
        [await write({}), await write({})]
        "#,
        json!(p(&allowed)),
        json!(p(&other))
    );
    let handler = Approving::default();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let outcome: Vec<String> = runtime.block_on(async {
        let mut cmd = tokio::process::Command::from(toolhost_command(&sb));
        cmd.args([ON, "serve"]);
        let transport = rmcp::transport::TokioChildProcess::new(cmd).expect("spawn toolhost serve");
        let client = handler.clone().serve(transport).await.expect("initialize");
        let r = client.call_tool(mcp_call("Script", json!({ "code": code }))).await.expect("call");
        assert_ne!(r.is_error, Some(true), "{r:?}");
        client.cancel().await.expect("close");
        serde_json::from_str(&mcp_text(&r)).expect("a JSON array")
    });
    assert_eq!(outcome[0], "written", "{outcome:?}");
    assert!(outcome[1].contains("not that file"), "{outcome:?}");
    assert!(allowed.exists() && !other.exists());
    let asked = handler.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked.iter().all(|q| q.contains("Write")), "{asked:?}");
}
