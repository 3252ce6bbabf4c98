//! The partial view of a whole-file read over the token cap (Claude Code
//! 2.1.328): instead of refusing the read, Read gives the first lines that
//! fit, or for a file of very long lines its first characters, and a banner
//! saying how to page on. The cut is 2.1.328's: from the text's characters
//! per token, a first guess at 85 % of the cap, shrunk by 30 % up to six
//! times; when no whole line fits (or only blank ones), characters instead.

use crate::text::utf16_len;

/// A partial view: what to show and how to tell the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartialView {
    /// The text shown, from the file's first line (lines joined with `\n`).
    pub text: String,
    /// How many lines `text` spans (recorded as the read's `limit`).
    pub lines: u64,
    /// The banner that goes with it (unescaped).
    pub banner: String,
}

/// How 2.1.328 opens its banner.
const BANNER_HEAD: &str = "[Truncated: PARTIAL view — ";

/// The partial view of `content` (the whole file's text: line endings
/// normalized to `\n`, no byte-order mark) whose estimate is `tokens`, over
/// `cap`. `path` is the file's absolute path, `hint` what the banner adds
/// about `allow_large`.
pub fn partial_view(content: &str, tokens: u64, cap: u64, path: &str, hint: &str) -> PartialView {
    let total_units = utf16_len(content) as f64;
    let units_per_token = (total_units / tokens.max(1) as f64).max(0.5);
    let estimate = |s: &str| utf16_len(s) as f64 / units_per_token;
    let cap_f = cap as f64;

    let lines: Vec<&str> = content.split('\n').collect();
    let total_lines = lines.len();
    // The same order of operations as 2.1.328, so the floors agree.
    let guess = (total_lines as f64 * cap_f / tokens.max(1) as f64 * 0.85).floor() as usize;
    let mut n = guess.min(total_lines).max(1);
    let mut shown = lines[..n].join("\n");
    for _ in 0..6 {
        if estimate(&shown) <= cap_f || n <= 1 {
            break;
        }
        n = ((n as f64 * 0.7).floor() as usize).max(1);
        shown = lines[..n].join("\n");
    }

    let by_characters = estimate(&shown) > cap_f || shown.trim_matches(toolhost_sdk::fs::is_js_whitespace).is_empty();
    if by_characters {
        let mut units = ((cap_f * units_per_token * 0.85).floor() as u64).max(1);
        for _ in 0..6 {
            shown = prefix_units(content, units).to_string();
            if estimate(&shown) <= cap_f {
                break;
            }
            units = ((units as f64 * 0.7).floor() as u64).max(1);
        }
    }
    let shown_lines = if by_characters { shown.matches('\n').count() + 1 } else { n };
    let banner = if !by_characters && shown_lines < total_lines {
        format!(
            "{BANNER_HEAD}{path}: showing lines 1-{shown_lines} of {total_lines} total ({tokens} tokens, cap {cap}). \
             Call Read with offset={} limit={shown_lines} for the next page, or Grep to find a specific section.\
             {hint} Do NOT answer from this page alone if the answer may be further in the file.]",
            shown_lines + 1
        )
    } else {
        format!(
            "{BANNER_HEAD}{path}: showing the first {} of {} characters ({tokens} tokens, cap {cap}); this file has \
             very long lines and cannot be paginated by line. Use Grep to find a specific section, or Read with \
             offset/limit to page through it.{hint} Do NOT answer from this excerpt alone if the answer may be \
             elsewhere in the file.]",
            utf16_len(&shown),
            total_units as u64
        )
    };
    PartialView { text: shown, lines: shown_lines as u64, banner }
}

/// The longest start of `s` of at most `units` UTF-16 code units. A
/// character cut in half (a surrogate pair) is left out, as 2.1.328 drops a
/// trailing high surrogate.
fn prefix_units(s: &str, units: u64) -> &str {
    let mut used = 0u64;
    for (at, c) in s.char_indices() {
        used += c.len_utf16() as u64;
        if used > units {
            return &s[..at];
        }
    }
    s
}

/// The banner as a system reminder after the result's text, with `&`, `<`
/// and `>` escaped as 2.1.328 escapes its notice.
pub fn reminder(banner: &str) -> String {
    let escaped = banner.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    format!("\n\n<system-reminder>\n{escaped}\n</system-reminder>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_that_fit_with_the_line_banner() {
        // 2,000 lines of 100 characters: 201,999 units, 50,500 tokens at 4 a token.
        let content: String = (0..2000).map(|_| "x".repeat(100)).collect::<Vec<_>>().join("\n");
        let view = partial_view(&content, 50_500, 25_000, "/w/big.txt", "");
        // floor(2000 × 25000 / 50500 × 0.85) = 841 lines, under the cap.
        assert_eq!(view.lines, 841);
        assert_eq!(view.text.lines().count(), 841);
        assert_eq!(
            view.banner,
            "[Truncated: PARTIAL view — /w/big.txt: showing lines 1-841 of 2000 total (50500 tokens, cap 25000). \
             Call Read with offset=842 limit=841 for the next page, or Grep to find a specific section. Do NOT \
             answer from this page alone if the answer may be further in the file.]"
        );
    }

    #[test]
    fn one_long_line_is_cut_by_characters() {
        let content = "y".repeat(120_000);
        let view = partial_view(&content, 30_000, 25_000, "/w/min.js", " HINT.");
        // 4 units a token: floor(25000 × 4 × 0.85) = 85,000 characters.
        assert_eq!(view.text.len(), 85_000);
        assert_eq!(view.lines, 1);
        assert_eq!(
            view.banner,
            "[Truncated: PARTIAL view — /w/min.js: showing the first 85000 of 120000 characters (30000 tokens, cap \
             25000); this file has very long lines and cannot be paginated by line. Use Grep to find a specific \
             section, or Read with offset/limit to page through it. HINT. Do NOT answer from this excerpt alone if \
             the answer may be elsewhere in the file.]"
        );
    }

    #[test]
    fn a_pair_is_never_cut_in_half() {
        assert_eq!(prefix_units("a😀b", 2), "a");
        assert_eq!(prefix_units("a😀b", 3), "a😀");
        assert_eq!(reminder("<a & b>"), "\n\n<system-reminder>\n&lt;a &amp; b&gt;\n</system-reminder>");
    }
}
