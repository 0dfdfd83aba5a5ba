"""Typed answers as they form: ``output_partial`` events from the answering round only, an
``output_reset`` before a retry's partials (validation and the judge), ``iter_output`` /
``aiter_output``; in virtual time, and over real HTTP on every wire format in both I/O modes."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import pytest
from pydantic import BaseModel
from reactivex.testing import TestScheduler
from test_partial_json import grows

from rxreact import (
    AnthropicModel,
    FinalAnswer,
    GeminiModel,
    InvalidArgumentError,
    OpenAIChatModel,
    OpenAIResponsesModel,
    OutputPartial,
    OutputReset,
    ReactAgent,
    RoundStarted,
    ScriptedModel,
    TextDelta,
    Verdict,
    tool,
)
from rxreact.marbles import record
from rxreact.messages import ChatRequest
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.operators._output_partial import TOOL_ROUND_REASON
from rxreact.testing import MockOpenAIServer


class Forecast(BaseModel):
    city: str
    celsius: int
    tags: list[str]


ANSWER = {"city": "Paris", "celsius": 21, "tags": ["wet", "windy"]}
TEXT = json.dumps(ANSWER)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: 21 C, wet and windy"


def virtual(script: list[Any], **options: Any) -> tuple[ReactAgent, TestScheduler]:
    scheduler = TestScheduler()
    model = ScriptedModel(script, scheduler=scheduler)
    return ReactAgent(model, [get_weather], scheduler=scheduler, **options), scheduler


def events_of_run(agent: ReactAgent, scheduler: TestScheduler, **run: Any) -> list[Any]:
    messages = scheduler.start(lambda: agent.stream("Weather in Paris?", **run)).messages
    return [m.value.value for m in messages if m.value.kind == "N"]


def test_in_virtual_time_partials_grow_only_when_changed_and_end_as_the_output() -> None:
    agent, scheduler = virtual(
        [tool_call_reply(("get_weather", {"city": "Paris"})), text_reply(TEXT, size=3, interval=1)]
    )
    events = events_of_run(agent, scheduler, output_type=Forecast)
    partials = [e.output for e in events if isinstance(e, OutputPartial)]
    texts = [e for e in events if isinstance(e, TextDelta)]
    assert partials[-1] == ANSWER
    assert 5 < len(partials) <= len(texts)  # several, and never more than the chunks
    assert all(grows(a, b) and a != b for a, b in itertools.pairwise(partials))
    assert {e.round for e in events if isinstance(e, OutputPartial)} == {2}  # the answer round
    final = events[-1]
    assert isinstance(final, FinalAnswer) and final.output == Forecast(**ANSWER)


def test_the_agents_output_type_is_every_runs_default() -> None:
    agent, scheduler = virtual([text_reply(TEXT, size=5)], output_type=Forecast)
    events = events_of_run(agent, scheduler)
    assert any(isinstance(e, OutputPartial) for e in events)
    assert events[-1].output == Forecast(**ANSWER)


def test_a_tool_rounds_prose_gives_no_partials_and_json_before_a_call_is_reset() -> None:
    """(JSON and the call in one delivery batch give no partial at all.)"""
    agent, scheduler = virtual(
        [
            tool_call_reply(("get_weather", {"city": "Paris"}), text="Let me look it up."),
            # chunks a second apart: the partial of '{"city": "Pa' goes out before the call
            tool_call_reply(("get_weather", {"city": "Paris"}), text='{"city": "Pa', interval=1),
            text_reply(TEXT, size=4),
        ]
    )
    events = events_of_run(agent, scheduler, output_type=Forecast)
    by_round = [(type(e).__name__, e.round) for e in events if isinstance(e, OutputPartial)]
    assert (("OutputPartial", 1) not in by_round) and ("OutputPartial", 2) in by_round
    (reset,) = [e for e in events if isinstance(e, OutputReset)]
    assert (reset.round, reset.reason) == (2, TOOL_ROUND_REASON)
    assert events.index(reset) < min(
        i for i, e in enumerate(events) if isinstance(e, OutputPartial) and e.round == 3
    )


def test_a_rejected_draft_is_reset_before_the_retrys_partials_and_iter_output_restarts() -> None:
    def script() -> list[Any]:
        return [text_reply('{"city": "Paris", "celsius": "warm"}', size=4), text_reply(TEXT)]

    agent, scheduler = virtual(script())
    events = events_of_run(agent, scheduler, output_type=Forecast)
    kinds = [type(e).__name__ for e in events if not isinstance(e, TextDelta)]
    reset_at = kinds.index("OutputReset")
    assert kinds[reset_at - 1] == "AnswerValidated" and kinds[reset_at + 1] == "RoundStarted"
    (reset,) = [e for e in events if isinstance(e, OutputReset)]
    assert reset.round == 1 and "celsius" in reset.reason
    assert all(e.round == 2 for e in events[events.index(reset) :] if isinstance(e, OutputPartial))

    blocking = ReactAgent(ScriptedModel(script()))
    shown = list(blocking.iter_output("q", output_type=Forecast))
    assert {} in shown[1:-1]  # after the reset, from {} again
    restart = shown.index({}, 1)
    assert shown[restart - 1] == {"city": "Paris", "celsius": "warm"}  # the last of the draft
    assert shown[-1] == Forecast(**ANSWER)


def test_a_judges_rejection_resets_the_partials_too() -> None:
    verdicts = iter([Verdict(passed=False, feedback="Say it is windy."), Verdict(passed=True)])
    agent = ReactAgent(
        ScriptedModel([text_reply(TEXT, size=6), text_reply(TEXT, size=6)]),
        judge=lambda question, draft, history: next(verdicts),
    )
    events = list(agent.iter("q", output_type=Forecast))
    (reset,) = [e for e in events if isinstance(e, OutputReset)]
    assert (reset.round, reset.reason) == (1, "Say it is windy.")
    assert events[events.index(reset) + 1].type == "round_started"


def test_iter_output_needs_an_output_type_and_aiter_output_awaits() -> None:
    agent = ReactAgent(ScriptedModel([text_reply(TEXT, size=8)]))
    with pytest.raises(InvalidArgumentError, match="output_type"):
        agent.iter_output("q")

    async def collect() -> list[Any]:
        return [v async for v in agent.aiter_output("q", output_type=Forecast)]

    shown = asyncio.run(collect())
    assert shown[-1] == Forecast(**ANSWER) and shown[-2] == ANSWER


def test_an_agent_tools_partials_are_its_own() -> None:
    child = ReactAgent(ScriptedModel([text_reply(TEXT, size=8)]), name="forecaster")
    parent = ReactAgent(
        ScriptedModel(
            [tool_call_reply(("forecaster", {"question": "Paris?"})), text_reply("It is wet.")]
        ),
        [child.as_tool(output_type=Forecast)],
    )
    events = list(parent.iter("q"))
    nested = [e for e in events if isinstance(e, OutputPartial)]
    assert nested and all(e.path == ("call_0",) and e.agent == "forecaster" for e in nested)


def test_a_fence_around_the_json_still_streams() -> None:  # as the instruction fallback's
    fenced = f"```json\n{TEXT}\n```"
    agent = ReactAgent(ScriptedModel([text_reply(fenced, size=5)]))
    shown = list(agent.iter_output("q", output_type=Forecast))
    assert shown[-2] == ANSWER and shown[-1] == Forecast(**ANSWER)


def test_the_marble_diagram_has_an_output_lane() -> None:
    agent, scheduler = virtual(
        [text_reply('{"city": 5}', size=4, interval=1), text_reply(TEXT, size=9, interval=1)]
    )
    recording = record(agent.stream("q", output_type=Forecast), scheduler)
    assert "output" in recording.lanes
    line = recording.to_marbles("output")
    assert "!" in line and line.index("!") < line.rindex("a")  # reset, then from {} again
    assert recording.legend("output")["!"].startswith("reset: ")


def _typed_script(request: ChatRequest) -> Any:
    if request.messages[-1].role == "tool":  # paced, as a model streams: several batches
        return text_reply(TEXT, size=4, interval=0.01)
    return tool_call_reply(("get_weather", {"city": "Paris"}))


@pytest.mark.integration
@pytest.mark.usefixtures("io_mode")
@pytest.mark.parametrize("wire", ["chat", "responses", "anthropic", "gemini"])
def test_over_http_every_wire_format_streams_partials(wire: str) -> None:
    with MockOpenAIServer(_typed_script) as server:
        model: Any = {
            "chat": lambda: OpenAIChatModel("m", base_url=server.base_url, max_retries=0),
            "responses": lambda: OpenAIResponsesModel("m", base_url=server.base_url, max_retries=0),
            "anthropic": lambda: AnthropicModel(
                "m", base_url=server.origin + "/v1/", api_key="k", max_retries=0
            ),
            "gemini": lambda: GeminiModel("gemini-3-flash", base_url=server.origin, max_retries=0),
        }[wire]()
        with model:
            events = list(ReactAgent(model, [get_weather]).iter("q", output_type=Forecast))
        body = server.requests[-1]
    partials = [e.output for e in events if isinstance(e, OutputPartial)]
    assert len(partials) >= 3 and partials[-1] == ANSWER
    assert all(grows(a, b) for a, b in itertools.pairwise(partials))
    assert [e.round for e in events if isinstance(e, RoundStarted)] == [1, 2]
    asked = {
        "chat": "response_format",
        "responses": "text",
        "anthropic": "output_config",
        "gemini": "generationConfig",
    }[wire]
    assert asked in body
