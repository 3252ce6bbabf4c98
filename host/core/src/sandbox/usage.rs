//! What a call used: time, CPU, memory and output, measured around it and
//! reported beside its result and in the audit log.

use serde_json::{Value, json};
use std::time::Duration;

/// What one call used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    /// Wall-clock time of the whole call, hooks and asking included.
    pub wall_us: u64,
    /// CPU time of the call's thread: the tool's code and the host's work
    /// for it (child processes not included).
    pub cpu_us: u64,
    /// The tool's largest linear memory, all its memories together.
    pub peak_memory_bytes: u64,
    /// Bytes of the result's content (text, and image and document data).
    pub output_bytes: u64,
}

impl Usage {
    /// As the `usage` object beside a result.
    pub fn to_json(&self) -> Value {
        json!({
            "wall_us": self.wall_us,
            "cpu_us": self.cpu_us,
            "peak_memory_bytes": self.peak_memory_bytes,
            "output_bytes": self.output_bytes,
        })
    }
}

/// CPU time the calling thread has used.
pub(crate) fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for clock_gettime to fill.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0;
    if !ok {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
