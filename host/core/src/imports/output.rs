//! `output`: text streamed into the call's result, so a tool with a large
//! result never holds it whole.

use super::CallView;
use crate::contract::bindings::toolhost::tool::output;

/// Most bytes of text one call may stream into its result.
pub(crate) const MAX_STREAMED: usize = 64 << 20;

impl output::Host for CallView<'_> {
    fn append(&mut self, text: String) {
        // Copied into one growing string and freed at once, so the allocator
        // reuses the piece's memory for the next one.
        let scope = &mut *self.scope;
        let room = MAX_STREAMED - scope.streamed.len();
        let mut take = text.len().min(room);
        while !text.is_char_boundary(take) {
            take -= 1;
        }
        scope.streamed.push_str(&text[..take]);
        scope.streamed_cut |= take < text.len();
    }
}
