"""One conformance suite for every store of rxreact's durable pieces: run it with pytest on
yours.

Two classes of tests, each for one contract, each needing one fixture from you:

- :class:`ChatMemoryConformance` (``make_memory``): histories, whole turns, trimming,
  concurrency (turns never interleave, readers never see half a turn, concurrent runs on one
  conversation never start from a stale history), leases with fencing
  tokens (one per conversation, expired and handed-over holders refused in the same atomic
  step as the write), odd ids.
- :class:`EventLogConformance` (``make_log``): following a run from another log object (as
  another process would) from any point, errors crossing with their type, unknown runs,
  ``active_run`` and ``request_cancel`` from elsewhere, retention, decisions from another log
  applied once, a lost run taken over by exactly one of several claimants and going on with
  its ``seq``; with the optional fixtures ``corrupt_entry`` and ``outage``, corrupt rows (a
  clear error, never a hang) and the store going away and coming back (nothing torn).

- :class:`EventLogProcessConformance` (``log_place``: ``("module:callable", place)``, how a
  new process opens a log on your store): an owner killed with SIGKILL inside a tool that
  must never run twice, and one killed while its run is parked on an approval that another
  process then decides; another process finishes each run.

rxreact runs them on its in-memory, SQLite, Redis and Postgres stores in ``make test``
(``tests/test_memory_contract.py``, ``tests/test_event_log_conformance.py``); more kill tests
(mid-answer, racing claimants, conversation leases) are in ``tests/test_takeover.py``.

Your store, in your own tests (``pytest`` is the only requirement)::

    # tests/test_my_store.py
    import pytest
    from rxreact.testing.conformance import (
        ChatMemoryConformance,
        EventLogConformance,
        EventLogProcessConformance,
    )

    class TestMyMemory(ChatMemoryConformance):
        @pytest.fixture
        def make_memory(self, tmp_path):
            made = []

            def make(**options):  # a new, empty memory each call
                made.append(MyMemory(tmp_path / f"m{len(made)}", **options))
                return made[-1]

            yield make
            for memory in made:
                memory.close()

    class TestMyLog(EventLogConformance):
        @pytest.fixture
        def make_log(self, tmp_path):
            made = []

            def make(**options):  # a new log object on the same store each call
                made.append(MyEventLog(tmp_path / "runs", **options))
                return made[-1]

            yield make
            for log in made:
                log.close()

    class TestMyLogAcrossProcesses(EventLogProcessConformance):
        @pytest.fixture
        def log_place(self, tmp_path):
            return "my_package.logs:MyEventLog", str(tmp_path / "runs")

Then ``pytest tests/test_my_store.py``: every inherited test runs against your store.
"""

from rxreact.testing.conformance._event_log import EventLogConformance, MakeLog
from rxreact.testing.conformance._memory import ChatMemoryConformance, MakeMemory
from rxreact.testing.conformance._processes import EventLogProcessConformance

__all__ = [
    "ChatMemoryConformance",
    "EventLogConformance",
    "EventLogProcessConformance",
    "MakeLog",
    "MakeMemory",
]
