//! Hot loading against restarting: `cargo bench -p toolhost-cli --bench reload`.
//!
//! A plugins directory with the test guests (compiled and described in the
//! cache beforehand), measured in one run:
//! - `Host::reload_plugins` when nothing changed (a stat of each file);
//! - a reload after one component was replaced by a version already in the
//!   cache (read, hash, the cached compile and description, the swap);
//! - a reload after one component was replaced by bytes never seen (its
//!   compile included);
//! - the drop-in to `tools_changed` latency of a watching host (the
//!   debounce's 150 ms of quiet included);
//! - the alternative, a restart: `toolhost tools` as a new process with the
//!   same cached plugins.
//!
//! Prints a Markdown table: median and spread (10th–90th percentile) in
//! milliseconds, and each median over the restart's.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Instant;
use toolhost::Host;
use toolhost_tests::{put_atomically as put, with_custom_section};

const TOOLHOST: &str = env!("CARGO_BIN_EXE_toolhost");

fn main() {
    let root = toolhost_tests::repo_root().join("target").join("bench-data").join("reload");
    let _ = std::fs::remove_dir_all(&root);
    let (plugins, cache, workspace) = (root.join("plugins"), root.join("cache"), root.join("workspace"));
    for dir in [&plugins, &cache, &workspace] {
        std::fs::create_dir_all(dir).expect("bench dir");
    }
    let guests = [
        toolhost_tests::ECHO,
        toolhost_tests::SLEEPER,
        toolhost_tests::ADVERSARY,
        toolhost_tests::MOVER,
        toolhost_tests::CONTRACT_1_0,
        toolhost_tests::FETCHER,
    ];
    for guest in guests {
        let name = Path::new(guest).file_name().expect("name");
        std::fs::copy(guest, plugins.join(name)).expect("copy guest");
    }
    let echo = std::fs::read(toolhost_tests::ECHO).expect("echo");
    let echo_file = plugins.join(Path::new(toolhost_tests::ECHO).file_name().expect("name"));
    let versions = [with_custom_section(&echo, "bench", b"a"), with_custom_section(&echo, "bench", b"b")];
    let build = |watch: bool| {
        Host::builder()
            .workspace(&workspace)
            .plugins_dir(Some(plugins.clone()))
            .data_dir(root.join("data"))
            .cache_dir(Some(cache.clone()))
            .watch_plugins(watch)
            .build()
            .expect("host")
    };
    // Both versions compiled and described once, like every guest.
    for version in &versions {
        put(&echo_file, version);
        drop(build(false));
    }
    let host = build(false);
    assert!(host.problems().is_empty(), "{:?}", host.problems());
    let loaded = host.pool().len();

    // Whole processes: the floor (`--version`), the built-ins alone, the
    // plugins above, and twenty plugins (those, and fourteen copies of Echo
    // renamed in their bytes: fourteen more components, names and cache
    // entries).
    let many = root.join("plugins-20");
    std::fs::create_dir_all(&many).expect("bench dir");
    for guest in guests {
        let name = Path::new(guest).file_name().expect("name");
        std::fs::copy(guest, many.join(name)).expect("copy guest");
    }
    for i in 1..=14 {
        let (name, alias) = (format!("E{i:02}o"), format!("P{i:02}rot"));
        // The name is in the code too: LLVM writes a 4-byte string as one
        // `i32.const`.
        let bytes = renamed(&echo, &i32_const(b"Echo"), &i32_const(name.as_bytes()));
        let bytes = renamed(&renamed(&bytes, b"Echo", name.as_bytes()), b"Parrot", alias.as_bytes());
        std::fs::write(many.join(format!("echo-{i:02}.wasm")), bytes).expect("write copy");
    }
    let empty = root.join("no-plugins");
    std::fs::create_dir_all(&empty).expect("bench dir");
    let tools = |dir: &Path| {
        let out = Command::new(TOOLHOST)
            .args(["--workspace", path(&workspace), "--plugins", path(dir), "tools"])
            .env("TOOLHOST_CACHE_DIR", &cache)
            .env("TOOLHOST_DATA_DIR", root.join("data"))
            .output()
            .expect("toolhost tools");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("utf-8").lines().count()
    };
    let listed = tools(&many); // compiles and describes the copies once
    assert_eq!(listed, tools(&many));
    let floor = common::time(2, 30, || {
        assert!(Command::new(TOOLHOST).arg("--version").output().expect("toolhost --version").status.success());
    });
    let builtins_only = common::time(2, 30, || assert!(tools(&empty) > 0));
    let restart = common::time(2, 30, || assert!(tools(&plugins) > 0));
    let twenty = common::time(2, 30, || assert_eq!(tools(&many), listed));
    // A start links a cached tool at its first call: that call against a
    // later one.
    let echo_use =
        toolhost::ToolUse { id: "toolu_1".into(), name: "Echo".into(), input: serde_json::json!({"text": "x"}) };
    let call = |host: &Host| {
        let started = Instant::now();
        let r = host.call(&host.ephemeral_session(), &echo_use, &toolhost::CallOptions::default());
        assert!(!r.is_error, "{r:?}");
        started.elapsed()
    };
    let mut first = Vec::new();
    for _ in 0..20 {
        let fresh = build(false);
        first.push(call(&fresh).as_secs_f64() * 1e6);
    }
    let first = common::stats(first);
    let later = common::stats((0..200).map(|_| call(&host).as_secs_f64() * 1e6).collect());
    let unchanged = common::time(5, 200, || assert!(host.reload_plugins().is_none()));
    let mut n = 1;
    let cached = common::time(2, 40, || {
        n += 1;
        put(&echo_file, &versions[n % 2]);
        assert_eq!(host.reload_plugins().expect("a change").replaced, ["Echo"]);
    });
    let fresh = common::time(1, 10, || {
        n += 1;
        put(&echo_file, &with_custom_section(&echo, "bench", format!("fresh {n} {:?}", Instant::now()).as_bytes()));
        assert_eq!(host.reload_plugins().expect("a change").replaced, ["Echo"]);
    });
    drop(host);
    let watching = build(true);
    let mut changes = watching.tools_changed();
    let watched = common::time(1, 10, || {
        n += 1;
        put(&echo_file, &versions[n % 2]);
        let change = changes.blocking_recv().expect("a change");
        assert_eq!(change.replaced, ["Echo"]);
    });

    let base = restart.p50;
    let row = |what: &str, s: &common::Stats| {
        println!(
            "| {what} | {:.2} ms | {:.2}–{:.2} ms | {:.3}× |",
            s.p50 / 1e3,
            s.p10 / 1e3,
            s.p90 / 1e3,
            s.p50 / base
        );
    };
    println!("{loaded} tools ({} plugins), all cached\n", guests.len());
    println!("| what | median | p10–p90 | over a restart |");
    println!("|---|---|---|---|");
    row("process floor: `toolhost --version`", &floor);
    row("start: `toolhost tools`, built-ins only", &builtins_only);
    row("restart: `toolhost tools`, a new process", &restart);
    row(&format!("start: `toolhost tools`, 20 cached plugins ({listed} lines)"), &twenty);
    row("first call of a tool after a start (linked then)", &first);
    row("a later call of the same tool", &later);
    row("`reload_plugins`, nothing changed", &unchanged);
    row("`reload_plugins`, one component replaced (cached version)", &cached);
    row("`reload_plugins`, one component replaced (new bytes, compiled)", &fresh);
    row("watching host: file renamed in → `tools_changed` (150 ms debounce)", &watched);
}

/// The instruction `i32.const` of four bytes read as a little-endian number.
fn i32_const(four: &[u8]) -> Vec<u8> {
    let mut value = i64::from(i32::from_le_bytes(four.try_into().expect("four bytes")));
    let mut out = vec![0x41];
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if (value == 0 && byte & 0x40 == 0) || (value == -1 && byte & 0x40 != 0) {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

/// `bytes` with every `from` replaced by `to` (of the same length).
fn renamed(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let mut out = bytes.to_vec();
    let mut i = 0;
    while i + from.len() <= out.len() {
        if &out[i..i + from.len()] == from {
            out[i..i + from.len()].copy_from_slice(to);
            i += from.len();
        } else {
            i += 1;
        }
    }
    out
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
