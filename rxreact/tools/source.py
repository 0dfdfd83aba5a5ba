"""Tool sources: one object that brings several tools, such as an MCP server.

``ReactAgent(model, tools=[get_weather, server])`` accepts, beside tools and plain functions,
any object with an ``as_tools()`` method. The agent asks it once, when it is built, and the
tools it lists join the others under one namespace: two tools with one name are an error
(an MCP server takes ``prefix=`` to keep its names apart).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from rxreact.errors import ToolDefinitionError
from rxreact.tools.tool import Tool, as_tool

__all__ = ["ToolSource", "collect_tools"]


@runtime_checkable
class ToolSource(Protocol):
    """Anything that provides tools to an agent (e.g. :class:`rxreact.mcp.MCPServer`)."""

    def as_tools(self) -> Sequence[Tool[..., Any]]:
        """The tools, as the model will see them (called when an agent is built)."""
        ...


def collect_tools(
    items: Iterable[Tool[..., Any] | Callable[..., Any] | ToolSource],
) -> dict[str, Tool[..., Any]]:
    """Tools by name, from tools, plain functions (made tools) and tool sources.

    Raises:
        ToolDefinitionError: two tools share a name, or a function cannot be a tool.
    """
    tools: dict[str, Tool[..., Any]] = {}
    from_source: set[str] = set()  # names a tool source brought
    for item in items:
        source = isinstance(item, ToolSource)
        found = item.as_tools() if isinstance(item, ToolSource) else (as_tool(item),)
        for t in found:
            if t.name in tools:
                hint = (
                    "; give an MCP server prefix=, e.g. MCPServer.stdio(..., prefix='files_')"
                    if source or t.name in from_source
                    else ""
                )
                raise ToolDefinitionError(f"tools: two tools are named {t.name!r}{hint}")
            tools[t.name] = t
            if source:
                from_source.add(t.name)
    return tools
