//! End-to-end tests: the real `toolhost` binary and real components.
//!
//! One test binary, a module per topic. Every test gets its own sandbox
//! (workspace, plugins, data, home); compiled components are shared through
//! one cache directory.

mod support;

mod async_abi;
mod bash;
mod check;
mod cluster;
mod command;
mod compat;
mod counts;
mod deploy;
mod durability;
// libtest starts tests in the order of their names, four at a time
// (`.cargo/config.toml`): the fault soak, a minute or more, is named to start
// among the first, where it ran last and alone for most of its minute as
// `soak::`.
mod endurance;
mod file_tools;
mod grants;
mod hooks;
mod host_errors;
mod host_faults;
mod hostile_peers;
mod in_process;
mod install;
mod js;
mod limits;
mod linking;
mod mcp;
mod mcp_servers;
mod modes;
mod network;
mod new;
mod notebook;
mod oci;
mod otlp;
mod permissions;
mod plain;
mod prompt;
mod python;
mod quick;
mod reload;
mod run;
mod scheduler;
mod script;
mod shell_parser;
mod startup;
mod state;
mod telemetry;
mod third_party;
mod tools_list;
mod toolsearch;
mod webfetch;
