//! What a tool knows about the call it serves, and the host imports it may use.

use crate::bindings::toolhost::tool::{output, progress, session, types as wit};
use crate::output::{ErrorKind, ToolError};
use serde::{Serialize, de::DeserializeOwned};

/// The permission mode the host runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Read-only calls inside the working directories run; anything else asks.
    Default,
    /// Read-only calls run; everything else is refused.
    Plan,
    /// File edits inside the working directories run too.
    AcceptEdits,
    /// Whatever would ask is refused.
    DontAsk,
    /// Everything runs except what a deny rule forbids.
    BypassPermissions,
}

/// Severity of a [`Context::log`] line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// The call being served: ids, directories, mode, and access to progress
/// reporting and session state.
#[derive(Clone, Debug)]
pub struct Context {
    tool_use_id: String,
    session_id: String,
    cwd: String,
    working_dirs: Vec<String>,
    read_only_dirs: Vec<String>,
    mode: Mode,
}

impl Context {
    pub(crate) fn from_wit(ctx: wit::CallContext) -> Self {
        Context {
            tool_use_id: ctx.tool_use_id,
            session_id: ctx.session_id,
            cwd: ctx.cwd,
            working_dirs: ctx.working_dirs,
            read_only_dirs: ctx.read_only_dirs,
            mode: match ctx.mode {
                wit::PermissionMode::Default => Mode::Default,
                wit::PermissionMode::Plan => Mode::Plan,
                wit::PermissionMode::AcceptEdits => Mode::AcceptEdits,
                wit::PermissionMode::DontAsk => Mode::DontAsk,
                wit::PermissionMode::BypassPermissions => Mode::BypassPermissions,
            },
        }
    }

    /// A context for unit tests of a tool's pure logic (no host behind it:
    /// progress and session calls need the real host).
    pub fn for_tests(cwd: &str, mode: Mode) -> Self {
        Context {
            tool_use_id: "test".into(),
            session_id: "test".into(),
            cwd: cwd.into(),
            working_dirs: vec![cwd.into()],
            read_only_dirs: Vec::new(),
            mode,
        }
    }

    /// The `id` of the model's `tool_use` block.
    pub fn tool_use_id(&self) -> &str {
        &self.tool_use_id
    }
    /// The session this call belongs to.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }
    /// The working directory (absolute).
    pub fn cwd(&self) -> &str {
        &self.cwd
    }
    /// The directories the tool may read and write (absolute, workspace first).
    pub fn working_dirs(&self) -> &[String] {
        &self.working_dirs
    }
    /// Directories the tool may read but not write.
    pub fn read_only_dirs(&self) -> &[String] {
        &self.read_only_dirs
    }
    /// The permission mode in force.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Reports progress; the caller sees it at once, while the call runs.
    pub fn progress(&self, message: &str) {
        progress::report(message, None);
    }

    /// Reports progress with machine-readable data attached.
    pub fn progress_with<D: Serialize>(&self, message: &str, data: &D) {
        let data = serde_json::to_string(data).ok();
        progress::report(message, data.as_deref());
    }

    /// Writes a line to the host's log, tagged with the tool and the call.
    pub fn log(&self, level: LogLevel, message: &str) {
        let level = match level {
            LogLevel::Trace => progress::LogLevel::Trace,
            LogLevel::Debug => progress::LogLevel::Debug,
            LogLevel::Info => progress::LogLevel::Info,
            LogLevel::Warn => progress::LogLevel::Warn,
            LogLevel::Error => progress::LogLevel::Error,
        };
        progress::log(level, message);
    }

    /// Session state: a small key-value store that outlives the call.
    pub fn session(&self) -> Session {
        Session { _private: () }
    }

    /// Streams text into the result: what is appended becomes the beginning
    /// of the result's first text block, ahead of what [`Tool::call`](crate::Tool::call)
    /// returns, so a tool with a large result need not hold it whole.
    pub fn output(&self) -> OutputStream {
        OutputStream { _private: () }
    }
}

/// Text streamed into the call's result (see [`Context::output`]). Each
/// [`append`](OutputStream::append) crosses into the host: append large pieces
/// (tens of KiB), not lines. The host keeps at most 64 MiB of it; the text is
/// discarded if the call fails.
pub struct OutputStream {
    _private: (),
}

impl OutputStream {
    /// Appends `text` to the result.
    pub fn append(&mut self, text: &str) {
        output::append(text);
    }
}

impl std::fmt::Write for OutputStream {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.append(s);
        Ok(())
    }
}

/// Session state. Values are strings; [`Session::get_json`] and
/// [`Session::set_json`] store serde types as JSON. Limits: keys up to 1 KiB,
/// values up to 64 KiB, 4 MiB and 4096 keys per session (per tool for
/// third-party tools, whose state is private to them).
pub struct Session {
    _private: (),
}

impl Session {
    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<String> {
        session::get(key)
    }

    /// Stores `value` under `key`.
    pub fn set(&self, key: &str, value: &str) -> Result<(), ToolError> {
        session::set(key, value).map_err(|e| {
            let why = match e {
                session::SessionError::InvalidKey => "the key is empty or longer than 1 KiB",
                session::SessionError::ValueTooLarge => "the value is larger than 64 KiB",
                session::SessionError::QuotaExceeded => "the session's state is full",
            };
            ToolError::new(ErrorKind::Internal, format!("could not save session state `{key}`: {why}"))
        })
    }

    /// Removes `key`.
    pub fn remove(&self, key: &str) {
        session::remove(key)
    }

    /// Keys starting with `prefix`, sorted.
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        session::keys(prefix)
    }

    /// The JSON value under `key`, if present and of type `T`.
    pub fn get_json<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        self.get(key).and_then(|v| serde_json::from_str(&v).ok())
    }

    /// Stores `value` as JSON under `key`.
    pub fn set_json<T: Serialize>(&self, key: &str, value: &T) -> Result<(), ToolError> {
        let text = serde_json::to_string(value)
            .map_err(|e| ToolError::new(ErrorKind::Internal, format!("could not encode `{key}`: {e}")))?;
        self.set(key, &text)
    }
}
