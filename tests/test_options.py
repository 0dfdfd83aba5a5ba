"""Request options: model -> agent -> run, in the JSON body of every request, over real HTTP."""

from __future__ import annotations

import asyncio
import io
from contextlib import redirect_stdout
from typing import Any

import pytest

from rxreact import LLMJudge, ReactAgent, ScriptedModel, tool
from rxreact.cli import main
from rxreact.messages import ChatRequest, UserMessage
from rxreact.model.openai.request_codec import encode_request
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.testing import MockOpenAIServer


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


@pytest.mark.integration
@pytest.mark.usefixtures("io_mode")
def test_options_merge_model_agent_run_on_every_request(serve_model: Any) -> None:
    server, model = serve_model(
        [tool_call_reply(("get_weather", {"city": "Oslo"})), text_reply("Sunny.")],
        options={"temperature": 0.1, "seed": 7, "max_tokens": 50},
    )
    agent = ReactAgent(model, [get_weather], options={"temperature": 0.5, "top_p": 0.9})
    result = agent.run("weather?", options={"max_tokens": 99, "logit_bias": {"42": -1}})

    assert result.answer == "Sunny."
    assert len(server.requests) == 2
    for body in server.requests:  # every request, the tool round and the answer round
        assert body["temperature"] == 0.5  # agent over model
        assert body["seed"] == 7  # model only
        assert body["top_p"] == 0.9  # agent only
        assert body["max_tokens"] == 99  # run over model
        assert body["logit_bias"] == {"42": -1}  # anything passes through untouched


@pytest.mark.integration
@pytest.mark.usefixtures("io_mode")
def test_the_forced_round_says_none_whatever_was_asked(serve_model: Any) -> None:
    def script(request: ChatRequest) -> Any:
        if request.tool_choice == "none":
            return text_reply("Best I can do.")
        return tool_call_reply(("get_weather", {"city": "Rome"}))

    server, model = serve_model(script, options={"tool_choice": "required"})
    agent = ReactAgent(model, [get_weather], max_rounds=1, options={"parallel_tool_calls": False})
    result = agent.run("weather?", options={"tool_choice": "auto"})

    assert result.forced and result.answer == "Best I can do."
    first, forced = server.requests
    assert first["tool_choice"] == "auto"  # the run's choice over the model's
    assert forced["tool_choice"] == "none"
    assert forced["parallel_tool_calls"] is False


@pytest.mark.integration
@pytest.mark.usefixtures("io_mode")
def test_text_call_and_astream_take_options(serve_model: Any) -> None:
    server, model = serve_model([text_reply("a"), text_reply("b"), text_reply("c")])
    agent = ReactAgent(model)
    assert "".join(agent.text("q", options={"seed": 1}).run()) == "a"
    assert agent.call("q", options={"seed": 2}) == "b"

    async def collect() -> list[Any]:
        return [e async for e in agent.astream("q", options={"seed": 3})]

    events = asyncio.run(collect())
    assert events[-1].text == "c"
    assert [body["seed"] for body in server.requests] == [1, 2, 3]


def test_scripted_model_records_the_merged_options() -> None:
    model = ScriptedModel([text_reply("ok")], options={"temperature": 0.0, "seed": 1})
    ReactAgent(model, options={"seed": 2}).run("q", options={"stop": ["\n"]})
    assert model.requests[0].options == {"temperature": 0.0, "seed": 2, "stop": ["\n"]}


def test_encode_request_keeps_an_explicit_tool_choice_over_options() -> None:
    request = ChatRequest(
        messages=(UserMessage(content="q"),),
        tools=(get_weather.spec,),
        tool_choice="none",
        options={"tool_choice": "required", "temperature": 1},
    )
    body = encode_request(request, model="m", stream=True, default_options={"temperature": 0})
    assert (body["tool_choice"], body["temperature"]) == ("none", 1)


@pytest.mark.integration
def test_cli_chat_sends_temperature_and_max_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with MockOpenAIServer([text_reply("Hi.")]) as server, redirect_stdout(io.StringIO()):
        flags = ["--base-url", server.base_url, "--model", "mock"]
        assert main(["chat", "hello", *flags, "--temperature", "0.2", "--max-tokens", "64"]) == 0
    assert (server.requests[0]["temperature"], server.requests[0]["max_tokens"]) == (0.2, 64)


def test_tool_only_options_are_not_sent_without_tools() -> None:
    request = ChatRequest(messages=(UserMessage(content="q"),), options={"tool_choice": "auto"})
    body = encode_request(
        request, model="m", stream=False, default_options={"parallel_tool_calls": False, "seed": 1}
    )
    assert "tool_choice" not in body and "parallel_tool_calls" not in body and body["seed"] == 1


@pytest.mark.integration
@pytest.mark.usefixtures("io_mode")
def test_a_model_wide_tool_choice_does_not_break_the_judge_request(serve_model: Any) -> None:
    verdict = text_reply('{"passed": true, "feedback": ""}')
    server, model = serve_model(
        [tool_call_reply(("get_weather", {"city": "Oslo"})), text_reply("Sunny."), verdict],
        options={"tool_choice": "auto", "temperature": 0.3},
    )
    result = ReactAgent(model, [get_weather], judge=LLMJudge()).run("weather?")
    assert result.validated is True  # the mock answers 400 to tool_choice without tools
    judge_body = server.requests[2]
    assert "tool_choice" not in judge_body and judge_body["temperature"] == 0.3
