"""Tests of rxreact.model.http.surrogates, and of lone surrogates in a stream (issue 11)."""

from __future__ import annotations

import pytest

from rxreact.model.chunks import ChatChunk
from rxreact.model.http.surrogates import SurrogateChunk, SurrogatePairing, join_surrogates
from rxreact.model.openai.wire import parse_chunk


def delta(text: str) -> str:
    # json.dumps writes a lone surrogate as the escape a provider sends.
    import json

    return json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]})


def test_a_chunk_with_a_lone_surrogate_escape_is_read_and_marked() -> None:
    chunk = parse_chunk(delta("hi \ud83d"))
    assert type(chunk) is SurrogateChunk
    assert chunk.text == "hi \ud83d"


def test_a_pair_split_across_two_deltas_is_joined() -> None:
    pairing = SurrogatePairing()
    first = pairing.pair(parse_chunk(delta("smile \ud83d")))  # type: ignore[arg-type]
    second = pairing.pair(parse_chunk(delta("\ude00!")))  # type: ignore[arg-type]
    assert (first.text, second.text) == ("smile ", "\U0001f600!")
    assert pairing.flush() is None


def test_lone_surrogates_that_never_pair_become_replacement_characters() -> None:
    pairing = SurrogatePairing()
    assert pairing.pair(ChatChunk(text="a\ude00b\ud83d")).text == "a\ufffdb"
    assert pairing.pair(ChatChunk(text="c")).text == "\ufffdc"
    assert pairing.pair(ChatChunk(text="\ud83d")).text is None
    assert pairing.flush() == ChatChunk(text="\ufffd")


@pytest.mark.parametrize(
    ("text", "clean"),
    [("plain", "plain"), ("\ud83d\ude00", "\U0001f600"), ("x\ud83dy", "x\ufffdy")],
)
def test_join_surrogates(text: str, clean: str) -> None:
    assert join_surrogates(text) == clean
    clean.encode("utf-8")  # always encodable
