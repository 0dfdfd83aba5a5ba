"""Tests of rxreact.tools.results: what the model reads for each kind of return value."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import pytest
from pydantic import BaseModel

from rxreact.messages import File, Image, Text
from rxreact.tools.results import ToolResultError, result_content, result_text, truncate_result


class Weather(BaseModel):
    city: str
    celsius: float


@dataclasses.dataclass
class Point:
    x: int
    y: int


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("sunny, 21 °C", "sunny, 21 °C"),
        ("", ""),
        (None, "null"),
        (Weather(city="Oslo", celsius=3.5), '{"city":"Oslo","celsius":3.5}'),
        ({"a": [1, 2], "b": "é"}, '{"a":[1,2],"b":"é"}'),
        ([1, "x", None], '[1,"x",null]'),
        ((1, 2), "[1,2]"),
        (42, "42"),
        (True, "true"),
        (Point(1, 2), '{"x":1,"y":2}'),
        (datetime.date(2026, 11, 30), '"2026-11-30"'),
        ("é".encode(), "é"),
        (bytearray(b"raw"), "raw"),
    ],
    ids=lambda v: type(v).__name__,
)
def test_conversion_rules(value: Any, text: str) -> None:
    assert result_text(value) == text


def test_bytes_that_are_not_utf8_are_an_error() -> None:
    with pytest.raises(ToolResultError, match="not UTF-8"):
        result_text(b"\xff\xfe")


def test_a_generator_is_an_error_and_is_closed() -> None:
    ran: list[str] = []

    def numbers() -> Any:
        try:
            yield 1
        finally:
            ran.append("closed")

    generator = numbers()
    next(generator)
    with pytest.raises(ToolResultError, match="generator"):
        result_text(generator)
    assert ran == ["closed"]


def test_values_json_cannot_express_are_an_error() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ToolResultError, match="list"):
        result_text(loop)
    with pytest.raises(ToolResultError, match="object"):
        result_text(object())


def test_long_results_are_cut_with_a_visible_marker() -> None:
    text = truncate_result("x" * 50, 10)
    assert text.startswith("x" * 10 + "\n[truncated: the result was 50 characters")
    assert truncate_result("short", 10) == "short"
    assert truncate_result("x" * 50, None) == "x" * 50
    assert result_text("y" * 30, 5).startswith("yyyyy\n[truncated")


PNG = Image.from_bytes(b"\x89PNG1", "image/png")


def test_an_image_or_a_list_holding_parts_is_parts() -> None:
    assert result_content(PNG) == (PNG,)
    pdf = File.from_bytes(b"%PDF", "application/pdf")
    assert result_content(["a map:", PNG, Text(text="and a report"), pdf]) == (
        Text(text="a map:"),
        PNG,
        Text(text="and a report"),
        pdf,
    )


def test_lists_without_part_objects_keep_the_other_rules() -> None:
    assert result_content(["a", "b"]) == '["a","b"]'  # JSON, as before parts existed
    assert result_content("text") == "text"
    assert result_content([Text(text="a"), "b"]) == "a\nb"  # parts, but text only: a string
    assert result_content(Text(text="alone")) == "alone"
    with pytest.raises(ToolResultError, match="a list mixing parts with a int"):
        result_content([PNG, 3])


def test_text_parts_share_the_limit_and_images_are_kept() -> None:
    parts = result_content(["0123456789", PNG, "abcdefghij", "dropped", PNG], max_chars=15)
    assert parts == (
        Text(text="0123456789"),
        PNG,
        Text(text=truncate_result("abcdefghij", 5)),
        PNG,
    )
    assert "[truncated: the result was 10 characters; the first 5 are shown]" in parts[2].text  # type: ignore[union-attr]
    whole = ["0123456789", PNG]
    assert result_content(whole, max_chars=None) == (Text(text="0123456789"), PNG)
