"""Token estimates of messages made of parts (``rxreact.context._token_counter``)."""

from __future__ import annotations

from rxreact import File, Image, Text
from rxreact.context._token_counter import FILE_URL_TOKENS, IMAGE_TOKENS, TokenCounter
from rxreact.messages import ToolMessage, UserMessage


def chars(text: str) -> int:
    return len(text)  # one token a character: the sums below are easy to read


def test_an_image_counts_a_flat_estimate_whatever_its_size() -> None:
    counter = TokenCounter(chars)
    text_only = counter.message(UserMessage(content="What is this?"), 1.0)
    small = Image.from_bytes(b"x" * 10, "image/png")
    large = Image.from_bytes(b"x" * 100_000, "image/png")
    for image in (small, large, Image.from_url("https://x.test/a.png")):
        content = (Text(text="What is this?"), image)
        assert counter.message(UserMessage(content=content), 1.0) == text_only + IMAGE_TOKENS
    result = ToolMessage(tool_call_id="c", content=(small, small))
    assert (
        counter.message(result, 1.0)
        == counter.message(ToolMessage(tool_call_id="c", content=""), 1.0) + 2 * IMAGE_TOKENS
    )


def test_a_file_counts_as_its_bytes_would_as_text_or_flat_by_url() -> None:
    counter = TokenCounter(chars)
    empty = counter.message(UserMessage(content=()), 1.0)
    pdf = File.from_bytes(b"x" * 4_000, "application/pdf")
    assert counter.message(UserMessage(content=(pdf,)), 1.0) == empty + 1_000
    linked = File.from_url("https://x.test/r.pdf")
    assert counter.message(UserMessage(content=(linked,)), 1.0) == empty + FILE_URL_TOKENS


def test_the_estimate_scales_with_the_calibration() -> None:
    counter = TokenCounter(chars)
    image = (Image.from_bytes(b"x", "image/png"),)
    base = counter.message(UserMessage(content=()), 2.0)
    assert counter.message(UserMessage(content=image), 2.0) == base + 2 * IMAGE_TOKENS
