"""A small real MCP server (the official SDK) for rxreact's MCP tests.

Run as ``python weather.py stdio`` (stdin/stdout) or ``python weather.py http PORT``
(streamable HTTP on 127.0.0.1; PORT 0 picks a free one). In HTTP mode the first line on
stdout is ``PORT <n>`` once the socket listens.
"""

from __future__ import annotations

import base64
import os
import socket
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent, TextContent

server = MCPServer("weather", log_level="ERROR")
_cancelled = anyio.Event()
_started = anyio.Event()


@server.tool()
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"sunny in {city}, 21 C"


@server.tool()
def fail(reason: str) -> str:
    """Always fails (the MCP result has isError)."""
    raise ToolError(reason)


@server.tool()
def picture() -> list[TextContent | ImageContent]:
    """A caption and a tiny image."""
    data = base64.b64encode(b"\x89PNG....").decode()
    return [
        TextContent(type="text", text="a red square"),
        ImageContent(type="image", data=data, mime_type="image/png"),
    ]


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
async def slow(ctx: Context) -> str:
    """Waits until cancelled (or 30 s)."""
    _started.set()
    try:
        await ctx.report_progress(1, 2, "started")
        await anyio.sleep(30)
    except anyio.get_cancelled_exc_class():
        _cancelled.set()
        raise
    return "not cancelled"


@server.tool()
async def was_cancelled() -> bool:
    """Whether a ``slow`` call started and was then cancelled (waits up to 10 s for it)."""
    with anyio.move_on_after(10):
        await _started.wait()
        await _cancelled.wait()
    return _cancelled.is_set()


@server.tool()
async def count(n: int, ctx: Context) -> str:
    """Reports progress n times, then answers."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
    return f"counted to {n}"


@server.tool()
async def traceparent(ctx: Context) -> str:
    """The W3C traceparent the client sent with this call ("" if none)."""
    meta = ctx.request_context.meta or {}
    return str(meta.get("traceparent", ""))


def _serve_http(port: int) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="error", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        _serve_http(int(sys.argv[2]))
