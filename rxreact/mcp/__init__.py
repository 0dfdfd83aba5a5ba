"""MCP servers as tool sources (``pip install 'rxreact[mcp]'``, the official ``mcp`` SDK).

::

    from rxreact import ReactAgent
    from rxreact.mcp import MCPServer

    with MCPServer.stdio("python", ["weather_server.py"]) as weather:
        agent = ReactAgent(model, tools=[weather])
        print(agent.call("Weather in Paris?"))

The ``mcp`` package is imported only when a server is built.
"""

from rxreact.mcp._server import MCPServer, MCPToolError

__all__ = ["MCPServer", "MCPToolError"]
