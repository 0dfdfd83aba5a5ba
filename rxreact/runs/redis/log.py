"""``RedisEventLog``: hot runs shared by many processes and machines, on Redis Streams.

Keys, all under ``prefix``::

    run:{id}            the run's stream: entry 0-seq holds event seq as JSON (field e), the
                        last entry is the end marker (field end: {"error": null | {...}})
    run:{id}:ckpt       the run's checkpoints (a hash: field n holds checkpoint n), never shown
                        to followers (:mod:`rxreact.runs.checkpoints`)
    run:{id}:meta       "running" (expires lost_after s after the owner's last heartbeat) or
                        "ended"; both say the run exists
    run:{id}:owner      the run's lease (owner, fencing token, conversation, state)
    run:{id}:decided    the run's approval decisions, by call id
    active:{conv}       sorted set of the runs started on a conversation, oldest first
    running             the runs begun and not ended, scored by when a claim may take them
    woken               the parked runs decided on since they parked
    cancels, decisions  one stream each of cancel requests and decisions, read by every
                        owning process

On a Redis Cluster (a ``redis.cluster.RedisCluster`` client, or a URL with ``cluster=True``)
every key but ``active:{conv}`` carries the hash tag of its run's bucket after the prefix
(:mod:`rxreact.runs.redis._keys`), and ``running``, ``woken``, ``cancels`` and ``decisions`` are one
per bucket: every script and every ``XREAD`` touches one slot. See ``docs/redis.md``.

The owner writes in the background: ``append`` queues the event, and one flush at a time sends
everything queued so far (every run of the process) as one pipeline, so a chunk costs a share
of one round trip and the run never waits for Redis. Each run's writes in it are one script
that first checks the run's lease (:mod:`rxreact.runs.redis._fence`): once another process
claimed the run, this one's writes to it are refused and its run stopped. Readers in this
process are served from memory; others ``XREAD BLOCK`` through one reader thread per log (per
bucket on a cluster: :mod:`rxreact.runs.redis._hub`). Streams expire ``ttl`` seconds after the
run's last write. A pipeline that fails (Redis restarting, a failover) is sent again,
unchanged, for about 19 s (:data:`rxreact.runs.redis._writes.RETRY_WAITS`; ids make a re-sent
entry that had arrived a refused duplicate), then dropped with a warning: followers elsewhere
miss those events, the run and its local subscribers do not. :meth:`RedisEventLog.flush` waits
for the retries too.

The module is past 300 lines because the log is one class with the protocol's four sides
(owner, takeover, anyone, approvals), each a few lines over a helper module; splitting the
class would scatter one object's state.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from reactivex import Observable, abc
from reactivex.disposable import Disposable

from rxreact._closeable import Closeable
from rxreact._redis import close_redis, connect_redis, import_redis, is_cluster, redis_errors
from rxreact.errors import RunError
from rxreact.events import AgentEvent
from rxreact.runs._decisions import Appliers, Apply
from rxreact.runs._follower import Follower
from rxreact.runs._record import RunRecord
from rxreact.runs._write_queue import Fence
from rxreact.runs.base import RunWriter
from rxreact.runs.memory import InMemoryEventLog
from rxreact.runs.redis._fence import beat, let_go
from rxreact.runs.redis._hub import Hub
from rxreact.runs.redis._keys import Keys
from rxreact.runs.redis._takeover import claim_lost, give_up, record_decision
from rxreact.runs.redis._writes import RedisWriteQueue, RunWriterToRedis
from rxreact.runs.takeover import LostRun

if TYPE_CHECKING:
    import redis
    from redis.cluster import RedisCluster

__all__ = ["RedisEventLog"]

log: logging.Logger = logging.getLogger(__name__)


def _ms(seconds: float | timedelta, name: str) -> int:
    value = seconds.total_seconds() if isinstance(seconds, timedelta) else seconds
    if value <= 0:
        raise ValueError(f"{name} must be positive")
    return max(1, round(value * 1000))


class RedisEventLog(Closeable):
    """Runs' events in Redis Streams: follow, replay and cancel a run from any process.

    Args:
        client_or_url: a ``redis.Redis`` or ``redis.cluster.RedisCluster`` client (left open
            by :meth:`close`) or a URL such as ``redis://localhost:6379/0``. One more
            connection of its pool stays blocked in ``XREAD`` while anything is followed (on a
            cluster, one per bucket read), so keep its ``socket_timeout`` unset or long.
        cluster: the URL names a node of a Redis Cluster: make a ``RedisCluster`` client. A
            cluster client passed in is recognised without it.
        ttl: how long a run's events stay readable after its last write (seconds).
        prefix: the start of every key, to share a database with others.
        lost_after: seconds without a heartbeat from the owning process after which the
            owner counts as gone: :meth:`active_run` forgets the run, and another process may
            resume it (``agent.resume_runs()``).
        takeover_timeout: seconds after that for another process to resume the run before
            its followers get :class:`~rxreact.RunLostError`.
        max_runs: finished runs of this process kept in its memory for local subscribers.
        scheduler: where subscribers receive events when they subscribe without a scheduler.

    Raises:
        ConfigurationError: redis-py is not installed (``pip install 'rxreact[redis]'``).
        RunError: ``cluster=True`` and no node of the cluster could be reached.
    """

    def __init__(
        self,
        client_or_url: redis.Redis | RedisCluster | str,
        *,
        cluster: bool = False,
        ttl: float | timedelta = 3600.0,
        prefix: str = "rxreact:",
        lost_after: float = 30.0,
        takeover_timeout: float = 60.0,
        max_runs: int = 1000,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        self._ttl_ms = _ms(ttl, "ttl")
        self._lost_ms = _ms(lost_after, "lost_after")
        if takeover_timeout < 0:
            raise ValueError("takeover_timeout must not be negative")
        self.lost_after: float = self._lost_ms / 1000
        self.takeover_timeout: float = float(takeover_timeout)
        self.owner: str = uuid.uuid4().hex
        """This log's identity as a runs' owner (one per log object)."""
        module = import_redis("RedisEventLog")
        errors = redis_errors(module)
        try:
            _, self._client, self._owns_client = connect_redis(
                client_or_url, "RedisEventLog", cluster=cluster
            )
        except errors as error:
            raise RunError(f"Redis event log: could not connect: {error}") from error
        self.prefix = prefix
        # A cluster client's own failures (no node reachable, keys in two slots) are
        # RedisClusterException, not RedisError: both are Redis being unavailable here.
        self._error: tuple[type[Exception], ...] = errors
        on_cluster = is_cluster(self._client)
        self._local = InMemoryEventLog(
            max_runs=max_runs, ttl=self._ttl_ms / 1000, scheduler=scheduler
        )
        self._keys = keys = Keys(prefix, cluster=on_cluster)
        self._writes = RedisWriteQueue(
            self._client, self._keys, self._ttl_ms, self._lost_ms, self._error
        )
        self._appliers = Appliers(self._writes.scheduler)
        # The readers' own client object on the same pool (one node); a cluster client as is.
        readers = (
            self._client
            if on_cluster
            else module.Redis(connection_pool=self._client.connection_pool)
        )
        self._hub = Hub(
            readers,
            keys,
            self._cancel_requested,
            self._heartbeat,
            self._lost_ms / 3000,
            self._error,
            self.takeover_timeout,
            self._appliers.decided,
        )
        self._lock = threading.Lock()
        self._owned: dict[str, RunRecord] = {}
        self._fences: dict[str, Fence] = {}  # run id -> this process's lease on it
        self._claimed: dict[str, tuple[Fence, str | None]] = {}  # not resumed yet

    def __repr__(self) -> str:
        return f"RedisEventLog(prefix={self.prefix!r}, ttl={self._ttl_ms / 1000:g})"

    # -- the owner's side -------------------------------------------------------------------

    def begin(
        self, run_id: str, conversation_id: str | None, cancel: Callable[[], None]
    ) -> RunWriter:
        """Register a run of this process: visible to :meth:`active_run` and followers at once.

        Raises:
            RunError: Redis could not be reached.
        """
        record = self._local._record(run_id, conversation_id, cancel)
        try:
            self._hub.ensure_started(run_id)  # cancel requests for it are seen from now on
            pipe = self._client.pipeline(transaction=False)
            pipe.set(self._keys.meta(run_id), "running", px=self._lost_ms)
            lease: dict[str, str | int] = {"owner": self.owner, "token": 1, "state": "running"}
            lease["conversation"] = conversation_id or ""
            pipe.hset(self._keys.owner(run_id), mapping=lease)  # type: ignore[arg-type]
            pipe.pexpire(self._keys.owner(run_id), self._ttl_ms)
            # Due (for a claim) once lost_after passed without a heartbeat.
            due = time.time() + self._lost_ms / 1000
            pipe.zadd(self._keys.running(self._keys.bucket(run_id)), {run_id: due})
            if conversation_id is not None:
                pipe.zadd(self._keys.active(conversation_id), {run_id: time.time()})
                pipe.pexpire(self._keys.active(conversation_id), self._ttl_ms)
            pipe.execute()
        except self._error as error:
            record.end(RunError(f"Redis event log: could not begin run: {error}"))
            raise RunError(f"Redis event log: could not begin run: {error}") from error
        return self._own(record, 1)

    def _own(self, record: RunRecord, token: int) -> RunWriterToRedis:
        run_id = record.run_id
        fence = Fence(run_id, self.owner, token, lambda: self._cancel_requested(run_id))
        with self._lock:
            self._owned[run_id] = record
            self._fences[run_id] = fence
        return RunWriterToRedis(self._writes, record, fence, self._ended)

    # -- taking over lost runs (rxreact.runs.takeover) -----------------------------------------

    def claim_lost(self, limit: int = 100) -> list[LostRun]:
        """Claim up to ``limit`` runs whose owner stopped beating ``lost_after`` seconds ago
        (one Lua script: of several processes claiming at once, each run goes to one)."""
        with self._unavailable("claim lost runs"):
            self._hub.ensure_started()  # the claimed runs' heartbeats go on from here
            claimed = claim_lost(self._client, self._keys, self.owner, self._lost_ms, limit)
        for lost in claimed:  # and their cancel requests and decisions are read
            self._hub.ensure_started(lost.run_id)
            # Beaten until resumed or given up: a resume that waits (its conversation busy)
            # must not see the run claimed again elsewhere lost_after later.
            fence = Fence(lost.run_id, self.owner, lost.token, lambda: None)
            with self._lock:
                self._claimed[lost.run_id] = (fence, lost.conversation_id)
        return claimed

    def resume(self, lost: LostRun, cancel: Callable[[], None]) -> RunWriter:
        """Own a claimed run: its writer continues after ``lost.last_seq``."""
        with self._lock:
            self._claimed.pop(lost.run_id, None)
        record = self._local._record(lost.run_id, lost.conversation_id, cancel)
        record.events.extend(lost.events)
        writer = self._own(record, lost.token)
        writer.resume_at(lost.last_seq, len(lost.checkpoints))
        writer.parked = lost.parked  # Redis still says so: unparked before anything runs
        return writer

    def give_up(self, lost: LostRun, reason: str) -> None:
        """Mark a claimed run lost for good; its followers get ``RunLostError(reason)``."""
        with self._lock:
            self._claimed.pop(lost.run_id, None)
        with self._unavailable("give the run up"):
            give_up(self._client, self._keys, lost, reason, self._ttl_ms)

    @contextmanager
    def _unavailable(self, action: str) -> Iterator[None]:
        """Redis (or a cluster's node) failing inside: a RunError, the original its cause."""
        try:
            yield
        except self._error as error:
            raise RunError(f"Redis event log: could not {action}: {error}") from error

    def _ended(self, record: RunRecord) -> None:
        with self._lock:
            self._owned.pop(record.run_id, None)
            self._fences.pop(record.run_id, None)
        self._appliers.forget(record.run_id)

    def _heartbeat(self, client: Any) -> None:
        """Keep this process's running runs alive, and those it claimed and has not resumed
        yet (called by the reader thread)."""
        with self._lock:
            owned = [(self._fences[r.run_id], r.conversation_id) for r in self._owned.values()]
            owned += self._claimed.values()
        if not owned:
            return
        # Fenced like every write: a run another process took over (this one was paused past
        # lost_after) is stopped here even if it had nothing to write since.
        for fence in beat(client, self._keys, owned, self._ttl_ms, self._lost_ms):
            self._writes.fence_out(fence)
            with self._lock:  # a claimed run taken from this process: no more beats for it
                if self._claimed.get(fence.run_id, (None,))[0] is fence:
                    del self._claimed[fence.run_id]

    def _cancel_requested(self, run_id: str) -> None:
        with self._lock:
            record = self._owned.get(run_id)
        if record is not None and record.cancel is not None:
            # Not on the reader thread: cancelling closes HTTP streams and tells tools.
            cancel = record.cancel

            def action(_: abc.SchedulerBase, __: Any = None) -> None:
                cancel()

            self._writes.scheduler.schedule(action)

    # -- anyone's side ----------------------------------------------------------------------

    def read(self, run_id: str, after: int = 0) -> Observable[AgentEvent]:
        """Replay ``seq > after``, follow live, end as the run ended (see :class:`EventLog`);
        from this process's memory for its own runs, else from Redis."""
        record = self._local._get(run_id)
        if record is not None:
            return record.read(after, self._local.scheduler)
        default = self._local.scheduler

        def subscribe(
            observer: abc.ObserverBase[AgentEvent], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            reader = self._hub.reader(self._keys.bucket(run_id))
            follower = Follower(reader, run_id, max(after, 0), observer, scheduler or default)
            try:
                self._hub.add(follower)
            except self._error as error:
                observer.on_error(RunError(f"Redis event log: could not follow: {error}"))
            return Disposable(follower.dispose)

        return Observable(subscribe)

    def active_run(self, conversation_id: str) -> str | None:
        """The oldest running (or parked) run on ``conversation_id`` in any process, or
        ``None``."""
        key = self._keys.active(conversation_id)
        with self._unavailable("find the active run"):
            members: list[bytes] = cast(list[bytes], self._client.zrange(key, 0, -1))
            run_ids = [r.decode() for r in members]
            if not run_ids:
                return None
            pipe = self._client.pipeline(transaction=False)
            for run_id in run_ids:
                pipe.get(self._keys.meta(run_id))
                pipe.hget(self._keys.owner(run_id), "state")
            replies = pipe.execute()
        dead: list[str] = []
        for run_id, state, lease in zip(run_ids, replies[::2], replies[1::2], strict=True):
            if state == b"running" or (state is None and lease == b"parked"):
                break
            dead.append(run_id)  # ended, or its process stopped beating
        else:
            run_id = ""
        if dead:
            with self._unavailable("find the active run"):
                self._client.zrem(key, *dead)
        return run_id or None

    def request_cancel(self, run_id: str) -> None:
        """Cancel the run, here if this process owns it, else through the owner's reader."""
        with self._lock:
            record = self._owned.get(run_id)
        if record is not None and record.cancel is not None:
            record.cancel()
            return
        cancels = self._keys.cancels(self._keys.bucket(run_id))
        with self._unavailable("request the cancel"):
            self._client.xadd(cancels, {"run": run_id}, maxlen=1000, approximate=True)

    # -- approvals from any process -------------------------------------------------------------

    def decide(self, run_id: str, call_id: str, approved: bool, reason: str | None = None) -> None:
        """Approve or deny a tool call of a run that waits for approval, from any process:
        the first decision is recorded (``HSETNX``) and its owner applies it once.

        Raises:
            ApprovalDecisionError: no such call waits (unknown, decided already, run ended).
            RunError: Redis could not be reached.
        """
        with self._lock:
            owned = run_id in self._owned
        if owned:  # the request may still be on its way to Redis
            self.flush()
        with self._unavailable("record the decision"):
            record_decision(self._client, self._keys, run_id, call_id, approved, reason)

    def watch_decisions(self, run_id: str, apply: Apply) -> None:
        """How this process's run ``run_id`` applies decisions (its handle registers it)."""
        self._hub.ensure_started(run_id)
        self._appliers.watch(run_id, apply)

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until every event appended so far was sent to Redis; False on timeout."""
        return self._writes.wait_sent(timeout)

    def close(self) -> None:
        """Send what is queued (:meth:`flush`), stop the reader thread, and close the client
        if this log made it from a URL.

        Parked runs of this process are let go: a decision on one is applied by whichever
        process resumes it next, without waiting ``lost_after``."""
        self.flush()
        self._hub.close()
        with self._lock:
            owned = [(self._fences[r.run_id], r.conversation_id) for r in self._owned.values()]
        try:
            if owned:
                let_go(self._client, self._keys, owned, self._ttl_ms, self._lost_ms)
        except self._error as error:  # they will count as gone after lost_after instead
            log.warning("Redis event log: could not let parked runs go: %s", error)
        if self._owns_client:
            close_redis(self._client)
