"""``create_app(agent)``: the chat endpoints and the chat page as one Starlette (ASGI) app.

::

    POST /api/chat                    start a run on the body's conversation ``id``, stream it
    GET  /api/chat/{id}/stream        resume the conversation's active run (204: none active)
    POST /api/chat/{id}/cancel        cancel it
    POST /api/chat/{id}/approve       answer a tool-approval-request of its active run:
                                      {"approvalId": ..., "approved": true|false, "reason": ...}
    GET  /api/runs/{run_id}/stream    replay one run, running or finished (while the log keeps it)
    GET  /api/runs/{run_id}/marbles.svg   the run's marble diagram, once it ended
    GET  /api/me                      who the request is authenticated as
    POST /v1/chat/completions         the agent as an OpenAI chat model (:mod:`.openai_compat`)
    GET  /v1/models                   its one model
    POST /ag-ui                       AG-UI runs (:mod:`.ag_ui`; ``rxreact[ag-ui]``)
    GET  /.well-known/agent-card.json the A2A agent card; POST /a2a its JSON-RPC (:mod:`.a2a`;
                                      ``rxreact[a2a]``)
    GET  /                            the chat page (static files shipped in the package)

``create_app(protocols=...)`` chooses which are mounted (:mod:`rxreact.serve._protocols`).
The chat page's streams are the AI SDK UI message stream (:mod:`rxreact.serve.ui_stream`),
its routes :mod:`rxreact.serve.ui_stream._routes`. A response is a cursor on the run: a client
that disconnects detaches it, only ``cancel`` stops the run.

Every request passes one guard first (:mod:`rxreact.serve._guard`: host, origin, user, body
size). A user sees only their own conversations and runs: another user's id is a ``404``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from rxreact.agent.react_agent import ReactAgent
from rxreact.errors import InvalidArgumentError
from rxreact.serve._body import OPENAI_PATHS, HTTPProblem, problem_body
from rxreact.serve._context import ServeContext
from rxreact.serve._deps import RequestDeps, RequestScope, check_deps_factory
from rxreact.serve._guard import Authenticate, guard_middleware, user_of
from rxreact.serve._protocols import PROTOCOLS, installed, protocol_routes
from rxreact.serve._runs import RunRegistry
from rxreact.serve.auth import RunIds
from rxreact.serve.ui_stream._routes import STATIC_DIR, ui_routes
from rxreact.serve.ui_stream._routes import refused as refused

__all__ = ["STATIC_DIR", "create_app"]


def create_app(
    agent: ReactAgent[Any],
    *,
    heartbeat: float = 15.0,
    marbles_timeout: float = 30.0,
    unknown_resume: int = 204,
    authenticate: Authenticate | None = None,
    cors_origins: Sequence[str] = (),
    allowed_hosts: Sequence[str] | None = None,
    max_body_bytes: int = 1 << 20,
    max_message_chars: int = 100_000,
    max_runs_per_user: int | None = None,
    run_id_secret: bytes | None = None,
    model_name: str = "rxreact",
    protocols: Sequence[str] | None = None,
    deps_factory: RequestDeps | None = None,
) -> Starlette:
    """An ASGI app serving ``agent``'s runs to browsers.

    Args:
        agent: a ``ReactAgent``: its ``memory`` keeps conversations between runs, its
            ``event_log`` the runs (with a ``RedisEventLog`` every worker sharing it can resume,
            follow or cancel any run).
        heartbeat: seconds of silence on a stream before a keep-alive comment is sent.
        marbles_timeout: how long the marble endpoint waits for a run to end.
        unknown_resume: the answer to a resume of a conversation the server never saw: ``204``
            as for an idle one (the default: what ``useChat({resume: true})`` expects when it
            mounts a new chat), or ``404`` (a JSON error).
        authenticate: ``fn(request) -> user id | None``, sync or async (``None``: ``401``);
            :class:`~rxreact.serve.auth.TokenAuthenticator` reads bearer tokens from a file.
            Without it the app serves one anonymous user, on loopback host names only.
        cors_origins: other origins allowed to call the API from a browser (answered with
            CORS headers); every other foreign ``Origin`` is refused on state-changing requests.
        allowed_hosts: ``Host`` names served (``["*"]``: any); default loopback names without
            ``authenticate`` (a defence against DNS rebinding), and then loopback peers only
            (``scope["client"]``: the ``Host`` header is the client's to say); any with it.
            Naming them serves peers on any address.
        max_body_bytes: the largest request body (``413`` past it).
        max_message_chars: the longest question (``413`` past it).
        max_runs_per_user: runs in flight per user in this process (``429`` with
            ``Retry-After`` past it); ``0``: no limit. Default: 16 with ``authenticate``, no
            limit for the anonymous user (everyone an app without users serves is that one).
        run_id_secret: the key run ids are signed with for their user; workers serving the same
            users share it (default: random, one process).
        model_name: the model ``/v1/models`` lists and ``/v1/chat/completions`` answers as.
        protocols: the protocols mounted (default: all): ``"ui"`` (the chat page and the AI
            SDK UI message stream under ``/api``), ``"openai"`` (``/v1/chat/completions``,
            ``/v1/models``), ``"a2a"`` (``/a2a`` and its agent card, with the ``a2a`` extra),
            and the others of :data:`~rxreact.serve._protocols.PROTOCOLS`; by default every one
            whose optional package is installed.
        deps_factory: ``fn(request, user) -> deps`` (sync or async): the ``deps`` of each run
            the app starts, on every protocol (``user`` is ``""`` for the anonymous one).

    Returns:
        A Starlette application (serve it with uvicorn, or ``rxreact serve``).
    """
    chosen = ("ui", *installed()) if protocols is None else tuple(protocols)
    unknown = sorted(set(chosen) - {"ui", *PROTOCOLS})
    if unknown or not chosen:
        raise InvalidArgumentError(
            f"protocols must name some of {', '.join(['ui', *PROTOCOLS])}, got {protocols!r}"
        )
    if unknown_resume not in (204, 404):
        raise InvalidArgumentError(f"unknown_resume must be 204 or 404, not {unknown_resume!r}")
    if heartbeat <= 0:
        raise InvalidArgumentError(f"heartbeat must be positive, not {heartbeat!r}")
    limits = {"max_body_bytes": max_body_bytes, "max_message_chars": max_message_chars}
    for name, value in limits.items():
        if value <= 0:
            raise InvalidArgumentError(f"{name} must be positive, not {value!r}")
    if max_runs_per_user is None:
        max_runs_per_user = 16 if authenticate is not None else 0
    runs = RunRegistry(
        agent,
        max_runs_per_user=max_runs_per_user,
        deps_factory=check_deps_factory(deps_factory),
    )
    run_ids = RunIds(run_id_secret)
    ui = ui_routes(
        agent,
        runs,
        run_ids,
        heartbeat=heartbeat,
        marbles_timeout=marbles_timeout,
        unknown_resume=unknown_resume,
        max_message_chars=max_message_chars,
    )

    async def me(request: Request) -> Response:
        return JSONResponse({"user": user_of(request) or None})

    async def problem(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPProblem)
        body = problem_body(error, request.url.path)
        return JSONResponse(body, error.status, headers=error.headers)

    async def crash(request: Request, error: Exception) -> Response:
        # Never a traceback to the client; the server log has it (uvicorn logs the exception).
        failure = HTTPProblem(500, "internal_error", type(error).__name__)
        # An OpenAI SDK retries a 500: after a run began, that would run the agent again.
        headers = {"x-should-retry": "false"} if request.url.path.startswith(OPENAI_PATHS) else {}
        return JSONResponse(problem_body(failure, request.url.path), 500, headers=headers)

    context = ServeContext(
        runs,
        run_ids,
        model_name,
        max_message_chars,
        heartbeat,
        refused,
        authenticated=authenticate is not None,
    )
    app = Starlette(
        routes=[
            Route("/api/me", me, methods=["GET"]),
            *(ui if "ui" in chosen else ()),
            *protocol_routes(chosen, context),
        ],
        middleware=[
            *guard_middleware(
                authenticate=authenticate,
                cors_origins=cors_origins,
                allowed_hosts=allowed_hosts,
                max_body_bytes=max_body_bytes,
            ),
            Middleware(RequestScope),
        ],
        exception_handlers={HTTPProblem: problem, Exception: crash},
    )
    app.state.runs = runs
    return app
