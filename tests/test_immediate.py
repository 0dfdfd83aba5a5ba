"""``immediately`` and ``starting_with`` (``rxreact.rx._immediate``): values during subscribe,
on the subscribing thread, in order."""

from __future__ import annotations

import threading
from typing import Any

from rxreact.rx._fused import subscribe_fused
from rxreact.rx._immediate import immediately, starting_with


def test_immediately_emits_its_values_and_completes_during_subscribe() -> None:
    seen: list[Any] = []
    threads: set[int] = set()

    def on_next(value: Any) -> None:
        threads.add(threading.get_ident())
        seen.append(value)

    immediately("a", "b").subscribe(on_next, seen.append, lambda: seen.append("|"))
    assert seen == ["a", "b", "|"]
    assert threads == {threading.get_ident()}


def test_immediately_sends_an_exception_the_observer_raises_to_on_error() -> None:
    seen: list[Any] = []

    def on_next(value: Any) -> None:
        seen.append(value)
        if value == "a":
            raise ValueError("boom")

    for subscribe in (
        lambda: immediately("a", "b").subscribe(on_next, seen.append, lambda: seen.append("|")),
        lambda: subscribe_fused(
            immediately("a", "b"), on_next, seen.append, lambda: seen.append("|")
        ),
    ):
        seen.clear()
        subscribe()
        assert seen[0] == "a"
        assert isinstance(seen[1], ValueError) and len(seen) == 2  # no "b", no completion


def test_immediately_with_no_values_completes() -> None:
    seen: list[Any] = []
    subscribe_fused(immediately(), seen.append, seen.append, lambda: seen.append("|"))
    assert seen == ["|"]


def test_starting_with_emits_its_values_before_the_source() -> None:
    seen: list[Any] = []
    starting_with(immediately("x"), "a", "b").subscribe(
        seen.append, seen.append, lambda: seen.append("|")
    )
    assert seen == ["a", "b", "x", "|"]
