"""Estimating prompt tokens for :class:`~rxreact.ContextBudget`: a text counter plus a few
tokens per message and a flat estimate per image or file, scaled per conversation by what the
provider reported."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TypeVar

from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    ContentPart,
    File,
    Image,
    Message,
    ToolSpec,
    content_text,
)
from rxreact.messages._labels import byte_size

__all__ = ["FILE_URL_TOKENS", "IMAGE_TOKENS", "TokenCounter", "longest", "remember"]

_V = TypeVar("_V")
_PER_MESSAGE = 4  # role and separators: what the chat format adds around each message
_MIN_RATIO, _MAX_RATIO = 0.25, 4.0  # a calibration outside this is a provider's odd report

IMAGE_TOKENS = 1_000
"""The estimate for one image, whatever its size: the images are not decoded to measure them.
Providers charge by pixels (OpenAI 765 tokens for a 1024x1024 image at high detail, Anthropic
about width x height / 750, at most ~1,600); 1,000 sits in between, and the calibration by
the provider's reported usage corrects it per conversation."""

FILE_URL_TOKENS = 1_000
"""The estimate for a file given by URL (its size is unknown). A file given as bytes counts
as its text would, about 4 bytes a token: more than a compressed PDF costs, which errs on the
side of keeping the request within the budget."""


class TokenCounter:
    """Counts tokens of messages, tools and text.

    Args:
        count_tokens: ``count_tokens(text) -> int``, trusted as is; ``None``: tiktoken when it
            is installed and its encoding loads, else ~4 characters a token, either calibrated
            by :meth:`calibrate`.
    """

    def __init__(self, count_tokens: Callable[[str], int] | None) -> None:
        self._calibrated = count_tokens is None
        self._count = count_tokens or _default_counter()
        self._lock = threading.Lock()
        self._ratios: OrderedDict[str, float] = OrderedDict()

    def ratio(self, key: str) -> float:
        """The calibration of conversation ``key`` (1.0 until the provider reported)."""
        with self._lock:
            return self._ratios.get(key, 1.0)

    def text(self, text: str, ratio: float) -> int:
        """Tokens of ``text``."""
        return _scaled(self._count(text), ratio)

    def message(self, message: Message, ratio: float) -> int:
        """Tokens of one message as sent (content, tool calls, reasoning, the chat format's)."""
        content = message.content or ""
        text = content_text(content)
        if isinstance(message, AssistantMessage):
            text += "".join(c.id + c.name + c.arguments for c in message.tool_calls)
            text += message.reasoning or ""
        media = 0 if isinstance(content, str) else sum(map(_media_tokens, content))
        return _PER_MESSAGE + self.text(text, ratio) + _scaled(media, ratio)

    def tools(self, tools: Sequence[ToolSpec], ratio: float) -> int:
        """Tokens the declared tools take."""
        if not tools:
            return 0
        return self.text(json.dumps([t.model_dump() for t in tools], separators=(",", ":")), ratio)

    def calibrate(self, key: str, request: ChatRequest, prompt_tokens: int | None) -> None:
        """Learn from the provider's ``prompt_tokens`` for ``request`` (default counter only)."""
        if not self._calibrated or not prompt_tokens:
            return
        raw = sum(self.message(m, 1.0) for m in request.messages) + self.tools(request.tools, 1.0)
        if raw > 0:
            ratio = min(_MAX_RATIO, max(_MIN_RATIO, prompt_tokens / raw))
            with self._lock:
                remember(self._ratios, key, ratio)


def longest(length: int, fits: Callable[[int], bool]) -> int:
    """The largest ``n <= length`` with ``fits(n)`` (0 when none does); ``fits`` is monotone."""
    lo, hi = 0, length
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def remember(store: OrderedDict[str, _V], key: str, value: _V) -> None:
    """Keep ``value`` for conversation ``key``, and only the newest 1,024 conversations'."""
    store[key] = value
    store.move_to_end(key)
    while len(store) > 1024:
        store.popitem(last=False)


def _scaled(tokens: int, ratio: float) -> int:
    return -(-int(tokens * ratio * 1000) // 1000)  # ceiling, without float noise


def _media_tokens(part: ContentPart) -> int:
    """The flat estimate of an image or a file (:data:`IMAGE_TOKENS`, :data:`FILE_URL_TOKENS`)."""
    if isinstance(part, Image):
        return IMAGE_TOKENS
    if isinstance(part, File):
        if part.data_base64 is None:
            return FILE_URL_TOKENS
        return (byte_size(part) + 3) // 4
    return 0


def _chars(text: str) -> int:
    return (len(text) + 3) // 4


def _default_counter() -> Callable[[str], int]:
    """tiktoken's ``o200k_base`` when installed and loadable offline, else ~4 characters a token."""
    try:
        import tiktoken  # type: ignore[import-not-found]

        encoding = tiktoken.get_encoding("o200k_base")
    except Exception:  # not installed, or its encoding file cannot be loaded: stay cheap
        return _chars

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return count
