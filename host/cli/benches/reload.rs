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

    let restart = common::time(2, 20, || {
        let out = Command::new(TOOLHOST)
            .args(["--workspace", path(&workspace), "--plugins", path(&plugins), "tools"])
            .env("TOOLHOST_CACHE_DIR", &cache)
            .env("TOOLHOST_DATA_DIR", root.join("data"))
            .output()
            .expect("toolhost tools");
        assert!(out.status.success());
    });
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
    row("restart: `toolhost tools`, a new process", &restart);
    row("`reload_plugins`, nothing changed", &unchanged);
    row("`reload_plugins`, one component replaced (cached version)", &cached);
    row("`reload_plugins`, one component replaced (new bytes, compiled)", &fresh);
    row("watching host: file renamed in → `tools_changed` (150 ms debounce)", &watched);
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
