//! The batch orchestrator: a whole list of calls at once.

use super::Host;
use crate::pipeline::{CallOptions, ToolResult, ToolUse};
use crate::session::Session;
use std::sync::{Arc, Mutex};

/// Runs a whole list of calls: consecutive concurrency-safe calls as one
/// parallel batch (at most `max_concurrency` at once), every other call
/// alone, batches in order. Results in the order of `calls`.
pub fn run_batch(host: &Host, session: &Arc<Session>, calls: &[ToolUse], max_concurrency: usize) -> Vec<ToolResult> {
    let max = max_concurrency.max(1);
    let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
    let safe: Vec<bool> = calls.iter().map(|c| host.is_concurrency_safe_in(session, c)).collect();
    let mut i = 0;
    while i < calls.len() {
        let end = if safe[i] { (i..calls.len()).find(|&j| !safe[j]).unwrap_or(calls.len()) } else { i + 1 };
        let batch: Vec<usize> = (i..end).collect();
        let next = Mutex::new(0usize);
        let out = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..max.min(batch.len()) {
                scope.spawn(|| {
                    loop {
                        let k = {
                            let mut n = next.lock().unwrap_or_else(|e| e.into_inner());
                            let k = *n;
                            *n += 1;
                            k
                        };
                        let Some(&index) = batch.get(k) else { return };
                        let r = host.call(session, &calls[index], &CallOptions::default());
                        out.lock().unwrap_or_else(|e| e.into_inner()).push((index, r));
                    }
                });
            }
        });
        for (index, r) in out.into_inner().unwrap_or_else(|e| e.into_inner()) {
            results[index] = Some(r);
        }
        i = end;
    }
    results
        .into_iter()
        .zip(calls)
        .map(|(r, c)| r.unwrap_or_else(|| ToolResult::error(&c.id, "the call did not run")))
        .collect()
}
