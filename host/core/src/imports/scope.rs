//! What the host imports know of the call they serve: which tool and call,
//! the session, the directories, what was granted and approved, where
//! progress goes, when to stop. One [`CallScope`] per Store.

use super::policy::CallRules;
use super::progress::ProgressSink;
use super::session::Namespace;
use crate::fsx::Dirs;
use crate::process::{Approval, BackgroundRegistry, Confinement, Permit};
use crate::session::Session;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;

/// Everything the host imports need to know about the call.
pub(crate) struct CallScope {
    pub tool: Arc<str>,
    pub tool_use_id: String,
    pub session: Arc<Session>,
    pub namespace: Namespace,
    pub progress: Option<ProgressSink>,
    pub(super) progress_sent: u32,
    /// Directories `files.replace` may write (empty: not granted).
    pub writable: Vec<PathBuf>,
    /// Directories the call may read (its WASI directories), which
    /// `search.run` searches within.
    pub readable: Vec<PathBuf>,
    /// The call's directories.
    pub dirs: Arc<Dirs>,
    /// The process capability was granted.
    pub process_granted: bool,
    /// What processes the call may start (set by the permission step).
    pub approval: Approval,
    /// The permission rules as they apply to this call: what walks skip,
    /// what commands may start.
    pub rules: Option<Arc<dyn CallRules>>,
    /// The host's background processes.
    pub background: Arc<BackgroundRegistry>,
    /// What to do when a child cannot be confined.
    pub confinement: Confinement,
    /// When the call must end, and the limit that sets it.
    pub deadline: Option<(Instant, Duration)>,
    pub cancel: Option<Arc<AtomicBool>>,
    /// Text the tool streamed into its result (`output.append`).
    pub streamed: String,
    /// The values of the secrets handed to the tool (name, value): masked
    /// in whatever it gives back.
    pub secrets: Vec<(String, String)>,
    /// Streamed text beyond [`super::MAX_STREAMED`] was dropped.
    pub streamed_cut: bool,
    /// The calls of the Script built-in's program (`toolhost:script/tools`);
    /// `None` for every other tool.
    pub script: Option<super::ScriptCalls>,
}

impl CallScope {
    /// A scope that grants nothing beyond what every tool gets.
    pub(crate) fn new(
        tool: Arc<str>,
        tool_use_id: String,
        session: Arc<Session>,
        namespace: Namespace,
        dirs: Arc<Dirs>,
        background: Arc<BackgroundRegistry>,
    ) -> CallScope {
        CallScope {
            tool,
            tool_use_id,
            session,
            namespace,
            progress: None,
            progress_sent: 0,
            writable: Vec::new(),
            readable: Vec::new(),
            dirs,
            process_granted: false,
            approval: Approval::Nothing,
            rules: None,
            background,
            confinement: Confinement::Required,
            deadline: None,
            cancel: None,
            streamed: String::new(),
            secrets: Vec::new(),
            streamed_cut: false,
            script: None,
        }
    }

    /// A scope for running the same call again in a fresh instance (a retry
    /// with more grants): the same call, session, directories, progress,
    /// cancellation and permission decision; nothing the first run left
    /// (streamed text, its deadline) and no capability (the new Store sets
    /// those from its grants).
    pub(crate) fn again(&self) -> CallScope {
        CallScope {
            tool: Arc::clone(&self.tool),
            tool_use_id: self.tool_use_id.clone(),
            session: Arc::clone(&self.session),
            namespace: self.namespace.clone(),
            progress: self.progress.clone(),
            progress_sent: self.progress_sent,
            writable: Vec::new(),
            readable: Vec::new(),
            dirs: Arc::clone(&self.dirs),
            process_granted: false,
            approval: self.approval.clone(),
            rules: self.rules.clone(),
            background: Arc::clone(&self.background),
            confinement: self.confinement,
            deadline: None,
            cancel: self.cancel.clone(),
            streamed: String::new(),
            secrets: Vec::new(),
            streamed_cut: false,
            script: self.script.clone(),
        }
    }

    /// The facts a process start is checked against.
    pub(super) fn permit(&self) -> Permit<'_> {
        Permit {
            granted: self.process_granted,
            approval: self.approval.clone(),
            dirs: &self.dirs,
            session_dir: self.session.dir(),
            network: false,
            confinement: self.confinement,
            rules: self.rules.as_deref().map(|r| r as &dyn crate::process::CommandRules),
        }
    }
}

/// What one host import call works on: the call's scope and the Store's
/// resource table.
pub(crate) struct CallView<'a> {
    pub scope: &'a mut CallScope,
    pub table: &'a mut ResourceTable,
}
