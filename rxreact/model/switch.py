"""The chunk a :class:`~rxreact.FallbackModel` sends when it moves to another model.

A stream of a fallback model is one model's chunks, then, when it moves on, a
:class:`SwitchChunk`, then the next model's. ``restart`` on it says whether chunks of the failed
model reached the subscriber: then they are void (a consumer forgets them, the answer starts
over). The switch rides in ``replay`` as a :class:`~rxreact.messages.ReplayItem` tagged
``"rxreact-switch"``, so a consumer checks for it only on the rare chunks that carry replay
items, and one that does not know it keeps an item no encoder ever sends::

    fallback.stream(r):   -a-b-S-a'-b'-c'-|       S: the switch (restart: a, b are void)
"""

from __future__ import annotations

from typing import NamedTuple

from rxreact.messages import ReplayItem
from rxreact.model.chunks import ChatChunk

__all__ = ["SWITCH_TAG", "ModelSwitch", "SwitchChunk", "switch_chunk"]

SWITCH_TAG = "rxreact-switch"
"""The ``provider`` of a switch's replay item: no wire format's, so never sent to a model."""


class ModelSwitch(NamedTuple):
    """A move from one model to the next."""

    from_model: str
    to_model: str
    reason: str
    """Why (the failure, ``circuit open``, ``hedge``)."""
    restart: bool
    """Whether chunks of ``from_model`` reached the subscriber (they are void now)."""
    usage: object = None
    """Usage the failed attempt reported (a :class:`~rxreact.messages.Usage`), if any."""


class SwitchChunk(ChatChunk):
    """A :class:`~rxreact.model.chunks.ChatChunk` that carries a :class:`ModelSwitch` (as
    ``switch``) and nothing else a consumer of plain chunks would act on."""

    switch: ModelSwitch


def switch_chunk(switch: ModelSwitch) -> SwitchChunk:
    """The chunk that announces ``switch``."""
    item = ReplayItem(provider=SWITCH_TAG, data={"from": switch.from_model, "to": switch.to_model})
    chunk = SwitchChunk(replay=(item,))
    chunk.switch = switch
    return chunk
