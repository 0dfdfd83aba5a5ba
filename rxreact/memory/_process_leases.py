"""Leases for a memory written before leases existed: kept in this process, beside it."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

from rxreact.memory.base import ChatMemory
from rxreact.memory.lease import Lease, LeaseTable, LockedLeases
from rxreact.messages import Message

__all__ = ["leasing"]

_LEASE_METHODS = ("try_acquire", "renew", "release")
_adapters: weakref.WeakKeyDictionary[Any, _ProcessLeases] = weakref.WeakKeyDictionary()
_pinned: dict[int, tuple[Any, _ProcessLeases]] = {}  # memories that cannot be weakly referenced
_adapters_lock = threading.Lock()


def leasing(memory: Any) -> ChatMemory:
    """``memory`` itself when it grants leases, else one shared in-process adapter for it.

    The adapter keeps runs apart within this process only (another process sharing the store
    is not seen), and its fenced ``append`` is atomic only against other fenced appends made
    through it: the best a backend with only ``load`` and ``append`` allows.
    """
    if all(callable(getattr(memory, name, None)) for name in _LEASE_METHODS):
        return memory  # type: ignore[no-any-return]
    with _adapters_lock:
        try:
            adapter = _adapters.get(memory)
            if adapter is None:
                adapter = _adapters[memory] = _ProcessLeases(memory)
        except TypeError:  # not weakly referenceable: keep it for the process's life
            adapter = _pinned.setdefault(id(memory), (memory, _ProcessLeases(memory)))[1]
        return adapter


class _ProcessLeases(LockedLeases):
    """A :class:`~rxreact.memory.ChatMemory` over ``load``/``append`` with a :class:`LeaseTable`."""

    def __init__(self, memory: Any) -> None:
        self._memory = memory
        self._lock = threading.Lock()
        self._leases = LeaseTable()

    def load(self, conversation_id: str) -> list[Message]:
        result: list[Message] = self._memory.load(conversation_id)
        return result

    def append(
        self, conversation_id: str, messages: Sequence[Message], *, lease: Lease | None = None
    ) -> None:
        with self._lock:
            self._fence(lease)
            self._memory.append(conversation_id, messages)
