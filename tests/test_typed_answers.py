"""Typed answers (``output_type=``) over real HTTP against the loopback mock server."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
import reactivex
from pydantic import BaseModel

from rxreact import (
    InMemoryChatMemory,
    OutputValidationError,
    ReactAgent,
    ScriptedModel,
    Verdict,
    tool,
)
from rxreact.checks.validation import OutputSpec
from rxreact.model.scripted.replies import text_reply, tool_call_reply

pytestmark = pytest.mark.integration


class Weather(BaseModel):
    """The weather in one city."""

    city: str
    celsius: float


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: 12 C"


@pytest.mark.usefixtures("io_mode")
def test_a_valid_typed_answer_is_parsed_and_every_round_asks_for_the_schema(
    serve_model: Any,
) -> None:
    answer = json.dumps({"city": "Oslo", "celsius": 12})
    server, model = serve_model(
        [tool_call_reply(("get_weather", {"city": "Oslo"})), text_reply(answer)]
    )
    result = ReactAgent(model, [get_weather]).run("Weather in Oslo?", output_type=Weather)

    assert result.output == Weather(city="Oslo", celsius=12)
    assert (result.answer, result.validated) == (answer, True)
    for body in server.requests:
        fmt = body["response_format"]
        assert fmt["type"] == "json_schema"
        assert fmt["json_schema"]["name"] == "Weather"
        assert fmt["json_schema"]["schema"] == Weather.model_json_schema()


@pytest.mark.usefixtures("io_mode")
def test_an_invalid_typed_answer_goes_back_to_the_model_and_is_revised(serve_model: Any) -> None:
    server, model = serve_model(
        [text_reply('{"city": "Oslo"}'), text_reply('{"city": "Oslo", "celsius": 12.5}')]
    )
    agent = ReactAgent(model)
    events: list[Any] = []

    async def collect() -> None:
        events.extend([e async for e in agent.astream("Weather?", output_type=Weather)])

    asyncio.run(collect())
    verdicts = [e for e in events if e.type == "answer_validated"]
    assert [v.passed for v in verdicts] == [False, True]
    assert "celsius" in verdicts[0].feedback
    final = events[-1]
    assert final.output == Weather(city="Oslo", celsius=12.5) and final.validated is True
    feedback = server.requests[1]["messages"][-1]
    assert feedback["role"] == "user" and "celsius" in feedback["content"]


@pytest.mark.usefixtures("io_mode")
def test_a_typed_answer_that_never_parses_is_an_error_and_stores_nothing(serve_model: Any) -> None:
    server, model = serve_model(
        [text_reply("no"), text_reply('{"city": "Oslo", "celsius": "warm"}')]
    )
    memory = InMemoryChatMemory()
    agent = ReactAgent(model, max_revisions=1, memory=memory, on_busy="reject")
    with pytest.raises(OutputValidationError) as caught:
        agent.run("q", "c", output_type=Weather)
    error = caught.value
    assert error.draft == '{"city": "Oslo", "celsius": "warm"}'
    assert [(e["loc"], e["type"]) for e in error.errors] == [(("celsius",), "float_parsing")]
    assert "Weather" in str(error) and "celsius" in str(error)
    assert len(server.requests) == 2
    assert memory.load("c") == []  # a failed run stores nothing, and frees the conversation:
    assert memory.try_acquire("c", "next", ttl=5) is not None


def test_a_typed_stream_that_never_parses_ends_with_the_error_not_a_final_answer() -> None:
    model = ScriptedModel([text_reply("not json")])
    events: list[Any] = []
    errors: list[Exception] = []
    agent = ReactAgent(model, max_revisions=0)
    done = threading.Event()
    agent.stream("q", output_type=Weather).subscribe(
        events.append, lambda e: (errors.append(e), done.set()), done.set
    )
    assert done.wait(10)
    assert [e.type for e in events][-2:] == ["validation_started", "answer_validated"]
    assert events[-1].passed is False
    (error,) = errors
    assert isinstance(error, OutputValidationError) and error.draft == "not json"
    assert error.errors[0]["type"] == "json_invalid"


def test_the_judge_sees_only_drafts_that_parse() -> None:
    judged: list[str] = []

    def judge(question: str, draft: str, history: Any) -> Verdict:
        judged.append(draft)
        return Verdict(passed=True)

    model = ScriptedModel([text_reply("nope"), text_reply('{"city": "Rome", "celsius": 20}')])
    result = ReactAgent(model, judge=judge).run("q", output_type=Weather)
    assert judged == ['{"city": "Rome", "celsius": 20}']
    assert result.output == Weather(city="Rome", celsius=20)


def test_a_fenced_json_block_is_read_and_other_types_work() -> None:
    assert OutputSpec(Weather).parse('```json\n{"city": "A", "celsius": 1}\n```') == Weather(
        city="A", celsius=1
    )
    spec = OutputSpec(list[int])
    assert spec.parse("[1, 2]") == [1, 2]
    assert spec.response_format["json_schema"]["name"] == "list"
    with pytest.raises(ValueError, match="JSON value matching"):
        spec.parse("[1, 'x']")


def test_a_hot_run_takes_options_and_an_output_type() -> None:
    model = ScriptedModel([text_reply('{"city": "Oslo", "celsius": 3}')])
    run = ReactAgent(model).start("q", options={"seed": 5}, output_type=Weather)
    result = run.result(timeout=10)
    assert result.output == Weather(city="Oslo", celsius=3) and result.validated is True
    assert model.requests[0].options["seed"] == 5
    final = run.events().pipe(reactivex.operators.last()).run()
    assert final.type == "final_answer" and final.output == Weather(city="Oslo", celsius=3)


def test_the_error_keeps_its_draft_and_errors_across_processes() -> None:
    # A hot run's followers in other processes get its error through the event log, as JSON.
    from rxreact.runs._errors import decode_error, encode_error

    error = OutputValidationError(
        "not a Weather", "draft", [{"type": "x", "loc": ("a",), "msg": "m"}]
    )
    back = decode_error(json.loads(json.dumps(encode_error(error))))
    assert isinstance(back, OutputValidationError)
    assert (back.draft, back.errors, str(back)) == (
        "draft",
        [{"type": "x", "loc": ["a"], "msg": "m"}],
        "not a Weather",
    )
