//! Oversized results, kept on disk for the model to read (step 8 of the
//! pipeline), within bounds: a result longer than its tool's
//! `max-result-size-chars` is written to the session's results directory
//! and the model gets a preview and the file's path.
//!
//! What a tool returns is not trusted to be of a sane size, so disk use is
//! bounded three ways:
//! - one file holds at most [`MAX_PERSISTED_BYTES`] of a result (the rest is
//!   dropped, and the file and the model's note say so);
//! - a session's results take at most [`SESSION_QUOTA`] and all sessions'
//!   results under the data directory at most [`DATA_QUOTA`]: before a file
//!   is written, the oldest results are removed until it fits.
//!
//! A result that cannot be saved (a full disk, say) still reaches the model
//! as its preview, with a note that the rest was lost.

use super::result::{Content, PREVIEW_CHARS, ToolResult};
use crate::session::Session;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Most bytes of one result kept on disk.
pub(crate) const MAX_PERSISTED_BYTES: usize = 16 << 20;
/// Most bytes of results one session keeps.
pub(crate) const SESSION_QUOTA: u64 = 256 << 20;
/// Most bytes of results all sessions under one data directory keep.
pub(crate) const DATA_QUOTA: u64 = 1 << 30;

/// When the text of `result` is longer than `max_chars`, writes it (at most
/// [`MAX_PERSISTED_BYTES`] of it) to a file in the session's results
/// directory and replaces it with a preview and the file's path.
pub(crate) fn persist_if_oversized(result: &mut ToolResult, max_chars: Option<u64>, session: &Session) {
    persist_within(result, max_chars, session, Quotas { session: SESSION_QUOTA, data: DATA_QUOTA });
}

/// The quotas results are kept within.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Quotas {
    pub session: u64,
    pub data: u64,
}

pub(crate) fn persist_within(result: &mut ToolResult, max_chars: Option<u64>, session: &Session, quotas: Quotas) {
    let Some(max) = max_chars else { return };
    let chars: usize = result
        .content
        .iter()
        .map(|c| match c {
            Content::Text(t) => t.chars().count(),
            Content::Image { .. } | Content::Document { .. } => 0,
        })
        .sum();
    if chars as u64 <= max {
        return;
    }
    let full = result.text();
    let preview: String = full.chars().take(PREVIEW_CHARS).collect();
    let kept = cut(&full, MAX_PERSISTED_BYTES);
    let dropped = if kept.len() < full.len() {
        format!(
            "\n[{} more bytes of this output were dropped: at most {} MiB of a result is kept.]\n",
            full.len() - kept.len(),
            MAX_PERSISTED_BYTES >> 20
        )
    } else {
        String::new()
    };
    let dir = session.results_dir();
    let file = dir.join(format!("{}.txt", sanitize(&result.tool_use_id)));
    let bytes = kept.len() + dropped.len();
    make_room(session, &file, bytes as u64, quotas);
    let saved = crate::fsx::replace_file(&file, format!("{kept}{dropped}").as_bytes());
    let text = match saved {
        Ok(()) => {
            session.note_results();
            format!(
                "<persisted-output>\nOutput too large ({chars} characters). Full output saved to: {}\n{}\nPreview (first {PREVIEW_CHARS} characters):\n{preview}\n...\n</persisted-output>",
                file.display(),
                dropped.trim_start()
            )
        }
        Err(e) => {
            tracing::warn!(error = %e, file = %file.display(), "could not persist an oversized result");
            format!(
                "{preview}\n...\n[Output truncated from {chars} characters; the full output could not be saved: {e}]"
            )
        }
    };
    let media = result.content.drain(..).filter(|c| !matches!(c, Content::Text(_)));
    result.content = std::iter::once(Content::Text(text)).chain(media.collect::<Vec<_>>()).collect();
}

/// The longest prefix of `text` of at most `max` bytes, on a character
/// boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Removes the oldest results, this session's first, then any session's
/// under the data directory, until `incoming` more bytes (replacing
/// `file`, if it exists) fit both quotas. Best effort: a file another
/// process removed first is simply gone.
fn make_room(session: &Session, file: &Path, incoming: u64, quotas: Quotas) {
    let replaced = std::fs::metadata(file).map_or(0, |m| m.len());
    let mine = results_in(&session.results_dir());
    evict(mine, incoming, replaced, quotas.session, file);
    let Some(sessions) = session.dir().parent() else { return };
    let all: Vec<Result> = std::fs::read_dir(sessions)
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|entry| results_in(&entry.path().join("tool-results")))
        .collect();
    evict(all, incoming, replaced, quotas.data, file);
}

struct Result {
    path: PathBuf,
    bytes: u64,
    modified: SystemTime,
}

fn results_in(dir: &Path) -> Vec<Result> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let meta = entry.metadata().ok().filter(|m| m.is_file())?;
            Some(Result {
                path: entry.path(),
                bytes: meta.len(),
                modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            })
        })
        .collect()
}

fn evict(mut results: Vec<Result>, incoming: u64, replaced: u64, quota: u64, keep: &Path) {
    let mut total: u64 = results.iter().map(|r| r.bytes).sum::<u64>().saturating_sub(replaced);
    if total.saturating_add(incoming) <= quota {
        return;
    }
    results.sort_by_key(|r| (r.modified, r.path.clone()));
    for r in results {
        if total.saturating_add(incoming) <= quota {
            break;
        }
        if r.path == keep {
            continue;
        }
        match std::fs::remove_file(&r.path) {
            Ok(()) => {
                tracing::info!(file = %r.path.display(), bytes = r.bytes, "removed an old persisted result to stay within quota");
                total = total.saturating_sub(r.bytes);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => total = total.saturating_sub(r.bytes),
            Err(e) => tracing::warn!(file = %r.path.display(), error = %e, "could not remove an old persisted result"),
        }
    }
}

/// A tool-use id as a file name: anything but `A-Z a-z 0-9 _ -` becomes `_`.
fn sanitize(id: &str) -> String {
    let s: String =
        id.chars().take(128).map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    if s.is_empty() { "result".into() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_result(id: &str, text: String) -> ToolResult {
        ToolResult {
            tool_use_id: id.into(),
            content: vec![Content::Text(text)],
            is_error: false,
            structured: None,
            stop: None,
            usage: None,
        }
    }

    #[test]
    fn oversized_results_are_persisted_with_a_preview() {
        let dir = tempfile::tempdir().unwrap();
        let session = Session::ephemeral(dir.path());
        assert_eq!(session.existing_results_dir(), None);
        let big = "x".repeat(5000);
        let mut r = text_result("../evil id", big.clone());
        persist_if_oversized(&mut r, Some(4000), &session);
        let text = r.text();
        assert!(text.starts_with("<persisted-output>\nOutput too large (5000 characters)"), "{text}");
        assert_eq!(session.existing_results_dir(), Some(session.results_dir()));
        let saved = session.results_dir().join("___evil_id.txt");
        assert!(text.contains(&saved.display().to_string()));
        assert_eq!(std::fs::read_to_string(saved).unwrap(), big);

        let mut small = ToolResult::error("id", "short");
        persist_if_oversized(&mut small, Some(10), &session);
        assert_eq!(small.text(), "short");
    }

    #[test]
    fn a_huge_result_keeps_its_cap_on_disk_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let session = Session::ephemeral(dir.path());
        let mut r = ToolResult::error("huge", "é".repeat(MAX_PERSISTED_BYTES / 2 + 10));
        persist_if_oversized(&mut r, Some(100), &session);
        let saved = std::fs::read_to_string(session.results_dir().join("huge.txt")).unwrap();
        assert!(saved.len() <= MAX_PERSISTED_BYTES + 200, "{} bytes on disk", saved.len());
        assert!(saved.ends_with("MiB of a result is kept.]\n"), "{}", &saved[saved.len() - 100..]);
        assert!(r.text().contains("more bytes of this output were dropped"), "{}", &r.text()[..300]);
        assert!(r.is_error, "an error stays an error");
    }

    #[test]
    fn results_stay_within_the_quotas_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let quotas = Quotas { session: 10_000, data: 15_000 };
        let a = Session::ephemeral(dir.path());
        let b = Session::ephemeral(dir.path());
        let put = |session: &Session, id: &str| {
            let mut r = text_result(id, "y".repeat(4_000));
            persist_within(&mut r, Some(10), session, quotas);
            // Distinct modification times, oldest first.
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let names = |session: &Session| {
            let mut n: Vec<String> = std::fs::read_dir(session.results_dir())
                .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
                .unwrap_or_default();
            n.sort();
            n
        };
        put(&a, "a1");
        put(&a, "a2");
        put(&a, "a3");
        assert_eq!(names(&a), ["a2.txt", "a3.txt"], "the session's quota removes its oldest");
        put(&b, "b1");
        put(&b, "b2");
        assert_eq!(names(&a), ["a3.txt"], "the data dir's quota removes the oldest of any session");
        assert_eq!(names(&b), ["b1.txt", "b2.txt"]);
        // Writing a result again under its id replaces it, and counts once.
        put(&b, "b2");
        assert_eq!(names(&b), ["b1.txt", "b2.txt"]);
    }
}
