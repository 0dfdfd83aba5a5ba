"""The door of the web app: who the user is, where the request comes from, how big it is.

One ASGI middleware in front of every route of every protocol, so an endpoint added later is
guarded without opting in:

- **hosts**: an app without an authenticator answers only requests addressed to a loopback
  name (or an allowed host). A web page on ``evil.example`` whose DNS name is re-pointed at
  127.0.0.1 (DNS rebinding) sends ``Host: evil.example`` and is refused.
- **peers**: the ``Host`` header is the client's to choose, so such an app (unless it names
  its ``allowed_hosts``, opting in to other peers) also refuses a connection whose address
  (``scope["client"]``) is not loopback: served on ``0.0.0.0``, a remote ``Host: localhost``
  is still refused.
- **origins**: a state-changing request (any method but GET, HEAD, OPTIONS) from a browser must
  come from the app's own origin or one of ``cors_origins``. A cross-site ``text/plain`` POST
  needs no CORS preflight, so refusing it here is the only defence; a browser-style request
  (``Sec-Fetch-Site`` or a cookie) without ``Origin`` is refused too. Clients that are not
  browsers (the ``openai`` SDK, curl) send neither and pass.
- **users**: ``authenticate(request)`` names the user, or ``None`` for a ``401``. The chat
  page and its static files are public (the page asks for the token).
- **body size**: a declared ``Content-Length`` over the limit is a ``413`` at once; a chunked
  body is counted as it is read, so the server never holds more than the limit.

Every response leaves with ``X-Content-Type-Options: nosniff``
(:class:`~rxreact.serve._headers.NoSniff`, outermost).
"""

from __future__ import annotations

import inspect
import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, cast
from urllib.parse import urlsplit

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rxreact.serve._body import HTTPProblem, problem_body
from rxreact.serve._headers import NoSniff

__all__ = [
    "ANONYMOUS",
    "Authenticate",
    "Guard",
    "guard_middleware",
    "is_loopback_address",
    "user_of",
]

Authenticate = Callable[[Request], "str | Awaitable[str | None] | None"]
"""``fn(request) -> user id | None`` (sync or async): ``None`` is a ``401``."""

ANONYMOUS = ""
"""The user of an app without an authenticator: its keys are the conversation ids themselves."""

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_PUBLIC_PATHS = ("/static/",)
_PUBLIC_FILES = frozenset({"/", "/.well-known/agent-card.json"})  # the A2A card names the auth
_USER_KEY = "rxreact.user"
_CORS_HEADERS = [
    "authorization",
    "content-type",
    "last-event-id",
    "x-rxreact-conversation",
    "a2a-version",  # what an A2A client sends with every call
    "a2a-extensions",
]


def user_of(request: Request) -> str:
    """The user the guard admitted the request as (:data:`ANONYMOUS` without authentication)."""
    user: str = request.scope.get(_USER_KEY, ANONYMOUS)
    return user


class Guard:
    """ASGI middleware: hosts, origins, users and body size, in that order (see the module).

    Args:
        app: the app behind the door.
        authenticate: the authenticator, or ``None`` for one anonymous user.
        cors_origins: origins (``scheme://host[:port]``) besides the app's own allowed to send
            state-changing requests.
        allowed_hosts: ``Host`` names served; ``None``: loopback names (and the hosts of
            ``cors_origins``) from loopback peers only without an authenticator, any with one;
            ``["*"]``: any. Naming them serves peers on any address.
        max_body_bytes: the largest request body accepted.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        authenticate: Authenticate | None,
        cors_origins: Iterable[str],
        allowed_hosts: Iterable[str] | None,
        max_body_bytes: int,
    ) -> None:
        self.app = app
        self.authenticate = authenticate
        self.origins = frozenset(o.rstrip("/").lower() for o in cors_origins)
        # Without users and without hosts named, this app is for this machine alone.
        self.loopback_peers = allowed_hosts is None and authenticate is None
        if allowed_hosts is None and authenticate is None:
            allowed_hosts = [*LOOPBACK_HOSTS, *(urlsplit(o).hostname or "" for o in self.origins)]
        self.hosts = None if allowed_hosts is None else frozenset(h.lower() for h in allowed_hosts)
        if self.hosts is not None and "*" in self.hosts:
            self.hosts = None
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        # A WebSocket handshake has headers and cookies (all the checks read) but no body.
        websocket = scope["type"] == "websocket"
        request = cast(Request, HTTPConnection(scope)) if websocket else Request(scope)
        try:
            self._check_peer(scope)
            self._check_host(request)
            # A WebSocket handshake is a GET no CORS protects: check its origin whatever it is.
            self._check_origin(request, always=websocket)
            scope[_USER_KEY] = await self._user(request)
            if not websocket:
                receive = self._limited(request, receive)
        except HTTPProblem as problem:
            if websocket:  # closing before accept: the server answers 403
                await send({"type": "websocket.close", "code": 1008, "reason": problem.error})
            else:
                await _answer(problem, scope.get("path", ""), send)
            return
        await self.app(scope, receive, send)

    def _check_peer(self, scope: Scope) -> None:
        client = scope.get("client")
        # No address at all is a Unix socket (or an in-process call): local by construction.
        if not self.loopback_peers or not client or is_loopback_address(str(client[0])):
            return
        raise HTTPProblem(
            403,
            "peer_not_allowed",
            "without authentication this server answers this machine only: serve others with "
            "authenticate (rxreact serve --token-file), or name the hosts served "
            "(allowed_hosts, rxreact serve --insecure-no-auth --allowed-host NAME)",
        )

    def _check_host(self, request: Request) -> None:
        if self.hosts is None:
            return
        host = _hostname(request.headers.get("host", ""))
        if host not in self.hosts:
            raise HTTPProblem(
                403,
                "host_not_allowed",
                f"this server answers only {sorted(self.hosts)} as its host, not {host!r}: "
                "without authentication it serves loopback only (a non-loopback host needs "
                "authentication, or naming: allowed_hosts, rxreact serve --insecure-no-auth "
                "--allowed-host NAME)",
            )

    def _check_origin(self, request: Request, *, always: bool = False) -> None:
        if scope_method(request) in _SAFE_METHODS and not always:
            return
        origin = request.headers.get("origin")
        if origin is None:
            site = request.headers.get("sec-fetch-site")
            browser = site is not None or "cookie" in request.headers
            if browser and site not in ("same-origin", "none"):
                raise HTTPProblem(
                    403, "origin_required", "a browser request that changes state needs Origin"
                )
            return  # not a browser: nothing to forge on a user's behalf
        origin = origin.rstrip("/").lower()
        scheme = {"ws": "http", "wss": "https"}.get(request.url.scheme, request.url.scheme)
        own = f"{scheme}://{request.headers.get('host', '')}".lower()
        if origin != own and origin not in self.origins:
            raise HTTPProblem(
                403,
                "origin_not_allowed",
                f"requests from {origin!r} may not change state here (allowed: this server's own "
                "origin and cors_origins)",
            )

    async def _user(self, request: Request) -> str:
        if self.authenticate is None:
            return ANONYMOUS
        path = request.url.path
        if path in _PUBLIC_FILES or path.startswith(_PUBLIC_PATHS):
            return ANONYMOUS  # the page, the card: they say how to authenticate, the API checks
        user = self.authenticate(request)
        if inspect.isawaitable(user):
            user = await user
        if not user:
            raise HTTPProblem(401, "unauthorized", "a valid bearer token is required")
        if not isinstance(user, str):
            raise TypeError(f"authenticate must return a str user id or None, not {user!r}")
        return user

    def _limited(self, request: Request, receive: Receive) -> Receive:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            raise _too_large(self.max_body_bytes)
        limit, seen = self.max_body_bytes, 0

        async def counting() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:  # answered by the app's HTTPProblem handler
                    raise _too_large(limit)
            return message

        return counting


def guard_middleware(
    *,
    authenticate: Authenticate | None,
    cors_origins: Sequence[str],
    allowed_hosts: Sequence[str] | None,
    max_body_bytes: int,
) -> list[Middleware]:
    """The app's middleware: :class:`NoSniff`, CORS for ``cors_origins``, then the
    :class:`Guard`."""
    return [
        Middleware(NoSniff),
        # CORS outside the guard: a preflight carries no credentials and must be answered.
        Middleware(
            CORSMiddleware,
            allow_origins=list(cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=_CORS_HEADERS,
            expose_headers=["x-rxreact-run-id"],
        ),
        Middleware(
            Guard,
            authenticate=authenticate,
            cors_origins=cors_origins,
            allowed_hosts=allowed_hosts,
            max_body_bytes=max_body_bytes,
        ),
    ]


def scope_method(request: Request) -> str:
    method: str = request.scope.get("method", "GET")
    return method


def _too_large(limit: int) -> HTTPProblem:
    return HTTPProblem(413, "body_too_large", f"the request body is over {limit} bytes")


def is_loopback_address(address: str) -> bool:
    """Whether a peer's address is this machine's (``127.0.0.0/8``, ``::1``, IPv4-mapped)."""
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))


def _hostname(host: str) -> str:
    """``Host`` without its port (IPv6 literals keep their brackets)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0] if ":" in host else host


async def _answer(problem: HTTPProblem, path: str, send: Send) -> None:
    body = json.dumps(problem_body(problem, path)).encode()
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if problem.status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="rxreact"'))
    start: dict[str, Any] = {"type": "http.response.start", "status": problem.status}
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": body})
