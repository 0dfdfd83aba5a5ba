"""Questions made of parts (``check_question``), and content told in words (``_labels``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rxreact import File, Image, InvalidArgumentError, Text
from rxreact._validate import check_question
from rxreact.messages._labels import content_label, part_label

PNG = Image.from_bytes(b"\x89PNG\r\n\x1a\n1234", "image/png")


def test_a_string_is_the_content_itself() -> None:
    assert check_question("Hi?") == "Hi?"


def test_a_sequence_becomes_parts_and_its_strings_text_parts() -> None:
    pdf = File.from_bytes(b"%PDF-1.4", "application/pdf", name="a.pdf")
    assert check_question(["What is this?", PNG, Text(text="and this"), pdf]) == (
        Text(text="What is this?"),
        PNG,
        Text(text="and this"),
        pdf,
    )
    assert check_question(("x",)) == (Text(text="x"),)
    assert check_question(PNG) == (PNG,)  # one part alone


@pytest.mark.parametrize(
    ("question", "message"),
    [
        ([], r"^question is an empty sequence"),
        (b"bytes", r"^question must be a str or a sequence of str, Text, Image and File, got b'"),
        (42, r"^question must be a str or a sequence .*got 42 \(int\)$"),
        (["a", 3], r"^question\[1\] must be a str, Text, Image or File, got 3 \(int\)$"),
        (["a", {"type": "image"}], r"^question\[1\] must be .*\(dict\)$"),
        (
            ["a", Path("cat.png")],
            r"^question\[1\] must be .*: read a file with Image.from_path or File.from_path$",
        ),
    ],
)
def test_anything_else_is_refused_by_name(question: object, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        check_question(question)


def test_labels_say_what_a_part_is_without_its_bytes() -> None:
    assert part_label(Text(text="hi")) == "hi"
    assert part_label(PNG) == "[image: image/png, 12 bytes]"
    assert part_label(Image.from_url("https://x.test/cat.png")) == "[image: https://x.test/cat.png]"
    assert part_label(Image(url="data:image/png;base64,AAAA")) == "[image: data:image/png;base64]"
    pdf = File.from_bytes(b"%PDF-1.4 five", "application/pdf", name="r.pdf")
    assert part_label(pdf) == "[file r.pdf: application/pdf, 13 bytes]"
    assert part_label(File.from_url("https://x.test/r.pdf")) == "[file: https://x.test/r.pdf]"
    for size in range(1, 8):  # every padding of the base64
        part = Image.from_bytes(b"x" * size, "image/gif")
        assert part_label(part) == f"[image: image/gif, {size} bytes]"


def test_content_label() -> None:
    content = (Text(text="a map:"), PNG)
    assert content_label(content) == "a map:\n[image: image/png, 12 bytes]"
    assert content_label("plain") == "plain"
