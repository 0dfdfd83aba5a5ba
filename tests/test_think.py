"""Tests of rxreact.model.http.think: <think> blocks at the start of streamed text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxreact.model.http.think import ThinkTagSplitter, split_think


def run(*pieces: str) -> tuple[str, str]:
    """Feed the pieces and flush; return everything (reasoning, answer) that came out."""
    splitter = ThinkTagSplitter()
    reasoning, answer = "", ""
    for piece in pieces:
        r, a = splitter.feed(piece)
        reasoning, answer = reasoning + r, answer + a
    r, a = splitter.flush()
    return reasoning + r, answer + a


def test_whole_block_in_one_piece() -> None:
    assert run("<think>Hmm, 2+2.</think>It is 4.") == ("Hmm, 2+2.", "It is 4.")


def test_deepseek_style_whitespace_is_trimmed() -> None:
    assert run("<think>\nFirst, the user asks.\n\nSo: 4.\n</think>\n\nThe answer is 4.") == (
        "First, the user asks.\n\nSo: 4.",
        "The answer is 4.",
    )


def test_leading_whitespace_before_the_tag() -> None:
    assert run("\n  <think>r</think>a") == ("r", "a")


@pytest.mark.parametrize("cut", range(len("<think>r</think>a") + 1))
def test_tags_split_anywhere(cut: int) -> None:
    text = "<think>r</think>a"
    assert run(text[:cut], text[cut:]) == ("r", "a")


def test_tags_split_char_by_char() -> None:
    assert run(*"<think>reason</think>answer") == ("reason", "answer")


def test_text_without_think_passes_through_at_once() -> None:
    splitter = ThinkTagSplitter()
    assert splitter.feed("Hello") == ("", "Hello")
    assert splitter.feed(" <think>x</think>") == ("", " <think>x</think>")
    assert splitter.flush() == ("", "")


def test_only_the_minimum_is_held_while_deciding() -> None:
    splitter = ThinkTagSplitter()
    assert splitter.feed("<th") == ("", "")
    assert splitter.feed("e") == ("", "<the")  # decided: not a think tag


def test_think_later_in_text_is_answer() -> None:
    assert run("Sure. <think>x</think>") == ("", "Sure. <think>x</think>")


def test_reasoning_streams_while_inside_the_block() -> None:
    splitter = ThinkTagSplitter()
    assert splitter.feed("<think>") == ("", "")
    assert splitter.feed("Let me") == ("Let me", "")
    assert splitter.feed(" see") == (" see", "")
    assert splitter.feed(" </thi") == ("", "")  # a possible closing tag, and its space
    assert splitter.feed("nk>Done") == ("", "Done")
    assert splitter.feed(" here") == ("", " here")


def test_partial_close_that_is_not_a_tag_is_reasoning() -> None:
    splitter = ThinkTagSplitter()
    assert splitter.feed("<think>a </th") == ("a", "")
    assert splitter.feed("ing") == (" </thing", "")


def test_unclosed_block_is_all_reasoning() -> None:
    assert run("<think>", "still thinking ", "</thi") == ("still thinking </thi", "")


def test_flush_of_undecided_text_is_answer() -> None:
    assert run("  <thi") == ("", "  <thi")
    assert run("   ") == ("", "   ")


def test_empty_block() -> None:
    assert run("<think></think>", "Answer") == ("", "Answer")


def test_only_whitespace_after_close() -> None:
    assert run("<think>r</think>", "\n\n") == ("r", "")


def test_flush_resets_for_another_stream() -> None:
    splitter = ThinkTagSplitter()
    splitter.feed("<think>a</think>b")
    splitter.flush()
    assert splitter.feed("<think>c</think>d") == ("c", "d")


def test_split_think() -> None:
    assert split_think("<think>\nr\n</think>\n\na") == ("r", "a")
    assert split_think("plain") == (None, "plain")
    assert split_think("<think>only</think>") == ("only", None)
    assert split_think("") == (None, None)


@given(
    reasoning=st.text(alphabet="ab <>/thinks\n", max_size=20).filter(lambda r: "</think>" not in r),
    answer=st.text(alphabet="ab <>/thinks\n", max_size=20),
    data=st.data(),
)
def test_any_split_gives_the_same_result(reasoning: str, answer: str, data: st.DataObject) -> None:
    text = f"<think>{reasoning}</think>{answer}"
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert run(*pieces) == run(text) == (reasoning.strip(), answer.lstrip())
