//! Every toolchain the tests install for themselves, pinned: the package,
//! its version, and where under `target/` it is installed. This crate's
//! build script installs them all at once while the rest of the workspace
//! compiles (the downloads wait on the network, not on the two cores); a
//! test installs one on first use if the build could not.

/// Where a toolchain comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// PyPI, by pip, into a virtual environment of its own.
    PyPi,
    /// The npm registry, by npm, into a prefix of its own.
    Npm,
}

/// A pinned toolchain.
#[derive(Clone, Copy, Debug)]
pub struct Pin {
    pub source: Source,
    pub package: &'static str,
    /// An exact version, or (PyPI) a range such as `>=2.3,<3`.
    pub version: &'static str,
    /// Its directory under `target/`.
    pub dir: &'static str,
}

impl Pin {
    /// What pip or npm is asked to install.
    pub fn requirement(&self) -> String {
        match self.source {
            Source::PyPi if self.version.starts_with(['<', '>', '=', '!', '~']) => {
                format!("{}{}", self.package, self.version)
            }
            Source::PyPi => format!("{}=={}", self.package, self.version),
            Source::Npm => format!("{}@{}", self.package, self.version),
        }
    }
}

/// componentize-py, which builds the Python tools (and `toolhost new`
/// pins).
pub const COMPONENTIZE_PY: Pin =
    Pin { source: Source::PyPi, package: "componentize-py", version: "0.25.1", dir: "py-venv" };
/// The official MCP Python SDK's 2.x line (clients of the MCP front).
pub const MCP_PYTHON_2: Pin = Pin { source: Source::PyPi, package: "mcp", version: ">=2.3,<3", dir: "mcp-venv/mcp2" };
/// Its 1.x line, which most servers are written with (clients and servers).
pub const MCP_PYTHON_1: Pin = Pin { source: Source::PyPi, package: "mcp", version: ">=1.20,<2", dir: "mcp-venv/mcp1" };
/// Kubernetes' schemas, offline, for the deployment manifests.
pub const KUBERNETES_VALIDATE: Pin =
    Pin { source: Source::PyPi, package: "kubernetes-validate", version: "1.37.0", dir: "kubernetes-validate" };
/// componentize-qjs (QuickJS), which builds the JavaScript tools (and
/// `toolhost new` pins).
pub const COMPONENTIZE_QJS: Pin =
    Pin { source: Source::Npm, package: "componentize-qjs", version: "0.4.5", dir: "js-tools/qjs" };
/// componentize-js (SpiderMonkey).
pub const COMPONENTIZE_JS: Pin = Pin {
    source: Source::Npm,
    package: "@bytecodealliance/componentize-js",
    version: "0.23.0",
    dir: "js-tools/spidermonkey",
};
/// jco (`jco componentize --backend quickjs`).
pub const JCO: Pin =
    Pin { source: Source::Npm, package: "@bytecodealliance/jco", version: "1.35.0", dir: "js-tools/jco" };
/// The official MCP TypeScript SDK's v2 client.
pub const MCP_TS_CLIENT: Pin =
    Pin { source: Source::Npm, package: "@modelcontextprotocol/client", version: "2.4.0", dir: "mcp-node" };
/// The reference filesystem MCP server.
pub const MCP_SERVER_FILESYSTEM: Pin = Pin {
    source: Source::Npm,
    package: "@modelcontextprotocol/server-filesystem",
    version: "2026.8.31",
    dir: "mcp-servers-node",
};

/// Every pinned toolchain.
pub const ALL: &[Pin] = &[
    COMPONENTIZE_PY,
    MCP_PYTHON_2,
    MCP_PYTHON_1,
    KUBERNETES_VALIDATE,
    COMPONENTIZE_QJS,
    COMPONENTIZE_JS,
    JCO,
    MCP_TS_CLIENT,
    MCP_SERVER_FILESYSTEM,
];
