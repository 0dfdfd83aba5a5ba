"""The writes queue both durable logs share: a run the store refuses is fenced out once, its
later writes never reach the store, its checkpoints are told they were not written, and the
other runs of the same batches are written as usual. The store here is a list."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from rxreact.events import TextDelta
from rxreact.runs._write_queue import Fence, Item, Sent, WriteQueue


class ListStore(WriteQueue):
    """Keeps what it is sent; refuses the runs named in ``taken`` (another owner)."""

    def __init__(self) -> None:
        super().__init__(OSError, "test-write-queue")
        self.taken: set[str] = set()
        self.sent: list[list[Item]] = []

    def _send(self, batch: list[Item]) -> Sent:
        self.sent.append(batch)
        return Sent([item[1] for item in batch if item[1].run_id in self.taken], [])


def event(seq: int) -> TextDelta:
    return TextDelta(round=1, delta=f"w{seq}", seq=seq)


def test_a_refused_run_is_stopped_once_and_its_later_writes_never_sent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = ListStore()
    stopped: list[str] = []
    lost = Fence("lost", "me", 1, lambda: stopped.append("lost"))
    kept = Fence("kept", "me", 1, lambda: stopped.append("kept"))
    outcomes: dict[str, list[bool]] = {"lost": [], "kept": []}
    store.taken.add("lost")
    for fence in (lost, kept):
        store.put(("e", fence, event(1)))
        store.put(("ckpt", fence, b"c", 0, 1), outcomes[fence.run_id].append)
    with caplog.at_level(logging.WARNING):
        assert store.wait_sent(10)
        for fence in (lost, kept):  # the next batch: the refused run's writes stay here
            store.put(("e", fence, event(2)))
            store.put(("ckpt", fence, b"c", 1, 2), outcomes[fence.run_id].append)
        assert store.wait_sent(10)
    assert stopped == ["lost"]
    assert lost.fenced and not kept.fenced
    assert outcomes == {"lost": [False, False], "kept": [True, True]}
    later: list[Any] = [item[1].run_id for batch in store.sent[1:] for item in batch]
    assert "lost" not in later and "kept" in later
    assert sum("has another owner now" in r.getMessage() for r in caplog.records) == 1


def test_fencing_out_twice_stops_the_run_once() -> None:
    store = ListStore()
    stopped: list[int] = []
    fence = Fence("r", "me", 1, lambda: stopped.append(1))
    store.fence_out(fence)  # say, the flush...
    store.fence_out(fence)  # ...and the heartbeat, both finding the run taken
    assert stopped == [1]
