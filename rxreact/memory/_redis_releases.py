"""Lease releases announced over Redis pub/sub, so waiting runs on other hosts wake at once."""

from __future__ import annotations

import logging
import threading
from typing import Any

from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.disposable import Disposable

__all__ = ["ReleaseNotices"]

log = logging.getLogger(__name__)

#: How long :meth:`ReleaseNotices.close` waits for a listener to finish (it wakes every second).
_JOIN_TIMEOUT = 5.0


class ReleaseNotices:
    """The conversation ids published on ``channel``, while anyone listens.

    ::

        PUBLISH channel "c1"  ...  PUBLISH channel "c2"
        notices:              -----c1--------c2--->     (hot, shared)

    One pub/sub connection and one listener thread (redis-py's, waking at least once a second
    to notice it was stopped) serve every subscriber; they start with the first subscription
    and stop with the last. A notice can be missed (one published while the subscription is
    being set up, or while the connection is down): listeners must still poll, the notices
    only shorten the wait. A connection failure stops the listener quietly for that reason.

    :meth:`close` joins the listeners before the client is closed: a stopped listener still
    returns its connection to the pool, under the pool's lock, and a daemon thread frozen
    there at interpreter exit deadlocked the client's ``__del__`` (seen in CI).
    """

    def __init__(self, client: Any, channel: str) -> None:
        self._client = client
        self._channel = channel
        self._threads: set[Any] = set()  # redis-py's PubSubWorkerThread
        self._lock = threading.Lock()
        self.observable: Observable[str] = Observable(self._subscribe).pipe(ops.share())

    def _subscribe(
        self, observer: abc.ObserverBase[str], _: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        pubsub = self._client.pubsub(ignore_subscribe_messages=True)

        def on_message(message: dict[str, Any]) -> None:
            data = message["data"]
            observer.on_next(data.decode() if isinstance(data, bytes) else str(data))

        def on_failure(error: BaseException, _pubsub: Any, thread: Any) -> None:
            log.debug("lease release notices stopped: %s", error)
            thread.stop()

        pubsub.subscribe(**{self._channel: on_message})
        thread = pubsub.run_in_thread(sleep_time=1.0, daemon=True, exception_handler=on_failure)
        with self._lock:
            self._threads = {t for t in self._threads if t.is_alive()} | {thread}
        return Disposable(thread.stop)

    def close(self) -> None:
        """Stop every listener and wait for each to hand its connection back."""
        with self._lock:
            threads, self._threads = self._threads, set()
        for thread in threads:
            thread.stop()
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(_JOIN_TIMEOUT)
