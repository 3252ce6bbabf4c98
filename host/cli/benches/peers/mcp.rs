//! Part `mcp` of the peers benchmark: `toolhost serve` against the
//! reference MCP server for files, and the floor; and part `proxy`'s
//! servers.

use super::*;

/// The workspace both servers serve, and the file every call reads: about
/// 1 KB in 20 lines.
pub(super) fn small_file() -> PathBuf {
    let ws = bench_dir("peers-ws").canonicalize().expect("workspace");
    let text: String =
        (1..=20).map(|i| format!("line {i:02}: the quick brown fox jumps over the lazy dog {:04}\n", i * 37)).collect();
    let file = ws.join("small.txt");
    std::fs::write(&file, text).expect("small file");
    file
}

/// The reference server's entry point, installed with npm where the tests
/// install it (once); or why it cannot be run.
pub(super) fn server_filesystem() -> Result<PathBuf, String> {
    let node = Command::new("node").arg("--version").output();
    if !node.as_ref().is_ok_and(|o| o.status.success()) {
        return Err(format!("node cannot be run: {node:?}"));
    }
    let modules = toolhost_tests::toolchain::install(&SERVER_FILESYSTEM)?;
    Ok(modules.join(SERVER_FILESYSTEM.package).join("dist").join("index.js"))
}

/// A server under test: how to start it, and which of its tools reads a file
/// with which arguments.
pub(super) struct Server {
    pub(super) name: &'static str,
    pub(super) command: Box<dyn Fn() -> Command>,
    /// The reading tool's name, picked from the names `tools/list` offers.
    pub(super) pick_tool: fn(&[&str]) -> &'static str,
    /// The reading tool's arguments for a file.
    pub(super) arguments: fn(&Path) -> Value,
    /// Its standard input and output one socket pair (as Node's child
    /// processes get them: Claude Code's and the TypeScript SDK's servers)
    /// rather than two pipes.
    pub(super) socket: bool,
}

/// toolhost served over a socket pair, beside the same over pipes.
const OVER_A_SOCKET: &str = "toolhost, socket pair";

/// toolhost, the floor, and the reference server unless it cannot be run
/// (then why).
pub(super) fn servers(file: &Path) -> (Vec<Server>, Option<String>) {
    let ws = file.parent().expect("workspace").to_path_buf();
    // `toolhost serve`, over pipes or over a socket pair.
    let served = |name, socket| Server {
        name,
        command: Box::new({
            let ws = ws.clone();
            move || {
                let mut cmd = toolhost(&ws);
                cmd.arg("serve");
                cmd
            }
        }),
        pick_tool: |_| "Read",
        arguments: |file| json!({"file_path": file}),
        socket,
    };
    let mut servers = vec![
        served("toolhost", false),
        Server {
            name: "floor",
            command: Box::new(|| {
                let mut cmd = Command::new(std::env::current_exe().expect("bench executable"));
                cmd.arg(FLOOR_SERVER);
                cmd
            }),
            pick_tool: |_| "read",
            arguments: |file| json!({"path": file}),
            socket: false,
        },
        served(OVER_A_SOCKET, true),
    ];
    let missing = match server_filesystem() {
        Err(why) => Some(why),
        Ok(entry) => {
            servers.push(Server {
                name: "server-filesystem",
                command: Box::new(move || {
                    let mut cmd = Command::new("node");
                    cmd.arg(&entry).arg(&ws);
                    cmd
                }),
                // `read_file` is the older name, deprecated but still offered.
                pick_tool: |tools| if tools.contains(&"read_text_file") { "read_text_file" } else { "read_file" },
                arguments: |file| json!({"path": file}),
                socket: false,
            });
            None
        }
    };
    (servers, missing)
}

/// The argument that makes this benchmark's executable the floor server.
pub(super) const FLOOR_SERVER: &str = "--floor-server";

/// The floor (`common::floor_server`): each `tools/call` opens and reads
/// the file it names and answers with its text.
pub(super) fn floor_server() {
    common::floor_server("read", |arguments| match std::fs::read_to_string(arguments["path"].as_str().unwrap_or("")) {
        Ok(text) => json!({"content": [{"type": "text", "text": text}]}),
        Err(e) => json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true}),
    });
}

/// An MCP server in a child process and the raw JSON-RPC 2.0 client talking
/// to it: one JSON message a line on its stdin and stdout. The writer and
/// the reader share one thread: at most 32 requests (about 5 KB) are ever
/// unread, far less than a pipe holds, so a write never waits on a server
/// that is itself waiting for its responses to be read.
pub(super) struct Client {
    pub(super) child: Child,
    pub(super) stdin: Box<dyn Write>,
    pub(super) stdout: BufReader<Box<dyn Read>>,
    pub(super) line: String,
    pub(super) next_id: u64,
    /// When each outstanding `tools/call` was sent, by request id.
    pub(super) sent: HashMap<u64, Instant>,
    /// `"method":"tools/call","params":{…}}` and a newline: a request once
    /// its id is put in front.
    pub(super) call_tail: String,
    /// What every result must contain: the file's first line.
    pub(super) expect: String,
    /// `tools/call`s answered so far.
    pub(super) calls: usize,
    /// The server's RSS in MiB after each `RSS_EVERY` calls.
    pub(super) rss: Vec<f64>,
}

impl Client {
    /// Starts `server`, initializes the session, and picks its reading tool.
    pub(super) fn start(server: &Server, file: &Path) -> Client {
        let mut command = (server.command)();
        command.stderr(Stdio::null());
        let (child, stdin, stdout): (Child, Box<dyn Write>, Box<dyn Read>) = if server.socket {
            let ours = toolhost_tests::socket_stdio(&mut command).expect("a socket pair");
            let child = command.spawn().unwrap_or_else(|e| panic!("starting {}: {e}", server.name));
            drop(command);
            (child, Box::new(ours.try_clone().expect("clone")), Box::new(ours))
        } else {
            let mut child = command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("starting {}: {e}", server.name));
            let stdin = child.stdin.take().expect("stdin");
            let stdout = child.stdout.take().expect("stdout");
            (child, Box::new(stdin), Box::new(stdout))
        };
        let stdout = BufReader::new(stdout);
        let text = std::fs::read_to_string(file).expect("small file");
        let mut client = Client {
            child,
            stdin,
            stdout,
            line: String::new(),
            next_id: 0,
            sent: HashMap::new(),
            call_tail: String::new(),
            expect: text.lines().next().expect("a first line").to_string(),
            calls: 0,
            rss: Vec::new(),
        };
        client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "toolhost-peers-bench", "version": "1.0.0"},
            }),
        );
        client.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let list = client.request("tools/list", json!({}));
        let names: Vec<&str> =
            list["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
        let tool = (server.pick_tool)(&names);
        assert!(names.contains(&tool), "{} offers no {tool}: {names:?}", server.name);
        let params = json!({"name": tool, "arguments": (server.arguments)(file)});
        client.call_tail = format!(r#""method":"tools/call","params":{params}}}"#) + "\n";
        client
    }

    pub(super) fn write(&mut self, message: &Value) {
        self.stdin.write_all(format!("{message}\n").as_bytes()).expect("write to the server");
    }

    /// The next response from the server, and when its line was read
    /// (notifications and requests from the server are skipped: the client
    /// declared no capabilities to answer them).
    pub(super) fn read(&mut self) -> (Value, Instant) {
        loop {
            self.line.clear();
            let n = self.stdout.read_line(&mut self.line).expect("read from the server");
            let received = Instant::now();
            assert!(n > 0, "the server closed its output");
            let message: Value = serde_json::from_str(&self.line).expect("a JSON-RPC message");
            if message.get("method").is_none() {
                return (message, received);
            }
        }
    }

    /// A request answered before the next one is sent; its result.
    pub(super) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let (response, _) = self.read();
        assert_eq!(response["id"], id, "{response}");
        response.get("result").cloned().unwrap_or_else(|| panic!("{method} failed: {response}"))
    }

    /// Sends one `tools/call`.
    pub(super) fn send_call(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        let request = format!(r#"{{"jsonrpc":"2.0","id":{id},{}"#, self.call_tail);
        self.sent.insert(id, Instant::now());
        self.stdin.write_all(request.as_bytes()).expect("write to the server");
    }

    /// Waits for the answer to one outstanding `tools/call`, checks it (a
    /// result, not an error, with the file's text) and returns its round
    /// trip in microseconds.
    pub(super) fn receive_call(&mut self) -> f64 {
        let (response, received) = self.read();
        let id = response["id"].as_u64().unwrap_or_else(|| panic!("a response without id: {response}"));
        let sent = self.sent.remove(&id).unwrap_or_else(|| panic!("an answer to no outstanding call: {response}"));
        let result = response.get("result").unwrap_or_else(|| panic!("tools/call failed: {response}"));
        assert_ne!(result["isError"], true, "{response}");
        let has_text = result["content"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().any(|b| b["text"].as_str().is_some_and(|t| t.contains(&self.expect))));
        assert!(has_text, "the result lacks the file's first line: {response}");
        self.calls += 1;
        if self.calls.is_multiple_of(RSS_EVERY) && self.rss.len() < RSS_MARKS {
            self.rss.push(self.rss_mib());
        }
        (received - sent).as_secs_f64() * 1e6
    }

    /// One call at a time: its round trip in microseconds.
    pub(super) fn call(&mut self) -> f64 {
        self.send_call();
        self.receive_call()
    }

    /// Keeps `k` calls in flight (sending one more as each is answered) for
    /// `window`, if any, or until `max` calls have been sent, then waits for
    /// the last answers.
    pub(super) fn in_flight(&mut self, k: usize, window: Option<Duration>, max: usize) -> Batch {
        let cpu = self.cpu_seconds();
        let start = Instant::now();
        let mut sent = 0;
        while sent < k.min(max) {
            self.send_call();
            sent += 1;
        }
        for answered in 1.. {
            self.receive_call();
            if sent < max && window.is_none_or(|w| start.elapsed() < w) {
                self.send_call();
                sent += 1;
            }
            if answered == sent {
                break;
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        Batch { rate: sent as f64 / seconds, cpu_us: (self.cpu_seconds() - cpu) * 1e6 / sent as f64 }
    }

    /// The server's CPU time so far, user and system (fields 14 and 15 of
    /// `/proc/<pid>/stat`, in clock ticks), in seconds.
    pub(super) fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).expect("/proc/<pid>/stat");
        // The fields after the command's name (in parentheses, which may
        // hold spaces) start with field 3.
        let (_, rest) = stat.rsplit_once(')').expect("stat fields");
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |field: usize| fields[field - 3].parse::<u64>().expect("clock ticks");
        (ticks(14) + ticks(15)) as f64 / clock_ticks_per_second()
    }

    /// The server's resident set (`VmRSS`), in MiB.
    pub(super) fn rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("/proc/<pid>/status");
        let kib: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS");
        kib / 1024.0
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// A run with calls in flight: calls per second, and the server's CPU time
/// per call in microseconds.
pub(super) struct Batch {
    pub(super) rate: f64,
    pub(super) cpu_us: f64,
}

/// What one round measured of one server.
pub(super) struct Round {
    p50: f64,
    p99: f64,
    /// CPU time per call in microseconds, one at a time (the timed calls).
    pub(super) cpu_one_us: f64,
    /// The runs with `IN_FLIGHT` calls in flight.
    pub(super) batches: Vec<Batch>,
    /// RSS in MiB after each `RSS_EVERY` calls.
    pub(super) rss: Vec<f64>,
    /// RSS in MiB before and after `STEADY` calls at 32 in flight, at the end.
    pub(super) steady: [f64; 2],
}

/// toolhost over a socket pair against toolhost over pipes, same rounds.
fn over_a_socket(pipes: &[Round], socket: &[Round]) {
    println!(
        "\n| toolhost serving a 1 KB Read ({ROUNDS} rounds: median (min–max)) | over pipes | over a socket pair | socket / pipes |"
    );
    println!("|---|---|---|---|");
    type Figure = (&'static str, fn(&Round) -> f64, usize, &'static str);
    let figures: [Figure; 3] = [
        ("round trip p50, one at a time", |r| r.p50, 1, "µs"),
        ("server CPU per call, one at a time", |r| r.cpu_one_us, 1, "µs"),
        ("throughput, 32 in flight", |r| r.batches.last().map_or(0.0, |b| b.rate), 0, "calls/s"),
    ];
    for (label, figure, decimals, unit) in figures {
        let p = Spread::of(pipes.iter().map(figure).collect());
        let s = Spread::of(socket.iter().map(figure).collect());
        println!(
            "| {label} | {} | {} | {} |",
            p.show(decimals, unit),
            s.show(decimals, unit),
            times(s.median / p.median)
        );
    }
}

/// One round against a fresh server process.
pub(super) fn round(server: &Server, file: &Path) -> Round {
    let mut client = Client::start(server, file);
    for _ in 0..WARM_UP {
        client.call();
    }
    let cpu = client.cpu_seconds();
    let latencies: Vec<f64> = (0..TIMED).map(|_| client.call()).collect();
    let cpu_one_us = (client.cpu_seconds() - cpu) * 1e6 / TIMED as f64;
    let latency = common::stats(latencies);
    let batches = IN_FLIGHT.iter().map(|&k| client.in_flight(k, Some(WINDOW), MAX_BATCH)).collect();
    let total = RSS_EVERY * RSS_MARKS;
    if client.calls < total {
        client.in_flight(32, None, total - client.calls);
    }
    assert_eq!(client.rss.len(), RSS_MARKS);
    let before = client.rss_mib();
    client.in_flight(32, None, STEADY);
    let steady = [before, client.rss_mib()];
    Round { p50: latency.p50, p99: latency.p99, cpu_one_us, batches, rss: std::mem::take(&mut client.rss), steady }
}

/// A figure over the rounds: their median and range.
#[derive(Clone, Copy)]
pub(super) struct Spread {
    pub(super) median: f64,
    pub(super) min: f64,
    pub(super) max: f64,
}

impl Spread {
    pub(super) fn of(mut values: Vec<f64>) -> Spread {
        values.sort_by(f64::total_cmp);
        Spread { median: values[values.len() / 2], min: values[0], max: values[values.len() - 1] }
    }

    /// "median unit (min–max)", `decimals` after the point.
    pub(super) fn show(&self, decimals: usize, unit: &str) -> String {
        format!("{:.*} {unit} ({:.*}–{:.*})", decimals, self.median, decimals, self.min, decimals, self.max)
    }
}

/// toolhost's target for a row of the MCP table.
pub(super) enum Target {
    None,
    AtMost(f64),
    /// At least this many times the reference server's figure.
    PeerTimes(f64),
    /// At most this many MiB after the last calls, and flat.
    FlatRss(f64),
    /// Flat over the `STEADY` calls at one load.
    SteadyRss,
}

/// RSS is "flat" if it grew by at most this many MiB between the first and
/// the last RSS reading.
pub(super) const FLAT_MIB: f64 = 1.0;

/// A row of the MCP table: a figure of each round, shown with `decimals`
/// and `unit`; the ratio of throughputs reads "× peer".
pub(super) struct Row {
    pub(super) label: String,
    pub(super) figure: Box<dyn Fn(&Round) -> f64>,
    pub(super) decimals: usize,
    pub(super) unit: &'static str,
    pub(super) throughput: bool,
    pub(super) target: Target,
}

pub(super) fn rows() -> Vec<Row> {
    let row = |label: String, figure: Box<dyn Fn(&Round) -> f64>, decimals, unit, target| Row {
        label,
        figure,
        decimals,
        unit,
        throughput: unit == "calls/s",
        target,
    };
    let mut rows = vec![
        row("round trip p50, one at a time".into(), Box::new(|r| r.p50), 1, "µs", Target::AtMost(200.0)),
        row("round trip p99, one at a time".into(), Box::new(|r| r.p99), 1, "µs", Target::None),
        row("server CPU per call, one at a time".into(), Box::new(|r| r.cpu_one_us), 1, "µs", Target::AtMost(60.0)),
    ];
    for (i, k) in IN_FLIGHT.into_iter().enumerate() {
        let figure = Box::new(move |r: &Round| r.batches[i].cpu_us);
        rows.push(row(format!("server CPU per call, {k} in flight"), figure, 1, "µs", Target::AtMost(60.0)));
    }
    for (i, k) in IN_FLIGHT.into_iter().enumerate() {
        let target = if k == 32 { Target::PeerTimes(4.0) } else { Target::None };
        rows.push(row(
            format!("throughput, {k} in flight"),
            Box::new(move |r| r.batches[i].rate),
            0,
            "calls/s",
            target,
        ));
    }
    for (mark, target) in [(0, Target::None), (RSS_MARKS - 1, Target::FlatRss(25.0))] {
        let label = format!("server RSS after {},000 calls", (mark + 1) * RSS_EVERY / 1000);
        rows.push(row(label, Box::new(move |r| r.rss[mark]), 1, "MiB", target));
    }
    rows.push(row(
        format!("server RSS after {},000 more calls at 32 in flight", STEADY / 1000),
        Box::new(|r| r.steady[1]),
        1,
        "MiB",
        Target::SteadyRss,
    ));
    rows
}

pub(super) fn mcp() {
    let file = small_file();
    let (servers, missing) = servers(&file);
    if let Some(why) = &missing {
        eprintln!("{why}\nthe server-filesystem columns stay empty");
    }
    let mut rounds: Vec<Vec<Round>> = servers.iter().map(|_| Vec::new()).collect();
    let mut machine = Vec::new();
    for r in 0..ROUNDS {
        let state = common::Machine::now();
        for (server, results) in servers.iter().zip(&mut rounds) {
            let m = round(server, &file);
            eprintln!(
                "round {r}, {}: p50 {:.1} µs, p99 {:.1} µs, CPU/call {:.1} µs; {} calls/s at {:?} in flight; RSS {:.1?} MiB, at a steady 32 in flight {:.1?} MiB",
                server.name,
                m.p50,
                m.p99,
                m.cpu_one_us,
                m.batches.iter().map(|b| format!("{:.0}", b.rate)).collect::<Vec<_>>().join(" / "),
                IN_FLIGHT,
                m.rss,
                m.steady
            );
            results.push(m);
        }
        machine.push(format!("round {}: {}", r + 1, state.describe()));
    }

    let of = |name: &str| servers.iter().position(|s| s.name == name).map(|i| &rounds[i]);
    let (toolhost, floor, peer) = (&rounds[0], &rounds[1], of("server-filesystem"));
    let not_run = if peer.is_some() { "" } else { " (not run)" };
    println!(
        "| read a 1 KB file over MCP stdio ({ROUNDS} rounds: median (min–max)) | toolhost | floor (one thread, no SDK) | server-filesystem {SERVER_FILESYSTEM_VERSION}{not_run} | toolhost / server-filesystem | target |"
    );
    println!("|---|---|---|---|---|---|");
    for row in rows() {
        let t = Spread::of(toolhost.iter().map(&row.figure).collect());
        let f = Spread::of(floor.iter().map(&row.figure).collect());
        let p = peer.map(|p| Spread::of(p.iter().map(&row.figure).collect()));
        let ratio = p.map_or("—".into(), |p| {
            let ratio = times(t.median / p.median);
            if row.throughput { format!("{ratio} peer") } else { ratio }
        });
        let target = match row.target {
            Target::None => String::new(),
            Target::AtMost(limit) => format!("≤ {limit} {} {}", row.unit, tick(t.median <= limit)),
            Target::PeerTimes(factor) => p.map_or(format!("≥ {factor}× server-filesystem (no peer)"), |p| {
                format!("≥ {factor}× server-filesystem {}", tick(t.median >= factor * p.median))
            }),
            Target::FlatRss(limit) => {
                let grew = Spread::of(toolhost.iter().map(|r| r.rss[RSS_MARKS - 1] - r.rss[0]).collect()).median;
                let flat = grew <= FLAT_MIB;
                format!(
                    "≤ {limit} MiB and flat {} (grew {grew:+.1} MiB from 10,000 calls)",
                    tick(t.median <= limit && flat)
                )
            }
            Target::SteadyRss => {
                let grew = Spread::of(toolhost.iter().map(|r| r.steady[1] - r.steady[0]).collect()).median;
                format!("flat at one load {} (grew {grew:+.1} MiB)", tick(grew <= FLAT_MIB))
            }
        };
        println!(
            "| {} | {} | {} | {} | {ratio} | {target} |",
            row.label,
            t.show(row.decimals, row.unit),
            f.show(row.decimals, row.unit),
            p.map_or("—".into(), |p| p.show(row.decimals, row.unit))
        );
    }
    if let Some(socket) = of(OVER_A_SOCKET) {
        over_a_socket(toolhost, socket);
    }
    println!("\nMeasured in (each round runs every server in turn): {}.\n", machine.join("; "));
    if let Some(why) = &missing {
        println!("server-filesystem was not measured: {why}\n");
    }
    for (server, results) in servers.iter().zip(&rounds) {
        let marks: Vec<String> = (0..RSS_MARKS)
            .map(|m| format!("{:.1}", Spread::of(results.iter().map(|r| r.rss[m]).collect()).median))
            .collect();
        println!(
            "RSS of {} after {} calls (median of rounds): {} MiB.",
            server.name,
            (1..=RSS_MARKS).map(|m| format!("{},000", m * RSS_EVERY / 1000)).collect::<Vec<_>>().join(" / "),
            marks.join(" → ")
        );
    }
    println!(
        "\nOne client for both (raw JSON-RPC over stdio, one thread); each round a fresh server process: \
         {WARM_UP} warm-up + {TIMED} timed calls one at a time, then {} s (or {MAX_BATCH} calls) at each of \
         {IN_FLIGHT:?} in flight, topped up to {} calls at 32 in flight; then {STEADY} more at 32 in flight, \
         the RSS read before and after them. \"Flat\": RSS grew ≤ {FLAT_MIB} MiB from the first reading to the \
         last.",
        WINDOW.as_secs(),
        RSS_EVERY * RSS_MARKS
    );
}
