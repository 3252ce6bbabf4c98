//! Parsers inside the built-in tools that read what a file or a server
//! holds: NotebookEdit's JSON reader and writer, Read's notebooks and PDFs,
//! WebFetch's HTML to markdown. In the host they run inside their tools'
//! wasm sandboxes; here natively, for speed and for the sanitizers.

use toolhost_plugin_notebook_edit::json;
use toolhost_plugin_read::{notebook, pdf};
use toolhost_plugin_webfetch::content;

/// NotebookEdit's JSON: what its reader accepts, its writer prints as a
/// fixed point (printed, read and printed again gives the same text) that
/// serde_json reads, as the same value serde_json reads in the original;
/// what serde_json reads (under the reader's nesting cap) the reader reads
/// too.
pub fn notebook_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let ours = json::parse(text);
    if let Some(value) = &ours {
        let printed = json::stringify(value, 1);
        let again = json::parse(&printed).unwrap_or_else(|| panic!("the writer's {printed:?} does not read back"));
        assert_eq!(json::stringify(&again, 1), printed, "writing {text:?} is not a fixed point");
        // serde_json refuses lone surrogates, which JavaScript keeps: then
        // it refuses the original too.
        match (serde_json::from_str::<serde_json::Value>(&printed), serde_json::from_str::<serde_json::Value>(text)) {
            (Ok(theirs), Ok(original)) => {
                assert!(same(&theirs, &original), "{text:?} was written as {printed:?}, another value for serde_json")
            }
            (Err(e), Ok(_)) => {
                panic!("serde_json reads {text:?} but refuses what the writer made of it, {printed:?}: {e}")
            }
            (_, Err(_)) => {}
        }
    }
    if ours.is_none()
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(text)
        && depth(&v) < 128
    {
        panic!("the reader refuses {text:?}, which serde_json reads");
    }
}

/// Values equal, numbers by their value (JavaScript has one number type).
fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn depth(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        serde_json::Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// A notebook file as Read renders it: never a panic; images only PNG or
/// JPEG.
pub fn read_notebook(data: &[u8]) {
    if let Ok(cells) = notebook::parse(data) {
        let _ = notebook::cells_json(&cells);
        for c in notebook::to_content(&cells) {
            if let toolhost_sdk::Content::Image { media_type, .. } = c {
                assert!(matches!(media_type.as_str(), "image/png" | "image/jpeg"), "an image of type {media_type}");
            }
        }
    }
}

/// A PDF and a `pages` value (the first line of the input) as Read takes
/// them: never a panic; pages taken out of a PDF make a PDF of that many
/// pages.
pub fn read_pdf(data: &[u8]) {
    let (pages, bytes) = match data.iter().position(|&b| b == b'\n') {
        Some(at) => (String::from_utf8_lossy(&data[..at]).into_owned(), &data[at + 1..]),
        None => ("1".to_string(), data),
    };
    let _ = pdf::page_count(bytes);
    if let Some(range) = pdf::parse_page_range(&pages)
        && let Ok((out, n)) = pdf::extract_pages(bytes, range)
    {
        assert_eq!(pdf::tree_pages(&out), Some(n), "extracting {pages:?} gave a PDF of another page count");
    }
}

/// A page as WebFetch converts it: never a panic, a stack overflow or an
/// endless loop (elements nest as deep as the input likes; the converter
/// flattens what is deeper than it recurses); the part shown keeps at most
/// `MAX_CONTENT_CHARS` characters and its note.
pub fn webfetch_html(data: &[u8]) {
    let markdown = content::html_to_markdown_within(data, 2_000);
    let cut = toolhost_plugin_webfetch::page_part(&markdown, 0).unwrap_or_default();
    let max = toolhost_plugin_webfetch::MAX_CONTENT_CHARS;
    assert!(cut.chars().count() <= max + 200, "a cut of {} characters", cut.chars().count());
}

/// A Script program as the Script tool prepares it (its last expression
/// turned into a `return`): never a panic; code that parses as an async
/// function body still parses after, with as many statements, and code
/// that does not is left as it is (the engine reports why).
pub fn script_code(data: &[u8]) {
    use toolhost_plugin_script::engine::{parse_body, with_last_expression_returned};
    let Ok(code) = std::str::from_utf8(data) else { return };
    if code.len() > 4096 {
        return;
    }
    let rewritten = with_last_expression_returned(code).expect("the rewrite never fails");
    match parse_body(code) {
        None => assert_eq!(rewritten, code, "code that does not parse was changed"),
        Some(before) => {
            let after = parse_body(&rewritten).unwrap_or_else(|| panic!("the rewrite does not parse: {rewritten:?}"));
            assert_eq!(before.statements().len(), after.statements().len(), "{code:?} became {rewritten:?}");
        }
    }
}
