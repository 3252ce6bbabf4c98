//! Contract 1.0.x (`wit/v1.0.0/tool.wit`, released 2026-12-01): bindings for
//! what components built against it export, and their answers in the newest
//! contract's types. Its host interfaces did not change: the linker serves
//! their `…@1.0.0` imports with the newest definitions (wasmtime matches
//! semver-compatible names), so only the `tool` export and the `types` it
//! uses are generated here.

frozen_contract!("../../wit/v1.0.0");

/// A 1.0.0 `tool-info`: it declares no input roles, its failures cancel no
/// siblings, its instances are not reused, and every per-call export is
/// asked.
impl From<old::ToolInfo> for new::ToolInfo {
    fn from(info: old::ToolInfo) -> Self {
        new::ToolInfo {
            name: info.name,
            aliases: info.aliases,
            description: info.description,
            prompt: info.prompt,
            search_hint: info.search_hint,
            input_schema: info.input_schema,
            output_schema: info.output_schema,
            max_result_size_chars: info.max_result_size_chars,
            should_defer: info.should_defer,
            always_load: info.always_load,
            interrupt_behavior: info.interrupt_behavior.into(),
            read_only_hint: info.read_only_hint,
            destructive_hint: info.destructive_hint,
            input_roles: new::InputRoles { paths: Vec::new(), command: None, addresses: Vec::new() },
            cancels_siblings_on_failure: false,
            reuse_instance: false,
            concurrency_safe_hint: None,
            validates_input: true,
            checks_permissions: true,
        }
    }
}
