//! The input of `toolhost run`: one JSON value per line, in any of three
//! shapes, each turned into what it asks of the executor.
//!
//! - toolhost's own: `{"type":"tool_use","id","name","input"}`,
//!   `{"type":"interrupt"}`, `{"type":"discard"}`;
//! - the Anthropic Messages streaming events, so toolhost can sit right
//!   behind a model's output: `content_block_start` with a `tool_use` block,
//!   `content_block_delta` with `input_json_delta` pieces of its input,
//!   `content_block_stop` (the call starts then); other events are ignored;
//! - an OpenAI-style assistant message with `tool_calls` (arguments as a JSON
//!   string), alone or inside `choices[].message`.

use serde_json::Value;
use std::collections::HashMap;
use toolhost::ToolUse;

/// What one input line asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    ToolUse(ToolUse),
    /// A call whose input could not be read: its error result takes its
    /// place in the order.
    Failed {
        id: String,
        message: String,
    },
    Interrupt,
    Discard,
    /// The line could not be used (the stream goes on).
    Error(String),
}

/// The state of the input: tool_use blocks still streaming.
#[derive(Debug, Default)]
pub struct InputStream {
    /// Content block index → (id, name, partial JSON so far).
    open: HashMap<u64, (String, String, String)>,
}

impl InputStream {
    /// The events of one line.
    pub fn feed(&mut self, line: &str) -> Vec<Line> {
        let line = line.trim();
        if line.is_empty() {
            return Vec::new();
        }
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => return vec![Line::Error(format!("not JSON: {e}"))],
        };
        if let Some(calls) = openai_tool_calls(&value) {
            return calls;
        }
        let Some(kind) = value.get("type").and_then(Value::as_str) else {
            return vec![Line::Error(
                "expected an object with a \"type\" (or an assistant message with tool_calls)".into(),
            )];
        };
        match kind {
            "tool_use" => vec![match tool_use(&value) {
                Ok(t) => Line::ToolUse(t),
                Err(e) => Line::Error(e),
            }],
            "interrupt" => vec![Line::Interrupt],
            "discard" => {
                self.open.clear();
                vec![Line::Discard]
            }
            "content_block_start" => {
                let block = &value["content_block"];
                if block["type"] != "tool_use" {
                    return Vec::new();
                }
                let (Some(index), Some(id), Some(name)) =
                    (value["index"].as_u64(), block["id"].as_str(), block["name"].as_str())
                else {
                    return vec![Line::Error("content_block_start: a tool_use block needs index, id and name".into())];
                };
                // The input arrives in deltas; a non-empty `input` here is
                // taken as the start of it.
                let initial = match &block["input"] {
                    Value::Object(m) if !m.is_empty() => block["input"].to_string(),
                    _ => String::new(),
                };
                // A block still open at that index never gets its stop: it
                // fails now, so every started call has one result.
                match self.open.insert(index, (id.to_string(), name.to_string(), initial)) {
                    Some((id, name, _)) => vec![Line::Failed {
                        id,
                        message: format!(
                            "<tool_use_error>The input of {name} ended before its block was complete: another block \
                             started at index {index}.</tool_use_error>"
                        ),
                    }],
                    None => Vec::new(),
                }
            }
            "content_block_delta" => {
                let delta = &value["delta"];
                if delta["type"] != "input_json_delta" {
                    return Vec::new();
                }
                let Some(index) = value["index"].as_u64() else {
                    return vec![Line::Error("content_block_delta needs an index".into())];
                };
                match (self.open.get_mut(&index), delta["partial_json"].as_str()) {
                    (Some((_, _, partial)), Some(piece)) => {
                        partial.push_str(piece);
                        Vec::new()
                    }
                    (None, _) => {
                        vec![Line::Error(format!("input_json_delta for block {index}, which is not an open tool_use"))]
                    }
                    (Some(_), None) => vec![Line::Error("input_json_delta needs partial_json".into())],
                }
            }
            "content_block_stop" => {
                let Some((id, name, partial)) = value["index"].as_u64().and_then(|i| self.open.remove(&i)) else {
                    return Vec::new();
                };
                vec![close_block(id, name, &partial)]
            }
            // The rest of a Messages stream carries no tool call.
            "message_start" | "message_delta" | "message_stop" | "ping" => Vec::new(),
            other => vec![Line::Error(format!("unknown type `{other}`"))],
        }
    }

    /// The end of input: blocks still open fail.
    pub fn finish(&mut self) -> Vec<Line> {
        let mut open: Vec<(u64, (String, String, String))> = self.open.drain().collect();
        open.sort_by_key(|(i, _)| *i);
        open.into_iter()
            .map(|(_, (id, name, _))| Line::Failed {
                id,
                message: format!(
                    "<tool_use_error>The input of {name} ended before its block was complete.</tool_use_error>"
                ),
            })
            .collect()
    }
}

fn close_block(id: String, name: String, partial: &str) -> Line {
    let input =
        if partial.trim().is_empty() { Ok(Value::Object(Default::default())) } else { serde_json::from_str(partial) };
    match input {
        Ok(input) => Line::ToolUse(ToolUse { id, name, input }),
        Err(e) => Line::Failed {
            message: format!(
                "<tool_use_error>InputValidationError: the input of {name} is not valid JSON: {e}</tool_use_error>"
            ),
            id,
        },
    }
}

fn tool_use(value: &Value) -> Result<ToolUse, String> {
    let id = value["id"].as_str().ok_or("tool_use needs a string id")?;
    let name = value["name"].as_str().ok_or("tool_use needs a string name")?;
    let input = value.get("input").cloned().unwrap_or(Value::Object(Default::default()));
    Ok(ToolUse { id: id.to_string(), name: name.to_string(), input })
}

/// The calls of an OpenAI-style assistant message, if `value` is one.
fn openai_tool_calls(value: &Value) -> Option<Vec<Line>> {
    let message = match value.get("choices").and_then(Value::as_array) {
        Some(choices) => choices.first()?.get("message")?,
        None => value,
    };
    let calls = message.get("tool_calls")?.as_array()?;
    Some(
        calls
            .iter()
            .map(|call| {
                let (Some(id), Some(name)) = (call["id"].as_str(), call["function"]["name"].as_str()) else {
                    return Line::Error("a tool call needs id and function.name".into());
                };
                let arguments = call["function"]["arguments"].as_str().unwrap_or("{}");
                close_block(id.to_string(), name.to_string(), arguments)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn feed(lines: &[String]) -> Vec<Line> {
        let mut s = InputStream::default();
        let mut out: Vec<Line> = lines.iter().flat_map(|l| s.feed(l)).collect();
        out.extend(s.finish());
        out
    }

    fn call(id: &str, name: &str, input: Value) -> Line {
        Line::ToolUse(ToolUse { id: id.into(), name: name.into(), input })
    }

    #[test]
    fn the_three_formats() {
        let own = json!({"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a"}}).to_string();
        assert_eq!(feed(&[own]), [call("t1", "Read", json!({"file_path": "/a"}))]);

        // A Messages stream, the input split across many deltas.
        let input = r#"{"command": "echo \"split\" && ls", "timeout": 5000}"#;
        let mut lines = vec![
            json!({"type": "message_start", "message": {"id": "m"}}).to_string(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}).to_string(),
            json!({"type": "content_block_stop", "index": 0}).to_string(),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}}).to_string(),
        ];
        for piece in input.as_bytes().chunks(3) {
            let piece = std::str::from_utf8(piece).unwrap();
            lines.push(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": piece}}).to_string());
        }
        lines.push(json!({"type": "content_block_stop", "index": 1}).to_string());
        lines.push(json!({"type": "message_stop"}).to_string());
        assert_eq!(feed(&lines), [call("toolu_1", "Bash", serde_json::from_str(input).unwrap())]);

        let openai = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "Glob", "arguments": "{\"pattern\":\"*.rs\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "Read", "arguments": "{not json"}}
        ]})
        .to_string();
        let events = feed(std::slice::from_ref(&openai));
        assert_eq!(events[0], call("call_1", "Glob", json!({"pattern": "*.rs"})));
        assert!(
            matches!(&events[1], Line::Failed { id, message } if id == "call_2" && message.contains("not valid JSON"))
        );
        let wrapped = json!({"choices": [{"message": serde_json::from_str::<Value>(&openai).unwrap()}]}).to_string();
        assert_eq!(feed(&[wrapped]).len(), 2);
    }

    #[test]
    fn bad_lines_are_errors_and_the_stream_goes_on() {
        let events = feed(&[
            "not json".into(),
            json!({"type": "tool_use", "name": "Read"}).to_string(),
            json!({"type": "nonsense"}).to_string(),
            json!({"type": "interrupt"}).to_string(),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "t", "name": "Bash"}}).to_string(),
        ]);
        assert!(matches!(&events[0], Line::Error(m) if m.starts_with("not JSON")));
        assert!(matches!(&events[1], Line::Error(m) if m.contains("id")));
        assert!(matches!(&events[2], Line::Error(m) if m.contains("nonsense")));
        assert_eq!(events[3], Line::Interrupt);
        assert!(matches!(&events[4], Line::Failed { id, .. } if id == "t"), "an unfinished block fails at the end");

        // A block restarted at an open index: the first one fails at once.
        let start = |id: &str| {
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": id, "name": "Bash"}}).to_string()
        };
        let stop = json!({"type": "content_block_stop", "index": 0}).to_string();
        let events = feed(&[start("a"), start("b"), stop]);
        assert!(matches!(&events[0], Line::Failed { id, message } if id == "a" && message.contains("another block")));
        assert_eq!(events[1], call("b", "Bash", json!({})));
    }
}
