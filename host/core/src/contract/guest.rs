//! A component's exports, whichever contract version it was built against:
//! every call the host makes into a tool goes through [`Guest`], which
//! speaks the current contract's types.

use super::bindings::toolhost::tool::types::{ToolError, ToolInfo, ToolOutput};
use super::bindings::{self, CallContext, PermissionDecision};
use super::{Version, v1_0_0, v1_1_0, v1_2_0, v1_3_0};
use wasmtime::AsContextMut;
use wasmtime::component::InstancePre;

/// A tool component linked and ready to instantiate.
pub enum ToolPre<T: 'static> {
    Current(bindings::FullPre<T>),
    V1_0(v1_0_0::FullPre<T>),
    V1_1(v1_1_0::FullPre<T>),
    V1_2(v1_2_0::FullPre<T>),
    V1_3(v1_3_0::FullPre<T>),
}

impl<T: 'static> ToolPre<T> {
    /// The bindings for a component built against contract `version` (one
    /// the host supports, see [`Version::supports`]).
    pub fn new(version: Version, pre: InstancePre<T>) -> wasmtime::Result<ToolPre<T>> {
        match version {
            Version(1, 0, _) => Ok(ToolPre::V1_0(v1_0_0::FullPre::new(pre)?)),
            Version(1, 1, _) => Ok(ToolPre::V1_1(v1_1_0::FullPre::new(pre)?)),
            Version(1, 2, _) => Ok(ToolPre::V1_2(v1_2_0::FullPre::new(pre)?)),
            Version(1, 3, _) => Ok(ToolPre::V1_3(v1_3_0::FullPre::new(pre)?)),
            _ => Ok(ToolPre::Current(bindings::FullPre::new(pre)?)),
        }
    }

    /// The engine it was compiled by (its stores must be made on it).
    pub fn engine(&self) -> &wasmtime::Engine {
        match self {
            ToolPre::Current(pre) => pre.engine(),
            ToolPre::V1_0(pre) => pre.engine(),
            ToolPre::V1_1(pre) => pre.engine(),
            ToolPre::V1_2(pre) => pre.engine(),
            ToolPre::V1_3(pre) => pre.engine(),
        }
    }

    /// A fresh instance in `store`.
    pub fn instantiate(&self, store: impl AsContextMut<Data = T>) -> wasmtime::Result<Guest> {
        Ok(match self {
            ToolPre::Current(pre) => Guest::Current(pre.instantiate(store)?),
            ToolPre::V1_0(pre) => Guest::V1_0(pre.instantiate(store)?),
            ToolPre::V1_1(pre) => Guest::V1_1(pre.instantiate(store)?),
            ToolPre::V1_2(pre) => Guest::V1_2(pre.instantiate(store)?),
            ToolPre::V1_3(pre) => Guest::V1_3(pre.instantiate(store)?),
        })
    }
}

/// A live tool instance's exports.
pub enum Guest {
    Current(bindings::Full),
    V1_0(v1_0_0::Full),
    V1_1(v1_1_0::Full),
    V1_2(v1_2_0::Full),
    V1_3(v1_3_0::Full),
}

impl Guest {
    pub fn info<S: AsContextMut>(&self, store: S) -> wasmtime::Result<ToolInfo> {
        match self {
            Guest::Current(g) => g.toolhost_tool_tool().call_info(store),
            Guest::V1_0(g) => g.toolhost_tool_tool().call_info(store).map(v1_0_0::info),
            Guest::V1_1(g) => g.toolhost_tool_tool().call_info(store).map(v1_1_0::info),
            Guest::V1_2(g) => g.toolhost_tool_tool().call_info(store).map(v1_2_0::info),
            Guest::V1_3(g) => g.toolhost_tool_tool().call_info(store).map(v1_3_0::info),
        }
    }

    pub fn is_enabled<S: AsContextMut>(&self, store: S) -> wasmtime::Result<bool> {
        match self {
            Guest::Current(g) => g.toolhost_tool_tool().call_is_enabled(store),
            Guest::V1_0(g) => g.toolhost_tool_tool().call_is_enabled(store),
            Guest::V1_1(g) => g.toolhost_tool_tool().call_is_enabled(store),
            Guest::V1_2(g) => g.toolhost_tool_tool().call_is_enabled(store),
            Guest::V1_3(g) => g.toolhost_tool_tool().call_is_enabled(store),
        }
    }

    pub fn is_concurrency_safe<S: AsContextMut>(&self, store: S, input: &str) -> wasmtime::Result<bool> {
        match self {
            Guest::Current(g) => g.toolhost_tool_tool().call_is_concurrency_safe(store, input),
            Guest::V1_0(g) => g.toolhost_tool_tool().call_is_concurrency_safe(store, input),
            Guest::V1_1(g) => g.toolhost_tool_tool().call_is_concurrency_safe(store, input),
            Guest::V1_2(g) => g.toolhost_tool_tool().call_is_concurrency_safe(store, input),
            Guest::V1_3(g) => g.toolhost_tool_tool().call_is_concurrency_safe(store, input),
        }
    }

    pub fn is_read_only<S: AsContextMut>(&self, store: S, input: &str) -> wasmtime::Result<bool> {
        match self {
            Guest::Current(g) => g.toolhost_tool_tool().call_is_read_only(store, input),
            Guest::V1_0(g) => g.toolhost_tool_tool().call_is_read_only(store, input),
            Guest::V1_1(g) => g.toolhost_tool_tool().call_is_read_only(store, input),
            Guest::V1_2(g) => g.toolhost_tool_tool().call_is_read_only(store, input),
            Guest::V1_3(g) => g.toolhost_tool_tool().call_is_read_only(store, input),
        }
    }

    pub fn validate_input<S: AsContextMut>(
        &self,
        store: S,
        input: &str,
        ctx: &CallContext,
    ) -> wasmtime::Result<Result<(), ToolError>> {
        match self {
            Guest::Current(g) => g.toolhost_tool_tool().call_validate_input(store, input, ctx),
            Guest::V1_0(g) => Ok(g
                .toolhost_tool_tool()
                .call_validate_input(store, input, &v1_0_0::context(ctx))?
                .map_err(v1_0_0::error)),
            Guest::V1_1(g) => Ok(g
                .toolhost_tool_tool()
                .call_validate_input(store, input, &v1_1_0::context(ctx))?
                .map_err(v1_1_0::error)),
            Guest::V1_2(g) => Ok(g
                .toolhost_tool_tool()
                .call_validate_input(store, input, &v1_2_0::context(ctx))?
                .map_err(v1_2_0::error)),
            Guest::V1_3(g) => Ok(g
                .toolhost_tool_tool()
                .call_validate_input(store, input, &v1_3_0::context(ctx))?
                .map_err(v1_3_0::error)),
        }
    }

    pub fn check_permissions<S: AsContextMut>(
        &self,
        store: S,
        input: &str,
        ctx: &CallContext,
    ) -> wasmtime::Result<PermissionDecision> {
        match self {
            Guest::Current(g) => g.toolhost_tool_tool().call_check_permissions(store, input, ctx),
            Guest::V1_0(g) => {
                let tool = g.toolhost_tool_tool();
                tool.call_check_permissions(store, input, &v1_0_0::context(ctx)).map(v1_0_0::decision)
            }
            Guest::V1_1(g) => {
                let tool = g.toolhost_tool_tool();
                tool.call_check_permissions(store, input, &v1_1_0::context(ctx)).map(v1_1_0::decision)
            }
            Guest::V1_2(g) => {
                let tool = g.toolhost_tool_tool();
                tool.call_check_permissions(store, input, &v1_2_0::context(ctx)).map(v1_2_0::decision)
            }
            Guest::V1_3(g) => {
                let tool = g.toolhost_tool_tool();
                tool.call_check_permissions(store, input, &v1_3_0::context(ctx)).map(v1_3_0::decision)
            }
        }
    }

    pub fn call<S: AsContextMut>(
        &self,
        store: S,
        input: &str,
        ctx: &CallContext,
    ) -> wasmtime::Result<Result<ToolOutput, ToolError>> {
        match self {
            Guest::Current(g) => g.toolhost_tool_tool().call_call(store, input, ctx),
            Guest::V1_0(g) => Ok(g
                .toolhost_tool_tool()
                .call_call(store, input, &v1_0_0::context(ctx))?
                .map(v1_0_0::output)
                .map_err(v1_0_0::error)),
            Guest::V1_1(g) => Ok(g
                .toolhost_tool_tool()
                .call_call(store, input, &v1_1_0::context(ctx))?
                .map(v1_1_0::output)
                .map_err(v1_1_0::error)),
            Guest::V1_2(g) => Ok(g
                .toolhost_tool_tool()
                .call_call(store, input, &v1_2_0::context(ctx))?
                .map(v1_2_0::output)
                .map_err(v1_2_0::error)),
            Guest::V1_3(g) => Ok(g
                .toolhost_tool_tool()
                .call_call(store, input, &v1_3_0::context(ctx))?
                .map(v1_3_0::output)
                .map_err(v1_3_0::error)),
        }
    }
}
