"""Real MCP servers for the tests: the SDK's MCPServer in a subprocess (stdio or HTTP)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SERVER_SCRIPT = str(Path(__file__).parent / "mcp_servers" / "weather.py")


class HTTPServerProcess:
    """``weather.py http`` on a loopback port; :meth:`restart` keeps the port."""

    def __init__(self, port: int = 0) -> None:
        self.process = subprocess.Popen(
            [sys.executable, SERVER_SCRIPT, "http", str(port)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # "PORT n" once it listens
        self.port = int(line.split()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        assert self.process.stdout is not None
        self.process.stdout.close()

    def restart(self) -> None:
        self.stop()
        self.__init__(self.port)  # type: ignore[misc]
