"""An MCP server on the official Python SDK (FastMCP) for toolhost's tests
of MCP servers' tools in its pool: tools that answer, report progress,
crash, flood, babble, hang, show what `_meta` they got, change the tool list, write files and open sockets."""

import asyncio
import os
import socket
import sys
import time

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations

mcp = FastMCP("probe")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> str:
    """Returns the text it is given."""
    return text


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def meta(ctx: Context) -> str:
    """Returns the request's `_meta` as JSON (what a client passed on, such
    as its trace context)."""
    import json

    meta = ctx.request_context.meta
    return json.dumps(meta.model_dump(exclude_none=True) if meta is not None else {})


@mcp.tool()
async def slow(steps: int, ctx: Context, mark: str = "") -> str:
    """Reports progress `steps` times, a tenth of a second apart (and, given
    `mark`, appends a line to that file at each step)."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
        if mark:
            with open(mark, "a") as f:
                f.write(f"{i + 1}\n")
        await asyncio.sleep(0.1)
    return f"{steps} steps"


@mcp.tool()
def crash() -> str:
    """Exits at once."""
    print("about to exit", file=sys.stderr, flush=True)
    os._exit(3)


@mcp.tool()
def flood() -> str:
    """Writes one line of 17 MiB to the protocol stream."""
    sys.stdout.buffer.write(b"x" * (17 << 20))
    sys.stdout.buffer.flush()
    time.sleep(60)
    return "flooded"


@mcp.tool()
def babble(bytes_hex: str = "") -> str:
    """Writes a line that is not a protocol message to stdout (a log line by
    default, else the bytes given in hex), then waits."""
    line = bytes.fromhex(bytes_hex) if bytes_hex else b"Server log: handling a call"
    sys.stdout.buffer.write(line + b"\n")
    sys.stdout.buffer.flush()
    time.sleep(60)
    return "babbled"


@mcp.tool()
def hang() -> str:
    """Never answers."""
    time.sleep(3600)
    return "woke"


@mcp.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `added` and tells the client its tools changed."""
    mcp.add_tool(lambda: "I was added", name="added", description="A tool added while the server runs")
    await ctx.session.send_tool_list_changed()
    return "grown"


@mcp.tool()
def write(path: str) -> str:
    """Writes `x` to the file at `path`."""
    with open(path, "w") as f:
        f.write("x")
    return f"wrote {path}"


@mcp.tool()
def connect(host: str, port: int) -> str:
    """Opens a TCP connection."""
    socket.create_connection((host, port), timeout=3).close()
    return "connected"


@mcp.tool()
def header(name: str, ctx: Context) -> str:
    """The value of a header of the HTTP request that made the call."""
    request = ctx.request_context.request
    if request is None:
        return "(not over HTTP)"
    return request.headers.get(name, "(none)")


@mcp.tool()
def env(name: str) -> str:
    """The value of an environment variable."""
    return os.environ.get(name, "(unset)")


if __name__ == "__main__":
    # `server.py` speaks stdio; `server.py --http PORT` streamable HTTP at
    # http://127.0.0.1:PORT/mcp.
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        mcp.settings.host = "127.0.0.1"
        mcp.settings.port = int(sys.argv[2])
        mcp.run(transport="streamable-http")
    else:
        mcp.run()
