"""Rendering recordings: ASCII marble lines (exact strings) and the SVG diagram."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest
import reactivex
from reactivex import operators as ops
from reactivex.observable.marbles import parse
from reactivex.testing import TestScheduler

from rxreact import ReactAgent, tool
from rxreact.errors import RunCancelledError
from rxreact.marbles import Recording, record
from rxreact.messages import ChatRequest
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import Reply, text_reply, tool_call_reply
from rxreact.testing.agent_marbles import assert_marbles, reply_from_marbles, run_marbles

SVG = "{http://www.w3.org/2000/svg}"


def virtual(marbles: str, **kw: Any) -> Recording:
    return record(reactivex.from_marbles(marbles, timespan=1.0, **kw), TestScheduler())


# -- ASCII ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("-x-y-z|", "-a-b-c|"),
        ("--x--y|", "--a--b|"),
        ("-(x,y)-z|", "-(a,b)-c|"),
        ("-x-#", "-a-#"),
        ("x-y-x-|", "a-b-a-|"),  # equal values share a symbol
        ("---|", "---|"),
    ],
)
def test_marble_lines_round_trip(source: str, line: str) -> None:
    assert virtual(source).to_marbles(unit=1.0) == line


def test_legend_maps_symbols_to_values_and_parses_back() -> None:
    rec = virtual("-x--y-z|")
    line = rec.to_marbles(unit=1.0)
    legend = rec.legend()
    assert legend == {"a": "x", "b": "y", "c": "z"}
    parsed = [(t, n.value) for t, n in parse(line, timespan=1.0, lookup=legend) if n.kind == "N"]
    assert parsed == [(m.time, m.value) for m in rec.lane("value")]


def test_the_unit_sets_the_time_per_character() -> None:
    rec = virtual("-x---y|")
    assert rec.to_marbles(unit=0.5) == "--a-------b-|"
    assert rec.to_marbles(unit=2.0) == "a-b|"  # x @1 -> frame 0, y @5 -> frame 2, end @6


def test_a_value_and_the_end_in_one_unit_share_a_group() -> None:
    assert virtual("-x|").to_marbles(unit=4.0) == "(a,|)"


def test_more_than_52_distinct_values_overflow_to_a_star() -> None:
    rec = record(reactivex.from_iterable(range(60)), TestScheduler())
    symbols = rec.to_marbles(unit=1.0)[1:-1].split(",")
    assert symbols[:3] == ["a", "b", "c"] and symbols[51] == "Z" and set(symbols[52:-1]) == {"*"}


def test_bad_units_and_lanes_are_refused() -> None:
    rec = virtual("-x|")
    with pytest.raises(ValueError, match="positive"):
        rec.to_marbles(unit=0)
    with pytest.raises(ValueError, match="larger unit"):
        rec.to_marbles(unit=1e-6)
    two = record(reactivex.from_iterable([1, 2]), TestScheduler(), lane_of=lambda v: f"lane{v}")
    with pytest.raises(ValueError, match="name the lane"):
        two.to_marbles()


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


def weather_run() -> Recording:
    model = ScriptedModel(
        [
            tool_call_reply(("get_weather", {"city": "Oslo"}), interval=1.0),
            text_reply("Sunny.", interval=1.0),
        ]
    )
    return run_marbles(lambda s: ReactAgent(model, [get_weather], scheduler=s))


def test_agent_lanes_as_marble_lines() -> None:
    rec = weather_run()
    assert_marbles(
        rec,
        {
            # the group (f,r) takes five characters, so t (due at 20) is written at 21
            "chunks": "r---c---c---c---(f,r)t--(f,|)",
            "tool_calls": "----A---a---a-----------|",
            "tools": "----------------(A,a)---|",
            "text": "--------------------a---|",
        },
        unit=0.25,
        values={
            "tool_calls": {"A": "get_weather (call_0)", "a": '{"city": "Oslo"}'},
            "tools": {"a": "Oslo: sunny"},
            "text": {"a": "Sunny."},
        },
    )
    assert rec.to_text(unit=0.25).splitlines()[0] == "rounds      R---T-----------(f,R)A--(f,F,|)"


def test_assert_marbles_failure_shows_the_whole_run() -> None:
    rec = weather_run()
    with pytest.raises(AssertionError) as failure:
        assert_marbles(rec, {"text": "-a|"}, values={"text": {"a": "Rain."}})
    message = str(failure.value)
    assert "expected -a|" in message and "actual   -----a|" in message
    assert "a expected 'Rain.', got 'Sunny.'" in message
    assert "tool_calls" in message  # the full drawing follows


def test_a_reply_written_as_marbles_plays_at_those_times() -> None:
    reply = reply_from_marbles("r-a--b-f|", {"a": "Hello ", "b": "world"})
    rec = run_marbles(lambda s: ReactAgent(ScriptedModel([reply]), scheduler=s))

    assert rec.to_marbles("chunks") == "r-t--t-f|"
    assert rec.to_marbles("text") == "--a--b--|"
    assert rec.legend("text") == {"a": "Hello ", "b": "world"}
    with pytest.raises(ValueError, match="no chunk for symbol"):
        reply_from_marbles("-q|")


# -- SVG ------------------------------------------------------------------------------------------


def svg_of(rec: Recording, **options: Any) -> ET.Element:
    return ET.fromstring(rec.to_svg(**options))


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def titles(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}title")]


def test_svg_is_well_formed_with_a_lane_per_event_kind_and_a_time_axis() -> None:
    rec = weather_run()
    root = svg_of(rec)
    assert root.tag == f"{SVG}svg" and root.get("width") == "960"
    labels = texts(root)
    for lane in ("rounds", "chunks", "text", "tool_calls", "tools"):
        assert lane in labels
    assert {"0 s", "1 s", "6 s"} <= set(labels)  # ticks
    assert "round 1" in labels and "round 2" in labels
    assert any(label.startswith("get_weather") for label in labels)  # the tool's bar
    assert "answer: Sunny." in labels
    assert rec._repr_svg_() == rec.to_svg()
    assert rec._repr_html_().startswith("<div") and "<svg" in rec._repr_html_()


def test_svg_marks_the_forced_round_and_error_results() -> None:
    @tool(timeout=1.0)
    def stuck() -> reactivex.Observable[str]:
        """Never answers."""
        return reactivex.never()

    def script(request: ChatRequest) -> Reply:
        if request.tool_choice == "none":
            return text_reply("I could not find out.", interval=0.5)
        return tool_call_reply(("stuck", {}), interval=0.5)

    rec = run_marbles(
        lambda s: ReactAgent(ScriptedModel(script), [stuck], max_rounds=2, scheduler=s)
    )
    root = svg_of(rec)
    labels = texts(root)
    assert "round 3 · forced" in labels
    assert any("max_rounds_reached" in t for t in titles(root))
    assert sum("✕" in label for label in labels) == 2  # both timed-out calls
    error_bars = [r for r in root.iter(f"{SVG}rect") if r.get("fill") == "#f8c9c9"]
    assert len(error_bars) == 2 + 1  # and the legend's swatch
    assert "2 runs, 2 failed" in labels


def test_a_failed_run_shows_its_error() -> None:
    rec = virtual("-x-#", error=RuntimeError("model went away"))
    labels = texts(svg_of(rec))
    assert any("failed at 3 s: RuntimeError: model went away" in t for t in labels)


def test_a_stopped_run_is_drawn_as_stopped_not_as_a_failure() -> None:
    rec = virtual("-x-#", error=RunCancelledError("run 0a1b2c was cancelled"))
    root = svg_of(rec)
    labels = texts(root)
    assert "■ stopped at 3 s" in labels and "stopped" in labels  # the header and the legend
    assert not any("✕" in t or "failed" in t or "0a1b2c" in t for t in labels)
    assert not any("RunCancelledError" in t for t in titles(root))
    ends = [line for line in root.iter(f"{SVG}line") if line.get("stroke") == "#6b7385"]
    assert len(ends) == 2  # the grey end line across the lanes, and the legend's sample


def test_5000_chunks_are_summarised_not_drawn_one_by_one() -> None:
    long_text = "x" * 5000
    model = ScriptedModel([text_reply(long_text, size=1, interval=0.001)])
    rec = run_marbles(lambda s: ReactAgent(model, scheduler=s))
    assert len(rec.lane("chunks")) == 5002 and len(rec.lane("text")) == 5000

    svg = rec.to_svg()
    root = ET.fromstring(svg)
    elements = sum(1 for _ in root.iter())
    assert elements < 1200, elements
    assert len(svg) < 150_000
    labels = texts(root)
    assert "5,002 · binned" in labels and "5,000 · binned" in labels
    assert any(t.startswith("5,002 events") or "chunks in" in t for t in titles(root))


def test_many_concurrent_tool_runs_become_a_running_count() -> None:
    @tool
    def slow(n: int) -> reactivex.Observable[str]:
        """Takes n tenths of a second."""
        return reactivex.timer(n / 10).pipe(ops.map(lambda _: "ok"))

    calls = [("slow", {"n": n}) for n in range(1, 41)]
    model = ScriptedModel([tool_call_reply(*calls), text_reply("done")])
    rec = run_marbles(lambda s: ReactAgent(model, [slow], scheduler=s))
    root = svg_of(rec, max_tool_rows=8)

    assert "40 runs, 0 failed · count" in texts(root)
    assert any("tools running in" in t for t in titles(root))


def test_real_time_and_plain_observables_render_too() -> None:
    rec = record(reactivex.from_iterable(["x", "y"]), timeout=5.0)
    labels = texts(svg_of(rec))
    assert "value" in labels and any("real time" in t for t in labels)

    empty = record(reactivex.never(), TestScheduler())
    assert len(empty) == 0
    ET.fromstring(empty.to_svg())
