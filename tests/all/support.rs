//! Running the binary and reading its answers.

use serde_json::Value;
use std::os::fd::FromRawFd as _;
use std::sync::Once;
pub use toolhost_tests::Sandbox;

/// What one `toolhost` process did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    /// For `call --json`: the text of the result's text blocks, joined.
    pub fn text(&self) -> String {
        let v = self.json();
        assert!(v["content"].is_array(), "no content: {self:?}");
        content_text(&v)
    }

    /// For `call --json`: `is_error`.
    pub fn is_error(&self) -> bool {
        self.json()["is_error"].as_bool().unwrap_or_else(|| panic!("no is_error: {self:?}"))
    }

    /// Asserts the call failed (exit 1, `is_error`) and its text contains `needle`.
    #[track_caller]
    pub fn assert_error(&self, needle: &str) -> String {
        assert_eq!(self.code, 1, "{self:?}");
        assert!(self.is_error(), "{self:?}");
        let text = self.text();
        assert!(text.contains(needle), "expected {needle:?} in:\n{text}");
        text
    }

    /// Asserts the call succeeded and returns its text.
    #[track_caller]
    pub fn assert_ok(&self) -> String {
        assert_eq!(self.code, 0, "{self:?}");
        assert!(!self.is_error(), "{self:?}");
        self.text()
    }
}

/// Fills the shared compile cache once, before tests run in parallel, so they
/// do not all compile the same components at once.
fn warm() {
    static WARM: Once = Once::new();
    WARM.call_once(|| {
        let sb = Sandbox::new();
        sb.install(toolhost_tests::ECHO);
        sb.install(toolhost_tests::ADVERSARY);
        let out = sb
            .command(env!("CARGO_BIN_EXE_toolhost"))
            .args(["--plugins"])
            .arg(&sb.plugins)
            .arg("tools")
            .output()
            .expect("run toolhost");
        assert!(out.status.success(), "warming the cache failed: {}", String::from_utf8_lossy(&out.stderr));
    });
}

/// Runs `toolhost` in `sb` (its workspace and plugins directory) with `args`.
pub fn toolhost(sb: &Sandbox, args: &[&str]) -> Run {
    run_with(sb, args, |_| {})
}

/// [`toolhost`], with the command changed by `change` first (its
/// environment, say).
pub fn run_with(sb: &Sandbox, args: &[&str], change: impl FnOnce(&mut std::process::Command)) -> Run {
    warm();
    let mut cmd = toolhost_command(sb);
    change(&mut cmd);
    let out = cmd.args(args).output().expect("run toolhost");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The `toolhost` binary in `sb`: its environment, workspace and plugins
/// directory; the subcommand and its arguments come next.
pub fn toolhost_command(sb: &Sandbox) -> std::process::Command {
    let mut cmd = sb.command(env!("CARGO_BIN_EXE_toolhost"));
    cmd.arg("--workspace").arg(&sb.workspace).arg("--plugins").arg(&sb.plugins);
    cmd
}

/// The text blocks of a `tool_result` object (`call --json`, `run`), joined
/// by newlines.
pub fn content_text(result: &Value) -> String {
    let blocks = result["content"].as_array().into_iter().flatten();
    blocks.filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n")
}

/// Starts `toolhost ARGS…` in `sb` with stdin, stdout and stderr piped (for
/// `run` and `serve`, which read their input from stdin).
pub fn spawn_piped(sb: &Sandbox, args: &[&str]) -> std::process::Child {
    use std::process::Stdio;
    toolhost_command(sb)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolhost")
}

/// `toolhost call NAME INPUT --json` plus `extra` arguments.
pub fn call(sb: &Sandbox, name: &str, input: &Value, extra: &[&str]) -> Run {
    let input = input.to_string();
    let mut args = vec!["call", name, &input, "--json"];
    args.extend_from_slice(extra);
    toolhost(sb, &args)
}

/// A path as the JSON string the model would send.
pub fn p(path: &std::path::Path) -> String {
    path.display().to_string()
}

/// A new pseudo-terminal: (master, slave), both close-on-exec so that other
/// tests' children do not inherit them (`Stdio` clears the flag on the
/// descriptors it installs in our child).
pub fn openpty() -> (std::fs::File, std::os::fd::OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two new descriptors into the out-pointers; the
    // name, termios and window size arguments may be null.
    let rc =
        unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    for fd in [master, slave] {
        // SAFETY: fd is a descriptor openpty just opened and we own.
        let rc = unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        assert_eq!(rc, 0, "fcntl: {}", std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are open and owned by nobody else.
    unsafe { (std::fs::File::from_raw_fd(master), std::os::fd::OwnedFd::from_raw_fd(slave)) }
}

/// The component `build` makes, checked by `toolhost check` (which also
/// compiles it into the shared cache) once per test process, so parallel
/// tests neither build nor compile it again.
pub fn checked_once(
    cell: &'static std::sync::OnceLock<std::path::PathBuf>,
    build: impl FnOnce() -> std::path::PathBuf,
) -> &'static std::path::Path {
    cell.get_or_init(|| {
        let wasm = build();
        let sb = Sandbox::new();
        let r = toolhost(&sb, &["check", wasm.to_str().expect("a UTF-8 path")]);
        assert_eq!(r.code, 0, "{r:?}");
        wasm
    })
}

/// `toolhost ARGS… run` fed `lines`: every line it wrote, parsed (it must
/// exit 0).
pub fn run_stream(sb: &Sandbox, args: &[&str], lines: &[Value]) -> Vec<Value> {
    use std::io::{BufRead as _, Write as _};
    let mut all = args.to_vec();
    all.push("run");
    let mut child = spawn_piped(sb, &all);
    let mut stdin = child.stdin.take().expect("stdin");
    for line in lines {
        writeln!(stdin, "{line}").expect("write a line");
    }
    drop(stdin);
    let out: Vec<Value> = std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .lines()
        .map_while(Result::ok)
        .map(|l| serde_json::from_str(&l).expect("a JSON line"))
        .collect();
    assert!(child.wait().expect("wait").success(), "{out:?}");
    out
}

/// An MCP client (rmcp) that keeps the progress messages it is sent.
#[derive(Clone, Default)]
pub struct ProgressClient {
    pub progress: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for ProgressClient {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params.message.unwrap_or_default());
    }
}

impl ProgressClient {
    /// Waits up to 2 s for a progress message equal to `message` (progress
    /// may trail its result a little); the messages so far.
    pub async fn wait_for(&self, message: &str) -> Vec<String> {
        for _ in 0..100 {
            if self.progress.lock().unwrap().iter().any(|m| m == message) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        self.progress.lock().unwrap().clone()
    }
}

/// Runs `session` against `toolhost serve` in `sb` over stdio, with an rmcp
/// client that keeps progress, on a runtime of its own; closes it after.
pub fn with_served<F, Fut>(sb: &Sandbox, session: F)
where
    F: FnOnce(rmcp::service::RunningService<rmcp::RoleClient, ProgressClient>, ProgressClient) -> Fut,
    Fut: std::future::Future<Output = rmcp::service::RunningService<rmcp::RoleClient, ProgressClient>>,
{
    with_served_args(sb, &[], session)
}

/// [`with_served`], with `args` before `serve`.
pub fn with_served_args<F, Fut>(sb: &Sandbox, args: &[&str], session: F)
where
    F: FnOnce(rmcp::service::RunningService<rmcp::RoleClient, ProgressClient>, ProgressClient) -> Fut,
    Fut: std::future::Future<Output = rmcp::service::RunningService<rmcp::RoleClient, ProgressClient>>,
{
    use rmcp::ServiceExt as _;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let mut cmd = tokio::process::Command::from(toolhost_command(sb));
        cmd.args(args).arg("serve");
        let handler = ProgressClient::default();
        let transport = rmcp::transport::TokioChildProcess::new(cmd).expect("spawn toolhost serve");
        let client = handler.clone().serve(transport).await.expect("initialize");
        let client = session(client, handler).await;
        client.cancel().await.expect("close");
    });
}

/// An MCP `tools/call` of `name` with `args` (a JSON object).
pub fn mcp_call(name: &'static str, args: Value) -> rmcp::model::CallToolRequestParams {
    let Value::Object(args) = args else { panic!("arguments are an object") };
    rmcp::model::CallToolRequestParams::new(name).with_arguments(args)
}

/// The text blocks of an MCP result, joined by newlines.
pub fn mcp_text(r: &rmcp::model::CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

/// A raw MCP client over `toolhost ARGS` (ending in `serve …`) on stdio,
/// its handshake done; the server's log is discarded.
pub struct StdioMcp {
    pub child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl StdioMcp {
    pub fn start(sb: &Sandbox, args: &[&str]) -> StdioMcp {
        use std::process::Stdio;
        let mut child = toolhost_command(sb)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start toolhost serve");
        let stdin = child.stdin.take();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut mcp = StdioMcp { child, stdin, stdout };
        mcp.send(&serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
        mcp.answer(0);
        mcp.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    pub fn send(&mut self, message: &Value) {
        use std::io::Write as _;
        let stdin = self.stdin.as_mut().expect("the client's end is open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// The answer to request `id`, skipping what comes before it.
    pub fn answer(&mut self, id: u64) -> Value {
        use std::io::BufRead as _;
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "serve ended before answering {id}");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    }

    /// Sends `tools/call` of `name` with `arguments` as request `id`.
    pub fn start_call(&mut self, id: u64, name: &str, arguments: Value) {
        self.send(&serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}));
    }

    /// `tools/call` of `name` with `arguments` as request `id`, and its answer.
    pub fn call(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        self.start_call(id, name, arguments);
        self.answer(id)
    }

    /// Closes the client's end and waits for the server to end.
    pub fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().unwrap()
    }
}

/// One raw HTTP/1.1 request; the status code and the response.
pub fn raw_http(url: &str, method: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    use std::io::{Read as _, Write as _};
    use std::time::Duration;
    let authority = url.trim_start_matches("http://").split('/').next().expect("authority");
    let path = &url["http://".len() + authority.len()..];
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    // A bound on a hang, not on speed: a fresh clone's first run compiles
    // built-ins and builds the tests' own tools beside the calls, and in a
    // slow hour one call there took more than 10 s.
    stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {authority}\r\n"));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, response)
}

/// Moves `file`'s modification time forward a second, so a rewrite within
/// the same second as the read is seen as a change however coarse the
/// filesystem's clock.
pub fn filetime_bump(file: &std::path::Path) {
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
    std::fs::File::options().write(true).open(file).unwrap().set_modified(later).unwrap();
}

/// A host over `sb`'s workspace and data directory, compiling through the
/// cache every test process shares, with no plugins directory: callers add
/// what their test needs.
pub fn host_builder(sb: &Sandbox) -> toolhost::HostBuilder {
    toolhost::Host::builder()
        .workspace(&sb.workspace)
        .plugins_dir(None)
        .data_dir(&sb.data)
        .cache_dir(Some(toolhost_tests::shared_cache_dir()))
}

/// A call of `name` with `input`, its id `toolu_NAME`.
pub fn tool_use(name: &str, input: Value) -> toolhost::ToolUse {
    toolhost::ToolUse { id: format!("toolu_{name}"), name: name.into(), input }
}

/// The processes whose command line contains `marker`, each as its
/// `/proc/PID/stat` line (state, parent, process group), for a failure's
/// message.
pub fn processes(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).replace('\0', " ").contains(marker))
        })
        .map(|e| std::fs::read_to_string(e.path().join("stat")).unwrap_or_default())
        .collect()
}

/// Whether a process whose command line contains `marker` runs.
pub fn running(marker: &str) -> bool {
    !processes(marker).is_empty()
}

/// Waits until a process whose command line contains `marker` runs; fails
/// after `within`.
#[track_caller]
pub fn wait_running(marker: &str, within: std::time::Duration) {
    let deadline = std::time::Instant::now() + within;
    while !running(marker) {
        assert!(std::time::Instant::now() < deadline, "no process `{marker}` within {within:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Waits until no process whose command line contains `marker` runs;
/// fails, naming those left, after `within`.
#[track_caller]
pub fn wait_gone(marker: &str, within: std::time::Duration) {
    let deadline = std::time::Instant::now() + within;
    loop {
        let left = processes(marker);
        if left.is_empty() {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "still running after {within:?}: {left:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A `tool_use` line of `toolhost run`'s input.
pub fn tool_use_line(id: &str, name: &str, input: Value) -> Value {
    serde_json::json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

/// The lines of the audit log at `path`, parsed.
pub fn audit_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("the audit log {}: {e}", path.display()));
    text.lines().map(|l| serde_json::from_str(l).expect("an audit line is JSON")).collect()
}
