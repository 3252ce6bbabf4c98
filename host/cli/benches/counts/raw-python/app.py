"""A tool as a third party writes it for the frozen 1.0.0 contract with
componentize-py alone: no SDK, so no declared hints — the host asks every
question of the contract (`is-concurrency-safe`, `is-read-only`,
`validate-input`, `check-permissions`) before `call`.

Built by the counts benchmark: componentize-py -d wit/v1.0.0 -w plugin.
"""

import json

from wit_world import exports
from wit_world.imports import types

SCHEMA = json.dumps({
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
})


class Tool(exports.Tool):
    def info(self):
        return types.ToolInfo(
            name="Upper",
            aliases=[],
            description="Upper-cases a text.",
            prompt="Upper-cases the text it is given.",
            search_hint=None,
            input_schema=SCHEMA,
            output_schema=None,
            max_result_size_chars=None,
            should_defer=False,
            always_load=False,
            interrupt_behavior=types.InterruptBehavior.CANCEL,
            read_only_hint=None,
            destructive_hint=None,
        )

    def is_enabled(self):
        return True

    def is_concurrency_safe(self, input):
        return True

    def is_read_only(self, input):
        return True

    def is_destructive(self, input):
        return False

    def validate_input(self, input, ctx):
        return None

    def check_permissions(self, input, ctx):
        return types.PermissionDecision_Passthrough()

    def call(self, input, ctx):
        text = json.loads(input)["text"]
        return types.ToolOutput([types.ContentBlock_Text(text.upper())], None, False)
