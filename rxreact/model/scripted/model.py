"""A chat model that plays back scripted replies: for tests, demos and notebooks.

Chunks are emitted by actions on the subscribe-time scheduler (or the one given to the
constructor): one action per run of chunks between
:class:`~rxreact.model.scripted.replies.Pause` items, which become relative schedules. Under a
``TestScheduler`` a whole reply therefore plays in virtual time, exactly as scripted, with
nothing running on a real clock.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable

from rxreact.errors import ModelError, StreamInterruptedError, http_error_for_status
from rxreact.messages import ChatRequest
from rxreact.model.chunks import ChatChunk, ModelResponse
from rxreact.model.http.sse import SSEDecoder
from rxreact.model.openai.wire import DONE, parse_chunk
from rxreact.model.scripted.replies import (
    Disconnect,
    Fail,
    Hang,
    HTTPErrorReply,
    Pause,
    RawSSE,
    Reply,
    ReplyItem,
    Script,
)
from rxreact.rx._ordered_serial import OrderedSerialDisposable
from rxreact.scheduling import timer_scheduler

__all__ = ["ScriptedModel"]


class ScriptedModel:
    """Plays back one scripted reply per request.

    ::

        model = ScriptedModel([
            tool_call_reply(("get_weather", {"city": "Beijing"})),
            text_reply("Sunny.", interval=0.1),
        ])

    Marble view of ``stream()`` for ``text_reply("a b", interval=1)`` (role chunk, two text
    chunks, finish chunk, one virtual second apart)::

        stream(): r-a-b-f|

    Args:
        script: the replies in request order, or a function from each request to its reply.
        scheduler: scheduler for emission and pauses when the subscriber gives none
            (default: rxreact's shared timer pool, i.e. real time on background threads).
        options: default request options, as ``OpenAIChatModel(options=...)``: each recorded
            request's ``options`` are these overridden by the request's own, i.e. what
            ``OpenAIChatModel`` would send in the body.

    Attributes:
        requests: every request received, in order (for assertions), with the merged options.
    """

    def __init__(
        self,
        script: Script,
        *,
        scheduler: abc.SchedulerBase | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self._script = script
        self._scheduler = scheduler
        self._lock = threading.Lock()
        self.options: dict[str, Any] = dict(options or {})
        """Default request options (see the class)."""
        self.requests: list[ChatRequest] = []

    def __repr__(self) -> str:
        return f"ScriptedModel(requests={len(self.requests)})"

    def _next_reply(self, request: ChatRequest) -> Reply:
        if self.options:
            request = request.model_copy(update={"options": {**self.options, **request.options}})
        with self._lock:
            number = len(self.requests)
            self.requests.append(request)
        if callable(self._script):
            return self._script(request)
        if number >= len(self._script):
            raise ModelError(
                f"ScriptedModel has no reply for request #{number + 1}: "
                f"the script holds {len(self._script)}"
            )
        return self._script[number]

    def stream(self, request: ChatRequest) -> Observable[ChatChunk]:
        """Play the next reply as chunks (cold: the reply is taken on subscribe)."""

        def subscribe(
            observer: abc.ObserverBase[ChatChunk], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            sched = timer_scheduler(scheduler or self._scheduler)
            try:
                items = _reply_items(self._next_reply(request))
            except Exception as error:  # a script function that raises ends the stream
                observer.on_error(error)
                return Disposable()
            return _play(items, observer, sched)

        return Observable(subscribe)

    def complete(self, request: ChatRequest) -> ModelResponse:
        """Assemble the next reply at once (pauses are skipped: nothing waits)."""
        from rxreact.model.assembly import ResponseAssembler

        assembler = ResponseAssembler()
        for item in _reply_items(self._next_reply(request)):
            if isinstance(item, ChatChunk):
                assembler.add(item)
            elif isinstance(item, Fail):
                raise item.error
            elif isinstance(item, Hang | Disconnect):
                raise StreamInterruptedError("scripted reply ends without finishing")
        return assembler.response()


def _reply_items(reply: Reply) -> Sequence[ReplyItem]:
    """Normalize a reply to items: HTTP errors and raw SSE become chunks or a Fail."""
    if isinstance(reply, HTTPErrorReply):
        retry_after = reply.headers.get("Retry-After")
        error = http_error_for_status(
            reply.status, reply.message, retry_after=float(retry_after) if retry_after else None
        )
        return [Fail(error)]
    if isinstance(reply, RawSSE):
        return _decode_raw(reply.data)
    return reply


def _decode_raw(data: bytes) -> list[ReplyItem]:
    """Recorded SSE bytes as reply items, with the end rules of a real stream: no ``[DONE]``
    becomes a :class:`Disconnect` (an error unless a finish reason was seen)."""
    decoder = SSEDecoder()
    items: list[ReplyItem] = []
    try:
        for event in [*decoder.feed(data), *decoder.close()]:
            if event.data == DONE:
                return items
            chunk = parse_chunk(event.data, event.event)
            if chunk is not None:
                items.append(chunk)
    except ModelError as error:
        items.append(Fail(error))
        return items
    items.append(Disconnect())
    return items


def _play(
    items: Sequence[ReplyItem], observer: abc.ObserverBase[ChatChunk], sched: abc.SchedulerBase
) -> abc.DisposableBase:
    """Emit ``items`` one scheduled action each; returns the disposable that stops playback."""
    position = 0
    disposed = False
    saw_finish = False
    # Ordered, not serial: the first step can run, reach a Pause and schedule the next one
    # before ``schedule(0.0)`` below has stored its own handle.
    pending = OrderedSerialDisposable()

    def step(_: abc.SchedulerBase, __: Any = None) -> None:
        # Emits every item up to the next pause in one action: chunks scripted back to back
        # arrive at one instant, as a burst read from a socket does.
        nonlocal position, saw_finish
        while not disposed:
            if position >= len(items):
                observer.on_completed()
                return
            item = items[position]
            position += 1
            if isinstance(item, ChatChunk):
                saw_finish = saw_finish or item.finish_reason is not None
                observer.on_next(item)
            elif isinstance(item, Pause):
                schedule(item.seconds)
                return
            elif isinstance(item, Fail):
                observer.on_error(item.error)
                return
            elif isinstance(item, Hang):
                return  # silent until disposed
            else:  # Disconnect
                if saw_finish:
                    observer.on_completed()
                else:
                    observer.on_error(
                        StreamInterruptedError("connection closed before the stream ended")
                    )
                return

    def schedule(delay: float) -> None:
        if disposed:
            return
        if delay > 0:
            pending.replace_with(lambda: sched.schedule_relative(delay, step))
        else:
            pending.replace_with(lambda: sched.schedule(step))

    def dispose() -> None:
        nonlocal disposed
        disposed = True

    schedule(0.0)
    return CompositeDisposable(Disposable(dispose), pending)
