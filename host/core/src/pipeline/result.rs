//! Tool results as the model receives them (step 8 of the pipeline); an
//! oversized one is persisted by [`super::persisted`].

use crate::sandbox::Usage;
use base64::Engine as _;
use serde_json::{Value, json};

/// Characters of an oversized result shown in its preview.
pub(crate) const PREVIEW_CHARS: usize = 2000;

/// Media types an image block may have.
pub(crate) const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/// Media types a document block may have.
const DOCUMENT_TYPES: [&str; 1] = ["application/pdf"];

/// One block of a result.
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    /// Text for the model.
    Text(String),
    /// An image, its data base64-encoded.
    Image {
        /// The MIME type (`image/png`, …).
        media_type: String,
        /// The bytes, base64-encoded.
        data: String,
    },
    /// A document (a PDF), its data base64-encoded.
    Document {
        /// The MIME type (`application/pdf`).
        media_type: String,
        /// The bytes, base64-encoded.
        data: String,
    },
}

/// A `tool_result`: what goes back to the model for one `tool_use`.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    /// The id of the `tool_use` block this answers.
    pub tool_use_id: String,
    /// What the model reads.
    pub content: Vec<Content>,
    /// Whether the call failed (the content says why).
    pub is_error: bool,
    /// Machine-readable output, when the tool gives one (not sent to the model).
    pub structured: Option<Value>,
    /// A hook answered `continue: false`: the agent should stop, for this
    /// reason (not sent to the model).
    pub stop: Option<String>,
    /// What the call used (not sent to the model).
    pub usage: Option<Usage>,
}

impl ToolResult {
    /// Replaces every value of `secrets` in its text and structured output
    /// by `[secret NAME]`.
    pub(crate) fn mask(&mut self, secrets: &[(String, String)]) {
        for content in &mut self.content {
            if let Content::Text(text) = content {
                *text = crate::secrets::mask(text, secrets);
            }
        }
        if let Some(structured) = &mut self.structured {
            crate::secrets::mask_json(structured, secrets);
        }
    }

    /// Appends `note` to a successful result whose blocks are all text, after
    /// a blank line, to its first block (Claude Code appends a repair's note
    /// to a successful result that is one string).
    pub(crate) fn append_note(&mut self, note: &str) {
        if self.is_error || !self.content.iter().all(|c| matches!(c, Content::Text(_))) {
            return;
        }
        match self.content.first_mut() {
            Some(Content::Text(text)) => text.push_str(&format!("\n\n{note}")),
            _ => self.content.push(Content::Text(format!("\n\n{note}"))),
        }
    }

    /// An error result with `message` as its only block.
    pub fn error(tool_use_id: &str, message: impl Into<String>) -> ToolResult {
        ToolResult {
            tool_use_id: tool_use_id.to_string(),
            content: vec![Content::Text(message.into())],
            is_error: true,
            structured: None,
            stop: None,
            usage: None,
        }
    }

    /// Bytes of the content: text, and image and document data.
    pub fn content_bytes(&self) -> u64 {
        self.content
            .iter()
            .map(|c| match c {
                Content::Text(t) => t.len(),
                Content::Image { data, .. } | Content::Document { data, .. } => data.len(),
            })
            .sum::<usize>() as u64
    }

    /// The text of all text blocks, joined by newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|c| match c {
                Content::Text(t) => Some(t.as_str()),
                Content::Image { .. } | Content::Document { .. } => None,
            })
            .collect();
        texts.join("\n")
    }

    /// The Messages API shape: `{"type": "tool_result", "tool_use_id", "content": [...], "is_error"}`
    /// without the `type` (callers add it where their protocol wants it).
    pub fn to_json(&self) -> Value {
        let content: Vec<Value> = self
            .content
            .iter()
            .map(|c| match c {
                Content::Text(text) => json!({"type": "text", "text": text}),
                Content::Image { media_type, data } => {
                    json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
                }
                Content::Document { media_type, data } => {
                    json!({"type": "document", "source": {"type": "base64", "media_type": media_type, "data": data}})
                }
            })
            .collect();
        let mut out = json!({"tool_use_id": self.tool_use_id, "content": content, "is_error": self.is_error});
        if let Some(reason) = &self.stop {
            out["stop_reason"] = json!(reason);
        }
        if let Some(usage) = &self.usage {
            out["usage"] = usage.to_json();
        }
        out
    }
}

/// Text a tool streamed into its result (the `output` import).
#[derive(Default)]
pub(crate) struct Streamed {
    pub text: String,
    /// The host's cap was reached and the rest dropped.
    pub cut: bool,
}

/// Maps a tool's output to a result: the streamed text begins the first text
/// block. An output that breaks the contract (a `json` block that is not JSON,
/// an unknown image type, structured output that is not JSON or not valid
/// against the output schema) is an error result.
pub(crate) fn from_output(
    tool: &str,
    tool_use_id: &str,
    streamed: Streamed,
    output: crate::contract::bindings::ToolOutput,
    output_schema: Option<&crate::registry::Schema>,
) -> ToolResult {
    use crate::contract::bindings::ContentBlock;
    let malformed = |why: String| {
        ToolResult::error(tool_use_id, format!("{tool} returned malformed output: {why}. This is a bug in the tool."))
    };
    let mut content = Vec::with_capacity(output.content.len());
    for block in output.content {
        match block {
            ContentBlock::Text(t) => content.push(Content::Text(t)),
            ContentBlock::Json(j) => match serde_json::from_str::<Value>(&j) {
                Ok(v) => content.push(Content::Text(v.to_string())),
                Err(e) => return malformed(format!("a json block is not valid JSON ({e})")),
            },
            ContentBlock::Image(img) => {
                if !IMAGE_TYPES.contains(&img.media_type.as_str()) {
                    return malformed(format!("an image block has unsupported media type `{}`", img.media_type));
                }
                content.push(Content::Image {
                    media_type: img.media_type,
                    data: base64::engine::general_purpose::STANDARD.encode(&img.data),
                });
            }
            ContentBlock::Document(doc) => {
                if !DOCUMENT_TYPES.contains(&doc.media_type.as_str()) {
                    return malformed(format!("a document block has unsupported media type `{}`", doc.media_type));
                }
                content.push(Content::Document {
                    media_type: doc.media_type,
                    data: base64::engine::general_purpose::STANDARD.encode(&doc.data),
                });
            }
        }
    }
    let structured = match output.structured {
        None => None,
        Some(s) => match serde_json::from_str::<Value>(&s) {
            Err(e) => return malformed(format!("its structured output is not valid JSON ({e})")),
            Ok(v) => {
                if let Some(schema) = output_schema
                    && let Err(e) = schema.check(tool, &v)
                {
                    return malformed(format!("its structured output does not match its output schema: {e}"));
                }
                Some(v)
            }
        },
    };
    if !streamed.text.is_empty() || streamed.cut {
        let mut text = streamed.text;
        if streamed.cut {
            text.push_str(&format!(
                "\n[{tool} streamed more than {} MiB of output; the rest was dropped.]\n",
                crate::imports::MAX_STREAMED >> 20
            ));
        }
        match content.first_mut() {
            Some(Content::Text(first)) => first.insert_str(0, &text),
            _ => content.insert(0, Content::Text(text)),
        }
    }
    ToolResult {
        tool_use_id: tool_use_id.to_string(),
        content,
        is_error: output.is_error,
        structured,
        stop: None,
        usage: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_text_begins_the_first_text_block() {
        use crate::contract::bindings::{ContentBlock, ToolOutput};
        let output = |content| ToolOutput { content, structured: None, is_error: false };
        let streamed = |text: &str, cut| Streamed { text: text.into(), cut };
        let r = from_output("T", "id", streamed("head ", false), output(vec![ContentBlock::Text("tail".into())]), None);
        assert_eq!(r.content, vec![Content::Text("head tail".into())]);
        let r = from_output("T", "id", streamed("only", true), output(vec![]), None);
        assert_eq!(r.text(), "only\n[T streamed more than 64 MiB of output; the rest was dropped.]\n");
        let r = from_output("T", "id", Streamed::default(), output(vec![ContentBlock::Text("x".into())]), None);
        assert_eq!(r.text(), "x");
    }

    #[test]
    fn a_note_goes_after_a_successful_text_result_only() {
        let text = |t: &str| Content::Text(t.into());
        let mut r = ToolResult::error("t", "failed");
        r.append_note("N");
        assert_eq!(r.text(), "failed", "not after an error");
        r.is_error = false;
        r.content.push(text("more"));
        r.append_note("N");
        assert_eq!(r.content, vec![text("failed\n\nN"), text("more")]);
        r.content = vec![text("a"), Content::Image { media_type: "image/png".into(), data: "AA==".into() }];
        r.append_note("N");
        assert_eq!(r.content[0], text("a"), "not beside an image");
    }

    #[test]
    fn json_shape_matches_the_messages_api() {
        let r = ToolResult {
            tool_use_id: "t1".into(),
            content: vec![
                Content::Text("hi".into()),
                Content::Image { media_type: "image/png".into(), data: "AA==".into() },
                Content::Document { media_type: "application/pdf".into(), data: "JVBE".into() },
            ],
            is_error: false,
            structured: None,
            stop: None,
            usage: None,
        };
        assert_eq!(
            r.to_json(),
            json!({"tool_use_id": "t1", "is_error": false, "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}}
            ]})
        );
    }
}
