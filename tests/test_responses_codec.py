"""The body of ``POST /responses`` (responses_codec), read back by the mock server's decoder."""

from __future__ import annotations

import pytest

from rxreact.errors import InvalidArgumentError
from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    File,
    Image,
    ReplayItem,
    SystemMessage,
    Text,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from rxreact.model.openai.responses_codec import encode_request, text_format
from rxreact.model.openai.responses_wire import PROVIDER
from rxreact.testing._responses_request import decode_request, request_problem, seal

TOOL = ToolSpec(name="get_weather", description="Weather.", parameters={"type": "object"})
REASONING = ReplayItem(
    provider=PROVIDER,
    data={"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": seal("rs_1", "")},
)
HISTORY = (
    SystemMessage(content="Be brief."),
    SystemMessage(content="Use metric units."),
    UserMessage(content="Weather in Oslo?"),
    AssistantMessage(
        content="Checking.",
        tool_calls=(ToolCall(id="call_1", name="get_weather", arguments='{"city":"Oslo"}'),),
        reasoning="I should look it up.",
        replay=(REASONING, ReplayItem(provider="anthropic", data={"type": "thinking"})),
    ),
    ToolMessage(tool_call_id="call_1", content="sunny"),
    SystemMessage(content="Answer now."),
)


def body(request: ChatRequest, **kwargs: object) -> dict[str, object]:
    return encode_request(request, model="m", stream=True, **kwargs)  # type: ignore[arg-type]


def test_the_history_as_instructions_and_input_items() -> None:
    sent = body(ChatRequest(messages=HISTORY, tools=(TOOL,), tool_choice="none"))
    assert sent["instructions"] == "Be brief.\n\nUse metric units."
    assert sent["input"] == [
        {"type": "message", "role": "user", "content": "Weather in Oslo?"},
        REASONING.data,  # unchanged, before what it led to; the other provider's item dropped
        {"type": "message", "role": "assistant", "content": "Checking."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Oslo"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {"type": "message", "role": "system", "content": "Answer now."},
    ]
    assert sent["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather.",
            "parameters": {"type": "object"},
            "strict": False,
        }
    ]
    assert (sent["tool_choice"], sent["store"], sent["stream"]) == ("none", False, True)
    assert sent["include"] == ["reasoning.encrypted_content"]
    assert request_problem(sent) is None  # the mock server, as strict as the API, takes it


def test_the_phase_of_the_text_goes_back_with_it() -> None:
    phase = ReplayItem(provider=PROVIDER, data={"type": "message", "phase": "commentary"})
    call = ToolCall(id="call_1", name="get_weather", arguments="{}")
    said = AssistantMessage(content="Checking.", tool_calls=(call,), replay=(REASONING, phase))
    answer = ToolMessage(tool_call_id="call_1", content="sunny")
    items = body(ChatRequest(messages=(UserMessage(content="hi"), said, answer)))["input"]
    assert isinstance(items, list)
    assert items[1:3] == [
        REASONING.data,
        {"type": "message", "role": "assistant", "content": "Checking.", "phase": "commentary"},
    ]


def test_reasoning_and_store_pass_through() -> None:
    request = ChatRequest(messages=(UserMessage(content="hi"),))
    sent = body(request, reasoning={"effort": "low", "summary": "auto"}, store=True)
    assert sent["reasoning"] == {"effort": "low", "summary": "auto"}
    assert sent["store"] is True and "include" not in sent
    assert "instructions" not in body(request) and "reasoning" not in body(request)


def test_options_merge_and_tool_only_keys_go_without_tools() -> None:
    request = ChatRequest(messages=(UserMessage(content="hi"),), options={"temperature": 0.5})
    sent = body(
        request,
        default_options={"temperature": 1, "tool_choice": "required", "max_output_tokens": 9},
    )
    assert (sent["temperature"], sent["max_output_tokens"]) == (0.5, 9)
    included = body(request, default_options={"include": ["message.output_text.logprobs"]})
    assert included["include"] == ["message.output_text.logprobs", "reasoning.encrypted_content"]
    assert "tool_choice" not in sent
    forced = ChatRequest(
        messages=(UserMessage(content="hi"),),
        tools=(TOOL,),
        tool_choice="none",
        options={"tool_choice": "auto"},
    )
    assert body(forced)["tool_choice"] == "none"


def test_response_format_becomes_text_format() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    typed = {
        "type": "json_schema",
        "json_schema": {"name": "Out", "schema": schema, "strict": True},
    }
    assert text_format(typed) == {
        "type": "json_schema",
        "name": "Out",
        "schema": schema,
        "strict": True,
    }
    request = ChatRequest(
        messages=(UserMessage(content="hi"),), options={"response_format": {"type": "json_object"}}
    )
    sent = body(request, default_options={"text": {"verbosity": "low"}})
    assert "response_format" not in sent
    assert sent["text"] == {"verbosity": "low", "format": {"type": "json_object"}}


def test_parts_are_input_text_image_and_file() -> None:
    png = Image.from_bytes(b"\x89PNG", "image/png")
    pdf = File.from_bytes(b"%PDF", "application/pdf", name="a.pdf")
    user = UserMessage(
        content=(
            Text(text="Look:"),
            png,
            Image.from_url("https://x/cat.jpg"),
            pdf,
            File.from_url("https://x/b.pdf"),
        )
    )
    result = ToolMessage(tool_call_id="call_1", content=(Text(text="chart"), png))
    call = AssistantMessage(tool_calls=(ToolCall(id="call_1", name="plot", arguments="{}"),))
    items = body(ChatRequest(messages=(user, call, result)))["input"]
    assert isinstance(items, list)
    assert items[0]["content"] == [
        {"type": "input_text", "text": "Look:"},
        {
            "type": "input_image",
            "image_url": f"data:image/png;base64,{png.data_base64}",
            "detail": "auto",
        },
        {"type": "input_image", "image_url": "https://x/cat.jpg", "detail": "auto"},
        {
            "type": "input_file",
            "file_data": f"data:application/pdf;base64,{pdf.data_base64}",
            "filename": "a.pdf",
        },
        {"type": "input_file", "file_url": "https://x/b.pdf"},
    ]
    assert items[2]["output"] == [
        {"type": "input_text", "text": "chart"},
        {
            "type": "input_image",
            "image_url": f"data:image/png;base64,{png.data_base64}",
            "detail": "auto",
        },
    ]
    decoded = decode_request({"model": "m", "input": items})
    assert isinstance(decoded.messages[0], UserMessage)
    assert [p.type for p in decoded.messages[0].content] == [
        "text",
        "image",
        "image",
        "file",
        "file",
    ]  # type: ignore[union-attr]


def test_an_image_type_the_api_cannot_read_is_refused_naming_it() -> None:
    svg = Image.from_bytes(b"<svg/>", "image/svg+xml")
    request = ChatRequest(messages=(UserMessage(content=(svg,)),))
    with pytest.raises(InvalidArgumentError, match="image/svg\\+xml"):
        body(request)


def test_decoding_gathers_an_assistant_turn_from_its_items() -> None:
    sent = body(ChatRequest(messages=HISTORY, tools=(TOOL,)))
    decoded = decode_request(sent)
    assistant = decoded.messages[2]
    assert isinstance(assistant, AssistantMessage)
    assert (assistant.content, [c.id for c in assistant.tool_calls]) == ("Checking.", ["call_1"])
    assert [r.data for r in assistant.replay] == [REASONING.data]
    assert [m.role for m in decoded.messages] == ["system", "user", "assistant", "tool", "system"]
    assert decoded.tools == (TOOL,)
