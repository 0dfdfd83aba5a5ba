"""What the evals tests share: a weather tool, scripted agents, and running a dataset in
virtual time."""

from __future__ import annotations

from typing import Any

import reactivex
from reactivex import abc
from reactivex import operators as ops

from rxreact import ReactAgent, Usage, tool
from rxreact.evals import Case, Dataset, Report
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import Reply, text_reply, tool_call_reply


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


@tool
def search(q: str) -> str:
    """Search the web."""
    return "nothing found"


def slow_tool(seconds: float, name: str = "slow") -> Any:
    """A tool that answers after ``seconds`` of (virtual) time."""

    @tool(name=name)
    def slow() -> reactivex.Observable[str]:
        """Answers after a while."""
        return reactivex.timer(seconds).pipe(ops.map(lambda _: "done"))

    return slow


def weather_agent(
    scheduler: abc.SchedulerBase,
    *,
    calls: tuple[tuple[str, dict[str, Any]], ...] = (("get_weather", {"city": "Paris"}),),
    answer: str = "It is sunny in Paris.",
    interval: float = 0.5,
    usage: Usage | None = None,
    **settings: Any,
) -> ReactAgent:
    """A two-round agent: a tool round (``calls``), then ``answer`` streamed word by word."""
    script: list[Reply] = [
        tool_call_reply(*calls, interval=interval, usage=usage),
        text_reply(answer, interval=interval, usage=usage),
    ]
    return ReactAgent(ScriptedModel(script), [get_weather, search], scheduler=scheduler, **settings)


def one_case(*evaluators: Any, expected: Any = "It is sunny in Paris.", **agent: Any) -> Report:
    """A one-case dataset scored by ``evaluators``, run in virtual time on ``weather_agent``."""
    dataset = Dataset(
        [Case("paris", "Weather in Paris?", expected=expected)], evaluators=evaluators
    )
    return dataset.evaluate(lambda s: weather_agent(s, **agent), virtual_time=True, progress=False)


def result_of(report: Report, name: str) -> Any:
    """The one run's result of evaluator ``name``."""
    return report.cases[0].runs[0].results[name]
