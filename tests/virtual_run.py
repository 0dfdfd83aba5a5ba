"""A run in virtual time, recorded: its events with their (virtual) times and its end."""

from __future__ import annotations

from typing import Any

from reactivex.testing import TestScheduler

from rxreact import ReactAgent


class Recorder:
    """Collects (virtual time, event) pairs and the terminal notification."""

    def __init__(self, scheduler: TestScheduler) -> None:
        self.scheduler = scheduler
        self.items: list[tuple[float, Any]] = []
        self.error: Exception | None = None
        self.completed = False

    def on_next(self, value: Any) -> None:
        self.items.append((self.scheduler.clock, value))

    def on_error(self, error: Exception) -> None:
        self.error = error

    def on_completed(self) -> None:
        self.completed = True

    @property
    def events(self) -> list[Any]:
        return [e for _, e in self.items]

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of_type(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]


def run_virtual(agent: ReactAgent, question: str = "q", **kw: Any) -> Recorder:
    scheduler = agent.scheduler
    assert isinstance(scheduler, TestScheduler)
    recorder = Recorder(scheduler)
    agent.stream(question, **kw).subscribe(
        recorder.on_next, recorder.on_error, recorder.on_completed
    )
    scheduler.start()
    return recorder
