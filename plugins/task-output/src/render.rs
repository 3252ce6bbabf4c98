//! The texts of `TaskOutput`: Claude Code 2.1.88's
//! (`TaskOutputTool.tsx` `mapToolResultToToolResultBlockParam`,
//! `utils/task/outputFormatting.ts`), and for the old `BashOutput` input,
//! Claude Code 2.0's.

use toolhost_sdk::process::BackgroundTask;

/// UTF-16 units of output shown at most (Claude Code's default
/// `TASK_MAX_OUTPUT_LENGTH`).
pub const MAX_OUTPUT_UNITS: usize = 32_000;
/// Characters of each stream the old `BashOutput` shows at most.
pub const LEGACY_MAX_CHARS: usize = 30_000;

/// How a read went: `success` (the task ended, or was read without
/// waiting after it ended), `timeout` (waited, still running), `not_ready`
/// (did not wait, still running).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retrieval {
    Success,
    Timeout,
    NotReady,
}

impl Retrieval {
    fn as_str(self) -> &'static str {
        match self {
            Retrieval::Success => "success",
            Retrieval::Timeout => "timeout",
            Retrieval::NotReady => "not_ready",
        }
    }
}

/// The result text for `task`: its status tags, then its output, each part
/// a paragraph. While the task runs, the output is its beginning; once it
/// ended, its end.
pub fn task_text(retrieval: Retrieval, task: &BackgroundTask, filter: Option<&regex::Regex>) -> String {
    let mut parts = vec![
        format!("<retrieval_status>{}</retrieval_status>", retrieval.as_str()),
        format!("<task_id>{}</task_id>", task.id),
        "<task_type>local_bash</task_type>".to_string(),
        format!("<status>{}</status>", task.status()),
    ];
    if let Some(code) = task.exit_code() {
        parts.push(format!("<exit_code>{code}</exit_code>"));
    }
    let output = if task.is_running() { task.head.as_str() } else { task.tail.as_str() };
    let output = match filter {
        Some(re) => keep_matching(output, re),
        None => output.to_string(),
    };
    if !output.trim().is_empty() {
        let content = format_output(&output, task.is_running() || task.tail_complete);
        parts.push(format!("<output>\n{}\n</output>", content.trim_end()));
    }
    parts.join("\n\n")
}

/// `output` as shown: past [`MAX_OUTPUT_UNITS`] (or when it is not the
/// whole output), a header and its end.
fn format_output(output: &str, whole: bool) -> String {
    if whole && utf16_len(output) <= MAX_OUTPUT_UNITS {
        return output.to_string();
    }
    // Claude Code names the file holding the whole output here; toolhost
    // keeps none.
    let header = "[Truncated. Full output: unavailable]\n\n";
    format!("{header}{}", utf16_suffix(output, MAX_OUTPUT_UNITS - utf16_len(header)))
}

/// The old `BashOutput` result: status, exit code, what each stream printed
/// since the last read (only the lines `filter` matches, when given), and
/// the time.
pub fn legacy_text(
    task: &BackgroundTask,
    stdout: &str,
    stderr: &str,
    filter: Option<&regex::Regex>,
    timestamp: &str,
) -> String {
    let mut parts = vec![format!("<status>{}</status>", task.status())];
    if let Some(code) = task.exit_code() {
        parts.push(format!("<exit_code>{code}</exit_code>"));
    }
    for (tag, text) in [("stdout", stdout), ("stderr", stderr)] {
        let text = match filter {
            Some(re) => keep_matching(text, re),
            None => text.to_string(),
        };
        let text = text.trim_end();
        if !text.is_empty() {
            parts.push(format!("<{tag}>\n{}\n</{tag}>", cap_lines(text, LEGACY_MAX_CHARS)));
        }
    }
    parts.push(format!("<timestamp>{timestamp}</timestamp>"));
    parts.join("\n\n")
}

/// The lines of `text` that `re` matches.
fn keep_matching(text: &str, re: &regex::Regex) -> String {
    text.split('\n').filter(|line| re.is_match(line)).collect::<Vec<_>>().join("\n")
}

/// `text` cut at `max` characters, saying how many lines were left out.
fn cap_lines(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => {
            let left = text[cut..].matches('\n').count() + 1;
            format!("{}\n\n... [{left} lines truncated] ...", &text[..cut])
        }
    }
}

/// `secs` seconds and `millis` after the Unix epoch as ISO 8601 in UTC, to
/// the millisecond (`2025-12-01T04:48:27.908Z`).
pub fn iso_timestamp(secs: u64, millis: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rest = secs % 86_400;
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z", rest / 3600, rest / 60 % 60, rest % 60)
}

fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// The longest suffix of `s` at most `units` UTF-16 units long.
fn utf16_suffix(s: &str, units: usize) -> &str {
    let mut counted = 0;
    for (i, c) in s.char_indices().rev() {
        counted += c.len_utf16();
        if counted > units {
            return &s[i + c.len_utf8()..];
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_sdk::process::{BackgroundOutput, ExitStatus};

    fn task(output: &str, status: Option<ExitStatus>) -> BackgroundTask {
        let mut t = BackgroundTask::new("b1x2y3z4w", "make");
        t.absorb(&BackgroundOutput {
            stdout: output.as_bytes().to_vec(),
            stderr: Vec::new(),
            dropped: 0,
            status: None,
        });
        t.absorb(&BackgroundOutput { stdout: Vec::new(), stderr: Vec::new(), dropped: 0, status });
        t
    }

    #[test]
    fn a_finished_task() {
        let t = task("built\n\n", Some(ExitStatus::Exited(0)));
        assert_eq!(
            task_text(Retrieval::Success, &t, None),
            "<retrieval_status>success</retrieval_status>\n\n<task_id>b1x2y3z4w</task_id>\n\n\
             <task_type>local_bash</task_type>\n\n<status>completed</status>\n\n<exit_code>0</exit_code>\n\n\
             <output>\nbuilt\n</output>"
        );
        let failed = task("", Some(ExitStatus::Exited(3)));
        assert!(
            task_text(Retrieval::Success, &failed, None)
                .ends_with("<status>failed</status>\n\n<exit_code>3</exit_code>")
        );
    }

    #[test]
    fn a_running_task_has_no_exit_code_and_no_output_tag_when_silent() {
        let t = task("  \n", None);
        assert_eq!(
            task_text(Retrieval::NotReady, &t, None),
            "<retrieval_status>not_ready</retrieval_status>\n\n<task_id>b1x2y3z4w</task_id>\n\n\
             <task_type>local_bash</task_type>\n\n<status>running</status>"
        );
        let mut stopped = task("partial\n", None);
        stopped.stopped = true;
        assert!(
            task_text(Retrieval::Success, &stopped, None)
                .ends_with("<status>killed</status>\n\n<output>\npartial\n</output>")
        );
    }

    #[test]
    fn a_long_output_shows_its_end_under_a_header() {
        let t = task(&format!("{}{}", "a".repeat(20_000), "b".repeat(20_000)), Some(ExitStatus::Exited(0)));
        let text = task_text(Retrieval::Success, &t, None);
        let output = text.split("<output>\n").nth(1).unwrap().strip_suffix("\n</output>").unwrap();
        assert!(output.starts_with("[Truncated. Full output: unavailable]\n\naaa"));
        assert!(output.ends_with(&"b".repeat(20_000)));
        assert_eq!(utf16_len(output), MAX_OUTPUT_UNITS);
        // While it runs: its first 30,000 bytes, as they are.
        let running = task(&"c".repeat(40_000), None);
        let text = task_text(Retrieval::Timeout, &running, None);
        assert!(text.contains(&format!("<output>\n{}\n</output>", "c".repeat(30_000))));
    }

    #[test]
    fn the_old_bash_output_shape() {
        let t = task("", Some(ExitStatus::Exited(0)));
        let re = regex::Regex::new("^ok").unwrap();
        assert_eq!(
            legacy_text(&t, "ok 1\nskip\nok 2\n", "warn\n", Some(&re), "2025-12-01T04:48:27.908Z"),
            "<status>completed</status>\n\n<exit_code>0</exit_code>\n\n<stdout>\nok 1\nok 2\n</stdout>\n\n\
             <timestamp>2025-12-01T04:48:27.908Z</timestamp>"
        );
        let running = task("", None);
        assert_eq!(
            legacy_text(&running, "", "oops\n", None, "T"),
            "<status>running</status>\n\n<stderr>\noops\n</stderr>\n\n<timestamp>T</timestamp>"
        );
        assert_eq!(cap_lines("ab\ncd\nef", 4), "ab\nc\n\n... [2 lines truncated] ...");
    }

    #[test]
    fn timestamps() {
        assert_eq!(iso_timestamp(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_timestamp(1_764_564_507, 908), "2025-12-01T04:48:27.908Z");
        assert_eq!(iso_timestamp(951_782_400, 5), "2000-02-29T00:00:00.005Z");
    }
}
