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

rxreact runs both on its in-memory, SQLite, Redis and Postgres stores in ``make test``
(``tests/test_conformance.py``); the kill tests with real processes (SIGKILL mid-answer,
mid-tool, while parked) are in ``tests/test_takeover.py`` and ``tests/test_parking.py``.

Your store, in your own tests (``pytest`` is the only requirement)::

    # tests/test_my_store.py
    import pytest
    from rxreact.testing.conformance import ChatMemoryConformance, EventLogConformance

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

Then ``pytest tests/test_my_store.py``: every inherited test runs against your store.
"""

from rxreact.testing.conformance._event_log import EventLogConformance, MakeLog
from rxreact.testing.conformance._memory import ChatMemoryConformance, MakeMemory

__all__ = ["ChatMemoryConformance", "EventLogConformance", "MakeLog", "MakeMemory"]
