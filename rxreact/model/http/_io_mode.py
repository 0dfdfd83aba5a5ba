"""Which I/O mode a model reads in: what its arguments say or imply, else ``$RXREACT_IO``."""

from __future__ import annotations

import os
from typing import Literal

import httpx
from reactivex import abc

from rxreact.errors import ConfigurationError

__all__ = ["DEFAULT_IO", "IOMode", "io_mode"]

IOMode = Literal["thread", "loop"]
DEFAULT_IO: IOMode = "loop"
"""The I/O mode when nothing chooses one (see :class:`~rxreact.model.openai.client.OpenAIChatModel`
for the measurements)."""


def io_mode(
    io: IOMode | None,
    client: httpx.Client | httpx.AsyncClient | None,
    io_scheduler: abc.SchedulerBase | None,
) -> IOMode:
    """The I/O mode: what the arguments say or imply, else ``$RXREACT_IO``, else the default."""
    implied: IOMode | None = None
    if isinstance(client, httpx.AsyncClient):
        implied = "loop"
    elif client is not None or io_scheduler is not None:
        implied = "thread"
    if io is not None and io != "thread" and io != "loop":
        raise ConfigurationError(f"io must be 'thread' or 'loop', got {io!r}")
    if io is not None and implied is not None and io != implied:
        raise ConfigurationError(
            f"io={io!r} does not fit the arguments: an httpx.AsyncClient reads in loop mode, "
            "an httpx.Client or an io_scheduler in thread mode"
        )
    if io is not None:
        return io
    if implied is not None:
        return implied
    env = os.environ.get("RXREACT_IO") or DEFAULT_IO
    if env == "thread":
        return "thread"
    if env == "loop":
        return "loop"
    raise ConfigurationError(f"RXREACT_IO must be 'thread' or 'loop', got {env!r}")
