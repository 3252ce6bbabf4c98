//! What WebFetch shows of a body: HTML as markdown, text as it is, binary
//! content only described.

use htmd::HtmlToMarkdown;
use htmd::options::{BulletListMarker, HrStyle, Options};
use markup5ever_rcdom::{Handle, Node, NodeData};
use std::cell::RefCell;
use std::rc::Rc;

/// How deep elements nest before what is deeper is shown as plain text. The
/// converter recurses once per level, and a page can nest as deep as it
/// likes (`<div>` a hundred thousand times): past the tool's stack that is a
/// trap, and the model would get nothing. Real pages nest a few dozen deep.
const MAX_DEPTH: usize = 200;

/// Elements dropped whole: code, styling and embedded objects, nothing a
/// reader of the page sees as text.
const SKIPPED_TAGS: &[&str] =
    &["script", "style", "noscript", "template", "iframe", "object", "embed", "svg", "canvas", "link", "meta"];

/// How a body is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Converted to markdown.
    Html,
    /// Shown as (lossy UTF-8) text.
    Text,
    /// Described, not shown.
    Binary,
}

/// The media type of a `content-type` value (`text/html` of
/// `text/html; charset=utf-8`), lower-cased, or `None` when there is none.
pub fn media_type(content_type: Option<&str>) -> Option<String> {
    let essence = content_type?.split(';').next()?.trim().to_ascii_lowercase();
    (!essence.is_empty()).then_some(essence)
}

/// Whether a media type is text WebFetch shows as it is.
fn is_textual(media: &str) -> bool {
    if media.starts_with("image/") {
        return false;
    }
    media.starts_with("text/")
        || media.ends_with("+json")
        || media.ends_with("+xml")
        || media.contains("javascript")
        || matches!(
            media,
            "application/json"
                | "application/xml"
                | "application/ecmascript"
                | "application/x-ndjson"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/sql"
                | "application/graphql"
        )
}

/// How to show a body of `content_type`; without one, a body starting with
/// `<` is taken for HTML and one that looks like text for text.
pub fn classify(content_type: Option<&str>, body: &[u8]) -> Kind {
    match media_type(content_type).as_deref() {
        Some("text/html" | "application/xhtml+xml") => Kind::Html,
        Some(media) if is_textual(media) => Kind::Text,
        Some(_) => Kind::Binary,
        None => sniff(body),
    }
}

fn sniff(body: &[u8]) -> Kind {
    let start = body.strip_prefix("\u{feff}".as_bytes()).unwrap_or(body);
    let start = &start[start.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(start.len())..];
    let head = &start[..start.len().min(8192)];
    if head.starts_with(b"<") {
        // An XML document that is not XHTML reads better as text.
        let xml_only = head.starts_with(b"<?xml") && !head.windows(5).any(|w| w.eq_ignore_ascii_case(b"<html"));
        return if xml_only { Kind::Text } else { Kind::Html };
    }
    let text = match std::str::from_utf8(head) {
        Ok(_) => true,
        // A sequence cut by the 8 KiB window is still text.
        Err(e) => e.error_len().is_none(),
    };
    if text && !head.contains(&0) { Kind::Text } else { Kind::Binary }
}

/// HTML as markdown, without scripts, styles and embedded objects.
pub fn html_to_markdown(html: &str) -> String {
    let options = Options {
        bullet_list_marker: BulletListMarker::Dash,
        ul_bullet_spacing: 1,
        ol_number_spacing: 1,
        hr_style: HrStyle::Dashes,
        ..Options::default()
    };
    let converter = HtmlToMarkdown::builder().options(options).skip_tags(SKIPPED_TAGS.to_vec()).build();
    // Parsing a `&str` does not fail; if it ever did, the page is still text.
    let Ok(tree) = converter.html_to_tree(html) else { return html.to_string() };
    flatten_below(&tree, MAX_DEPTH);
    converter.tree_to_markdown(&tree)
}

/// Replaces the children of every element `depth` levels down with one text
/// node of their text, without recursing (the tree may be deeper than any
/// stack).
fn flatten_below(root: &Handle, depth: usize) {
    let mut stack = vec![(Rc::clone(root), 0usize)];
    while let Some((node, level)) = stack.pop() {
        if level < depth {
            stack.extend(node.children.borrow().iter().map(|c| (Rc::clone(c), level + 1)));
            continue;
        }
        if node.children.borrow().is_empty() {
            continue;
        }
        let text = Node::new(NodeData::Text { contents: RefCell::new(text_of(&node).into()) });
        text.parent.set(Some(Rc::downgrade(&node)));
        // The old subtree is dropped without recursing (rcdom's `Drop`).
        let old = std::mem::replace(&mut *node.children.borrow_mut(), vec![text]);
        drop(old);
    }
}

/// The text under `node`, in document order, leaving out the elements
/// [`SKIPPED_TAGS`] drops.
fn text_of(node: &Handle) -> String {
    let mut text = String::new();
    let mut stack: Vec<Handle> = node.children.borrow().iter().rev().cloned().collect();
    while let Some(n) = stack.pop() {
        match &n.data {
            NodeData::Text { contents } => text.push_str(&contents.borrow()),
            NodeData::Element { name, .. } if SKIPPED_TAGS.contains(&&*name.local) => {}
            NodeData::Element { .. } => stack.extend(n.children.borrow().iter().rev().cloned()),
            _ => {}
        }
    }
    text
}

/// A compression the body is still in (WebFetch asks for none, but a
/// server may send one anyway), or `None` for an identity body.
fn compression(content_encoding: Option<&str>) -> Option<String> {
    let encoding = content_encoding?.trim().to_ascii_lowercase();
    (!encoding.is_empty() && encoding != "identity").then_some(encoding)
}

/// HTML as markdown, for a result of at most `max` characters: a large
/// page is converted a prefix at a time (the parser closes what the cut
/// leaves open), the next prefix sized by how much markdown the last one
/// gave, until the markdown passes `max` or the page ends; most of a 1 MB
/// page whose first 200 KB already give `max` characters is never parsed.
pub fn html_to_markdown_within(html: &[u8], max: usize) -> String {
    let mut prefix = max.saturating_mul(2).max(64 << 10);
    loop {
        if prefix >= html.len() {
            return html_to_markdown(&String::from_utf8_lossy(html));
        }
        let markdown = html_to_markdown(&String::from_utf8_lossy(&html[..prefix]));
        let chars = markdown.chars().count();
        if chars > max {
            return markdown;
        }
        // Enough for `max` at the rate seen so far, with a margin: at least
        // 64 KiB more, at most eight times as much.
        let wanted = (prefix as f64 * max as f64 / chars.max(1) as f64 * 1.25) as usize;
        prefix = wanted.clamp(prefix + (64 << 10), prefix.saturating_mul(8));
    }
}

/// What the model sees of a body (HTML converted only as far as `max`
/// characters of markdown need; see [`crate::page_part`] for the cut itself).
pub fn render(content_type: Option<&str>, content_encoding: Option<&str>, body: &[u8], max: usize) -> String {
    let media = media_type(content_type).unwrap_or_else(|| "unknown".into());
    if let Some(encoding) = compression(content_encoding) {
        return format!("binary content of type {media} ({encoding}-compressed), {} bytes, not shown", body.len());
    }
    match classify(content_type, body) {
        Kind::Html => html_to_markdown_within(body, max),
        Kind::Text => String::from_utf8_lossy(body).into_owned(),
        Kind::Binary => format!("binary content of type {media}, {} bytes, not shown", body.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page nested far deeper than any stack converts, on a test
    /// thread's stack, with its text kept.
    #[test]
    fn deeply_nested_pages_convert() {
        let depth = 20_000;
        let html = format!("{}deep text{}", "<div>".repeat(depth), "</div>".repeat(depth));
        let markdown = html_to_markdown(&html);
        assert_eq!(markdown.trim(), "deep text");
        // Unclosed elements of several kinds, a dropped script among the
        // text that is flattened.
        let html = format!("<p>top</p>{}<b>a</b><script>x()</script>b", "<span><em>".repeat(2_000));
        let markdown = html_to_markdown(&html);
        assert!(markdown.starts_with("top") && markdown.replace('*', "").trim_end().ends_with("ab"), "{markdown:?}");
        assert!(!markdown.contains("x()"), "{markdown:?}");
        // Shallow pages are untouched.
        assert_eq!(html_to_markdown("<div><p>a <b>b</b></p></div>").trim(), "a **b**");
    }

    #[test]
    fn media_types() {
        assert_eq!(media_type(Some("Text/HTML; charset=UTF-8")).as_deref(), Some("text/html"));
        assert_eq!(media_type(Some("  ")), None);
        assert_eq!(media_type(None), None);
    }

    #[test]
    fn classifies_content() {
        let c = |t: &str| classify(Some(t), b"whatever");
        assert_eq!(c("text/html; charset=utf-8"), Kind::Html);
        assert_eq!(c("application/xhtml+xml"), Kind::Html);
        for text in [
            "text/plain",
            "text/markdown",
            "text/css",
            "text/javascript",
            "application/json",
            "application/problem+json",
            "application/xml",
            "application/atom+xml",
            "application/javascript",
            "application/x-javascript",
        ] {
            assert_eq!(c(text), Kind::Text, "{text}");
        }
        for binary in ["image/png", "image/svg+xml", "application/pdf", "application/octet-stream", "video/mp4"] {
            assert_eq!(c(binary), Kind::Binary, "{binary}");
        }
    }

    #[test]
    fn sniffs_unknown_content() {
        assert_eq!(classify(None, b"  \n<!doctype html><p>x"), Kind::Html);
        assert_eq!(classify(Some(""), "\u{feff}<html>".as_bytes()), Kind::Html);
        assert_eq!(classify(None, b"<?xml version=\"1.0\"?><feed/>"), Kind::Text);
        assert_eq!(classify(None, b"<?xml version=\"1.0\"?><!DOCTYPE html><HTML>"), Kind::Html);
        assert_eq!(classify(None, "plain text, ünïcode".as_bytes()), Kind::Text);
        assert_eq!(classify(None, b"\x89PNG\r\n\x1a\n\0\0"), Kind::Binary);
        assert_eq!(classify(None, b"\xff\xfe\xfd bytes"), Kind::Binary);
    }

    #[test]
    fn converts_html_to_markdown() {
        let html = r#"<!doctype html><html><head><title>Page</title><meta charset="utf-8">
            <style>body { color: red }</style><script>var secret = 1;</script></head>
            <body><noscript>enable js</noscript><h1>Heading</h1>
            <p>A <a href="https://example.com/x">link</a> and <em>emphasis</em>.</p>
            <ul><li>one</li><li>two</li></ul><pre><code>let x = 1;</code></pre>
            <template><p>hidden</p></template><iframe src="https://ads.example"></iframe></body></html>"#;
        let md = html_to_markdown(html);
        assert!(md.contains("# Heading"), "{md}");
        assert!(md.contains("[link](https://example.com/x)"), "{md}");
        assert!(md.contains("_emphasis_") || md.contains("*emphasis*"), "{md}");
        assert!(md.contains("- one\n- two"), "{md}");
        assert!(md.contains("```\nlet x = 1;\n```"), "{md}");
        for gone in ["color: red", "secret", "enable js", "hidden", "ads.example"] {
            assert!(!md.contains(gone), "{gone} in {md}");
        }
    }

    #[test]
    fn renders_by_kind() {
        assert_eq!(render(Some("text/html"), None, b"<p>Hi <b>there</b></p>", 1000), "Hi **there**");
        assert_eq!(render(Some("application/json"), None, br#"{"a": 1}"#, 1000), r#"{"a": 1}"#);
        assert_eq!(render(Some("text/plain"), None, b"bad \xff byte", 1000), "bad \u{fffd} byte");
        assert_eq!(
            render(Some("application/pdf"), None, b"%PDF-1.7 ...", 1000),
            "binary content of type application/pdf, 12 bytes, not shown"
        );
        assert_eq!(render(None, None, b"\0\x01\x02", 1000), "binary content of type unknown, 3 bytes, not shown");
        assert_eq!(
            render(Some("text/html"), Some("gzip"), b"\x1f\x8b\x08", 1000),
            "binary content of type text/html (gzip-compressed), 3 bytes, not shown"
        );
        assert_eq!(render(Some("text/plain"), Some("identity"), b"ok", 1000), "ok");
    }

    #[test]
    fn large_pages_are_converted_only_as_far_as_needed() {
        let mut html = String::from("<html><body>");
        for i in 0..20_000 {
            html.push_str(&format!("<p>paragraph {i} with <b>bold</b> words</p>"));
        }
        html.push_str("</body></html>");
        let whole = html_to_markdown(&html);
        let within = html_to_markdown_within(html.as_bytes(), 1000);
        assert!(within.chars().count() > 1000 && within.len() < whole.len(), "{}", within.len());
        let start: String = within.chars().take(1000).collect();
        assert!(whole.starts_with(&start), "the prefix converts as the whole does");
        assert_eq!(html_to_markdown_within(html.as_bytes(), usize::MAX / 8), whole);
    }
}
