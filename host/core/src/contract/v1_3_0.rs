//! The frozen contract 1.3.0 (`wit/v1.3.0/tool.wit`): bindings for what
//! components built against it export, and their answers in the current
//! contract's types. Its `tool-info` has every field of today's; only the
//! content blocks grew since (1.4.0 added `document`), which the shared
//! `output` conversion covers.

frozen_contract!("../../wit/v1.3.0");

/// A 1.3.0 `tool-info`, field by field.
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
        input_roles: new::InputRoles {
            paths: info
                .input_roles
                .paths
                .into_iter()
                .map(|p| new::PathField {
                    field: p.field,
                    access: match p.access {
                        old::PathAccess::Read => new::PathAccess::Read,
                        old::PathAccess::Search => new::PathAccess::Search,
                        old::PathAccess::Edit => new::PathAccess::Edit,
                    },
                })
                .collect(),
            command: info.input_roles.command,
            addresses: info.input_roles.addresses,
        },
        cancels_siblings_on_failure: info.cancels_siblings_on_failure,
        reuse_instance: info.reuse_instance,
        concurrency_safe_hint: info.concurrency_safe_hint,
        validates_input: info.validates_input,
        checks_permissions: info.checks_permissions,
    }
}
