//! The checkers of toolhost's fuzz targets: one function per surface that
//! parses what a model, a client, a settings file or a component hands the
//! host. Each takes the fuzzer's bytes and panics when an invariant breaks.
//!
//! The same functions run three ways: under libFuzzer (`fuzz_targets/`,
//! driven by `fuzz/run`), and in `cargo test` on the saved corpus (every
//! input that ever broke one stays there) and on inputs from a fixed seed
//! (`tests/replay.rs`).

pub mod component;
pub mod exports;
pub mod fronts;
pub mod guest;
pub mod install;
pub mod plugins;
pub mod policy;
pub mod primitives;
pub mod shell;

/// A fuzz target: its name (the directory of its corpus) and its checker.
pub struct Target {
    pub name: &'static str,
    pub check: fn(&[u8]),
    /// Fixed-seed inputs `cargo test` runs (beside the corpus): at most a
    /// few seconds' worth each in the test build (the `ci` profile; an
    /// input of `webfetch_html` is a page of HTML, one of `mcp_sessionless`
    /// runs tools: 16 ms and 230 ms each there).
    pub seeded: usize,
}

/// Every target whose checker runs in `cargo test`.
pub const TARGETS: &[Target] = &[
    Target { name: "shell", check: shell::shell, seeded: 600 },
    Target { name: "rules", check: policy::rules, seeded: 20_000 },
    Target { name: "decide", check: policy::decide, seeded: 300 },
    Target { name: "settings", check: policy::settings, seeded: 5_000 },
    Target { name: "hooks", check: policy::hooks, seeded: 20_000 },
    Target { name: "component", check: component::component, seeded: 5_000 },
    Target { name: "hosts", check: component::hosts, seeded: 20_000 },
    Target { name: "schema", check: component::schema, seeded: 3_000 },
    Target { name: "run_input", check: fronts::run_input, seeded: 20_000 },
    Target { name: "repair", check: guest::repair, seeded: 20_000 },
    Target { name: "mcp_stdio", check: fronts::mcp_stdio, seeded: 150 },
    Target { name: "mcp_sessionless", check: fronts::mcp_sessionless, seeded: 40 },
    Target { name: "mcp_http", check: fronts::mcp_http, seeded: 150 },
    Target { name: "mcp_tool", check: fronts::mcp_tool, seeded: 20_000 },
    Target { name: "mcp_server_lines", check: fronts::mcp_server_lines, seeded: 20_000 },
    Target { name: "signatures", check: install::signatures, seeded: 2_000 },
    Target { name: "sigstore", check: install::sigstore, seeded: 2_000 },
    Target { name: "session_paths", check: fronts::session_paths, seeded: 5_000 },
    Target { name: "token_file", check: fronts::token_file, seeded: 20_000 },
    Target { name: "notebook_json", check: plugins::notebook_json, seeded: 20_000 },
    Target { name: "read_notebook", check: plugins::read_notebook, seeded: 10_000 },
    Target { name: "read_pdf", check: plugins::read_pdf, seeded: 2_000 },
    Target { name: "webfetch_html", check: plugins::webfetch_html, seeded: 600 },
    Target { name: "script_code", check: plugins::script_code, seeded: 3_000 },
    Target { name: "guest_info", check: guest::info, seeded: 10_000 },
    Target { name: "guest_output", check: guest::output, seeded: 5_000 },
    Target { name: "guest_decision", check: guest::decision, seeded: 20_000 },
    Target { name: "plain_values", check: exports::plain_values, seeded: 20_000 },
    Target { name: "wassette_policy", check: exports::wassette_policy, seeded: 5_000 },
    Target { name: "package_docs", check: exports::package_docs, seeded: 5_000 },
    Target { name: "command", check: exports::command, seeded: 20_000 },
    Target { name: "paths", check: primitives::paths, seeded: 20_000 },
    Target { name: "host_names", check: primitives::host_names, seeded: 20_000 },
];

/// The directory of the saved corpus of target `name` (its regressions
/// included: every input that once broke it).
pub fn corpus_dir(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join(name)
}

/// Where compiled components (the built-ins, the shell parser) are cached
/// for every checker: the test suite's shared cache.
pub(crate) fn cache_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("target").join("test-cache")
}
