"""``call_once``: one call of a user function (sync, ``async def`` or Observable-returning) as a
cold Observable of its one result. Tools and judges run this way."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable, SerialDisposable

from rxreact.cancellation import CancellationToken
from rxreact.model.openai._aio import io_loop

__all__ = ["call_once"]


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
    (:func:`~rxreact.model.openai._aio.io_loop`, shared with MCP sessions and loop-mode
    streams). Values before the last of an Observable or async generator go to ``progress``
    (each once the next one shows it was not the last); so do the calls of the function the
    keyword ``progress_parameter`` receives. Disposing sets ``token``; a result or progress
    that arrives afterwards is dropped. An exception the function raises goes to ``on_error``.
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

        coroutine = _coroutine(function, args, call_kwargs, report)
        if coroutine is not None:
            future = asyncio.run_coroutine_threadsafe(coroutine, io_loop())

            def on_done(f: Any) -> None:
                if f.cancelled():
                    return
                error = f.exception()
                if error is not None:
                    fail(error if isinstance(error, Exception) else RuntimeError(str(error)))
                else:
                    emit(f.result())

            future.add_done_callback(on_done)

            def dispose() -> None:
                cancel()
                future.cancel()

            return Disposable(dispose)

        inner = SerialDisposable()  # an observable result's own subscription

        def run(_: abc.SchedulerBase, __: Any = None) -> None:
            if done.is_set():
                return
            try:
                result = function(*args, **call_kwargs)
            except Exception as error:
                fail(error)
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
            else:
                emit(result)

        return CompositeDisposable(scheduler.schedule(run), inner, Disposable(cancel))

    return Observable(subscribe)


def _coroutine(
    function: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    report: Callable[[Any], None],
) -> Coroutine[Any, Any, Any] | None:
    """The call as a coroutine for the I/O loop, or None for a sync function."""
    if inspect.isasyncgenfunction(function):
        return _drain(function(*args, **kwargs), report)
    if inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        getattr(function, "__call__", None)  # noqa: B004  an object with an async __call__
    ):
        coroutine: Coroutine[Any, Any, Any] = function(*args, **kwargs)
        return coroutine
    return None


async def _drain(values: AsyncIterator[Any], report: Callable[[Any], None]) -> Any:
    """An async generator's values: each is progress once the next one comes; the last one is
    the result."""
    last: list[Any] = []
    async for value in values:
        if last:
            report(last[0])
        last[:] = [value]
    return last[0] if last else None
