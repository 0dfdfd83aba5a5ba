"""Tools that report progress: Observable and async generator tools (values before the last),
and tools taking a ``progress`` callback; in virtual time and on real threads."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import reactivex
from reactivex import operators as ops

from rxreact import ReactAgent, tool
from rxreact.events import ToolProgress, ToolResult
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.testing.agent_marbles import run_marbles


@tool
def download(size: int) -> reactivex.Observable[str]:
    """Downloads, reporting each third; the last value is the file."""
    return reactivex.interval(1.0).pipe(
        ops.take(3),
        ops.map(lambda i: f"{(i + 1) * size // 3} bytes" if i < 2 else "file.bin"),
    )


@tool
def index(pages: int, progress: Callable[[Any], None]) -> str:
    """Indexes pages, reporting each one."""
    for page in range(1, pages + 1):
        progress({"page": page, "of": pages})
    return f"indexed {pages} pages"


@tool
async def crawl(site: str) -> AsyncIterator[str]:
    """Crawls a site, yielding each page; the last value is the summary."""
    for page in ("home", "about"):
        await asyncio.sleep(0)
        yield f"{site}/{page}"
    yield f"crawled {site}: 2 pages"


def test_an_observable_tools_earlier_values_are_progress_in_virtual_time() -> None:
    model = ScriptedModel([tool_call_reply(("download", {"size": 300})), text_reply("done")])
    recording = run_marbles(lambda s: ReactAgent(model, [download], scheduler=s))

    progress = recording.of_type("tool_progress")
    assert [p.value for p in progress] == ["100 bytes", "200 bytes"]
    # each value is known to be progress when the next one comes: at 2 s and 3 s of the tool
    started = recording.times("tool_execution_started")[0]
    assert [t - started for t in recording.times("tool_progress")] == [2.0, 3.0]
    (result,) = recording.of_type("tool_result")
    assert result.content == "file.bin"
    assert "~" in recording.to_marbles("tools")  # the tools lane shows the progress
    assert "progress" in recording.legend("tools")["~"]
    svg = recording._repr_svg_()
    assert svg.count("<title>progress</title>") == 2  # ticks on the download's bar


def test_progress_callbacks_and_async_generators_on_real_threads() -> None:
    model = ScriptedModel(
        [
            tool_call_reply(("index", {"pages": 3}), ("crawl", {"site": "example.org"})),
            text_reply("done"),
        ]
    )
    events = ReactAgent(model, [index, crawl]).stream("go").pipe(ops.to_list()).run()

    by_tool: dict[str, list[Any]] = {}
    for event in events:
        if isinstance(event, ToolProgress | ToolResult):
            by_tool.setdefault(event.name, []).append(event)
    index_events, crawl_events = by_tool["index"], by_tool["crawl"]
    assert [e.value for e in index_events[:-1]] == [
        {"page": 1, "of": 3},
        {"page": 2, "of": 3},
        {"page": 3, "of": 3},
    ]
    assert isinstance(index_events[-1], ToolResult)
    assert index_events[-1].content == "indexed 3 pages"
    assert [e.value for e in crawl_events[:-1]] == ["example.org/home", "example.org/about"]
    assert crawl_events[-1].content == "crawled example.org: 2 pages"
    call_ids = {e.call_id for e in index_events}
    assert len(call_ids) == 1


def test_the_progress_parameter_is_not_in_the_schema() -> None:
    assert set(index.parameters["properties"]) == {"pages"}
    assert index.parameters["required"] == ["pages"]


def test_progress_events_survive_json() -> None:
    from rxreact.events import agent_event_adapter

    event = ToolProgress(round=1, call_id="c1", name="index", value={"page": 1, "of": 3})
    assert agent_event_adapter.validate_json(agent_event_adapter.dump_json(event)) == event
