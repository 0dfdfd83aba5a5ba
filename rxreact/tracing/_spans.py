"""Spans around Observables, for :mod:`rxreact.tracing`: the optional OpenTelemetry import and
the operator that opens a span at subscribe and ends it at the terminal event or dispose."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable

__all__ = ["otel", "spanned"]

_trace: Any = None  # the opentelemetry.trace module, once imported; False when missing
_import_lock = threading.Lock()


def otel() -> Any:
    """The ``opentelemetry.trace`` module, or ``False`` without ``opentelemetry-api``
    (imported once, on the first run that asks)."""
    global _trace
    if _trace is None:
        with _import_lock:
            try:
                from opentelemetry import trace
            except ImportError:
                _trace = False
            else:
                _trace = trace
    return _trace


def spanned(
    source: Observable[Any],
    start: Callable[[], Any],
    on_event: Callable[[Any, Any], None],
    current: bool = False,
) -> Observable[Any]:
    """``source`` inside a span: opened at subscribe, ended before the terminal event is passed
    on (so a finished run's spans are exported when its subscriber hears of it), or at dispose.
    With ``current``, the span is the thread's current one while ``source`` is subscribed.

    ::

        source:   --a--b--|          span: [------]  then  |
        dispose:  --a--b-X           span: [-----] error.type="cancelled"
    """

    def subscribe(
        observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        span = start()
        lock = threading.Lock()
        ended = [False]

        def end(error: Exception | None = None, cancelled: bool = False) -> None:
            with lock:
                if ended[0]:
                    return
                ended[0] = True
            trace = otel()
            if error is not None:
                span.record_exception(error)
                span.set_attribute("error.type", type(error).__qualname__)
                span.set_status(trace.Status(trace.StatusCode.ERROR, str(error)))
            elif cancelled:
                span.set_attribute("error.type", "cancelled")
                span.set_status(trace.Status(trace.StatusCode.ERROR, "cancelled"))
            span.end()

        def on_next(event: Any) -> None:
            on_event(span, event)
            observer.on_next(event)

        def on_error(error: Exception) -> None:
            end(error)
            observer.on_error(error)

        def on_completed() -> None:
            end()
            observer.on_completed()

        if not current:
            subscription = source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)
        else:
            from opentelemetry import context

            token = context.attach(otel().set_span_in_context(span))
            try:
                subscription = source.subscribe(
                    on_next, on_error, on_completed, scheduler=scheduler
                )
            finally:
                context.detach(token)
        return CompositeDisposable(Disposable(lambda: end(cancelled=True)), subscription)

    return Observable(subscribe)
