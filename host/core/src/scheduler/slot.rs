//! Where a claimed call's result waits for its handle.

use super::wakeup::Wakeup;
use crate::pipeline::ToolResult;
use std::sync::Mutex;

#[derive(Default)]
enum Content {
    #[default]
    Waiting,
    Ready(ToolResult),
    /// Taken by the handle, or never coming (the executor discarded it).
    Gone,
}

/// One call's result, handed from the worker that ran it to its handle,
/// async or blocking.
#[derive(Default)]
pub(super) struct Slot {
    content: Mutex<Content>,
    ready: tokio::sync::Notify,
    ready_blocking: Wakeup,
}

impl Slot {
    /// The result arrived (ignored once the slot is gone).
    pub(super) fn put(&self, result: ToolResult) {
        let mut content = self.content.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*content, Content::Waiting) {
            *content = Content::Ready(result);
        }
        self.wake();
    }

    /// No result will come.
    pub(super) fn close(&self) {
        let mut content = self.content.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*content, Content::Waiting) {
            *content = Content::Gone;
        }
        self.wake();
    }

    fn wake(&self) {
        self.ready.notify_waiters();
        self.ready_blocking.notify_all();
    }

    fn take_now(content: &mut Content) -> Option<Option<ToolResult>> {
        match std::mem::replace(content, Content::Gone) {
            Content::Ready(result) => Some(Some(result)),
            Content::Gone => Some(None),
            Content::Waiting => {
                *content = Content::Waiting;
                None
            }
        }
    }

    /// Waits for the result; `None` if none is coming.
    pub(super) async fn take(&self) -> Option<ToolResult> {
        loop {
            // Created before looking, so a result put in between wakes it.
            let notified = self.ready.notified();
            if let Some(taken) = Self::take_now(&mut self.content.lock().unwrap_or_else(|e| e.into_inner())) {
                return taken;
            }
            notified.await;
        }
    }

    /// [`Slot::take`], blocking the thread.
    pub(super) fn take_blocking(&self) -> Option<ToolResult> {
        let mut content = self.content.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(taken) = Self::take_now(&mut content) {
                return taken;
            }
            content = self.ready_blocking.wait(content);
        }
    }
}
