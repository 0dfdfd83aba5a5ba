"""Shared by the fallback tests: named scripted models, replies that are cut."""

from __future__ import annotations

from typing import Any

from rxreact import ScriptedModel, StreamInterruptedError
from rxreact.model.chunks import ChatChunk
from rxreact.model.scripted.replies import Fail, Pause


def named(label: str, script: Any) -> ScriptedModel:
    """A scripted model called ``label`` in events and usage."""
    model = ScriptedModel(script)
    model.label = label  # type: ignore[attr-defined]
    return model


def cut(*chunks: ChatChunk, after: float = 1.0) -> list[Any]:
    """A reply that streams ``chunks`` one virtual second apart, then is cut."""
    items: list[Any] = [ChatChunk(role="assistant")]
    for chunk in chunks:
        items += [Pause(after), chunk]
    return [*items, Pause(after), Fail(StreamInterruptedError("cut"))]
