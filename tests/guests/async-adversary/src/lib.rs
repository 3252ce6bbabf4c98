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
        other => text(format!("unknown action {other:?}")),
    }
}

export!(AsyncAdversary);
