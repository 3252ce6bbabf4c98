//! What a component's bytes say before anything is compiled: the names it
//! imports and exports at its top level, and whether it uses the
//! component-model async ABI. Loading checks these first, so a component
//! built against a contract this host cannot serve, or importing what the
//! host does not provide, is refused in a millisecond with each problem
//! named (and, where one is known, its fix), instead of after a compile
//! that can take seconds.

use super::shape::{LOADS_UNRELEASED, ShapeError, Support, Version};
use super::{CONTRACT, PACKAGE};

/// A component's top level, as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outline {
    pub imports: Vec<String>,
    pub exports: Vec<String>,
    /// The first async-ABI construct found (a built-in like `task.return`,
    /// or an `async` lift or lower), if any.
    pub async_abi: Option<&'static str>,
}

/// An import this host does not provide, and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    /// The import, as the component names it.
    pub import: String,
    /// What to do about it, where known.
    pub fix: Option<String>,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`", self.import)?;
        if let Some(fix) = &self.fix {
            write!(f, " ({fix})")?;
        }
        Ok(())
    }
}

/// Visits every section of `component` and of the modules and components
/// inside it, but not the function bodies: code sections are skipped whole
/// (walking them cost over a millisecond for the built-ins at every start).
/// `visit` is told whether a section is at the top level; `unreadable`
/// makes the error for bytes that do not parse.
pub(crate) fn walk<'a, E>(
    component: &'a [u8],
    unreadable: impl Fn(String) -> E,
    mut visit: impl FnMut(wasmparser::Payload<'a>, bool) -> Result<(), E>,
) -> Result<(), E> {
    use wasmparser::{Chunk, Parser, Payload};
    let (mut data, mut parser, mut outer) = (component, Parser::new(0), Vec::new());
    loop {
        let payload = match parser.parse(data, true).map_err(|e| unreadable(e.to_string()))? {
            Chunk::Parsed { consumed, payload } => {
                data = &data[consumed..];
                payload
            }
            // Not with `eof` set: a short input is an error instead.
            Chunk::NeedMoreData(_) => return Err(unreadable("the component is cut short".into())),
        };
        match payload {
            Payload::CodeSectionStart { size, .. } => {
                parser.skip_section();
                data = data.get(size as usize..).ok_or_else(|| unreadable("a code section is cut short".into()))?;
            }
            Payload::ModuleSection { parser: inner, .. } | Payload::ComponentSection { parser: inner, .. } => {
                outer.push(std::mem::replace(&mut parser, inner));
            }
            Payload::End(_) => match outer.pop() {
                Some(p) => parser = p,
                None => return Ok(()),
            },
            other => visit(other, outer.is_empty())?,
        }
    }
}

impl Outline {
    /// Whether it exports the contract (`tool` or `async-tool`); if not,
    /// its exported functions are its tools (`super::plain`).
    pub fn exports_contract(&self) -> bool {
        let (tool, async_tool) = (format!("{PACKAGE}/tool@"), format!("{PACKAGE}/async-tool@"));
        self.exports.iter().any(|e| e.starts_with(&tool) || e.starts_with(&async_tool))
    }

    /// Whether calls into it run as component-model tasks, on the engine
    /// with concurrency support: it uses the async ABI, exports
    /// `async-tool` (whose `async func`s only that engine validates), or
    /// imports WASI 0.3 (linked only there).
    pub fn concurrent(&self) -> bool {
        self.async_abi.is_some()
            || self.exports.iter().any(|e| e.starts_with(&format!("{PACKAGE}/async-tool@")))
            || self.imports.iter().any(|i| i.starts_with("wasi:") && wasi_03(i))
    }
}

/// Whether `import` names a WASI 0.3 interface (`…@0.3.x`, pre-releases
/// included: they are refused by name).
fn wasi_03(import: &str) -> bool {
    import.split_once('@').is_some_and(|(_, v)| v.starts_with("0.3."))
}

/// Reads the outline of `component`, skipping function bodies.
pub fn outline(component: &[u8]) -> Result<Outline, ShapeError> {
    use wasmparser::{CanonicalFunction, CanonicalOption, Payload};
    let invalid = |e: wasmparser::BinaryReaderError| ShapeError::Invalid(e.to_string());
    let mut out = Outline::default();
    walk(component, ShapeError::Invalid, |payload, top| {
        match payload {
            Payload::ComponentImportSection(reader) if top => {
                for import in reader {
                    let import = import.map_err(invalid)?;
                    // A type a world defines (`record point` beside its
                    // functions) is imported as a type equal to its
                    // definition: nothing for the host to provide.
                    if let wasmparser::ComponentTypeRef::Type(wasmparser::TypeBounds::Eq(_)) = import.ty {
                        continue;
                    }
                    out.imports.push(import.name.name.to_string());
                }
            }
            Payload::ComponentExportSection(reader) if top => {
                for export in reader {
                    out.exports.push(export.map_err(invalid)?.name.name.to_string());
                }
            }
            Payload::ComponentCanonicalSection(reader) if out.async_abi.is_none() => {
                for function in reader {
                    let what = match function.map_err(invalid)? {
                        CanonicalFunction::Lift { options, .. } | CanonicalFunction::Lower { options, .. }
                            if options.iter().any(|o| matches!(o, CanonicalOption::Async)) =>
                        {
                            Some("an async lift or lower")
                        }
                        CanonicalFunction::TaskReturn { .. } => Some("task.return"),
                        CanonicalFunction::ContextGet { .. } | CanonicalFunction::ContextSet { .. } => {
                            Some("context.get/set")
                        }
                        CanonicalFunction::WaitableSetNew => Some("waitable-set.new"),
                        CanonicalFunction::SubtaskDrop => Some("subtask.drop"),
                        CanonicalFunction::StreamNew { .. } => Some("stream.new"),
                        CanonicalFunction::FutureNew { .. } => Some("future.new"),
                        CanonicalFunction::BackpressureInc | CanonicalFunction::BackpressureDec => {
                            Some("backpressure.inc/dec")
                        }
                        CanonicalFunction::ErrorContextNew { .. } => Some("error-context.new"),
                        _ => None,
                    };
                    if what.is_some() {
                        out.async_abi = what;
                        break;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok(out)
}

/// The `wasip3` crates whose WASI is the 0.3.0 wasmtime links.
const WASIP3_CRATE: &str = "0.7 to 0.9, `+wasi-0.3.0`";

/// The WASI 0.2 interfaces the host links, by `package/interface`.
const WASI: &[&str] = &[
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/wall-clock",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:sockets/network",
    "wasi:sockets/instance-network",
    "wasi:sockets/ip-name-lookup",
    "wasi:sockets/tcp",
    "wasi:sockets/tcp-create-socket",
    "wasi:sockets/udp",
    "wasi:sockets/udp-create-socket",
];

/// The WASI 0.3 interfaces the host links (wasmtime-wasi's `p3`), for
/// components that run as tasks, with the same grants as their 0.2 forms.
const WASI_03: &[&str] = &[
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/types",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:clocks/types",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/system-clock",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:sockets/types",
    "wasi:sockets/ip-name-lookup",
];

/// `wasi:http`, linked when the host is built with its `http` feature.
const WASI_HTTP: &[&str] = &["wasi:http/types", "wasi:http/outgoing-handler"];
/// `wasi:http` 0.3's, likewise (for components that run as tasks).
const WASI_HTTP_03: &[&str] = &["wasi:http/types", "wasi:http/client"];

/// The toolhost interfaces a component may import.
const TOOLHOST: &[&str] = &["types", "progress", "session", "output", "files", "search", "shell", "policy", "process"];

/// Checks `outline` against what this host serves: the contract version of
/// its `tool` export, and every import. Each import the host does not
/// provide is named, with its fix where one is known; a component using the
/// async ABI is refused with what to build instead.
pub fn check(outline: &Outline) -> Result<(), ShapeError> {
    let version = super::shape::contract_version(&outline.exports)?;
    if version.support() == Support::Unreleased && !LOADS_UNRELEASED {
        return Err(ShapeError::ContractUnreleased { guest: version });
    }
    check_imports(outline)
}

/// Checks every import of `outline` against what this host provides (each
/// one it does not is named, with its fix where one is known).
pub(crate) fn check_imports(outline: &Outline) -> Result<(), ShapeError> {
    let missing: Vec<Missing> = outline.imports.iter().filter_map(|i| missing(i)).collect();
    if !missing.is_empty() {
        return Err(ShapeError::MissingImports(missing));
    }
    Ok(())
}

/// Why `import` cannot be linked, if it cannot.
fn missing(import: &str) -> Option<Missing> {
    let (path, version) = import.split_once('@').unwrap_or((import, ""));
    let with = |fix: Option<String>| Some(Missing { import: import.to_string(), fix });
    if path.starts_with("toolhost:script/") {
        return with(Some(
            "the built-in Script tool's own interface (calling other tools); no other component is given it".into(),
        ));
    }
    if let Some(interface) = path.strip_prefix(&format!("{PACKAGE}/")) {
        return match Version::parse(version) {
            Some(v) if CONTRACT.supports(v) && TOOLHOST.contains(&interface) => None,
            Some(v) if !CONTRACT.supports(v) => with(Some(format!(
                "contract {v}; this host implements {CONTRACT}: rebuild against a matching toolhost-sdk"
            ))),
            _ => with(Some(format!("toolhost's interfaces are {}", TOOLHOST.join(", ")))),
        };
    }
    let Some(package) = path.strip_prefix("wasi:") else {
        return with(Some(
            "a tool may import WASI 0.2, WASI 0.3 and toolhost:tool interfaces only; bundle this dependency into the \
             component (wac plug / wasm-tools compose) instead of importing it"
                .into(),
        ));
    };
    if version.starts_with("0.3.") {
        if version.contains('-') {
            return with(Some(format!(
                "a release candidate of WASI 0.3; toolhost links WASI 0.3.0 itself: build against it (for Rust, the \
                 `wasip3` crate {WASIP3_CRATE})"
            )));
        }
        if WASI_03.contains(&path) || (cfg!(feature = "http") && WASI_HTTP_03.contains(&path)) {
            return None;
        }
        let http: &[&str] = if cfg!(feature = "http") { WASI_HTTP_03 } else { &[] };
        let linked: Vec<&str> = WASI_03.iter().chain(http).filter_map(|w| w.strip_prefix("wasi:")).collect();
        return with(Some(format!("not a WASI 0.3 interface toolhost links; those are {}", linked.join(", "))));
    }
    if !version.starts_with("0.2.") {
        return with(Some("toolhost links WASI 0.2 (0.2.x) and 0.3 (0.3.x) interfaces".into()));
    }
    if WASI.contains(&path) {
        return None;
    }
    if package.starts_with("http/") {
        if cfg!(feature = "http") && WASI_HTTP.contains(&path) {
            return None;
        }
        let fix = if cfg!(feature = "http") {
            "only wasi:http/types and wasi:http/outgoing-handler are provided".to_string()
        } else {
            "this toolhost was built without wasi:http (the `http` feature). A JavaScript component made by \
             jco / ComponentizeJS imports it unless built with `--disable http --disable fetch-event`"
                .to_string()
        };
        return with(Some(fix));
    }
    let name = package.split('/').next().unwrap_or_default();
    let known = match name {
        "clocks" if package == "clocks/timezone" => Some("unstable in WASI 0.2, and not linked".to_string()),
        "cli" | "clocks" | "filesystem" | "io" | "random" | "sockets" => {
            let linked: Vec<&str> = WASI.iter().filter_map(|w| w.strip_prefix(&format!("wasi:{name}/"))).collect();
            Some(format!("not an interface of wasi:{name} that toolhost links; those are {}", linked.join(", ")))
        }
        "nn" | "keyvalue" | "config" | "blobstore" | "messaging" | "logging" | "sql" => {
            Some("a proposal toolhost does not implement".to_string())
        }
        _ => None,
    };
    with(known)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outline_of(imports: &[&str]) -> Outline {
        Outline {
            imports: imports.iter().map(|s| s.to_string()).collect(),
            exports: vec![format!("{PACKAGE}/tool@{CONTRACT}")],
            async_abi: None,
        }
    }

    #[test]
    fn a_builtin_outline_passes_and_names_its_contract() {
        for embedded in crate::registry::builtin_wasm_all_for_tests() {
            let outline = outline(embedded).unwrap();
            assert!(outline.exports.iter().any(|e| e.starts_with("toolhost:tool/tool@")), "{outline:?}");
            assert!(!outline.imports.is_empty());
            // The Script built-in's own interface is refused from any other
            // component (the loader does not scan built-ins).
            let script = |i: &String| i.starts_with("toolhost:script/tools@");
            let theirs = Outline {
                imports: outline.imports.iter().filter(|i| !script(i)).cloned().collect(),
                ..outline.clone()
            };
            check(&theirs).unwrap_or_else(|e| panic!("{e}: {outline:?}"));
            if outline.imports.iter().any(script) {
                let refused = check(&outline).unwrap_err().to_string();
                assert!(refused.contains("no other component is given it"), "{refused}");
            }
        }
    }

    #[test]
    fn every_missing_import_is_named_with_its_fix() {
        let outline = outline_of(&[
            "wasi:io/streams@0.2.6",
            "wasi:keyvalue/store@0.2.0-draft",
            "wasi:cli/environment@0.3.0-rc-2025-09-16",
            "docs:adder/add@0.1.0",
            "toolhost:tool/session@1.0.0",
            "toolhost:tool/teleport@1.1.0",
        ]);
        let err = check(&outline).unwrap_err();
        let text = err.to_string();
        let ShapeError::MissingImports(missing) = err else { panic!("{text}") };
        let names: Vec<&str> = missing.iter().map(|m| m.import.as_str()).collect();
        assert_eq!(
            names,
            [
                "wasi:keyvalue/store@0.2.0-draft",
                "wasi:cli/environment@0.3.0-rc-2025-09-16",
                "docs:adder/add@0.1.0",
                "toolhost:tool/teleport@1.1.0"
            ]
        );
        assert!(text.contains("WASI 0.3"), "{text}");
        assert!(text.contains("bundle this dependency"), "{text}");
        assert!(text.contains("a proposal toolhost does not implement"), "{text}");
    }

    #[test]
    fn http_and_the_async_abi() {
        let http = check(&outline_of(&["wasi:http/types@0.2.3", "wasi:http/outgoing-handler@0.2.3"]));
        assert_eq!(http.is_ok(), cfg!(feature = "http"), "{http:?}");
        let incoming = check(&outline_of(&["wasi:http/incoming-handler@0.2.3"])).unwrap_err().to_string();
        assert!(incoming.contains("wasi:http/incoming-handler"), "{incoming}");
        // The async ABI loads (its calls run as tasks).
        let mut asynchronous = outline_of(&[]);
        asynchronous.async_abi = Some("task.return");
        check(&asynchronous).unwrap();
    }

    #[test]
    fn contract_versions_are_checked_before_compiling() {
        let mut outline = outline_of(&[]);
        outline.exports = vec![format!("{PACKAGE}/tool@2.0.0")];
        assert!(matches!(check(&outline), Err(ShapeError::ContractMismatch { guest: Version(2, 0, 0) })));
        outline.exports = vec![format!("{PACKAGE}/tool@1.0.0")];
        check(&outline).unwrap();
        outline.exports = vec![format!("{PACKAGE}/tool@{CONTRACT}")];
        check(&outline).unwrap();
        // A development version never released is refused, naming the fix.
        outline.exports = vec![format!("{PACKAGE}/tool@1.2.0")];
        let retired = check(&outline).unwrap_err();
        assert!(matches!(retired, ShapeError::ContractRetired { guest: Version(1, 2, 0) }), "{retired:?}");
        assert!(retired.to_string().contains(&format!("rebuild it against contract {CONTRACT}")), "{retired}");
        outline.exports = vec!["wasi:cli/run@0.2.0".into()];
        assert!(matches!(check(&outline), Err(ShapeError::NoToolExport(_))));
    }

    #[test]
    fn garbage_is_invalid_not_a_panic() {
        assert!(outline(b"\0asm\x0d\0\x01\0garbage").is_err());
        let builtin = crate::registry::builtin_wasm_for_tests();
        assert!(outline(&builtin[..builtin.len() / 2]).is_err());
    }
}
