//! A loaded tool: its compiled component ready to instantiate, what it says
//! about itself, its compiled schemas, and what it was granted.

use crate::bindings::{Full, FullPre, InterruptBehavior, ToolInfo};
use crate::contract::{self, Capability, Shape, ShapeError};
use crate::sandbox::{self, CallLimits, Captured, Dirs, FileAccess, Grants};
use crate::schema::Schema;
use crate::session::Session;
use crate::state::{HostState, Namespace, Scope};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};

/// Where a tool came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Embedded in the `toolhost` binary.
    Builtin,
    /// A component file in the plugins directory.
    Plugin(PathBuf),
}

/// What a tool says about itself (the contract's `tool-info`), parsed.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub aliases: Vec<String>,
    pub description: String,
    pub prompt: String,
    pub search_hint: Option<String>,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub max_result_size_chars: Option<u64>,
    pub should_defer: bool,
    pub always_load: bool,
    /// Whether a user interrupt stops a running call (`true`) or lets it finish.
    pub cancel_on_interrupt: bool,
    pub enabled: bool,
    /// The classification the tool declares for every input.
    #[serde(default)]
    pub hints: Hints,
}

/// `is-read-only` / `is-destructive` when the tool declares them the same
/// for every input (`None`: it depends on the input, or no claim).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Hints {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
}

/// Why a component could not be loaded as a tool.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Shape(#[from] ShapeError),
    #[error("imports the `{}` capability, which is not granted to it", .0.name())]
    NotGranted(Capability),
    #[error("could not be compiled: {0}")]
    Compile(String),
    #[error("could not be linked: {0}")]
    Link(String),
    #[error("failed while describing itself: {0}")]
    Describe(String),
    #[error("declares an invalid tool: {0}")]
    Invalid(String),
}

/// A tool ready to serve calls.
pub struct LoadedTool {
    pub spec: ToolSpec,
    pub origin: Origin,
    pub grants: Grants,
    pub shape: Shape,
    pub(crate) pre: FullPre<HostState>,
    /// Compiled on first use for built-ins (known good; most runs use few of
    /// them), at load for plugins (so a broken schema is refused at once).
    input: OnceLock<Schema>,
    output: OnceLock<Option<Schema>>,
}

impl LoadedTool {
    /// Built-in tools are trusted to grant permission (`allow`); third-party
    /// tools are not.
    pub fn trusted(&self) -> bool {
        self.origin == Origin::Builtin
    }

    /// The compiled input schema.
    pub(crate) fn input_schema(&self) -> &Schema {
        self.input.get_or_init(|| compile_input(&self.spec).unwrap_or_else(Schema::reject_all))
    }

    /// The compiled output schema, if the tool declares one.
    pub(crate) fn output_schema(&self) -> Option<&Schema> {
        self.output.get_or_init(|| compile_output(&self.spec).unwrap_or_else(|e| Some(Schema::reject_all(e)))).as_ref()
    }

    /// The namespace of its session state.
    pub(crate) fn namespace(&self) -> Namespace {
        match self.origin {
            Origin::Builtin => Namespace::Shared,
            Origin::Plugin(_) => Namespace::Private(format!("plugin:{}/", self.spec.name)),
        }
    }
}

/// Where a tool's description comes from.
pub(crate) enum Description<'a> {
    /// Saved from an earlier load of the same component (built-ins, see
    /// `host.rs`): the component is not instantiated at all.
    Known(Box<ToolSpec>),
    /// Instantiate it once, within `limits`, to ask.
    Ask { limits: CallLimits, session: &'a Arc<Session> },
}

/// Checks, links and describes `component`.
pub(crate) fn load(
    engine: &Engine,
    linker: &Linker<HostState>,
    component: &Component,
    origin: Origin,
    grants: Grants,
    description: Description<'_>,
) -> Result<LoadedTool, LoadError> {
    let shape = contract::inspect(engine, component)?;
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
    let pre = linker.instantiate_pre(component).map_err(|e| LoadError::Link(format!("{e:#}")))?;
    let pre = FullPre::new(pre).map_err(|e| LoadError::Link(format!("{e:#}")))?;
    let spec = match description {
        Description::Known(spec) => *spec,
        Description::Ask { limits, session } => describe(engine, &pre, limits, session)?,
    };
    let (input, output) = (OnceLock::new(), OnceLock::new());
    if origin != Origin::Builtin {
        let _ = input.set(compile_input(&spec).map_err(LoadError::Invalid)?);
        let _ = output.set(compile_output(&spec).map_err(LoadError::Invalid)?);
    }
    Ok(LoadedTool { spec, origin, grants, shape, pre, input, output })
}

/// Instantiates the tool once, without capabilities, to read its `info` and
/// `is-enabled`.
fn describe(
    engine: &Engine,
    pre: &FullPre<HostState>,
    limits: CallLimits,
    session: &Arc<Session>,
) -> Result<ToolSpec, LoadError> {
    // Describing itself gets a short leash: no files, a few seconds.
    let limits = CallLimits { timeout: limits.timeout.min(Duration::from_secs(10)), ..limits };
    let scope = Scope::new(
        "(loading)".into(),
        "load".into(),
        Arc::clone(session),
        Namespace::Private("load/".into()),
        Arc::new(Dirs::default()),
        Arc::default(),
    );
    let (mut store, captured) = sandbox::store(engine, &Grants::default(), scope, limits);
    let describe = |e: wasmtime::Error, captured: &Captured| {
        let stderr = captured.last_stderr_lines(3);
        LoadError::Describe(if stderr.is_empty() { format!("{e:#}") } else { format!("{e:#}: {stderr}") })
    };
    let plugin = pre.instantiate(&mut store).map_err(|e| describe(e, &captured))?;
    let tool = plugin.toolhost_tool_tool();
    let info = tool.call_info(&mut store).map_err(|e| describe(e, &captured))?;
    let enabled = tool.call_is_enabled(&mut store).map_err(|e| describe(e, &captured))?;
    parse_info(info, enabled)
}

fn compile_input(spec: &ToolSpec) -> Result<Schema, String> {
    Schema::compile(spec.input_schema.clone()).map_err(|e| format!("input schema: {e}"))
}

fn compile_output(spec: &ToolSpec) -> Result<Option<Schema>, String> {
    spec.output_schema.clone().map(Schema::compile).transpose().map_err(|e| format!("output schema: {e}"))
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
    })
}

/// Tool names follow the Messages API's rule: 1–64 of `A-Z a-z 0-9 _ -`.
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok { Ok(()) } else { Err(format!("`{name}` is not a valid tool name (1-64 characters from A-Z a-z 0-9 _ -)")) }
}

/// A live instance serving one call.
pub(crate) struct Instance {
    pub store: Store<HostState>,
    pub plugin: Full,
    pub captured: Captured,
}

impl Instance {
    pub fn new(engine: &Engine, tool: &LoadedTool, scope: Scope, limits: CallLimits) -> wasmtime::Result<Instance> {
        let (mut store, captured) = sandbox::store(engine, &tool.grants, scope, limits);
        let plugin = tool.pre.instantiate(&mut store)?;
        Ok(Instance { store, plugin, captured })
    }
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
