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

__all__ = ["call_once"]


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
    virtual time); an ``async def`` on one background event loop. Disposing sets ``token``; a
    result that arrives afterwards is dropped. An exception the function raises goes to
    ``on_error``.
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

        if inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004  an object with an async __call__
        ):
            future = _background_loop().submit(function(*args, **kwargs))

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
                result = function(*args, **kwargs)
            except Exception as error:
                fail(error)
                return
            if isinstance(result, Observable):
                last: list[Any] = []
                inner.disposable = result.subscribe(
                    last.append,
                    fail,
                    lambda: emit(last[-1] if last else None),
                    scheduler=scheduler,
                )
            else:
                emit(result)

        return CompositeDisposable(scheduler.schedule(run), inner, Disposable(cancel))

    return Observable(subscribe)


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
