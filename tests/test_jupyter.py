"""What a notebook shows: result and event cards, and marble diagrams that stay readable."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from typing import Any

import pytest
import reactivex

from rxreact import (
    FinalAnswer,
    ReactAgent,
    ScriptedModel,
    TextDelta,
    ToolResult,
    Usage,
    tool,
)
from rxreact.marbles import Recording
from rxreact.marbles._svg_canvas import CHAR_W, COLORS
from rxreact.marbles._svg_legend import GLYPHS
from rxreact.messages import ChatRequest
from rxreact.model.scripted.replies import Reply, text_reply, tool_call_reply
from rxreact.testing import run_marbles

SVG = "{http://www.w3.org/2000/svg}"


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


@tool
def get_forecast_for_the_whole_week(city: str) -> str:
    """A long name, to crowd the labels."""
    return f"{city}: rain later"


def zero_time_run() -> Recording:
    """A scripted run with interval=0: every event at virtual time 0."""
    calls = [("get_weather", {"city": c}) for c in ("Oslo", "Rome")]
    calls += [("get_forecast_for_the_whole_week", {"city": c}) for c in ("Oslo", "Rome")]
    return run_marbles(
        lambda s: ReactAgent(
            ScriptedModel(
                [tool_call_reply(*calls), text_reply("Sunny, then rain.", reasoning="Hmm.")]
            ),
            [get_weather, get_forecast_for_the_whole_week],
            scheduler=s,
        ),
        "Weather?",
    )


def lane_y(root: ET.Element, lane: str) -> float:
    for text in root.iter(f"{SVG}text"):
        if text.text == lane and text.get("font-weight") == "600":
            return float(text.get("y", "0"))
    raise AssertionError(f"no lane {lane}")


def dots_in_lane(root: ET.Element, lane: str, color: str) -> list[float]:
    y = lane_y(root, lane)
    return [
        float(c.get("cx", "0"))
        for c in root.iter(f"{SVG}circle")
        if c.get("fill") == color and abs(float(c.get("cy", "0")) - y) < 15
    ]


# -- marbles with no time between events -------------------------------------------------------


def test_a_zero_time_run_is_laid_out_by_event_order() -> None:
    rec = zero_time_run()
    assert rec.duration == 0
    root = ET.fromstring(rec.to_svg())
    xs = dots_in_lane(root, "text", COLORS["answer"])
    assert len(xs) > 1
    assert xs == sorted(xs) and len(set(xs)) == len(xs)  # one place per event, in order
    assert xs[-1] - xs[0] > 20
    labels = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert any("laid out by event order" in label for label in labels)
    assert "#0" in labels  # the axis counts events, not seconds

    collapsed = ET.fromstring(rec.to_svg(layout="time"))
    assert len(set(dots_in_lane(collapsed, "text", COLORS["answer"]))) == 1  # what auto avoids


def test_a_timed_run_keeps_its_time_axis() -> None:
    rec = run_marbles(
        lambda s: ReactAgent(ScriptedModel([text_reply("Sunny.", interval=0.5)]), scheduler=s),
        "Weather?",
    )
    labels = [t.text or "" for t in ET.fromstring(rec.to_svg()).iter(f"{SVG}text")]
    assert "0 s" in labels and not any(label.startswith("#") for label in labels)


def test_an_unknown_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="layout"):
        zero_time_run().to_svg(layout="sideways")


# -- tool-call labels --------------------------------------------------------------------------


def test_every_tool_call_is_named_and_labels_never_overlap() -> None:
    root = ET.fromstring(zero_time_run().to_svg(width=480))  # narrow: the labels crowd
    labels = [t for t in root.iter(f"{SVG}text") if t.get("class") == "call-label"]
    names = [label.find(f"{SVG}title").text for label in labels]  # type: ignore[union-attr]
    assert names == ["get_weather"] * 2 + ["get_forecast_for_the_whole_week"] * 2
    shown = [
        ("".join(label.itertext())[len(name) :], name)
        for label, name in zip(labels, names, strict=True)
    ]
    assert any(text != name for text, name in shown)  # some had to be shortened...
    assert all(text.rstrip("…") and name.startswith(text.rstrip("…")) for text, name in shown)
    rows: dict[str, list[tuple[float, float]]] = {}
    for label, (text, _) in zip(labels, shown, strict=True):
        x = float(label.get("x", "0"))
        rows.setdefault(label.get("y", ""), []).append((x, x + len(text) * CHAR_W))
    for extents in rows.values():  # ...and none is drawn over another
        for (_, end), (start, _) in itertools.pairwise(extents):
            assert end <= start


# -- the legend --------------------------------------------------------------------------------


def legend_labels(root: ET.Element) -> set[str]:
    legend = next(g for g in root.iter(f"{SVG}g") if g.get("class") == "legend")
    return {t.text or "" for t in legend.iter(f"{SVG}text")}


def body(root: ET.Element) -> list[ET.Element]:
    legend = next(g for g in root.iter(f"{SVG}g") if g.get("class") == "legend")
    inside = set(legend.iter())
    return [e for e in root.iter() if e not in inside]


def test_the_legend_explains_every_glyph_drawn() -> None:
    @tool(timeout=1.0)
    def stuck() -> reactivex.Observable[str]:
        """Never answers."""
        return reactivex.never()

    def script(request: ChatRequest) -> Reply:
        if request.tool_choice == "none":
            return text_reply("I could not find out.", reasoning="Nothing came.", interval=0.5)
        return tool_call_reply(("stuck", {}), interval=0.5)

    rec = run_marbles(
        lambda s: ReactAgent(ScriptedModel(script), [stuck], max_rounds=1, scheduler=s)
    )
    root = ET.fromstring(rec.to_svg())
    shown = legend_labels(root)
    elements = body(root)

    def drawn(tag: str, **attributes: str) -> bool:
        return any(
            e.tag == f"{SVG}{tag}" and all(e.get(k) == v for k, v in attributes.items())
            for e in elements
        )

    expectations = {
        "mode decided": drawn("path", stroke="#fff", fill=COLORS["tool"]),
        "final answer": drawn("circle", fill="#fff", stroke=COLORS["answer"]),
        "max rounds reached": drawn("path", fill=COLORS["forced"]),
        "tool error": drawn("rect", fill=COLORS["error_fill"]),
        "forced round": drawn("rect", fill=COLORS["forced_band"]),
        "completed": drawn("line", stroke="#333", **{"stroke-width": "2"}),
        "answer text": drawn("circle", fill=COLORS["answer"]),
        "reasoning text": drawn("circle", fill=COLORS["reasoning"]),
        "model calls a tool": drawn("circle", fill=COLORS["tool"]),
        "text chunk": drawn("line", stroke=COLORS["answer"]),
    }
    for label, is_drawn in expectations.items():
        assert is_drawn, f"expected a {label} glyph in this run"
        assert label in shown, f"{label} is drawn but not in the legend"
    assert shown <= {label for label, _ in GLYPHS.values()}
    assert "failed" not in shown and "count per time slice" not in shown  # only what is drawn


# -- cards -------------------------------------------------------------------------------------


class _Checker(HTMLParser):
    """Collects tags and text, to check a card parses and escapes what it quotes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.open = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)
        self.open += tag not in ("br",)

    def handle_endtag(self, tag: str) -> None:
        self.open -= 1

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> _Checker:
    checker = _Checker()
    checker.feed(html)
    assert checker.open == 0, html  # every tag closed
    return checker


def test_agent_result_card() -> None:
    from reactivex.testing import TestScheduler

    model = ScriptedModel(
        [
            tool_call_reply(("get_weather", {"city": "Paris"})),
            text_reply(
                "<b>Sunny</b> & 21°C",
                usage=Usage(prompt_tokens=30, completion_tokens=12, total_tokens=42),
            ),
        ]
    )
    result = ReactAgent(model, [get_weather], scheduler=TestScheduler()).run("Weather?")
    card = result._repr_html_()
    checked = parse(card)
    text = "".join(checked.text)
    assert "<b>Sunny</b> & 21°C" in text  # shown as text...
    assert "b" not in checked.tags  # ...not as markup
    assert "2 rounds" in text and "42 tokens" in text
    assert "4 messages in this turn" in text and "details" in checked.tags
    assert len(card) < 3000


@pytest.mark.parametrize(
    ("event", "shown"),
    [
        (TextDelta(round=1, delta="Sun<ny>"), "'Sun<ny>'"),
        (
            ToolResult(
                round=2,
                call_id="c1",
                name="get_weather",
                content="Paris: sunny",
                is_error=False,
                duration_s=0.25,
            ),
            "get_weather",
        ),
        (
            FinalAnswer(round=2, text="Sunny.", rounds=2, forced=True, usage=None),
            "2 rounds · forced",
        ),
    ],
)
def test_event_cards(event: Any, shown: str) -> None:
    card = event._repr_html_()
    checked = parse(card)
    text = "".join(checked.text)
    assert event.type in text and f"round {event.round}" in text
    assert shown in text
    assert re.search(r"<div[^>]*>", card) and len(card) < 1500
