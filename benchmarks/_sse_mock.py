"""The loop of a bench mock: HTTP/1.1 keep-alive on loopback, each request's JSON body
answered with the whole response the mock's ``respond`` makes of it (stdlib only).

Usage from a mock module: ``serve(respond)`` under ``if __name__ == "__main__"``; it prints
``PORT n`` once listening (``sys.argv[1]``: the port, 0 = a free one).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Callable
from typing import Any

Respond = Callable[[dict[str, Any], dict[str, str]], bytes]
"""(request body, lower-cased headers) -> the whole HTTP response, head and body."""


async def _connection(
    respond: Respond, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            headers = {}
            for line in head.decode("latin-1").split("\r\n")[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            request = json.loads(await reader.readexactly(int(headers.get("content-length", 0))))
            writer.write(respond(request, headers))
            await writer.drain()
    writer.close()


async def _main(respond: Respond, port: int) -> None:
    server = await asyncio.start_server(lambda r, w: _connection(respond, r, w), "127.0.0.1", port)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def serve(respond: Respond) -> None:
    """Serve until killed, on the port ``sys.argv[1]`` names."""
    asyncio.run(_main(respond, int(sys.argv[1]) if len(sys.argv) > 1 else 0))
