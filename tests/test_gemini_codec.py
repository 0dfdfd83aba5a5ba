"""Gemini's native wire format, as pure functions: the request body our messages become (and
that the mock, as strict as Gemini, takes), and the chunks a recorded-shape stream gives,
fed whole or in random pieces."""

from __future__ import annotations

import json
import random

import pytest

from rxreact.errors import (
    ContentBlockedError,
    InvalidArgumentError,
    ModelError,
    ProviderStreamError,
    StreamInterruptedError,
)
from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    Image,
    ReplayItem,
    SystemMessage,
    Text,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
    content_text,
)
from rxreact.model.assembly import assemble
from rxreact.model.chunks import ChatChunk
from rxreact.model.gemini.request_codec import PROVIDER, SKIP_SIGNATURE, encode_request
from rxreact.model.gemini.wire import GeminiStreamParser, parse_response
from rxreact.model.http.sse import SSEDecoder
from rxreact.testing._gemini_request import decode_request, request_problem
from rxreact.testing._gemini_signatures import sign_call

TOOL = ToolSpec(
    name="get_weather",
    description="Weather.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
SIGNED = sign_call("get_weather", {"city": "Oslo"})


def signed_call(position: int, name: str, signature: str | None, call_id: str | None = None):  # type: ignore[no-untyped-def]
    data = {"type": "function_call", "position": position, "name": name, "id": call_id}
    if signature is not None:
        data["thoughtSignature"] = signature
    return ReplayItem(provider=PROVIDER, data=data)


def test_the_history_as_alternating_contents_with_signatures_where_they_came() -> None:
    oslo = ToolCall(id="call_r1_0", name="get_weather", arguments='{"city": "Oslo"}')
    rome = ToolCall(id="fc_7", name="get_weather", arguments='{"city": "Rome"}')
    said = AssistantMessage(
        content="Checking.",
        tool_calls=(oslo, rome),
        replay=(signed_call(0, "get_weather", SIGNED), signed_call(1, "get_weather", None, "fc_7")),
    )
    request = ChatRequest(
        messages=(
            SystemMessage(content="Be brief."),
            UserMessage(content="Oslo and Rome?"),
            said,
            ToolMessage(tool_call_id="call_r1_0", content="Oslo: sunny"),
            ToolMessage(tool_call_id="fc_7", content="no such city", is_error=True),
            UserMessage(content="Answer now."),  # the forced round's instruction
        ),
        tools=(TOOL,),
        tool_choice="none",
    )
    body = encode_request(request)
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Oslo and Rome?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Checking."},
                {
                    "functionCall": {"name": "get_weather", "args": {"city": "Oslo"}},
                    "thoughtSignature": SIGNED,
                },
                # Gemini's own id goes back; ours (call_r1_0) never does.
                {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}, "id": "fc_7"}},
            ],
        },
        {
            "role": "user",  # one content: the responses and the instruction after them
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"result": "Oslo: sunny"},
                    }
                },
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"error": "no such city"},
                        "id": "fc_7",
                    }
                },
                {"text": "Answer now."},
            ],
        },
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}
    (declaration,) = body["tools"][0]["functionDeclarations"]
    assert declaration["parameters"] == {
        "type": "OBJECT",
        "properties": {"city": {"type": "STRING"}, "days": {"type": "INTEGER", "nullable": True}},
        "required": ["city"],
    }
    assert request_problem(body) is None  # the mock, as strict as Gemini, takes it


def test_calls_another_model_made_get_the_placeholder_in_the_current_turn_only() -> None:
    def step(n: int) -> tuple[AssistantMessage, ToolMessage]:
        call = ToolCall(id=f"c{n}", name="get_weather", arguments="{}")
        return AssistantMessage(tool_calls=(call,)), ToolMessage(tool_call_id=f"c{n}", content="ok")

    earlier, current = step(1), step(2)
    request = ChatRequest(
        messages=(
            UserMessage(content="first"),
            *earlier,
            AssistantMessage(content="Done."),
            UserMessage(content="second"),
            *current,
        )
    )
    contents = encode_request(request)["contents"]
    assert "thoughtSignature" not in contents[1]["parts"][0]  # a turn Gemini does not check
    assert contents[5]["parts"][0]["thoughtSignature"] == SKIP_SIGNATURE
    assert request_problem({"contents": contents}) is None
    contents[5]["parts"][0].pop("thoughtSignature")
    assert "missing a thought_signature" in (request_problem({"contents": contents}) or "")


def test_another_provider_s_replay_items_stay_out() -> None:
    call = ToolCall(id="c1", name="get_weather", arguments="{}")
    thinking = ReplayItem(provider="anthropic", data={"type": "thinking", "signature": "x"})
    request = ChatRequest(
        messages=(
            UserMessage(content="hi"),
            AssistantMessage(tool_calls=(call,), replay=(thinking,)),
            ToolMessage(tool_call_id="c1", content="ok"),
        )
    )
    part = encode_request(request)["contents"][1]["parts"][0]
    assert part == {
        "functionCall": {"name": "get_weather", "args": {}},
        "thoughtSignature": SKIP_SIGNATURE,
    }


def test_options_thinking_and_structured_output_go_where_gemini_reads_them() -> None:
    request = ChatRequest(
        messages=(UserMessage(content="hi"),),
        options={
            "max_tokens": 100,
            "stop": "END",
            "top_k": 3,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"schema": {"type": "object"}},
            },
            "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        },
    )
    body = encode_request(
        request, thinking={"includeThoughts": True}, default_options={"temperature": 0}
    )
    assert body["generationConfig"] == {
        "thinkingConfig": {"includeThoughts": True},
        "temperature": 0,
        "maxOutputTokens": 100,
        "stopSequences": ["END"],
        "topK": 3,
        "responseMimeType": "application/json",
        "responseJsonSchema": {"type": "object"},
    }
    assert body["safetySettings"][0]["threshold"] == "BLOCK_NONE"
    assert "toolConfig" not in body and "tools" not in body
    assert request_problem(body) is None


@pytest.mark.parametrize("model", ["gemini-3-flash", "gemini-2.5-flash", ""])
def test_images_go_inline_also_from_a_tool_result(model: str) -> None:
    png = Image.from_bytes(b"\x89PNG....", "image/png")
    call = ToolCall(id="c1", name="chart", arguments="{}")
    request = ChatRequest(
        messages=(
            UserMessage(
                content=(Text(text="What is this?"), png, Image.from_url("https://x/y.jpg"))
            ),
            AssistantMessage(tool_calls=(call,)),
            ToolMessage(tool_call_id="c1", content=(Text(text="a chart"), png)),
        )
    )
    body = encode_request(request, model=model)
    contents = body["contents"]
    inline = {"inlineData": {"mimeType": "image/png", "data": png.data_base64}}
    assert contents[0]["parts"] == [
        {"text": "What is this?"},
        inline,
        {"fileData": {"fileUri": "https://x/y.jpg"}},
    ]
    answer = {"name": "chart", "response": {"result": "a chart"}}
    if model.startswith("gemini-3"):  # Gemini 3 reads media inside the function response
        assert contents[2]["parts"] == [{"functionResponse": {**answer, "parts": [inline]}}]
    else:  # earlier models have no such field: the media follow it
        assert contents[2]["parts"] == [{"functionResponse": answer}, inline]
    assert request_problem(body) is None
    decoded = decode_request(body).messages  # the mock reads either back to the same parts
    tool_result = decoded[2]
    assert isinstance(tool_result, ToolMessage) and content_text(tool_result.content) == "a chart"
    media = tool_result.content[1:] if model.startswith("gemini-3") else decoded[3].content
    assert media == (png,)


def test_a_schema_gemini_cannot_take_is_an_error_naming_the_tool() -> None:
    spec = ToolSpec(
        name="tree",
        description="A recursive tree.",
        parameters={
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {
                "Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}
            },
        },
    )
    with pytest.raises(InvalidArgumentError, match=r"tool 'tree'.*recursive"):
        encode_request(ChatRequest(messages=(UserMessage(content="hi"),), tools=(spec,)))
    spec = spec.model_copy(update={"parameters": {"type": "object", "not": {"type": "string"}}})
    with pytest.raises(InvalidArgumentError, match=r"tool 'tree'.*'not'"):
        encode_request(ChatRequest(messages=(UserMessage(content="hi"),), tools=(spec,)))


def test_decode_reads_an_encoded_request_back() -> None:
    call = ToolCall(id="c1", name="get_weather", arguments='{"city": "Oslo"}')
    request = ChatRequest(
        messages=(
            UserMessage(content="Oslo?"),
            AssistantMessage(tool_calls=(call,)),
            ToolMessage(tool_call_id="c1", content="sunny"),
        ),
        tools=(TOOL,),
        tool_choice="required",
    )
    decoded = decode_request(encode_request(request))
    assert [type(m).__name__ for m in decoded.messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
    ]
    assistant, result = decoded.messages[1], decoded.messages[2]
    assert isinstance(assistant, AssistantMessage) and isinstance(result, ToolMessage)
    assert result.tool_call_id == assistant.tool_calls[0].id
    assert decoded.tool_choice == "required"
    assert decoded.tools[0].parameters["properties"]["city"] == {"type": "string"}


def event(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\r\n\r\n"


RECORDED = b"".join(
    [
        event(
            {
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [{"text": "**Weighing the options**\n", "thought": True}],
                        },
                        "index": 0,
                    }
                ],
                "usageMetadata": {"promptTokenCount": 40, "totalTokenCount": 40},
                "modelVersion": "gemini-3-flash",
                "responseId": "r1",
            }
        ),
        event(
            {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": "Let me check "}]},
                        "index": 0,
                    }
                ],
                "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 3},
                "modelVersion": "gemini-3-flash",
            }
        ),
        event(
            {
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [
                                {"text": "Oslo 🌧."},
                                {
                                    "functionCall": {
                                        "name": "get_weather",
                                        "args": {"city": "Oslo"},
                                    },
                                    "thoughtSignature": "CiIBjz1rX5",
                                },
                                {
                                    "functionCall": {
                                        "name": "get_weather",
                                        "args": {"city": "Bergen"},
                                    }
                                },
                            ],
                        },
                        "finishReason": "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": 40,
                    "candidatesTokenCount": 20,
                    "totalTokenCount": 95,
                    "thoughtsTokenCount": 35,
                    "cachedContentTokenCount": 32,
                },
                "modelVersion": "gemini-3-flash",
            }
        ),
    ]
)


def chunks_of(data: bytes, pieces: list[bytes] | None = None) -> list[ChatChunk]:
    decoder, parser = SSEDecoder(), GeminiStreamParser()
    events = [e for piece in pieces or [data] for e in decoder.feed(piece)] + decoder.close()
    found = [parser.parse(e.data, e.event) for e in events]
    return [c for c in found if c is not None]


def test_a_recorded_stream_gives_the_same_chunks_in_any_pieces() -> None:
    whole = chunks_of(RECORDED)
    rng = random.Random(7)
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(RECORDED)), 12))
        pieces = [RECORDED[a:b] for a, b in zip([0, *cuts], [*cuts, len(RECORDED)], strict=True)]
        assert chunks_of(RECORDED, pieces) == whole
    response = assemble(whole)
    assert response.reasoning == "**Weighing the options**\n"
    assert response.content == "Let me check Oslo 🌧."
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("get_weather", '{"city": "Oslo"}'),
        ("get_weather", '{"city": "Bergen"}'),
    ]
    assert response.tool_calls[0].id != response.tool_calls[1].id  # made, stable, distinct
    assert (response.finish_reason, response.provider_finish_reason) == ("tool_calls", "STOP")
    usage = response.usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (40, 55, 95)
    assert usage.model_dump()["completion_tokens_details"] == {"reasoning_tokens": 35}
    assert usage.model_dump()["prompt_tokens_details"] == {"cached_tokens": 32}
    assert [r.data.get("thoughtSignature") for r in response.replay] == ["CiIBjz1rX5", None]
    assert sum(1 for c in whole if c.usage is not None) == 1  # once, with the finish reason


def test_a_whole_response_reads_as_the_stream_does() -> None:
    last = json.loads(RECORDED.rsplit(b"data: ", 1)[1])
    response = parse_response(json.dumps(last).encode())
    assert response.tool_calls[0].name == "get_weather"
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize("reason", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT"])
def test_a_blocked_answer_is_a_content_blocked_error_not_retried(reason: str) -> None:
    data = {"candidates": [{"finishReason": reason, "index": 0, "safetyRatings": []}]}
    with pytest.raises(ContentBlockedError) as caught:
        GeminiStreamParser().parse(json.dumps(data), None)
    assert (caught.value.reason, caught.value.blocked) == (reason, "answer")
    assert isinstance(caught.value, ModelError) and not caught.value.retryable


def test_a_blocked_prompt_is_a_content_blocked_error() -> None:
    data = {"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []}}
    with pytest.raises(ContentBlockedError) as caught:
        GeminiStreamParser().parse(json.dumps(data), None)
    assert (caught.value.reason, caught.value.blocked) == ("SAFETY", "prompt")


def test_finish_reasons_map_to_ours() -> None:
    def finish(reason: str) -> str | None:
        data = {"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": reason}]}
        chunk = GeminiStreamParser().parse(json.dumps(data), None)
        return None if chunk is None else chunk.finish_reason

    assert (finish("STOP"), finish("MAX_TOKENS"), finish("OTHER")) == ("stop", "length", "stop")
    with pytest.raises(ProviderStreamError, match="MALFORMED_FUNCTION_CALL"):
        finish("MALFORMED_FUNCTION_CALL")


def test_an_error_event_is_retryable_when_google_says_unavailable() -> None:
    def error(status: str) -> ProviderStreamError:
        body = {"error": {"code": 503, "message": "The model is overloaded.", "status": status}}
        with pytest.raises(ProviderStreamError) as caught:
            GeminiStreamParser().parse(json.dumps(body), None)
        return caught.value

    assert error("UNAVAILABLE").retryable and error("UNAVAILABLE").error_type == "UNAVAILABLE"
    assert not error("INVALID_ARGUMENT").retryable


def test_a_body_that_ends_before_a_finish_reason_was_cut() -> None:
    with pytest.raises(StreamInterruptedError):
        GeminiStreamParser().end(saw_finish_reason=False)
    GeminiStreamParser().end(saw_finish_reason=True)


def test_the_forced_round_keeps_its_turn_for_the_placeholder() -> None:
    call = ToolCall(id="c1", name="get_weather", arguments="{}")
    request = ChatRequest(
        messages=(
            UserMessage(content="Oslo?"),
            AssistantMessage(tool_calls=(call,)),
            ToolMessage(tool_call_id="c1", content="sunny"),
            UserMessage(content="Answer now."),  # shares the results' content
        )
    )
    part = encode_request(request)["contents"][1]["parts"][0]
    assert part["thoughtSignature"] == SKIP_SIGNATURE


def test_the_mock_pairs_responses_with_calls_by_name_and_id() -> None:
    call = {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}, "id": "a"}}]}

    def answer(**fields: str) -> dict[str, object]:
        response = {"name": "f", "response": {"result": "ok"}, **fields}
        return {"role": "user", "parts": [{"functionResponse": response}]}

    first = {"role": "user", "parts": [{"text": "hi"}]}
    signed = json.loads(json.dumps(call))
    signed["parts"][0]["thoughtSignature"] = SKIP_SIGNATURE
    assert request_problem({"contents": [first, signed, answer(id="a")]}) is None
    assert "matches no function call id" in str(
        request_problem({"contents": [first, signed, answer(id="b")]})
    )
    assert "function response turn" in str(request_problem({"contents": [first, signed]}))
    assert "alternate" in str(request_problem({"contents": [first, first]}))
