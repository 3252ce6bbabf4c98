//! `process`: starting processes, for components granted the process
//! capability; every start is checked by [`crate::process`].

use super::CallView;
use crate::contract::bindings::toolhost::tool::process;
use crate::process::{Approval, Foreground, ProcessError, Program, Spawn, Status, Stream};
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::Resource;

fn spawn_request(options: process::SpawnOptions) -> Spawn {
    Spawn {
        program: match options.program {
            process::Program::Shell(s) => Program::Shell(s),
            process::Program::Argv(a) => Program::Argv(a),
        },
        cwd: options.cwd,
        env: options.env,
        stdin: options.stdin,
        timeout: Duration::from_millis(options.timeout_ms),
    }
}

fn process_error(e: ProcessError) -> process::ProcessError {
    match e {
        ProcessError::NotPermitted(m) => process::ProcessError::NotPermitted(m),
        ProcessError::BadDirectory(m) => process::ProcessError::BadDirectory(m),
        ProcessError::SpawnFailed(m) => process::ProcessError::SpawnFailed(m),
        ProcessError::UnknownId(m) => process::ProcessError::UnknownId(m),
    }
}

fn exit_status(s: Status) -> process::ExitStatus {
    match s {
        Status::Exited(c) => process::ExitStatus::Exited(c),
        Status::Signaled(s) => process::ExitStatus::Signaled(s),
    }
}

impl process::Host for CallView<'_> {
    fn spawn(
        &mut self,
        options: process::SpawnOptions,
    ) -> wasmtime::Result<Result<Resource<Foreground>, process::ProcessError>> {
        let deadline = self.scope.deadline.map(|(at, _)| at);
        match Foreground::spawn(spawn_request(options), &self.scope.permit(), deadline) {
            Ok(child) => Ok(Ok(self.table.push(child)?)),
            Err(e) => Ok(Err(process_error(e))),
        }
    }

    fn start_background(
        &mut self,
        options: process::SpawnOptions,
    ) -> wasmtime::Result<Result<String, process::ProcessError>> {
        let session = Arc::clone(&self.scope.session);
        // The output file goes beside the session's persisted results, which
        // the file tools may read.
        let dir = session.results_dir();
        let started = self.scope.background.start(session.id(), &dir, spawn_request(options), &self.scope.permit());
        let (id, file) = match started {
            Ok(started) => started,
            Err(e) => return Ok(Err(process_error(e))),
        };
        session.note_results();
        let mut records = vec![(crate::process::output_key(&id), file.to_string_lossy().into_owned())];
        if session.is_persistent() {
            // Other instances serving this session can then say where it runs.
            records.push((crate::process::instance_key(&id), self.scope.background.instance().to_string()));
        }
        for (key, value) in records {
            if let Err(e) = session.set(&key, &value, None) {
                tracing::warn!(error = ?e, key, "could not record a background process in its session");
            }
        }
        Ok(Ok(id))
    }

    fn read_background(
        &mut self,
        id: String,
    ) -> wasmtime::Result<Result<process::BackgroundOutput, process::ProcessError>> {
        if !self.scope.process_granted {
            return Ok(Err(process::ProcessError::NotPermitted("the process capability is not granted".into())));
        }
        let out = self.scope.background.read(self.scope.session.id(), &id).map_err(|e| self.elsewhere(&id, e));
        Ok(out.map(|o| process::BackgroundOutput {
            stdout: o.stdout,
            stderr: o.stderr,
            dropped: o.dropped,
            status: o.status.map(exit_status),
        }))
    }

    fn kill_background(&mut self, id: String) -> wasmtime::Result<Result<(), process::ProcessError>> {
        if !self.scope.process_granted || self.scope.approval == Approval::Nothing {
            return Ok(Err(process::ProcessError::NotPermitted("killing a process needs the call's approval".into())));
        }
        Ok(self.scope.background.kill(self.scope.session.id(), &id).map_err(|e| self.elsewhere(&id, e)))
    }
}

impl CallView<'_> {
    /// An unknown background process is looked for in the session's state:
    /// one started by another instance serving the same session is named as
    /// such, since this one cannot reach it.
    fn elsewhere(&self, id: &str, error: ProcessError) -> process::ProcessError {
        let theirs = self.scope.session.get(&crate::process::instance_key(id));
        match (&error, theirs) {
            (ProcessError::UnknownId(_), Some(instance)) if instance != self.scope.background.instance() => {
                process::ProcessError::UnknownId(format!(
                    "background process `{id}` was started on instance `{instance}`, and this call reached instance \
                     `{}`: a background process stays on the instance that started it, so its output and TaskStop \
                     are there. Send this session's calls to `{instance}`, or start the command again here.",
                    self.scope.background.instance()
                ))
            }
            _ => process_error(error),
        }
    }
}

impl process::HostChild for CallView<'_> {
    fn read(&mut self, child: Resource<Foreground>, wait_ms: u32) -> wasmtime::Result<Option<Vec<process::Chunk>>> {
        let cancel = self.scope.cancel.clone();
        let child = self.table.get_mut(&child)?;
        Ok(child.read(Duration::from_millis(u64::from(wait_ms)), cancel.as_deref()).map(|chunks| {
            chunks
                .into_iter()
                .map(|(stream, data)| process::Chunk {
                    source: match stream {
                        Stream::Stdout => process::StreamKind::Stdout,
                        Stream::Stderr => process::StreamKind::Stderr,
                    },
                    data,
                })
                .collect()
        }))
    }

    fn wait(&mut self, child: Resource<Foreground>) -> wasmtime::Result<process::Finished> {
        let cancel = self.scope.cancel.clone();
        let f = self.table.get_mut(&child)?.wait(cancel.as_deref());
        Ok(process::Finished {
            status: exit_status(f.status),
            timed_out: f.timed_out,
            cancelled: f.cancelled,
            unconfined: f.unconfined,
        })
    }

    fn kill(&mut self, child: Resource<Foreground>) -> wasmtime::Result<()> {
        self.table.get_mut(&child)?.kill();
        Ok(())
    }

    fn drop(&mut self, child: Resource<Foreground>) -> wasmtime::Result<()> {
        // Dropping the process kills its group.
        self.table.delete(child)?;
        Ok(())
    }
}
