"""The observers of one tool round: ``Round`` merges the calls' events with a completion
counter, ``Call`` turns one call's value, error or timeout into its ``tool_result``.

They replace the generic composition (``flat_map`` of ``defer`` / ``catch`` / ``map`` /
``timeout_with`` per call): about ten observer layers per call, each with its own locks and
disposables. At a thousand concurrent runs the tool rounds were the largest part of rxreact's
own CPU; this is one observer for the round and one per call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, SingleAssignmentDisposable

from rxreact.events import ToolProgress, ToolResult
from rxreact.messages import ContentPart, ToolCall
from rxreact.rx._fused import Keeper, subscribe_observer
from rxreact.tools.results import (
    DEFAULT_MAX_RESULT_CHARS,
    ToolResultError,
    result_content,
    truncate_result,
)
from rxreact.tools.tool import ToolInterruptedError


class ToolTimeoutError(Exception):
    pass


class Round(abc.DisposableBase):
    """The merged events of one round: passed on one at a time (under ``lock``); complete once
    the calls' source and every call have completed: the completion counter. Disposing it
    cancels every call."""

    __slots__ = ("_observer", "_pending", "_stopped", "disposables", "lock")

    def __init__(self, observer: abc.ObserverBase[Any]) -> None:
        self._observer = observer
        self.lock = threading.RLock()  # re-entered when a call's events pass through a tracer
        self._pending = 1  # the source of calls, until it completes
        self._stopped = False
        self.disposables = CompositeDisposable()

    def begin(self) -> None:
        with self.lock:
            self._pending += 1

    def emit(self, event: Any) -> None:
        with self.lock:
            if self._stopped:
                return
            try:
                self._observer.on_next(event)
                return
            except Exception as error:
                # Raised downstream (by the run's subscriber): it ends the round. Handing it
                # back instead would lose it: a call's result comes from a tool's thread or a
                # timer, whose caller has nobody to tell, and the round would never end.
                failed = error
        self.fail(failed)

    def end(self) -> None:
        with self.lock:
            self._pending -= 1
            if self._pending or self._stopped:
                return
            self._stopped = True
            self._observer.on_completed()

    def fail(self, error: Exception) -> None:
        with self.lock:
            if self._stopped:
                return
            self._stopped = True
            self._observer.on_error(error)
        self.disposables.dispose()

    def dispose(self) -> None:
        with self.lock:
            self._stopped = True
        self.disposables.dispose()


class Inner(abc.ObserverBase[Any]):
    """A call's events into the round (its completion counted once)."""

    __slots__ = ("_done", "_round")

    def __init__(self, round_: Round) -> None:
        self._round = round_
        self._done = False

    def on_next(self, value: Any) -> None:
        self._round.emit(value)

    def on_error(self, error: Exception) -> None:
        self._round.fail(error)

    def on_completed(self) -> None:
        if not self._done:
            self._done = True
            self._round.end()


class Call(Keeper, abc.ObserverBase[Any], abc.DisposableBase):
    """One tool call's result, as the observer of the tool's body: the first of its value, its
    error or its timeout settles it (a ``tool_result``); later ones are dropped. Subscribed as
    it is (a :class:`~rxreact.rx._fused.Keeper`: it settles once)."""

    __slots__ = (
        "_body",
        "_lock",
        "_make",
        "_max_chars",
        "_round_number",
        "_settled",
        "_sink",
        "_timer",
        "call",
    )

    def __init__(
        self,
        call: ToolCall,
        round_number: int,
        sink: abc.ObserverBase[Any],
        lock: threading.RLock,
        make: Callable[[str | tuple[ContentPart, ...], bool], ToolResult],
        max_chars: int | None,
    ) -> None:
        self.call = call
        self._round_number = round_number
        self._sink = sink
        self._lock = lock
        self._make = make
        self._max_chars = max_chars
        self._settled = False
        self._body = SingleAssignmentDisposable()
        self._timer: abc.DisposableBase | None = None

    def start(
        self,
        body: Callable[[], Observable[Any]],
        timeout: float | None,
        scheduler: abc.SchedulerBase,
    ) -> None:
        """Subscribe to ``body()`` (an exception it raises is the call's failure); nothing when
        the call was disposed first (its round ended as its ``tool_execution_started`` went
        out, because the subscriber raised on it): the tool never runs."""
        with self._lock:
            if self._settled:
                return
        if timeout is not None:
            # A deadline for the whole call, which progress does not extend.
            self._timer = scheduler.schedule_relative(timeout, self._expire, timeout)
        try:
            self._body.disposable = subscribe_observer(body(), self)
        except Exception as error:
            self.on_error(error)

    def progress(self, value: Any) -> None:
        call = self.call
        with self._lock:  # never after the result, whichever thread settles it
            if not self._settled:
                event = ToolProgress(
                    round=self._round_number, call_id=call.id, name=call.name, value=value
                )
                self._sink.on_next(event)

    def forward(self, event: Any) -> None:
        """Pass an event of the call's own making (a nested agent run's) into the round."""
        with self._lock:  # never after the result, whichever thread settles it
            if not self._settled:
                self._sink.on_next(event)

    def ended(self) -> bool:
        return self._settled

    def on_next(self, value: Any) -> None:
        try:
            content, is_error = result_content(value, self._max_chars), False
        except Exception as error:  # a result that cannot be text is the call's failure
            content, is_error = describe(self.call, error), True
        self._settle(content, is_error)

    def on_error(self, error: Exception) -> None:
        self._settle(describe(self.call, error), True)

    def on_completed(self) -> None:
        # A body that completes without a value (``Tool.invoke`` always gives one): no result;
        # the run reports the call's missing result.
        if self._claim():
            self._sink.on_completed()

    def _expire(self, _: abc.SchedulerBase, timeout: Any) -> None:
        if not self._claim():
            return
        self._body.dispose()  # the tool's token is set before its result is seen
        self._pass(describe(self.call, ToolTimeoutError(timeout)), True)

    def _settle(self, content: str | tuple[ContentPart, ...], is_error: bool) -> None:
        if not self._claim():
            return
        if self._timer is not None:
            self._timer.dispose()
        self._pass(content, is_error)

    def _claim(self) -> bool:
        """Settle the call, if nothing has yet: the first of value, error, timeout wins."""
        with self._lock:
            if self._settled:
                return False
            self._settled = True
            return True

    def _pass(self, content: str | tuple[ContentPart, ...], is_error: bool) -> None:
        self._sink.on_next(self._make(content, is_error))
        self._sink.on_completed()

    def dispose(self) -> None:
        with self._lock:
            self._settled = True
        self._body.dispose()
        if self._timer is not None:
            self._timer.dispose()


def describe(call: ToolCall, error: Exception) -> str:
    if isinstance(error, ToolTimeoutError):
        return f"Error: tool {call.name!r} timed out after {error.args[0]:g} s."
    if isinstance(error, ToolResultError):
        return f"Error: tool {call.name!r} {error}."
    if isinstance(error, ToolInterruptedError):
        return f"Error: tool {call.name!r} raised {error}."
    # An exception's text can be as long as a result: bounded the same way.
    text = f"Error: tool {call.name!r} raised {type(error).__name__}: {error}"
    return truncate_result(text, DEFAULT_MAX_RESULT_CHARS)
