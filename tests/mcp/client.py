"""Drives `toolhost serve` with the official MCP Python SDK (the 2.x line's
`Client`, or the 1.x line's `ClientSession`), over stdio or streamable HTTP.

    python client.py CONFIG.json SCENARIO

CONFIG: {"command": [...], "env": {...}, "workspace": DIR} for stdio, or
{"url": URL, "token": TOKEN?, "workspace": DIR} for HTTP, with "mode" for the
2.x line: "auto" (what clients do by default: 2026-07-28 when the server
offers it), "2026-07-28" (pinned: no discovery, no handshake) or "legacy"
(`initialize` at 2025-11-25). Each scenario
asserts what it checks and prints `PASS <name>` per check; any failure raises
(exit status 1). The end-to-end tests in tests/all/mcp.rs run it.
"""

import asyncio
import importlib.metadata
import json
import os
import re
import shutil
import sys
import time
from contextlib import asynccontextmanager

import jsonschema

try:  # 2.x keeps the protocol types in their own package
    import mcp_types as types
except ImportError:  # 1.x
    from mcp import types

from mcp import StdioServerParameters

MAJOR = int(importlib.metadata.version("mcp").split(".")[0])
CFG = json.loads(open(sys.argv[1]).read())
WS = CFG["workspace"]


def field(obj, camel):
    """A model field by its protocol name (2.x spells attributes in snake_case)."""
    snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel)
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


def passed(name):
    print(f"PASS {name}", flush=True)


def ws(rel):
    return os.path.join(WS, rel)


class Conn:
    """The calls the scenarios make, on either SDK line and any revision.

    On 2026-07-28 over HTTP, calls share state only through a handle: the
    connection starts one (StartSession) and passes it in every call. Over
    stdio it does not: calls without one share the connection's state."""

    def __init__(self, client, session):
        self.client = client  # 2.x Client, or None
        self.session = session  # the ClientSession
        self.handle = None

    @property
    def sessionless(self):
        return self.client is not None and self.client.protocol_version == "2026-07-28"

    async def start_session(self):
        r = await self.client.call_tool("StartSession", {})
        handle = field(r, "structuredContent")["toolhost_session"]
        assert re.fullmatch(r"session_[a-z2-7]{26}", handle), handle
        return handle

    async def list_tools(self):
        return (await (self.client or self.session).list_tools()).tools

    async def discover(self):
        """The server's own answer to `server/discover`."""
        raw = await self.client.session.send_discover("2026-07-28")
        return types.DiscoverResult.model_validate(raw)

    async def capabilities(self):
        if self.client is not None:
            if self.client.mode == "2026-07-28":
                # Pinned: nothing was discovered (the client made up a
                # discovery result); ask the server.
                return (await self.discover()).capabilities
            return self.client.server_capabilities
        return self.session.get_server_capabilities()

    async def call(self, name, args, progress=None, meta=None):
        if self.handle is not None:
            args = {**args, "toolhost_session": self.handle}
        if self.client is not None:
            return await self.client.call_tool(name, args, progress_callback=progress, meta=meta)
        return await self.session.call_tool(name, args, progress_callback=progress)

    async def call_and_cancel(self, name, args, after):
        """Starts a call and cancels it (`notifications/cancelled`) after `after` seconds."""
        if self.client is not None:
            # 2.x: abandoning a request sends notifications/cancelled (or,
            # 2026-07-28 over HTTP, closes the request's stream).
            try:
                await asyncio.wait_for(self.call(name, args), timeout=after)
            except (asyncio.TimeoutError, TimeoutError):
                return
            raise AssertionError("the call ended before it was cancelled")
        # 1.x sends nothing when a caller gives up: send it as a client would.
        request_id = self.session._request_id
        task = asyncio.create_task(self.session.call_tool(name, args))
        await asyncio.sleep(after)
        assert not task.done(), "the call ended before it was cancelled"
        await self.session.send_notification(
            types.ClientNotification(
                types.CancelledNotification(
                    method="notifications/cancelled",
                    params=types.CancelledNotificationParams(requestId=request_id, reason="test"),
                )
            )
        )
        task.cancel()


@asynccontextmanager
async def connect(elicit=None, on_message=None):
    stdio = "command" in CFG
    headers = {"Authorization": f"Bearer {CFG['token']}"} if CFG.get("token") else {}
    if stdio:
        command, *args = CFG["command"]
        params = StdioServerParameters(command=command, args=args, env=CFG["env"])
    if MAJOR >= 2:
        from mcp import Client

        if stdio:
            server = params
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))
            server = streamable_http_client(CFG["url"], http_client=http)
        mode = CFG.get("mode", "auto")
        async with Client(
            server, mode=mode, elicitation_callback=elicit, message_handler=on_message, cache=None
        ) as client:
            if mode == "auto":
                assert client.protocol_version == "2026-07-28", client.protocol_version
            conn = Conn(client, client.session)
            if conn.sessionless and not stdio:
                conn.handle = await conn.start_session()
            yield conn
    else:
        from mcp import ClientSession

        if stdio:
            from mcp.client.stdio import stdio_client

            transport = stdio_client(params)
        else:
            from mcp.client.streamable_http import streamablehttp_client

            transport = streamablehttp_client(CFG["url"], headers=headers)
        async with transport as streams:
            async with ClientSession(
                streams[0], streams[1], elicitation_callback=elicit, message_handler=on_message
            ) as session:
                await session.initialize()
                yield Conn(None, session)


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def ok(result, name):
    assert not field(result, 'isError'), f"{name} failed: {text(result)}"
    return text(result)


def err(result, name, needle=None):
    assert field(result, 'isError'), f"{name} should have failed: {text(result)}"
    if needle is not None:
        assert needle in text(result), f"{name}: expected {needle!r} in {text(result)!r}"
    return text(result)


async def scenario_main():
    async with connect() as c:
        tools = await c.list_tools()
        names = [t.name for t in tools]
        assert names == sorted(names), names
        for expected in ["Bash", "Edit", "Glob", "Grep", "Read", "TaskStop", "Write"]:
            assert expected in names, names
        assert "TaskOutput" not in names, names
        for t in tools:
            schema = field(t, 'inputSchema')
            jsonschema.validators.validator_for(schema).check_schema(schema)
            assert schema.get("type") == "object", (t.name, schema)
            assert t.description, t.name
        by_name = {t.name: t for t in tools}
        for name in ["Read", "Glob", "Grep"]:
            assert by_name[name].annotations and field(by_name[name].annotations, 'readOnlyHint') is True, name
        for name in ["Write", "Edit", "TaskStop"]:
            assert by_name[name].annotations and field(by_name[name].annotations, 'readOnlyHint') is False, name
        # Read-only or not depends on the command: no claim.
        assert by_name["Bash"].annotations is None or field(by_name["Bash"].annotations, "readOnlyHint") is None
        passed("list tools, schemas, annotations")

        # Every built-in, successfully and with bad input.
        assert "hello" in ok(await c.call("Read", {"file_path": ws("a.txt")}), "Read")
        err(await c.call("Read", {}), "Read {}", "file_path")
        ok(await c.call("Write", {"file_path": ws("new.txt"), "content": "one two\n"}), "Write")
        assert open(ws("new.txt")).read() == "one two\n"
        err(await c.call("Write", {"file_path": 5, "content": "x"}), "Write bad")
        ok(await c.call("Read", {"file_path": ws("new.txt")}), "Read before Edit")
        ok(await c.call("Edit", {"file_path": ws("new.txt"), "old_string": "two", "new_string": "three"}), "Edit")
        assert open(ws("new.txt")).read() == "one three\n"
        err(await c.call("Edit", {"file_path": ws("new.txt")}), "Edit bad")
        assert "a.txt" in ok(await c.call("Glob", {"pattern": "*.txt"}), "Glob")
        err(await c.call("Glob", {"pattern": 3}), "Glob bad")
        assert "a.txt" in ok(await c.call("Grep", {"pattern": "hello"}), "Grep")
        err(await c.call("Grep", {}), "Grep bad")
        assert "hi" in ok(await c.call("Bash", {"command": "echo hi"}), "Bash")
        err(await c.call("Bash", {"command": "exit 3"}), "Bash exit 3")
        err(await c.call("Bash", {}), "Bash bad", "command")
        started = ok(await c.call("Bash", {"command": "echo background", "run_in_background": True}), "Bash bg")
        output_file = re.search(r'Output is being written to: (/\S+\.output)\. ', started).group(1)
        for _ in range(50):
            out = ok(await c.call("Read", {"file_path": output_file}), "Read the output file")
            if "background" in out:
                break
            await asyncio.sleep(0.1)
        assert "1\tbackground" in out, out
        err(await c.call("TaskOutput", {"task_id": "nope"}), "TaskOutput is gone", "No such tool available: TaskOutput")
        started = ok(await c.call("Bash", {"command": "sleep 30", "run_in_background": True}), "Bash bg sleep")
        task_id = re.search(r'ID: (b[0-9a-z]{25})', started).group(1)
        ok(await c.call("TaskStop", {"task_id": task_id}), "TaskStop")
        err(await c.call("TaskStop", {}), "TaskStop bad")
        passed("every built-in tool, with good and bad input")

        err(await c.call("NoSuchTool", {"x": 1}), "unknown tool", "No such tool")
        passed("unknown tool is an error result")

        denied = err(await c.call("Bash", {"command": "curl http://example.com"}), "deny rule")
        assert "Bash(curl:*)" in denied, denied
        # An ask with no elicitation in this client: denied, naming a rule.
        asked = err(await c.call("Bash", {"command": "rm -f gone.txt"}), "ask without elicitation")
        assert "Bash(rm" in asked, asked
        passed("permissions: deny rule, ask without elicitation")

        # 20 calls at once in one session.
        began = time.monotonic()
        results = await asyncio.gather(*[c.call("Read", {"file_path": ws(f"many/{i}.txt")}) for i in range(20)])
        for i, r in enumerate(results):
            assert f"file number {i}" in ok(r, f"Read {i}"), text(r)
        slow = await asyncio.gather(*[c.call("Bash", {"command": "sleep 0.5"}) for i in range(2)])
        for r in slow:
            ok(r, "slow")
        passed(f"20 concurrent calls ({time.monotonic() - began:.2f} s)")

        # Progress for a long Bash command, before its result.
        notes = []

        async def progress(p, total, message):
            notes.append((time.monotonic(), p, message))

        command = "for i in 1 2 3 4; do echo line$i; sleep 0.3; done"
        r = await c.call("Bash", {"command": command}, progress=progress)
        ended = time.monotonic()
        ok(r, "long Bash")
        assert len(notes) >= 2, notes
        assert "line1" in (notes[0][2] or ""), notes
        assert notes[0][0] < ended - 0.5, "the first progress came only at the end"
        assert [n[1] for n in notes] == sorted(n[1] for n in notes), notes
        passed(f"progress notifications ({len(notes)})")

        # Cancellation stops the process.
        pid_file = ws("cancel.pid")
        await c.call_and_cancel("Bash", {"command": f"echo $$ > {pid_file}; exec sleep 30"}, after=1.0)
        pid = int(open(pid_file).read())
        for _ in range(100):
            if not alive(pid):
                break
            await asyncio.sleep(0.05)
        assert not alive(pid), f"process {pid} still runs after the cancellation"
        # The session goes on.
        assert "hi" in ok(await c.call("Bash", {"command": "echo hi"}), "after cancel")
        passed("cancellation stops the process")


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        # Gone before or while its stat was read.
        return False


async def scenario_elicit():
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        decision = "allow once" if "allowed.txt" in params.message else "deny"
        return types.ElicitResult(action="accept", content={"decision": decision, "reason": "not that one"})

    async with connect(elicit) as c:
        ok(await c.call("Bash", {"command": f"rm -f {ws('allowed.txt')}"}), "approved")
        assert not os.path.exists(ws("allowed.txt"))
        refused = err(await c.call("Bash", {"command": f"rm -f {ws('kept.txt')}"}), "refused")
        assert "not that one" in refused, refused
        assert os.path.exists(ws("kept.txt"))
        assert len(asked) == 2 and "Bash" in asked[0], asked
        passed("elicitation: allow once, deny with a reason")


async def scenario_always():
    """`allow always` over elicitation: offered with the rule, kept, and no second ask."""
    asked = []

    async def elicit(context, params):
        schema = field(params, "requestedSchema")
        if not isinstance(schema, dict):
            schema = schema.model_dump(by_alias=True)
        choices = schema["properties"]["decision"]["enum"]
        asked.append((params.message, choices))
        return types.ElicitResult(action="accept", content={"decision": "allow always"})

    async with connect(elicit) as c:
        ok(await c.call("Bash", {"command": "touch made.txt"}), "first")
        assert len(asked) == 1 and "allow always" in asked[0][1], asked
        assert "Bash(touch made.txt)" in asked[0][0], asked
        os.remove(ws("made.txt"))
        ok(await c.call("Bash", {"command": "touch made.txt"}), "second")
        assert len(asked) == 1, f"asked again: {asked}"
        assert os.path.exists(ws("made.txt"))
    local = json.load(open(ws(".toolhost/settings.local.json")))
    assert "Bash(touch made.txt)" in local["permissions"]["allow"], local
    passed("elicitation: allow always keeps the rule")


async def scenario_grant():
    """A capability fault asked by elicitation: "allow always" grants what the tool
    requested, the call is retried and succeeds, the grant is kept (no second ask)."""
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "allow always"})

    notes = ws("data/notes.txt")
    async with connect(elicit) as c:
        text = ok(await c.call("Grantee", {"action": "read", "path": notes}), "first")
        assert text == "granted data", text
        assert len(asked) == 1 and "requested what it was not granted" in asked[0], asked
        assert "toolGrants.Grantee" in asked[0], asked
        text = ok(await c.call("Grantee", {"action": "read", "path": notes}), "second")
        assert text == "granted data" and len(asked) == 1, (text, asked)
    local = json.load(open(ws(".toolhost/settings.local.json")))
    dirs = local["toolGrants"]["Grantee"]["directories"]
    assert {"path": ws("data"), "access": "read-only"} in dirs, local
    passed("elicitation: a capability fault grants and retries")


async def scenario_two_clients():
    """Two clients at once, each its own session (Edit needs a Read in the same session)."""

    async def client(name, barrier):
        async with connect() as c:
            path = ws(f"{name}.txt")
            ok(await c.call("Read", {"file_path": path}), f"{name} Read")
            await barrier.wait()
            other = ws(("b" if name == "a" else "a") + ".txt")
            err(await c.call("Edit", {"file_path": other, "old_string": "x", "new_string": "y"}), f"{name} Edit other")
            ok(await c.call("Edit", {"file_path": path, "old_string": "x", "new_string": name}), f"{name} Edit own")

    class Barrier:
        def __init__(self, n):
            self.n, self.event = n, asyncio.Event()

        async def wait(self):
            self.n -= 1
            if self.n == 0:
                self.event.set()
            await self.event.wait()

    barrier = Barrier(2)
    await asyncio.gather(client("a", barrier), client("b", barrier))
    assert open(ws("a.txt")).read() == "a\n" and open(ws("b.txt")).read() == "b\n"
    passed("two clients at once, separate sessions")


@asynccontextmanager
async def listening(c, changed):
    """On 2026-07-28, changes are heard on a `subscriptions/listen` stream."""
    if not c.sessionless:
        yield
        return
    async with c.client.listen(tools_list_changed=True) as sub:
        assert field(sub.honored, "toolsListChanged") is True, sub.honored

        async def hear():
            async for event in sub:
                if type(event).__name__ == "ToolsListChanged":
                    changed.set()

        task = asyncio.create_task(hear())
        try:
            yield
        finally:
            task.cancel()


async def scenario_reload():
    """Hot loading: the server says it tells list changes; a component dropped into the
    plugins directory is announced by notifications/tools/list_changed, listed and
    callable; removed, it is announced again and gone."""
    changed = asyncio.Event()

    async def on_message(message):
        message = getattr(message, "root", message)  # 1.x wraps notifications
        if type(message).__name__ == "ToolListChangedNotification":
            changed.set()

    async def announced(what):
        try:
            await asyncio.wait_for(changed.wait(), 60)
        except asyncio.TimeoutError:
            raise AssertionError(f"no notifications/tools/list_changed after {what}")
        changed.clear()

    target = os.path.join(CFG["plugins"], "echo.wasm")
    async with connect(on_message=on_message) as c, listening(c, changed):
        tools = (await c.capabilities()).tools
        assert tools is not None and field(tools, "listChanged") is True, tools
        assert "Echo" not in [t.name for t in await c.list_tools()]
        partial = os.path.join(CFG["plugins"], ".echo.partial")
        shutil.copy(CFG["echo"], partial)
        os.rename(partial, target)
        await announced("adding echo.wasm")
        assert "Echo" in [t.name for t in await c.list_tools()]
        assert ok(await c.call("Echo", {"text": "hot"}), "new tool") == "hot"
        os.remove(target)
        await announced("removing echo.wasm")
        assert "Echo" not in [t.name for t in await c.list_tools()]
        err(await c.call("Echo", {"text": "x"}), "removed tool", "No such tool available: Echo")
    passed("hot reload: list_changed, the new tool, its removal")


async def scenario_sessionless():
    """2026-07-28 only: discovery, the list's cache fields and handle argument,
    state shared by handle and only by handle, approvals that cannot be
    replayed, and a trace context carried in `_meta`."""
    async with connect() as c:
        assert c.sessionless, c.client.protocol_version
        discovered = await c.discover()
        versions = field(discovered, "supportedVersions")
        assert "2026-07-28" in versions, versions
        assert field(discovered.capabilities.tools, "listChanged") is True
        passed("server/discover")

        listed = await c.client.list_tools()
        assert field(listed, "ttlMs") > 0 and field(listed, "cacheScope") in ("private", "public"), listed
        names = [t.name for t in listed.tools]
        assert names == sorted(names) and "StartSession" in names, names
        again = [t.name for t in (await c.client.list_tools()).tools]
        assert again == names, "the order is the same every time"
        for t in listed.tools:
            props = field(t, "inputSchema").get("properties", {})
            assert (t.name == "StartSession") != ("toolhost_session" in props), (t.name, props)
        passed("tools/list: cache fields, order, the handle argument")

        stdio = "command" in CFG
        a, b = await c.start_session(), await c.start_session()
        assert a != b
        path = ws("handles.txt")
        with open(path, "w") as f:
            f.write("one\n")
        ok(await c.client.call_tool("Read", {"file_path": path, "toolhost_session": a}), "Read with a")
        edit = {"file_path": path, "old_string": "one", "new_string": "two"}
        err(await c.client.call_tool("Edit", {**edit, "toolhost_session": b}), "Edit with b", "read")
        if not stdio:
            # No handle over HTTP: state of the call's own.
            err(await c.client.call_tool("Edit", edit), "Edit without a handle", "read")
        ok(await c.client.call_tool("Edit", {**edit, "toolhost_session": a}), "Edit with a")
        assert open(path).read() == "two\n"
        unknown = "session_" + "a" * 26
        e = err(await c.client.call_tool("Read", {"file_path": path, "toolhost_session": unknown}), "unknown", "Unknown")
        assert "StartSession" in e, e
        err(await c.client.call_tool("Read", {"file_path": path, "toolhost_session": 7}), "not a string")
        started = ok(await c.client.call_tool(
            "Bash", {"command": "echo bg", "run_in_background": True, "toolhost_session": a}), "background")
        output_file = re.search(r"Output is being written to: (/\S+\.output)\. ", started).group(1)
        for _ in range(50):
            out = ok(await c.client.call_tool("Read", {"file_path": output_file, "toolhost_session": a}), "output")
            if "bg" in out:
                break
            await asyncio.sleep(0.1)
        assert "1\tbg" in out, out
        err(await c.client.call_tool("Read", {"file_path": output_file, "toolhost_session": b}), "other handle")
        passed("state handles: shared by handle, isolated between handles, checked")

        # Approvals: a made-up state, a state replayed for another call.
        args = {"command": f"rm -f {ws('kept.txt')}"}
        if c.handle:
            args["toolhost_session"] = c.handle
        bogus = await c.client.session.call_tool(
            "Bash", args, allow_input_required=True, request_state="approval_" + "b" * 26,
            input_responses={"approval": {"action": "accept", "content": {"decision": "allow once"}}})
        err(bogus, "made-up approval", "unknown or has expired")
        assert os.path.exists(ws("kept.txt"))
        passed("approvals: an unknown requestState is refused")

        traced = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        ok(await c.call("Read", {"file_path": ws("a.txt")}, meta={"traceparent": traced}), "traced")
        passed("a call carrying traceparent")


async def scenario_replay():
    """2026-07-28 only: an approval's requestState answers its own call once:
    not another call, not the same call twice."""
    async def never(context, params):
        raise AssertionError("the test answers approvals itself")

    async with connect(elicit=never) as c:
        session = c.client.session
        args = {"command": f"rm -f {ws('kept.txt')}"}
        if c.handle:
            args["toolhost_session"] = c.handle
        first = await session.call_tool("Bash", args, allow_input_required=True)
        assert field(first, "resultType") == "input_required", first
        state = field(first, "requestState")
        request = field(first, "inputRequests")["approval"]
        assert "rm -f" in request.params.message, request
        yes = {"approval": {"action": "accept", "content": {"decision": "allow once"}}}
        other = {**args, "command": f"rm -f {ws('allowed.txt')}"}
        r = await session.call_tool("Bash", other, allow_input_required=True, request_state=state, input_responses=yes)
        err(r, "replayed for another call", "another call")
        assert os.path.exists(ws("allowed.txt"))
        # That state is used up; a fresh one answers its call once.
        first = await session.call_tool("Bash", args, allow_input_required=True)
        state = field(first, "requestState")
        ok(await session.call_tool("Bash", args, allow_input_required=True, request_state=state, input_responses=yes),
           "answered")
        assert not os.path.exists(ws("kept.txt"))
        r = await session.call_tool("Bash", args, allow_input_required=True, request_state=state, input_responses=yes)
        err(r, "replayed", "unknown or has expired")
        passed("approvals: a requestState answers its own call, once")


if __name__ == "__main__":
    scenario = {
        "main": scenario_main,
        "elicit": scenario_elicit,
        "two-clients": scenario_two_clients,
        "always": scenario_always,
        "grant": scenario_grant,
        "reload": scenario_reload,
        "sessionless": scenario_sessionless,
        "replay": scenario_replay,
    }[sys.argv[2]]
    asyncio.run(scenario())
