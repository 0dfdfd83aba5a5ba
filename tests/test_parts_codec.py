"""User messages made of parts in a chat-completions body, and back (``_parts_codec``)."""

from __future__ import annotations

import base64

import pytest

from rxreact import File, Image, InvalidArgumentError, Text
from rxreact.messages import AssistantMessage, ChatRequest, ToolCall, ToolMessage, UserMessage
from rxreact.model.openai.request_codec import decode_request, encode_request

PNG_BYTES = b"\x89PNG\r\n\x1a\nfake"
PNG = Image.from_bytes(PNG_BYTES, "image/png")
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG_BYTES).decode()
PDF = File.from_bytes(b"%PDF-1.4", "application/pdf", name="report.pdf")
PDF_URL = "data:application/pdf;base64," + base64.b64encode(b"%PDF-1.4").decode()


def body(*messages: object) -> dict[str, object]:
    request = ChatRequest(messages=messages)  # type: ignore[arg-type]
    return encode_request(request, model="m", stream=True)


def test_user_parts_are_text_image_url_and_file_parts() -> None:
    content = (Text(text="What are these?"), PNG, Image.from_url("https://x.test/c.jpg"), PDF)
    sent = body(UserMessage(content=content))["messages"]
    assert sent == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What are these?"},
                {"type": "image_url", "image_url": {"url": PNG_URL}},
                {"type": "image_url", "image_url": {"url": "https://x.test/c.jpg"}},
                {"type": "file", "file": {"filename": "report.pdf", "file_data": PDF_URL}},
            ],
        }
    ]


def test_a_file_without_a_name_gets_one_from_its_media_type() -> None:
    nameless = File.from_bytes(b"%PDF-1.4", "application/pdf")
    part = body(UserMessage(content=(nameless,)))["messages"][0]["content"][0]  # type: ignore[index]
    assert part["file"]["filename"] == "document.pdf"
    as_data_url = File.from_url(PDF_URL)  # a data: URL is bytes already
    part = body(UserMessage(content=(as_data_url,)))["messages"][0]["content"][0]  # type: ignore[index]
    assert part["file"] == {"filename": "document.pdf", "file_data": PDF_URL}


def test_a_file_by_url_is_refused_naming_it() -> None:
    linked = File.from_url("https://x.test/annual.pdf", name="annual.pdf")
    with pytest.raises(
        InvalidArgumentError,
        match=r"^\[file annual.pdf: https://x.test/annual.pdf\]: "
        r"a chat-completions model cannot take a file by URL",
    ):
        body(UserMessage(content=(Text(text="Read this"), linked)))


def test_parts_read_back_as_they_were_sent() -> None:
    request = ChatRequest(
        messages=(
            UserMessage(content=(Text(text="Look:"), PNG, Image.from_url("https://x.test/c.jpg"))),
            UserMessage(content=(PDF,)),
            UserMessage(content="plain"),
        )
    )
    assert decode_request(encode_request(request, model="m", stream=False)) == request


def test_decoding_is_tolerant() -> None:
    request = decode_request(
        {
            "messages": [
                # only text parts: one string, as before parts existed
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": "https://x.test/old-style.png"},
                        {"type": "file", "file": {"file_id": "file-123"}},
                        {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}},
                    ],
                },
            ]
        }
    )
    first, second = request.messages
    assert first == UserMessage(content="ab")
    assert second == UserMessage(
        content=(
            Image(url="https://x.test/old-style.png"),
            Text(text="[file file-123]"),
            Text(text="[input_audio content]"),
        )
    )


def test_a_tool_results_image_is_sent_after_the_round() -> None:
    calls = AssistantMessage(tool_calls=(ToolCall(id="c1", name="chart", arguments="{}"),))
    sent = body(
        UserMessage(content="Chart?"),
        calls,
        ToolMessage(tool_call_id="c1", name="chart", content=(Text(text="the chart"), PNG)),
    )["messages"]
    assert sent[2:] == [  # type: ignore[index]
        {"role": "tool", "tool_call_id": "c1", "content": "the chart\n[image attached below]"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Tool chart (call c1) returned:"},
                {"type": "image_url", "image_url": {"url": PNG_URL}},
            ],
        },
    ]
