"""What the web server needs from hot runs: start one, follow one from any process, cancel one,
and draw one.

Runs started by this process are kept (until they end) so a resume or a cancel here uses the
run object; a run another process owns is followed through the event log and cancelled with
``event_log.request_cancel``, so any worker can serve any conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import OrderedDict
from typing import Any

from reactivex import Observable
from reactivex import operators as ops

from rxreact.agent.react_agent import ReactAgent
from rxreact.errors import (
    ApprovalDecisionError,
    ConversationBusyError,
    RunCancelledError,
    TooManyRunsError,
)
from rxreact.events import AgentEvent
from rxreact.marbles import Recorder, Recording
from rxreact.messages._labels import Question
from rxreact.runs import AgentRun, follow
from rxreact.serve._deps import RequestDeps, served_deps

__all__ = ["RunRegistry"]

_log = logging.getLogger("rxreact.serve")


class RunRegistry:
    """The hot runs of one server process, over the agent's event log.

    Args:
        agent: the ``ReactAgent`` whose ``start()`` makes the runs and whose ``event_log``
            keeps them (shared by every worker with Redis).
        keep_recordings: how many finished runs' marble recordings this process keeps.
    """

    def __init__(
        self,
        agent: ReactAgent[Any],
        *,
        keep_recordings: int = 256,
        max_runs_per_user: int = 0,
        deps_factory: RequestDeps | None = None,
    ) -> None:
        self.agent = agent
        self.deps_factory = deps_factory
        self.event_log = agent.event_log
        self._keep = keep_recordings
        self._max_per_user = max_runs_per_user
        self._lock = threading.Lock()
        self._runs: dict[str, AgentRun] = {}
        self._recordings: OrderedDict[str, Recorder] = OrderedDict()
        self._in_flight: dict[str, int] = {}  # user -> runs of theirs this process runs

    def start(
        self,
        question: Question,
        conversation_id: str | None,
        user: str = "",
        agent: ReactAgent[Any] | None = None,
    ) -> AgentRun:
        """Start a run for ``user`` (on ``agent``, default the registry's).

        Raises ``ConversationBusyError`` when the agent rejects a busy conversation, and
        ``TooManyRunsError`` when ``user`` already has ``max_runs_per_user`` runs in flight
        in this process. With a ``deps_factory`` the run gets the deps it makes for the
        request being served and ``user``.
        """
        with self._lock:
            running = self._in_flight.get(user, 0)
            if self._max_per_user and running >= self._max_per_user:
                raise TooManyRunsError(
                    f"{running} runs are in flight for this user (at most {self._max_per_user})"
                )
            self._in_flight[user] = running + 1
        try:
            factory = self.deps_factory
            deps = served_deps(factory, user) if factory is not None else None
            run = (agent or self.agent)._start(question, conversation_id, None, None, deps, user)
        except BaseException:
            self._release(user)
            raise
        recorder = Recorder()
        with self._lock:
            self._runs[run.id] = run
            self._recordings[run.id] = recorder
            while len(self._recordings) > self._keep:
                self._recordings.popitem(last=False)

        def forget() -> None:
            with self._lock:
                self._runs.pop(run.id, None)
            self._release(user)

        def failed(error: Exception) -> None:
            # Clients get the error's class and a text without endpoints (_client_errors): the
            # whole of it is for the operator, here.
            if not isinstance(error, RunCancelledError | ConversationBusyError):  # no failure
                _log.warning("run %s failed: %s: %s", run.id, type(error).__name__, error)

        # the recorder first: a marble request that sees the run gone finds it recorded
        run.events().pipe(ops.do_action(on_error=failed), ops.finally_action(forget)).subscribe(
            recorder
        )
        return run

    def _release(self, user: str) -> None:
        with self._lock:
            left = self._in_flight.get(user, 0) - 1
            if left > 0:
                self._in_flight[user] = left
            else:
                self._in_flight.pop(user, None)

    def events(self, run_id: str) -> Observable[AgentEvent]:
        """The run's events from its first: the local run, else followed through the log."""
        with self._lock:
            run = self._runs.get(run_id)
        return run.events() if run is not None else follow(run_id, self.event_log)

    def active_run(self, conversation_id: str) -> str | None:
        """The run in progress on the conversation, in any process (blocking: may ask Redis)."""
        return self.event_log.active_run(conversation_id)

    def cancel(self, run_id: str) -> None:
        """Cancel the run, here or in the process that owns it."""
        with self._lock:
            run = self._runs.get(run_id)
        if run is not None:
            run.cancel()
        else:
            self.event_log.request_cancel(run_id)

    def decide(self, run_id: str, call_id: str, approved: bool, reason: str | None) -> bool:
        """Answer a tool call that waits for approval, of a run started here or, with a
        durable event log, in another worker; False when no such call waits (unknown,
        decided already, or the run ended)."""
        with self._lock:
            run = self._runs.get(run_id)
        if run is not None:
            return run.approve(call_id) if approved else run.deny(call_id, reason)
        decide = getattr(self.event_log, "decide", None)
        if decide is None:
            return False
        try:
            decide(run_id, call_id, approved, reason)
        except ApprovalDecisionError:
            return False
        return True

    async def recording(self, run_id: str, timeout: float) -> Recording | None:
        """The run's marble recording, once it ended (``None`` if it did not within ``timeout``).

        A run this process did not start is recorded by following it through the log: its
        replayed part has no real timing (it arrives at once), the live rest has.
        """
        with self._lock:
            recorder = self._recordings.get(run_id)
        if recorder is None:
            recorder = Recorder()
            subscription = self.events(run_id).subscribe(recorder)
        else:
            subscription = None
        try:
            finished = await _ended(recorder, timeout)
        finally:
            if subscription is not None:
                subscription.dispose()
        if not finished:
            return None
        return recorder.recording


async def _ended(recorder: Recorder, timeout: float) -> bool:
    """Whether the recorded run ended within ``timeout``: awaited on a future the recorder's
    end sets, so a hundred waiting diagrams hold no thread (and none of the loop's default
    executor, which every other ``to_thread`` of the process shares)."""
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()

    def resolve() -> None:
        if not ended.done():
            ended.set_result(None)

    def on_end() -> None:  # on the thread that ended the run
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(resolve)

    watch = recorder.when_done(on_end)
    try:
        await asyncio.wait_for(ended, timeout)
    except TimeoutError:
        return False
    finally:
        watch.dispose()
    return True
