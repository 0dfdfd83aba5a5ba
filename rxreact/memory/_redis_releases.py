"""Lease releases announced over Redis pub/sub, so waiting runs on other hosts wake at once."""

from __future__ import annotations

import logging
from typing import Any

from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.disposable import Disposable

__all__ = ["release_notices"]

log = logging.getLogger(__name__)


def release_notices(client: Any, channel: str) -> Observable[str]:
    """The conversation ids published on ``channel``, while anyone listens.

    ::

        PUBLISH channel "c1"  ...  PUBLISH channel "c2"
        release_notices:      -----c1--------c2--->     (hot, shared)

    One pub/sub connection and one listener thread (redis-py's, waking at least once a second
    to notice it was stopped) serve every subscriber; they start with the first subscription
    and stop with the last. A notice can be missed (one published while the subscription is
    being set up, or while the connection is down): listeners must still poll, the notices
    only shorten the wait. A connection failure stops the listener quietly for that reason.
    """

    def subscribe(
        observer: abc.ObserverBase[str], _: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        pubsub = client.pubsub(ignore_subscribe_messages=True)

        def on_message(message: dict[str, Any]) -> None:
            data = message["data"]
            observer.on_next(data.decode() if isinstance(data, bytes) else str(data))

        def on_failure(error: BaseException, _pubsub: Any, thread: Any) -> None:
            log.debug("lease release notices stopped: %s", error)
            thread.stop()

        pubsub.subscribe(**{channel: on_message})
        thread = pubsub.run_in_thread(sleep_time=1.0, daemon=True, exception_handler=on_failure)
        return Disposable(thread.stop)

    return Observable(subscribe).pipe(ops.share())
