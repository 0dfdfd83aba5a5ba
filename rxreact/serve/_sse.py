"""One event of a streamed response, as every protocol's route writes it: a JSON part and the
``seq`` of the agent event it came from (the SSE ``id`` a client resumes after).

:class:`UIChunk` and :data:`DONE` are the AI SDK UI message stream's
(:mod:`rxreact.serve.ui_stream` exports them); the OpenAI-compatible and AG-UI routes write
their own JSON through the same chunks, so that one pipe (:class:`~rxreact.serve._bridge.ChunkPipe`)
carries every protocol's stream.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["DONE", "UIChunk"]

DONE = "data: [DONE]\n\n"
"""The SSE event that ends a UI message stream."""


@dataclass(frozen=True, slots=True)
class UIChunk:
    """One UI message stream part and the ``seq`` of the agent event it came from."""

    seq: int | None
    """The event's ``seq`` (the SSE ``id``); ``None`` for the closing parts of a failed run."""
    part: dict[str, Any]
    """The part as the AI SDK's ``uiMessageChunkSchema`` describes it (``type`` first)."""

    def to_sse(self) -> str:
        """The part as one SSE event."""
        data = json.dumps(self.part, ensure_ascii=False, separators=(",", ":"))
        return f"data: {data}\n\n" if self.seq is None else f"id: {self.seq}\ndata: {data}\n\n"
