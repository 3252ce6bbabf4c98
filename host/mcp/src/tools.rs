//! The tool list a client gets, and toolhost results as MCP results.

use crate::handles::{SESSION_ARGUMENT, START_SESSION};
use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::{Value, json};
use std::sync::Arc;
use toolhost::{Content, Host, ToolResult};

/// The tool list: the pool in its order, with schemas and the hints the
/// tools declare for every input. Deferred tools are listed in full too,
/// marked `_meta["toolhost/deferred"]`: an MCP client decides itself what
/// its model sees at once (Claude Code defers MCP tools behind its own tool
/// search), so toolhost's ToolSearch is not listed.
pub fn tools(host: &Host) -> Vec<Tool> {
    let deferred = host.deferred_tools();
    host.pool_in_full()
        .iter()
        .filter(|t| t.role() != Some(toolhost::Role::LoadsTools))
        .map(|t| {
            let schema = match &t.spec().input_schema {
                Value::Object(o) => o.clone(),
                _ => serde_json::Map::new(),
            };
            let mut tool = Tool::new(t.spec().name.clone(), t.spec().model_description().to_string(), Arc::new(schema));
            if let Some(output) = &t.spec().output_schema
                && let Value::Object(o) = output
            {
                tool = tool.with_raw_output_schema(Arc::new(o.clone()));
            }
            let hints = &t.spec().hints;
            if hints.read_only.is_some() || hints.destructive.is_some() {
                let mut annotations = ToolAnnotations::new();
                if let Some(read_only) = hints.read_only {
                    annotations = annotations.read_only(read_only);
                }
                if let Some(destructive) = hints.destructive {
                    annotations = annotations.destructive(destructive);
                }
                tool = tool.with_annotations(annotations);
            }
            if deferred.contains(&t.spec().name) {
                let mut meta = rmcp::model::MetaObject::new();
                meta.insert("toolhost/deferred".into(), json!(true));
                tool.meta = Some(meta);
            }
            tool
        })
        .collect()
}

/// The tool list of the 2026-07-28 revision: [`tools`], each taking a state
/// handle as [`SESSION_ARGUMENT`] (unless its schema has a property of that
/// name already), and [`START_SESSION`], which makes one; sorted by name.
pub fn sessionless_tools(host: &Host) -> Vec<Tool> {
    let mut all: Vec<Tool> = tools(host)
        .into_iter()
        .map(|mut tool| {
            let mut schema = (*tool.input_schema).clone();
            let properties = schema.entry("properties").or_insert_with(|| json!({}));
            if let Value::Object(properties) = properties
                && !properties.contains_key(SESSION_ARGUMENT)
            {
                properties.insert(
                    SESSION_ARGUMENT.into(),
                    json!({
                        "type": "string",
                        "description": format!(
                            "The handle {START_SESSION} returned. Calls with the same handle share state: Edit and \
                             Write need the file read with the same handle; background shells belong to it. Without \
                             one, the call has state of its own only."
                        ),
                    }),
                );
                tool.input_schema = Arc::new(schema);
            }
            tool
        })
        .collect();
    let schema = json!({"type": "object", "properties": {}, "additionalProperties": false});
    let Value::Object(schema) = schema else { unreachable!("an object") };
    let start = Tool::new(
        START_SESSION,
        format!(
            "Starts a session and returns its handle. Pass the handle as `{SESSION_ARGUMENT}` to every later call \
             that belongs to the same piece of work: they then share state (files read, which Edit and Write \
             require; background shells and their output). Start one per task or agent; a handle unused for a \
             while ends."
        ),
        Arc::new(schema),
    )
    .with_annotations(ToolAnnotations::new().read_only(true).destructive(false));
    all.push(start);
    all.sort_by(|a, b| a.name.cmp(&b.name));
    all
}

/// A toolhost result as an MCP one (errors stay results, with `isError`).
pub fn to_mcp(result: ToolResult) -> CallToolResult {
    let content = result
        .content
        .into_iter()
        .map(|c| match c {
            Content::Text(t) => ContentBlock::text(t),
            Content::Image { media_type, data } => ContentBlock::image(data, media_type),
            // MCP has no document block: an embedded resource carries it,
            // named by the call that made it.
            Content::Document { media_type, data } => ContentBlock::resource(
                rmcp::model::ResourceContents::blob(data, format!("toolhost://result/{}", result.tool_use_id))
                    .with_mime_type(media_type),
            ),
        })
        .collect();
    let mut out = if result.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    out.structured_content = result.structured;
    let mut meta = rmcp::model::MetaObject::new();
    if let Some(reason) = result.stop {
        meta.insert("toolhost/stop".into(), json!(reason));
    }
    if let Some(usage) = result.usage {
        meta.insert("toolhost/usage".into(), usage.to_json());
    }
    if !meta.is_empty() {
        out.meta = Some(meta);
    }
    out
}
