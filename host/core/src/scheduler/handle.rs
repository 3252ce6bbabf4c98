//! What adding a call to an [`Executor`] gives back: the call's handle.

use super::executor::{Shared, Stage, cancel};
use super::slot::Slot;
use crate::pipeline::ToolResult;
use std::sync::Arc;

/// One call added to an [`Executor`](super::Executor): its id, a way to cancel it, and its
/// result. A result is handed out once: to the handle if it asks
/// ([`CallHandle::result`], [`CallHandle::wait`]) before [`Executor::next`](super::Executor::next)
/// hands it out, and from then on never by `next`. Dropping the handle
/// changes nothing (a result it claimed is dropped when it comes).
pub struct CallHandle {
    pub(super) shared: Arc<Shared>,
    pub(super) number: usize,
    pub(super) id: String,
    /// Where the result arrives, once claimed (the executor may forget the
    /// call as soon as its result is in the slot).
    pub(super) slot: std::sync::OnceLock<Option<Arc<Slot>>>,
}

impl CallHandle {
    /// The call's `tool_use` id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Cancels the call (running or queued), whatever its interrupt
    /// behavior: its result becomes an error saying `why`. Nothing happens
    /// if it has ended.
    pub fn cancel(&self, why: &str) {
        let mut state = self.shared.lock();
        if let Some(t) = state.get_mut(self.number).filter(|t| t.stage != Stage::Done) {
            let delivered = cancel(t, why.to_string());
            state.handed_out += usize::from(delivered);
        }
        Shared::process_queue(&self.shared, &mut state);
        drop(state);
        self.shared.wake();
    }

    /// Claims the result: the slot it arrives in, unless it was handed out
    /// already (or the executor discarded it).
    fn claim(&self) -> Option<Arc<Slot>> {
        self.slot.get_or_init(|| self.claim_now()).clone()
    }

    fn claim_now(&self) -> Option<Arc<Slot>> {
        let mut state = self.shared.lock();
        if state.discarded {
            return None;
        }
        let t = state.get_mut(self.number)?;
        if let Some(slot) = &t.claim {
            return Some(Arc::clone(slot));
        }
        let slot = Arc::new(Slot::default());
        t.claim = Some(Arc::clone(&slot));
        if let Some(result) = t.result.take() {
            slot.put(result);
            state.handed_out += 1;
            state.compact();
        }
        Some(slot)
    }

    /// The call's result, once it has ended; `None` if [`Executor::next`](super::Executor::next)
    /// handed it out first or the executor discarded it.
    pub fn result(&self) -> impl Future<Output = Option<ToolResult>> + Send + 'static {
        let slot = self.claim();
        async move {
            match slot {
                Some(slot) => slot.take().await,
                None => None,
            }
        }
    }

    /// [`CallHandle::result`], blocking the thread.
    pub fn wait(&self) -> Option<ToolResult> {
        self.claim()?.take_blocking()
    }
}
