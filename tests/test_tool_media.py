"""A tool result's images moved to a user message after the round (``rxreact.model.tool_media``)."""

from __future__ import annotations

from rxreact import File, Image, Text
from rxreact.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from rxreact.model.tool_media import tool_media_to_user_messages

PNG = Image.from_bytes(b"\x89PNG1", "image/png")
GIF = Image.from_url("https://x.test/b.gif")
PDF = File.from_bytes(b"%PDF", "application/pdf", name="r.pdf")
CALLS = AssistantMessage(
    tool_calls=(
        ToolCall(id="a", name="chart", arguments="{}"),
        ToolCall(id="b", name="weather", arguments="{}"),
        ToolCall(id="c", name="report", arguments="{}"),
    )
)


def test_text_only_messages_are_returned_as_they_are() -> None:
    messages: list[Message] = [
        UserMessage(content=(Text(text="look"), PNG)),  # a user's image stays where it is
        CALLS,
        ToolMessage(tool_call_id="a", content="x"),
    ]
    assert tool_media_to_user_messages(messages) is messages


def test_images_follow_the_round_in_one_user_message() -> None:
    messages: list[Message] = [
        UserMessage(content="q"),
        CALLS,
        ToolMessage(tool_call_id="a", name="chart", content=(Text(text="chart:"), PNG, GIF)),
        ToolMessage(tool_call_id="b", name="weather", content="sunny"),
        ToolMessage(tool_call_id="c", content=(PDF,)),
        AssistantMessage(content="Here."),
        UserMessage(content="next"),
    ]
    assert tool_media_to_user_messages(messages) == [
        messages[0],
        CALLS,
        ToolMessage(
            tool_call_id="a",
            name="chart",
            content="chart:\n[image attached below]\n[image attached below]",
        ),
        messages[3],
        ToolMessage(tool_call_id="c", content="[file attached below]"),
        UserMessage(
            content=(
                Text(text="Tool chart (call a) returned:"),
                PNG,
                GIF,
                Text(text="Tool the tool (call c) returned:"),
                PDF,
            )
        ),
        messages[5],
        messages[6],
    ]


def test_the_last_round_gets_its_user_message_at_the_end() -> None:
    messages: list[Message] = [
        CALLS,
        ToolMessage(tool_call_id="a", name="chart", content=(PNG,)),
        ToolMessage(tool_call_id="b", name="weather", content=(Text(text="only text"),)),
    ]
    assert tool_media_to_user_messages(messages) == [
        CALLS,
        ToolMessage(tool_call_id="a", name="chart", content="[image attached below]"),
        ToolMessage(tool_call_id="b", name="weather", content="only text"),
        UserMessage(content=(Text(text="Tool chart (call a) returned:"), PNG)),
    ]
