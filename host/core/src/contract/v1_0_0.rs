//! The frozen contract 1.0.0 (`wit/v1.0.0/tool.wit`): bindings for what
//! components built against it export, and their answers in the current
//! contract's types. Its host interfaces did not change: the linker serves
//! their `…@1.0.0` imports with the current definitions (wasmtime matches
//! semver-compatible names), so only the `tool` export and the `types` it
//! uses are generated here.

frozen_contract!("../../wit/v1.0.0");

/// A 1.0.0 `tool-info`: it declares no input roles, and its failures cancel
/// no siblings.
pub fn info(info: old::ToolInfo) -> new::ToolInfo {
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
        interrupt_behavior: match info.interrupt_behavior {
            old::InterruptBehavior::Cancel => new::InterruptBehavior::Cancel,
            old::InterruptBehavior::Block => new::InterruptBehavior::Block,
        },
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
