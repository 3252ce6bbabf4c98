//! Components that know nothing of toolhost: each function a component
//! exports (at its world's level or in an exported interface) instead of
//! the contract is a tool, its input schema derived from the WIT types of
//! its parameters (`schema`), its input converted with every range checked
//! and its result rendered (`values`), named by the rule in `naming`,
//! described by the WIT docs the component carries (`docs`) or by its
//! signature (the tool's spec is made in `crate::registry`). Such a tool
//! goes through the same pipeline as any other third-party tool: grants,
//! limits, rules, hooks, a fresh instance per call.

pub(crate) mod command;
mod docs;
pub(crate) mod naming;
pub(crate) mod schema;
pub(crate) mod values;
mod wit_type;

use crate::contract::bindings::toolhost::tool::types::{ContentBlock, ErrorKind, ToolError, ToolOutput};
use crate::contract::{Bounds, Wait as _};
use command::Stdio as _;
pub(crate) use docs::Docs;
use serde_json::Value;
use std::sync::Arc;
use wasmtime::AsContextMut;
use wasmtime::component::types::{ComponentFunc, ComponentItem};
use wasmtime::component::{Component, Func, Instance, Val};
pub(crate) use wit_type::WitType;

/// One exported function, served as a tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Function {
    /// The interface export holding it, if not at the world's level.
    pub interface: Option<String>,
    /// Its name in the component.
    pub name: String,
    pub params: Vec<(String, WitType)>,
    pub result: Option<WitType>,
}

/// A component's functions as tools, each with its tool name and doc
/// comment, and what was left out (one line each, for people).
#[derive(Default)]
pub(crate) struct Functions {
    pub tools: Vec<Found>,
    /// Its program's entry point, if it is a WASI command: a tool named by
    /// the operator (a manifest, or the file's name), not by the rule.
    pub command: Option<Arc<Function>>,
    pub left_out: Vec<String>,
}

/// One function a tool is made of.
pub(crate) struct Found {
    /// Its tool name (`naming`).
    pub name: String,
    pub function: Arc<Function>,
    /// Its WIT doc comment, if the component carries it.
    pub doc: Option<String>,
}

/// What a toolchain exports for itself, not a tool: an initializer it
/// calls while building the component (or at its start), by its exact
/// parameters. jco's QuickJS build exports `init(shim, script,
/// entry-path, disable-gc)`; componentize-py an interface `exports` with
/// `init(app-name, symbols, stub-wasi)`; a Wizer-style build a world-level
/// `init: func()`.
fn toolchain_export(interface: Option<&str>, name: &str, func: &ComponentFunc) -> bool {
    const KNOWN: [(Option<&str>, &[&str]); 3] = [
        (None, &["shim", "script", "entry-path", "disable-gc"]),
        (Some("exports"), &["app-name", "symbols", "stub-wasi"]),
        (None, &[]),
    ];
    let params: Vec<&str> = func.params().map(|(n, _)| n).collect();
    name == "init"
        && KNOWN.iter().any(|(i, p)| *i == interface && *p == params.as_slice())
        && (interface.is_some() || !params.is_empty() || func.results().len() == 0)
}

/// Most tools one component is (its other functions are left out).
pub(crate) const MAX_FUNCTIONS: usize = 256;

/// Whether an export is a command's entry point (`wasi:cli/run`).
pub(crate) fn is_command_export(name: &str) -> bool {
    name.starts_with("wasi:cli/run@")
}

/// Whether `func` is WASI's `run: func() -> result` (0.2), or its `async`
/// form (0.3).
fn is_entry_point(func: &ComponentFunc) -> bool {
    use wasmtime::component::types::Type;
    let results: Vec<Type> = func.results().collect();
    func.params().len() == 0 && matches!(results.as_slice(), [Type::Result(r)] if r.ok().is_none() && r.err().is_none())
}

/// The functions `component` exports, as tools, described by `docs`.
pub(crate) fn functions(component: &Component, docs: &Docs) -> Functions {
    let engine = component.engine();
    let mut found: Vec<(Option<String>, String, ComponentFunc)> = Vec::new();
    let mut out = Functions::default();
    for (name, item) in component.component_type().exports(engine) {
        match item.ty {
            ComponentItem::ComponentFunc(func) if toolchain_export(None, name, &func) => {}
            ComponentItem::ComponentFunc(func) => found.push((None, name.to_string(), func)),
            ComponentItem::ComponentInstance(instance) if is_command_export(name) => {
                match instance.exports(engine).find(|(inner, _)| *inner == command::RUN).map(|(_, item)| item.ty) {
                    Some(ComponentItem::ComponentFunc(func)) if is_entry_point(&func) => {
                        out.command = Some(Arc::new(Function {
                            interface: Some(name.to_string()),
                            name: command::RUN.to_string(),
                            params: Vec::new(),
                            result: Some(WitType::Result(None, None)),
                        }))
                    }
                    _ => out.left_out.push(format!("`{name}` is left out: it has no `run: func() -> result`")),
                }
            }
            ComponentItem::ComponentInstance(instance) => {
                for (inner, item) in instance.exports(engine) {
                    match item.ty {
                        ComponentItem::ComponentFunc(func) if toolchain_export(Some(name), inner, &func) => {}
                        ComponentItem::ComponentFunc(func) => {
                            found.push((Some(name.to_string()), inner.to_string(), func))
                        }
                        _ => {}
                    }
                }
            }
            // Types, resources, modules and components are not callable.
            _ => {}
        }
    }
    if found.len() > MAX_FUNCTIONS {
        out.left_out.push(format!(
            "{} functions past the first {MAX_FUNCTIONS} are left out: a component is at most {MAX_FUNCTIONS} tools",
            found.len() - MAX_FUNCTIONS
        ));
        found.truncate(MAX_FUNCTIONS);
    }
    let mut kept = Vec::new();
    for (interface, name, func) in found {
        let label = match &interface {
            Some(i) => format!("`{name}` of `{i}`"),
            None => format!("`{name}`"),
        };
        if name.starts_with('[') {
            out.left_out.push(format!("{label} is left out: it belongs to a resource, which a tool call cannot hold"));
            continue;
        }
        match function(interface, name, &func) {
            Ok(f) => kept.push(f),
            Err(why) => out.left_out.push(format!("{label} is left out: {why}")),
        }
    }
    let places: Vec<naming::Place<'_>> =
        kept.iter().map(|f| naming::Place { interface: f.interface.as_deref(), function: &f.name }).collect();
    let names = naming::names(&places);
    let mut taken: Vec<(String, String)> = Vec::new();
    for (function, tool) in kept.into_iter().zip(names) {
        let signature = function.signature();
        if let Some((_, holder)) = taken.iter().find(|(n, _)| *n == tool) {
            out.left_out.push(format!(
                "`{signature}` is left out: its tool name `{tool}` is taken by `{holder}` of the same component"
            ));
            continue;
        }
        taken.push((tool.clone(), signature.clone()));
        let doc =
            docs.of(function.interface.as_deref().map(naming::interface_name), &function.name).map(str::to_string);
        out.tools.push(Found { name: tool, function: Arc::new(function), doc });
    }
    out
}

/// `func` as a tool's function, or why a tool call cannot carry it.
fn function(interface: Option<String>, name: String, func: &ComponentFunc) -> Result<Function, String> {
    let mut nodes = 0;
    let mut params = Vec::new();
    for (param, ty) in func.params() {
        let ty = WitType::of(&ty, &mut nodes).map_err(|e| format!("its parameter `{param}` is {e}"))?;
        params.push((param.to_string(), ty));
    }
    let result = match func.results().next() {
        Some(ty) => Some(WitType::of(&ty, &mut nodes).map_err(|e| format!("its result is {e}"))?),
        None => None,
    };
    Ok(Function { interface, name, params, result })
}

impl Function {
    /// Whether it is a WASI command's entry point (`command`).
    pub(crate) fn is_command(&self) -> bool {
        self.interface.as_deref().is_some_and(is_command_export)
    }

    /// As WIT writes it: `distance(a: record { lat: f64, lon: f64 }) -> f64`.
    pub(crate) fn signature(&self) -> String {
        let params: Vec<String> = self.params.iter().map(|(n, t)| format!("{n}: {}", t.wit())).collect();
        let result = self.result.as_ref().map(|t| format!(" -> {}", t.wit())).unwrap_or_default();
        format!("{}({}){result}", self.name, params.join(", "))
    }
}

/// A function of a live instance, ready to call.
pub(crate) struct Export {
    func: Func,
    function: Arc<Function>,
    /// Called as a task (the component uses the async ABI).
    concurrent: bool,
}

impl Export {
    /// `function` of `instance`.
    pub(crate) fn find(
        mut store: impl AsContextMut,
        instance: &Instance,
        function: &Arc<Function>,
        concurrent: bool,
    ) -> wasmtime::Result<Export> {
        let parent = match &function.interface {
            Some(i) => Some(
                instance
                    .get_export_index(&mut store, None, i)
                    .ok_or_else(|| wasmtime::format_err!("no `{i}` export"))?,
            ),
            None => None,
        };
        let func = instance
            .get_export_index(&mut store, parent.as_ref(), &function.name)
            .and_then(|index| instance.get_func(&mut store, index))
            .ok_or_else(|| wasmtime::format_err!("no function `{}` exported", function.name))?;
        Ok(Export { func, function: Arc::clone(function), concurrent })
    }

    /// Calls the function with `input` (JSON text of its parameters): its
    /// result, its `err` value as an error, or a fault of the guest.
    pub(crate) fn call<S: AsContextMut<Data: Bounds + command::Stdio>>(
        &self,
        mut store: S,
        input: &str,
    ) -> wasmtime::Result<Result<ToolOutput, ToolError>> {
        let invalid = |message: String| ToolError { kind: ErrorKind::InvalidInput, message };
        let input: Value = match serde_json::from_str(input) {
            Ok(v) => v,
            Err(e) => return Ok(Err(invalid(format!("<tool_use_error>The input is not JSON: {e}</tool_use_error>")))),
        };
        if self.function.is_command() {
            let (args, stdin) = match command::run_of(&input) {
                Ok(run) => run,
                Err(e) => return Ok(Err(invalid(format!("<tool_use_error>{e}</tool_use_error>")))),
            };
            store.as_context_mut().data_mut().start(args, stdin);
            let mut results = [Val::Bool(false)];
            let exit = match self.invoke(&mut store, &[], &mut results) {
                Ok(()) => command::Exit::Returned(matches!(results[0], Val::Result(Ok(_)))),
                // `exit` ends the program where it is: a status, not a fault.
                Err(e) => match e.downcast_ref::<wasmtime_wasi::I32Exit>() {
                    Some(status) => command::Exit::Status(status.0),
                    None => return Err(e),
                },
            };
            return Ok(command::answer(exit, &store.as_context_mut().data().printed()));
        }
        let args = match values::arguments(&self.function.params, &input) {
            Ok(args) => args,
            Err(e) => return Ok(Err(invalid(format!("<tool_use_error>{e}</tool_use_error>")))),
        };
        let mut results = vec![Val::Bool(false); usize::from(self.function.result.is_some())];
        self.invoke(&mut store, &args, &mut results)?;
        Ok(render(self.function.result.as_ref().zip(results.first())))
    }

    /// Calls the function: as a task within the call's limits if the
    /// component uses the async ABI.
    fn invoke<S: AsContextMut<Data: Bounds>>(
        &self,
        mut store: S,
        args: &[Val],
        results: &mut [Val],
    ) -> wasmtime::Result<()> {
        if self.concurrent {
            let stop = store.as_context_mut().data().stop();
            stop.wait(self.func.call_async(&mut store, args, results))?
        } else {
            self.func.call(&mut store, args, results)
        }
    }
}

/// A function's result for the model: a string as it is, any other value
/// as JSON, with structured content (a record itself, anything else as
/// `{"result": value}`); a `result`'s `err` value as the error's text.
fn render(result: Option<(&WitType, &Val)>) -> Result<ToolOutput, ToolError> {
    let Some((ty, value)) = result else { return Ok(text_output("Done (the function returns nothing).".into(), None)) };
    let (ty, value) = match (ty, value) {
        (WitType::Result(ok, err), Val::Result(outcome)) => match outcome {
            Ok(v) => match (ok.as_deref(), v.as_deref()) {
                (Some(ty), Some(v)) => (ty, v),
                _ => return Ok(text_output("Done (the function succeeded and returns nothing more).".into(), None)),
            },
            Err(v) => {
                let message = match (err.as_deref(), v.as_deref()) {
                    (Some(ty), Some(v)) => text(&values::json(v, ty)),
                    _ => "The function failed (its error carries no detail).".into(),
                };
                return Err(ToolError { kind: ErrorKind::InvalidInput, message });
            }
        },
        other => other,
    };
    let json = values::json(value, ty);
    let structured = match ty {
        WitType::Record(_) => json.clone(),
        _ => serde_json::json!({"result": json}),
    };
    Ok(text_output(text(&json), Some(structured.to_string())))
}

/// A string as it is; any other value as JSON.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn text_output(text: String, structured: Option<String>) -> ToolOutput {
    ToolOutput { content: vec![ContentBlock::Text(text)], structured, is_error: false }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_render_as_text_and_structured_content() {
        let ok = render(Some((&WitType::String, &Val::String("21".into())))).unwrap();
        assert!(matches!(ok.content.as_slice(), [ContentBlock::Text(t)] if t == "21"));
        assert_eq!(ok.structured.as_deref(), Some(r#"{"result":"21"}"#));
        let ty = WitType::Result(Some(Box::new(WitType::F64)), Some(Box::new(WitType::String)));
        let err =
            render(Some((&ty, &Val::Result(Err(Some(Box::new(Val::String("unknown city".into())))))))).unwrap_err();
        assert_eq!(err.message, "unknown city");
        let record = WitType::Record(vec![("n".into(), WitType::U8)]);
        let out = render(Some((&record, &Val::Record(vec![("n".into(), Val::U8(3))])))).unwrap();
        assert_eq!(out.structured.as_deref(), Some(r#"{"n":3}"#));
        assert!(matches!(out.content.as_slice(), [ContentBlock::Text(t)] if t == r#"{"n":3}"#));
        assert!(render(None).unwrap().structured.is_none());
    }
}
