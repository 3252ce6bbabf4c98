//! `toolhost serve`: the tools over the Model Context Protocol, on stdio or
//! streamable HTTP.

use crate::start::{FrontArgs, HostArgs};
use anyhow::Context as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use toolhost::Host;

/// Serve the tools over the Model Context Protocol: on stdin/stdout, or
/// streamable HTTP with --http (see docs/cli.md)
#[derive(clap::Args)]
pub struct Args {
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio: an
    /// address such as 127.0.0.1:8765, or a port alone for loopback
    /// (port 0: any free port, printed on stderr)
    #[arg(long, value_name = "ADDR", value_parser = http_address)]
    http: Option<std::net::SocketAddr>,
    /// Require `Authorization: Bearer TOKEN` on HTTP, the tokens read
    /// from this file: one `NAME TOKEN` per line (the name is who calls,
    /// in the audit log; sessions belong to it), or one bare token (or
    /// $TOOLHOST_HTTP_TOKEN); required off loopback
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// On SIGTERM or Ctrl-C, how long running calls may go on (while no
    /// new ones are taken) before they are cancelled and the server exits
    #[arg(long, value_name = "SECONDS", default_value = "30")]
    drain_timeout: u64,
    /// Also accept this Host header on HTTP, e.g. the name of a
    /// non-loopback address (repeatable)
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// Also accept requests from this browser origin, e.g.
    /// https://app.example.com:443 (repeatable)
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,
    #[command(flatten)]
    front: FrontArgs,
    /// Keep the session's state on disk under this id (stdio only), saved
    /// after every call: a server restarted with the same id goes on
    /// where it stopped, killed or not (files read may be edited)
    #[arg(long, value_name = "ID", conflicts_with = "http")]
    session: Option<String>,
    #[command(flatten)]
    pub host: HostArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Asks go to the client (elicitation), never to a terminal.
    let (started, max_concurrency) = args.front.start(&args.host)?;
    let config = toolhost_mcp::ServeConfig {
        max_concurrency,
        shared_state: started.shared_state.is_some(),
        ..Default::default()
    };
    let credentials = match args.token_file {
        Some(file) => {
            let text =
                std::fs::read_to_string(&file).with_context(|| format!("reading the token file {}", file.display()))?;
            toolhost_mcp::parse_credentials(&text)
                .map_err(|e| anyhow::anyhow!("the token file {}: {e}", file.display()))?
        }
        None => match std::env::var("TOOLHOST_HTTP_TOKEN").ok().filter(|t| !t.trim().is_empty()) {
            Some(token) => {
                toolhost_mcp::parse_credentials(&token).map_err(|e| anyhow::anyhow!("$TOOLHOST_HTTP_TOKEN: {e}"))?
            }
            None => Vec::new(),
        },
    };
    let (allowed_hosts, allowed_origins) = (args.allowed_hosts, args.allowed_origins);
    let drain_timeout = Duration::from_secs(args.drain_timeout);
    let http = args
        .http
        .map(|addr| (addr, toolhost_mcp::HttpConfig { credentials, allowed_hosts, allowed_origins, drain_timeout }));
    let session = args.session.map(|id| started.host.session(&id)).transpose()?;
    serve(started.host, config, http, session)
}

/// `--http`: an address, or a port alone on loopback.
fn http_address(s: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse().map_err(|_| format!("`{s}` is neither an address like 127.0.0.1:8765 nor a port"))
}

/// `toolhost serve`: MCP over stdio, or streamable HTTP.
fn serve(
    host: Host,
    config: toolhost_mcp::ServeConfig,
    http: Option<(std::net::SocketAddr, toolhost_mcp::HttpConfig)>,
    session: Option<Arc<toolhost::Session>>,
) -> anyhow::Result<ExitCode> {
    // One thread for the protocol (parsing, routing, notifications): the
    // calls run on the executor's workers. Fewer hand-offs per call than a
    // multi-threaded runtime (measured in `benches/mcp.rs`).
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let Some((addr, http)) = http else {
            return Ok(toolhost_mcp::serve_stdio(host, config, session).await?);
        };
        if !addr.ip().is_loopback() && http.credentials.is_empty() {
            anyhow::bail!(
                "serving on {addr}, which is not a loopback address, needs a bearer token: \
                 --token-file FILE or $TOOLHOST_HTTP_TOKEN"
            );
        }
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("listening on {addr}"))?;
        let bound = listener.local_addr()?;
        eprintln!("toolhost: serving MCP at http://{bound}{}", toolhost_mcp::HTTP_PATH);
        let shutdown = tokio_util::sync::CancellationToken::new();
        let stop = shutdown.clone();
        // SIGTERM (an orchestrator stopping the server) or Ctrl-C: drain.
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
            eprintln!("toolhost: draining");
            stop.cancel();
        });
        Ok(toolhost_mcp::serve_http(host, config, http, listener, shutdown).await?)
    })?;
    Ok(ExitCode::SUCCESS)
}
