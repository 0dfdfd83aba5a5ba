"""The ``"ui"`` protocol of :func:`~rxreact.serve.app.create_app`: the chat page, and its API
under ``/api`` as AI SDK UI message streams (:mod:`rxreact.serve.ui_stream`).

A response is a cursor on the run: a client that disconnects detaches it, only ``cancel`` stops
the run. A user sees only their own conversations and runs: another user's id is a ``404``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from reactivex import Observable
from reactivex import operators as ops
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from rxreact.agent.react_agent import ReactAgent
from rxreact.errors import (
    ConversationBusyError,
    RunNotFoundError,
    RxReactError,
    TooManyRunsError,
)
from rxreact.events import AgentEvent
from rxreact.serve._body import (
    HTTPProblem,
    check_conversation_id,
    check_run_id,
    message_too_long,
    parse_approval_body,
    parse_chat_body,
)
from rxreact.serve._bridge import ChunkPipe
from rxreact.serve._guard import user_of
from rxreact.serve._headers import PAGE_CSP, SVG_CSP
from rxreact.serve._media import text_chars, ui_question
from rxreact.serve._runs import RunRegistry
from rxreact.serve.auth import RunIds, conversation_key
from rxreact.serve.ui_stream import UI_MESSAGE_STREAM_HEADERS, to_ui_message_stream

__all__ = ["STATIC_DIR", "refused", "ui_routes"]

STATIC_DIR = Path(__file__).parent.parent / "static"
"""The chat page's files: ``index.html``, ``chat.css``, and ``chat.js`` with the ES modules it
imports (``draw.js``, ``markdown.js``, ``scroll.js``, ...), and ``auth.js``, which asks for the
token of a server with users and adds it to the page's requests."""


def ui_routes(
    agent: ReactAgent,
    runs: RunRegistry,
    run_ids: RunIds,
    *,
    heartbeat: float,
    marbles_timeout: float,
    unknown_resume: int,
    max_message_chars: int,
) -> list[BaseRoute]:
    """The ``"ui"`` protocol's routes: the chat page and its API (the settings are
    :func:`~rxreact.serve.app.create_app`'s, checked there)."""
    known: set[str] = set()  # conversation keys this process saw, for 404 vs 204 without memory

    def owned_run(request: Request) -> str:
        """The run id of the path, if the user owns it (404 else, as for an unknown run)."""
        public = check_run_id(request.path_params["run_id"])
        run_id = run_ids.private(user_of(request), public)
        if run_id is None:
            raise HTTPProblem(404, "unknown_run", f"no run {public!r}")
        return run_id

    def conversation_of(request: Request) -> str:
        """The key of the path's conversation: the user's own, whatever id they name."""
        conversation_id = check_conversation_id(request.path_params["conversation_id"])
        return conversation_key(user_of(request), conversation_id)

    async def open_stream(
        public_id: str,
        events: Observable[AgentEvent],
        *,
        after: int = 0,
        refuse: Callable[[BaseException], HTTPProblem | None] | None = None,
    ) -> Response:
        """The run's UI message stream, or the HTTP error ``refuse`` makes of a run that
        failed before its first event (busy conversation, unknown run).

        With ``refuse`` the headers wait for the first parts (the run's first event is at
        hand: it was just started, or is replayed from the log); without, they go at once, so
        a resume of a quiet run is answered before its next event.
        """
        failure: list[BaseException] = []
        source = events.pipe(
            ops.do_action(on_error=failure.append), to_ui_message_stream(public_id, after=after)
        )
        pipe = ChunkPipe(source, heartbeat=heartbeat)
        first = None
        if refuse is not None:
            first = await pipe.first()
            problem = refuse(failure[0]) if failure else None
            if problem is not None and (first is None or first[0].seq is None):
                pipe.close()
                raise problem
        headers = {**UI_MESSAGE_STREAM_HEADERS, "x-rxreact-run-id": public_id}
        return StreamingResponse(pipe.body(first), headers=headers)

    async def is_known(key: str) -> bool:
        if key in known:
            return True
        memory = getattr(agent, "memory", None)
        return memory is not None and bool(await run_in_threadpool(memory.load, key))

    def unknown_conversation(request: Request) -> HTTPProblem:
        conversation_id = request.path_params["conversation_id"]
        return HTTPProblem(404, "unknown_conversation", f"no conversation {conversation_id!r}")

    async def post_chat(request: Request) -> Response:
        user = user_of(request)
        body = parse_chat_body(await request.body())
        last = body.messages[-1]
        question = ui_question(last.role, last.parts)
        if text_chars(question) > max_message_chars:
            raise message_too_long(max_message_chars)
        key = conversation_key(user, body.id)
        try:
            run = await run_in_threadpool(runs.start, question, key, user)
        except RxReactError as error:
            raise refused(error) or error from None
        known.add(key)
        return await open_stream(run_ids.public(user, run.id), run.events(), refuse=_busy)

    async def resume(request: Request) -> Response:
        key = conversation_of(request)
        after = _last_event_id(request)
        run_id = await run_in_threadpool(runs.active_run, key)
        if run_id is None:
            if unknown_resume == 404 and not await is_known(key):
                raise unknown_conversation(request)
            return Response(status_code=204)
        public = run_ids.public(user_of(request), run_id)
        return await open_stream(public, runs.events(run_id), after=after)

    async def replay(request: Request) -> Response:
        run_id = owned_run(request)
        after = _last_event_id(request)
        # Parts after a Last-Event-ID may be far off: check for an unknown run only from seq 1.
        refuse = _not_found if after == 0 else None
        public = request.path_params["run_id"]
        return await open_stream(public, runs.events(run_id), after=after, refuse=refuse)

    async def cancel(request: Request) -> Response:
        key = conversation_of(request)
        run_id = await run_in_threadpool(runs.active_run, key)
        if run_id is None:
            if not await is_known(key):
                raise unknown_conversation(request)
            return JSONResponse({"cancelled": False, "runId": None})
        await run_in_threadpool(runs.cancel, run_id)
        public = run_ids.public(user_of(request), run_id)
        return JSONResponse({"cancelled": True, "runId": public}, status_code=202)

    async def approve(request: Request) -> Response:
        key = conversation_of(request)
        approval_id, approved, reason = parse_approval_body(await request.body())
        run_id = await run_in_threadpool(runs.active_run, key)
        decided = run_id is not None and await run_in_threadpool(
            runs.decide, run_id, approval_id, approved, reason
        )
        if not decided or run_id is None:
            raise HTTPProblem(
                404,
                "unknown_approval",
                f"no tool call {approval_id!r} waits for approval in conversation "
                f"{request.path_params['conversation_id']!r} on this server",
            )
        public = run_ids.public(user_of(request), run_id)
        return JSONResponse({"decided": True, "runId": public}, status_code=202)

    async def marbles(request: Request) -> Response:
        run_id = owned_run(request)
        recording = await runs.recording(run_id, marbles_timeout)
        if recording is None or not recording.values:  # unknown here and in the log
            public = request.path_params["run_id"]
            raise HTTPProblem(404, "unknown_run", f"no finished run {public!r}")
        svg = await run_in_threadpool(recording.to_svg, width=860)
        headers = {"cache-control": "no-store", "content-security-policy": SVG_CSP}
        return Response(svg, media_type="image/svg+xml", headers=headers)

    async def index(request: Request) -> Response:
        headers = {"cache-control": "no-cache", "content-security-policy": PAGE_CSP}
        return FileResponse(STATIC_DIR / "index.html", headers=headers)

    return [
        Route("/", index),
        Route("/api/chat", post_chat, methods=["POST"]),
        Route("/api/chat/{conversation_id:path}/stream", resume, methods=["GET"]),
        Route("/api/chat/{conversation_id:path}/cancel", cancel, methods=["POST"]),
        Route("/api/chat/{conversation_id:path}/approve", approve, methods=["POST"]),
        Route("/api/runs/{run_id}/stream", replay, methods=["GET"]),
        Route("/api/runs/{run_id}/marbles.svg", marbles, methods=["GET"]),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]


def refused(error: BaseException) -> HTTPProblem | None:
    """The HTTP answer to a run that could not start: busy conversation, too many runs."""
    if isinstance(error, TooManyRunsError):
        return HTTPProblem(429, "too_many_runs", str(error), headers={"retry-after": "5"})
    return _busy(error)


def _last_event_id(request: Request) -> int:
    raw = request.headers.get("last-event-id", "").strip()
    if not raw:
        return 0
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:  # "²" is a digit, 10**5000 slow
        raise HTTPProblem(400, "invalid_last_event_id", "Last-Event-ID must be an event seq")
    return int(raw)


def _busy(error: BaseException) -> HTTPProblem | None:
    if isinstance(error, ConversationBusyError):
        return HTTPProblem(409, "conversation_busy", str(error))
    return None


def _not_found(error: BaseException) -> HTTPProblem | None:
    if isinstance(error, RunNotFoundError):
        return HTTPProblem(404, "unknown_run", str(error))
    return None
