//! A loaded tool: its compiled component ready to instantiate (or to link at
//! its first use), what it says about itself, its compiled schemas, and what
//! it was granted.

use super::schema::Schema;
use crate::contract::ToolPre;
use crate::contract::{Capability, RequestsError, Shape, ShapeError, Version};
use crate::grants::{Allowance, Grants};
use crate::imports::Namespace;
use crate::sandbox::{HostState, Sandbox};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// Where a tool came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Embedded in the `toolhost` binary.
    Builtin,
    /// A component file in the plugins directory.
    Plugin(PathBuf),
    /// A tool of the MCP server configured under this name.
    Mcp(String),
}

/// The part a built-in plays in the host, declared in its `builtin.yaml`
/// (a third-party tool has none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// It runs a model's program that calls the other tools (code mode): it
    /// alone may import the tools interface, its prompt declares the tools
    /// a program can call, it holds a second instance slot for those calls,
    /// and a program cannot call it.
    RunsPrograms,
    /// It loads the deferred tools: offered only while some tool is
    /// deferred and never deferred itself, it searches the catalog of the
    /// deferred tools the host gives it, and what it finds becomes callable
    /// in the session.
    LoadsTools,
}

/// What a tool says about itself (the contract's `tool-info`), parsed.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// Other names it answers to.
    pub aliases: Vec<String>,
    /// One line for people and tool lists.
    pub description: String,
    /// What the model is told about it.
    pub prompt: String,
    /// Words ToolSearch matches a deferred tool by.
    pub search_hint: Option<String>,
    /// The JSON Schema of its input.
    pub input_schema: Value,
    /// The JSON Schema of its structured output, if it has one.
    pub output_schema: Option<Value>,
    /// Results longer than this are saved to a file and the model gets a preview.
    pub max_result_size_chars: Option<u64>,
    /// Offered to the model only after ToolSearch loads it.
    pub should_defer: bool,
    /// Never deferred, however many tools there are.
    pub always_load: bool,
    /// Whether a user interrupt stops a running call (`true`) or lets it finish.
    pub cancel_on_interrupt: bool,
    /// Whether it is offered at all (its `is-enabled`).
    pub enabled: bool,
    /// The classification the tool declares for every input.
    #[serde(default)]
    pub hints: Hints,
    /// What the fields of its input mean to the permission policy.
    #[serde(default)]
    pub inputs: InputRoles,
    /// Whether a failed call cancels the other calls of its model turn.
    #[serde(default)]
    pub cancels_siblings: bool,
    /// Whether a warm instance may serve the session's next call (the
    /// contract's `reuse-instance`).
    #[serde(default)]
    pub reuse_instance: bool,
    /// Whether `validate-input` is called (the contract's `validates-input`).
    pub validates_input: bool,
    /// Whether `check-permissions` is called (`checks-permissions`); when it
    /// is not, the tool's view is `passthrough`.
    pub checks_permissions: bool,
}

/// What the fields of a tool's input mean to the permission policy (the
/// contract's `input-roles`): the host reads these fields itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InputRoles {
    /// Fields holding paths, and how the tool uses each.
    pub paths: Vec<PathField>,
    /// The field holding a shell command the tool runs.
    pub command: Option<String>,
    /// Fields holding a URL or a host name the tool connects to.
    pub addresses: Vec<String>,
}

/// An input field holding a path (or a list of paths).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PathField {
    /// A top-level property, or a JSON Pointer (`/a/b`) to a nested one.
    pub field: String,
    /// How the tool uses the path.
    pub access: PathAccess,
}

/// How a tool uses a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum PathAccess {
    /// It reads the file.
    Read,
    /// It reads the tree below the directory (absent: the working directory).
    Search,
    /// It creates, changes or removes the file.
    Edit,
}

impl InputRoles {
    /// The paths `input` holds in the declared fields, with their access; a
    /// search field that is absent or empty is the working directory (`""`).
    pub fn paths_in<'a>(&'a self, input: &'a Value) -> Vec<(&'a str, PathAccess)> {
        let mut out = Vec::new();
        for field in &self.paths {
            let values = strings(input, &field.field);
            if values.is_empty() && field.access == PathAccess::Search {
                out.push(("", PathAccess::Search));
            }
            out.extend(values.into_iter().map(|v| (v, field.access)));
        }
        out
    }

    /// The command `input` holds in the declared field.
    pub fn command_in<'a>(&self, input: &'a Value) -> Option<&'a str> {
        lookup(input, self.command.as_deref()?)?.as_str()
    }

    /// The URLs or host names `input` holds in the declared fields.
    pub fn addresses_in<'a>(&'a self, input: &'a Value) -> Vec<&'a str> {
        self.addresses.iter().flat_map(|f| strings(input, f)).collect()
    }

    /// The first value of a declared field of `input` (the command, else an
    /// address, else a path): what names a call in a message.
    pub fn label_in<'a>(&'a self, input: &'a Value) -> Option<&'a str> {
        self.command_in(input)
            .or_else(|| self.addresses_in(input).into_iter().next())
            .or_else(|| self.paths_in(input).into_iter().map(|(p, _)| p).find(|p| !p.is_empty()))
    }
}

/// The value of `field` in `input`: a top-level property, or a JSON Pointer.
fn lookup<'a>(input: &'a Value, field: &str) -> Option<&'a Value> {
    if field.starts_with('/') { input.pointer(field) } else { input.get(field) }
}

/// The strings `field` holds: its value when a string, the strings of its
/// value when a list; empty strings left out.
fn strings<'a>(input: &'a Value, field: &str) -> Vec<&'a str> {
    match lookup(input, field) {
        Some(Value::String(s)) if !s.is_empty() => vec![s.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).filter(|s| !s.is_empty()).collect(),
        _ => Vec::new(),
    }
}

/// `is-read-only` / `is-destructive` / `is-concurrency-safe` when the tool
/// declares them the same for every input (`None`: it depends on the input,
/// or no claim).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Hints {
    /// Every call only reads.
    pub read_only: Option<bool>,
    /// Every call may destroy data.
    pub destructive: Option<bool>,
    /// Every call may run beside others.
    pub concurrency_safe: Option<bool>,
}

impl ToolSpec {
    /// The description a model is given: the tool's full `prompt`, or its
    /// one-line `description` when it has no prompt. (The one-liner is for
    /// people: `toolhost tools`, logs, install reviews.)
    pub fn model_description(&self) -> &str {
        if self.prompt.trim().is_empty() { &self.description } else { &self.prompt }
    }

    /// The tool as a model API defines it: `{"name", "description",
    /// "input_schema"}`, the description being [`ToolSpec::model_description`].
    pub fn definition(&self) -> Value {
        serde_json::json!({
            "name": self.name,
            "description": self.model_description(),
            "input_schema": self.input_schema,
        })
    }

    pub(super) fn compile_input(&self) -> Result<Schema, String> {
        Schema::compile(self.input_schema.clone()).map_err(|e| format!("input schema: {e}"))
    }

    pub(super) fn compile_output(&self) -> Result<Option<Schema>, String> {
        self.output_schema.clone().map(Schema::compile).transpose().map_err(|e| format!("output schema: {e}"))
    }
}

/// Why a component could not be loaded as a tool.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    /// Not a usable component (its shape, contract version or imports).
    Shape(#[from] ShapeError),
    #[error(
        "imports the `{}` capability, which is not granted to it (a tool asks for it with {} in its requests, \
         and the operator grants the same under toolGrants)",
        .0.name(),
        request_for(*.0)
    )]
    /// It imports a capability that was not granted.
    NotGranted(Capability),
    #[error("could not be compiled: {0}")]
    /// wasmtime could not compile it.
    Compile(String),
    #[error("could not be linked: {0}")]
    /// Its imports could not be linked.
    Link(String),
    #[error("failed while describing itself: {0}")]
    /// It failed while answering `info`.
    Describe(String),
    #[error("declares an invalid tool: {0}")]
    /// What it declared is not a valid tool.
    Invalid(String),
    #[error(transparent)]
    /// Its `toolhost:requests` section is unusable.
    Requests(#[from] RequestsError),
    #[error("{0}")]
    /// Its file is larger than the host accepts.
    TooLarge(String),
    #[error("its policy file {0} does not read: {1}")]
    /// The Wassette policy file beside it does not read.
    Policy(String, crate::grants::wassette::PolicyError),
    #[error("its policy file {0} cannot be read: {1}")]
    /// The Wassette policy file beside it cannot be opened or read.
    PolicyUnreadable(String, std::io::Error),
    #[error("its manifest {0} does not read: {1}")]
    /// The manifest beside it (`NAME.tool.yaml`) does not read.
    Manifest(String, super::manifest::ManifestError),
    #[error("its manifest {0} cannot be read: {1}")]
    /// The manifest beside it cannot be opened or read.
    ManifestUnreadable(String, std::io::Error),
    #[error("{0}")]
    /// Compiling or describing it took too long.
    TimedOut(String),
}

/// A tool ready to serve calls.
pub struct LoadedTool {
    /// What it says about itself.
    pub(crate) spec: ToolSpec,
    /// Where it came from.
    pub(crate) origin: Origin,
    /// What it may use: for a third-party tool, requested ∩ granted.
    pub(crate) grants: Grants,
    /// What its component requests (`toolhost:requests`).
    pub(crate) requests: Allowance,
    /// What it requested and was not granted, one line each.
    pub(crate) missing: Vec<String>,
    /// Its contract version and the capabilities it imports.
    pub(crate) shape: Shape,
    /// Shared by its copies (the same component, linked once).
    pub(crate) linked: Arc<Linked>,
    /// Compiled on first use (most runs use few tools); a plugin's new
    /// description is refused at load if its schemas do not compile.
    pub(super) input: OnceLock<Schema>,
    pub(super) output: OnceLock<Option<Schema>>,
    /// What the loader cut from the tool's declaration, for people.
    pub(crate) warnings: Vec<String>,
    /// What people reviewing its component should know and the log need
    /// not repeat at every start: a plain component's functions left out,
    /// what its policy file says that does not map.
    pub(crate) notes: Vec<String>,
    /// Whether it runs a WASI command (`wasi:cli/run`), named and described
    /// by the operator.
    pub(crate) command: bool,
    /// Whether it runs code from the quick engine (Winch), until its
    /// optimized compile is done.
    pub(crate) quick: bool,
    /// For a tool another program serves (an MCP server's): how to reach it.
    pub(crate) remote: Option<super::remote::Remote>,
    /// For a built-in: what the host does for it beyond its contract.
    pub(crate) declared: Option<&'static super::builtins::Declared>,
}

impl LoadedTool {
    /// What it says about itself.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Where it came from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// What it may use: for a third-party tool, requested ∩ granted.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// What its component requests (`toolhost:requests`).
    pub fn requests(&self) -> &Allowance {
        &self.requests
    }

    /// What it requested and was not granted, one line each.
    pub fn missing(&self) -> &[String] {
        &self.missing
    }

    /// Its contract version and the capabilities it imports.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// What the loader cut from the tool's declaration, for people.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// What people reviewing its component should know (`toolhost check`,
    /// the install review): a plain component's functions left out, what
    /// its policy file says that does not map.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Whether it runs a WASI command (a component exporting
    /// `wasi:cli/run`), named and described by its manifest.
    pub fn is_command(&self) -> bool {
        self.command
    }

    /// Whether it runs code from the quick engine (Winch), until its
    /// optimized compile is done.
    pub fn quick(&self) -> bool {
        self.quick
    }

    /// The part it plays in the host, if it is a built-in with one.
    pub fn role(&self) -> Option<Role> {
        self.declared.and_then(|d| d.role)
    }

    /// The repairs of its input it declares, if it is a built-in.
    pub(crate) fn repairs(&self) -> Option<&'static super::repairs::Repairs> {
        self.declared.map(|d| &d.repairs)
    }

    pub(crate) fn new(
        spec: ToolSpec,
        origin: Origin,
        requests: Allowance,
        shape: Shape,
        linked: Linked,
        warnings: Vec<String>,
    ) -> LoadedTool {
        let (input, output) = (OnceLock::new(), OnceLock::new());
        let (grants, missing) = (Grants::default(), Vec::new());
        LoadedTool {
            spec,
            origin,
            grants,
            requests,
            missing,
            shape,
            linked: Arc::new(linked),
            input,
            output,
            warnings,
            notes: Vec::new(),
            command: false,
            quick: false,
            remote: None,
            declared: None,
        }
    }

    /// A copy describing itself as `spec` (the same component, linked once;
    /// its schemas compiled again at first use).
    pub(crate) fn with_spec(&self, spec: ToolSpec) -> LoadedTool {
        LoadedTool {
            spec,
            origin: self.origin.clone(),
            grants: self.grants.clone(),
            requests: self.requests.clone(),
            missing: self.missing.clone(),
            shape: self.shape.clone(),
            linked: Arc::clone(&self.linked),
            input: OnceLock::new(),
            output: OnceLock::new(),
            warnings: self.warnings.clone(),
            notes: self.notes.clone(),
            command: self.command,
            quick: self.quick,
            remote: self.remote.clone(),
            declared: self.declared,
        }
    }

    /// A tool another program serves, described by `tool`.
    pub(crate) fn remote(tool: super::remote::RemoteTool) -> LoadedTool {
        let shape = Shape {
            version: Version::HOST,
            capabilities: Vec::new(),
            imports: Vec::new(),
            concurrent: false,
            form: crate::contract::Form::Contract,
        };
        let linked = Linked { ready: OnceLock::from(Err("it is served by an MCP server".to_string())), later: None };
        let origin = Origin::Mcp(tool.remote.server.clone());
        let mut loaded = LoadedTool::new(tool.spec, origin, Allowance::default(), shape, linked, tool.warnings);
        loaded.remote = Some(tool.remote);
        loaded
    }

    /// For a tool an MCP server serves: its server's name and its own name there.
    pub fn served_by(&self) -> Option<(&str, &str)> {
        self.remote.as_ref().map(|r| (r.server.as_str(), r.tool.as_str()))
    }

    /// Built-in tools are trusted to grant permission (`allow`); third-party
    /// tools are not.
    pub fn trusted(&self) -> bool {
        self.origin == Origin::Builtin
    }

    /// The compiled input schema.
    pub fn input_schema(&self) -> &Schema {
        self.input.get_or_init(|| self.spec.compile_input().unwrap_or_else(Schema::reject_all))
    }

    /// The compiled output schema, if the tool declares one.
    pub fn output_schema(&self) -> Option<&Schema> {
        self.output.get_or_init(|| self.spec.compile_output().unwrap_or_else(|e| Some(Schema::reject_all(e)))).as_ref()
    }

    /// Its component linked against the host, ready to instantiate: linked
    /// now if it was not at load (a compiled form read from the cache).
    pub(crate) fn pre(&self, sandbox: &Sandbox) -> wasmtime::Result<&ToolPre<HostState>> {
        self.linked.get(sandbox).map_err(|e| wasmtime::Error::msg(e.clone()))
    }

    /// Whether its component is linked yet (a start leaves a component
    /// whose compiled form and description are cached to its first use).
    pub fn is_linked(&self) -> bool {
        self.remote.is_some() || self.linked.ready.get().is_some()
    }

    /// The namespace of its session state.
    pub fn namespace(&self) -> Namespace {
        match self.origin {
            Origin::Builtin => Namespace::Shared,
            Origin::Plugin(_) | Origin::Mcp(_) => Namespace::Private(format!("plugin:{}/", self.spec.name)),
        }
    }
}

/// A tool's component linked against the host's linker: at load, or at its
/// first use when loading found its compiled form and its description in the
/// cache (a start then reads neither the component nor its compiled form;
/// a tool never called costs a stat and a small file).
pub(crate) struct Linked {
    ready: OnceLock<Result<ToolPre<HostState>, String>>,
    later: Option<LinkLater>,
}

/// Where a component linked at its first use comes from.
pub(crate) struct LinkLater {
    pub cache_dir: PathBuf,
    /// The SHA-256 of its bytes.
    pub hash: String,
    pub version: Version,
    /// It uses the async ABI.
    pub concurrent: bool,
    /// Its bytes, compiled again if the cached form went missing or stale.
    pub wasm: WasmSource,
}

pub(crate) enum WasmSource {
    Embedded(&'static [u8]),
    /// A file, used only while its bytes still have the hash loaded.
    File(PathBuf),
}

impl Linked {
    pub(crate) fn now(pre: ToolPre<HostState>) -> Linked {
        Linked { ready: OnceLock::from(Ok(pre)), later: None }
    }

    pub(crate) fn later(later: LinkLater) -> Linked {
        Linked { ready: OnceLock::new(), later: Some(later) }
    }

    /// The linked component; the first caller links it (others wait for
    /// it), and a failure stays the answer.
    fn get(&self, sandbox: &Sandbox) -> Result<&ToolPre<HostState>, &String> {
        self.ready
            .get_or_init(|| match &self.later {
                Some(later) => super::compile::link_later(sandbox, later).map_err(|e| e.to_string()),
                None => Err("it was never linked".into()),
            })
            .as_ref()
    }
}

/// The `toolhost:requests` entry that asks for `capability`.
fn request_for(capability: Capability) -> &'static str {
    match capability {
        Capability::Files => r#"`"workspace": "read-write"`"#,
        Capability::Process => r#"`"process": true`"#,
        Capability::Search => r#"`"workspace": "read-only"` or a directory"#,
        _ => "nothing (every tool has it)",
    }
}
