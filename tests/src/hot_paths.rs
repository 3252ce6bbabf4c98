//! The hot paths of the `toolhost` binary whose instructions are counted
//! (see [`crate::counts`]), in a fixed directory so every run sees the same
//! paths: `target/counts/<profile>/`.
//!
//! Every scenario runs the host as a user's agent would, one call at a time
//! and each waiting for its answer, with what would make a count depend on
//! the clock turned off: spare instances (made while no call runs), the
//! quick compile (swapped for the optimized one when a background compile
//! ends), watching the plugins directory. Under valgrind the pooling
//! allocator cannot reserve its address space (valgrind's is smaller), so
//! every count uses the on-demand allocator, floors included; and valgrind
//! does not know the Landlock system calls, so a command runs unconfined.

use crate::counts::{Exchange, Program, Scenario, WarmUp};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The calls counted after `WARM` calls, in every scenario of a `run` or
/// `serve` stream.
pub const WARM: usize = 20;
pub const MEASURED: usize = 200;

/// The directories and files the scenarios share.
pub struct Fixture {
    pub toolhost: PathBuf,
    pub root: PathBuf,
    pub workspace: PathBuf,
    pub cache: PathBuf,
    /// The file Read reads: 20 lines, about 1 KB.
    pub small: PathBuf,
}

impl Fixture {
    /// The fixture of `toolhost` (its profile names the directory).
    pub fn new(toolhost: &Path) -> Fixture {
        let profile = crate::counts::profile_of(toolhost);
        let root = crate::repo_root().join("target").join("counts").join(profile);
        let workspace = root.join("ws");
        for dir in ["ws/src", "data", "home", "plugins"] {
            std::fs::create_dir_all(root.join(dir)).expect("the counts' directories");
        }
        let small = workspace.join("small.txt");
        let text: String = (1..=20)
            .map(|i| format!("line {i:02}: the quick brown fox jumps over the lazy dog {:04}\n", i * 37))
            .collect();
        std::fs::write(&small, text).expect("the small file");
        // What Grep searches: 20 files of 50 short lines.
        for f in 0..20 {
            let body: String = (0..50).map(|j| format!("fn f{f}_{j}() {{ println!(\"{j}\"); }}\n")).collect();
            std::fs::write(workspace.join("src").join(format!("f{f:02}.rs")), body).expect("a source file");
        }
        // The compile cache the end-to-end tests share (what it holds only
        // decides whether a start compiles, and a counted start never does).
        Fixture { toolhost: toolhost.to_path_buf(), cache: crate::shared_cache_dir(), root, workspace, small }
    }

    /// `toolhost COMMAND` with the flags every count uses.
    pub fn host(&self, command: &str, cache: &Path) -> Program {
        Program::new(&self.toolhost, &self.workspace)
            .arg(command)
            .args(["--allocator", "on-demand", "--spare-instances-above", "off", "--quick-compile-above", "off"])
            .args(["--child-confinement", "best-effort"])
            .env("HOME", self.root.join("home"))
            .env("TOOLHOST_DATA_DIR", self.root.join("data"))
            .env("TOOLHOST_CACHE_DIR", cache)
            .env("TOOLHOST_PLUGINS", self.root.join("plugins"))
    }

    /// The first native run of a stream links every tool in the background
    /// and caches what it compiles; the counted runs then find it all cached.
    fn warm_up() -> Option<WarmUp> {
        Some(WarmUp {
            log: "toolhost::host::reload=debug".into(),
            done: "linked in the background".into(),
            within: Duration::from_secs(600),
        })
    }

    /// Calls of `tool` with `input` in a `toolhost run` stream with `extra`
    /// flags.
    pub fn run(&self, name: &str, what: &str, tool: &'static str, input: Value, extra: &[&str]) -> Scenario {
        let program = self.host("run", &self.cache).args(["--no-watch", "--max-concurrency", "1"]).args(extra);
        Scenario {
            name: name.into(),
            what: what.into(),
            program,
            opening: Vec::new(),
            op: Some(Box::new(move |i| Exchange::tool_use(&format!("toolu_{i:04}"), tool, input.clone()))),
            warm: WARM,
            measured: MEASURED,
            warm_up: Self::warm_up(),
            floor: Vec::new(),
            reset: Vec::new(),
            socket: false,
        }
    }

    /// The MCP opening: `initialize`, then `notifications/initialized`.
    pub fn mcp_opening() -> Vec<Exchange> {
        vec![
            Exchange::request(
                0,
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "counts", "version": "1"}}),
            ),
            Exchange::notification("notifications/initialized"),
        ]
    }

    /// `tools/call` of Read of the small file, the `i`th.
    pub fn mcp_read_call(small: &Path) -> impl Fn(usize) -> Exchange + Send + Sync + 'static {
        let small = small.to_path_buf();
        move |i| {
            Exchange::request(i as u64 + 1, "tools/call", json!({"name": "Read", "arguments": {"file_path": small}}))
        }
    }

    /// A small Read over stdio MCP, the server's side.
    pub fn mcp_read(&self) -> Scenario {
        Scenario {
            name: "mcp.read".into(),
            what: "`tools/call` Read of 1 KB over stdio MCP (`toolhost serve`)".into(),
            program: self.host("serve", &self.cache).arg("--no-watch"),
            opening: Self::mcp_opening(),
            op: Some(Box::new(Self::mcp_read_call(&self.small))),
            warm: WARM,
            measured: MEASURED,
            warm_up: Self::warm_up(),
            floor: vec!["floor.mcp".into(), "floor.guest.read".into()],
            reset: Vec::new(),
            socket: false,
        }
    }

    /// The same over one socket pair instead of two pipes (as Node's child
    /// processes get their standard input and output).
    pub fn mcp_read_socket(&self) -> Scenario {
        let mut s = self.mcp_read();
        s.name = "mcp.read-socket".into();
        s.what = "the same over a socket pair (as Node clients connect)".into();
        s.socket = true;
        s
    }

    pub fn run_read(&self) -> Scenario {
        let input = json!({"file_path": self.small});
        let mut s = self.run("run.read", "Read of 1 KB in a `toolhost run` stream", "Read", input, &[]);
        s.floor = vec!["floor.guest.read".into()];
        s
    }

    pub fn run_grep(&self) -> Scenario {
        let input = json!({"pattern": "f1_\\d+", "path": self.workspace.join("src"), "output_mode": "count"});
        Self::fewer(self.run("run.grep", "Grep of 20 files of 2 KB in a `toolhost run` stream", "Grep", input, &[]))
    }

    /// A scenario whose operation is costly enough (millions of
    /// instructions) that fewer of them give the same precision.
    fn fewer(mut s: Scenario) -> Scenario {
        (s.warm, s.measured) = (5, 20);
        s
    }

    pub fn run_bash_true(&self) -> Scenario {
        let input = json!({"command": "true"});
        Self::fewer(self.run(
            "run.bash-true",
            "Bash `true` in a `toolhost run` stream (the host's side)",
            "Bash",
            input,
            &["--allow", "Bash(true)"],
        ))
    }

    pub fn run_script(&self) -> Scenario {
        let input = json!({"code": "return 1"});
        Self::fewer(self.run("run.script-1", "a Script returning 1 (code mode)", "Script", input, &["--code-mode"]))
    }

    /// `toolhost tools` with an empty compile cache, counted whole.
    pub fn tools_fresh_cache(&self) -> Scenario {
        let cache = self.root.join("cache-fresh");
        Scenario {
            name: "tools.fresh-cache".into(),
            what: "`toolhost tools` on an empty cache (the whole process)".into(),
            program: self.host("tools", &cache),
            opening: Vec::new(),
            op: None,
            warm: 0,
            measured: 1,
            warm_up: None,
            floor: Vec::new(),
            reset: vec![cache],
            socket: false,
        }
    }

    /// The scenarios CI holds to their baselines (a minute or two under
    /// valgrind on two cores).
    pub fn quick(&self) -> Vec<Scenario> {
        vec![self.mcp_read(), self.run_read(), self.run_grep(), self.run_bash_true(), self.run_script()]
    }
}
