"""The weather desk decides from each request: which tool, which city, which kind of answer."""

from __future__ import annotations

import json
from typing import Any

from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    Message,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from rxreact.model.chunks import ChatChunk
from rxreact.model.scripted.replies import Reply
from rxreact.testing import weather_desk


def spec(name: str, description: str, **properties: str) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": {key: {"type": kind} for key, kind in properties.items()},
            "required": list(properties),
        },
    )


WEATHER = spec("get_weather", "Current weather for a city.", city="string")
FORECAST = spec("forecast", "A three-day forecast for a city.", city="string")
ROUTE = spec("route", "Distance between two points.", meters="integer")


def ask(*messages: Message, tools: tuple[ToolSpec, ...] = (), **fields: Any) -> Reply:
    return weather_desk(ChatRequest(messages=messages, tools=tools, **fields))


def calls(reply: Reply) -> list[tuple[str, dict[str, Any]]]:
    """The (name, arguments) of the tool calls a reply streams."""
    assert isinstance(reply, list)
    names: dict[int, str] = {}
    arguments: dict[int, str] = {}
    for item in reply:
        if isinstance(item, ChatChunk):
            for delta in item.tool_calls:
                names[delta.index] = names.get(delta.index, "") + (delta.name or "")
                arguments[delta.index] = arguments.get(delta.index, "") + (delta.arguments or "")
    return [(names[i], json.loads(arguments[i])) for i in sorted(names)]


def text(reply: Reply) -> str:
    assert isinstance(reply, list)
    return "".join(i.text or "" for i in reply if isinstance(i, ChatChunk))


def test_a_city_gets_the_tool_whose_words_fit_the_question() -> None:
    tools = (WEATHER, FORECAST, ROUTE)
    assert calls(ask(UserMessage(content="Weather in Paris?"), tools=tools)) == [
        ("get_weather", {"city": "Paris"})
    ]
    assert calls(ask(UserMessage(content="Forecast for New York?"), tools=tools)) == [
        ("forecast", {"city": "New York"})
    ]


def test_a_tool_it_cannot_fill_is_never_called() -> None:
    reply = ask(UserMessage(content="Weather in Oslo?"), tools=(ROUTE,))
    assert calls(reply) == []
    assert text(reply) == "I have no way to look up the weather in Oslo."


def test_a_follow_up_takes_the_conversations_city() -> None:
    history = (
        UserMessage(content="Weather in Rome?"),
        AssistantMessage(content="Sunny in Rome."),
        UserMessage(content="And tomorrow?"),
    )
    assert calls(ask(*history, tools=(WEATHER,))) == [("get_weather", {"city": "Rome"})]
    thanks = (*history[:2], UserMessage(content="Thanks!"))
    assert text(ask(*thanks, tools=(WEATHER,))) == "You are welcome."


def test_withheld_tools_get_an_answer() -> None:
    reply = ask(UserMessage(content="Weather in Lima?"), tools=(WEATHER,), tool_choice="none")
    assert calls(reply) == [] and "Lima" in text(reply)


def turn_with_result(result: str) -> tuple[Message, ...]:
    call = ToolCall(id="call_0", name="get_weather", arguments='{"city": "Oslo"}')
    return (
        UserMessage(content="Weather in Oslo?"),
        AssistantMessage(tool_calls=(call,)),
        ToolMessage(tool_call_id="call_0", content=result),
    )


def test_a_tool_result_is_quoted() -> None:
    reply = ask(*turn_with_result("Oslo: 12°C, light rain"), tools=(WEATHER,))
    assert text(reply) == "Here is what I found: Oslo: 12°C, light rain."


def test_a_json_schema_is_filled_from_the_city_and_the_results() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "celsius": {"type": "number"},
            "summary": {"type": "string"},
            "rain": {"type": "boolean"},
        },
    }
    response_format = {"type": "json_schema", "json_schema": {"name": "W", "schema": schema}}
    reply = ask(
        *turn_with_result("Oslo: 12°C, light rain"),
        tools=(WEATHER,),
        options={"response_format": response_format},
    )
    assert json.loads(text(reply)) == {
        "city": "Oslo",
        "celsius": 12.0,
        "summary": "Oslo: 12°C, light rain",
        "rain": True,
    }


def test_a_judges_request_passes() -> None:
    reply = ask(
        UserMessage(content="Question: ... Draft: ..."),
        options={"response_format": {"type": "json_object"}},
    )
    assert json.loads(text(reply)) == {"passed": True, "feedback": ""}


TRANSFER = ToolSpec(
    name="transfer_to_weather_desk",
    description="Hand the conversation over to weather_desk: answers questions about the weather.",
    parameters={"type": "object", "properties": {}, "additionalProperties": False},
)


def test_a_city_it_has_no_tool_for_is_handed_off_once_a_turn() -> None:
    question = UserMessage(content="Is it raining in Paris?")
    assert calls(ask(question, tools=(TRANSFER,))) == [("transfer_to_weather_desk", {})]
    assert calls(ask(question, tools=(WEATHER, TRANSFER))) == [("get_weather", {"city": "Paris"})]
    transfer = ToolCall(id="call_0", name="transfer_to_weather_desk", arguments="{}")
    handed = (
        question,
        AssistantMessage(tool_calls=(transfer,)),
        ToolMessage(tool_call_id="call_0", content="Transferred to weather_desk."),
    )
    # The agent the turn went to decides on the question, not on the transfer's result ...
    assert calls(ask(*handed, tools=(WEATHER,))) == [("get_weather", {"city": "Paris"})]
    # ... and never hands it on again.
    assert calls(ask(*handed, tools=(TRANSFER,))) == []


def test_an_input_type_question_in_json_names_its_city() -> None:
    reply = ask(UserMessage(content='{"city": "Lisbon"}'), tools=(WEATHER,))
    assert calls(reply) == [("get_weather", {"city": "Lisbon"})]


def test_every_reply_reports_its_usage() -> None:
    usages = [
        item.usage
        for reply in (
            ask(UserMessage(content="Weather in Paris?"), tools=(WEATHER,)),
            ask(*turn_with_result("Oslo: 12°C, light rain"), tools=(WEATHER,)),
        )
        for item in reply
        if isinstance(item, ChatChunk) and item.usage is not None
    ]
    assert len(usages) == 2
    assert all(u.prompt_tokens and u.completion_tokens for u in usages)
    assert all(u.total_tokens == u.prompt_tokens + u.completion_tokens for u in usages)  # type: ignore[operator]
