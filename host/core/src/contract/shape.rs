//! Reading a component's shape before trusting it: is it a component, which
//! contract version does it implement, which host capabilities does it import.

use super::{CONTRACT, PACKAGE};
use std::fmt;
use wasmtime::Engine;
use wasmtime::component::Component;

/// A contract version (`major.minor.patch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Version(pub u64, pub u64, pub u64);

impl Version {
    /// The newest contract version this host implements.
    pub const HOST: Version = CONTRACT;

    pub(super) fn parse(s: &str) -> Option<Version> {
        let mut parts = s.split('.').map(|p| p.split(['-', '+']).next().unwrap_or(p).parse::<u64>().ok());
        Some(Version(parts.next()??, parts.next()??, parts.next()??))
    }

    /// Whether a host implementing `self` can run a component built against
    /// `guest` under semver alone (same major, no newer minor); which of
    /// those it loads is [`Version::support`]'s answer.
    pub fn supports(self, guest: Version) -> bool {
        guest.0 == self.0 && guest.1 <= self.1
    }

    /// How this host treats a component built against `self`.
    pub fn support(self) -> Support {
        super::versions::support(self, CONTRACT, super::versions::released())
    }
}

/// How a host treats a component by the contract version it was built
/// against (`wit/CHANGELOG.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// A released version: loaded, its answers converted into the newest
    /// types.
    Released,
    /// The version being prepared in `wit/tool.wit`: the built-ins use it;
    /// third-party components built against it load only in development
    /// builds ([`LOADS_UNRELEASED`]).
    Unreleased,
    /// A development version that was never released (1.1.0 to 1.4.0).
    Retired,
    /// Another major version, or a newer minor than this host knows.
    Unknown,
}

/// Whether this build loads third-party components built against an
/// unreleased contract version: debug builds, and builds with the
/// `unreleased-contract` feature.
pub(crate) const LOADS_UNRELEASED: bool = cfg!(any(debug_assertions, feature = "unreleased-contract"));

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// A host capability a component can import beyond WASI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Capability {
    /// `progress`: report progress and log. Every tool may.
    Progress,
    /// `session`: per-session key-value state. Every tool may.
    Session,
    /// `output`: streaming text into the result. Every tool may.
    Output,
    /// `files`: atomic file replacement in the working directories.
    Files,
    /// `shell`: the host's shell parser. Every tool may.
    Shell,
    /// `policy`: what the permission rules hide from the call. Every tool may.
    Policy,
    /// `process`: starting processes.
    Process,
    /// `search`: ripgrep run by the host, within the directories the call
    /// may read.
    Search,
    /// `toolhost:script/tools`: calling the other tools. Not part of the
    /// contract: the Script built-in's alone.
    Tools,
}

impl Capability {
    /// The interface name (`progress`, `files`, …).
    pub fn name(self) -> &'static str {
        match self {
            Capability::Progress => "progress",
            Capability::Session => "session",
            Capability::Output => "output",
            Capability::Files => "files",
            Capability::Shell => "shell",
            Capability::Policy => "policy",
            Capability::Process => "process",
            Capability::Search => "search",
            Capability::Tools => "tools",
        }
    }
}

/// Why a file is not a usable tool component.
#[derive(Debug, thiserror::Error)]
pub enum ShapeError {
    #[error("not a WebAssembly file (it does not start with the `\\0asm` magic number)")]
    /// It does not start like WebAssembly.
    NotWasm,
    #[error(
        "a core WebAssembly module, not a component: build the tool for the wasm32-wasip2 target \
         (or wrap the module with `wasm-tools component new`)"
    )]
    /// A core module, not a component.
    CoreModule,
    #[error("not a valid component: {0}")]
    /// It does not parse as a component.
    Invalid(String),
    #[error(
        "does not export the toolhost tool interface `{PACKAGE}/tool@{}` (or `async-tool`); its exports are: {}",
        Version::HOST,
        list(.0)
    )]
    /// It exports no `tool` interface (its exports are listed).
    NoToolExport(Vec<String>),
    #[error(
        "exports neither the toolhost tool interface `{PACKAGE}/tool@{}` nor a function a tool can be made of; \
         its exports are: {}{}",
        Version::HOST,
        list(.exports),
        .left_out.iter().map(|l| format!("; {l}")).collect::<String>()
    )]
    /// It exports no contract and no function that can be a tool (its
    /// exports are listed, and why each function was left out).
    NoFunctions {
        /// Its exports, by name.
        exports: Vec<String>,
        /// Each function left out, and why.
        left_out: Vec<String>,
    },
    #[error(
        "was built against toolhost contract {guest}, but this host implements contract {} \
         (it runs components built against {}); rebuild the tool with a matching toolhost-sdk",
        Version::HOST,
        super::versions::loadable()
    )]
    /// Built against another major version, or a newer minor.
    ContractMismatch {
        /// The version it was built against.
        guest: Version,
    },
    #[error(
        "was built against toolhost contract {guest}, a development version that was never released (see \
         wit/CHANGELOG.md): rebuild it against contract {}, which has everything {guest} had",
        super::RELEASED
    )]
    /// Built against a development version that was never released.
    ContractRetired {
        /// The version it was built against.
        guest: Version,
    },
    #[error(
        "was built against toolhost contract {guest}, which is not released yet: only development builds of \
         toolhost load it; rebuild it against the released contract {}",
        super::RELEASED
    )]
    /// Built against the unreleased version, in a release build.
    ContractUnreleased {
        /// The version it was built against.
        guest: Version,
    },
    #[error("imports `{0}`, which toolhost does not provide")]
    /// It imports a toolhost interface this host does not know.
    UnknownImport(String),
    #[error("imports what toolhost does not provide: {}", .0.iter().map(|m| m.to_string()).collect::<Vec<_>>().join("; "))]
    /// It imports what the host does not provide (each with its fix).
    MissingImports(Vec<super::scan::Missing>),
}

fn list(items: &[String]) -> String {
    if items.is_empty() { "(none)".into() } else { items.join(", ") }
}

/// What a component is, as far as the host cares.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shape {
    /// The contract version of its `tool` export.
    pub version: Version,
    /// The toolhost capabilities it imports.
    pub capabilities: Vec<Capability>,
    /// Every import, by name (WASI and toolhost).
    pub imports: Vec<String>,
    /// It uses the component-model async ABI (async lifts or lowers, its
    /// own tasks, futures or streams): its exports are called as tasks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub concurrent: bool,
    /// What it exports that the host serves.
    #[serde(default, skip_serializing_if = "Form::is_contract")]
    pub form: Form,
}

/// What a component exports that the host serves as tools.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Form {
    /// The contract (`tool` or `async-tool`): one tool that describes itself.
    #[default]
    Contract,
    /// Plain functions: each a tool, described by the host from its types.
    Functions,
}

impl Form {
    fn is_contract(&self) -> bool {
        *self == Form::Contract
    }
}

/// Checks the first bytes of a file: a component, a core module, or neither.
pub(crate) fn check_header(bytes: &[u8]) -> Result<(), ShapeError> {
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(ShapeError::NotWasm);
    }
    // Core modules have layer 0 (version 1); components have layer 1.
    match &bytes[4..8] {
        [1, 0, 0, 0] => Err(ShapeError::CoreModule),
        _ => Ok(()),
    }
}

/// The contract version of the `tool` export among `exports`, if this host
/// serves it.
pub(super) fn contract_version(exports: &[String]) -> Result<Version, ShapeError> {
    let (tool, async_tool) = (format!("{PACKAGE}/tool@"), format!("{PACKAGE}/async-tool@"));
    let version = exports
        .iter()
        .find_map(|name| name.strip_prefix(&tool).or_else(|| name.strip_prefix(&async_tool)))
        .map(|v| Version::parse(v).ok_or_else(|| ShapeError::Invalid(format!("unreadable contract version `{v}`"))))
        .transpose()?
        .ok_or_else(|| ShapeError::NoToolExport(exports.to_vec()))?;
    match version.support() {
        Support::Released | Support::Unreleased => Ok(version),
        Support::Retired => Err(ShapeError::ContractRetired { guest: version }),
        Support::Unknown => Err(ShapeError::ContractMismatch { guest: version }),
    }
}

/// The Script built-in's own interface (its version follows).
pub(crate) const SCRIPT_TOOLS: &str = "toolhost:script/tools@0.1.";

/// Reads the contract version and capabilities from a compiled component.
pub(crate) fn inspect(engine: &Engine, component: &Component) -> Result<Shape, ShapeError> {
    let exports: Vec<String> = component.component_type().exports(engine).map(|(name, _)| name.to_string()).collect();
    let version = contract_version(&exports)?;
    let (capabilities, imports) = imports(engine, component)?;
    Ok(Shape { version, capabilities, imports, concurrent: false, form: Form::Contract })
}

/// Reads the capabilities of a compiled component that exports plain
/// functions (its version is the host's: it serves no contract).
pub(crate) fn inspect_plain(engine: &Engine, component: &Component) -> Result<Shape, ShapeError> {
    let (capabilities, imports) = imports(engine, component)?;
    Ok(Shape { version: Version::HOST, capabilities, imports, concurrent: false, form: Form::Functions })
}

/// The capabilities a component imports, and every import by name.
fn imports(engine: &Engine, component: &Component) -> Result<(Vec<Capability>, Vec<String>), ShapeError> {
    let ty = component.component_type();
    let mut capabilities = Vec::new();
    let mut imports = Vec::new();
    for (name, _) in ty.imports(engine) {
        imports.push(name.to_string());
        if name.starts_with("wasi:") {
            continue;
        }
        if name.starts_with(SCRIPT_TOOLS) {
            capabilities.push(Capability::Tools);
            continue;
        }
        let Some(rest) = name.strip_prefix(&format!("{PACKAGE}/")) else {
            return Err(ShapeError::UnknownImport(name.to_string()));
        };
        let (interface, v) = rest.split_once('@').unwrap_or((rest, ""));
        match Version::parse(v) {
            Some(v) if Version::HOST.supports(v) => {}
            Some(v) => return Err(ShapeError::ContractMismatch { guest: v }),
            None => return Err(ShapeError::UnknownImport(name.to_string())),
        }
        match interface {
            "types" => {}
            "progress" => capabilities.push(Capability::Progress),
            "session" => capabilities.push(Capability::Session),
            "output" => capabilities.push(Capability::Output),
            "files" => capabilities.push(Capability::Files),
            "shell" => capabilities.push(Capability::Shell),
            "policy" => capabilities.push(Capability::Policy),
            "process" => capabilities.push(Capability::Process),
            "search" => capabilities.push(Capability::Search),
            _ => return Err(ShapeError::UnknownImport(name.to_string())),
        }
    }
    capabilities.sort();
    capabilities.dedup();
    Ok((capabilities, imports))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_follow_semver() {
        let host = Version(1, 2, 0);
        assert!(host.supports(Version(1, 0, 5)));
        assert!(host.supports(Version(1, 2, 9)));
        assert!(!host.supports(Version(1, 3, 0)), "newer minor may use what the host lacks");
        assert!(!host.supports(Version(2, 0, 0)));
        assert!(!host.supports(Version(0, 9, 0)));
        assert_eq!(Version::parse("1.0.0-rc.1"), Some(Version(1, 0, 0)));
    }

    #[test]
    fn headers_tell_modules_from_components() {
        assert!(matches!(check_header(b"hello world"), Err(ShapeError::NotWasm)));
        assert!(matches!(check_header(b"\0asm\x01\0\0\0"), Err(ShapeError::CoreModule)));
        check_header(b"\0asm\x0d\0\x01\0").unwrap();
    }
}
