"""``POST /ag-ui``: the agent behind the AG-UI 1.0 protocol (HTTP + SSE).

One endpoint, three kinds of request, told apart by the body and headers:

- **a question**: the last message is the user's. ``threadId`` is the conversation (the
  agent's memory holds its history: earlier messages sent are not read again); the tools of
  ``RunAgentInput.tools`` are offered to the model as client-side tools
  (:mod:`~rxreact.serve.ag_ui._tools`). A new run starts and streams until it ends or waits
  for the client.
- **a continuation**: the last message is a ``tool`` message (the result of a client-side
  call the run waits for) and/or ``resume`` answers interrupts (approvals:
  ``{"interruptId": call id, "status": "resolved", "payload": {"approved": true}}``). The
  answers go to the thread's waiting run, and the stream continues it after the pause.
- **a resume**: a ``Last-Event-ID`` header (the SSE ``id`` of the last event received):
  the thread's active run is streamed again from after that event.

The mapping is :func:`rxreact.serve.ag_ui.to_ag_ui_events`. A client that leaves detaches
from the run, which goes on (resume it, or cancel it with ``POST /api/chat/{threadId}/cancel``).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Collection
from typing import TYPE_CHECKING, Any

from reactivex import operators as ops
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from rxreact.errors import RxReactError
from rxreact.messages import File, Image
from rxreact.messages._labels import Question
from rxreact.serve._body import HTTPProblem, _validated, check_conversation_id, message_too_long
from rxreact.serve._bridge import ChunkPipe
from rxreact.serve._context import ServeContext
from rxreact.serve._guard import user_of
from rxreact.serve._media import (
    as_image,
    inline_part,
    media_part,
    question_of,
    text_chars,
    unsupported,
)
from rxreact.serve._sse import DONE, UIChunk
from rxreact.serve.auth import conversation_key

if TYPE_CHECKING:
    from ag_ui.core import RunAgentInput

    from rxreact.serve.ag_ui import AGUIChunk

__all__ = ["ag_ui_routes"]

_SSE_HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
}


def ag_ui_routes(context: ServeContext) -> list[BaseRoute]:
    """The endpoint, over the app's run registry (so the per-user run limit counts it).
    Needs the ``ag-ui`` extra (``create_app`` checks it is installed first)."""
    from ag_ui.core import RunAgentInput

    from rxreact.serve.ag_ui import to_ag_ui_events
    from rxreact.serve.ag_ui._tools import ClientTools, with_client_tools

    runs = context.runs
    server_tools = frozenset(runs.agent.tools)
    # The client-side tools and waiting calls of the runs this process started, while they
    # live: results and decisions can only be handed to the process that runs them.
    clients: dict[str, ClientTools] = {}
    lock = threading.Lock()

    async def post(request: Request) -> Response:
        user = user_of(request)
        body = _validated(RunAgentInput, await request.body())
        key = conversation_key(user, check_conversation_id(body.thread_id))
        after = _last_event_id(request)
        if after is not None:
            run_id = await run_in_threadpool(runs.active_run, key)
            if run_id is None:
                raise HTTPProblem(404, "no_active_run", f"no run is active on {body.thread_id!r}")
            return await stream(user, run_id, body, after=after)
        if body.resume or (body.messages and body.messages[-1].role == "tool"):
            run_id = await run_in_threadpool(runs.active_run, key)
            resumed = [] if run_id is None else await run_in_threadpool(deliver, run_id, body)
            if run_id is None or not resumed:
                raise HTTPProblem(
                    409,
                    "not_waiting",
                    f"no run of {body.thread_id!r} waits for these tool results or answers "
                    "on this server",
                )
            return await stream(user, run_id, body, resume=resumed)
        question = _question(body)
        if text_chars(question) > context.max_message_chars:
            raise message_too_long(context.max_message_chars)
        tools = ClientTools(t for t in body.tools or () if t.name not in server_tools)
        agent = with_client_tools(runs.agent, tools) if tools.tools else None
        try:
            run = await run_in_threadpool(runs.start, question, key, user, agent)
        except RxReactError as error:
            raise context.refuse(error) or error from None
        with lock:
            clients[run.id] = tools

        def forget() -> None:
            with lock:
                clients.pop(run.id, None)

        run.events().pipe(ops.finally_action(forget)).subscribe(tools.observe, lambda _: None)
        return await stream(user, run.id, body, refuse=True)

    def deliver(run_id: str, body: RunAgentInput) -> list[str]:
        """Hand the request's answers to the waiting run; the call ids answered."""
        with lock:
            tools = clients.get(run_id)
        resumed: list[str] = []
        for message in body.messages:
            call_id = getattr(message, "tool_call_id", None)
            if not isinstance(call_id, str) or tools is None or not tools.waiting(call_id):
                continue
            if tools.answer(call_id, _text(message.content)) and runs.decide(
                run_id, call_id, True, None
            ):
                resumed.append(call_id)
        for entry in body.resume or ():
            payload = entry.payload if isinstance(entry.payload, dict) else {}
            approved = entry.status == "resolved" and payload.get("approved") is not False
            reason = payload.get("reason") if isinstance(payload.get("reason"), str) else None
            if entry.status == "cancelled" and reason is None:
                reason = "the user cancelled the call"
            if runs.decide(run_id, entry.interrupt_id, approved, reason):
                resumed.append(entry.interrupt_id)
        return resumed

    async def stream(
        user: str,
        run_id: str,
        body: RunAgentInput,
        *,
        after: int = 0,
        resume: Collection[str] = (),
        refuse: bool = False,
    ) -> Response:
        """The run as one AG-UI segment; with ``refuse``, a run refused before its first
        event (a busy conversation) is an HTTP error instead."""
        public = context.run_ids.public(user, run_id)
        with lock:
            tools = clients.get(run_id)
        declared = tools.names if tools is not None else {t.name for t in body.tools or ()}
        # what the answers of this request leave waiting (they begin on the run's threads)
        left = tools.still_waiting() - set(resume) if tools is not None and resume else set()
        failure: list[BaseException] = []
        source = runs.events(run_id).pipe(
            ops.do_action(on_error=failure.append),
            to_ag_ui_events(
                body.thread_id,
                body.run_id,
                after=after,
                resume=resume,
                waiting=left,
                client_tools=frozenset(declared) - server_tools,
                interrupts=runs.agent.approver is None,
                id_prefix=public,
            ),
            ops.map(_as_ui_chunk),
        )
        pipe = ChunkPipe(source, heartbeat=context.heartbeat)
        first = None
        if refuse:
            first = await pipe.first()
            problem = context.refuse(failure[0]) if failure else None
            if problem is not None and not any(c.seq is not None for c in first or ()):
                pipe.close()
                raise problem

        async def events() -> AsyncIterator[str]:
            async for text in pipe.body(first):
                if text != DONE:  # AG-UI streams end with RUN_FINISHED / RUN_ERROR alone
                    yield text

        headers = {**_SSE_HEADERS, "x-rxreact-run-id": public}
        return StreamingResponse(events(), headers=headers)

    return [Route("/ag-ui", post, methods=["POST"])]


def _as_ui_chunk(chunk: AGUIChunk) -> UIChunk:
    """The pipe's item: the event's JSON and its seq (the pipe writes ``id:`` and ``data:``)."""
    return UIChunk(chunk.seq, chunk.to_json())


def _question(body: RunAgentInput) -> Question:
    """The last message's content as the question: text, and ``image`` / ``document`` parts
    (a ``data`` source's bytes, or a ``url``) as images and files; ``audio`` and ``video`` are
    a 400 (the agent's models take neither)."""
    last = body.messages[-1] if body.messages else None
    if last is None or last.role != "user":
        raise HTTPProblem(422, "invalid_body", "the last message must be a user message")
    content = last.content
    if isinstance(content, str):
        return question_of([content])
    return question_of([_part(i, part) for i, part in enumerate(content)])


def _part(index: int, part: Any) -> str | Image | File:
    kind = getattr(part, "type", None)
    if kind == "text":
        return str(part.text)
    if kind not in ("image", "document"):
        raise unsupported(
            f"content[{index}]: a {str(kind)[:40]!r} part cannot be sent to the agent (it "
            "takes text, image and document parts)"
        )
    source = part.source
    if source.type == "data":
        media = inline_part(source.value, source.mime_type)
    else:
        media = media_part(source.value, source.mime_type)
    return as_image(media) if kind == "image" else media


def _text(content: Any) -> str:
    """A message's text: a string, or the text of its parts (other parts are not read)."""
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") or "" for part in content or ())


def _last_event_id(request: Request) -> int | None:
    raw = request.headers.get("last-event-id", "").strip()
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:  # "²" is a digit, 10**5000 slow
        raise HTTPProblem(400, "invalid_last_event_id", "Last-Event-ID must be an event seq")
    return int(raw)
