//! After a command that rewrites files in place (a formatter, a fixer,
//! `sed -i`), 2.1.328's Bash names the files the model read earlier that
//! changed while it ran, so the model reads them again before editing
//! (Edit would refuse them otherwise).

use regex::bytes::{Regex, RegexBuilder};
use std::path::Path;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};
use toolhost_sdk::Context;
use toolhost_sdk::fs;

/// The commands that may rewrite files they are given (2.1.328's list).
const MARKERS: &[&str] = &[
    "--write",
    "--fix",
    "--in-place",
    "--auto-correct",
    r"\bg?sed\b.*\s-[a-zA-Z]*i",
    r"\brun\s+format\b",
    r"\brun\s+fix\b",
    r"\b(yarn|pnpm)\s+format\b",
    r"\blint:file\b",
    r"\blint:fix\b",
    r"\bblack\b",
    r"\bisort\b",
    r"\bruff\s+format\b",
    r"\bcargo\s+(fmt|fix)\b",
    r"\brustfmt\b",
    r"\bgo\s+fmt\b",
    r"\bterraform\s+fmt\b",
    r"\bdprint\s+fmt\b",
    r"\bswiftformat\b",
    r"\bphpcbf\b",
];

/// Whether `command` looks like one that rewrites files (JavaScript's
/// reading of the patterns: ASCII word boundaries and white space, `.` not
/// crossing a line).
pub fn rewrites_files(command: &str) -> bool {
    static MARKER: OnceLock<Regex> = OnceLock::new();
    MARKER
        .get_or_init(|| RegexBuilder::new(&MARKERS.join("|")).unicode(false).build().expect("the markers compile"))
        .is_match(command.as_bytes())
}

/// Milliseconds since the epoch, as Claude Code compares modification times.
pub fn now_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis())
}

/// The note for a command that rewrites files, started at `started_ms`:
/// the files read (or written) earlier in the session whose modification
/// time is now later than both the start and the time recorded for them.
pub fn note(ctx: &Context, command: &str, started_ms: u128) -> Option<String> {
    if !rewrites_files(command) {
        return None;
    }
    let changed: Vec<String> = ctx
        .session()
        .keys("read:")
        .iter()
        .filter_map(|key| {
            let path = Path::new(key.strip_prefix("read:")?);
            let record = fs::read_record(ctx, path)?;
            let now = fs::mtime_ns(&std::fs::metadata(path).ok()?) / 1_000_000;
            (now > started_ms && now > record.mtime_ms()).then(|| shown(ctx.cwd(), path))
        })
        .collect();
    if changed.is_empty() {
        return None;
    }
    let more = if changed.len() > 5 { format!(" and {} more", changed.len() - 5) } else { String::new() };
    Some(format!(
        "[This command modified {} {} you've previously read: {}{more}. Call Read before editing.]",
        changed.len(),
        if changed.len() == 1 { "file" } else { "files" },
        changed[..changed.len().min(5)].join(", ")
    ))
}

/// `path` relative to `cwd` as Node's `path.relative` gives it (`..` where
/// it lies outside), or whole when that is empty.
fn shown(cwd: &str, path: &Path) -> String {
    let from: Vec<&str> = cwd.split('/').filter(|p| !p.is_empty()).collect();
    let text = path.to_string_lossy();
    let to: Vec<&str> = text.split('/').filter(|p| !p.is_empty()).collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts = vec![".."; from.len() - common];
    parts.extend(&to[common..]);
    let relative = parts.join("/");
    if relative.is_empty() { text.into_owned() } else { relative }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatters_and_in_place_edits_are_recognised() {
        for yes in [
            "npx prettier --write src",
            "eslint --fix .",
            "sed -i 's/a/b/' f.txt",
            "gsed -Ei 's/a/b/' f.txt",
            "npm run format",
            "black .",
            "ruff format x.py",
            "cargo fmt --all",
            "cd x && go fmt ./...",
        ] {
            assert!(rewrites_files(yes), "{yes}");
        }
        for no in ["sed 's/a/b/' f.txt", "ls", "blackbox run", "cargo build", "echo format", "sed -n 1p x"] {
            assert!(!rewrites_files(no), "{no}");
        }
    }

    #[test]
    fn paths_are_relative_as_node_makes_them() {
        assert_eq!(shown("/w", Path::new("/w/src/a.rs")), "src/a.rs");
        assert_eq!(shown("/w/sub", Path::new("/w/a.rs")), "../a.rs");
        assert_eq!(shown("/w", Path::new("/w")), "/w");
    }
}
