//! Loading components: reading a file's header, compiling (through the
//! cache), checking the shape and the grants, linking, and asking the tool
//! to describe itself once.

use super::builtins;
use super::cache;
use super::pool::Registry;
use super::tool::{Hints, InputRoles, LoadError, LoadedTool, Origin, PathAccess, PathField, ToolSpec};
use crate::contract::ToolPre;
use crate::contract::bindings::toolhost::tool::types as wit;
use crate::contract::bindings::{InterruptBehavior, ToolInfo};
use crate::contract::{self, CallScope, Capability, Namespace, Requests};
use crate::fsx::Dirs;
use crate::sandbox::{CallLimits, Captured, FileAccess, Grants, GuestFault, Sandbox};
use crate::session::Session;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use wasmtime::component::Component;

/// Loads components into a registry.
pub struct Loader<'a> {
    pub sandbox: &'a Sandbox,
    /// Where compiled components (and built-ins' descriptions) are cached.
    pub cache_dir: Option<&'a Path>,
    /// The session loading calls see.
    pub session: &'a Arc<Session>,
    /// What the operator grants each third-party tool (`toolGrants`).
    pub grants: &'a BTreeMap<String, Requests>,
    /// The project directory requested and granted paths are relative to.
    pub project: &'a Path,
}

impl Loader<'_> {
    /// Loads the built-in tools embedded in the binary. A built-in that does
    /// not load is a fault of the build: its name and why.
    pub fn builtins(&self, registry: &mut Registry) -> Result<(), (String, LoadError)> {
        let engine = self.sandbox.engine();
        for embedded in builtins::EMBEDDED {
            let fail = |e: LoadError| (embedded.crate_dir.to_string(), e);
            let component = cache::compile(engine, embedded.wasm, embedded.sha256, self.cache_dir)
                .map_err(|e| fail(LoadError::Compile(format!("{e:#}"))))?;
            let requests = contract::requests::read(embedded.wasm).map_err(|e| fail(e.into()))?;
            let mut tool = self.load(&component, embedded.sha256, Origin::Builtin, requests).map_err(fail)?;
            // Its requests are granted as a third-party tool's are, on top
            // of what a built-in gets by default.
            let mut granted = builtins::granted(&tool.requests);
            if let Some(more) = self.grants.get(&tool.spec.name) {
                granted.add(more);
            }
            self.grant(&mut tool, &granted).map_err(fail)?;
            registry.add(tool, &format!("builtin:{}", embedded.crate_dir));
        }
        Ok(())
    }

    /// Loads every `*.wasm` of `dir`, several at once, registered in name
    /// order; one that does not load is noted as a problem of the registry.
    pub fn plugins_dir(&self, registry: &mut Registry, dir: &Path) {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                registry.problem(&dir.display().to_string(), format!("cannot read the plugins directory: {e}"));
                return;
            }
        };
        let mut paths: Vec<PathBuf> =
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "wasm")).collect();
        paths.sort();
        let loaded = self.in_parallel(&paths);
        for (path, outcome) in paths.iter().zip(loaded) {
            let source = path.display().to_string();
            match outcome {
                Ok(tool) => registry.add(tool, &source),
                Err(e) => registry.problem(&source, e.to_string()),
            }
        }
    }

    /// [`Loader::component_file`] of every path, on up to one thread per core.
    fn in_parallel(&self, paths: &[PathBuf]) -> Vec<Result<LoadedTool, LoadError>> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(paths.len());
        if threads <= 1 {
            return paths.iter().map(|p| self.component_file(p)).collect();
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let slots: Vec<std::sync::Mutex<Option<Result<LoadedTool, LoadError>>>> =
            paths.iter().map(|_| std::sync::Mutex::new(None)).collect();
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(path) = paths.get(i) else { return };
                        let outcome = self.component_file(path);
                        *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
                    }
                });
            }
        });
        slots
            .into_iter()
            .map(|slot| {
                slot.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .unwrap_or_else(|| Err(LoadError::Compile("its loader thread stopped".into())))
            })
            .collect()
    }

    /// Loads a third-party component file: size and header check, compile
    /// (cached, within [`COMPILE_TIMEOUT`]), shape check, link, describe. A
    /// third-party tool is granted what `toolGrants` grant it by its name,
    /// and nothing else.
    pub fn component_file(&self, path: &Path) -> Result<LoadedTool, LoadError> {
        let mut tool = self.ungranted_file(path)?;
        // What it gets: requested ∩ granted, granted by its name.
        let none = Requests::default();
        let granted = self.grants.get(&tool.spec.name).unwrap_or(&none);
        self.grant(&mut tool, granted)?;
        Ok(tool)
    }

    /// [`Loader::component_file`] granting the tool everything it requests,
    /// whatever `toolGrants` say: the most an operator can grant it, for
    /// reviewing a component before granting it anything. A component that
    /// imports a capability it does not request is still refused (no grant
    /// could ever load it).
    pub fn component_file_as_requested(&self, path: &Path) -> Result<LoadedTool, LoadError> {
        let mut tool = self.ungranted_file(path)?;
        let requested = tool.requests.clone();
        self.grant(&mut tool, &requested)?;
        Ok(tool)
    }

    /// A component file loaded and described, granted nothing yet.
    fn ungranted_file(&self, path: &Path) -> Result<LoadedTool, LoadError> {
        let cannot_read = |e: std::io::Error| LoadError::Compile(format!("cannot read {}: {e}", path.display()));
        let size = std::fs::metadata(path).map_err(cannot_read)?.len();
        if size > MAX_COMPONENT_BYTES {
            return Err(LoadError::TooLarge(format!(
                "is {} MiB; components of at most {} MiB are loaded",
                size >> 20,
                MAX_COMPONENT_BYTES >> 20
            )));
        }
        let bytes = std::fs::read(path).map_err(cannot_read)?;
        contract::check_header(&bytes)?;
        let requests = contract::requests::read(&bytes)?;
        let hash = cache::content_hash(&bytes);
        let engine = self.sandbox.engine();
        let component = compile_within(engine, bytes, &hash, self.cache_dir, COMPILE_TIMEOUT)?;
        self.load(&component, &hash, Origin::Plugin(path.to_path_buf()), requests)
    }

    /// Gives `tool` what it requested and `granted` grants, and refuses it
    /// if it imports a capability it was not granted.
    fn grant(&self, tool: &mut LoadedTool, granted: &Requests) -> Result<(), LoadError> {
        let (grants, missing) = crate::sandbox::intersect(&tool.requests, granted, self.project);
        for cap in &tool.shape.capabilities {
            let granted = match cap {
                Capability::Progress
                | Capability::Session
                | Capability::Output
                | Capability::Shell
                | Capability::Policy => true,
                Capability::Files => grants.files == FileAccess::ReadWrite,
                Capability::Process => grants.process,
            };
            if !granted {
                return Err(LoadError::NotGranted(*cap));
            }
        }
        tool.grants = grants;
        tool.missing = missing;
        Ok(())
    }

    /// Checks, links and describes `component`, whose content hash is
    /// `content`. Its description depends only on its bytes: one saved
    /// beside its compiled form by an earlier start (and checked again) is
    /// used without instantiating it; otherwise it is asked, and saved.
    fn load(
        &self,
        component: &Component,
        content: &str,
        origin: Origin,
        requests: Requests,
    ) -> Result<LoadedTool, LoadError> {
        let shape = contract::inspect(self.sandbox.engine(), component)?;
        let pre = self.sandbox.linker().instantiate_pre(component).map_err(|e| LoadError::Link(format!("{e:#}")))?;
        let pre = ToolPre::new(shape.version, pre).map_err(|e| LoadError::Link(format!("{e:#}")))?;
        let spec_file = self.cache_dir.map(|d| cache::spec_path(d, self.sandbox.engine(), content));
        let known = spec_file.as_deref().and_then(known_description);
        let described = known.is_none();
        let (spec, warnings) = match known {
            Some(known) => (known.spec, known.warnings),
            None => self.describe(&pre)?,
        };
        let (input, output) = (OnceLock::new(), OnceLock::new());
        if origin != Origin::Builtin {
            let _ = input.set(spec.compile_input().map_err(LoadError::Invalid)?);
            let _ = output.set(spec.compile_output().map_err(LoadError::Invalid)?);
        }
        if let (true, Some(file)) = (described, &spec_file) {
            cache::write_spec(file, &cache::Described { spec: spec.clone(), warnings: warnings.clone() });
        }
        let grants = Grants::default();
        Ok(LoadedTool { spec, origin, grants, requests, missing: Vec::new(), shape, pre, input, output, warnings })
    }

    /// Instantiates the tool once, without capabilities, to read its `info`
    /// and `is-enabled`, within [`DESCRIBE_TIMEOUT`] and the call memory
    /// limit.
    fn describe(&self, pre: &ToolPre<crate::sandbox::HostState>) -> Result<(ToolSpec, Vec<String>), LoadError> {
        // Describing itself gets a short leash: no files, a few seconds.
        let limits = self.sandbox.limits();
        let limits = CallLimits { timeout: limits.timeout.min(DESCRIBE_TIMEOUT), ..limits };
        let scope = CallScope::new(
            "(loading)".into(),
            "load".into(),
            Arc::clone(self.session),
            Namespace::Private("load/".into()),
            Arc::new(Dirs::default()),
            Arc::default(),
        );
        let (mut store, captured) = crate::sandbox::store(self.sandbox.engine(), &Grants::default(), scope, limits);
        // One line per problem: the limit or the trap, and what the tool
        // printed last (a panic message), without wasmtime's backtrace.
        let describe = |e: wasmtime::Error, captured: &Captured| {
            let what = match GuestFault::of(&e) {
                GuestFault::Timeout(limit) => format!("timed out after {} ms and was stopped", limit.as_millis()),
                GuestFault::Memory(limit) => format!("exceeded its memory limit of {} MiB", limit >> 20),
                GuestFault::Trap(trap) => format!("crashed ({trap})"),
                GuestFault::Cancelled | GuestFault::Other => e.to_string(),
            };
            let stderr = captured.last_stderr_lines(3).replace('\n', "; ");
            LoadError::Describe(if stderr.is_empty() { what } else { format!("{what}: {stderr}") })
        };
        let _running = self.sandbox.running();
        let guest = pre.instantiate(&mut store).map_err(|e| describe(e, &captured))?;
        let info = guest.info(&mut store).map_err(|e| describe(e, &captured))?;
        let enabled = guest.is_enabled(&mut store).map_err(|e| describe(e, &captured))?;
        tracing::debug!(tool = %info.name, "described by its component");
        parse_info(info, enabled)
    }
}

/// Largest component file loaded.
pub const MAX_COMPONENT_BYTES: u64 = 256 << 20;
/// How long compiling one component may take before it is skipped (the
/// compile goes on in the background and lands in the cache).
pub const COMPILE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a tool may take to instantiate and describe itself.
pub const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(5);
/// Most aliases a tool keeps; more are dropped with a warning.
pub const MAX_ALIASES: usize = 8;
/// Longest one-line description, in characters; longer ones are cut.
pub const MAX_DESCRIPTION: usize = 1_024;
/// Longest model-facing prompt, in characters; longer ones are cut.
pub const MAX_PROMPT: usize = 32_768;
/// Longest search hint, in characters; longer ones are cut.
pub const MAX_SEARCH_HINT: usize = 256;
/// Largest input or output schema, in bytes of JSON; larger ones are refused.
pub const MAX_SCHEMA_BYTES: usize = 64 << 10;
/// Deepest nesting of an input or output schema; deeper ones are refused.
pub const MAX_SCHEMA_DEPTH: usize = 32;

/// Compiles `wasm` (through the cache) on a thread of its own, waiting at
/// most `timeout`. Compiling cannot be interrupted: a compile that takes too
/// long goes on in the background (and is cached for the next start) while
/// the component is reported as skipped.
fn compile_within(
    engine: &wasmtime::Engine,
    wasm: Vec<u8>,
    hash: &str,
    dir: Option<&Path>,
    timeout: Duration,
) -> Result<Component, LoadError> {
    let (engine, dir, hash) = (engine.clone(), dir.map(Path::to_path_buf), hash.to_string());
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("toolhost-compile".into())
        .spawn(move || {
            let out = cache::compile(&engine, &wasm, &hash, dir.as_deref());
            let _ = tx.send(out);
        })
        .map_err(|e| LoadError::Compile(format!("could not start a compile thread: {e}")))?;
    match rx.recv_timeout(timeout) {
        Ok(out) => out.map_err(|e| LoadError::Compile(format!("{e:#}"))),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(LoadError::TimedOut(format!(
            "took longer than {} s to compile and was skipped; the compile goes on and is cached, so the next start may load it",
            timeout.as_secs()
        ))),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            Err(LoadError::Compile("the compiler stopped without an answer".into()))
        }
    }
}

/// `text` cut to `max` characters, noting the cut in `warnings`.
fn capped(text: String, max: usize, what: &str, warnings: &mut Vec<String>) -> String {
    match text.char_indices().nth(max) {
        None => text,
        Some((at, _)) => {
            warnings.push(format!("its {what} has {} characters; it was cut to {max}", text.chars().count()));
            text[..at].to_string()
        }
    }
}

/// A declared schema, parsed within [`MAX_SCHEMA_BYTES`] and [`MAX_SCHEMA_DEPTH`].
fn schema(text: &str, what: &str) -> Result<Value, LoadError> {
    if text.len() > MAX_SCHEMA_BYTES {
        return Err(LoadError::TooLarge(format!(
            "its {what} is {} KiB; at most {} KiB are accepted",
            text.len() >> 10,
            MAX_SCHEMA_BYTES >> 10
        )));
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| LoadError::Invalid(format!("{what} is not JSON: {e}")))?;
    if depth(&value) > MAX_SCHEMA_DEPTH {
        return Err(LoadError::TooLarge(format!("its {what} nests deeper than {MAX_SCHEMA_DEPTH} levels")));
    }
    Ok(value)
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn parse_info(info: ToolInfo, enabled: bool) -> Result<(ToolSpec, Vec<String>), LoadError> {
    let invalid = LoadError::Invalid;
    check_name(&info.name).map_err(invalid)?;
    let mut warnings = Vec::new();
    let mut aliases = info.aliases;
    if aliases.len() > MAX_ALIASES {
        warnings.push(format!("it declares {} aliases; the first {MAX_ALIASES} are kept", aliases.len()));
        aliases.truncate(MAX_ALIASES);
    }
    for alias in &aliases {
        check_name(alias).map_err(|e| LoadError::Invalid(format!("alias: {e}")))?;
    }
    let input_schema = schema(&info.input_schema, "input schema")?;
    if input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(LoadError::Invalid("input schema must describe a JSON object (`\"type\": \"object\"`)".into()));
    }
    let inputs = input_roles(info.input_roles)?;
    let output_schema = info.output_schema.as_deref().map(|s| schema(s, "output schema")).transpose()?;
    let description = capped(info.description, MAX_DESCRIPTION, "description", &mut warnings);
    let prompt = capped(info.prompt, MAX_PROMPT, "prompt", &mut warnings);
    let search_hint = info.search_hint.map(|h| capped(h, MAX_SEARCH_HINT, "search hint", &mut warnings));
    let spec = ToolSpec {
        name: info.name,
        aliases,
        description,
        prompt,
        search_hint,
        input_schema,
        output_schema,
        max_result_size_chars: info.max_result_size_chars,
        should_defer: info.should_defer,
        always_load: info.always_load,
        cancel_on_interrupt: match info.interrupt_behavior {
            InterruptBehavior::Cancel => true,
            InterruptBehavior::Block => false,
        },
        enabled,
        hints: Hints { read_only: info.read_only_hint, destructive: info.destructive_hint },
        inputs,
        cancels_siblings: info.cancels_siblings_on_failure,
    };
    Ok((spec, warnings))
}

/// A saved description that still holds what loading guarantees (a valid
/// name, the caps on what it declares, bounded schemas): one that does not,
/// or does not read, is described afresh, never trusted.
fn known_description(path: &Path) -> Option<cache::Described> {
    let known = cache::read_spec(path)?;
    match recheck(&known.spec) {
        Ok(()) => Some(known),
        Err(why) => {
            tracing::warn!(path = %path.display(), why, "ignoring a saved description");
            None
        }
    }
}

/// The checks [`parse_info`] made, on a spec read back from the cache.
fn recheck(spec: &ToolSpec) -> Result<(), String> {
    let within = |text: &str, max: usize| text.char_indices().nth(max).is_none();
    check_name(&spec.name)?;
    if spec.aliases.len() > MAX_ALIASES {
        return Err("too many aliases".into());
    }
    for alias in &spec.aliases {
        check_name(alias)?;
    }
    let texts = [(&spec.description, MAX_DESCRIPTION), (&spec.prompt, MAX_PROMPT)];
    if !texts.iter().all(|(t, max)| within(t, *max))
        || !spec.search_hint.as_deref().is_none_or(|h| within(h, MAX_SEARCH_HINT))
    {
        return Err("a text beyond its cap".into());
    }
    for s in std::iter::once(&spec.input_schema).chain(&spec.output_schema) {
        schema(&s.to_string(), "schema").map_err(|e| e.to_string())?;
    }
    if spec.input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("input schema is not an object schema".into());
    }
    let roles = &spec.inputs;
    if roles.paths.len() + roles.addresses.len() + usize::from(roles.command.is_some()) > MAX_ROLE_FIELDS {
        return Err("too many input roles".into());
    }
    Ok(())
}

/// Most fields a tool may declare for the policy.
const MAX_ROLE_FIELDS: usize = 32;

/// The declared input roles, checked: each field a property name or a JSON
/// Pointer, at most [`MAX_ROLE_FIELDS`] of them.
fn input_roles(roles: wit::InputRoles) -> Result<InputRoles, LoadError> {
    let count = roles.paths.len() + roles.addresses.len() + usize::from(roles.command.is_some());
    if count > MAX_ROLE_FIELDS {
        return Err(LoadError::Invalid(format!(
            "input roles: {count} fields declared, at most {MAX_ROLE_FIELDS} are allowed"
        )));
    }
    let check = |field: &str| -> Result<(), LoadError> {
        if field.is_empty() || field.len() > 256 || field.contains('\0') {
            return Err(LoadError::Invalid(format!("input roles: `{field}` is not a field name or JSON Pointer")));
        }
        Ok(())
    };
    let mut paths = Vec::with_capacity(roles.paths.len());
    for p in roles.paths {
        check(&p.field)?;
        let access = match p.access {
            wit::PathAccess::Read => PathAccess::Read,
            wit::PathAccess::Search => PathAccess::Search,
            wit::PathAccess::Edit => PathAccess::Edit,
        };
        paths.push(PathField { field: p.field, access });
    }
    for f in roles.command.iter().chain(&roles.addresses) {
        check(f)?;
    }
    Ok(InputRoles { paths, command: roles.command, addresses: roles.addresses })
}

/// Tool names follow the Messages API's rule: 1–64 of `A-Z a-z 0-9 _ -`.
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok { Ok(()) } else { Err(format!("`{name}` is not a valid tool name (1-64 characters from A-Z a-z 0-9 _ -)")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compile_past_its_limit_is_reported_not_waited_for() {
        let engine = wasmtime::Engine::new(&crate::sandbox::base_config()).unwrap();
        let wasm = builtins::EMBEDDED[0].wasm.to_vec();
        match compile_within(&engine, wasm, "no-cache", None, Duration::ZERO) {
            Err(LoadError::TimedOut(message)) => assert!(message.contains("to compile and was skipped"), "{message}"),
            other => panic!("expected a timeout, got {:?}", other.map(|_| "a component")),
        }
    }

    #[test]
    fn declarations_are_capped() {
        let mut warnings = Vec::new();
        assert_eq!(capped("héllo".into(), 2, "description", &mut warnings), "hé");
        assert_eq!(warnings, ["its description has 5 characters; it was cut to 2"]);
        assert_eq!(capped("ok".into(), 2, "prompt", &mut warnings), "ok");
        assert_eq!(warnings.len(), 1);
        let deep = (0..40).fold(String::from("1"), |inner, _| format!("[{inner}]"));
        assert!(matches!(schema(&deep, "input schema"), Err(LoadError::TooLarge(_))));
        assert!(schema(r#"{"type":"object"}"#, "input schema").is_ok());
    }

    #[test]
    fn names_follow_the_api_rule() {
        check_name("Read").unwrap();
        check_name("my_tool-2").unwrap();
        for bad in ["", "has space", "dots.no", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
