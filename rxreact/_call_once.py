"""``call_once``: one call of a user function (sync, ``async def`` or Observable-returning) as a
cold Observable of its one result. Tools and judges run this way."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable, SerialDisposable

from rxreact.cancellation import CancellationToken

__all__ = ["ToolInterruptedError", "call_once"]


def call_once(
    function: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    token: CancellationToken,
    scheduler: abc.SchedulerBase,
) -> Observable[Any]:
    """Call ``function(*args, **kwargs)`` once, as a cold ``Observable`` of its one result.

    ::

        sync / async:   ----------r|      (r on ``scheduler`` / rxreact's background loop)
        observable:     --a--b--c|  ->  --------c|  (its last value)

    A sync function runs on ``scheduler`` (blocking is fine there: it is the tools' pool, or
    virtual time); an ``async def`` on one background event loop, and so does an awaitable
    that a sync function returns. Disposing sets ``token``; a result that arrives afterwards
    is dropped. An exception the function raises goes to ``on_error``; a ``BaseException``
    (``SystemExit``, ``KeyboardInterrupt``...) as a :class:`ToolInterruptedError`.
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

        def cancel() -> None:
            done.set()
            token.cancel()

        inner = SerialDisposable()  # an observable result's subscription, or the awaiting

        def await_on_loop(awaitable: Any) -> None:
            future = _background_loop().submit(_guarded(awaitable))

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

            future.add_done_callback(on_done)
            inner.disposable = Disposable(future.cancel)

        if inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004  an object with an async __call__
        ):
            try:
                await_on_loop(function(*args, **kwargs))
            except BaseException as error:  # raised before its first await
                fail(_as_exception(error))
            return CompositeDisposable(Disposable(cancel), inner)

        def run(_: abc.SchedulerBase, __: Any = None) -> None:
            if done.is_set():
                return
            try:
                result = function(*args, **kwargs)
            except BaseException as error:  # SystemExit & co. must not kill a pool thread
                fail(_as_exception(error))
                return
            if isinstance(result, Observable):
                last: list[Any] = []
                inner.disposable = result.subscribe(
                    last.append,
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

    return Observable(subscribe)


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


class _BackgroundLoop:
    """One asyncio loop on a daemon thread, shared by every async tool and judge of the process."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        thread = threading.Thread(target=self._loop.run_forever, name="rxreact-async-tools")
        thread.daemon = True
        thread.start()

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)


_loop_lock = threading.Lock()
_loop: _BackgroundLoop | None = None


def _background_loop() -> _BackgroundLoop:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = _BackgroundLoop()
        return _loop
