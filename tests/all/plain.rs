//! Components that know nothing of toolhost: each exported function is a
//! tool, with a schema from its WIT types, under the same grants, limits
//! and pipeline as any third-party tool (`tests/guests/plain`,
//! `tests/guests/plain-adversary`, built by wit-bindgen from plain worlds).

use crate::support::*;
use serde_json::{Value, json};
use toolhost_tests::{PLAIN, PLAIN_ADVERSARY, PLAIN_ASYNC};

fn bypass(sb: &Sandbox, name: &str, input: Value, extra: &[&str]) -> Run {
    let mut args = vec!["--mode", "bypassPermissions"];
    args.extend(extra);
    call(sb, name, &input, &args)
}

fn definitions(sb: &Sandbox) -> Vec<Value> {
    let r = toolhost(sb, &["tools", "--json"]);
    assert_eq!(r.code, 0, "{r:?}");
    serde_json::from_str::<Vec<Value>>(&r.stdout).unwrap()
}

fn schema_of<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    &tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("no tool {name}"))["input_schema"]
}

#[test]
fn each_exported_function_is_a_tool_named_by_the_rule() {
    let sb = Sandbox::new();
    sb.install(PLAIN);
    let tools = definitions(&sb);
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| n.chars().next().is_some_and(|c| c.is_lowercase()))
        .collect();
    let mut expected = vec![
        "area",
        "describe",
        "echo-bytes",
        "env",
        "fail",
        "fail-bare",
        "first-char",
        "geometry_area",
        "greet",
        "halves",
        "list-dir",
        "midpoint",
        "nan",
        "nothing",
        "read-file",
        "version",
        "widths",
    ];
    expected.sort();
    assert_eq!(names, expected, "the world's `area` keeps its name; the interface's takes its interface's");
    // The doc comment is not in the component (wit-bindgen drops it): the
    // signature describes the tool.
    let greet = tools.iter().find(|t| t["name"] == "greet").unwrap();
    assert_eq!(
        greet["description"],
        "Calls the component function greet(name: string, excited: option<bool>) -> string."
    );
    let schema = schema_of(&tools, "greet");
    assert_eq!(schema["required"], json!(["name"]), "an option parameter is not required");
    assert_eq!(schema["additionalProperties"], json!(false));
    let widths = schema_of(&tools, "widths");
    assert_eq!(widths["properties"]["a"], json!({"type": "integer", "minimum": -128, "maximum": 127}));
    assert_eq!(widths["properties"]["h"], json!({"type": "integer", "minimum": 0, "maximum": u64::MAX}));
    let describe = schema_of(&tools, "describe");
    assert_eq!(describe["properties"]["c"], json!({"type": "string", "enum": ["red", "green", "blue"]}));
    assert_eq!(describe["properties"]["p"]["properties"]["nick"]["type"], json!(["string", "null"]));
    assert_eq!(describe["properties"]["a"]["items"]["enum"], json!(["read", "write", "exec"]));
    assert_eq!(
        schema_of(&tools, "geometry_area")["properties"]["s"]["oneOf"][2]["properties"]["tag"]["enum"],
        json!(["dot"])
    );
    // The same functions in a second file: each name stays with the first,
    // and the refusal names both.
    std::fs::copy(PLAIN, sb.plugins.join("zz-again.wasm")).unwrap();
    let r = toolhost(&sb, &["tools"]);
    let first = p(&sb.plugins.join("toolhost_guest_plain.wasm"));
    let refusal = format!("its name `greet` is already taken by the tool `greet` of {first}, which wins");
    assert!(r.stderr.contains("zz-again.wasm") && r.stderr.contains(&refusal), "{}", r.stderr);
    std::fs::remove_file(sb.plugins.join("zz-again.wasm")).unwrap();
    // The resource's functions are left out, each said once; the rest load.
    let check = toolhost(&sb, &["check", &p(&sb.plugins.join("toolhost_guest_plain.wasm"))]);
    assert_eq!(check.code, 0, "{check:?}");
    assert!(check.stdout.contains("ok: ") && check.stdout.contains("is the tool `midpoint`"), "{}", check.stdout);
    assert!(check.stdout.contains("contract:      none"), "{}", check.stdout);
    for left in [
        "`[constructor]counter`",
        "`[method]counter.next`",
        "`make` of `test:plain/stateful@0.1.0` is left out: its result is a resource handle",
    ] {
        assert!(check.stdout.contains(left), "{left}: {}", check.stdout);
    }
}

#[test]
fn values_cross_at_every_edge_and_wrong_ones_are_named() {
    let sb = Sandbox::new();
    sb.install(PLAIN);
    let lows = json!({"a": -128, "b": 0, "c": -32768, "d": 0, "e": i32::MIN, "f": 0, "g": i64::MIN, "h": 0});
    let highs =
        json!({"a": 127, "b": 255, "c": 32767, "d": 65535, "e": i32::MAX, "f": u32::MAX, "g": i64::MAX, "h": u64::MAX});
    for edges in [lows, highs] {
        let text = bypass(&sb, "widths", edges.clone(), &[]).assert_ok();
        let values: Vec<Value> = ["a", "b", "c", "d", "e", "f", "g", "h"].iter().map(|k| edges[k].clone()).collect();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), Value::Array(values));
    }
    let over = json!({"a": 128, "b": 0, "c": 0, "d": 0, "e": 0, "f": 0, "g": 0, "h": 0});
    let text = bypass(&sb, "widths", over, &[]).assert_error("");
    assert!(text.contains("`a`") && text.contains("127"), "the field and its range: {text}");
    assert_eq!(bypass(&sb, "greet", json!({"name": "Ada"}), &[]).assert_ok(), "Hello, Ada.");
    assert_eq!(bypass(&sb, "greet", json!({"name": "Ada", "excited": true}), &[]).assert_ok(), "HELLO, ADA!");
    let person = json!({"name": "Ada", "age": 36, "nick": null, "tags": ["x"]});
    let text = bypass(&sb, "describe", json!({"p": person, "c": "green", "a": ["exec", "read"]}), &[]).assert_ok();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"name": "Ada", "age": 37, "nick": null, "tags": ["x", "green", "read", "exec"]})
    );
    let text = bypass(
        &sb,
        "describe",
        json!({"p": {"name": "", "age": 1, "nick": "a", "tags": []}, "c": "red", "a": []}),
        &[],
    );
    assert_eq!(text.assert_error(""), "a person needs a name");
    bypass(&sb, "describe", json!({"p": person, "c": "purple", "a": []}), &[]).assert_error("purple");
    assert_eq!(bypass(&sb, "echo-bytes", json!({"b": "AAEC/w=="}), &[]).assert_ok(), "/wIBAA==");
    assert_eq!(bypass(&sb, "first-char", json!({"s": "élan"}), &[]).assert_ok(), "é");
    assert_eq!(bypass(&sb, "first-char", json!({"s": ""}), &[]).assert_ok(), "null");
    assert_eq!(bypass(&sb, "fail", json!({"message": "no such city"}), &[]).assert_error(""), "no such city");
    bypass(&sb, "fail-bare", json!({}), &[]).assert_error("its error carries no detail");
    assert_eq!(bypass(&sb, "nothing", json!({}), &[]).assert_ok(), "Done (the function returns nothing).");
    assert_eq!(bypass(&sb, "nan", json!({}), &[]).assert_ok(), "NaN");
    assert_eq!(bypass(&sb, "geometry_area", json!({"s": {"tag": "square", "val": 3}}), &[]).assert_ok(), "9.0");
    assert_eq!(bypass(&sb, "area", json!({"w": 2, "h": 4}), &[]).assert_ok(), "8.0");
    bypass(&sb, "geometry_area", json!({"s": {"tag": "dot", "val": 1}}), &[]).assert_error("");
    let midpoint = json!({"a": {"x": 0, "y": 0}, "b": {"x": 2, "y": 4}});
    assert_eq!(bypass(&sb, "midpoint", midpoint, &[]).assert_ok(), r#"{"x":1.0,"y":2.0}"#);
    // Loading says nothing of the functions left out at every call: `check` does.
    let r = bypass(&sb, "nothing", json!({}), &[]);
    assert!(!r.stderr.contains("left out"), "{}", r.stderr);
}

#[test]
fn a_plain_component_gets_nothing_until_granted_by_its_tools_names() {
    let sb = Sandbox::new();
    let wasm = sb.install(PLAIN);
    sb.write("notes.txt", "secret notes");
    std::fs::create_dir_all(sb.ws("data")).unwrap();
    sb.write("data/a.txt", "a");
    let notes = p(&sb.ws("notes.txt"));
    let data = p(&sb.ws("data"));
    let env = ["--allow", "env"];
    // Nothing requested, nothing granted: no directory, no variable.
    bypass(&sb, "read-file", json!({"path": notes}), &[]).assert_error("cannot read");
    assert_eq!(bypass(&sb, "env", json!({"key": "HOME"}), &env).assert_ok(), "null");
    // A grant alone gives nothing it did not request.
    let grant = json!({"toolGrants": {"read-file": {"workspace": "read-only"}, "list-dir": {"directories": [{"path": "data", "access": "read-only"}]}}}).to_string();
    bypass(&sb, "read-file", json!({"path": notes}), &["--settings", &grant]).assert_error("cannot read");
    // A Wassette policy beside it is what it requests; the grant gives it.
    let policy = "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n      - uri: \"fs://.\"\n        access: [\"read\"]\n      - uri: \"fs://data/**\"\n        access: [\"read\"]\n  environment:\n    allow:\n      - key: \"HOME\"\n";
    std::fs::write(wasm.with_extension("policy.yaml"), policy).unwrap();
    bypass(&sb, "read-file", json!({"path": notes}), &[]).assert_error("cannot read");
    assert_eq!(bypass(&sb, "read-file", json!({"path": notes}), &["--settings", &grant]).assert_ok(), "secret notes");
    assert_eq!(bypass(&sb, "list-dir", json!({"path": data}), &["--settings", &grant]).assert_ok(), "[\"a.txt\"]");
    // Granted to `read-file`, not to `list-dir`'s neighbour `env`.
    assert_eq!(bypass(&sb, "env", json!({"key": "HOME"}), &["--settings", &grant]).assert_ok(), "null");
    let text =
        bypass(&sb, "read-file", json!({"path": "/etc/hostname"}), &["--settings", &grant]).assert_error("cannot read");
    assert!(text.contains("/etc/hostname"), "{text}");
    // What the policy says that does not map is named.
    std::fs::write(
        wasm.with_extension("policy.yaml"),
        format!("{policy}  network:\n    allow:\n      - cidr: \"10.0.0.0/8\"\n"),
    )
    .unwrap();
    let check = toolhost(&sb, &["check", &p(&wasm)]);
    assert!(check.stdout.contains("cidr `10.0.0.0/8`"), "{}", check.stdout);
    std::fs::write(wasm.with_extension("policy.yaml"), "permissions: [").unwrap();
    let check = toolhost(&sb, &["check", &p(&wasm)]);
    assert!(check.stdout.contains("policy file") && check.stdout.contains("does not read"), "{}", check.stdout);
}

#[test]
fn install_reviews_a_plain_component_with_its_policy_and_grants_each_tool() {
    let sb = Sandbox::new();
    let source = sb.root.join("weather.wasm");
    std::fs::copy(PLAIN, &source).unwrap();
    let policy = sb.root.join("policy.yaml");
    std::fs::write(
        &policy,
        "permissions:\n  storage:\n    allow:\n      - uri: \"fs://.\"\n        access: [\"read\"]\n",
    )
    .unwrap();
    let r = toolhost(&sb, &["install", &p(&source), "--policy", &p(&policy), "--yes"]);
    assert_eq!(r.code, 0, "{r:?}");
    for line in [
        "tool:            greet:",
        "tool:            read-file:",
        "contract:        none",
        "requests:        the working directories (read-only)",
        "toolGrants.read-file",
    ] {
        assert!(r.stdout.contains(line), "{line}: {}", r.stdout);
    }
    assert!(sb.plugins.join("weather.wasm").exists() && sb.plugins.join("weather.policy.yaml").exists());
    sb.write("notes.txt", "hello");
    assert_eq!(bypass(&sb, "read-file", json!({"path": p(&sb.ws("notes.txt"))}), &[]).assert_ok(), "hello");
    let r = toolhost(&sb, &["uninstall", "greet"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(!sb.plugins.join("weather.wasm").exists() && !sb.plugins.join("weather.policy.yaml").exists());
    assert!(r.stdout.contains("removed toolGrants.read-file"), "{}", r.stdout);
}

#[test]
fn a_hostile_plain_component_is_stopped_by_the_same_limits() {
    let sb = Sandbox::new();
    sb.install(PLAIN_ADVERSARY);
    let tools = definitions(&sb);
    assert!(tools.iter().all(|t| t["name"] != "too-deep"), "types nested past the cap are left out");
    bypass(&sb, "spin", json!({}), &["--timeout-ms", "300"]).assert_error("spin timed out after 300 ms");
    bypass(&sb, "sleep", json!({"ms": 60_000}), &["--timeout-ms", "300"]).assert_error("sleep timed out after 300 ms");
    bypass(&sb, "allocate", json!({"mib": 200}), &["--memory-mib", "64"])
        .assert_error("exceeded its memory limit of 64 MiB");
    let text = bypass(&sb, "crash", json!({}), &[]).assert_error("crash crashed");
    assert!(text.contains("the adversary crashed on purpose"), "{text}");
    bypass(&sb, "recurse", json!({"depth": 100_000_000u64}), &[]).assert_error("recurse crashed");
    // Huge answers are kept out of the model's context, whole on disk.
    let text = bypass(&sb, "huge-string", json!({"mib": 32}), &[]).assert_ok();
    assert!(text.starts_with("<persisted-output>"), "{}", &text[..200.min(text.len())]);
    let text = bypass(&sb, "many", json!({"count": 1_000_000}), &[]).assert_ok();
    assert!(text.starts_with("<persisted-output>"), "{}", &text[..200.min(text.len())]);
    let text = bypass(&sb, "nested", json!({"width": 4}), &[]).assert_ok();
    assert!(text.starts_with("<persisted-output>") || text.starts_with("[[[["), "{}", &text[..200.min(text.len())]);
    // In one stream: each fault is one error result, and the next call is answered.
    let lines = [
        json!({"type": "tool_use", "id": "a", "name": "spin", "input": {}}),
        json!({"type": "tool_use", "id": "b", "name": "crash", "input": {}}),
        json!({"type": "tool_use", "id": "c", "name": "sleep", "input": {"ms": 1}}),
    ];
    let out = run_stream(&sb, &["--mode", "bypassPermissions", "--timeout-ms", "300"], &lines);
    let by_id =
        |id: &str| out.iter().find(|v| v["tool_use_id"] == id).unwrap_or_else(|| panic!("no answer for {id}: {out:?}"));
    assert_eq!(by_id("a")["is_error"], json!(true));
    assert_eq!(by_id("b")["is_error"], json!(true));
    assert_eq!(by_id("c")["is_error"], json!(false), "{out:?}");
}

#[test]
fn an_mcp_client_lists_plain_tools_with_output_schemas_and_calls_them() {
    let sb = Sandbox::new();
    sb.install(PLAIN);
    with_served_args(&sb, &["--mode", "bypassPermissions"], |client, _| async move {
        let tools = client.list_all_tools().await.unwrap();
        let midpoint = tools.iter().find(|t| t.name == "midpoint").expect("midpoint listed");
        let output = midpoint.output_schema.as_ref().expect("an output schema");
        assert_eq!(output.get("required"), Some(&json!(["x", "y"])));
        let r = client.call_tool(mcp_call("greet", json!({"name": "Ada"}))).await.unwrap();
        assert_eq!(mcp_text(&r), "Hello, Ada.");
        assert_eq!(r.structured_content, Some(json!({"result": "Hello, Ada."})));
        // Structured content: a record is the object itself; a NaN is its string.
        let r = client
            .call_tool(mcp_call("midpoint", json!({"a": {"x": 0, "y": 0}, "b": {"x": 2, "y": 4}})))
            .await
            .unwrap();
        assert_eq!(r.structured_content, Some(json!({"x": 1.0, "y": 2.0})));
        let r = client.call_tool(mcp_call("nan", json!({}))).await.unwrap();
        assert_eq!(r.structured_content, Some(json!({"result": "NaN"})));
        let r = client.call_tool(mcp_call("fail", json!({"message": "nope"}))).await.unwrap();
        assert_eq!((r.is_error, mcp_text(&r).as_str()), (Some(true), "nope"));
        client
    });
}

/// The weather world (`tests/plain/weather`), built by each toolchain with
/// its defaults: componentize-py, componentize-js (SpiderMonkey, the
/// synchronous ABI), jco's QuickJS build and componentize-qjs's default
/// (both on the async ABI). Each is three tools, answered in `call` and in
/// one `run` stream; what the toolchain exports for itself is not a tool.
#[test]
fn components_built_by_independent_toolchains_from_a_plain_world_are_tools() {
    use toolhost_tests::js::{Engine, js_plain};
    let dir = toolhost_tests::repo_root().join("tests/plain/weather");
    let builds = [
        ("componentize-py", toolhost_tests::python::python_plain(&dir, "weather")),
        ("componentize-js", js_plain(&dir, "weather", Engine::SpiderMonkey)),
        ("jco", js_plain(&dir, "weather", Engine::Jco)),
        ("componentize-qjs", js_plain(&dir, "weather", Engine::QuickJsAsync)),
    ];
    for (toolchain, wasm) in builds {
        let sb = Sandbox::new();
        std::fs::copy(&wasm, sb.plugins.join("weather.wasm")).unwrap();
        let tools = definitions(&sb);
        let mut names: Vec<&str> =
            tools.iter().filter_map(|t| t["name"].as_str()).filter(|n| n.starts_with(char::is_lowercase)).collect();
        names.sort();
        assert_eq!(names, ["c-to-f", "distance", "get-weather"], "{toolchain}");
        assert_eq!(schema_of(&tools, "distance")["required"], json!(["a", "b"]), "{toolchain}");
        let ok = |name: &str, input: Value| bypass(&sb, name, input, &[]).assert_ok();
        assert_eq!(ok("get-weather", json!({"city": "Paris"})), "21", "{toolchain}");
        let text = bypass(&sb, "get-weather", json!({"city": "Rome"}), &[]).assert_error("");
        assert!(text.contains("unknown city Rome"), "{toolchain}: {text}");
        let far = json!({"a": {"lat": 0, "lon": 0}, "b": {"lat": 3, "lon": 4}});
        assert_eq!(ok("distance", far.clone()), "5.0", "{toolchain}");
        let mut metres = far.clone();
        metres["unit"] = json!("m");
        assert_eq!(ok("distance", metres), "5000.0", "{toolchain}");
        assert_eq!(ok("c-to-f", json!({"c": 100})), "212.0", "{toolchain}");
        let text =
            bypass(&sb, "distance", json!({"a": {"lat": "north", "lon": 0}, "b": far["b"]}), &[]).assert_error("");
        assert!(text.contains("a.lat"), "{toolchain}: the wrong field is named: {text}");
        let lines = [
            json!({"type": "tool_use", "id": "1", "name": "get-weather", "input": {"city": "Paris"}}),
            json!({"type": "tool_use", "id": "2", "name": "get-weather", "input": {"city": "Oslo"}}),
            json!({"type": "tool_use", "id": "3", "name": "c-to-f", "input": {"c": 0}}),
        ];
        let out = run_stream(&sb, &["--mode", "bypassPermissions"], &lines);
        let texts: Vec<(String, bool)> = ["1", "2", "3"]
            .iter()
            .map(|id| {
                let r = out.iter().find(|v| v["tool_use_id"] == *id).unwrap_or_else(|| panic!("{toolchain}: {out:?}"));
                (content_text(r), r["is_error"] == json!(true))
            })
            .collect();
        assert_eq!(
            texts,
            [("21".to_string(), false), ("unknown city Oslo".to_string(), true), ("32.0".to_string(), false)],
            "{toolchain}"
        );
    }
}

/// WASI 0.3 `async func` exports of a plain world: called as tasks, their
/// waits on WASI 0.3's clock ended by the call's deadline.
#[test]
fn async_exports_of_a_plain_world_are_tools_within_the_deadline() {
    let sb = Sandbox::new();
    sb.install(PLAIN_ASYNC);
    let tools = definitions(&sb);
    assert_eq!(schema_of(&tools, "wait")["properties"]["ms"]["maximum"], json!(u32::MAX));
    assert_eq!(bypass(&sb, "wait", json!({"ms": 5}), &[]).assert_ok(), "waited 5 ms");
    assert_eq!(bypass(&sb, "double", json!({"n": 21}), &[]).assert_ok(), "42");
    bypass(&sb, "double", json!({"n": i32::MAX}), &[]).assert_error("does not fit an s32");
    let started = std::time::Instant::now();
    bypass(&sb, "wait", json!({"ms": 600_000}), &["--timeout-ms", "300"]).assert_error("wait timed out after 300 ms");
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}
