//! How far a pull has come, on stderr: a line when a download starts, one
//! at most every [`EVERY`] while it runs (rewritten in place on a
//! terminal), and one when it is done.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// The least time between two reports.
const EVERY: Duration = Duration::from_secs(1);

/// One download's progress.
pub(crate) struct Progress {
    what: String,
    total: u64,
    last: Instant,
    terminal: bool,
}

impl Progress {
    pub(crate) fn new() -> Progress {
        Progress { what: String::new(), total: 0, last: Instant::now(), terminal: std::io::stderr().is_terminal() }
    }

    /// A download of `what`, `total` bytes, starts.
    pub(crate) fn start(&mut self, what: &str, total: u64) {
        self.what = what.to_string();
        self.total = total;
        self.last = Instant::now();
        eprintln!("pulling {what} ({})", size(total));
    }

    /// `done` bytes of it have arrived.
    pub(crate) fn advance(&mut self, done: u64) {
        if self.last.elapsed() < EVERY {
            return;
        }
        self.last = Instant::now();
        let line = format!("pulling {}: {} of {}", self.what, size(done), size(self.total));
        let mut err = std::io::stderr().lock();
        let _ = if self.terminal { write!(err, "\r{line}\x1b[K") } else { writeln!(err, "{line}") };
    }

    /// It is done, with `done` bytes.
    pub(crate) fn finish(&mut self, done: u64) {
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r\x1b[K");
        }
        let _ = writeln!(err, "pulled {} ({})", self.what, size(done));
    }
}

/// `bytes` for people: 812 bytes, 40.0 KiB, 12.3 MiB.
fn size(bytes: u64) -> String {
    match bytes {
        0..1024 => format!("{bytes} bytes"),
        1024..1_048_576 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MiB", bytes as f64 / 1_048_576.0),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(super::size(812), "812 bytes");
        assert_eq!(super::size(40 * 1024), "40.0 KiB");
        assert_eq!(super::size(12_897_485), "12.3 MiB");
    }
}
