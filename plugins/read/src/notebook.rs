//! Jupyter notebooks: every cell with its outputs, as Claude Code 2.1.88
//! shows them (utils/notebook.ts): one text block per cell,
//! `<cell id="ID">` around the source (with `<cell_type>` for cells that are
//! not code and `<language>` for code in a language other than Python),
//! each output's text after a newline, images in outputs as image blocks, and
//! adjacent text blocks merged with a newline between them.

use crate::text::{TokenCap, utf16_len};
use serde::Serialize;
use toolhost_sdk::Content;
use toolhost_sdk::serde_json::{self, Value};

/// Outputs of one cell longer than this (UTF-16 units of their text and
/// image data) are left out, with a note saying how to get them.
const LARGE_OUTPUT_THRESHOLD: u64 = 10_000;
/// Output text longer than this is cut (Bash's default output limit).
const MAX_OUTPUT_TEXT: usize = 30_000;

/// One cell as Claude Code keeps it; serialized, it is what the size and
/// token caps measure (field names and order as there, absent fields left out).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    #[serde(rename = "cellType")]
    pub cell_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_count: Option<Value>,
    pub cell_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Vec<CellOutput>>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellOutput {
    pub output_type: String,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<OutputImage>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutputImage {
    /// Base64, whitespace removed.
    pub image_data: String,
    pub media_type: &'static str,
}

/// The cells of the notebook in `bytes`, or why it cannot be read as one.
pub fn parse(bytes: &[u8]) -> Result<Vec<Cell>, String> {
    let notebook: Value = serde_json::from_slice(bytes).map_err(|e| format!("The notebook is not valid JSON: {e}"))?;
    let Some(cells) = notebook.get("cells").and_then(Value::as_array) else {
        return Err("The file is not a Jupyter notebook: it has no `cells` array.".into());
    };
    let language = notebook.pointer("/metadata/language_info/name").and_then(Value::as_str).unwrap_or("python");
    Ok(cells.iter().enumerate().map(|(index, cell)| process_cell(cell, index, language)).collect())
}

fn process_cell(cell: &Value, index: usize, language: &str) -> Cell {
    let cell_type = cell.get("cell_type").and_then(Value::as_str).unwrap_or_default().to_string();
    let is_code = cell_type == "code";
    let execution_count = cell.get("execution_count").filter(|c| is_code && truthy(c)).cloned();
    let cell_id = match cell.get("id").and_then(Value::as_str) {
        Some(id) => id.to_string(),
        None => format!("cell-{index}"),
    };
    let outputs = cell.get("outputs").and_then(Value::as_array).filter(|o| is_code && !o.is_empty()).map(|outputs| {
        let processed: Vec<CellOutput> = outputs.iter().filter_map(process_output).collect();
        if is_large(&processed) {
            vec![CellOutput {
                output_type: "stream".into(),
                text: format!(
                    "Outputs are too large to include. Use Bash with: cat <notebook_path> | jq '.cells[{index}].outputs'"
                ),
                image: None,
            }]
        } else {
            processed
        }
    });
    Cell {
        cell_type,
        source: cell.get("source").and_then(joined),
        execution_count,
        cell_id,
        language: is_code.then(|| language.to_string()),
        outputs,
    }
}

/// A truthy JSON value, as JavaScript's `||` sees it.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// A notebook text field: a string, or a list of strings joined.
fn joined(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(parts.iter().map(|p| p.as_str().unwrap_or_default()).collect()),
        _ => None,
    }
}

fn process_output(output: &Value) -> Option<CellOutput> {
    let output_type = output.get("output_type").and_then(Value::as_str)?;
    let (text, image) = match output_type {
        "stream" => (output.get("text").and_then(joined), None),
        "execute_result" | "display_data" => {
            let data = output.get("data");
            (data.and_then(|d| d.get("text/plain")).and_then(joined), data.and_then(extract_image))
        }
        "error" => {
            let field = |name: &str| match output.get(name) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => "undefined".into(),
                Some(other) => other.to_string(),
            };
            let traceback: Vec<&str> = output
                .get("traceback")
                .and_then(Value::as_array)
                .map(|t| t.iter().map(|l| l.as_str().unwrap_or_default()).collect())
                .unwrap_or_default();
            (Some(format!("{}: {}\n{}", field("ename"), field("evalue"), traceback.join("\n"))), None)
        }
        _ => return None,
    };
    Some(CellOutput { output_type: output_type.into(), text: cut_output(&text.unwrap_or_default()), image })
}

fn extract_image(data: &Value) -> Option<OutputImage> {
    for media_type in ["image/png", "image/jpeg"] {
        if let Some(Value::String(b64)) = data.get(media_type) {
            return Some(OutputImage { image_data: b64.chars().filter(|c| !c.is_whitespace()).collect(), media_type });
        }
    }
    None
}

/// Output text cut as Bash cuts its output: the first 30,000 UTF-16 units,
/// then how many lines were left out. Image data URIs are kept whole.
fn cut_output(text: &str) -> String {
    let is_data_uri = text.get(..11).is_some_and(|p| p.eq_ignore_ascii_case("data:image/"))
        && text[11..].find(";base64,").is_some_and(|i| {
            i > 0 && text[11..11 + i].bytes().all(|b| b.is_ascii_alphanumeric() || b".+_-".contains(&b))
        });
    if is_data_uri || utf16_len(text) <= MAX_OUTPUT_TEXT as u64 {
        return text.to_string();
    }
    // The byte offset of the 30,000th code unit (a pair straddling it is cut
    // before, where JavaScript would keep half of it).
    let mut units = 0;
    let mut cut = text.len();
    for (i, c) in text.char_indices() {
        if units + c.len_utf16() > MAX_OUTPUT_TEXT {
            cut = i;
            break;
        }
        units += c.len_utf16();
    }
    let left_out = memchr::memchr_iter(b'\n', &text.as_bytes()[cut..]).count() + 1;
    format!("{}\n\n... [{left_out} lines truncated] ...", &text[..cut])
}

fn is_large(outputs: &[CellOutput]) -> bool {
    let mut size = 0;
    for o in outputs {
        size += utf16_len(&o.text) + o.image.as_ref().map_or(0, |i| i.image_data.len() as u64);
        if size > LARGE_OUTPUT_THRESHOLD {
            return true;
        }
    }
    false
}

/// The cells as JSON, as the caps measure them.
pub fn cells_json(cells: &[Cell]) -> String {
    serde_json::to_string(cells).unwrap_or_default()
}

/// What the model sees: the cells and their outputs as content blocks.
pub fn to_content(cells: &[Cell]) -> Vec<Content> {
    use base64::Engine as _;
    let mut blocks: Vec<Content> = Vec::new();
    let push_text = |blocks: &mut Vec<Content>, text: String| match blocks.last_mut() {
        Some(Content::Text(prev)) => {
            prev.push('\n');
            prev.push_str(&text);
        }
        _ => blocks.push(Content::Text(text)),
    };
    for cell in cells {
        let mut meta = String::new();
        if cell.cell_type != "code" {
            meta = format!("<cell_type>{}</cell_type>", cell.cell_type);
        } else if let Some(language) = cell.language.as_deref().filter(|l| *l != "python") {
            meta = format!("<language>{language}</language>");
        }
        let source = cell.source.as_deref().unwrap_or("undefined");
        push_text(&mut blocks, format!("<cell id=\"{id}\">{meta}{source}</cell id=\"{id}\">", id = cell.cell_id));
        for output in cell.outputs.iter().flatten() {
            if !output.text.is_empty() {
                push_text(&mut blocks, format!("\n{}", output.text));
            }
            if let Some(image) = &output.image {
                // The data goes to the model as given; data that is not
                // base64 could not be sent as an image at all.
                if let Ok(data) = base64::engine::general_purpose::STANDARD.decode(&image.image_data) {
                    blocks.push(Content::Image { media_type: image.media_type.into(), data });
                }
            }
        }
    }
    blocks
}

/// Whether the cells' JSON is over the token cap, and its estimate.
pub fn token_estimate(json: &str) -> (bool, u64) {
    let cap = TokenCap::for_extension("ipynb");
    let units = utf16_len(json);
    (cap.exceeded_by(units), cap.estimate(units))
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_sdk::serde_json::json;

    fn texts(blocks: &[Content]) -> Vec<String> {
        blocks
            .iter()
            .map(|b| match b {
                Content::Text(t) => t.clone(),
                Content::Image { media_type, data } => format!("[{media_type} {} bytes]", data.len()),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    fn notebook() -> Value {
        json!({
            "metadata": {"language_info": {"name": "python"}},
            "nbformat": 4,
            "cells": [
                {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Title\n", "Some text"]},
                {"cell_type": "code", "id": "c1", "execution_count": 3, "metadata": {}, "source": "print('hi')\n1 + 1",
                 "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": ["hi\n"]},
                    {"output_type": "execute_result", "execution_count": 3, "data": {"text/plain": ["2"]}, "metadata": {}}
                 ]},
                {"cell_type": "code", "execution_count": null, "metadata": {}, "source": [], "outputs": []},
                {"cell_type": "code", "id": "img", "execution_count": 4, "metadata": {}, "source": "plot()",
                 "outputs": [
                    {"output_type": "display_data", "data": {"image/png": "iVBO\nRw0K", "text/plain": ["<Figure>"]}, "metadata": {}},
                    {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": ["line 1", "line 2"]}
                 ]}
            ]
        })
    }

    #[test]
    fn cells_outputs_and_merged_text_blocks() {
        let cells = parse(notebook().to_string().as_bytes()).unwrap();
        let blocks = to_content(&cells);
        assert_eq!(
            texts(&blocks),
            [
                "<cell id=\"intro\"><cell_type>markdown</cell_type># Title\nSome text</cell id=\"intro\">\n\
                 <cell id=\"c1\">print('hi')\n1 + 1</cell id=\"c1\">\n\nhi\n\n\n2\n\
                 <cell id=\"cell-2\"></cell id=\"cell-2\">\n\
                 <cell id=\"img\">plot()</cell id=\"img\">\n\n<Figure>",
                "[image/png 6 bytes]",
                "\nValueError: bad\nline 1\nline 2",
            ]
        );
    }

    #[test]
    fn json_as_the_caps_measure_it() {
        let cells = parse(notebook().to_string().as_bytes()).unwrap();
        let json = cells_json(&cells[1..3]);
        assert_eq!(
            json,
            r#"[{"cellType":"code","source":"print('hi')\n1 + 1","execution_count":3,"cell_id":"c1","language":"python","outputs":[{"output_type":"stream","text":"hi\n"},{"output_type":"execute_result","text":"2"}]},{"cellType":"code","source":"","cell_id":"cell-2","language":"python"}]"#
        );
        assert_eq!(token_estimate("x".repeat(100_002).as_str()), (true, 25_001));
    }

    #[test]
    fn other_languages_and_large_outputs() {
        let nb = json!({
            "metadata": {"language_info": {"name": "julia"}},
            "cells": [{"cell_type": "code", "source": "x", "outputs": [
                {"output_type": "stream", "text": "y".repeat(10_001)}
            ]}]
        });
        let cells = parse(nb.to_string().as_bytes()).unwrap();
        assert_eq!(
            texts(&to_content(&cells)),
            ["<cell id=\"cell-0\"><language>julia</language>x</cell id=\"cell-0\">\n\nOutputs are too large to \
              include. Use Bash with: cat <notebook_path> | jq '.cells[0].outputs'"]
        );
        assert!(parse(b"{\"cells\": 1}").unwrap_err().contains("not a Jupyter notebook"));
        assert!(parse(b"nope").is_err());
    }

    #[test]
    fn long_output_text_is_cut_like_bash_output() {
        let text = format!("{}\n{}\nend", "a".repeat(29_999), "b".repeat(10));
        assert_eq!(cut_output(&text), format!("{}\n\n\n... [2 lines truncated] ...", "a".repeat(29_999)));
        assert_eq!(cut_output("short"), "short");
        let uri = format!("data:image/png;base64,{}", "A".repeat(40_000));
        assert_eq!(cut_output(&uri), uri);
    }
}
