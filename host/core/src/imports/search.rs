//! `search`: ripgrep's engine (`toolhost-search`) run natively for a tool,
//! on every core, within the directories the call may read, skipping what
//! the permission rules hide, until the call's deadline or cancellation.

use super::CallView;
use crate::contract::bindings::toolhost::tool::search;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;
use toolhost_hidden_paths::HiddenPaths;
use toolhost_primitives::path::{Containment, containment, is_inside};
use toolhost_search::{Confinement, Options, Skip};

/// The most output one search hands a tool.
const MAX_OUTPUT: u64 = 64 << 20;
/// The most a file's search may buffer (a line; a whole file with
/// `multiline`), per worker thread: the host's memory, not the guest's.
const MAX_BUFFER: usize = 64 << 20;

toolhost_search::contract_mapping!(search);

impl search::Host for CallView<'_> {
    fn run(&mut self, query: search::Query) -> Result<Vec<u8>, search::SearchError> {
        let scope = &*self.scope;
        let refused = search::SearchError::NotPermitted(query.root.clone());
        let mut query = query_from_contract(query);
        query.root = crate::fsx::normalize(&query.root);
        query.cwd = crate::fsx::normalize(&query.cwd);
        let root = &query.root;
        let inside = |p: &Path| is_inside(p, &scope.readable);
        // The root lexically, and what it resolves to: a symlink named as the
        // root must not lead out either.
        if !root.is_absolute() || containment(root, inside) != Containment::Inside {
            return Err(refused);
        }
        let hidden = match &scope.rules {
            Some(rules) => HiddenPaths::new(&rules.hidden_from_searches()),
            None => HiddenPaths::default(),
        };
        let skip: Skip = Arc::new(move |path, is_dir| hidden.contains(path, is_dir));
        let deadline = scope.deadline.map(|(at, _)| at);
        let cancel = scope.cancel.clone();
        let stop = move || {
            deadline.is_some_and(|at| Instant::now() >= at)
                || cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed))
        };
        let options = Options {
            threads: Options::cores(),
            max_output: MAX_OUTPUT,
            max_buffer: MAX_BUFFER,
            confinement: Confinement::Within(scope.readable.clone()),
            skip,
            stop: &stop,
        };
        let started = Instant::now();
        let result = toolhost_search::run(&query, &options);
        tracing::debug!(
            tool = %scope.tool,
            root = %query.root.display(),
            bytes = result.as_ref().map_or(0, Vec::len),
            micros = started.elapsed().as_micros() as u64,
            "search"
        );
        result.map_err(error_to_contract)
    }
}
