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
use crate::contract::{self, CallScope, Capability, Namespace};
use crate::fsx::Dirs;
use crate::sandbox::{CallLimits, Captured, FileAccess, Grants, Sandbox};
use crate::session::Session;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use wasmtime::component::Component;

/// Where a tool's description comes from.
enum Description {
    /// Saved from an earlier load of the same component (built-ins): the
    /// component is not instantiated at all.
    Known(Box<ToolSpec>),
    /// Instantiate it once to ask.
    Ask,
}

/// Loads components into a registry.
pub struct Loader<'a> {
    pub sandbox: &'a Sandbox,
    /// Where compiled components (and built-ins' descriptions) are cached.
    pub cache_dir: Option<&'a Path>,
    /// The session loading calls see.
    pub session: &'a Arc<Session>,
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
            // A built-in's description depends only on its code: kept beside
            // its compiled form, it spares instantiating every built-in at
            // every start.
            let spec_file = self.cache_dir.map(|d| cache::spec_path(d, engine, embedded.sha256));
            let known = spec_file.as_deref().and_then(cache::read_spec);
            let described = known.is_none();
            let description = match known {
                Some(spec) => Description::Known(Box::new(spec)),
                None => Description::Ask,
            };
            let grants = builtins::grants(embedded.crate_dir);
            let tool = self.load(&component, Origin::Builtin, grants, description).map_err(fail)?;
            if let (true, Some(file)) = (described, &spec_file) {
                cache::write_spec(file, &tool.spec);
            }
            registry.add(tool, &format!("builtin:{}", embedded.crate_dir));
        }
        Ok(())
    }

    /// Loads every `*.wasm` of `dir`, in name order; one that does not load
    /// is noted as a problem of the registry.
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
        for path in paths {
            let source = path.display().to_string();
            match self.component_file(&path) {
                Ok(tool) => registry.add(tool, &source),
                Err(e) => registry.problem(&source, e.to_string()),
            }
        }
    }

    /// Loads a third-party component file: header check, compile (cached),
    /// shape check, link, describe. A third-party tool is granted nothing.
    pub fn component_file(&self, path: &Path) -> Result<LoadedTool, LoadError> {
        let bytes =
            std::fs::read(path).map_err(|e| LoadError::Compile(format!("cannot read {}: {e}", path.display())))?;
        contract::check_header(&bytes)?;
        let component = cache::compile(self.sandbox.engine(), &bytes, &cache::content_hash(&bytes), self.cache_dir)
            .map_err(|e| LoadError::Compile(format!("{e:#}")))?;
        self.load(&component, Origin::Plugin(path.to_path_buf()), Grants::default(), Description::Ask)
    }

    /// Checks, links and describes `component`.
    fn load(
        &self,
        component: &Component,
        origin: Origin,
        grants: Grants,
        description: Description,
    ) -> Result<LoadedTool, LoadError> {
        let shape = contract::inspect(self.sandbox.engine(), component)?;
        for cap in &shape.capabilities {
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
        let pre = self.sandbox.linker().instantiate_pre(component).map_err(|e| LoadError::Link(format!("{e:#}")))?;
        let pre = ToolPre::new(shape.version, pre).map_err(|e| LoadError::Link(format!("{e:#}")))?;
        let spec = match description {
            Description::Known(spec) => *spec,
            Description::Ask => self.describe(&pre)?,
        };
        let (input, output) = (OnceLock::new(), OnceLock::new());
        if origin != Origin::Builtin {
            let _ = input.set(spec.compile_input().map_err(LoadError::Invalid)?);
            let _ = output.set(spec.compile_output().map_err(LoadError::Invalid)?);
        }
        Ok(LoadedTool { spec, origin, grants, shape, pre, input, output })
    }

    /// Instantiates the tool once, without capabilities, to read its `info`
    /// and `is-enabled`.
    fn describe(&self, pre: &ToolPre<crate::sandbox::HostState>) -> Result<ToolSpec, LoadError> {
        // Describing itself gets a short leash: no files, a few seconds.
        let limits = self.sandbox.limits();
        let limits = CallLimits { timeout: limits.timeout.min(Duration::from_secs(10)), ..limits };
        let scope = CallScope::new(
            "(loading)".into(),
            "load".into(),
            Arc::clone(self.session),
            Namespace::Private("load/".into()),
            Arc::new(Dirs::default()),
            Arc::default(),
        );
        let (mut store, captured) = crate::sandbox::store(self.sandbox.engine(), &Grants::default(), scope, limits);
        let describe = |e: wasmtime::Error, captured: &Captured| {
            let stderr = captured.last_stderr_lines(3);
            LoadError::Describe(if stderr.is_empty() { format!("{e:#}") } else { format!("{e:#}: {stderr}") })
        };
        let _running = self.sandbox.running();
        let guest = pre.instantiate(&mut store).map_err(|e| describe(e, &captured))?;
        let info = guest.info(&mut store).map_err(|e| describe(e, &captured))?;
        let enabled = guest.is_enabled(&mut store).map_err(|e| describe(e, &captured))?;
        parse_info(info, enabled)
    }
}

fn parse_info(info: ToolInfo, enabled: bool) -> Result<ToolSpec, LoadError> {
    let invalid = LoadError::Invalid;
    check_name(&info.name).map_err(invalid)?;
    for alias in &info.aliases {
        check_name(alias).map_err(|e| LoadError::Invalid(format!("alias: {e}")))?;
    }
    let input_schema: Value = serde_json::from_str(&info.input_schema)
        .map_err(|e| LoadError::Invalid(format!("input schema is not JSON: {e}")))?;
    if input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(LoadError::Invalid("input schema must describe a JSON object (`\"type\": \"object\"`)".into()));
    }
    let inputs = input_roles(info.input_roles)?;
    let output_schema = info
        .output_schema
        .map(|s| serde_json::from_str(&s))
        .transpose()
        .map_err(|e| LoadError::Invalid(format!("output schema is not JSON: {e}")))?;
    Ok(ToolSpec {
        name: info.name,
        aliases: info.aliases,
        description: info.description,
        prompt: info.prompt,
        search_hint: info.search_hint,
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
    })
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
    fn names_follow_the_api_rule() {
        check_name("Read").unwrap();
        check_name("my_tool-2").unwrap();
        for bad in ["", "has space", "dots.no", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
