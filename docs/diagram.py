"""Draws docs/diagram.svg: the demo's weather question as a marble diagram.

The demo's scripted model and tools, with each tool's latency played as a virtual delay on a
TestScheduler, so the drawing is the same every time. Run: ``.venv/bin/python docs/diagram.py``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import reactivex
from reactivex import operators as ops

from rxreact import ReactAgent, Tool
from rxreact.demo import QUESTION, demo_model_script, demo_tools
from rxreact.model.scripted.model import ScriptedModel
from rxreact.testing.agent_marbles import run_marbles

LATENCY_S = {"get_weather": 0.35, "get_forecast": 0.6, "search_warnings": 0.45}


def delayed(tool: Tool) -> Tool:
    """``tool`` answering after its demo latency, in scheduler time instead of a real wait."""

    def run(**arguments: Any) -> reactivex.Observable[Any]:
        seconds = LATENCY_S[tool.name]
        return reactivex.timer(seconds).pipe(ops.map(lambda _: tool.function(**arguments)))

    return dataclasses.replace(tool, function=run)


def main() -> None:
    tools = [delayed(t) for t in demo_tools(latency_scale=0.0)]
    model = ScriptedModel(lambda request: demo_model_script(request, interval=0.02))
    recording = run_marbles(lambda s: ReactAgent(model, tools, scheduler=s), QUESTION)
    title = "rxreact demo · the weather question in virtual time"
    path = Path(__file__).with_name("diagram.svg")
    path.write_text(recording.to_svg(width=1000, title=title) + "\n", encoding="utf-8")
    print(f"wrote {path}: {recording!r}")


if __name__ == "__main__":
    main()
