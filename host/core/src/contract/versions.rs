//! Which contract versions this host loads, and a component's exports
//! whichever of them it was built against: every call the host makes into a
//! tool goes through [`Guest`], which speaks the newest contract's types.
//!
//! One row of the `versions!` table per *range* of versions: a module whose
//! bindings serve every version from its minimum up to the next row's (semver:
//! a 1.0.x component and one built against any later 1.0 patch share one set
//! of bindings). The enums and the dispatch of every export are generated from
//! the table; a version module only provides its bindings and `From`
//! conversions of its types into the newest ones (`frozen.rs`). The process of
//! adding a version is in `wit/CHANGELOG.md`.

use super::bindings::toolhost::tool::types::{ToolError, ToolInfo, ToolOutput};
use super::bindings::{self, CallContext, PermissionDecision};
use super::plain::{Export, Function};
use super::shape::{Support, Version};
use super::{CONTRACT, RELEASED, since_v1_0_0};
use std::borrow::Cow;
use std::sync::Arc;
use wasmtime::AsContextMut;
use wasmtime::component::{ComponentNamedList, Func, Instance, InstancePre, Lift, Lower};

/// Every released version, with the SHA-256 of its WIT as it was frozen
/// (`wit/tool.wit` while it is the newest, `wit/vX.Y.Z/tool.wit` after).
/// A test checks the files against it: a released contract never changes.
pub(crate) const FROZEN: &[(Version, &str)] = &[
    (Version(1, 0, 0), "6ec59301b3a122f9df83912807844988428f14e0e52d5be133efda9fcf5a7c76"),
    (Version(1, 5, 0), "486930aad56effeda31e0571e2417f258934ca06987d07ef2968ca63bd634aad"),
    (Version(1, 6, 0), "ff10f01ce620ea9209b5baa256001b44883c459141f188d345cad2d2da5ac9c6"),
];

/// The released versions, oldest first.
pub(crate) fn released() -> impl Iterator<Item = Version> {
    FROZEN.iter().map(|(v, _)| *v).filter(|v| *v <= RELEASED)
}

/// The versions this build loads, for messages ("1.0.x, 1.5.x").
pub(crate) fn loadable() -> String {
    let mut versions: Vec<String> = released().map(|v| format!("{}.{}.x", v.0, v.1)).collect();
    if CONTRACT > RELEASED && super::shape::LOADS_UNRELEASED {
        versions.push(format!("{} (unreleased)", CONTRACT));
    }
    versions.join(", ")
}

/// How a host implementing `current`, with the versions `released`, treats
/// a component built against `guest`. Patch versions never matter.
pub(crate) fn support(guest: Version, current: Version, released: impl IntoIterator<Item = Version>) -> Support {
    let minor = |v: Version| (v.0, v.1);
    if guest.0 != current.0 || minor(guest) > minor(current) {
        return Support::Unknown;
    }
    let mut released = released.into_iter();
    if released.any(|r| minor(r) == minor(guest)) {
        Support::Released
    } else if minor(guest) == minor(current) {
        Support::Unreleased
    } else {
        Support::Retired
    }
}

/// Generates [`ToolPre`] and [`Guest`] from one row per range of versions,
/// newest first: `Variant => module since Version(..)`. A module provides
/// `FullPre`, `Full` (its bindings), `context` (today's call context in its
/// types, borrowed where they are today's), the names `Context`, `Info`,
/// `Output`, `Error` and `Decision` for its types, and `From` conversions of
/// its answers into today's types.
///
/// A component that uses the component-model async ABI (async lifts of its
/// exports, async lowers of its imports, its own subtasks, futures and
/// streams, WASI 0.3), and every component that exports `async-tool`, is
/// called through [`Concurrent`]: wasmtime refuses a synchronous call of an
/// async-lifted export, and runs the call's tasks in `call_async`, on the
/// calling thread, within the call's deadline and cancellation.
macro_rules! versions {
    ($($variant:ident => $module:ident since $since:expr;)+) => {
        /// A tool component linked and ready to instantiate.
        pub(crate) struct ToolPre<T: 'static> {
            pre: Pre<T>,
        }

        enum Pre<T: 'static> {
            $($variant($module::FullPre<T>),)+
            /// Called through [`Concurrent`]: the functions of its export
            /// `interface`, typed as the row `row` types them.
            Tasks { row: Row, pre: InstancePre<T>, interface: String },
            /// A component that does not export the contract: one of its
            /// exported functions, served as a tool (`super::plain`).
            Plain { pre: InstancePre<T>, function: Arc<Function>, concurrent: bool },
        }

        /// A row of the table.
        #[derive(Clone, Copy)]
        enum Row {
            $($variant,)+
        }

        /// The first version of the row of bindings that serves `version`,
        /// if this host loads it.
        fn row(version: Version) -> Option<Version> {
            if matches!(version.support(), Support::Retired | Support::Unknown) {
                return None;
            }
            [$($since),+].into_iter().find(|since| version >= *since)
        }

        // Cheap: the linked component is shared.
        impl<T: 'static> Clone for ToolPre<T> {
            fn clone(&self) -> Self {
                let pre = match &self.pre {
                    $(Pre::$variant(pre) => Pre::$variant(pre.clone()),)+
                    Pre::Tasks { row, pre, interface } => Pre::Tasks { row: *row, pre: pre.clone(), interface: interface.clone() },
                    Pre::Plain { pre, function, concurrent } => Pre::Plain { pre: pre.clone(), function: Arc::clone(function), concurrent: *concurrent },
                };
                ToolPre { pre }
            }
        }

        impl<T: Bounds + 'static> ToolPre<T> {
            /// The bindings for a component built against contract
            /// `version` (one this host loads, see [`Version::support`]),
            /// `concurrent` if it uses the async ABI (an `async-tool`
            /// export always does).
            pub(crate) fn new(version: Version, concurrent: bool, pre: InstancePre<T>) -> wasmtime::Result<ToolPre<T>> {
                let Some(since) = row(version) else {
                    wasmtime::bail!("this host does not run components built against contract {version}");
                };
                let engine = pre.component().engine().clone();
                let exports: Vec<String> =
                    pre.component().component_type().exports(&engine).map(|(name, _)| name.to_string()).collect();
                let named = |interface: &str| exports.iter().find(|e| e.starts_with(&format!("{}/{interface}@", super::PACKAGE))).cloned();
                // A component exports `async-tool` or `tool`.
                let tasks = named("async-tool").or_else(|| concurrent.then(|| named("tool")).flatten());
                $(if since == $since {
                    return Ok(ToolPre { pre: match tasks {
                        Some(interface) => Pre::Tasks { row: Row::$variant, pre, interface },
                        None => Pre::$variant($module::FullPre::new(pre)?),
                    }});
                })+
                unreachable!("`row` returns a row's version")
            }

            /// `function` of a component that does not export the contract,
            /// linked as `pre`; `concurrent` if it uses the async ABI.
            pub(crate) fn plain(pre: InstancePre<T>, function: Arc<Function>, concurrent: bool) -> ToolPre<T> {
                ToolPre { pre: Pre::Plain { pre, function, concurrent } }
            }

            /// The engine it was compiled by (its stores must be made on it).
            pub(crate) fn engine(&self) -> &wasmtime::Engine {
                match &self.pre {
                    $(Pre::$variant(pre) => pre.engine(),)+
                    Pre::Tasks { pre, .. } | Pre::Plain { pre, .. } => pre.component().engine(),
                }
            }

            /// A fresh instance in `store`.
            pub(crate) fn instantiate(&self, mut store: impl AsContextMut<Data = T>) -> wasmtime::Result<Guest> {
                Ok(Guest { exports: match &self.pre {
                    $(Pre::$variant(pre) => Exports::$variant(pre.instantiate(store)?),)+
                    Pre::Tasks { row, pre, interface } => {
                        // Async host functions (WASI 0.3's) make wasmtime
                        // require async instantiation.
                        let stop = store.as_context_mut().data().stop();
                        let instance = stop.wait(pre.instantiate_async(&mut store))??;
                        Exports::Tasks(*row, Concurrent::new(&mut store, &instance, interface)?)
                    }
                    Pre::Plain { pre, function, concurrent } => {
                        let instance = match concurrent {
                            true => {
                                let stop = store.as_context_mut().data().stop();
                                stop.wait(pre.instantiate_async(&mut store))??
                            }
                            false => pre.instantiate(&mut store)?,
                        };
                        Exports::Plain(Export::find(&mut store, &instance, function, *concurrent)?)
                    }
                }})
            }
        }

        /// A live tool instance's exports.
        pub(crate) struct Guest {
            exports: Exports,
        }

        enum Exports {
            $($variant($module::Full),)+
            /// Its export's functions, typed as the row's.
            Tasks(Row, Concurrent),
            /// A plain function: no `info` (the host described it from its
            /// types), enabled, validated and decided by the host alone.
            Plain(Export),
        }

        // The newest version's conversions are the identity.
        #[allow(clippy::useless_conversion)]
        impl Guest {
            pub(crate) fn info<S: AsContextMut<Data: Bounds>>(&self, store: S) -> wasmtime::Result<ToolInfo> {
                match &self.exports {
                    Exports::Plain(_) => wasmtime::bail!("a plain function has no `info`: the host describes it"),
                    $(Exports::Tasks(Row::$variant, c) => Concurrent::call::<_, (), ($module::Info,)>(store, &c.info, ()).map(|(r,)| r.into()),)+
                    $(Exports::$variant(g) => g.toolhost_tool_tool().call_info(store).map(Into::into),)+
                }
            }

            pub(crate) fn is_enabled<S: AsContextMut<Data: Bounds>>(&self, store: S) -> wasmtime::Result<bool> {
                match &self.exports {
                    Exports::Plain(_) => Ok(true),
                    Exports::Tasks(_, c) => Concurrent::call::<_, (), (bool,)>(store, &c.is_enabled, ()).map(|(r,)| r),
                    $(Exports::$variant(g) => g.toolhost_tool_tool().call_is_enabled(store),)+
                }
            }

            pub(crate) fn is_concurrency_safe<S: AsContextMut<Data: Bounds>>(&self, store: S, input: &str) -> wasmtime::Result<bool> {
                match &self.exports {
                    Exports::Plain(_) => Ok(false),
                    Exports::Tasks(_, c) => Concurrent::call::<_, (&str,), (bool,)>(store, &c.is_concurrency_safe, (input,)).map(|(r,)| r),
                    $(Exports::$variant(g) => g.toolhost_tool_tool().call_is_concurrency_safe(store, input),)+
                }
            }

            pub(crate) fn is_read_only<S: AsContextMut<Data: Bounds>>(&self, store: S, input: &str) -> wasmtime::Result<bool> {
                match &self.exports {
                    Exports::Plain(_) => Ok(false),
                    Exports::Tasks(_, c) => Concurrent::call::<_, (&str,), (bool,)>(store, &c.is_read_only, (input,)).map(|(r,)| r),
                    $(Exports::$variant(g) => g.toolhost_tool_tool().call_is_read_only(store, input),)+
                }
            }

            pub(crate) fn validate_input<S: AsContextMut<Data: Bounds>>(
                &self,
                store: S,
                input: &str,
                ctx: &CallContext,
            ) -> wasmtime::Result<Result<(), ToolError>> {
                match &self.exports {
                    Exports::Plain(_) => Ok(Ok(())),
                    $(Exports::Tasks(Row::$variant, c) => {
                        let ctx = $module::context(ctx);
                        let (r,) = Concurrent::call::<_, (&str, &$module::Context), (Result<(), $module::Error>,)>(
                            store, &c.validate_input, (input, &*ctx))?;
                        Ok(r.map_err(Into::into))
                    })+
                    $(Exports::$variant(g) => Ok(g
                        .toolhost_tool_tool()
                        .call_validate_input(store, input, &$module::context(ctx))?
                        .map_err(Into::into)),)+
                }
            }

            pub(crate) fn check_permissions<S: AsContextMut<Data: Bounds>>(
                &self,
                store: S,
                input: &str,
                ctx: &CallContext,
            ) -> wasmtime::Result<PermissionDecision> {
                match &self.exports {
                    Exports::Plain(_) => Ok(PermissionDecision::Passthrough),
                    $(Exports::Tasks(Row::$variant, c) => {
                        let ctx = $module::context(ctx);
                        let (r,) = Concurrent::call::<_, (&str, &$module::Context), ($module::Decision,)>(
                            store, &c.check_permissions, (input, &*ctx))?;
                        Ok(r.into())
                    })+
                    $(Exports::$variant(g) => g
                        .toolhost_tool_tool()
                        .call_check_permissions(store, input, &$module::context(ctx))
                        .map(Into::into),)+
                }
            }

            pub(crate) fn call<S: AsContextMut<Data: Bounds + super::plain::command::Stdio>>(
                &self,
                store: S,
                input: &str,
                ctx: &CallContext,
            ) -> wasmtime::Result<Result<ToolOutput, ToolError>> {
                match &self.exports {
                    Exports::Plain(export) => export.call(store, input),
                    $(Exports::Tasks(Row::$variant, c) => {
                        let ctx = $module::context(ctx);
                        let (r,) = Concurrent::call::<_, (&str, &$module::Context), (Result<$module::Output, $module::Error>,)>(
                            store, &c.call, (input, &*ctx))?;
                        Ok(r.map(Into::into).map_err(Into::into))
                    })+
                    $(Exports::$variant(g) => Ok(g
                        .toolhost_tool_tool()
                        .call_call(store, input, &$module::context(ctx))?
                        .map(Into::into)
                        .map_err(Into::into)),)+
                }
            }
        }
    };
}

/// What a Store's data tells a call into a guest that may wait with no wasm
/// running (on a host future, in the async ABI): when it must stop.
pub(crate) trait Bounds: Send {
    type Stop: Wait;
    /// The call's deadline and cancellation, taken before the call borrows
    /// the Store.
    fn stop(&self) -> Self::Stop;
}

/// Runs a call into the guest within the limits it was taken from.
pub(crate) trait Wait {
    /// Runs `work` until it finishes or the call must stop, whichever is
    /// first; the error says why it stopped.
    fn wait<F: std::future::Future>(&self, work: F) -> wasmtime::Result<F::Output>;
}

/// The `tool` or `async-tool` export's functions of an instance that uses
/// the async ABI, called with `call_async` and run to completion on the
/// calling thread. Every task the call starts (its own subtasks, futures
/// and streams, the host's work for its WASI 0.3 imports) runs inside it:
/// when none can make progress any more (a guest waiting on a future
/// nothing will complete), wasmtime traps; the epoch deadline and
/// cancellation interrupt it at the next wasm instruction it runs, and
/// [`Wait::wait`] while it waits on the host.
struct Concurrent {
    info: Func,
    is_enabled: Func,
    is_concurrency_safe: Func,
    is_read_only: Func,
    validate_input: Func,
    check_permissions: Func,
    call: Func,
}

impl Concurrent {
    fn new(mut store: impl AsContextMut, instance: &Instance, interface: &str) -> wasmtime::Result<Concurrent> {
        let tool = instance
            .get_export_index(&mut store, None, interface)
            .ok_or_else(|| wasmtime::format_err!("no `{interface}` export"))?;
        let mut func = |name: &str| {
            instance
                .get_export_index(&mut store, Some(&tool), name)
                .and_then(|index| instance.get_func(&mut store, index))
                .ok_or_else(|| wasmtime::format_err!("no `{name}` in its `{interface}` export"))
        };
        Ok(Concurrent {
            info: func("info")?,
            is_enabled: func("is-enabled")?,
            is_concurrency_safe: func("is-concurrency-safe")?,
            is_read_only: func("is-read-only")?,
            validate_input: func("validate-input")?,
            check_permissions: func("check-permissions")?,
            call: func("call")?,
        })
    }

    /// Calls `func`, typed as `P -> R` (checked against its type), until
    /// its task and every task it started are done, or the call's deadline
    /// or cancellation stops it. The epoch stops a guest running wasm;
    /// this stops one waiting on the host (a WASI 0.3 sleep, read or
    /// connect), which no epoch tick reaches. A call stopped so leaves
    /// its instance unusable; the pipeline never reuses an instance after a
    /// fault.
    fn call<S, P, R>(mut store: S, func: &Func, params: P) -> wasmtime::Result<R>
    where
        S: AsContextMut<Data: Bounds>,
        P: ComponentNamedList + Lower + Send + Sync,
        R: ComponentNamedList + Lift + Send + Sync + 'static,
    {
        let stop = store.as_context_mut().data().stop();
        let typed = func.typed::<P, R>(&store)?;
        stop.wait(typed.call_async(&mut store, params))?
    }
}

// The newest bindings serve 1.5.x too: 1.6.0 only added `async-tool`, and
// wasmtime finds a component's `tool@1.5.0` export under `tool@1.6.0`
// (semver-compatible names).
versions! {
    Current => newest since Version(1, 5, 0);
    V1_0 => since_v1_0_0 since Version(1, 0, 0);
}

/// The newest contract's bindings, in the shape the table expects.
mod newest {
    use super::*;
    pub(super) use bindings::exports::toolhost::tool::tool::{CallContext as Context, PermissionDecision as Decision};
    pub(super) use bindings::toolhost::tool::types::{ToolError as Error, ToolInfo as Info, ToolOutput as Output};
    pub(super) use bindings::{Full, FullPre};

    pub(super) fn context(ctx: &CallContext) -> Cow<'_, CallContext> {
        Cow::Borrowed(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn released_versions_are_frozen() {
        let wit = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit");
        assert!(FROZEN.iter().any(|(v, _)| *v == RELEASED), "RELEASED ({RELEASED}) is missing from FROZEN");
        for (version, hash) in FROZEN {
            let file = match *version == CONTRACT {
                true => wit.join("tool.wit"),
                false => wit.join(format!("v{version}/tool.wit")),
            };
            let text = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let actual = format!("{:x}", Sha256::digest(&text));
            assert_eq!(
                &actual,
                hash,
                "{} is contract {version}, which is released and frozen: revert the change, or prepare the next \
                 version (copy the file to wit/v{version}/, raise the version in wit/tool.wit and CONTRACT; see \
                 wit/CHANGELOG.md)",
                file.display()
            );
        }
    }

    #[test]
    fn versions_are_released_unreleased_retired_or_unknown() {
        let v = |a, b, c| Version(a, b, c);
        let released = [v(1, 0, 0), v(1, 5, 0)];
        let support = |guest| support(guest, v(1, 6, 0), released);
        assert_eq!(support(v(1, 0, 0)), Support::Released);
        assert_eq!(support(v(1, 0, 7)), Support::Released, "patches share their minor's bindings");
        assert_eq!(support(v(1, 5, 2)), Support::Released);
        assert_eq!(support(v(1, 6, 0)), Support::Unreleased);
        assert_eq!(support(v(1, 3, 0)), Support::Retired);
        assert_eq!(support(v(1, 7, 0)), Support::Unknown, "a newer minor may use what the host lacks");
        assert_eq!(support(v(2, 0, 0)), Support::Unknown);
        assert_eq!(support(v(0, 9, 0)), Support::Unknown);
        // Once 1.6.0 is released it loads everywhere.
        assert_eq!(super::support(v(1, 6, 0), v(1, 6, 0), [v(1, 0, 0), v(1, 5, 0), v(1, 6, 0)]), Support::Released);
        // This host.
        assert_eq!(CONTRACT.support(), if CONTRACT == RELEASED { Support::Released } else { Support::Unreleased });
        assert_eq!(Version(1, 2, 0).support(), Support::Retired);
    }

    #[test]
    fn every_loadable_version_has_a_row_and_every_row_serves_one() {
        let mut loadable: Vec<Version> = released().collect();
        loadable.push(CONTRACT);
        let rows: Vec<Version> = loadable.iter().map(|v| row(*v).unwrap_or_else(|| panic!("{v} has no row"))).collect();
        for (version, row) in loadable.iter().zip(&rows) {
            assert!(row <= version && row.0 == version.0, "{version} is served by the row since {row}");
        }
        assert_eq!(row(CONTRACT), Some(Version(1, 5, 0)), "the newest bindings serve the newest version");
        assert_eq!(row(Version(1, 0, 3)), Some(Version(1, 0, 0)));
        assert_eq!(row(Version(1, 2, 0)), None, "retired");
        assert_eq!(row(Version(2, 0, 0)), None);
    }
}
