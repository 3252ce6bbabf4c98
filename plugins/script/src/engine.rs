//! The script's JavaScript runtime: Boa, with an event loop of our own. The
//! program runs as the body of an async function (so `await` and `return`
//! work at its top level, and its last expression is its result); a tool
//! call starts at once on the host and gives a pending promise; whenever
//! the engine has nothing left to run, the loop waits on the host for the
//! next call to end and settles its promise.

use boa_engine::builtins::promise::PromiseState;
use boa_engine::object::builtins::JsPromise;
use boa_engine::property::Attribute;
use boa_engine::{Context, JsError, JsNativeError, JsResult, JsString, JsValue, NativeFunction, Source, js_string};
use std::cell::RefCell;
use std::collections::HashMap;

/// What the host does for the script (natively in tests: a fake).
pub trait Calls {
    /// Starts a call; its number, or why it was refused.
    fn start(&mut self, name: &str, input: &str) -> Result<u32, String>;
    /// Waits for a started call to end; `None` when none is left.
    fn next(&mut self) -> Option<Finished>;
}

/// A call that ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Finished {
    pub id: u32,
    pub is_error: bool,
    pub text: String,
    /// JSON text.
    pub structured: Option<String>,
}

/// Most console output kept, in bytes; the rest is dropped with a note.
pub const MAX_CONSOLE: usize = 64 << 10;
/// The largest result a script may return, in bytes of its text.
pub const MAX_RESULT: usize = 1 << 20;
/// Nested calls deeper than this throw a RangeError (before the guest's
/// own stack runs out).
pub const MAX_RECURSION: usize = 400;

/// How a script ended.
#[derive(Debug, PartialEq)]
pub struct Outcome {
    /// The result (`Ok(None)`: it returned nothing), or why it failed.
    pub result: Result<Option<Value>, String>,
    /// What it printed with `console.*`, within [`MAX_CONSOLE`].
    pub console: String,
    /// Console output beyond the cap was dropped.
    pub console_cut: bool,
}

/// A script's result: text as it is, anything else as JSON.
#[derive(Debug, PartialEq)]
pub enum Value {
    Text(String),
    Json(serde_json::Value),
}

/// The state the native functions share during one run (the runtime is
/// single-threaded: one script per instance, one instance per call).
struct Shared {
    /// Taken out while a call into it runs (no borrow is held across it).
    calls: Option<Box<dyn Calls>>,
    /// Each started call's promise resolvers.
    pending: HashMap<u32, boa_engine::builtins::promise::ResolvingFunctions>,
    console: String,
    console_cut: bool,
}

thread_local! {
    static SHARED: RefCell<Option<Shared>> = const { RefCell::new(None) };
}

/// Runs `code` with `calls` serving its tool calls; gives `calls` back.
pub fn run(code: &str, calls: Box<dyn Calls>) -> (Outcome, Box<dyn Calls>) {
    SHARED.with(|s| {
        *s.borrow_mut() =
            Some(Shared { calls: Some(calls), pending: HashMap::new(), console: String::new(), console_cut: false })
    });
    let result = evaluate(code);
    let shared = SHARED.with(|s| s.borrow_mut().take()).expect("set above");
    let outcome = Outcome { result, console: shared.console, console_cut: shared.console_cut };
    (outcome, shared.calls.expect("given back after each use"))
}

fn with_shared<T>(f: impl FnOnce(&mut Shared) -> T) -> T {
    SHARED.with(|s| f(s.borrow_mut().as_mut().expect("a script is running")))
}

/// Calls into the host, with no borrow of the shared state held meanwhile.
fn with_calls<T>(f: impl FnOnce(&mut dyn Calls) -> T) -> T {
    let mut calls = with_shared(|s| s.calls.take()).expect("not in use");
    let out = f(&mut *calls);
    with_shared(|s| s.calls = Some(calls));
    out
}

fn evaluate(code: &str) -> Result<Option<Value>, String> {
    let body = with_last_expression_returned(code)?;
    let mut context = Context::default();
    context.runtime_limits_mut().set_recursion_limit(MAX_RECURSION);
    install(&mut context).map_err(|e| format!("the script runtime could not start: {e}"))?;
    let wrapped = format!("(async () => {{\n{body}\n}})()");
    let value = context.eval(Source::from_bytes(&wrapped)).map_err(|e| thrown(&e, &mut context))?;
    let promise = value
        .as_object()
        .and_then(|o| JsPromise::from_object(o.clone()).ok())
        .ok_or("the script's function did not give a promise")?;
    loop {
        context.run_jobs().map_err(|e| thrown(&e, &mut context))?;
        let ended = match promise.state() {
            PromiseState::Fulfilled(value) => Some(result_value(&value, &mut context)),
            PromiseState::Rejected(reason) => {
                Some(Err(format!("The script threw {}", describe(&reason, &mut context))))
            }
            PromiseState::Pending => None,
        };
        if let Some(ended) = ended {
            // Calls it started and did not await end before it does (what
            // they settle still runs: a `.then(console.log)` prints).
            while let Some(finished) = with_calls(|calls| calls.next()) {
                if settle(finished, &mut context).and_then(|()| context.run_jobs()).is_err() {
                    break;
                }
            }
            return ended;
        }
        // Nothing left to run: wait for a tool call to end.
        let Some(finished) = with_calls(|calls| calls.next()) else {
            return Err("The script waits on a promise that nothing will settle (no tool call is running): \
                        await only tool calls and promises they settle."
                .into());
        };
        settle(finished, &mut context).map_err(|e| thrown(&e, &mut context))?;
    }
}

/// Settles the promise of the call that ended: its value, or a thrown
/// `ToolError`.
fn settle(finished: Finished, context: &mut Context) -> JsResult<()> {
    let Some(resolvers) = with_shared(|s| s.pending.remove(&finished.id)) else { return Ok(()) };
    if finished.is_error {
        let error = JsNativeError::error().with_message(finished.text.clone()).into_opaque(context);
        error.set(js_string!("name"), js_string!("ToolError"), false, context)?;
        error.set(js_string!("isToolError"), true, false, context)?;
        resolvers.reject.call(&JsValue::undefined(), &[error.into()], context)?;
        return Ok(());
    }
    let value = match finished.structured.as_deref().map(serde_json::from_str::<serde_json::Value>) {
        Some(Ok(json)) => JsValue::from_json(&json, context)?,
        _ => JsValue::from(JsString::from(finished.text.as_str())),
    };
    resolvers.resolve.call(&JsValue::undefined(), &[value], context)?;
    Ok(())
}

/// The script's value as its result.
fn result_value(value: &JsValue, context: &mut Context) -> Result<Option<Value>, String> {
    if value.is_undefined() {
        return Ok(None);
    }
    let result = match value.as_string() {
        Some(text) => Value::Text(text.to_std_string_escaped()),
        None => match value.to_json(context) {
            Ok(Some(json)) => Value::Json(json),
            Ok(None) => return Ok(None),
            Err(e) => {
                return Err(format!(
                    "The script's result cannot be turned into JSON ({}): return text, or plain objects, arrays, \
                     numbers and booleans.",
                    thrown(&e, context)
                ));
            }
        },
    };
    let size = match &result {
        Value::Text(t) => t.len(),
        Value::Json(j) => j.to_string().len(),
    };
    if size > MAX_RESULT {
        return Err(format!(
            "The script's result is {size} bytes; a script may return at most {MAX_RESULT}. Return less: filter, \
             count or summarize in the script."
        ));
    }
    Ok(Some(result))
}

/// An exception thrown out of the engine, as the model reads it.
fn thrown(error: &JsError, context: &mut Context) -> String {
    match error.try_native(context) {
        Ok(native) if native.is_syntax() => format!("The script does not parse: {}", native.message()),
        Ok(_) => match error.clone().into_opaque(context) {
            Ok(value) => format!("The script threw {}", describe(&value, context)),
            Err(e) => format!("The script failed: {e}"),
        },
        // The engine's own limits (recursion, stack) cannot be caught.
        Err(_) if error.to_string().contains("RuntimeLimit") => format!(
            "The script stopped: {error} (calls nested deeper than {MAX_RECURSION} levels, or a stack that \
             deep)."
        ),
        Err(_) => format!("The script failed: {error}"),
    }
}

/// A thrown value, in words.
fn describe(value: &JsValue, context: &mut Context) -> String {
    if let Some(object) = value.as_object()
        && object.is::<boa_engine::builtins::error::Error>()
    {
        let get = |key: JsString, context: &mut Context| {
            object.get(key, context).ok().filter(|v| !v.is_undefined()).map(|v| text_of(&v, context))
        };
        let name = get(js_string!("name"), context).unwrap_or_else(|| "Error".into());
        let message = get(js_string!("message"), context).unwrap_or_default();
        return format!("{name}: {message}");
    }
    format!("a value that is not an Error: {}", text_of(value, context))
}

/// A value as `console.log` prints it: text as it is, anything else as JSON
/// where it can be, else as the engine shows it.
fn text_of(value: &JsValue, context: &mut Context) -> String {
    if let Some(text) = value.as_string() {
        return text.to_std_string_escaped();
    }
    match value.to_json(context) {
        Ok(Some(json)) if !value.is_callable() => json.to_string(),
        _ => value.display().to_string(),
    }
}

/// The globals: `tools` (any property is a function calling the tool of
/// that name) and `console`.
fn install(context: &mut Context) -> JsResult<()> {
    let call = NativeFunction::from_fn_ptr(call_tool).to_js_function(context.realm());
    context.register_global_property(js_string!("__toolhostCall"), call, Attribute::empty())?;
    let console = boa_engine::object::ObjectInitializer::new(context)
        .function(NativeFunction::from_fn_ptr(console_log), js_string!("log"), 0)
        .function(NativeFunction::from_fn_ptr(console_log), js_string!("info"), 0)
        .function(NativeFunction::from_fn_ptr(console_log), js_string!("warn"), 0)
        .function(NativeFunction::from_fn_ptr(console_log), js_string!("error"), 0)
        .function(NativeFunction::from_fn_ptr(console_log), js_string!("debug"), 0)
        .build();
    context.register_global_property(js_string!("console"), console, Attribute::all())?;
    // `tools.NAME(input)`: a proxy, so tools loaded after the prompt was
    // written are callable too; `then` and symbols are not tools (a promise
    // resolved with `tools` must not mistake it for a thenable).
    context.eval(Source::from_bytes(
        r#"Object.defineProperty(globalThis, "tools", { value: new Proxy(Object.freeze(Object.create(null)), {
            get(_, name) {
                if (typeof name !== "string" || name === "then") return undefined;
                return (input = {}) => __toolhostCall(name, input);
            },
        }), enumerable: false });"#,
    ))?;
    Ok(())
}

/// `__toolhostCall(name, input)`: starts the call, gives its promise.
fn call_tool(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let name = args.first().and_then(JsValue::as_string).map(|s| s.to_std_string_escaped()).unwrap_or_default();
    let input = args.get(1).cloned().unwrap_or_default();
    let input = match input.to_json(context)? {
        Some(json @ serde_json::Value::Object(_)) => json,
        _ => {
            return Err(JsNativeError::typ()
                .with_message(format!("tools.{name}(input): input must be an object of the tool's parameters"))
                .into());
        }
    };
    let started = with_calls(|calls| calls.start(&name, &input.to_string()));
    let (promise, resolvers) = JsPromise::new_pending(context);
    match started {
        Ok(id) => with_shared(|s| s.pending.insert(id, resolvers)).map_or((), drop),
        Err(reason) => {
            let error = JsNativeError::error().with_message(reason).into_opaque(context);
            error.set(js_string!("name"), js_string!("ToolError"), false, context)?;
            resolvers.reject.call(&JsValue::undefined(), &[error.into()], context)?;
        }
    }
    Ok(promise.into())
}

/// `console.*`: one line of the values, space-separated, kept within
/// [`MAX_CONSOLE`].
fn console_log(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let line: Vec<String> = args.iter().map(|v| text_of(v, context)).collect();
    let line = line.join(" ");
    with_shared(|s| {
        if s.console_cut {
            return;
        }
        if s.console.len() + line.len() + 1 > MAX_CONSOLE {
            let room = MAX_CONSOLE.saturating_sub(s.console.len());
            let mut end = room.min(line.len());
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            s.console.push_str(&line[..end]);
            s.console_cut = true;
            return;
        }
        s.console.push_str(&line);
        s.console.push('\n');
    });
    Ok(JsValue::undefined())
}

/// `code` with its last statement, when it is an expression, returned (so
/// the script's value is its last expression, as in a REPL). Code that does
/// not parse is left to the engine, which says why.
///
/// The parser's spans are not exact at either end (a call's starts at its
/// arguments, `a[0]`'s ends before the `]`), so they only narrow the search:
/// the expression ends where the code does (before a final `;`) or at a
/// later `;`, and starts at the beginning or after a `;`, a line break or a
/// `}`. Those places are tried, nearest first, until the code with
/// `return (…)` there has as many statements as before, the last a return.
pub fn with_last_expression_returned(code: &str) -> Result<String, String> {
    use boa_engine::ast::{Spanned, Statement, StatementListItem};
    let Some(body) = parse_body(code) else { return Ok(code.to_string()) };
    let statements = body.statements().len();
    let Some(StatementListItem::Statement(statement)) = body.statements().last() else {
        return Ok(code.to_string());
    };
    let Statement::Expression(expression) = statement.as_ref() else {
        return Ok(code.to_string());
    };
    let span = expression.span();
    let latest = offset(code, span.start()).unwrap_or(0);
    let trimmed = code.trim_end();
    let mut ends = vec![trimmed.strip_suffix(';').unwrap_or(trimmed).len()];
    ends.extend(code.char_indices().filter(|&(i, c)| c == ';' && i > latest).map(|(i, _)| i));
    for &end in ends.iter().take(MAX_TRIES) {
        let starts = (0..=latest.min(end))
            .rev()
            .filter(|&p| p == 0 || (code.is_char_boundary(p) && matches!(code.as_bytes()[p - 1], b';' | b'\n' | b'}')))
            .take(MAX_TRIES);
        for start in starts {
            let candidate = format!("{}return ({}\n){}", &code[..start], &code[start..end], &code[end..]);
            let Some(body) = parse_body(&candidate) else { continue };
            let returns = matches!(
                body.statements().last(),
                Some(StatementListItem::Statement(s)) if matches!(s.as_ref(), Statement::Return(_))
            );
            if returns && body.statements().len() == statements {
                return Ok(candidate);
            }
        }
    }
    Ok(code.to_string())
}

/// Places tried for each end of the last expression.
const MAX_TRIES: usize = 64;

/// `code` parsed as the body of an async function (as the script runs).
pub fn parse_body(code: &str) -> Option<boa_engine::ast::function::FunctionBody> {
    let mut interner = boa_engine::interner::Interner::default();
    let mut parser = boa_engine::parser::Parser::new(Source::from_bytes(code));
    parser.parse_function_body(&mut interner, false, true).ok()
}

/// The byte offset of a parser position (1-based line and column, columns
/// counted in characters).
fn offset(code: &str, at: boa_engine::ast::Position) -> Option<usize> {
    let mut line_start = 0;
    for _ in 1..at.line_number() {
        line_start += code[line_start..].find('\n')? + 1;
    }
    let line = &code[line_start..];
    let column = at.column_number() as usize - 1;
    let within = line.char_indices().map(|(i, _)| i).chain(std::iter::once(line.len())).nth(column)?;
    Some(line_start + within)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// Tools answered from a table: `echo` returns its input as text, `json`
    /// as structured content, `fail` fails; calls end in the order started.
    #[derive(Default)]
    struct Fake {
        started: std::rc::Rc<RefCell<Vec<(String, String)>>>,
        queue: VecDeque<Finished>,
        budget: Option<usize>,
    }

    impl Calls for Fake {
        fn start(&mut self, name: &str, input: &str) -> Result<u32, String> {
            let mut started = self.started.borrow_mut();
            if self.budget.is_some_and(|b| started.len() >= b) {
                return Err("too many tool calls".into());
            }
            let id = started.len() as u32;
            started.push((name.into(), input.into()));
            let (is_error, text, structured) = match name {
                "echo" => (false, input.to_string(), None),
                "json" => (false, "as text".to_string(), Some(input.to_string())),
                _ => (true, format!("No such tool available: {name}"), None),
            };
            self.queue.push_back(Finished { id, is_error, text, structured });
            Ok(id)
        }

        fn next(&mut self) -> Option<Finished> {
            self.queue.pop_front()
        }
    }

    /// The outcome, and the calls started.
    fn run_fake(code: &str) -> (Outcome, Vec<(String, String)>) {
        let fake = Fake::default();
        let started = fake.started.clone();
        let (outcome, _) = run(code, Box::new(fake));
        let started = started.borrow().clone();
        (outcome, started)
    }

    fn json(v: serde_json::Value) -> Result<Option<Value>, String> {
        Ok(Some(Value::Json(v)))
    }

    #[test]
    fn results_are_returned_or_the_last_expression() {
        assert_eq!(run_fake("return 1 + 1").0.result, json(serde_json::json!(2)));
        assert_eq!(run_fake("const x = 2;\nx * 21").0.result, json(serde_json::json!(42)));
        assert_eq!(run_fake("let a = 1\na\n+ 2").0.result, json(serde_json::json!(3)));
        assert_eq!(run_fake("'é' + 'x' // done").0.result, Ok(Some(Value::Text("éx".into()))));
        assert_eq!(run_fake("const o = {a: [1, 'b']}; o").0.result, json(serde_json::json!({"a": [1, "b"]})));
        assert_eq!(run_fake("let x = 1;").0.result, Ok(None));
        assert_eq!(run_fake("if (true) { 5 }").0.result, Ok(None));
        assert_eq!(run_fake("function f(n) { return n * 2 } f(21)").0.result, json(serde_json::json!(42)));
        assert_eq!(run_fake("const f = (x) => x\nf(1)\n[0]").0.result, Ok(None), "f(1)[0]: one statement");
        assert_eq!(run_fake("let v = [7]\nv\n[0]").0.result, json(serde_json::json!(7)));
        assert_eq!(run_fake("x = 1 // set; y").0.result, json(serde_json::json!(1)));
        assert_eq!(run_fake("await Promise.resolve(3)").0.result, json(serde_json::json!(3)));
        assert_eq!(run_fake("let w = 2; w * 2; // four").0.result, json(serde_json::json!(4)));
        assert_eq!(run_fake("[1, 2].map((x) => x + 1)\n").0.result, json(serde_json::json!([2, 3])));
    }

    #[test]
    fn tools_are_awaited_and_run_together() {
        let (outcome, fake) =
            run_fake("const [a, b] = await Promise.all([tools.echo({x: 1}), tools.json({y: [2]})]);\nreturn {a, b};");
        assert_eq!(outcome.result, json(serde_json::json!({"a": "{\"x\":1}", "b": {"y": [2]}})));
        assert_eq!(fake.len(), 2, "both started before either was awaited");
    }

    #[test]
    fn tool_errors_are_exceptions() {
        let (outcome, _) = run_fake(
            "try { await tools.Nope({}) } catch (e) { return [e.name, e.message, e instanceof Error, e.isToolError] }",
        );
        assert_eq!(outcome.result, json(serde_json::json!(["ToolError", "No such tool available: Nope", true, true])));
        let (outcome, _) = run_fake("await tools.Nope({})");
        assert_eq!(outcome.result, Err("The script threw ToolError: No such tool available: Nope".into()));
        let (outcome, _) = run_fake("await tools.echo('not an object')");
        assert!(outcome.result.unwrap_err().contains("input must be an object"));
        let fake = Fake { budget: Some(1), ..Default::default() };
        let code = "await tools.echo({}); try { await tools.echo({}) } catch (e) { return e.message }";
        let (outcome, _) = run(code, Box::new(fake));
        assert_eq!(outcome.result, Ok(Some(Value::Text("too many tool calls".into()))));
    }

    #[test]
    fn failures_say_what_happened() {
        assert!(run_fake("let = ;").0.result.unwrap_err().starts_with("The script does not parse"));
        assert_eq!(run_fake("throw new TypeError('bad')").0.result, Err("The script threw TypeError: bad".into()));
        assert!(run_fake("throw 7").0.result.unwrap_err().contains("not an Error: 7"));
        let deep = run_fake("function f(n) { return f(n + 1) } f(0)").0.result.unwrap_err();
        assert!(deep.contains("nested deeper"), "{deep}");
        let stuck = run_fake("await new Promise(() => {})").0.result.unwrap_err();
        assert!(stuck.contains("nothing will settle"), "{stuck}");
        let big = run_fake("'x'.repeat(2 * 1024 * 1024)").0.result.unwrap_err();
        assert!(big.contains("at most 1048576"), "{big}");
        let cyclic = run_fake("const a = {}; a.a = a; a").0.result.unwrap_err();
        assert!(cyclic.contains("cannot be turned into JSON"), "{cyclic}");
    }

    #[test]
    fn calls_not_awaited_end_before_the_script() {
        let (outcome, started) = run_fake("tools.echo({a: 1}).then((t) => console.log('late', t)); 'done'");
        assert_eq!(outcome.result, Ok(Some(Value::Text("done".into()))));
        assert_eq!(outcome.console, "late {\"a\":1}\n");
        assert_eq!(started.len(), 1);
    }

    #[test]
    fn console_is_captured_and_capped() {
        let (outcome, _) = run_fake("console.log('a', 1, {b: 2}); console.error('c'); 0");
        assert_eq!(outcome.console, "a 1 {\"b\":2}\nc\n");
        assert!(!outcome.console_cut);
        let (outcome, _) = run_fake("for (let i = 0; i < 100000; i++) console.log('line ' + i)");
        assert!(outcome.console_cut && outcome.console.len() <= MAX_CONSOLE);
    }

    #[test]
    fn modern_javascript_runs() {
        let code = r#"
            class A { #x = 1; get x() { return this.#x } }
            const { x } = new A();
            const m = new Map([[1, 'a']]);
            const s = [..."abc"].map((c) => c.toUpperCase()).join("");
            const o = { ...{ p: 1 }, q: x ?? 0, r: m.get(1)?.length };
            async function* gen() { yield 1; yield 2 }
            let sum = 0; for await (const v of gen()) sum += v;
            ({ s, o, sum, re: /(?<w>\w+)/.exec("hi there").groups.w, big: (2n ** 64n).toString() })
        "#;
        assert_eq!(
            run_fake(code).0.result,
            json(
                serde_json::json!({"s": "ABC", "o": {"p": 1, "q": 1, "r": 1}, "sum": 3, "re": "hi", "big": "18446744073709551616"})
            )
        );
    }
}
