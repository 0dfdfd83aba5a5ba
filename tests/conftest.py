"""Shared test fixtures."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "streams"
"""The recorded provider streams, kept in the repository (a plain clone runs every test)."""


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests may only reach loopback addresses: anything else fails loudly."""
    real_connect = socket.socket.connect

    def guarded_connect(self: socket.socket, address: object) -> object:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and not (
            host in ("localhost", "::1") or host.startswith("127.") or self.family == socket.AF_UNIX
        ):
            raise RuntimeError(f"test tried to reach non-loopback address {address!r}")
        return real_connect(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)


@pytest.fixture(params=["thread", "loop"])
def io_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per I/O mode of ``OpenAIChatModel`` (models that choose none)."""
    mode: str = request.param
    monkeypatch.setenv("RXREACT_IO", mode)
    return mode
