//! Tools another program serves: an MCP server's tools, offered in the pool
//! as `mcp__SERVER__TOOL` beside the components and called through the same
//! pipeline (rules, hooks, asks, audit, limits). The host knows a remote tool
//! by its description, read here from the server's `tools/list` entry (names
//! made valid, texts capped, the schema made portable and capped like a
//! component's), and reaches it through a [`RemoteCaller`] a front supplies
//! (the MCP client of `toolhost-mcp`).

use super::declare::{MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH, capped, check_name, depth};
use super::tool::{Hints, InputRoles, ToolSpec};
use crate::imports::ProgressSink;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Longest description of a server's tool, in characters (as Claude Code
/// caps them); longer ones are cut.
pub const MAX_REMOTE_DESCRIPTION: usize = 2_048;
/// Most tools one server may offer; the rest are left out with a problem.
pub const MAX_REMOTE_TOOLS: usize = 512;
/// Results longer than this many characters are saved to a file and the
/// model gets a preview (Claude Code's figure for MCP tools).
pub(crate) const REMOTE_RESULT_CHARS: u64 = 100_000;

/// One call of a remote tool, as the caller gets it.
#[derive(Clone)]
pub struct RemoteCall {
    /// The model's `tool_use` id.
    pub tool_use_id: String,
    /// The call's wall-clock limit.
    pub timeout: Duration,
    /// Set when the call is cancelled.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Where the server's progress goes.
    pub progress: Option<ProgressSink>,
}

/// Reaches the program that serves a remote tool.
pub trait RemoteCaller: Send + Sync {
    /// Calls `tool` (the server's own name for it) with `input`; blocks
    /// until the answer, the deadline or the cancellation. `Ok`: the
    /// server's `CallToolResult` as JSON (an error the tool reports is in
    /// it, `isError`); `Err`: why no answer came, for the model.
    fn call(&self, tool: &str, input: &Value, call: &RemoteCall) -> Result<Value, String>;
}

/// What the host needs to call a remote tool.
#[derive(Clone)]
pub struct Remote {
    /// The configured name of its server.
    pub server: String,
    /// The server's name for the tool.
    pub tool: String,
    /// How to reach it.
    pub caller: Arc<dyn RemoteCaller>,
    /// The secrets its server was given (`NAME`, value): masked as
    /// `[secret NAME]` wherever a result carries them.
    pub secrets: Arc<[(String, String)]>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("server", &self.server).field("tool", &self.tool).finish()
    }
}

/// A remote tool, described, ready to register.
#[derive(Clone, Debug)]
pub struct RemoteTool {
    /// What the model is told of it.
    pub spec: ToolSpec,
    /// How it is called.
    pub remote: Remote,
    /// What was cut from its description, for people.
    pub warnings: Vec<String>,
}

/// The remote tools a host offers, as they are now: every configured
/// server's, and what went wrong with the others.
pub trait RemoteSource: Send + Sync {
    /// The tools, and the problems (`source`, `message`) of servers that
    /// could not be reached or listed.
    fn tools(&self) -> (Vec<RemoteTool>, Vec<(String, String)>);
}

pub use crate::contract::plain::naming::normalize_name;

/// The pool name of `tool` of `server`.
pub fn remote_name(server: &str, tool: &str) -> String {
    format!("mcp__{}__{}", normalize_name(server), normalize_name(tool))
}

/// The server part of a pool name `mcp__SERVER__TOOL` (or `mcp__SERVER`).
pub fn server_of(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("mcp__")?;
    let server = rest.split_once("__").map_or(rest, |(server, _)| server);
    (!server.is_empty()).then_some(server)
}

/// A server's `tools/list` entry as a tool of the pool: named
/// `mcp__SERVER__TOOL`, its description capped at
/// [`MAX_REMOTE_DESCRIPTION`], its input schema made portable
/// ([`make_portable`]) within the size and depth a component's may have, its
/// annotations as hints (read-only tools may run beside others), Claude
/// Code's `_meta` keys for search hints and always-loaded tools read.
pub fn describe(server: &str, entry: &Value) -> Result<(ToolSpec, String, Vec<String>), RemoteToolError> {
    let tool = entry.get("name").and_then(Value::as_str).ok_or(RemoteToolError::NoName)?;
    let name = remote_name(server, tool);
    check_name(&name).map_err(RemoteToolError::Name)?;
    let mut warnings = Vec::new();
    let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_string);
    let description = text("description").or_else(|| text("title")).unwrap_or_default();
    let description = capped(description, MAX_REMOTE_DESCRIPTION, "description", &mut warnings);
    let schema = entry.get("inputSchema").ok_or_else(|| RemoteToolError::NoInputSchema { tool: tool.into() })?;
    let input_schema = make_portable(schema);
    let bytes = input_schema.to_string().len();
    if bytes > MAX_SCHEMA_BYTES {
        return Err(RemoteToolError::SchemaTooLarge { tool: tool.into(), kib: bytes >> 10 });
    }
    if depth(&input_schema) > MAX_SCHEMA_DEPTH {
        return Err(RemoteToolError::SchemaTooDeep { tool: tool.into() });
    }
    let output_schema = match entry.get("outputSchema") {
        Some(s) if s.is_object() && s.to_string().len() <= MAX_SCHEMA_BYTES && depth(s) <= MAX_SCHEMA_DEPTH => {
            Some(s.clone())
        }
        Some(Value::Null) | None => None,
        Some(_) => {
            warnings
                .push("its output schema is not an object within the size and depth allowed; it was left out".into());
            None
        }
    };
    let flag = |key: &str| entry.pointer(&format!("/annotations/{key}")).and_then(Value::as_bool);
    let read_only = flag("readOnlyHint").unwrap_or(false);
    let meta = |key: &str| entry.get("_meta").and_then(|m| m.get(key));
    let search_hint = meta("anthropic/searchHint")
        .and_then(Value::as_str)
        .map(|h| capped(h.to_string(), super::declare::MAX_SEARCH_HINT, "search hint", &mut warnings));
    let first_line = description.lines().next().unwrap_or_default().to_string();
    let spec = ToolSpec {
        name,
        aliases: Vec::new(),
        description: capped(first_line, super::declare::MAX_DESCRIPTION, "description's first line", &mut Vec::new()),
        prompt: description,
        search_hint,
        input_schema,
        output_schema,
        max_result_size_chars: Some(REMOTE_RESULT_CHARS),
        should_defer: false,
        always_load: meta("anthropic/alwaysLoad").and_then(Value::as_bool).unwrap_or(false),
        cancel_on_interrupt: true,
        enabled: true,
        hints: Hints {
            read_only: Some(read_only),
            destructive: Some(flag("destructiveHint").unwrap_or(!read_only)),
            concurrency_safe: Some(read_only),
        },
        inputs: InputRoles::default(),
        cancels_siblings: false,
        reuse_instance: false,
        validates_input: false,
        checks_permissions: false,
    };
    Ok((spec, tool.to_string(), warnings))
}

/// Why a server's tool is left out of the pool ([`describe`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RemoteToolError {
    /// The entry has no `name`.
    #[error("a tool without a `name`")]
    NoName,
    /// `mcp__SERVER__TOOL` is not a valid tool name (why).
    #[error("{0}")]
    Name(String),
    /// The entry has no `inputSchema`.
    #[error("`{tool}` has no `inputSchema`")]
    NoInputSchema {
        /// The server's name for the tool.
        tool: String,
    },
    /// Its input schema is larger than a component's may be.
    #[error("the input schema of `{tool}` is {kib} KiB; at most {} KiB are accepted", MAX_SCHEMA_BYTES >> 10)]
    SchemaTooLarge {
        /// The server's name for the tool.
        tool: String,
        /// Its schema's size.
        kib: usize,
    },
    /// Its input schema nests deeper than a component's may.
    #[error("the input schema of `{tool}` nests deeper than {MAX_SCHEMA_DEPTH} levels")]
    SchemaTooDeep {
        /// The server's name for the tool.
        tool: String,
    },
}

/// Deepest `$ref` chain [`make_portable`] follows; a deeper (or recursive)
/// reference becomes an object of any shape.
const MAX_REF_DEPTH: usize = 8;

/// `schema` moved toward the subset of JSON Schema every model API accepts
/// ([`portability_problems`](super::portability_problems)) without changing
/// what it accepts, except to accept more where a form has no portable
/// equivalent (the server checks its own input): local `$ref`s inlined and
/// `$defs` dropped, a nullable type (`["string", "null"]`, `anyOf` with
/// `null`) made its type, a string `const` made a one-value `enum`,
/// `format` and `title` folded into the description, `$schema`, `$id`,
/// `$comment`, `examples` and `additionalProperties` other than `false`
/// dropped; the root is always `"type": "object"`.
pub fn make_portable(schema: &Value) -> Value {
    let mut root = portable(schema, schema, 0);
    let Value::Object(map) = &mut root else {
        return json!({"type": "object", "properties": {}});
    };
    if map.get("type").and_then(Value::as_str) != Some("object") {
        map.insert("type".into(), json!("object"));
    }
    if !map.get("properties").is_some_and(Value::is_object) {
        map.insert("properties".into(), json!({}));
    }
    root
}

fn portable(schema: &Value, root: &Value, refs: usize) -> Value {
    let Value::Object(map) = schema else {
        // `true` (anything) and other odd forms: no constraint.
        return json!({});
    };
    if let Some(target) = map.get("$ref").and_then(Value::as_str) {
        let found = target.strip_prefix('#').filter(|_| refs < MAX_REF_DEPTH).and_then(|p| root.pointer(p));
        let mut inlined = match found {
            Some(found) => portable(found, root, refs + 1),
            None => json!({"type": "object"}),
        };
        // Keywords beside the `$ref` (a description) count too.
        if let (Value::Object(out), Some(Value::String(d))) = (&mut inlined, map.get("description")) {
            out.insert("description".into(), json!(d));
        }
        return inlined;
    }
    // A nullable form: the non-null alternative.
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = map.get(key) {
            let real: Vec<&Value> =
                options.iter().filter(|o| o.get("type").and_then(Value::as_str) != Some("null")).collect();
            if real.len() == 1 && options.len() == 2 {
                let mut inner = portable(real[0], root, refs);
                if let (Value::Object(out), Some(Value::String(d))) = (&mut inner, map.get("description")) {
                    out.entry("description").or_insert_with(|| json!(d));
                }
                return inner;
            }
        }
    }
    let mut out = Map::new();
    let mut notes = Vec::new();
    for (key, value) in map {
        match key.as_str() {
            "$schema" | "$id" | "$comment" | "$defs" | "definitions" | "examples" => {}
            "title" => {
                if let Some(t) = value.as_str() {
                    notes.push(t.to_string());
                }
            }
            "format" => {
                if let Some(f) = value.as_str() {
                    notes.push(format!("format: {f}"));
                }
            }
            "additionalProperties" if value != &Value::Bool(false) => {}
            "type" => match value {
                Value::Array(types) => {
                    let real: Vec<&Value> = types.iter().filter(|t| t.as_str() != Some("null")).collect();
                    match real.as_slice() {
                        [one] => {
                            out.insert("type".into(), (*one).clone());
                        }
                        _ => {
                            out.insert("type".into(), value.clone());
                        }
                    }
                }
                other => {
                    out.insert("type".into(), other.clone());
                }
            },
            "const" if value.is_string() => {
                out.insert("type".into(), json!("string"));
                out.insert("enum".into(), json!([value]));
            }
            "properties" => {
                let properties = match value {
                    Value::Object(p) => p.iter().map(|(k, v)| (k.clone(), portable(v, root, refs))).collect(),
                    _ => Map::new(),
                };
                out.insert("properties".into(), Value::Object(properties));
            }
            "items" => {
                out.insert("items".into(), portable(value, root, refs));
            }
            "anyOf" | "oneOf" | "allOf" => {
                let options = value.as_array().map(|o| o.iter().map(|v| portable(v, root, refs)).collect());
                out.insert(key.clone(), Value::Array(options.unwrap_or_default()));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if !notes.is_empty() {
        let note = notes.join("; ");
        let description = match out.get("description").and_then(Value::as_str) {
            Some(d) if !d.is_empty() => format!("{d} ({note})"),
            _ => note,
        };
        out.insert("description".into(), json!(description));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_valid_and_the_server_is_read_back() {
        assert_eq!(remote_name("my server", "read.file"), "mcp__my_server__read_file");
        assert_eq!(server_of("mcp__fs__read_file"), Some("fs"));
        assert_eq!(server_of("mcp__fs"), Some("fs"));
        assert_eq!(server_of("mcp__"), None);
        assert_eq!(server_of("Read"), None);
    }

    #[test]
    fn a_pydantic_schema_is_made_portable() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "args",
            "$defs": {"Mode": {"type": "string", "enum": ["a", "b"], "title": "Mode"}},
            "properties": {
                "path": {"type": "string", "title": "Path", "format": "uri"},
                "mode": {"$ref": "#/$defs/Mode", "description": "how"},
                "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null},
                "tags": {"type": ["array", "null"], "items": {"const": "x"}},
                "extra": {"type": "object", "additionalProperties": true}
            },
            "required": ["path"],
            "type": "object"
        });
        let made = make_portable(&schema);
        assert_eq!(
            made,
            json!({
                "properties": {
                    "path": {"type": "string", "description": "Path; format: uri"},
                    "mode": {"type": "string", "enum": ["a", "b"], "description": "how"},
                    "limit": {"type": "integer"},
                    "tags": {"type": "array", "items": {"type": "string", "enum": ["x"]}},
                    "extra": {"type": "object"}
                },
                "required": ["path"],
                "type": "object",
                "description": "args"
            })
        );
        assert_eq!(make_portable(&made), made, "made portable once is portable");
    }

    #[test]
    fn a_recursive_reference_ends() {
        let schema = json!({"type": "object", "properties": {"node": {"$ref": "#"}}});
        let made = make_portable(&schema);
        assert!(depth(&made) < 40, "{made}");
        assert_eq!(make_portable(&json!(true)), json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn a_server_tool_is_described_with_its_hints_and_capped() {
        let entry = json!({
            "name": "read file",
            "description": "x".repeat(3000),
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
            "annotations": {"readOnlyHint": true},
            "_meta": {"anthropic/searchHint": "files", "anthropic/alwaysLoad": true}
        });
        let (spec, tool, warnings) = describe("fs", &entry).unwrap();
        assert_eq!((spec.name.as_str(), tool.as_str()), ("mcp__fs__read_file", "read file"));
        assert_eq!(spec.prompt.chars().count(), MAX_REMOTE_DESCRIPTION);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(spec.hints.concurrency_safe, Some(true));
        assert_eq!(spec.search_hint.as_deref(), Some("files"));
        assert!(spec.always_load && !spec.checks_permissions);
        let unnamed = describe("fs", &json!({"inputSchema": {}})).unwrap_err();
        assert_eq!(unnamed, RemoteToolError::NoName);
        let long = describe(&"s".repeat(60), &json!({"name": "t", "inputSchema": {}})).unwrap_err();
        assert!(long.to_string().contains("not a valid tool name"), "{long}");
        let writer = describe("fs", &json!({"name": "w", "inputSchema": {"type": "object"}})).unwrap().0;
        assert_eq!((writer.hints.read_only, writer.hints.concurrency_safe), (Some(false), Some(false)));
    }
}
