"""Values told in a reason: short, quoted, one line."""

from __future__ import annotations

from typing import Any

__all__ = ["shown"]


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (``...`` marks the cut)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
