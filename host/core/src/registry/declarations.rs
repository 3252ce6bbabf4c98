//! TypeScript declarations of the tools a Script program can call, for the
//! Script tool's prompt: each tool's name, the first line of what it tells
//! the model, its input schema as the parameter's type and, where it
//! declares one, its output schema as the result's (else `string`).

use super::tool::ToolSpec;
use serde_json::Value;
use std::cell::Cell;
use std::fmt::Write as _;

/// Nesting deeper than this is declared `unknown`.
const MAX_DEPTH: usize = 8;
/// Longest doc comment line kept, in characters.
const MAX_DOC: usize = 240;
/// About the most text one tool's declaration takes: past it, what is left
/// of its types is `unknown` (a schema's `$ref`s could otherwise expand
/// without end).
pub const MAX_DECLARATION: usize = 16 << 10;
/// About the most text the declarations of all tools take: the tools past
/// it are named, not declared.
pub(crate) const MAX_DECLARATIONS: usize = 256 << 10;

/// The Script tool's prompt: its own text, the declarations of `callable`,
/// and the names of the `deferred` tools (callable the same way once
/// `loader`, the tool that loads them, has).
pub(crate) fn script_prompt(own: &str, callable: &[&ToolSpec], deferred: &[&str], loader: &str) -> String {
    let mut out = own.trim_end().to_string();
    out.push_str("\n\nThe tools a program can call, as TypeScript declarations:\n\n```ts\ndeclare const tools: {\n");
    let mut undeclared = Vec::new();
    let mut used = 0;
    for spec in callable {
        if used > MAX_DECLARATIONS {
            undeclared.push(spec.name.as_str());
            continue;
        }
        let declared = declaration(spec, "  ");
        used += declared.len();
        out.push_str(&declared);
    }
    out.push_str("};\n```\n");
    if !undeclared.is_empty() {
        let _ = write!(
            out,
            "\nAlso callable, not declared here for room (their parameters are those of their definitions): {}.\n",
            undeclared.join(", ")
        );
    }
    if !deferred.is_empty() {
        let _ = write!(
            out,
            "\nDeferred tools, offered by name only: {}. Once {loader} has loaded one, a program calls it the same \
             way, `tools.NAME(input)` with the parameters of its definition ({loader}'s result gives its \
             declaration).\n",
            deferred.join(", ")
        );
    }
    out
}

/// One tool's member of `tools`, each line starting with `indent`.
pub(crate) fn declaration(spec: &ToolSpec, indent: &str) -> String {
    let mut out = String::new();
    let summary = first_line(spec.model_description());
    if !summary.is_empty() {
        let _ = writeln!(out, "{indent}/** {} */", doc(&summary));
    }
    let budget = Cell::new(MAX_DECLARATION);
    let input = ts_type(&spec.input_schema, &spec.input_schema, indent, 0, &budget);
    let output = match &spec.output_schema {
        Some(schema) => ts_type(schema, schema, indent, 0, &budget),
        None => "string".to_string(),
    };
    let _ = writeln!(out, "{indent}{}(input: {input}): Promise<{output}>;", key(&spec.name));
    out
}

/// The first paragraph of `text` on one line (descriptions are often
/// wrapped), cut after its last sentence that ends within [`MAX_DOC`]
/// characters, else at [`MAX_DOC`].
fn first_line(text: &str) -> String {
    let paragraph: Vec<&str> = text
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .flat_map(str::split_whitespace)
        .collect();
    let line = paragraph.join(" ");
    if line.chars().count() <= MAX_DOC {
        return line;
    }
    let within: String = line.chars().take(MAX_DOC).collect();
    match within.rfind(". ") {
        Some(end) if end > MAX_DOC / 4 => within[..=end].to_string(),
        _ => clip(&line),
    }
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_DOC) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Text safe inside a `/** */` comment.
fn doc(text: &str) -> String {
    text.replace("*/", "*\\/")
}

/// A member name: as it is when it is an identifier, else quoted.
fn key(name: &str) -> String {
    let mut chars = name.chars();
    let identifier = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$');
    if identifier { name.to_string() } else { serde_json::to_string(name).unwrap_or_default() }
}

/// The declaration of a tool called `name` taking `input` (the fuzz
/// target's entry).
pub fn declaration_of(name: &str, input: &Value) -> String {
    declaration(&bare_spec(name, input.clone()), "")
}

/// A tool called `name` taking `input`, described by nothing else.
fn bare_spec(name: &str, input: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        aliases: Vec::new(),
        description: String::new(),
        prompt: String::new(),
        search_hint: None,
        input_schema: input,
        output_schema: None,
        max_result_size_chars: None,
        should_defer: false,
        always_load: false,
        cancel_on_interrupt: true,
        enabled: true,
        hints: Default::default(),
        inputs: Default::default(),
        cancels_siblings: false,
        reuse_instance: false,
        validates_input: true,
        checks_permissions: true,
    }
}

/// The TypeScript type of `schema` (within `root`, for `$ref`s), its
/// object members indented one step past `indent`.
fn ts_type(schema: &Value, root: &Value, indent: &str, depth: usize, budget: &Cell<usize>) -> String {
    if depth > MAX_DEPTH || budget.get() == 0 {
        return "unknown".into();
    }
    let t = ts_type_within(schema, root, indent, depth, budget);
    budget.set(budget.get().saturating_sub(t.len().min(64)));
    t
}

fn ts_type_within(schema: &Value, root: &Value, indent: &str, depth: usize, budget: &Cell<usize>) -> String {
    let Value::Object(s) = schema else {
        // `true` (anything), `false` (nothing).
        return if *schema == Value::Bool(false) { "never".into() } else { "unknown".into() };
    };
    if let Some(reference) = s.get("$ref").and_then(Value::as_str) {
        return match resolve(root, reference) {
            Some(target) => ts_type(target, root, indent, depth + 1, budget),
            None => "unknown".into(),
        };
    }
    if let Some(value) = s.get("const") {
        return literal(value);
    }
    if let Some(Value::Array(values)) = s.get("enum") {
        return union(values.iter().map(literal).collect());
    }
    for (keyword, joiner) in [("anyOf", " | "), ("oneOf", " | "), ("allOf", " & ")] {
        if let Some(Value::Array(parts)) = s.get(keyword) {
            let types: Vec<String> = parts.iter().map(|p| wrap(ts_type(p, root, indent, depth + 1, budget))).collect();
            return if types.is_empty() { "unknown".into() } else { types.join(joiner) };
        }
    }
    let types: Vec<&str> = match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if s.contains_key("properties") => vec!["object"],
        _ => return "unknown".into(),
    };
    union(types.into_iter().map(|t| of_type(t, s, root, indent, depth, budget)).collect())
}

fn of_type(
    t: &str,
    s: &serde_json::Map<String, Value>,
    root: &Value,
    indent: &str,
    depth: usize,
    budget: &Cell<usize>,
) -> String {
    match t {
        "string" => "string".into(),
        "number" | "integer" => "number".into(),
        "boolean" => "boolean".into(),
        "null" => "null".into(),
        "array" => match (s.get("prefixItems"), s.get("items")) {
            (Some(Value::Array(items)), _) => {
                let types: Vec<String> = items.iter().map(|i| ts_type(i, root, indent, depth + 1, budget)).collect();
                format!("[{}]", types.join(", "))
            }
            (_, Some(items)) => format!("{}[]", wrap(ts_type(items, root, indent, depth + 1, budget))),
            _ => "unknown[]".into(),
        },
        "object" => object(s, root, indent, depth, budget),
        _ => "unknown".into(),
    }
}

fn object(
    s: &serde_json::Map<String, Value>,
    root: &Value,
    indent: &str,
    depth: usize,
    budget: &Cell<usize>,
) -> String {
    let required: Vec<&str> = match s.get("required") {
        Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let properties = match s.get("properties") {
        Some(Value::Object(p)) => p,
        _ => {
            return match s.get("additionalProperties") {
                Some(Value::Bool(false)) => "{}".into(),
                Some(extra @ Value::Object(_)) => {
                    format!("Record<string, {}>", ts_type(extra, root, indent, depth + 1, budget))
                }
                _ => "Record<string, unknown>".into(),
            };
        }
    };
    let inner = format!("{indent}  ");
    let mut out = String::from("{\n");
    for (name, property) in properties {
        if budget.get() == 0 {
            let _ = writeln!(out, "{inner}[key: string]: unknown;");
            break;
        }
        let before = out.len();
        if let Some(description) = property.get("description").and_then(Value::as_str) {
            let line = first_line(description);
            if !line.is_empty() {
                let _ = writeln!(out, "{inner}/** {} */", doc(&line));
            }
        }
        let optional = if required.contains(&name.as_str()) { "" } else { "?" };
        let _ =
            writeln!(out, "{inner}{}{optional}: {};", key(name), ts_type(property, root, &inner, depth + 1, budget));
        budget.set(budget.get().saturating_sub(out.len() - before));
    }
    if let Some(extra @ Value::Object(_)) = s.get("additionalProperties") {
        let _ = writeln!(out, "{inner}[key: string]: {};", ts_type(extra, root, &inner, depth + 1, budget));
    }
    out.push_str(indent);
    out.push('}');
    out
}

/// A local `$ref` (`#/$defs/Name`, `#/definitions/Name`, any JSON pointer).
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    root.pointer(reference.strip_prefix('#')?)
}

fn literal(value: &Value) -> String {
    match value {
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
        _ => "unknown".into(),
    }
}

fn union(mut types: Vec<String>) -> String {
    types.dedup();
    match types.len() {
        0 => "never".into(),
        _ => types.join(" | "),
    }
}

/// `t` parenthesized when it is a union or intersection (inside `[]`, `&`).
fn wrap(t: String) -> String {
    if (t.contains(" | ") || t.contains(" & ")) && !t.starts_with('{') { format!("({t})") } else { t }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str, prompt: &str, input: Value, output: Option<Value>) -> ToolSpec {
        ToolSpec { description: "short".into(), prompt: prompt.into(), output_schema: output, ..bare_spec(name, input) }
    }

    #[test]
    fn a_tool_is_declared_from_its_schema() {
        let read = spec(
            "Read",
            "\nReads a file.\n\nMore lines the declaration leaves out.",
            json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "The absolute path\nwrapped here.\n\nLeft out."},
                    "limit": {"type": ["number", "null"]},
                    "mode": {"enum": ["a", "b"]},
                    "tags": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                    "nested": {"$ref": "#/$defs/Nested"},
                    "map": {"type": "object", "additionalProperties": {"type": "boolean"}},
                    "-weird key": {"const": 3},
                },
                "required": ["file_path"],
                "$defs": {"Nested": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
            }),
            None,
        );
        assert_eq!(
            declaration(&read, "  "),
            r#"  /** Reads a file. */
  Read(input: {
    /** The absolute path wrapped here. */
    file_path: string;
    limit?: number | null;
    mode?: "a" | "b";
    tags?: (string | number)[];
    nested?: {
      x: number;
    };
    map?: Record<string, boolean>;
    "-weird key"?: 3;
  }): Promise<string>;
"#
        );
    }

    #[test]
    fn structured_results_and_odd_names() {
        let out = json!({"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]});
        let tool = spec("mcp__srv__get-item", "Gets */ things", json!({"type": "object"}), Some(out));
        assert_eq!(
            declaration(&tool, ""),
            "/** Gets *\\/ things */\n\"mcp__srv__get-item\"(input: Record<string, unknown>): Promise<{\n  count: number;\n}>;\n"
        );
    }

    #[test]
    fn deep_or_cyclic_schemas_end() {
        let cyclic = json!({"$ref": "#"});
        assert_eq!(ts_type(&cyclic, &cyclic, "", 0, &Cell::new(MAX_DECLARATION)), "unknown");
        // References that fan out would expand ten to the eighth times: the
        // budget ends it, small.
        let mut defs = serde_json::Map::new();
        for level in 0..9 {
            let next = json!({"$ref": format!("#/$defs/L{}", level + 1)});
            let properties: serde_json::Map<String, Value> =
                (0..10).map(|i| (format!("p{i}_{}", "x".repeat(100)), next.clone())).collect();
            defs.insert(format!("L{level}"), json!({"type": "object", "properties": properties}));
        }
        let fan = json!({"$ref": "#/$defs/L0", "$defs": defs});
        let tool = spec("Fan", "Fans out.", fan, None);
        let declared = declaration(&tool, "");
        assert!(declared.len() < 2 * MAX_DECLARATION, "{}", declared.len());
        let many: Vec<ToolSpec> =
            (0..100).map(|i| spec(&format!("T{i}"), "x", tool.input_schema.clone(), None)).collect();
        let refs: Vec<&ToolSpec> = many.iter().collect();
        let prompt = script_prompt("Own.", &refs, &[], "ToolSearch");
        assert!(prompt.len() < MAX_DECLARATIONS + 3 * MAX_DECLARATION, "{}", prompt.len());
        assert!(prompt.contains("not declared here for room") && prompt.contains("T99"));
        let long = format!("{} Second sentence.", "word ".repeat(60).trim_end());
        assert_eq!(first_line(&format!("{long} Third.")), format!("{}…", &long[..MAX_DOC]));
        let sentences = "First one is here. ".repeat(20);
        assert!(first_line(&sentences).ends_with("here.") && first_line(&sentences).len() <= MAX_DOC);
        let prompt = script_prompt("Own.", &[], &["Later"], "ToolSearch");
        assert!(
            prompt.starts_with("Own.\n\nThe tools") && prompt.contains("Deferred tools") && prompt.contains("Later")
        );
    }
}
