//! The MCP layer's cost: `cargo bench -p toolhost-cli --bench mcp`.
//!
//! One trivial call (the Echo test tool), one at a time, three ways in the
//! same run: through the library (`Host::call`, what `toolhost call` runs),
//! through the streaming executor in process (what `serve` hands each call
//! to), and as a `tools/call` round trip over stdio to a real
//! `toolhost serve`, from rmcp's client. Three rounds, alternating; the
//! median of the rounds' medians. Prints a Markdown table.

mod common;

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use toolhost::{CallOptions, Executor, Host, ToolUse, Update};

const TOOLHOST: &str = env!("CARGO_BIN_EXE_toolhost");
const WARM_UP: usize = 500;
const CALLS: usize = 5000;
const ROUNDS: usize = 3;

fn bench_dir(name: &str) -> PathBuf {
    let dir = toolhost_tests::repo_root().join("target").join("bench-data").join(name);
    std::fs::create_dir_all(&dir).expect("bench dir");
    dir
}

struct Setup {
    workspace: PathBuf,
    plugins: PathBuf,
    data: PathBuf,
}

fn setup() -> Setup {
    let setup =
        Setup { workspace: bench_dir("mcp-ws"), plugins: bench_dir("mcp-plugins"), data: bench_dir("mcp-data") };
    std::fs::copy(toolhost_tests::ECHO, setup.plugins.join("echo.wasm")).expect("install echo");
    setup
}

fn host(s: &Setup) -> Host {
    Host::builder()
        .workspace(&s.workspace)
        .plugins_dir(Some(s.plugins.clone()))
        .data_dir(&s.data)
        .cache_dir(Some(toolhost_tests::shared_cache_dir()))
        .build()
        .expect("host")
}

fn echo(id: usize) -> ToolUse {
    ToolUse { id: format!("toolu_{id}"), name: "Echo".into(), input: json!({"text": "hello"}) }
}

fn library(host: &Host) -> common::Stats {
    let session = host.ephemeral_session();
    let options = CallOptions::default();
    let mut n = 0;
    common::time(WARM_UP, CALLS, || {
        n += 1;
        let r = host.call(&session, &echo(n), &options);
        assert!(!r.is_error, "{r:?}");
    })
}

fn executor(host: &Host, runtime: &tokio::runtime::Runtime) -> common::Stats {
    let executor = Arc::new(Executor::with_config(
        host.clone(),
        host.ephemeral_session(),
        toolhost::SchedulerConfig { calls: toolhost::Calls::Independent, ..Default::default() },
    ));
    let mut n = 0;
    common::time(WARM_UP, CALLS, || {
        n += 1;
        executor.add_tool(echo(n));
        runtime.block_on(async {
            loop {
                match executor.next().await {
                    Some(Update::Result(r)) => {
                        assert!(!r.is_error, "{r:?}");
                        break;
                    }
                    Some(Update::Progress(_)) => {}
                    None => panic!("executor ended"),
                }
            }
        })
    })
}

fn mcp_stdio(s: &Setup, runtime: &tokio::runtime::Runtime) -> common::Stats {
    let mut cmd = tokio::process::Command::new(TOOLHOST);
    cmd.arg("--workspace")
        .arg(&s.workspace)
        .arg("--plugins")
        .arg(&s.plugins)
        .arg("serve")
        .env("HOME", &s.data)
        .env("TOOLHOST_DATA_DIR", &s.data)
        .env("TOOLHOST_CACHE_DIR", toolhost_tests::shared_cache_dir())
        .env("TOOLHOST_MANAGED_SETTINGS", s.data.join("managed-settings.json"))
        .env_remove("RUST_LOG");
    round_trips(cmd, runtime)
}

/// Starts the MCP server `cmd`, then times Echo `tools/call` round trips
/// from rmcp's client, one at a time.
fn round_trips(cmd: tokio::process::Command, runtime: &tokio::runtime::Runtime) -> common::Stats {
    runtime.block_on(async {
        let client = ().serve(TokioChildProcess::new(cmd).expect("spawn")).await.expect("initialize");
        let serde_json::Value::Object(args) = json!({"text": "hello"}) else { unreachable!() };
        let request = CallToolRequestParams::new("Echo").with_arguments(args);
        let mut samples = Vec::with_capacity(CALLS);
        for i in 0..WARM_UP + CALLS {
            let t = Instant::now();
            let r = client.call_tool(request.clone()).await.expect("tools/call");
            let micros = t.elapsed().as_secs_f64() * 1e6;
            assert_eq!(r.is_error, Some(false), "{r:?}");
            if i >= WARM_UP {
                samples.push(micros);
            }
        }
        client.cancel().await.expect("close");
        common::stats(samples)
    })
}

/// The floor: rmcp's own stdio round trip, against a server (this binary,
/// re-run with `--echo-server`) that answers `tools/call` at once.
fn rmcp_floor(runtime: &tokio::runtime::Runtime) -> common::Stats {
    let mut cmd = tokio::process::Command::new(std::env::current_exe().expect("bench executable"));
    cmd.arg("--echo-server");
    round_trips(cmd, runtime)
}

struct EchoServer;

impl rmcp::ServerHandler for EchoServer {
    fn get_info(&self) -> rmcp::model::InitializeResult {
        rmcp::model::InitializeResult::new(rmcp::model::ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let text = request.arguments.and_then(|a| a.get("text").and_then(|t| t.as_str().map(String::from)));
        let result =
            rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text(text.unwrap_or_default())]);
        Ok(rmcp::model::CallToolResponse::Complete(result))
    }
}

fn echo_server() {
    // The same runtime as `toolhost serve`.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let running = EchoServer.serve(rmcp::transport::io::stdio_pipes()).await.expect("serve");
        let _ = running.waiting().await;
    });
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--echo-server") {
        return echo_server();
    }
    let s = setup();
    let host = host(&s);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let (mut lib, mut exe, mut mcp, mut floor) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let l = library(&host);
        let e = executor(&host, &runtime);
        let m = mcp_stdio(&s, &runtime);
        let f = rmcp_floor(&runtime);
        eprintln!(
            "round {round}: library p50 {:.1} p99 {:.1} µs; executor p50 {:.1} p99 {:.1} µs; \
             MCP stdio p50 {:.1} p99 {:.1} µs; rmcp floor p50 {:.1} p99 {:.1} µs",
            l.p50, l.p99, e.p50, e.p99, m.p50, m.p99, f.p50, f.p99
        );
        floor.push(f);
        lib.push(l);
        exe.push(e);
        mcp.push(m);
    }
    let p50 = |v: &[common::Stats]| median(v.iter().map(|s| s.p50).collect());
    let p99 = |v: &[common::Stats]| median(v.iter().map(|s| s.p99).collect());
    println!("| Echo, one call at a time ({CALLS} calls × {ROUNDS} rounds) | p50 | p99 |");
    println!("|---|---|---|");
    println!("| library (`Host::call`, as `toolhost call`) | {:.1} µs | {:.1} µs |", p50(&lib), p99(&lib));
    println!("| streaming executor, in process | {:.1} µs | {:.1} µs |", p50(&exe), p99(&exe));
    println!(
        "| MCP `tools/call` over stdio (rmcp client ↔ `toolhost serve`) | {:.1} µs | {:.1} µs |",
        p50(&mcp),
        p99(&mcp)
    );
    println!(
        "| rmcp alone: the same round trip to a server answering at once | {:.1} µs | {:.1} µs |",
        p50(&floor),
        p99(&floor)
    );
    println!();
    println!(
        "Added by the MCP layer (stdio round trip − library), p50: **{:.1} µs** (target ≤ 150 µs); of which the executor hand-off: {:.1} µs.",
        p50(&mcp) - p50(&lib),
        p50(&exe) - p50(&lib)
    );
}
