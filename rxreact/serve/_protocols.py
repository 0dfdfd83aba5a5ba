"""The protocols the app can speak besides its own chat page, one route factory each.

``create_app(agent, protocols=(...))`` mounts the ones named (all by default). Each protocol
is a room of its own that translates the same agent event stream (``ui_stream/`` for the AI
SDK, ``openai_compat/`` for OpenAI clients, ``a2a/``, ``ag_ui/``); its routes get what every
protocol shares in a :class:`~rxreact.serve._context.ServeContext`: the run registry (so the
per-user run limit counts every protocol's runs), the signed run ids, and the app's settings.
Every route is behind the app's guard (users, origins, body size), so a protocol only has to
check ownership, through :func:`~rxreact.serve._guard.user_of` and
:func:`~rxreact.serve.auth.conversation_key`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

from starlette.routing import BaseRoute

from rxreact._extras import import_extra
from rxreact.serve._context import ServeContext

__all__ = ["EXTRAS", "PROTOCOLS", "installed", "protocol_routes"]


def _openai(context: ServeContext) -> list[BaseRoute]:
    from rxreact.serve.openai_compat._routes import openai_routes

    return list(
        openai_routes(
            context.runs,
            model_name=context.model_name,
            max_message_chars=context.max_message_chars,
            refuse=context.refuse,
            heartbeat=context.heartbeat,
        )
    )


def _a2a(context: ServeContext) -> list[BaseRoute]:
    import_extra("a2a", "a2a")
    from rxreact.serve.a2a._routes import a2a_routes

    return a2a_routes(context)


def _ag_ui(context: ServeContext) -> list[BaseRoute]:
    import_extra("ag_ui", "ag-ui")
    from rxreact.serve.ag_ui._routes import ag_ui_routes

    return ag_ui_routes(context)


PROTOCOLS: dict[str, Callable[[ServeContext], list[BaseRoute]]] = {
    "openai": _openai,
    "a2a": _a2a,
    "ag-ui": _ag_ui,
}
"""Every protocol besides ``"ui"`` (the chat page and the AI SDK stream), by name."""

EXTRAS: dict[str, tuple[str, str]] = {"a2a": ("a2a", "a2a"), "ag-ui": ("ag_ui", "ag-ui")}
"""The protocols built on an optional package: name -> (module, rxreact extra)."""


def installed() -> tuple[str, ...]:
    """The protocols whose packages are installed: what ``create_app`` mounts by default (one
    named in ``protocols=`` without its package is an error saying which extra brings it)."""
    return tuple(
        name
        for name in PROTOCOLS
        if name not in EXTRAS or importlib.util.find_spec(EXTRAS[name][0]) is not None
    )


def protocol_routes(names: tuple[str, ...], context: ServeContext) -> list[BaseRoute]:
    """The routes of the protocols ``names`` (``"ui"`` is the app's own, skipped here)."""
    routes: list[BaseRoute] = []
    for name in names:
        if name != "ui":
            routes += PROTOCOLS[name](context)
    return routes
