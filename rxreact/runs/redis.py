"""``RedisEventLog``: hot runs shared by many processes and machines, on Redis Streams.

Keys, all under ``prefix``::

    run:{id}            the run's stream: entry 0-seq holds event seq as JSON (field e), the
                        last entry is the end marker (field end: {"error": null | {...}})
    run:{id}:meta       "running" (expires lost_after s after the owner's last heartbeat) or
                        "ended"; both say the run exists
    active:{conv}       sorted set of the runs started on a conversation, oldest first
    cancels             one stream of cancel requests, read by every owning process

The owner writes in the background: ``append`` queues the event, and one flush at a time sends
everything queued so far (every run of the process) as one pipeline of ``XADD``, so a chunk
costs a share of one round trip and the run never waits for Redis. Readers in this process are
served from memory; others ``XREAD BLOCK`` through one reader thread per log
(:mod:`rxreact.runs._hub`). Streams expire ``ttl`` seconds after the run's last write.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Self, cast

from reactivex import Observable, abc
from reactivex.disposable import Disposable

from rxreact.errors import ConfigurationError, RunError
from rxreact.events import AgentEvent
from rxreact.runs._entries import MAX_BATCH, encode_end, encode_events
from rxreact.runs._hub import Follower, Hub
from rxreact.runs._record import RunRecord
from rxreact.runs.base import RunWriter
from rxreact.runs.memory import InMemoryEventLog
from rxreact.scheduling import shared_scheduler

if TYPE_CHECKING:
    import redis

__all__ = ["RedisEventLog"]

log = logging.getLogger(__name__)


def _import_redis() -> Any:
    """redis-py, imported on first use so that ``rxreact`` works without it."""
    try:
        import redis
    except ImportError as error:
        raise ConfigurationError(
            "RedisEventLog needs redis-py: pip install 'rxreact[redis]'"
        ) from error
    return redis


def _ms(seconds: float | timedelta, name: str) -> int:
    value = seconds.total_seconds() if isinstance(seconds, timedelta) else seconds
    if value <= 0:
        raise ValueError(f"{name} must be positive")
    return max(1, round(value * 1000))


class RedisEventLog:
    """Runs' events in Redis Streams: follow, replay and cancel a run from any process.

    Args:
        client_or_url: a ``redis.Redis`` client (left open by :meth:`close`) or a URL such as
            ``redis://localhost:6379/0``. One more connection of its pool stays blocked in
            ``XREAD`` while anything is followed, so keep its ``socket_timeout`` unset or long.
        ttl: how long a run's events stay readable after its last write (seconds).
        prefix: the start of every key, to share a database with others.
        lost_after: seconds without a heartbeat from the owning process after which followers
            get :class:`~rxreact.RunLostError` and :meth:`active_run` forgets the run.
        max_runs: finished runs of this process kept in its memory for local subscribers.
        scheduler: where subscribers receive events when they subscribe without a scheduler.

    Raises:
        ConfigurationError: redis-py is not installed (``pip install 'rxreact[redis]'``).
    """

    def __init__(
        self,
        client_or_url: redis.Redis | str,
        *,
        ttl: float | timedelta = 3600.0,
        prefix: str = "rxreact:",
        lost_after: float = 30.0,
        max_runs: int = 1000,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        module = _import_redis()
        self._ttl_ms = _ms(ttl, "ttl")
        self._lost_ms = _ms(lost_after, "lost_after")
        self.prefix = prefix
        self._error: type[Exception] = module.RedisError
        self._owns_client = isinstance(client_or_url, str)
        self._client: redis.Redis = (
            module.Redis.from_url(client_or_url)
            if isinstance(client_or_url, str)
            else client_or_url
        )
        self._local = InMemoryEventLog(
            max_runs=max_runs, ttl=self._ttl_ms / 1000, scheduler=scheduler
        )
        self._hub = Hub(
            module.Redis(connection_pool=self._client.connection_pool),
            prefix,
            self._run_key,
            self._meta_key,
            self._cancel_requested,
            self._heartbeat,
            self._lost_ms / 3000,
            self._error,
        )
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)  # notified when a flush found nothing left
        self._owned: dict[str, RunRecord] = {}
        self._pending: deque[tuple[Any, ...]] = deque()
        self._flushing = False
        self._writes = shared_scheduler("redis-event-log", 2)

    def __repr__(self) -> str:
        return f"RedisEventLog(prefix={self.prefix!r}, ttl={self._ttl_ms / 1000:g})"

    def _run_key(self, run_id: str) -> str:
        return f"{self.prefix}run:{run_id}"

    def _meta_key(self, run_id: str) -> str:
        return f"{self.prefix}run:{run_id}:meta"

    def _active_key(self, conversation_id: str) -> str:
        return f"{self.prefix}active:{conversation_id}"

    # -- the owner's side -------------------------------------------------------------------

    def begin(
        self, run_id: str, conversation_id: str | None, cancel: Callable[[], None]
    ) -> RunWriter:
        """Register a run of this process: visible to :meth:`active_run` and followers at once.

        Raises:
            RunError: Redis could not be reached.
        """
        record = self._local.record(run_id, conversation_id, cancel)
        try:
            self._hub.ensure_started()  # cancel requests for this run are seen from now on
            pipe = self._client.pipeline(transaction=False)
            pipe.set(self._meta_key(run_id), "running", px=self._lost_ms)
            if conversation_id is not None:
                pipe.zadd(self._active_key(conversation_id), {run_id: time.time()})
                pipe.pexpire(self._active_key(conversation_id), self._ttl_ms)
            pipe.execute()
        except self._error as error:
            record.end(RunError(f"Redis event log: could not begin run: {error}"))
            raise RunError(f"Redis event log: could not begin run: {error}") from error
        with self._lock:
            self._owned[run_id] = record
        return _Writer(self, record)

    def _enqueue(self, item: tuple[Any, ...]) -> None:
        with self._lock:
            self._pending.append(item)
            if self._flushing:
                return
            self._flushing = True
        self._writes.schedule(self._flush)

    def _flush(self, _: abc.SchedulerBase, __: Any = None) -> None:
        # One flush at a time (the _flushing flag), each sending everything queued so far, so
        # every stream receives its entries in seq order.
        while True:
            with self._lock:
                if not self._pending:
                    self._flushing = False
                    self._idle.notify_all()
                    return
                batch = list(self._pending)
                self._pending.clear()
            pipe = self._client.pipeline(transaction=False)
            touched: set[str] = set()
            events: dict[str, list[AgentEvent]] = {}  # per run, in seq order, not yet added
            for item in batch:
                run_id = item[1]
                if item[0] == "e":
                    events.setdefault(run_id, []).append(item[2])
                    continue
                self._add_events(pipe, run_id, events.pop(run_id, []))
                _, run_id, conversation_id, seq, error = item
                pipe.xadd(self._run_key(run_id), {"end": encode_end(error)}, id=f"0-{seq}")
                pipe.set(self._meta_key(run_id), "ended", px=self._ttl_ms)
                if conversation_id is not None:
                    pipe.zrem(self._active_key(conversation_id), run_id)
                touched.add(run_id)
            for run_id, pending in events.items():
                self._add_events(pipe, run_id, pending)
                touched.add(run_id)
            for key in map(self._run_key, touched):
                pipe.pexpire(key, self._ttl_ms)
            try:
                failures = [
                    r for r in pipe.execute(raise_on_error=False) if isinstance(r, Exception)
                ]
            except self._error as error:
                failures = [error]
            if failures:  # the run goes on for local subscribers; followers elsewhere miss these
                log.warning("Redis event log: %d writes failed: %s", len(failures), failures[0])

    def _add_events(self, pipe: Any, run_id: str, events: list[AgentEvent]) -> None:
        key = self._run_key(run_id)
        for start in range(0, len(events), MAX_BATCH):
            part = events[start : start + MAX_BATCH]
            pipe.xadd(key, {"e": encode_events(part)}, id=f"0-{part[-1].seq}")

    def _ended(self, record: RunRecord) -> None:
        with self._lock:
            self._owned.pop(record.run_id, None)

    def _heartbeat(self, client: Any) -> None:
        """Keep this process's running runs alive (called by the reader thread)."""
        with self._lock:
            owned = [(r.run_id, r.conversation_id) for r in self._owned.values()]
        if not owned:
            return
        pipe = client.pipeline(transaction=False)
        for run_id, conversation_id in owned:
            pipe.pexpire(self._meta_key(run_id), self._lost_ms)
            pipe.pexpire(self._run_key(run_id), self._ttl_ms)
            if conversation_id is not None:
                pipe.pexpire(self._active_key(conversation_id), self._ttl_ms)
        pipe.execute()

    def _cancel_requested(self, run_id: str) -> None:
        with self._lock:
            record = self._owned.get(run_id)
        if record is not None and record.cancel is not None:
            # Not on the reader thread: cancelling closes HTTP streams and tells tools.
            cancel = record.cancel

            def action(_: abc.SchedulerBase, __: Any = None) -> None:
                cancel()

            self._writes.schedule(action)

    # -- anyone's side ----------------------------------------------------------------------

    def read(self, run_id: str, after: int = 0) -> Observable[AgentEvent]:
        """Replay ``seq > after``, follow live, end as the run ended (see :class:`EventLog`);
        from this process's memory for its own runs, else from Redis."""
        record = self._local.get(run_id)
        if record is not None:
            return record.read(after, self._local.scheduler)
        default = self._local.scheduler

        def subscribe(
            observer: abc.ObserverBase[AgentEvent], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            follower = Follower(self._hub, run_id, max(after, 0), observer, scheduler or default)
            try:
                self._hub.add(follower)
            except self._error as error:
                observer.on_error(RunError(f"Redis event log: could not follow: {error}"))
            return Disposable(follower.dispose)

        return Observable(subscribe)

    def active_run(self, conversation_id: str) -> str | None:
        """The oldest running run on ``conversation_id`` in any process, or ``None``."""
        key = self._active_key(conversation_id)
        members: list[bytes] = cast(list[bytes], self._client.zrange(key, 0, -1))
        run_ids = [r.decode() for r in members]
        if not run_ids:
            return None
        states = self._client.mget([self._meta_key(r) for r in run_ids])
        dead: list[str] = []
        for run_id, state in zip(run_ids, states, strict=True):
            if state == b"running":
                break
            dead.append(run_id)  # ended, or its process stopped beating
        else:
            run_id = ""
        if dead:
            self._client.zrem(key, *dead)
        return run_id or None

    def request_cancel(self, run_id: str) -> None:
        """Cancel the run, here if this process owns it, else through the owner's reader."""
        with self._lock:
            record = self._owned.get(run_id)
        if record is not None and record.cancel is not None:
            record.cancel()
            return
        self._client.xadd(self._hub.cancel_key, {"run": run_id}, maxlen=1000, approximate=True)

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until every event appended so far was sent to Redis; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._flushing, timeout)

    def close(self) -> None:
        """Send what is queued (:meth:`flush`), stop the reader thread, and close the client
        if this log made it from a URL."""
        self.flush()
        self._hub.close()
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Writer:
    """A run's writer: the local record first (subscribers here), then the Redis queue."""

    __slots__ = ("_ended", "_last", "_lock", "_log", "_record")

    def __init__(self, event_log: RedisEventLog, record: RunRecord) -> None:
        self._log = event_log
        self._record = record
        self._lock = threading.Lock()
        self._ended = False
        self._last = 0

    def append(self, event: AgentEvent) -> None:
        # The lock orders a late event against end() from cancel() on another thread: an entry
        # after the end marker would need an id Redis refuses (ids only grow).
        with self._lock:
            if self._ended:
                return
            self._last = event.seq
            self._record.append(event)
            self._log._enqueue(("e", self._record.run_id, event))

    def end(self, error: Exception | None = None) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
            record = self._record
            self._log._ended(record)
            record.end(error)
            self._log._enqueue(
                ("end", record.run_id, record.conversation_id, self._last + 1, error)
            )
