"""Tools and what runs them.

- :mod:`~rxreact.tools.tool`: :class:`Tool` and the ``@tool`` decorator (a function's
  docstring and signature become the description and the JSON schema);
- :mod:`~rxreact.tools.results`: what the model reads for a tool's return value;
- :mod:`~rxreact.tools.source`: tools from elsewhere (MCP servers) made into :class:`Tool` s;
- :mod:`~rxreact.tools.approval`: asking a human before a call runs.

The operators that run a round's calls concurrently are :func:`rxreact.operators.run_tools`
and its private modules.
"""

from rxreact.tools.tool import TOOL_NAME, Tool, ToolArgumentsError, ToolInterruptedError, tool

__all__ = ["TOOL_NAME", "Tool", "ToolArgumentsError", "ToolInterruptedError", "tool"]
