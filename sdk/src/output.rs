//! Results, errors and permission decisions, and their mapping to the contract.

use crate::bindings::exports::toolhost::tool::tool::PermissionDecision;
use crate::bindings::toolhost::tool::types as wit;
use std::fmt;

/// One block of a result.
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// An image: media type (`image/png`, ...) and raw bytes.
    Image { media_type: String, data: Vec<u8> },
    /// A JSON document.
    Json(serde_json::Value),
    /// A document the model reads whole: media type (`application/pdf`)
    /// and raw bytes.
    Document { media_type: String, data: Vec<u8> },
}

/// A call's result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    /// What the model sees, in order.
    pub content: Vec<Content>,
    /// Machine-readable result, matching [`Tool::output_schema`](crate::Tool::output_schema).
    pub structured: Option<serde_json::Value>,
    /// The call ran, but its outcome is an error the model should see with the content.
    pub is_error: bool,
}

impl Output {
    /// A result made of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Output { content: vec![Content::Text(text.into())], ..Output::default() }
    }

    /// Adds machine-readable output.
    pub fn with_structured(mut self, value: serde_json::Value) -> Self {
        self.structured = Some(value);
        self
    }

    /// Marks the result as an error that still carries its content.
    pub fn into_error(mut self) -> Self {
        self.is_error = true;
        self
    }
}

/// The class of a [`ToolError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    InvalidInput,
    NotFound,
    PermissionDenied,
    Conflict,
    TooLarge,
    Unsupported,
    Io,
    Internal,
}

/// A failure the model can act on: `message` becomes an error `tool_result`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError {
    pub kind: ErrorKind,
    pub message: String,
}

impl ToolError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ToolError { kind, message: message.into() }
    }
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::PermissionDenied, message)
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }
    pub fn io(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Io, message)
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

/// The tool's own permission view of one call.
#[derive(Clone, Debug, PartialEq)]
pub enum Permission {
    /// Run it, optionally with a rewritten input. Honoured only for built-in
    /// tools; a third-party tool's `Allow` counts as `Passthrough`.
    Allow(Option<serde_json::Value>),
    /// Refuse, with the reason shown to the model.
    Deny(String),
    /// Ask the user, with the rules that would allow it next time.
    Ask { message: String, suggested_rules: Vec<String> },
    /// No opinion: the host's rules and mode decide.
    Passthrough,
}

/// What a user interrupt does to a running call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterruptBehavior {
    /// Stop the call.
    Cancel,
    /// Let it finish.
    Block,
}

impl From<InterruptBehavior> for wit::InterruptBehavior {
    fn from(b: InterruptBehavior) -> Self {
        match b {
            InterruptBehavior::Cancel => wit::InterruptBehavior::Cancel,
            InterruptBehavior::Block => wit::InterruptBehavior::Block,
        }
    }
}

/// How a tool uses a path its input holds (see [`crate::Tool::PATH_FIELDS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathAccess {
    /// It reads the file (matched by `Read(…)` rules).
    Read,
    /// It reads the directory tree below the path; an absent path means the
    /// working directory (matched by `Read(…)` rules).
    Search,
    /// It creates, changes or removes the file (matched by `Edit(…)` rules;
    /// writing a sensitive path always asks).
    Edit,
}

impl From<PathAccess> for wit::PathAccess {
    fn from(a: PathAccess) -> Self {
        match a {
            PathAccess::Read => wit::PathAccess::Read,
            PathAccess::Search => wit::PathAccess::Search,
            PathAccess::Edit => wit::PathAccess::Edit,
        }
    }
}

impl From<ToolError> for wit::ToolError {
    fn from(e: ToolError) -> Self {
        let kind = match e.kind {
            ErrorKind::InvalidInput => wit::ErrorKind::InvalidInput,
            ErrorKind::NotFound => wit::ErrorKind::NotFound,
            ErrorKind::PermissionDenied => wit::ErrorKind::PermissionDenied,
            ErrorKind::Conflict => wit::ErrorKind::Conflict,
            ErrorKind::TooLarge => wit::ErrorKind::TooLarge,
            ErrorKind::Unsupported => wit::ErrorKind::Unsupported,
            ErrorKind::Io => wit::ErrorKind::Io,
            ErrorKind::Internal => wit::ErrorKind::Internal,
        };
        wit::ToolError { kind, message: e.message }
    }
}

impl From<Content> for wit::ContentBlock {
    fn from(c: Content) -> Self {
        match c {
            Content::Text(t) => wit::ContentBlock::Text(t),
            Content::Image { media_type, data } => wit::ContentBlock::Image(wit::Image { media_type, data }),
            Content::Json(v) => wit::ContentBlock::Json(v.to_string()),
            Content::Document { media_type, data } => wit::ContentBlock::Document(wit::Document { media_type, data }),
        }
    }
}

impl From<Output> for wit::ToolOutput {
    fn from(o: Output) -> Self {
        wit::ToolOutput {
            content: o.content.into_iter().map(Into::into).collect(),
            structured: o.structured.map(|v| v.to_string()),
            is_error: o.is_error,
        }
    }
}

impl From<Permission> for PermissionDecision {
    fn from(p: Permission) -> Self {
        match p {
            Permission::Allow(updated) => PermissionDecision::Allow(updated.map(|v| v.to_string())),
            Permission::Deny(reason) => PermissionDecision::Deny(reason),
            Permission::Ask { message, suggested_rules } => {
                PermissionDecision::Ask(wit::AskRequest { message, suggested_rules })
            }
            Permission::Passthrough => PermissionDecision::Passthrough,
        }
    }
}
