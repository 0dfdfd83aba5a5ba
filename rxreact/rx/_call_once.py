"""``call_once``: one call of a user function (sync, ``async def`` or Observable-returning) as a
cold Observable of its one result. Tools and judges run this way."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable, SerialDisposable

from rxreact.cancellation import CancellationToken
from rxreact.model.http._aio import io_loop
from rxreact.rx._fused import Fused

__all__ = ["ToolInterruptedError", "call_once"]


def call_once(
    function: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    token: CancellationToken,
    scheduler: abc.SchedulerBase,
    progress: Callable[[Any], None] | None = None,
    progress_parameter: str | None = None,
) -> Observable[Any]:
    """Call ``function(*args, **kwargs)`` once, as a cold ``Observable`` of its one result.

    ::

        sync / async:     ----------r|      (r on ``scheduler`` / rxreact's I/O loop)
        observable:       --a--b--c|  ->  --------c|    progress(a) at b, progress(b) at c
        async generator:  --a--b--c|  ->  --------c|    progress(a) at b, progress(b) at c

    A sync function runs on ``scheduler`` (blocking is fine there: it is the tools' pool, or
    virtual time); an ``async def`` or async generator on rxreact's one I/O loop
    (:func:`~rxreact.model.http._aio.io_loop`, shared with MCP sessions and loop-mode
    streams), and so does an awaitable that a sync function returns. Values before the last
    of an Observable or async generator go to ``progress`` (each once the next one shows it
    was not the last); so do the calls of the function the keyword ``progress_parameter``
    receives; a progress that arrives after the result or a dispose is dropped. Disposing sets
    ``token``; a result that arrives afterwards is dropped. An exception the function raises
    goes to ``on_error``; a ``BaseException`` (``SystemExit``, ``KeyboardInterrupt``...) as a
    :class:`ToolInterruptedError`.
    """

    def subscribe(
        observer: abc.ObserverBase[Any], _: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        done = threading.Event()  # guards against late results after dispose

        def emit(value: Any) -> None:
            if not done.is_set():
                done.set()
                observer.on_next(value)
                observer.on_completed()

        def fail(error: Exception) -> None:
            if not done.is_set():
                done.set()
                observer.on_error(error)

        def report(value: Any) -> None:
            if progress is not None and not done.is_set():
                progress(value)

        def cancel() -> None:
            done.set()
            token.cancel()

        call_kwargs = dict(kwargs)
        if progress_parameter is not None:
            call_kwargs[progress_parameter] = report

        inner = SerialDisposable()  # an observable result's subscription, or the awaiting

        def await_on_loop(awaitable: Any) -> None:
            # The process's one I/O loop (rxreact-io): async tools and MCP sessions share it.
            future = asyncio.run_coroutine_threadsafe(_guarded(awaitable), io_loop())

            def on_done(f: Any) -> None:
                if f.cancelled():
                    # Ours (a dispose: then ``done`` is set), or the function's own
                    # CancelledError, which is a failure like any other.
                    fail(ToolInterruptedError("its coroutine was cancelled"))
                    return
                error = f.exception()
                if error is not None:
                    fail(_as_exception(error))
                else:
                    emit(f.result())

            def stop() -> None:
                future.cancel()

            future.add_done_callback(on_done)
            inner.disposable = Disposable(stop)

        if inspect.isasyncgenfunction(function):
            try:
                await_on_loop(_drain(function(*args, **call_kwargs), report))
            except BaseException as error:
                fail(_as_exception(error))
            return CompositeDisposable(Disposable(cancel), inner)
        if inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004  an object with an async __call__
        ):
            try:
                await_on_loop(function(*args, **call_kwargs))
            except BaseException as error:  # raised before its first await
                fail(_as_exception(error))
            return CompositeDisposable(Disposable(cancel), inner)

        def run(_: abc.SchedulerBase, __: Any = None) -> None:
            if done.is_set():
                return
            try:
                result = function(*args, **call_kwargs)
            except BaseException as error:  # SystemExit & co. must not kill a pool thread
                fail(_as_exception(error))
                return
            if isinstance(result, Observable):
                last: list[Any] = []

                def on_value(value: Any) -> None:
                    if last:  # the value before is known to be intermediate now
                        report(last[0])
                    last[:] = [value]

                inner.disposable = result.subscribe(
                    on_value,
                    fail,
                    lambda: emit(last[-1] if last else None),
                    scheduler=scheduler,
                )
            elif inspect.isawaitable(result):
                await_on_loop(result)  # a sync function that returned a coroutine
            else:
                emit(result)

        # cancel first: a cancelled future calls back at once, and must find the call done.
        return CompositeDisposable(Disposable(cancel), scheduler.schedule(run), inner)

    # Fused: ``done`` lets one end through and nothing after it, and disposal sets it, so a
    # tool's call subscribes without RxPY's wrapper (some thirty calls per tool call).
    return Fused(subscribe)


class ToolInterruptedError(Exception):
    """A tool (or a judge) raised a ``BaseException`` that is not an ``Exception``
    (``SystemExit``, ``KeyboardInterrupt``, a ``CancelledError`` of its own...).

    Internal to a run: for a tool it becomes an error ``tool_result`` (the run goes on), never
    a hang or a misleading timeout.
    """


def _as_exception(error: BaseException) -> Exception:
    if isinstance(error, Exception):
        return error
    return ToolInterruptedError(f"{type(error).__name__}({error})")


async def _guarded(awaitable: Any) -> Any:
    """Await the function's awaitable; a ``SystemExit`` or ``KeyboardInterrupt`` raised in it
    would otherwise stop the shared background loop itself (asyncio re-raises them)."""
    try:
        return await awaitable
    except (KeyboardInterrupt, SystemExit) as error:
        raise _as_exception(error) from None


async def _drain(values: AsyncIterator[Any], report: Callable[[Any], None]) -> Any:
    """An async generator's values: each is progress once the next one comes; the last one is
    the result."""
    last: list[Any] = []
    async for value in values:
        if last:
            report(last[0])
        last[:] = [value]
    return last[0] if last else None
