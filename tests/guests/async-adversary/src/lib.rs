//! A hostile tool built on the component-model async ABI: its exports are
//! the contract's synchronous functions, and inside them it runs tasks,
//! futures and streams of its own (`block_on` waits in
//! `waitable-set.wait`), as JavaScript runtimes built by jco do. The input's `action` picks a state to get stuck in:
//! waiting on a future nothing will complete, writing to a stream nobody
//! reads, reading one nobody writes or closes, thousands of subtasks, a
//! task that yields forever, tasks that allocate without end. Each must end
//! at the call's deadline, its cancellation or its memory limit, or when
//! wasmtime sees that nothing can make progress any more.

wit_bindgen::generate!({
    inline: "
        package toolhost:async-adversary;

        /// Never called by the host: it makes the bindings carry a future
        /// and a stream type for the guest to use inside itself.
        interface pipes {
            carry: func(f: future<u32>, s: stream<u8>);
        }

        world async-adversary {
            include toolhost:tool/plugin@1.6.0;
            export pipes;
        }
    ",
    path: "../../../wit",
    generate_all,
});

use exports::toolhost::tool::tool::{CallContext, Guest, PermissionDecision};
use toolhost::tool::progress;
use toolhost::tool::types::{ContentBlock, InputRoles, InterruptBehavior, ToolError, ToolInfo, ToolOutput};
use wit_bindgen::{FutureReader, StreamReader, block_on, spawn_local, yield_async};

struct AsyncAdversary;

fn field(input: &str, key: &str) -> Option<serde_json::Value> {
    serde_json::from_str::<serde_json::Value>(input).ok()?.get(key).cloned()
}

fn text(s: impl Into<String>) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput { content: vec![ContentBlock::Text(s.into())], structured: None, is_error: false })
}

impl exports::toolhost::async_adversary::pipes::Guest for AsyncAdversary {
    fn carry(_f: FutureReader<u32>, _s: StreamReader<u8>) {}
}

impl Guest for AsyncAdversary {
    fn info() -> ToolInfo {
        ToolInfo {
            name: "AsyncAdversary".into(),
            aliases: vec![],
            description: "Gets stuck in the async ABI's states on request.".into(),
            prompt: "Test tool.".into(),
            search_hint: None,
            input_schema: r#"{"type":"object","properties":{"action":{"type":"string"},"n":{"type":"integer"}},"required":["action"]}"#.into(),
            output_schema: None,
            max_result_size_chars: Some(100_000),
            should_defer: false,
            always_load: false,
            interrupt_behavior: InterruptBehavior::Cancel,
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            input_roles: InputRoles { paths: vec![], command: None, addresses: vec![] },
            cancels_siblings_on_failure: false,
            reuse_instance: false,
            concurrency_safe_hint: Some(true),
            validates_input: true,
            checks_permissions: true,
        }
    }

    fn is_enabled() -> bool {
        true
    }

    fn is_concurrency_safe(_input: String) -> bool {
        true
    }

    fn is_read_only(_input: String) -> bool {
        true
    }

    fn is_destructive(_input: String) -> bool {
        false
    }

    fn validate_input(input: String, _ctx: CallContext) -> Result<(), ToolError> {
        // A validation that waits on a task of its own before answering.
        block_on(async move {
            let (tx, rx) = wit_future::new::<u32>(|| 0);
            spawn_local(async move {
                yield_async().await;
                let _ = tx.write(input.len() as u32).await;
            });
            rx.await;
            Ok(())
        })
    }

    fn check_permissions(input: String, _ctx: CallContext) -> PermissionDecision {
        PermissionDecision::Allow(Some(input))
    }

    fn call(input: String, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
        block_on(run(input))
    }
}

async fn run(input: String) -> Result<ToolOutput, ToolError> {
    let action = field(&input, "action").and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    let n = field(&input, "n").and_then(|v| v.as_u64()).unwrap_or(1000);
    match action.as_str() {
        // Yields to the host between steps, with progress, and makes and
        // drops a future and a stream of its own; nothing blocks.
        "ok" => {
            for i in 0..3 {
                progress::report(&format!("step {i}"), None);
                wit_bindgen::yield_blocking();
            }
            let (tx, rx) = wit_future::new::<u32>(|| 0);
            let (stx, srx) = wit_stream::new::<u8>();
            // Dropping a writer writes its default value: forgotten instead.
            std::mem::forget((tx, rx, stx, srx));
            text("3 steps done")
        }
        // Waits on a future whose writer is kept and never written.
        "future-never" => {
            let (tx, rx) = wit_future::new::<u32>(|| 0);
            let got = rx.await;
            drop(tx);
            text(format!("got {got}"))
        }
        // Writes to a stream whose reader is kept and never read.
        "stream-unread" => {
            let (mut tx, rx) = wit_stream::new::<u8>();
            tx.write_all(vec![0; 1 << 16]).await;
            drop(rx);
            text("written")
        }
        // Reads a stream whose writer is kept, never written or closed.
        "stream-unclosed" => {
            let (tx, mut rx) = wit_stream::new::<u8>();
            let (_status, got) = rx.read(Vec::with_capacity(16)).await;
            drop(tx);
            text(format!("read {}", got.len()))
        }
        // `n` subtasks, each waiting on a future of its own.
        "subtasks" => {
            let mut writers = Vec::new();
            for _ in 0..n {
                let (tx, rx) = wit_future::new::<u32>(|| 0);
                writers.push(tx);
                spawn_local(async move {
                    let _ = rx.await;
                });
            }
            yield_async().await;
            drop(writers);
            text("subtasks ended")
        }
        // Yields to the host forever, outside any executor.
        "yield-forever" => loop {
            wit_bindgen::yield_blocking();
        },
        // Subtasks that each keep a MiB, without end.
        "allocate" => {
            let mut kept = Vec::new();
            loop {
                let (tx, rx) = wit_future::new::<u32>(|| 0);
                spawn_local(async move {
                    let block = vec![1u8; 1 << 20];
                    let _ = tx.write(block.iter().map(|b| *b as u32).sum()).await;
                    std::mem::forget(block);
                });
                kept.push(rx.await);
            }
        }
        // Returns while a subtask of its own is still waiting.
        "leave-pending" => {
            let (tx, rx) = wit_future::new::<u32>(|| 0);
            spawn_local(async move {
                let _ = rx.await;
            });
            std::mem::forget(tx);
            text("returned with a task pending")
        }
        // WASI 0.2's blocking functions, called from inside the async ABI
        // (each waits in the host while the whole call is waited for).
        other => wasi_02(other, &input, n),
    }
}

fn string(input: &str, key: &str) -> String {
    field(input, key).and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// The actions that call WASI 0.2's functions that block in the host, as a
/// JavaScript runtime's `console.log` or a Rust library's `sleep` does.
fn wasi_02(action: &str, input: &str, n: u64) -> Result<ToolOutput, ToolError> {
    use std::io::{Read, Write};
    const HOUR_NS: u64 = 3_600_000_000_000;
    match action {
        // `n` lines to stdout (std's stdout: `blocking-write-and-flush`).
        "print" => {
            for i in 0..n {
                println!("line {i} of {n} from AsyncAdversary");
            }
            text(format!("printed {n} lines"))
        }
        // The same to stderr, unbuffered.
        "eprint" => {
            for i in 0..n {
                eprintln!("error line {i} of {n}");
            }
            text(format!("printed {n} lines to stderr"))
        }
        // `n` bytes in one write, flushed with `blocking-flush`.
        "write-flush" => {
            let mut out = std::io::stdout();
            let written = out.write_all(&vec![b'x'; n as usize]).and_then(|()| out.flush());
            text(format!("wrote {n} bytes: {written:?}"))
        }
        // Written through the stream's own functions, never flushed.
        "write-unflushed" => {
            let out = wasip2::cli::stdout::get_stdout();
            let permit = out.check_write().map_err(|e| err(format!("{e:?}")))?;
            let chunk = vec![b'y'; (n as usize).min(permit as usize)];
            out.write(&chunk).map_err(|e| err(format!("{e:?}")))?;
            std::mem::forget(out);
            text(format!("wrote {} bytes, unflushed", chunk.len()))
        }
        "log" => {
            progress::log(progress::LogLevel::Info, &string(input, "message"));
            text("logged")
        }
        // A clock's pollable, blocked on: `n` ms, or `forever`.
        "sleep" => {
            std::thread::sleep(std::time::Duration::from_millis(n));
            text(format!("slept {n} ms"))
        }
        "sleep-forever" => {
            wasip2::clocks::monotonic_clock::subscribe_duration(HOUR_NS).block();
            text("woke after an hour")
        }
        // `wasi:io/poll` over two clocks, the nearer `n` ms away.
        "poll" => {
            let near = wasip2::clocks::monotonic_clock::subscribe_duration(n * 1_000_000);
            let far = wasip2::clocks::monotonic_clock::subscribe_duration(HOUR_NS);
            let ready = wasip2::io::poll::poll(&[&far, &near]);
            text(format!("ready: {ready:?}"))
        }
        // stdin to its end (a tool's is empty).
        "stdin" => {
            let mut all = Vec::new();
            let read = std::io::stdin().read_to_end(&mut all);
            text(format!("read {} bytes from stdin: {read:?}", all.len()))
        }
        // The filesystem's synchronous calls: whatever it was granted.
        "list-dir" => {
            let path = string(input, "path");
            match std::fs::read_dir(if path.is_empty() { "." } else { &path }) {
                Ok(entries) => text(format!("{} entries", entries.count())),
                Err(e) => text(format!("cannot list: {e}")),
            }
        }
        // A socket: connect, send a line, read to the end.
        "connect" => {
            let answer = (|| {
                let mut stream = std::net::TcpStream::connect(string(input, "target"))?;
                stream.write_all(b"hello\n")?;
                let mut answer = String::new();
                stream.read_to_string(&mut answer)?;
                Ok::<_, std::io::Error>(answer)
            })();
            text(format!("connect: {answer:?}"))
        }
        // `wasi:http`: a GET of `target` (host:port), its body read to the end.
        "http" => text(format!("http: {:?}", http_get(&string(input, "target")))),
        other => text(format!("unknown action {other:?}")),
    }
}

fn err(message: String) -> ToolError {
    ToolError { kind: toolhost::tool::types::ErrorKind::Io, message }
}

fn http_get(authority: &str) -> Result<usize, String> {
    use wasip2::http::types::{Fields, OutgoingRequest, Scheme};
    let request = OutgoingRequest::new(Fields::new());
    request.set_scheme(Some(&Scheme::Http)).map_err(|()| "scheme")?;
    request.set_authority(Some(authority)).map_err(|()| "authority")?;
    request.set_path_with_query(Some("/")).map_err(|()| "path")?;
    let future = wasip2::http::outgoing_handler::handle(request, None).map_err(|e| format!("refused: {e:?}"))?;
    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(r))) => r,
        other => return Err(format!("no response: {other:?}")),
    };
    let body = response.consume().map_err(|()| "no body")?;
    let stream = body.stream().map_err(|()| "no stream")?;
    let mut bytes = 0;
    while let Ok(chunk) = stream.blocking_read(1 << 16) {
        bytes += chunk.len();
    }
    Ok(bytes)
}

export!(AsyncAdversary);
