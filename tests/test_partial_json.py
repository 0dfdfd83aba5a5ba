"""PartialJSON: for any JSON value and any split of its text into pieces, the snapshots only
grow and the last equals ``json.loads``; the pieces are read once (incrementally)."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxreact.checks.partial_json import PartialJSON

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=25,
)


def grows(before: Any, after: Any) -> bool:
    """``after`` is ``before`` with more at its end (the order values only grow in)."""
    if type(before) is not type(after):
        return False
    if isinstance(before, dict):
        return all(k in after and grows(v, after[k]) for k, v in before.items())
    if isinstance(before, list):
        return len(before) <= len(after) and all(map(grows, before, after))
    if isinstance(before, str):
        return after.startswith(before)
    if isinstance(before, float) and math.isnan(before):
        return math.isnan(after)
    return bool(before == after)


def cut(text: str, cuts: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def read(pieces: list[str]) -> list[Any]:
    parser = PartialJSON()
    snapshots = []
    for piece in pieces:
        parser.feed(piece)
        if parser.changed:
            snapshots.append(parser.snapshot())
    parser.close()
    snapshots.append(parser.snapshot())
    return snapshots


@given(
    values,
    st.lists(st.integers(min_value=0), max_size=40),
    st.booleans(),
    st.sampled_from([None, 0, 2]),
)
def test_snapshots_only_grow_and_the_last_is_json_loads(
    value: Any, cuts: list[int], ascii_only: bool, indent: int | None
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    snapshots = read(cut(text, cuts))
    assert snapshots[-1] == json.loads(text)
    for before, after in itertools.pairwise(snapshots):
        assert grows(before, after), (before, after)


@given(st.dictionaries(st.text(), values, min_size=1, max_size=4), st.lists(st.integers(0)))
def test_one_character_at_a_time_too(value: dict[str, Any], cuts: list[int]) -> None:
    text = json.dumps(value)
    snapshots = read(list(text))
    assert snapshots[-1] == value
    assert all(map(grows, snapshots, snapshots[1:]))


def test_what_each_piece_shows() -> None:
    parser = PartialJSON()
    shown = []
    for piece in ['{"city": "Pa', 'ris", "temp', '": 21', ', "tags": [', '"wet"]}']:
        parser.feed(piece)
        shown.append(parser.snapshot() if parser.changed else "unchanged")
    assert shown == [
        {"city": "Pa"},
        {"city": "Paris"},
        "unchanged",  # a number shows once it is complete
        {"city": "Paris", "temp": 21, "tags": []},
        {"city": "Paris", "temp": 21, "tags": ["wet"]},
    ]
    assert parser.done


def test_a_surrogate_pair_split_across_pieces_shows_once_whole() -> None:
    parser = PartialJSON()
    parser.feed('["a\\ud83d')
    assert parser.snapshot() == ["a"]
    parser.feed("\\ude00b")
    assert parser.snapshot() == ["a\U0001f600b"]


def test_prose_and_a_fence_around_the_value_are_skipped() -> None:
    text = 'Here it is:\n```json\n{"a": [1, 2]}\n```\nDone {"b": 1}'
    assert read(cut(text, [3, 17, 22, 30]))[-1] == {"a": [1, 2]}


@pytest.mark.parametrize("text", ['{"a" 1}', '{"a": tru}', "[1, 2}", '{"a": "\\x"}'])
def test_text_that_is_not_json_stops_the_reading_and_the_last_snapshot_stands(
    text: str,
) -> None:
    parser = PartialJSON()
    parser.feed(text)
    parser.close()
    assert parser.failed


def test_a_scalar_answer() -> None:
    assert read(['"he', 'llo"']) == ["he", "hello", "hello"]
    assert read(["4", "2"])[-1] == 42
