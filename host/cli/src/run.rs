//! `toolhost run`: tool calls as JSON lines on stdin, many at once;
//! progress and results as JSON lines on stdout.

use crate::input;
use crate::start::{FrontArgs, HostArgs};
use serde_json::json;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost::Host;

/// Run tool calls from JSON lines on stdin, many at once, writing progress
/// and results as JSON lines on stdout (see docs/cli.md for the formats)
#[derive(clap::Args)]
pub struct Args {
    /// Keep session state on disk under this id
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    #[command(flatten)]
    front: FrontArgs,
    #[command(flatten)]
    pub host: HostArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Asks are never put to a terminal: `run` reads its calls from stdin.
    let (started, concurrency) = args.front.start(&args.host)?;
    run_front(&started.host, args.session, concurrency)
}

/// `toolhost run`: JSON lines in, JSON lines out, through the streaming
/// executor over one session.
fn run_front(host: &Host, session_id: Option<String>, max_concurrency: usize) -> anyhow::Result<ExitCode> {
    let session = match &session_id {
        Some(s) => host.session(s)?,
        None => host.ephemeral_session(),
    };
    let executor = Arc::new(toolhost::Executor::new(host.clone(), Arc::clone(&session), max_concurrency));
    // One writer at a time: results and progress from here, error lines
    // from the reader.
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let write = |out: &std::sync::Mutex<std::io::Stdout>, value: serde_json::Value| -> std::io::Result<()> {
        let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
        serde_json::to_writer(&mut *out, &value)?;
        out.write_all(b"\n")?;
        out.flush()
    };
    // A reload that changes the tools is a line of its own.
    {
        let mut changes = host.tools_changed();
        let out = Arc::clone(&out);
        std::thread::spawn(move || {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                let line = match changes.blocking_recv() {
                    Ok(change) if !change.tools_changed() => continue,
                    Ok(change) => json!({
                        "type": "tools_changed",
                        "added": change.added,
                        "removed": change.removed,
                        "replaced": change.replaced,
                    }),
                    Err(RecvError::Lagged(_)) => json!({"type": "tools_changed"}),
                    Err(RecvError::Closed) => return,
                };
                if write(&out, line).is_err() {
                    return;
                }
            }
        });
    }
    let reader = {
        let executor = Arc::clone(&executor);
        let out = Arc::clone(&out);
        std::thread::spawn(move || {
            let mut stream = input::InputStream::default();
            for (n, line) in std::io::stdin().lines().enumerate() {
                let Ok(line) = line else { break };
                for event in stream.feed(&line) {
                    match event {
                        input::Line::ToolUse(tool_use) => drop(executor.add_tool(tool_use)),
                        input::Line::Failed { id, message } => executor.add_failed(&id, message),
                        input::Line::Interrupt => executor.interrupt(),
                        input::Line::Discard => executor.discard(),
                        input::Line::Error(message) => {
                            let _ = write(&out, json!({"type": "error", "line": n + 1, "message": message}));
                        }
                    }
                }
            }
            for event in stream.finish() {
                if let input::Line::Failed { id, message } = event {
                    executor.add_failed(&id, message);
                }
            }
            executor.close();
        })
    };
    while let Some(update) = executor.next_blocking() {
        let line = match update {
            toolhost::Update::Progress(p) => {
                let mut line = json!({"type": "progress", "tool_use_id": p.tool_use_id, "message": p.message});
                if let Some(data) = p.data {
                    line["data"] = data;
                }
                line
            }
            toolhost::Update::Result(r) => {
                // What the call recorded is on disk before its result is
                // out: a `run` killed after a result loses nothing of it.
                if let Err(e) = session.save() {
                    eprintln!("toolhost: warning: could not save session state: {e}");
                }
                let mut line = r.to_json();
                line["type"] = json!("tool_result");
                line
            }
        };
        write(&out, line)?;
    }
    let _ = reader.join();
    if let Err(e) = session.save() {
        eprintln!("toolhost: warning: could not save session state: {e}");
    }
    Ok(ExitCode::SUCCESS)
}
