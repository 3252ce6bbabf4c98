//! The `ToolSearch` tool: finds deferred tools (offered to the model by name
//! only) and returns their full definitions, so the model can call them.
//!
//! The host adds the deferred tools of the moment to the call's input
//! (`deferred`, never part of the schema the model sees, and refused if the
//! model sends it) and, when the call succeeds, marks the tools in the
//! result's `matches` as discovered for the session.

use serde::Deserialize;
use toolhost_sdk::serde_json::{self, Value, json};
use toolhost_sdk::{Context, JsonSchema, Output, Permission, Tool, ToolError, export_tool};

/// Input of `ToolSearch`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSearchInput {
    /// Query to find deferred tools. Use "select:<tool_name>" for direct selection, or keywords to search.
    pub query: String,
    /// Maximum number of results to return (default: 5)
    #[serde(default = "default_max")]
    #[schemars(default = "default_max")]
    pub max_results: f64,
    /// The deferred tools, added by the host.
    #[serde(default)]
    #[schemars(skip)]
    pub deferred: Vec<Deferred>,
}

fn default_max() -> f64 {
    5.0
}

/// A deferred tool as the host describes it.
#[derive(Clone, Debug, Deserialize)]
pub struct Deferred {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub prompt: String,
    #[serde(default)]
    pub search_hint: Option<String>,
    #[serde(default)]
    pub input_schema: Value,
    /// Its TypeScript declaration for Script programs, when the host
    /// offers the Script tool.
    #[serde(default)]
    pub declaration: Option<String>,
}

pub struct ToolSearch;

impl Tool for ToolSearch {
    type Input = ToolSearchInput;
    const NAME: &'static str = "ToolSearch";
    const DESCRIPTION: &'static str =
        "Loads the full definitions of deferred tools, by name (select:) or by keywords, so they can be called.";
    const READ_ONLY_HINT: Option<bool> = Some(true);
    // It changes what the session may call, so the calls after it in a
    // stream wait for it and see what it loaded (run concurrently, whether a
    // following call found its tool loaded would be a race).
    const CONCURRENCY_SAFE_HINT: Option<bool> = Some(false);
    const VALIDATES_INPUT: bool = false;
    const DESTRUCTIVE_HINT: Option<bool> = Some(false);
    const ALWAYS_LOAD: bool = true;

    fn prompt() -> String {
        include_str!("prompt.md").into()
    }
    fn is_read_only(_: &ToolSearchInput) -> bool {
        true
    }
    // Reading the tool list needs no approval.
    fn check_permissions(_: &ToolSearchInput, _: &Context) -> Permission {
        Permission::Allow(None)
    }

    fn call(input: ToolSearchInput, _: &Context) -> Result<Output, ToolError> {
        let max = if input.max_results.is_finite() && input.max_results >= 1.0 {
            input.max_results.min(100.0) as usize
        } else {
            return Err(ToolError::invalid_input("max_results must be at least 1"));
        };
        let found = search(&input.deferred, &input.query, max);
        let names: Vec<&str> = found.iter().map(|t| t.name.as_str()).collect();
        let structured = json!({
            "matches": names,
            "query": input.query,
            "total_deferred_tools": input.deferred.len(),
        });
        if found.is_empty() {
            return Ok(Output::text("No matching deferred tools found").with_structured(structured));
        }
        let mut text = String::from("<functions>\n");
        for tool in &found {
            let full = if tool.prompt.is_empty() { &tool.description } else { &tool.prompt };
            let definition = json!({
                "description": full,
                "name": tool.name,
                "parameters": tool.input_schema,
            });
            text.push_str(&format!(
                "<function>{}</function>\n",
                serde_json::to_string(&definition).unwrap_or_default()
            ));
        }
        text.push_str("</functions>");
        let declared: Vec<&str> = found.iter().filter_map(|t| t.declaration.as_deref()).collect();
        if !declared.is_empty() {
            text.push_str("\n\nIn Script programs they are called as members of `tools`:\n```ts\n");
            text.extend(declared);
            text.push_str("```");
        }
        Ok(Output::text(text).with_structured(structured))
    }
}

/// The tools `query` finds: `select:A,B` by name (in the order given), or
/// keywords, ranked by where they match (name parts over search hints over
/// descriptions); a keyword with a leading `+` must match.
pub fn search<'a>(tools: &'a [Deferred], query: &str, max: usize) -> Vec<&'a Deferred> {
    let query = query.trim();
    if let Some(names) = query.strip_prefix("select:") {
        let mut out: Vec<&Deferred> = Vec::new();
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let hit = tools
                .iter()
                .find(|t| t.name == name)
                .or_else(|| tools.iter().find(|t| t.name.eq_ignore_ascii_case(name)));
            if let Some(tool) = hit
                && !out.iter().any(|o| o.name == tool.name)
            {
                out.push(tool);
            }
        }
        return out;
    }
    let terms: Vec<(String, bool)> = query
        .split_whitespace()
        .map(|t| match t.strip_prefix('+') {
            Some(rest) => (rest.to_lowercase(), true),
            None => (t.to_lowercase(), false),
        })
        .filter(|(t, _)| !t.is_empty())
        .collect();
    if terms.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(u32, &Deferred)> = tools
        .iter()
        .filter_map(|tool| {
            let parts = name_parts(&tool.name);
            let whole = tool.name.to_lowercase();
            let hint = tool.search_hint.as_deref().unwrap_or_default().to_lowercase();
            let description = tool.description.to_lowercase();
            let mut score = 0;
            for (term, required) in &terms {
                let here = if whole == *term {
                    20
                } else if parts.iter().any(|p| p == term) {
                    10
                } else if whole.contains(term.as_str()) {
                    6
                } else if words(&hint).any(|w| w == term) {
                    5
                } else if hint.contains(term.as_str()) {
                    3
                } else if words(&description).any(|w| w == term) {
                    2
                } else if description.contains(term.as_str()) {
                    1
                } else {
                    0
                };
                if here == 0 && *required {
                    return None;
                }
                score += here;
            }
            (score > 0).then_some((score, tool))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    scored.into_iter().take(max).map(|(_, t)| t).collect()
}

/// `mcp__github__create_pr` → `mcp github create pr`; `NotebookEdit` →
/// `notebook edit`.
fn name_parts(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if c == '_' || c == '-' || c == '.' {
            if !current.is_empty() {
                parts.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            parts.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty())
}

export_tool!(ToolSearch);

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str, hint: Option<&str>) -> Deferred {
        Deferred {
            name: name.into(),
            description: description.into(),
            prompt: String::new(),
            search_hint: hint.map(Into::into),
            input_schema: json!({"type": "object"}),
            declaration: None,
        }
    }

    fn names(found: Vec<&Deferred>) -> Vec<&str> {
        found.into_iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn select_loads_by_name_in_the_order_given() {
        let tools = [tool("NotebookEdit", "Edits cells", None), tool("Alpha", "", None), tool("Beta", "", None)];
        assert_eq!(names(search(&tools, "select:Beta,NotebookEdit", 5)), ["Beta", "NotebookEdit"]);
        assert_eq!(names(search(&tools, "select: notebookedit , Nope, Beta,Beta", 5)), ["NotebookEdit", "Beta"]);
        assert!(search(&tools, "select:", 5).is_empty());
    }

    #[test]
    fn keywords_rank_names_over_hints_over_descriptions() {
        let tools = [
            tool("mcp__github__create_pr", "Opens a pull request", Some("github pr")),
            tool("SlackSend", "Sends a message to a channel", Some("chat message")),
            tool("Mailer", "Sends an email message", None),
            tool("Weather", "Tells the weather", None),
        ];
        assert_eq!(names(search(&tools, "github", 5)), ["mcp__github__create_pr"]);
        assert_eq!(names(search(&tools, "message", 5)), ["SlackSend", "Mailer"]);
        assert_eq!(names(search(&tools, "send", 5)), ["SlackSend", "Mailer"]);
        assert_eq!(names(search(&tools, "+mail send", 5)), ["Mailer"]);
        assert_eq!(names(search(&tools, "message", 1)), ["SlackSend"]);
        assert!(search(&tools, "nothing-like-it", 5).is_empty());
        assert!(search(&tools, "   ", 5).is_empty());
    }

    #[test]
    fn names_split_on_case_and_separators() {
        assert_eq!(name_parts("mcp__github__create_pr"), ["mcp", "github", "create", "pr"]);
        assert_eq!(name_parts("NotebookEdit"), ["notebook", "edit"]);
        assert_eq!(name_parts("web-fetch2"), ["web", "fetch2"]);
    }
}
