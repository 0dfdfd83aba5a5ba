r"""MCP servers as tool sources (``pip install 'rxreact[mcp]'``, the official ``mcp`` SDK).

A server written with the SDK, run as a subprocess over stdio; its tools join the agent's::

    import pathlib
    import sys

    from rxreact import OpenAIChatModel, ReactAgent
    from rxreact.mcp import MCPServer

    pathlib.Path("weather_server.py").write_text(
        "from mcp.server.mcpserver import MCPServer\n"
        "server = MCPServer('weather', log_level='ERROR')\n"
        "@server.tool()\n"
        "def get_weather(city: str) -> str:\n"
        "    'The current weather in a city.'\n"
        "    return f'sunny in {city}'\n"
        "server.run('stdio')\n"
    )
    with MCPServer.stdio(sys.executable, ["weather_server.py"]) as weather:
        agent = ReactAgent(OpenAIChatModel(), tools=[weather])
        print(agent.call("Weather in Paris?"))

``MCPServer.http(url, headers=...)`` connects to a streamable-HTTP server instead. The ``mcp``
package is imported only when a server is built. More in ``docs/ecosystem.md``.
"""

from rxreact.mcp._server import MCPServer, MCPToolError

__all__ = ["MCPServer", "MCPToolError"]
