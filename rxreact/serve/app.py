"""``create_app(agent)``: the chat endpoints and the chat page as one Starlette (ASGI) app.

::

    POST /api/chat                    start a run on the body's conversation ``id``, stream it
    GET  /api/chat/{id}/stream        resume the conversation's active run (204: none active)
    POST /api/chat/{id}/cancel        cancel it
    POST /api/chat/{id}/approve       answer a tool-approval-request of its active run:
                                      {"approvalId": ..., "approved": true|false, "reason": ...}
    GET  /api/runs/{run_id}/stream    replay one run, running or finished (while the log keeps it)
    GET  /api/runs/{run_id}/marbles.svg   the run's marble diagram, once it ended
    GET  /                            the chat page (static files shipped in the package)

The streams are the AI SDK UI message stream (:mod:`rxreact.serve.ui_stream`). A response is a
cursor on the run: a client that disconnects detaches it, only ``cancel`` stops the run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from reactivex import Observable
from reactivex import operators as ops
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from rxreact.agent.react_agent import ReactAgent
from rxreact.errors import (
    ConversationBusyError,
    InvalidArgumentError,
    RunNotFoundError,
    RxReactError,
)
from rxreact.events import AgentEvent
from rxreact.serve._body import (
    HTTPProblem,
    check_conversation_id,
    check_run_id,
    parse_approval_body,
    parse_chat_body,
)
from rxreact.serve._bridge import ChunkPipe
from rxreact.serve._runs import RunRegistry
from rxreact.serve.ui_stream import UI_MESSAGE_STREAM_HEADERS, to_ui_message_stream

__all__ = ["STATIC_DIR", "create_app"]

STATIC_DIR = Path(__file__).parent / "static"
"""The chat page's files: ``index.html``, ``chat.css``, and ``chat.js`` with the ES modules it
imports (``draw.js``, ``markdown.js``, ``scroll.js``, ...)."""


def create_app(
    agent: ReactAgent,
    *,
    heartbeat: float = 15.0,
    marbles_timeout: float = 30.0,
    unknown_resume: int = 404,
) -> Starlette:
    """An ASGI app serving ``agent``'s runs to browsers.

    Args:
        agent: a ``ReactAgent``: its ``memory`` keeps conversations between runs, its
            ``event_log`` the runs (with a ``RedisEventLog`` every worker sharing it can resume,
            follow or cancel any run).
        heartbeat: seconds of silence on a stream before a keep-alive comment is sent.
        marbles_timeout: how long the marble endpoint waits for a run to end.
        unknown_resume: the answer to a resume of a conversation the server never saw: ``404``
            (a JSON error), or ``204`` as for an idle one, which is what ``useChat({resume:
            true})`` expects when it mounts a new chat.

    Returns:
        A Starlette application (serve it with uvicorn, or ``rxreact serve``).
    """
    if unknown_resume not in (204, 404):
        raise InvalidArgumentError(f"unknown_resume must be 204 or 404, not {unknown_resume!r}")
    if heartbeat <= 0:
        raise InvalidArgumentError(f"heartbeat must be positive, not {heartbeat!r}")
    runs = RunRegistry(agent)
    known: set[str] = set()  # conversations this process saw, for 404 vs 204 without memory

    async def open_stream(
        run_id: str,
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
            ops.do_action(on_error=failure.append), to_ui_message_stream(run_id, after=after)
        )
        pipe = ChunkPipe(source, heartbeat=heartbeat)
        first = None
        if refuse is not None:
            first = await pipe.first()
            problem = refuse(failure[0]) if failure else None
            if problem is not None and (first is None or first[0].seq is None):
                pipe.close()
                raise problem
        headers = {**UI_MESSAGE_STREAM_HEADERS, "x-rxreact-run-id": run_id}
        return StreamingResponse(pipe.body(first), headers=headers)

    async def is_known(conversation_id: str) -> bool:
        if conversation_id in known:
            return True
        memory = getattr(agent, "memory", None)
        return memory is not None and bool(await run_in_threadpool(memory.load, conversation_id))

    async def post_chat(request: Request) -> Response:
        body = parse_chat_body(await request.body())
        question = body.question()
        try:
            run = await run_in_threadpool(runs.start, question, body.id)
        except RxReactError as error:
            raise _busy(error) or error from None
        known.add(body.id)
        return await open_stream(run.id, run.events(), refuse=_busy)

    async def resume(request: Request) -> Response:
        conversation_id = check_conversation_id(request.path_params["conversation_id"])
        after = _last_event_id(request)
        run_id = await run_in_threadpool(runs.active_run, conversation_id)
        if run_id is None:
            if unknown_resume == 404 and not await is_known(conversation_id):
                raise HTTPProblem(
                    404, "unknown_conversation", f"no conversation {conversation_id!r}"
                )
            return Response(status_code=204)
        return await open_stream(run_id, runs.events(run_id), after=after)

    async def replay(request: Request) -> Response:
        run_id = check_run_id(request.path_params["run_id"])
        after = _last_event_id(request)
        # Parts after a Last-Event-ID may be far off: check for an unknown run only from seq 1.
        refuse = _not_found if after == 0 else None
        return await open_stream(run_id, runs.events(run_id), after=after, refuse=refuse)

    async def cancel(request: Request) -> Response:
        conversation_id = check_conversation_id(request.path_params["conversation_id"])
        run_id = await run_in_threadpool(runs.active_run, conversation_id)
        if run_id is None:
            if not await is_known(conversation_id):
                raise HTTPProblem(
                    404, "unknown_conversation", f"no conversation {conversation_id!r}"
                )
            return JSONResponse({"cancelled": False, "runId": None})
        await run_in_threadpool(runs.cancel, run_id)
        return JSONResponse({"cancelled": True, "runId": run_id}, status_code=202)

    async def approve(request: Request) -> Response:
        conversation_id = check_conversation_id(request.path_params["conversation_id"])
        approval_id, approved, reason = parse_approval_body(await request.body())
        run_id = await run_in_threadpool(runs.active_run, conversation_id)
        decided = run_id is not None and await run_in_threadpool(
            runs.decide, run_id, approval_id, approved, reason
        )
        if not decided:
            raise HTTPProblem(
                404,
                "unknown_approval",
                f"no tool call {approval_id!r} waits for approval in conversation "
                f"{conversation_id!r} on this server",
            )
        return JSONResponse({"decided": True, "runId": run_id}, status_code=202)

    async def marbles(request: Request) -> Response:
        run_id = check_run_id(request.path_params["run_id"])
        recording = await runs.recording(run_id, marbles_timeout)
        if recording is None or not recording.values:  # unknown here and in the log
            raise HTTPProblem(404, "unknown_run", f"no finished run {run_id!r}")
        svg = await run_in_threadpool(recording.to_svg, width=860)
        return Response(svg, media_type="image/svg+xml", headers={"cache-control": "no-store"})

    async def index(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"cache-control": "no-cache"})

    async def problem(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPProblem)
        return JSONResponse({"error": error.error, "detail": error.detail}, error.status)

    async def crash(request: Request, error: Exception) -> Response:
        # Never a traceback to the client; the server log has it (uvicorn logs the exception).
        return JSONResponse({"error": "internal_error", "detail": type(error).__name__}, 500)

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/api/chat", post_chat, methods=["POST"]),
            Route("/api/chat/{conversation_id:path}/stream", resume, methods=["GET"]),
            Route("/api/chat/{conversation_id:path}/cancel", cancel, methods=["POST"]),
            Route("/api/chat/{conversation_id:path}/approve", approve, methods=["POST"]),
            Route("/api/runs/{run_id}/stream", replay, methods=["GET"]),
            Route("/api/runs/{run_id}/marbles.svg", marbles, methods=["GET"]),
            Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
        ],
        exception_handlers={HTTPProblem: problem, Exception: crash},
    )
    app.state.runs = runs
    return app


def _last_event_id(request: Request) -> int:
    raw = request.headers.get("last-event-id", "").strip()
    if not raw:
        return 0
    if not raw.isdigit():
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
