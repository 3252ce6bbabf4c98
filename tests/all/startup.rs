//! Starting with a warm cache: a start reads the descriptions of cached
//! components and links each at its first use; it hashes only plugin files
//! whose stamp changed since an earlier start. Starting with an empty one:
//! the built-ins are listed from the descriptions in the binary and each is
//! compiled at its first call.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolhost::{CallOptions, Host, ToolUse};
use toolhost_tests::{ECHO, SLEEPER, Sandbox, shared_cache_dir};

fn build(sb: &Sandbox, cache: &Path, link_in_background: bool) -> Host {
    Host::builder()
        .workspace(&sb.workspace)
        .plugins_dir(Some(sb.plugins.clone()))
        .data_dir(&sb.data)
        .cache_dir(Some(cache.to_path_buf()))
        .link_in_background(link_in_background)
        .build()
        .expect("host")
}

/// A cache of this sandbox's own holding everything compiled and described
/// (through the shared cache, so nothing is compiled twice per build).
fn private_cache(sb: &Sandbox) -> PathBuf {
    drop(build(sb, &shared_cache_dir(), false));
    let dir = sb.root.join("cache");
    let components = dir.join("components");
    std::fs::create_dir_all(&components).unwrap();
    for entry in std::fs::read_dir(shared_cache_dir().join("components")).unwrap().flatten() {
        let to = components.join(entry.file_name());
        if std::fs::hard_link(entry.path(), &to).is_err() {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
    dir
}

fn call(host: &Host, name: &str, input: Value) -> toolhost::ToolResult {
    let tool_use = ToolUse { id: format!("toolu_{name}"), name: name.into(), input };
    host.call(&host.ephemeral_session(), &tool_use, &CallOptions::default())
}

fn text(result: &toolhost::ToolResult) -> String {
    result.text()
}

fn linked(host: &Host, name: &str) -> bool {
    host.tool(name).unwrap_or_else(|| panic!("{name} loaded")).is_linked()
}

#[test]
fn a_start_links_each_cached_tool_at_its_first_use() {
    let sb = Sandbox::new();
    let echo_file = sb.install(ECHO);
    let cache = private_cache(&sb);

    let host = build(&sb, &cache, false);
    assert!(!linked(&host, "Echo") && !linked(&host, "Read"), "a start links nothing it found cached");
    assert_eq!(host.tool("Echo").unwrap().spec().description, "Echoes its input.");
    let r = call(&host, "Echo", json!({"text": "hi"}));
    assert_eq!((r.is_error, text(&r)), (false, "hi".to_string()));
    assert!(linked(&host, "Echo") && !linked(&host, "Read"));

    // A long-running front links them while it waits.
    let background = build(&sb, &cache, true);
    let until = std::time::Instant::now() + Duration::from_secs(60);
    while !(linked(&background, "Echo") && linked(&background, "Read")) && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(linked(&background, "Echo") && linked(&background, "Read"), "linked in the background");
    drop(background);

    // The compiled forms go missing after the start: a built-in is
    // compiled again from its bytes; a plugin whose file changed meanwhile
    // is refused, not served from bytes it was not described from.
    let host = build(&sb, &cache, false);
    for entry in std::fs::read_dir(cache.join("components")).unwrap().flatten() {
        if entry.path().extension().is_some_and(|x| x == "cwasm") {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    std::fs::copy(SLEEPER, &echo_file).unwrap();
    sb.write("a.txt", "one\n");
    let r = call(&host, "Read", json!({"file_path": sb.ws("a.txt")}));
    assert!(!r.is_error && text(&r).contains("one"), "{}", text(&r));
    let r = call(&host, "Echo", json!({"text": "hi"}));
    assert!(r.is_error, "{}", text(&r));
    assert!(text(&r).contains("changed since it was loaded"), "{}", text(&r));
}

#[test]
fn a_start_hashes_only_the_plugin_files_whose_stamp_changed() {
    let sb = Sandbox::new();
    let echo_file = sb.install(ECHO);
    let sleeper_file = sb.install(SLEEPER);
    let cache = private_cache(&sb);
    // A stamp is trusted once the file is older than the file system's
    // time resolution can blur (two seconds).
    std::thread::sleep(Duration::from_millis(2100));
    drop(build(&sb, &cache, false));
    let index = cache.join("plugin-hashes-v1.json");
    let mut known: Value = serde_json::from_slice(&std::fs::read(&index).expect("hashes saved")).unwrap();
    let key = |p: &Path| p.to_str().unwrap().to_string();
    let echo_hash = known["files"][key(&echo_file)][1].clone();
    assert!(echo_hash.is_string() && known["files"][key(&sleeper_file)][1].is_string(), "{known}");

    // The saved hash is used without reading the file while its stamp is
    // the same: told that Sleeper's file has Echo's bytes, a start
    // believes it.
    known["files"][key(&sleeper_file)][1] = echo_hash;
    std::fs::write(&index, known.to_string()).unwrap();
    let host = build(&sb, &cache, false);
    assert!(host.tool("Sleeper").is_none());
    let problems: Vec<String> = host.problems().iter().map(|p| format!("{}: {}", p.source, p.message)).collect();
    assert!(problems.iter().any(|p| p.contains("toolhost_guest_sleeper") && p.contains("`Echo`")), "{problems:?}");
    drop(host);

    // A new modification time is a new stamp: the file is read again.
    let file = std::fs::File::options().write(true).open(&sleeper_file).unwrap();
    file.set_modified(std::time::SystemTime::now()).unwrap();
    drop(file);
    let host = build(&sb, &cache, false);
    assert!(host.tool("Sleeper").is_some(), "{:?}", host.problems());
    assert!(host.problems().is_empty(), "{:?}", host.problems());
}

#[test]
fn a_first_start_lists_the_built_ins_without_compiling_and_compiles_each_at_its_first_call() {
    let sb = Sandbox::new();
    let cache = sb.root.join("empty-cache");
    let compiled = || -> usize {
        std::fs::read_dir(cache.join("components"))
            .map(|d| d.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "cwasm")).count())
            .unwrap_or(0)
    };
    let toolhost = |cache: &Path, args: &[&str]| {
        let out = crate::support::toolhost_command(&sb)
            .args(args)
            .env("TOOLHOST_CACHE_DIR", cache)
            .output()
            .expect("toolhost");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let listed = toolhost(&cache, &["tools"]);
    for name in ["Bash", "Edit", "Glob", "Grep", "Read", "Write", "WebFetch", "ToolSearch"] {
        assert!(listed.lines().any(|l| l.starts_with(name)), "{name} listed:\n{listed}");
    }
    assert_eq!(compiled(), 0, "listing compiled nothing");
    sb.write("a.txt", "one\n");
    let read = toolhost(&cache, &["call", "Read", &json!({"file_path": sb.ws("a.txt")}).to_string()]);
    assert!(read.contains("one"), "{read}");
    assert_eq!(compiled(), 1, "the first call compiled its tool only");
    // The same listing as a start that compiled and described them all.
    drop(build(&sb, &shared_cache_dir(), false));
    assert_eq!(toolhost(&shared_cache_dir(), &["tools"]), listed);
}
