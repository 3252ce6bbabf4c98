//! The bash parser, contained.
//!
//! tree-sitter-bash is C: tree-sitter's runtime, a generated grammar and a
//! hand-written external scanner of several hundred lines, reading commands
//! a model or a component wrote. Linked into the host, one of them (`{`
//! before a 4-byte character, tree-sitter-bash issue #337) read out of
//! bounds and took the whole host down. So the parser does not run in the
//! host's address space: `toolhost-shell` builds it, with the walker that
//! turns its tree into a [`Parsed`], into a wasm module with no imports, and
//! the host runs that module under wasmtime:
//!
//! - a fresh instance per command (a pooled slot, reset copy-on-write), so
//!   nothing one command does to the parser's memory is there for the next;
//! - a deadline, a memory limit and a wasm stack limit: a loop, a leak or a
//!   deep recursion in the C ends in a trap;
//! - its answer read as untrusted input ([`Parsed::from_guest`]): bounded,
//!   typed, checked.
//!
//! A trap, exhausted fuel or memory, a malformed answer or a parser that
//! cannot be loaded makes the command unparsable ([`Parsed::fault`]): never
//! read-only, never allowed by a rule, so the call asks (or is refused where
//! nothing can ask), with a warning in the log. The host goes on serving.
//!
//! Why this design and not another: tree-sitter's own wasm grammars still
//! run tree-sitter's runtime (C) natively; a parser process costs a process
//! per host and a round trip per command, and a library user would have to
//! ship its executable. A module of our own contains all of the C, needs
//! nothing but the engine the host already has, and costs a fresh instance
//! per command (measured in `docs/benchmarks.md`: `cargo bench -p toolhost-cli --bench
//! rules`).
//!
//! The compiled module is cached on disk like the tools (keyed by its hash
//! and the engine's), in the cache directory of the first [`Host`] built in
//! the process, else the default one.
//!
//! [`Host`]: crate::Host

use crate::epoch::Ticker;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, OnceLock};
use toolhost_shell::MAX_ANSWER;
pub use toolhost_shell::{MAX_COMMAND, Operator, Parsed};
pub(crate) use toolhost_shell::{Redirection, SimpleCommand};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, InstancePre, Linker, Module, ModuleExport, OptLevel,
    PoolingAllocationConfig, Store, StoreLimits, StoreLimitsBuilder,
};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/shell_parser.rs"));
}

/// How long one command may take, in epoch ticks ([`EPOCH_TICK`]): two
/// seconds, a hundred times what the slowest 64 KiB command takes here.
/// Epochs rather than fuel: fuel made the parse a third slower.
///
/// [`EPOCH_TICK`]: crate::epoch::EPOCH_TICK
const DEADLINE_TICKS: u64 = 400;
/// Memory for one command: the parser's tables and stack take 3 MiB, a
/// 64 KiB command's tree a few more.
const MEMORY: usize = 256 << 20;
/// The parser's wasm stack: enough for a tree [`MAX_DEPTH`] deep.
const WASM_STACK: usize = 1 << 20;
/// Host stack wanted free around a parse: the wasm stack plus wasmtime's
/// frames. A thread with less left runs the parse on a fresh segment.
const STACK_NEEDED: usize = WASM_STACK + (256 << 10);
/// Parses in flight at once; more wait for a slot.
const SLOTS: u32 = 16;

/// Parses `source` as bash in the parser's sandbox. Never fails: what cannot
/// be parsed, and any failure of the parser, sets [`Parsed::parse_error`].
pub fn parse(source: &str) -> Parsed {
    if let Some(parsed) = MEMO.lock().unwrap_or_else(|e| e.into_inner()).get(source) {
        return parsed;
    }
    let parsed = parse_fresh(source);
    if parsed.fault.is_none() {
        MEMO.lock().unwrap_or_else(|e| e.into_inner()).put(source, &parsed);
    }
    parsed
}

/// [`parse`] without the memo of recent commands: always a fresh instance
/// of the parser (what a command not seen lately costs).
pub fn parse_fresh(source: &str) -> Parsed {
    if source.len() > MAX_COMMAND {
        return Parsed::too_long();
    }
    let outcome = match parser() {
        Ok(parser) => stacker::maybe_grow(STACK_NEEDED, STACK_NEEDED + (1 << 20), || parser.parse(source)),
        Err(why) => Err(why.clone()),
    };
    outcome.unwrap_or_else(|why| {
        tracing::warn!(
            command = %preview(source),
            bytes = source.len(),
            fault = %why,
            "the shell parser failed; the command counts as unparsable"
        );
        Parsed::fault(why)
    })
}

/// The answers for the commands parsed last. One Bash call has its command
/// parsed by the permission step, the scheduler, the tool's own checks and
/// the spawn-time check; the parser's answer depends on the command alone,
/// so it is kept. A failure is not kept (it may not happen again).
static MEMO: Mutex<Memo> = Mutex::new(Memo { entries: Vec::new(), bytes: 0, clock: 0 });

/// Commands kept, and their bytes at most.
const MEMO_ENTRIES: usize = 64;
const MEMO_BYTES: usize = 1 << 20;

struct Memo {
    /// Each command, its answer, and when it was last asked for.
    entries: Vec<(String, Parsed, u64)>,
    bytes: usize,
    clock: u64,
}

impl Memo {
    fn get(&mut self, source: &str) -> Option<Parsed> {
        self.clock += 1;
        let clock = self.clock;
        let entry = self.entries.iter_mut().find(|(s, _, _)| s == source)?;
        entry.2 = clock;
        Some(entry.1.clone())
    }

    fn put(&mut self, source: &str, parsed: &Parsed) {
        if source.len() > MEMO_BYTES / 4 || self.entries.iter().any(|(s, _, _)| s == source) {
            return;
        }
        while self.entries.len() >= MEMO_ENTRIES || self.bytes + source.len() > MEMO_BYTES {
            let Some(oldest) = self.entries.iter().enumerate().min_by_key(|(_, e)| e.2).map(|(i, _)| i) else {
                break;
            };
            self.bytes -= self.entries.swap_remove(oldest).0.len();
        }
        self.clock += 1;
        self.bytes += source.len();
        self.entries.push((source.to_string(), parsed.clone(), self.clock));
    }
}

/// Sets where the compiled parser is cached (`None`: nowhere). Only the
/// first call in a process counts, and only before the first parse.
pub fn cache_in(dir: Option<PathBuf>) {
    let _ = CACHE_DIR.set(dir);
}

static CACHE_DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
static PARSER: OnceLock<Result<Parser, String>> = OnceLock::new();

fn parser() -> &'static Result<Parser, String> {
    PARSER.get_or_init(|| {
        let dir = CACHE_DIR.get_or_init(|| Some(crate::fsx::default_cache_dir()));
        Parser::load(dir.as_deref()).map_err(|e| {
            let why = format!("the shell parser could not be loaded: {e:#}");
            tracing::error!("{why}; every shell command counts as unparsable");
            why
        })
    })
}

/// The first 200 characters of a command, for the log.
fn preview(source: &str) -> String {
    match source.char_indices().nth(200) {
        Some((at, _)) => format!("{:?}…", &source[..at]),
        None => format!("{source:?}"),
    }
}

struct Parser {
    engine: Engine,
    pre: InstancePre<StoreLimits>,
    alloc: ModuleExport,
    parse: ModuleExport,
    memory: ModuleExport,
    slots: Slots,
    ticker: Ticker,
}

impl Parser {
    fn load(cache: Option<&Path>) -> wasmtime::Result<Parser> {
        let engine = match Engine::new(&config(true)) {
            Ok(engine) => engine,
            Err(e) => {
                tracing::debug!(error = %e, "no pooling allocator for the shell parser; allocating on demand");
                Engine::new(&config(false))?
            }
        };
        let module = compile(&engine, cache)?;
        let export = |name: &str| {
            module.get_export_index(name).ok_or_else(|| wasmtime::format_err!("the parser exports no `{name}`"))
        };
        let (alloc, parse, memory) =
            (export("toolhost_shell_alloc")?, export("toolhost_shell_parse")?, export("memory")?);
        // No imports: the module can compute and nothing else.
        let pre = Linker::new(&engine).instantiate_pre(&module)?;
        let ticker = Ticker::start([&engine]);
        Ok(Parser { engine, pre, alloc, parse, memory, slots: Slots::new(SLOTS), ticker })
    }

    fn parse(&self, source: &str) -> Result<Parsed, String> {
        let _slot = self.slots.take();
        let _ticking = self.ticker.enter();
        let limits = StoreLimitsBuilder::new()
            .memory_size(MEMORY)
            .memories(1)
            .tables(1)
            .instances(1)
            .trap_on_grow_failure(true)
            .build();
        let mut store = Store::new(&self.engine, limits);
        store.limiter(|limits| limits);
        store.set_epoch_deadline(DEADLINE_TICKS);
        let trapped = |e: wasmtime::Error| format!("{e:#}");
        let instance = self.pre.instantiate(&mut store).map_err(trapped)?;
        let func = |store: &mut Store<StoreLimits>, export: &ModuleExport| {
            instance.get_module_export(&mut *store, export).and_then(|e| e.into_func())
        };
        let (Some(alloc), Some(parse), Some(memory)) = (
            func(&mut store, &self.alloc),
            func(&mut store, &self.parse),
            instance.get_module_export(&mut store, &self.memory).and_then(|e| e.into_memory()),
        ) else {
            return Err("the parser's exports are not what it declares".into());
        };
        let alloc = alloc.typed::<u32, u32>(&store).map_err(trapped)?;
        let parse = parse.typed::<(u32, u32), u64>(&store).map_err(trapped)?;

        let len = u32::try_from(source.len()).map_err(|_| "the command is too long".to_string())?;
        let at = alloc.call(&mut store, len).map_err(trapped)?;
        memory.write(&mut store, at as usize, source.as_bytes()).map_err(|e| format!("writing the command: {e}"))?;
        let answer = parse.call(&mut store, (at, len)).map_err(trapped)?;
        let (start, len) = ((answer >> 32) as usize, (answer & 0xffff_ffff) as usize);
        if len > MAX_ANSWER {
            return Err(format!("its answer is {len} bytes, more than the {MAX_ANSWER} allowed"));
        }
        let bytes = memory
            .data(&store)
            .get(start..start.saturating_add(len))
            .ok_or_else(|| format!("its answer lies outside its memory ({start}+{len})"))?;
        Parsed::from_guest(bytes).map_err(|e| e.to_string())
    }
}

/// The parser's engine: epoch deadlines, no component model, a small
/// stack; pooled slots reset copy-on-write when `pooling`.
fn config(pooling: bool) -> Config {
    let mut config = Config::new();
    // No component-model concurrency: it costs every Store.
    config.concurrency_support(false);
    config.epoch_interruption(true);
    config.max_wasm_stack(WASM_STACK);
    config.memory_init_cow(true);
    // Its table is 70 entries: set up at once, not checked per indirect call.
    config.table_lazy_init(false);
    config.cranelift_opt_level(OptLevel::Speed);
    config.parallel_compilation(true);
    if pooling {
        let mut pool = PoolingAllocationConfig::new();
        pool.total_core_instances(SLOTS)
            .total_memories(SLOTS)
            .total_tables(SLOTS)
            .total_component_instances(0)
            .total_stacks(0)
            .max_memory_size(MEMORY)
            .max_memories_per_module(1)
            .max_tables_per_module(1)
            .linear_memory_keep_resident(4 << 20)
            .max_unused_warm_slots(SLOTS);
        if PoolingAllocationConfig::is_pagemap_scan_available() {
            pool.pagemap_scan(Enabled::Yes);
        }
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    config
}

/// The compiled parser: from the cache when a usable entry is there, else
/// compiled and cached. A cache that cannot be read or written only costs
/// the compile.
fn compile(engine: &Engine, cache: Option<&Path>) -> wasmtime::Result<Module> {
    let compile = || crate::artifacts::compile_apart(|| Module::new(engine, embedded::WASM));
    let Some(dir) = cache else { return compile() };
    // SAFETY: the file is one this host wrote into its own cache directory,
    // named by the hash of the parser and of the engine's configuration;
    // wasmtime also checks the engine recorded in it.
    let read = |path: &Path| crate::artifacts::saved(path, |p| unsafe { Module::deserialize_file(engine, p) });
    let path = dir.join("shell-parser").join(format!("{}.cwasm", cache_key(engine)));
    crate::artifacts::cached_or_compiled(&path, read, compile, Module::serialize)
}

fn cache_key(engine: &Engine) -> String {
    crate::artifacts::key("toolhost-shell-parser-v1", engine, embedded::SHA256)
}

/// A counting semaphore: at most as many parses as the pool has slots.
struct Slots {
    free: Mutex<u32>,
    freed: Condvar,
}

struct Slot<'a>(&'a Slots);

impl Slots {
    fn new(n: u32) -> Slots {
        Slots { free: Mutex::new(n), freed: Condvar::new() }
    }

    fn take(&self) -> Slot<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Slot(self)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::classify;
    use toolhost_shell::MAX_DEPTH;

    #[test]
    fn deep_nesting_is_refused_without_a_fault() {
        for deep in [
            "(".repeat(30_000) + "ls" + &")".repeat(30_000),
            "echo $(".repeat(10_000) + "x" + &")".repeat(10_000),
            "{ ".repeat(20_000) + "ls" + &"; }".repeat(20_000),
        ] {
            let parsed = parse(&deep);
            assert!(parsed.parse_error);
            assert!(!classify(&deep).read_only);
        }
        for nested in [
            "(".repeat(MAX_DEPTH / 2 - 5) + "ls" + &")".repeat(MAX_DEPTH / 2 - 5),
            "echo $(".repeat(MAX_DEPTH / 4 - 5) + "x" + &")".repeat(MAX_DEPTH / 4 - 5),
        ] {
            let parsed = parse(&nested);
            assert_eq!((parsed.parse_error, parsed.fault), (false, None), "nesting under the limit parses");
        }
        // A list of any length is one level, however long (64 KiB of `ls&&`).
        for (sep, n) in [(" && ", 10_000), ("&&", MAX_COMMAND / 4), (" | ", 5_000), ("\n", 10_000)] {
            let list = vec!["ls"; n].join(sep);
            let parsed = parse(&list);
            assert_eq!((parsed.parse_error, parsed.fault, parsed.commands.len()), (false, None, n), "{sep:?}");
        }
    }

    /// tree-sitter-bash's scanner reads out of bounds on `{` before a 4-byte
    /// character (upstream issue #337); natively that killed the host.
    #[test]
    fn the_scanner_crash_is_contained() {
        for command in ["{\u{E0000}", "{\u{1F600}", "ls; {\u{E0000}}; rm -rf /"] {
            let parsed = parse(command);
            assert!(parsed.parse_error, "{command:?}: {parsed:?}");
            assert!(!classify(command).read_only);
        }
        // A word that only contains the pair is an ordinary word.
        let parsed = parse("echo {\u{10FFFF}x");
        assert_eq!(parsed.commands[0].argv, ["echo", "{\u{10FFFF}x"]);
        assert!(classify("echo {\u{10FFFF}x").read_only);
        assert!(!parse("git status").parse_error, "the parser goes on serving");
    }

    /// Found by `shell_native` under AddressSanitizer: 133 bytes of nested
    /// backticks that tree-sitter-bash takes seconds to parse. Contained, the
    /// parse ends by its deadline at the latest, and the command is never
    /// read-only (finished or not).
    #[test]
    fn a_command_slow_to_parse_ends_and_is_not_read_only() {
        let command = "a\u{4}`\u{4}`\"\u{4}``````````````````````a`=a;a;;;``;`a`=a;a;;;``;```edirect\u{4}`\u{4}``ediprs;;;``;`a`=a;a;;;``;```ed)re  aqc,l; )Se $ \u{1e1} $ \u{1e1}\u{17}\u{7}x t\u{4}`a\u{4}";
        let parsed = parse_fresh(command);
        assert!(parsed.parse_error || parsed.command_substitution, "{parsed:?}");
        assert!(!classify(command).read_only);
        assert!(!parse("git status").parse_error, "the parser goes on serving");
    }

    #[test]
    fn structure_of_a_compound_command() {
        let p = parse("FOO=1 git status && ls -la src | grep '\\.rs' > out.txt 2>&1; echo \"done $X\"");
        assert!(!p.parse_error);
        let argvs: Vec<Vec<&str>> = p.commands.iter().map(|c| c.argv.iter().map(String::as_str).collect()).collect();
        assert_eq!(
            argvs,
            vec![vec!["git", "status"], vec!["ls", "-la", "src"], vec!["grep", "\\.rs"], vec!["echo", "\"done $X\""]]
        );
        assert_eq!(p.commands[0].assignments, vec!["FOO=1"]);
        assert_eq!(p.operators, vec![Operator::And, Operator::Pipe, Operator::Sequence]);
        let r = &p.commands[2].redirections;
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!((r[0].operator.as_str(), r[0].target.as_str(), r[0].writes()), (">", "out.txt", true));
        assert_eq!(
            (r[1].descriptor.as_deref(), r[1].operator.as_str(), r[1].target.as_str(), r[1].writes()),
            (Some("2"), ">&", "1", false)
        );
        assert!(p.variable_expansion && !p.command_substitution);
        assert_eq!(p.commands[3].dynamic, vec![false, true]);
    }

    #[test]
    fn flags_substitutions_heredocs_subshells_and_errors() {
        assert!(parse("cat $(rm -rf x)").command_substitution);
        assert!(parse("diff <(ls a) <(ls b)").process_substitution);
        assert!(parse("cat <<EOF\nhello\nEOF").heredoc);
        assert!(parse("(cd /tmp && ls)").subshell);
        assert!(parse("for f in *; do cat \"$f\"; done").control_flow);
        assert!(parse("echo 'unterminated").parse_error);
        let parsed = parse("cat $(rm -rf x)");
        let inner: Vec<&str> = parsed.commands.iter().map(|c| c.argv[0].as_str()).collect();
        assert_eq!(inner, vec!["rm", "cat"], "commands inside substitutions are listed too");
    }

    #[test]
    fn newlines_separate_statements() {
        let p = parse("git status\nrm x");
        assert_eq!(p.operators, vec![Operator::Sequence]);
        assert_eq!(p.commands.len(), 2);
    }
}
