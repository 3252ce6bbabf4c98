//! The floors the hot paths are compared with: the least that can be done
//! for the same work, counted the same way.
//!
//! - [`jsonrpc`]: a bare JSON-RPC loop on stdio (one thread, no SDK, no
//!   sandbox) answering each `tools/call` by reading the file it names and
//!   sending the very result toolhost sends for it (recorded beforehand).
//! - [`guest`]: bare wasmtime (the host's code-relevant engine settings, the
//!   on-demand allocator, no pipeline): for each input line, a fresh
//!   instance of a tool component and one call of its `call` export. Every
//!   contract import is answered with its type's empty value; WASI is
//!   wasmtime-wasi's, with the workspace preopened as toolhost preopens it,
//!   and wasi:http is linked as toolhost links it, refusing every request.

use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::path::Path;
use wasmtime::component::types::{ComponentItem, Type};
use wasmtime::component::{Component, Linker, ResourceTable, ResourceType, Val};
use wasmtime::{Config, Engine, OptLevel, Store};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// The floor of a stdio MCP server (`common::floor_server`): each
/// `tools/call` reads the file it names and answers with `reply`, the
/// `result` toolhost sends for it.
pub fn jsonrpc(reply: &Path) {
    let reply: Value = serde_json::from_slice(&std::fs::read(reply).expect("the recorded reply")).expect("JSON");
    super::common::floor_server("Read", |arguments| {
        match std::fs::read_to_string(arguments["file_path"].as_str().unwrap_or_default()) {
            Ok(text) => {
                std::hint::black_box(text);
                reply.clone()
            }
            Err(e) => json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true}),
        }
    });
}

/// The engine of the guest floor: the settings of toolhost's that change
/// the code (component model, epoch interruption, optimized Cranelift, no
/// component-model async), the on-demand allocator. They repeat the core's
/// `sandbox::base_config` (which keeps wasmtime out of the core's API);
/// `cargo counts` fails when the code they make is not toolhost's
/// ([`same_code_cached`]).
fn engine() -> Engine {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.concurrency_support(false);
    config.epoch_interruption(true);
    config.memory_init_cow(true);
    config.cranelift_opt_level(OptLevel::Speed);
    Engine::new(&config).expect("an engine")
}

/// Compiles `wasm` for the guest floor into `out` (natively, before the
/// counted runs: compiling under valgrind would take minutes).
pub fn precompile(wasm: &Path, out: &Path) {
    let bytes = std::fs::read(wasm).unwrap_or_else(|e| panic!("{}: {e}", wasm.display()));
    let compiled = engine().precompile_component(&bytes).expect("compiling the component");
    std::fs::write(out, compiled).expect("writing the compiled component");
}

/// Whether `compiled` (the floor's compile of a component) is byte for byte
/// one of the compiled components in `dir` (toolhost's compile cache):
/// wasmtime compiles deterministically, so equal bytes mean the floor's
/// engine made the code toolhost runs, and any code-relevant setting that
/// differs makes them differ.
pub fn same_code_cached(compiled: &[u8], dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    entries.flatten().any(|entry| {
        entry.metadata().is_ok_and(|m| m.len() == compiled.len() as u64)
            && std::fs::read(entry.path()).is_ok_and(|bytes| bytes == compiled)
    })
}

struct State {
    wasi: WasiCtx,
    http: wasmtime_wasi_http::WasiHttpCtx,
    refuse: Refuse,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl wasmtime_wasi_http::WasiHttpView for State {
    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        wasmtime_wasi_http::WasiHttpCtxView { ctx: &mut self.http, hooks: &mut self.refuse, table: &mut self.table }
    }
}

/// The floor sends no HTTP request.
struct Refuse;

type Sent = wasmtime_wasi_http::Result<(
    hyper::Response<wasmtime_wasi_http::WasiBody>,
    Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
)>;

impl wasmtime_wasi_http::WasiHttpHooks for Refuse {
    fn send_request(
        &mut self,
        _request: hyper::Request<wasmtime_wasi_http::WasiBody>,
        _options: Option<wasmtime_wasi_http::RequestOptions>,
        _done: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> Box<dyn Future<Output = Sent> + Send> {
        Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) })
    }
}

/// A value of type `ty` with nothing in it (the first case of a variant or
/// enum, `ok` of a result); `None` for a resource.
fn empty(ty: &Type) -> Option<Val> {
    Some(match ty {
        Type::Bool => Val::Bool(false),
        Type::S8 => Val::S8(0),
        Type::U8 => Val::U8(0),
        Type::S16 => Val::S16(0),
        Type::U16 => Val::U16(0),
        Type::S32 => Val::S32(0),
        Type::U32 => Val::U32(0),
        Type::S64 => Val::S64(0),
        Type::U64 => Val::U64(0),
        Type::Float32 => Val::Float32(0.0),
        Type::Float64 => Val::Float64(0.0),
        Type::Char => Val::Char('\0'),
        Type::String => Val::String(String::new()),
        Type::List(_) => Val::List(Vec::new()),
        Type::Map(_) => Val::Map(Vec::new()),
        Type::Record(r) => {
            Val::Record(r.fields().map(|f| Some((f.name.to_string(), empty(&f.ty)?))).collect::<Option<_>>()?)
        }
        Type::Tuple(t) => Val::Tuple(t.types().map(|t| empty(&t)).collect::<Option<_>>()?),
        Type::Variant(v) => {
            let case = v.cases().next()?;
            Val::Variant(
                case.name.to_string(),
                match case.ty {
                    Some(t) => Some(Box::new(empty(&t)?)),
                    None => None,
                },
            )
        }
        Type::Enum(e) => Val::Enum(e.names().next()?.to_string()),
        Type::Option(_) => Val::Option(None),
        Type::Result(r) => Val::Result(Ok(match r.ok() {
            Some(t) => Some(Box::new(empty(&t)?)),
            None => None,
        })),
        Type::Flags(_) => Val::Flags(Vec::new()),
        _ => return None,
    })
}

/// The call context of the contract (any version): empty, but for the ids,
/// the working directory and the directories a tool may use.
fn context(ty: &Type, workspace: &str) -> Val {
    let Some(Val::Record(fields)) = empty(ty) else { panic!("the call context is a record: {ty:?}") };
    Val::Record(
        fields
            .into_iter()
            .map(|(name, value)| {
                let value = match name.as_str() {
                    "tool-use-id" => Val::String("toolu_floor".into()),
                    "session-id" => Val::String("floor".into()),
                    "cwd" => Val::String(workspace.into()),
                    "working-dirs" => Val::List(vec![Val::String(workspace.into())]),
                    _ => value,
                };
                (name, value)
            })
            .collect(),
    )
}

/// The guest floor: `cwasm` (from [`precompile`]) serving the input lines
/// of stdin, a fresh instance for each, the workspace `workspace`.
pub fn guest(cwasm: &Path, workspace: &Path) {
    let engine = engine();
    // SAFETY: the file was written by `precompile` of this benchmark run.
    let component = unsafe { Component::deserialize_file(&engine, cwasm) }.expect("the compiled component");
    let mut linker: Linker<State> = Linker::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).expect("WASI");
    // wasi:http too, as toolhost links it for every tool (a SpiderMonkey
    // component imports it for `fetch`).
    wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker).expect("wasi:http");
    for (name, item) in component.component_type().imports(&engine) {
        let ComponentItem::ComponentInstance(instance) = item.ty else { continue };
        if name.starts_with("wasi:") {
            continue;
        }
        let mut host = linker.instance(name).expect("an import instance");
        for (export, item) in instance.exports(&engine) {
            match item.ty {
                ComponentItem::ComponentFunc(_) => host
                    .func_new(export, |_store, ty, _params, results| {
                        for (slot, ty) in results.iter_mut().zip(ty.results()) {
                            *slot = empty(&ty).ok_or_else(|| wasmtime::format_err!("no empty value of {ty:?}"))?;
                        }
                        Ok(())
                    })
                    .expect("a stub"),
                ComponentItem::Resource(_) => {
                    host.resource(export, ResourceType::host::<()>(), |_, _| Ok(())).expect("a resource")
                }
                _ => {}
            }
        }
    }
    let pre = linker.instantiate_pre(&component).expect("linking");
    let interface = component
        .component_type()
        .exports(&engine)
        .map(|(name, _)| name.to_string())
        .find(|name| name.starts_with("toolhost:tool/tool@"))
        .expect("a tool export");
    let ws = workspace.to_string_lossy().into_owned();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in std::io::stdin().lock().lines() {
        let Ok(input) = line else { return };
        let mut wasi = WasiCtxBuilder::new();
        wasi.preopened_dir(workspace, &ws, FsPerms::ReadWrite).expect("preopen");
        let mut store = Store::new(
            &engine,
            State {
                wasi: wasi.build(),
                http: wasmtime_wasi_http::WasiHttpCtx::new(),
                refuse: Refuse,
                table: ResourceTable::new(),
            },
        );
        store.set_epoch_deadline(u64::MAX / 2);
        let instance = pre.instantiate(&mut store).expect("an instance");
        let tool = instance.get_export_index(&mut store, None, &interface).expect("the tool export");
        let call = instance.get_export_index(&mut store, Some(&tool), "call").expect("call");
        let call = instance.get_func(&mut store, call).expect("call is a function");
        let ty = call.ty(&store);
        let ctx_ty = ty.params().nth(1).expect("call(input, ctx)").1;
        let args = [Val::String(input), context(&ctx_ty, &ws)];
        let mut results = [Val::Bool(false)];
        call.call(&mut store, &args, &mut results).expect("the call");
        // A floor that failed would count less than the work: it must not.
        let Val::Result(Ok(_)) = &results[0] else { panic!("the call failed: {:?}", results[0]) };
        if writeln!(out, "{{\"ok\":true}}").and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}
