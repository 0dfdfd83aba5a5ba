"""What a message is made of when it is not only text: :class:`Text`, :class:`Image`, :class:`File`.

Bytes are kept as base64 (JSON-safe, and what every API wants), so a part is stored and sent
as it is, without encoding it again.
"""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path
from typing import Annotated, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rxreact.errors import InvalidArgumentError

__all__ = ["MAX_PART_BYTES", "ContentPart", "File", "Image", "Text", "content_text"]


class _Model(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True, extra="forbid")


MAX_PART_BYTES = 20 * 1024 * 1024
"""The largest image or file carried inline (20 MiB of bytes before base64): larger ones are
refused when the part is made, with :class:`~rxreact.errors.InvalidArgumentError`. Each model
adapter may refuse smaller ones its API does not take (Anthropic: 5 MB per image)."""


class Text(_Model):
    """A piece of text in a message made of parts."""

    type: Literal["text"] = "text"
    text: str


class _Media(_Model):
    """An image or a file: a URL, or bytes kept as base64 (JSON-safe, as every API wants them)."""

    url: str | None = None
    """Where the provider fetches it (``https://...``, or a ``data:`` URL)."""
    data_base64: str | None = None
    """The bytes, base64-encoded; use :attr:`data` for the bytes themselves."""
    media_type: str | None = None
    """``image/png``, ``application/pdf``...; required with bytes."""

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.url is None) == (self.data_base64 is None):
            raise ValueError(f"{type(self).__name__} needs exactly one of url or data")
        if self.data_base64 is not None and not self.media_type:
            raise ValueError(f"{type(self).__name__} with data needs a media_type")
        return self

    @property
    def data(self) -> bytes | None:
        """The bytes (decoded from :attr:`data_base64`), ``None`` for a URL part."""
        return None if self.data_base64 is None else base64.b64decode(self.data_base64)

    @classmethod
    def _encoded(cls, data: bytes, what: str) -> str:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidArgumentError(f"{what} must be bytes, got {type(data).__name__}")
        if len(data) > MAX_PART_BYTES:
            raise InvalidArgumentError(
                f"{what} is {len(data):,} bytes; the most rxreact carries inline is "
                f"{MAX_PART_BYTES:,} (MAX_PART_BYTES): pass a URL instead"
            )
        return base64.b64encode(bytes(data)).decode("ascii")

    @classmethod
    def _read(cls, path: str | Path) -> tuple[bytes, str | None, str]:
        file = Path(path)
        try:
            size = file.stat().st_size
            if size > MAX_PART_BYTES:
                raise InvalidArgumentError(
                    f"{file} is {size:,} bytes; the most rxreact carries inline is "
                    f"{MAX_PART_BYTES:,} (MAX_PART_BYTES): pass a URL instead"
                )
            data = file.read_bytes()
        except OSError as exc:
            raise InvalidArgumentError(f"cannot read {file}: {exc.strerror or exc}") from exc
        return data, mimetypes.guess_type(file.name)[0], file.name


class Image(_Media):
    """An image in a user message or a tool result: ``Image.from_path("cat.png")``."""

    type: Literal["image"] = "image"

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str) -> Image:
        """An image from its bytes (``media_type``: ``image/png``, ``image/jpeg``...)."""
        return cls(data_base64=cls._encoded(data, "image data"), media_type=media_type)

    @classmethod
    def from_url(cls, url: str) -> Image:
        """An image the provider fetches itself."""
        return cls(url=url)

    @classmethod
    def from_path(cls, path: str | Path) -> Image:
        """An image read from a file; the media type is guessed from its name."""
        data, media_type, name = cls._read(path)
        if media_type is None or not media_type.startswith("image/"):
            raise InvalidArgumentError(f"{name} does not look like an image ({media_type})")
        return cls.from_bytes(data, media_type)


class File(_Media):
    """A document (a PDF, a text file...) in a user message: ``File.from_path("report.pdf")``."""

    type: Literal["file"] = "file"
    name: str | None = None
    """The file name shown to the model, where the API takes one."""

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str, name: str | None = None) -> File:
        """A file from its bytes."""
        return cls(data_base64=cls._encoded(data, "file data"), media_type=media_type, name=name)

    @classmethod
    def from_url(cls, url: str, name: str | None = None) -> File:
        """A file the provider fetches itself."""
        return cls(url=url, name=name)

    @classmethod
    def from_path(cls, path: str | Path) -> File:
        """A file read from disk; the media type is guessed from its name (else octet-stream)."""
        data, media_type, name = cls._read(path)
        return cls.from_bytes(data, media_type or "application/octet-stream", name)


ContentPart = Annotated[Text | Image | File, Field(discriminator="type")]
"""One part of a message made of parts."""


def content_text(content: str | tuple[ContentPart, ...]) -> str:
    """The text of a message's content: the string, or its text parts joined by newlines."""
    if isinstance(content, str):
        return content
    return "\n".join(part.text for part in content if isinstance(part, Text))
