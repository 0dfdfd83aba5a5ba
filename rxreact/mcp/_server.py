"""``MCPServer``: an MCP server (stdio subprocess or streamable HTTP) as a source of tools.

How each kind is reached: :mod:`rxreact.mcp._transports`; one connection: :mod:`rxreact.mcp._link`.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from rxreact.errors import ToolSourceError
from rxreact.mcp._content import result_content, result_text
from rxreact.mcp._link import Link, is_connection_loss, open_link
from rxreact.mcp._transports import Transport, http_transport, stdio_transport
from rxreact.messages import ContentPart
from rxreact.model.http._aio import run_on_io_loop
from rxreact.tools.tool import Tool

__all__ = ["MCPServer", "MCPToolError"]


class MCPToolError(Exception):
    """The MCP tool answered with ``isError``; the message is its text, for the model.

    Internal to a run: it becomes an error ``tool_result``, never an ``on_error``.
    """


class MCPServer:
    """An MCP server whose tools an agent can call: ``ReactAgent(model, tools=[server])``.

    Build one with :meth:`stdio` or :meth:`http`. It connects on first use (listing the tools
    when an agent is built) and stays connected until :meth:`close` (or the end of a ``with``
    block, or the end of the process). Calls go through the official ``mcp`` SDK on rxreact's
    I/O loop and hold no thread while they wait. Disposing a run cancels its calls (the server
    is told); a lost connection or session (the server restarted) is reconnected once and the
    call retried (a call whose connection broke mid-way may then run twice on the server: the
    SDK cannot tell whether it ran); a server that stays unreachable makes the call an error
    result.

    Args:
        prefix: put before every tool name (``"files_"``), to keep two servers' names apart.
        connect_timeout: seconds for connecting and listing the tools.
        mode: the SDK's protocol negotiation: ``"auto"`` (MCP 2026-07-28, falling back to
            the initialize handshake) or ``"legacy"`` (always the handshake).
        requires_approval: ask before every call of the server's tools (``True``) or of
            those named here (the server's names, without ``prefix``); see
            :mod:`rxreact.tools.approval`.
    """

    def __init__(
        self,
        transport: Transport,
        description: str,
        *,
        prefix: str = "",
        connect_timeout: float = 30.0,
        mode: str = "auto",
        requires_approval: bool | Collection[str] = False,
    ) -> None:
        """Prefer :meth:`stdio` and :meth:`http`; ``transport`` makes the SDK transport."""
        self._transport = transport
        self._description = description
        self.prefix = prefix
        self.connect_timeout = connect_timeout
        self.mode = mode
        self.requires_approval = requires_approval
        self._link: Link | None = None
        self._lock: asyncio.Lock | None = None  # made on the loop, where it is used
        self._closed = False
        self._tools: tuple[Tool[..., Any], ...] | None = None
        self._tools_lock = threading.Lock()
        _open_servers.add(self)

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        *,
        prefix: str = "",
        connect_timeout: float = 30.0,
        mode: str = "auto",
        requires_approval: bool | Collection[str] = False,
    ) -> MCPServer:
        """A server run as a subprocess, spoken to over its stdin/stdout.

        The process starts on first use and is stopped by :meth:`close`; ``env`` is added
        to a minimal default environment (``PATH``, ``HOME``, ...), as the SDK does.

        Raises:
            ConfigurationError: the ``mcp`` package is missing (``pip install 'rxreact[mcp]'``).
        """
        return cls(
            stdio_transport(command, args, env),
            f"stdio:{command}",
            prefix=prefix,
            connect_timeout=connect_timeout,
            mode=mode,
            requires_approval=requires_approval,
        )

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        prefix: str = "",
        connect_timeout: float = 30.0,
        mode: str = "auto",
        requires_approval: bool | Collection[str] = False,
    ) -> MCPServer:
        """A server at a streamable-HTTP endpoint (``http://host:port/mcp``).

        Raises:
            ConfigurationError: the ``mcp`` package is missing (``pip install 'rxreact[mcp]'``).
        """
        return cls(
            http_transport(url, headers),
            f"http:{url}",
            prefix=prefix,
            connect_timeout=connect_timeout,
            mode=mode,
            requires_approval=requires_approval,
        )

    def __repr__(self) -> str:
        return f"MCPServer({self._description!r}, prefix={self.prefix!r})"

    def __enter__(self) -> MCPServer:
        """Connect now (listing the tools); the block's end closes the server."""
        self.as_tools()
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- tool source -------------------------------------------------------------------------

    def as_tools(self) -> Sequence[Tool[..., Any]]:
        """The server's tools as rxreact tools (listed once, on first call; blocking).

        Raises:
            ToolSourceError: the server could not be started, reached or listed.
        """
        with self._tools_lock:
            if self._tools is None:
                # The time limit inside the coroutine: a wait that gives up also cancels it.
                listing = asyncio.wait_for(self._list_tools(), self.connect_timeout)
                try:
                    listed = run_on_io_loop(listing)
                except TimeoutError:
                    raise ToolSourceError(
                        f"{self!r} did not list its tools within {self.connect_timeout:g} s"
                    ) from None
                self._tools = tuple(self._make_tool(t) for t in listed)
            return self._tools

    def _make_tool(self, remote: Any) -> Tool[..., Any]:
        rule = self.requires_approval

        async def call(**arguments: Any) -> str | tuple[ContentPart, ...]:
            progress = arguments.pop(_PROGRESS, None)
            return await self._call(remote.name, arguments, progress)

        schema = {k: v for k, v in remote.input_schema.items() if k != "title"}
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        return Tool(
            name=f"{self.prefix}{remote.name}",
            description=remote.description or remote.title or f"The MCP tool {remote.name}.",
            parameters=schema,
            function=call,  # async: runs on the I/O loop; a dispose cancels it on the server
            requires_approval=rule if isinstance(rule, bool) else remote.name in rule,
            _progress_parameter=_PROGRESS,
        )

    def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, timeout: float | None = None
    ) -> str | tuple[ContentPart, ...]:
        """Call one of the server's tools directly, outside any run (blocking).

        ``name`` is the server's name for it (without ``prefix``); ``timeout`` in seconds
        cancels the call on the server when it passes. The result is its text, or its parts
        when it holds an image (text blocks as :class:`~rxreact.Text`, images as
        :class:`~rxreact.Image`).

        Raises:
            MCPToolError: the tool answered with ``isError``.
            ToolSourceError: the server cannot be reached.
            TimeoutError: ``timeout`` passed.
        """
        call = self._call(name, dict(arguments or {}), None)
        return run_on_io_loop(asyncio.wait_for(call, timeout))

    # -- on the I/O loop ---------------------------------------------------------------------

    async def _connected(self) -> Link:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._closed:
                raise ToolSourceError(f"{self!r} is closed")
            if self._link is None or self._link.dead:
                if self._link is not None:
                    await self._link.close()
                self._link = None
                try:
                    async with asyncio.timeout(self.connect_timeout):
                        self._link = await open_link(self._client_factory)
                except Exception as error:
                    raise ToolSourceError(f"cannot connect to {self!r}: {error}") from error
            return self._link

    async def _client_factory(self, stack: contextlib.AsyncExitStack) -> Any:
        from mcp import Client

        return Client(self._transport(stack), mode=self.mode)

    async def _drop(self, link: Link) -> None:
        """Forget a broken connection (once, however many calls saw it break)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._link is link:
                self._link = None
        await link.close()

    async def _list_tools(self) -> list[Any]:
        link = await self._connected()
        tools: list[Any] = []
        cursor: str | None = None
        while True:
            try:
                page = await link.client.list_tools(cursor=cursor)
            except Exception as error:
                raise ToolSourceError(f"{self!r} could not list its tools: {error}") from error
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools

    async def _call(
        self, name: str, arguments: dict[str, Any], progress: Callable[[Any], None] | None
    ) -> str | tuple[ContentPart, ...]:
        """Call once; on a lost connection or session, reconnect and call once more."""

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            if progress is not None:
                progress({"progress": done, "total": total, "message": message})

        for attempt in (1, 2):
            link = await self._connected()
            try:
                result = await link.client.call_tool(name, arguments, progress_callback=on_progress)
            except Exception as error:
                if attempt == 2 or not is_connection_loss(error, link):
                    raise
                await self._drop(link)
                continue
            if result.is_error:
                raise MCPToolError(result_text(result) or f"the MCP tool {name!r} failed")
            return result_content(result)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _aclose(self) -> None:
        self._closed = True
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            link, self._link = self._link, None
        if link is not None:
            await link.close()

    def close(self) -> None:
        """Disconnect: a stdio server's process is stopped. Idempotent; later calls fail."""
        if self._closed and self._link is None:
            return
        run_on_io_loop(self._aclose(), timeout=30)
        _open_servers.discard(self)


_PROGRESS = "__rxreact_progress"
"""The keyword the progress callback is passed under (no MCP tool argument is named so)."""


_open_servers: weakref.WeakSet[MCPServer] = weakref.WeakSet()


@atexit.register
def _close_open_servers() -> None:
    """No orphaned server processes: close what the program left open."""
    for server in list(_open_servers):
        with contextlib.suppress(Exception):
            server.close()
