"""``Closeable``: ``with thing:`` closes the thing at the end of the block."""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["Closeable"]


class Closeable:
    """A base for objects that hold connections: ``__exit__`` calls :meth:`close`."""

    def close(self) -> None:
        """Release what the object holds (idempotent)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
