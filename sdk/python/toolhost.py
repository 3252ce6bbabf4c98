"""Writing toolhost tools in Python, built into components with componentize-py.

A tool is a subclass of `Tool` with its declaration as class attributes and
`call` (plus, where the answer depends on the input, the classifications):

    import toolhost

    class Hello(toolhost.Tool):
        name = "Hello"
        description = "Greets someone."
        input_schema = {
            "type": "object",
            "properties": {"who": {"type": "string"}},
            "required": ["who"],
        }
        read_only = True

        def call(self, input, ctx):
            ctx.progress("greeting")
            return f"Hello, {input['who']}!"

    Tool = toolhost.export(Hello)   # the class componentize-py binds

and is built with
`componentize-py -d WIT -w plugin componentize -p SDK/python -p . app -o hello.wasm`.

What the helper does for you:
- Fail-closed defaults: not read-only, not concurrency-safe, not
  destructive, no opinion on permissions; a classification that raises
  answers the safe way (`False`).
- What stays at its default, or is declared (`read_only = True`,
  `concurrency_safe = True`), is told to the host once, in the tool's info,
  and the host stops asking on each call.
- `raise toolhost.ToolError(message, kind)` becomes the model's error
  result; any other exception becomes an `internal` error carrying its
  traceback (file, line and the exception), instead of a crashed instance.
- `print` and writes to `sys.stderr` go to the host's log (info and warn),
  tagged with the tool and the call.
- `input_schema` gets `additionalProperties: false` unless it says
  otherwise, so a misspelt field is refused by the host before `call`.
- The input arrives parsed (a dict); `call` may return a string, a dict or
  list (sent as JSON), or an `Output`.
"""

import json
import sys
import traceback

from componentize_py_types import Err
from wit_world.imports import progress as _progress
from wit_world.imports import session as _session
from wit_world.imports import types

__all__ = ["Tool", "ToolError", "Context", "Output", "Session", "export", "text", "json_block"]

# The error kinds, by the names the contract gives them.
_KINDS = {
    "invalid-input": types.ErrorKind.INVALID_INPUT,
    "not-found": types.ErrorKind.NOT_FOUND,
    "permission-denied": types.ErrorKind.PERMISSION_DENIED,
    "conflict": types.ErrorKind.CONFLICT,
    "too-large": types.ErrorKind.TOO_LARGE,
    "unsupported": types.ErrorKind.UNSUPPORTED,
    "io": types.ErrorKind.IO,
    "internal": types.ErrorKind.INTERNAL,
}

_ACCESS = {"read": types.PathAccess.READ, "search": types.PathAccess.SEARCH, "edit": types.PathAccess.EDIT}


class ToolError(Exception):
    """A failure the model can act on: `message` says what went wrong and what
    to do about it; `kind` is one of the contract's error kinds
    (`invalid-input`, `not-found`, `permission-denied`, `conflict`,
    `too-large`, `unsupported`, `io`, `internal`)."""

    def __init__(self, message, kind="invalid-input"):
        if kind not in _KINDS:
            raise ValueError(f"unknown error kind {kind!r}; one of {', '.join(_KINDS)}")
        super().__init__(message)
        self.message = message
        self.kind = kind


class Output:
    """A result: content blocks in order, optional structured JSON (valid
    against `output_schema` if the tool declares one), and whether the model
    should see it as an error while still getting the content."""

    def __init__(self, content, structured=None, is_error=False):
        self.content = content if isinstance(content, list) else [content]
        self.structured = structured
        self.is_error = is_error


def text(value):
    """A text block."""
    return types.ContentBlock_Text(str(value))


def json_block(value):
    """A JSON block."""
    return types.ContentBlock_Json(json.dumps(value))


class Session:
    """The tool's own key-value state in this session (values are strings;
    `get_json`/`set_json` store JSON): the state that outlives a call (a
    fresh instance serves each call unless the tool sets `reuse_instance`)."""

    def get(self, key, default=None):
        value = _session.get(key)
        return default if value is None else value

    def set(self, key, value):
        try:
            _session.set(key, value)
        except Err as e:
            raise ToolError(f"session state refused {key!r}: {e.value.name.lower().replace('_', '-')}", "too-large")

    def get_json(self, key, default=None):
        value = _session.get(key)
        return default if value is None else json.loads(value)

    def set_json(self, key, value):
        self.set(key, json.dumps(value))

    def remove(self, key):
        _session.remove(key)

    def keys(self, prefix=""):
        return list(_session.keys(prefix))


class Context:
    """The call being served: its ids, directories and mode, progress, the log
    and session state."""

    _MODES = {
        types.PermissionMode.DEFAULT: "default",
        types.PermissionMode.PLAN: "plan",
        types.PermissionMode.ACCEPT_EDITS: "acceptEdits",
        types.PermissionMode.DONT_ASK: "dontAsk",
        types.PermissionMode.BYPASS_PERMISSIONS: "bypassPermissions",
    }

    def __init__(self, ctx):
        self.tool_use_id = ctx.tool_use_id
        self.session_id = ctx.session_id
        self.cwd = ctx.cwd
        self.working_dirs = list(ctx.working_dirs)
        self.read_only_dirs = list(ctx.read_only_dirs)
        self.mode = self._MODES.get(ctx.mode, "default")
        self.session = Session()

    def progress(self, message, data=None):
        """Tells the caller how the call is going (delivered at once)."""
        _progress.report(str(message), None if data is None else json.dumps(data))

    def log(self, message, level="info"):
        """A line in the host's log."""
        _log(level, str(message))


def _log(level, message):
    levels = {
        "trace": _progress.LogLevel.TRACE,
        "debug": _progress.LogLevel.DEBUG,
        "info": _progress.LogLevel.INFO,
        "warn": _progress.LogLevel.WARN,
        "error": _progress.LogLevel.ERROR,
    }
    _progress.log(levels.get(level, _progress.LogLevel.INFO), message)


class _LogWriter:
    """`sys.stdout` / `sys.stderr`: whole lines to the host's log."""

    def __init__(self, level):
        self.level, self.pending = level, ""

    def write(self, data):
        self.pending += data
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            _log(self.level, line)
        return len(data)

    def flush(self):
        if self.pending:
            _log(self.level, self.pending)
            self.pending = ""

    def isatty(self):
        return False


class Tool:
    """A tool's declaration and behaviour; see the module's documentation.

    Class attributes: `name` (letters, digits, `_`, `-`; at most 64),
    `description` (one line), `prompt` (what the model reads; defaults to
    the description), `input_schema` (a JSON Schema object), and optionally
    `aliases`, `search_hint`, `output_schema`, `max_result_size_chars`,
    `should_defer`, `always_load`, `cancel_on_interrupt` (True),
    `read_only` / `concurrency_safe` / `destructive` (True or False when the
    answer is the same for every input), `paths` ({field: "read" | "search" | "edit"}),
    `command` (the field holding a shell command), `addresses` (fields
    holding URLs or host names), `cancels_siblings_on_failure`,
    `reuse_instance` (True lets one warm instance serve a session's calls one
    after another, saving CPython's start-up on each: only for a tool whose
    calls leave nothing behind in module or class state that changes a later
    call; keep what must last in `ctx.session`).
    """

    name = None
    description = ""
    prompt = None
    aliases = ()
    search_hint = None
    input_schema = {"type": "object", "properties": {}}
    output_schema = None
    max_result_size_chars = None
    should_defer = False
    always_load = False
    cancel_on_interrupt = True
    read_only = None
    concurrency_safe = None
    destructive = None
    paths = {}
    command = None
    addresses = ()
    cancels_siblings_on_failure = False
    reuse_instance = False

    def is_enabled(self):
        return True

    def is_read_only(self, input):
        return bool(self.read_only)

    def is_concurrency_safe(self, input):
        return bool(self.concurrency_safe)

    def is_destructive(self, input):
        return bool(self.destructive)

    def validate_input(self, input, ctx):
        """Checks beyond the schema; raise `ToolError` to refuse the call."""

    def check_permissions(self, input, ctx):
        """`None` (no opinion: the host's rules and mode decide), or
        `("deny", reason)`, or `("ask", message)`."""
        return None

    def call(self, input, ctx):
        raise ToolError(f"{self.name} does not implement call", "internal")


def _error(e):
    if isinstance(e, ToolError):
        return Err(types.ToolError(_KINDS[e.kind], e.message))
    # A bug: its traceback, for whoever reads the result.
    trace = "".join(traceback.format_exception(type(e), e, e.__traceback__)).rstrip()
    return Err(types.ToolError(types.ErrorKind.INTERNAL, f"the tool failed with an exception:\n{trace}"))


def _content(value):
    if isinstance(value, (types.ContentBlock_Text, types.ContentBlock_Json, types.ContentBlock_Image)):
        return value
    if isinstance(value, str):
        return text(value)
    return json_block(value)


def _output(result):
    if isinstance(result, Output):
        structured = None if result.structured is None else json.dumps(result.structured)
        return types.ToolOutput([_content(c) for c in result.content], structured, result.is_error)
    if result is None:
        return types.ToolOutput([], None, False)
    return types.ToolOutput([_content(result)], None, False)


def _overrides(tool, method):
    return getattr(type(tool), method) is not getattr(Tool, method)


def _hint(tool, declared, method):
    # The declared answer; else, when the method is the default one, the
    # default's answer (the same for every input); else none.
    value = getattr(tool, declared)
    if value is not None:
        return bool(value)
    return None if _overrides(tool, method) else False


def _info(tool):
    if not tool.name:
        raise ValueError("a tool needs a name")
    schema = dict(tool.input_schema)
    schema.setdefault("type", "object")
    schema.setdefault("additionalProperties", False)
    behavior = types.InterruptBehavior.CANCEL if tool.cancel_on_interrupt else types.InterruptBehavior.BLOCK
    roles = types.InputRoles(
        [types.PathField(field, _ACCESS[access]) for field, access in dict(tool.paths).items()],
        tool.command,
        list(tool.addresses),
    )
    return types.ToolInfo(
        name=tool.name,
        aliases=list(tool.aliases),
        description=tool.description,
        prompt=tool.prompt if tool.prompt is not None else tool.description,
        search_hint=tool.search_hint,
        input_schema=json.dumps(schema),
        output_schema=None if tool.output_schema is None else json.dumps(tool.output_schema),
        max_result_size_chars=tool.max_result_size_chars,
        should_defer=tool.should_defer,
        always_load=tool.always_load,
        interrupt_behavior=behavior,
        read_only_hint=_hint(tool, "read_only", "is_read_only"),
        concurrency_safe_hint=_hint(tool, "concurrency_safe", "is_concurrency_safe"),
        destructive_hint=tool.destructive,
        input_roles=roles,
        cancels_siblings_on_failure=tool.cancels_siblings_on_failure,
        reuse_instance=bool(tool.reuse_instance),
        # The host skips the exports a tool leaves at their defaults: each
        # call into CPython costs about as much as a small call's own work.
        validates_input=_overrides(tool, "validate_input"),
        checks_permissions=_overrides(tool, "check_permissions"),
    )


def export(cls):
    """The class componentize-py binds to the contract's `tool` export, for a
    `Tool` subclass: assign it to `Tool` in the app module."""
    from wit_world import exports

    tool = cls()
    sys.stdout, sys.stderr = _LogWriter("info"), _LogWriter("warn")

    def classify(method, input):
        # A classification that fails answers the safe way.
        try:
            return bool(method(json.loads(input)))
        except Exception as e:
            _log("warn", f"{method.__name__} failed, answering False: {e!r}")
            return False

    class Bound(exports.Tool):
        def info(self):
            return _info(tool)

        def is_enabled(self):
            return bool(tool.is_enabled())

        def is_concurrency_safe(self, input):
            return classify(tool.is_concurrency_safe, input)

        def is_read_only(self, input):
            return classify(tool.is_read_only, input)

        def is_destructive(self, input):
            return classify(tool.is_destructive, input)

        def validate_input(self, input, ctx):
            try:
                tool.validate_input(json.loads(input), Context(ctx))
            except Exception as e:
                raise _error(e)

        def check_permissions(self, input, ctx):
            try:
                answer = tool.check_permissions(json.loads(input), Context(ctx))
            except Exception as e:
                return types.PermissionDecision_Deny(f"{tool.name} could not decide: {e}")
            if answer is None:
                return types.PermissionDecision_Passthrough()
            what, why = answer
            if what == "deny":
                return types.PermissionDecision_Deny(str(why))
            if what == "ask":
                return types.PermissionDecision_Ask(types.AskRequest(str(why), []))
            return types.PermissionDecision_Passthrough()

        def call(self, input, ctx):
            try:
                result = _output(tool.call(json.loads(input), Context(ctx)))
            except Exception as e:
                raise _error(e)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
            return result

    Bound.__name__ = Bound.__qualname__ = "Tool"
    return Bound
