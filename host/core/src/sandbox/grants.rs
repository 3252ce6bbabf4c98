//! What the operator grants a tool: the capabilities a Store is built with.

/// Filesystem access granted to a tool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FileAccess {
    /// No directory at all.
    #[default]
    None,
    /// The working directories and the read-only directories, read-only.
    ReadOnly,
    /// The working directories read-write (plus the `files` capability), the
    /// read-only directories read-only.
    ReadWrite,
}

/// What the operator grants a tool. Built-in tools get the access their job
/// needs; a third-party tool gets nothing unless granted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grants {
    pub files: FileAccess,
    /// The process capability (starting commands, policed by the host).
    pub process: bool,
}
