"""``create_app(agent, deps_factory=fn(request, user))``: the deps of each run a server starts.

Every protocol's route starts its runs through :meth:`RunRegistry.start
<rxreact.serve._runs.RunRegistry.start>`, on a worker thread; the request that asked for the
run reaches it through a context variable set by :class:`RequestScope` (the worker thread
runs in a copy of the request's context), so a protocol added later gives its runs deps too,
without each route handing the request on.
"""

from __future__ import annotations

import contextvars
import inspect
from collections.abc import Callable
from typing import Any

import anyio.from_thread
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from rxreact._validate import described
from rxreact.errors import InvalidArgumentError

__all__ = ["RequestDeps", "RequestScope", "check_deps_factory"]

RequestDeps = Callable[[Request, str], Any]
"""``deps_factory(request, user) -> deps`` (sync or async): a served run's deps."""

_SCOPE: contextvars.ContextVar[Scope | None] = contextvars.ContextVar(
    "rxreact_request_scope", default=None
)


class RequestScope:
    """Keeps the HTTP request being served where the run it starts can find it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = _SCOPE.set(scope)
        try:
            await self.app(scope, receive, send)
        finally:
            _SCOPE.reset(token)


def check_deps_factory(factory: Any) -> RequestDeps | None:
    """``deps_factory`` as given, checked: ``None`` or a function."""
    if factory is not None and (not callable(factory) or inspect.isclass(factory)):
        raise InvalidArgumentError(
            f"deps_factory must be a function fn(request, user) -> deps, got {described(factory)}"
        )
    return factory


def served_deps(factory: RequestDeps, user: str) -> Any:
    """The deps ``factory`` makes for the run the current request starts (on a worker thread
    of the request: an async factory is awaited on the server's loop)."""
    scope = _SCOPE.get()
    if scope is None:  # started outside a request (cannot happen through the app's routes)
        raise InvalidArgumentError("deps_factory: no request is being served on this thread")
    deps = factory(Request(scope), user)
    if inspect.isawaitable(deps):
        awaitable = deps

        async def wait() -> Any:
            return await awaitable

        deps = anyio.from_thread.run(wait)
    return deps
