//! The Kubernetes manifests (`deploy/kubernetes`): rendered by `kubectl
//! kustomize`, validated offline against Kubernetes' own schemas by the PyPI
//! package kubernetes-validate, and the Deployment's command line started
//! for real (against a real Redis) to answer its own probes. No cluster
//! runs here; what is not validated is said in docs/kubernetes.md.

use crate::support::*;
use serde_json::Value;
use std::process::{Command, Stdio};
use toolhost_tests::redis::RedisServer;

/// The oldest Kubernetes the manifests are for.
const KUBERNETES: &str = "1.33.0";

/// The manifests rendered, as YAML.
fn rendered() -> String {
    let dir = toolhost_tests::repo_root().join("deploy/kubernetes");
    let out = Command::new("kubectl").arg("kustomize").arg(&dir).output().unwrap_or_else(|e| {
        panic!("kubectl kustomize: {e}: these tests need kubectl (https://kubernetes.io/docs/tasks/tools/)")
    });
    assert!(out.status.success(), "kubectl kustomize: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The validator's Python (it brings PyYAML too).
fn python() -> std::path::PathBuf {
    use toolhost_tests::{pins, toolchain};
    toolchain::installed(&pins::KUBERNETES_VALIDATE).join("bin").join("python")
}

#[test]
fn the_manifests_render_and_validate_against_kubernetes_schemas() {
    let sb = Sandbox::new();
    let yaml = sb.root.join("rendered.yaml");
    std::fs::write(&yaml, rendered()).unwrap();
    let python = python();
    let validator = python.with_file_name("kubernetes-validate");
    let out = Command::new(&validator).args(["-k", KUBERNETES, "--strict"]).arg(&yaml).output().expect("run it");
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{report}");
    for kind in [
        "namespace/toolhost",
        "persistentvolumeclaim/toolhost-workspace",
        "statefulset/toolhost-redis",
        "service/toolhost-redis",
        "deployment/toolhost",
        "service/toolhost",
        "poddisruptionbudget/toolhost",
        "horizontalpodautoscaler/toolhost",
    ] {
        assert!(report.contains(&format!("passed for resource {kind} against")), "{kind} not validated:\n{report}");
    }
    // The one resource without a bundled schema (a Gateway API CRD) is the
    // only one not validated.
    let unvalidated: Vec<&str> = report.lines().filter(|l| l.contains("Couldn't find schema")).collect();
    assert_eq!(unvalidated.len(), 1, "{report}");
    assert!(unvalidated[0].contains("HTTPRoute"), "{report}");

    let docs = documents(&python, &yaml);
    let route = find(&docs, "HTTPRoute", "toolhost");
    let persistence = &route["spec"]["rules"][0]["sessionPersistence"];
    assert_eq!(persistence["type"], "Header", "{route}");
    assert_eq!(persistence["sessionName"], "Mcp-Session-Id", "{route}");
    assert_eq!(route["spec"]["rules"][0]["backendRefs"][0]["name"], "toolhost");
    let deployment = find(&docs, "Deployment", "toolhost");
    let pod = &deployment["spec"]["template"]["spec"];
    let args: Vec<&str> = pod["containers"][0]["args"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let drain: u64 = args.iter().find_map(|a| a.strip_prefix("--drain-timeout=")).unwrap().parse().unwrap();
    assert!(pod["terminationGracePeriodSeconds"].as_u64().unwrap() > drain, "the kill must come after the drain");
    let env = &pod["containers"][0]["env"];
    let state = env.as_array().unwrap().iter().find(|e| e["name"] == "TOOLHOST_STATE").expect("a state store");
    let redis_service = find(&docs, "Service", "toolhost-redis");
    assert!(state["value"].as_str().unwrap().contains(redis_service["metadata"]["name"].as_str().unwrap()));
    let pdb = find(&docs, "PodDisruptionBudget", "toolhost");
    assert_eq!(pdb["spec"]["selector"], deployment["spec"]["selector"]);
}

#[test]
fn the_deployment_s_command_line_serves_and_answers_its_probes() {
    let python = python();
    let sb = Sandbox::new();
    let yaml = sb.root.join("rendered.yaml");
    std::fs::write(&yaml, rendered()).unwrap();
    let docs = documents(&python, &yaml);
    let deployment = find(&docs, "Deployment", "toolhost");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let redis = RedisServer::start();
    let tokens = sb.root.join("tokens");
    std::fs::write(&tokens, "alice alice-token-0123456789\n").unwrap();
    // The pod's arguments, with this machine's paths and a free port.
    let args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| match a.as_str().unwrap() {
            a if a.starts_with("--workspace=") => format!("--workspace={}", sb.workspace.display()),
            a if a.starts_with("--http=") => "--http=127.0.0.1:0".into(),
            a if a.starts_with("--token-file=") => format!("--token-file={}", tokens.display()),
            a => a.to_string(),
        })
        .collect();
    let mut cmd = sb.command(env!("CARGO_BIN_EXE_toolhost"));
    cmd.arg("--plugins").arg(&sb.plugins).args(&args);
    for e in container["env"].as_array().unwrap() {
        let name = e["name"].as_str().unwrap();
        match name {
            "TOOLHOST_STATE" => cmd.env(name, redis.url(0)),
            "TOOLHOST_INSTANCE" => cmd.env(name, "toolhost-0"),
            "TOOLHOST_DATA_DIR" => cmd.env(name, &sb.data),
            _ => cmd.env(name, e["value"].as_str().unwrap()),
        };
    }
    let mut child = cmd.stdin(Stdio::null()).stderr(Stdio::piped()).spawn().expect("start the pod's command");
    let url = toolhost_tests::serving_url(&mut child, &format!("the pod's command {args:?}"));
    for probe in ["startupProbe", "livenessProbe", "readinessProbe"] {
        let path = container[probe]["httpGet"]["path"].as_str().expect("an HTTP probe");
        let (status, body) = raw_http(&url.replace("/mcp", path), "GET", &[], "");
        assert_eq!(status, 200, "{probe} {path}: {body}");
    }
    let service = find(&docs, "Service", "toolhost");
    let metrics = service["metadata"]["annotations"]["prometheus.io/path"].as_str().unwrap();
    let (status, body) = raw_http(&url.replace("/mcp", metrics), "GET", &[], "");
    assert!(status == 200 && body.contains("toolhost_calls_running"), "{body}");
    let _ = child.kill();
    let _ = child.wait();
}

/// Every document of a YAML stream, as JSON.
fn documents(python: &std::path::Path, yaml: &std::path::Path) -> Vec<Value> {
    let script = "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))";
    let out = Command::new(python).args(["-c", script]).arg(yaml).output().expect("run python");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn find<'d>(docs: &'d [Value], kind: &str, name: &str) -> &'d Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in the manifests"))
}
