"""``POST /v1/chat/completions`` and ``GET /v1/models``: the agent behind the OpenAI API.

The last message is the question. The conversation is the ``x-rxreact-conversation`` header or
the body's ``user`` field (the agent's memory holds its history, the messages sent before the
last are ignored); with neither the request is stateless: the messages sent are the history,
kept in a throwaway memory for this one run. Streamed or not, the mapping is
:mod:`rxreact.serve.openai_compat`'s. A response whose client leaves, streamed or not, cancels
its run at once (nobody can resume it: it has no chat page behind it). A run that failed
answers ``x-should-retry: false`` (the SDKs retry twice by default: the agent and its tools
would run three times) except where nothing ran (:data:`SAFE_TO_RETRY`).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from reactivex import operators as ops
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from rxreact._validate import check_question
from rxreact.agent.react_agent import ReactAgent
from rxreact.errors import RxReactError
from rxreact.events import FinalAnswer
from rxreact.memory.in_memory import InMemoryChatMemory
from rxreact.messages import AssistantMessage, File, Image, Message, SystemMessage, UserMessage
from rxreact.messages._labels import Question
from rxreact.serve._body import HTTPProblem, _validated, check_conversation_id, message_too_long
from rxreact.serve._bridge import ChunkPipe
from rxreact.serve._guard import user_of
from rxreact.serve._media import as_image, media_part, question_of, text_chars, unsupported
from rxreact.serve._runs import RunRegistry
from rxreact.serve._sse import UIChunk
from rxreact.serve.auth import conversation_key
from rxreact.serve.openai_compat import chat_completion, error_body, to_chat_completion_chunks
from rxreact.serve.openai_compat._disconnect import ClientLeft, while_connected

__all__ = ["CONVERSATION_HEADER", "openai_routes"]

CONVERSATION_HEADER = "x-rxreact-conversation"

_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


class _ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        parts = self.content or []
        return "".join(str(p.get("text") or "") for p in parts if p.get("type") in _TEXT_PARTS)

    def question(self) -> Question:
        """The content as the agent's question: text, images and files (see :func:`_part`)."""
        if isinstance(self.content, str) or self.content is None:
            return question_of([self.content or ""])
        return question_of([_part(i, p) for i, p in enumerate(self.content)])


_TEXT_PARTS = ("text", "input_text")


def _part(index: int, part: dict[str, Any]) -> str | Image | File:
    """One content part of a user message: ``text``, ``image_url`` (a data URL or an
    ``http(s)`` URL), ``file`` (``file_data`` a data URL, with its ``filename``), and the
    Responses API's ``input_text`` / ``input_image`` / ``input_file`` that some clients send
    here; anything else (``input_audio``, a ``file_id`` of an upload this server never saw)
    is a 400 naming it."""
    kind = part.get("type")
    where = f"content[{index}]"
    if kind in _TEXT_PARTS:
        return str(part.get("text") or "")
    if kind in ("image_url", "input_image"):
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        if not isinstance(url, str) or not url:
            raise unsupported(f"{where}: an image part needs image_url.url")
        return as_image(media_part(url))
    if kind in ("file", "input_file"):
        file = part.get("file") if kind == "file" else part
        file = file if isinstance(file, dict) else {}
        name = file.get("filename") if isinstance(file.get("filename"), str) else None
        source = file.get("file_data") or file.get("file_url")
        if not isinstance(source, str) or not source:
            raise unsupported(
                f"{where}: a file part needs file_data (a data: URL): this server has no "
                "uploaded files (file_id)"
            )
        return media_part(source, None, name)
    raise unsupported(
        f"{where}: a {str(kind)[:40]!r} part cannot be sent to the agent (it takes text, "
        "image_url and file parts)"
    )


class CompletionBody(BaseModel):
    """What the endpoint reads of a chat-completions request (tools, temperature... are the
    agent's own business and ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    model: str | None = None
    messages: list[_ChatMessage] = Field(min_length=1)
    stream: bool = False
    user: str | None = None
    stream_options: dict[str, Any] | None = None


def openai_routes(
    runs: RunRegistry,
    *,
    model_name: str,
    max_message_chars: int,
    refuse: Callable[[BaseException], HTTPProblem | None],
    heartbeat: float = 15.0,
) -> list[Route]:
    """The two routes, over the app's run registry (so the per-user run limit counts them)."""

    async def models(request: Request) -> Response:
        model = {"id": model_name, "object": "model", "created": 0, "owned_by": "rxreact"}
        return JSONResponse({"object": "list", "data": [model]})

    async def completions(request: Request) -> Response:
        user = user_of(request)
        body = _validated(CompletionBody, await request.body())
        last = body.messages[-1]
        if last.role != "user":
            raise HTTPProblem(422, "invalid_body", "the last message must be a user message")
        question = last.question()
        if text_chars(question) > max_message_chars:
            raise message_too_long(max_message_chars)
        named = request.headers.get(CONVERSATION_HEADER) or body.user
        agent: ReactAgent | None = None
        if named:
            key = conversation_key(user, check_conversation_id(named))
        else:  # stateless: the messages sent are the history
            key = uuid.uuid4().hex
            agent = _with_history(runs.agent, key, body.messages[:-1])
        try:
            run = await run_in_threadpool(runs.start, question, key, user, agent)
        except RxReactError as error:
            raise refuse(error) or error from None
        answers: list[FinalAnswer] = []
        failure: list[BaseException] = []
        chunks = run.events().pipe(
            ops.do_action(
                lambda e: answers.append(e) if isinstance(e, FinalAnswer) else None,
                on_error=failure.append,
            ),
            to_chat_completion_chunks(
                f"chatcmpl-{run.id}",
                body.model or model_name,
                include_usage=bool((body.stream_options or {}).get("include_usage")),
            ),
            ops.map(_as_sse),
        )
        pipe = ChunkPipe(chunks, heartbeat=heartbeat)
        try:
            # A run queued behind another, or one not streamed, writes nothing for a while:
            # the client leaving must still cancel it at once (its SDK retries ~0.5 s later).
            first = await while_connected(request, pipe.first())
            if failure and first is not None and len(first) == 1 and "error" in first[0].part:
                pipe.close()  # refused before it began (a busy conversation): an HTTP error
                return _failed(failure[0])
            if not body.stream:
                try:
                    collected = await while_connected(request, _collected(pipe, first))
                finally:
                    pipe.close()
                if failure:
                    return _failed(failure[0])
                return JSONResponse(chat_completion(collected, answers[-1] if answers else None))
        except ClientLeft:
            run.cancel()  # nobody can read this run: it has no chat page behind it
            pipe.close()
            return Response(status_code=499)

        async def body_text() -> AsyncIterator[str]:
            ended = False
            try:
                async for text in pipe.body(first):
                    yield text
                ended = True
            finally:
                if not ended:  # the client left: nobody will read this run
                    run.cancel()

        return StreamingResponse(body_text(), media_type="text/event-stream", headers=_SSE_HEADERS)

    return [
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/chat/completions", completions, methods=["POST"]),
    ]


def _as_sse(chunk: dict[str, Any]) -> UIChunk:
    """A chunk as the pipe's item: one ``data:`` event without an id (nothing resumes it)."""
    return UIChunk(None, chunk)


async def _collected(pipe: ChunkPipe, first: list[UIChunk] | None) -> list[dict[str, Any]]:
    """Every chunk of the run: ``first``, then the pipe's batches until the run ends."""
    collected = [c.part for c in first or ()]
    while (batch := await pipe.first()) is not None:  # the next batch: "first" of what is left
        collected.extend(c.part for c in batch)
    return collected


SAFE_TO_RETRY = frozenset({409, 429})
"""The statuses of ``/v1/chat/completions`` a client may retry: nothing ran (a busy
conversation, too many runs in flight). Every other failure of a run that started answers
``x-should-retry: false``: a retry would run the agent, and its tools, again."""


def _failed(error: BaseException) -> Response:
    """A run's failure as OpenAI's error object and status, telling SDKs whether to retry."""
    status, error_json = error_body(error)
    headers = {} if status in SAFE_TO_RETRY else {"x-should-retry": "false"}
    return JSONResponse(error_json, status, headers=headers)


def _with_history(agent: ReactAgent, key: str, messages: list[_ChatMessage]) -> ReactAgent:
    """``agent`` whose memory holds ``messages`` under ``key`` alone (a shallow copy: model,
    tools, schedulers and event log are shared; nothing is written to the real memory)."""
    history: list[Message] = []
    for message in messages:
        text = message.text()
        if message.role in ("system", "developer") and text:
            history.append(SystemMessage(content=text))
        elif message.role == "user" and (text or message.content):
            asked = message.question()  # a user's earlier images are the history too
            history.append(UserMessage(content=check_question(asked)))
        elif message.role == "assistant" and text:
            history.append(AssistantMessage(content=text))
        # tool calls and results of the caller's own tools are not this agent's history
    memory = InMemoryChatMemory()
    if history:
        memory.append(key, history)
    clone = copy.copy(agent)
    clone.memory = memory
    return clone
