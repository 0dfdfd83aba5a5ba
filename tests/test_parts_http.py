"""Images and files end to end: questions, tool results and memory over real HTTP and SSE
against the loopback mock server, which refuses the parts the real API refuses."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import pytest

from rxreact import (
    File,
    Image,
    InMemoryChatMemory,
    InvalidArgumentError,
    ReactAgent,
    SQLiteChatMemory,
    Text,
    ToolResult,
    tool,
)
from rxreact.messages import MAX_PART_BYTES, ChatRequest, ToolMessage, UserMessage
from rxreact.model.scripted.replies import Reply, text_reply, tool_call_reply

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]

PNG_BYTES = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG_BYTES).decode()
IMAGE_PART = {"type": "image_url", "image_url": {"url": PNG_URL}}


@pytest.fixture
def png(tmp_path: Path) -> Path:
    path = tmp_path / "dot.png"
    path.write_bytes(PNG_BYTES)
    return path


def describes_images(request: ChatRequest) -> Reply:
    """Answers with how many images the last user message holds."""
    last = request.messages[-1]
    assert isinstance(last, UserMessage)
    images = (
        [p for p in last.content if isinstance(p, Image)]
        if not isinstance(last.content, str)
        else []
    )
    return text_reply(f"{last.text} I see {len(images)} image(s).", pieces=3)


def test_every_way_to_run_sends_the_image(serve_model: Any, png: Path) -> None:
    server, model = serve_model(describes_images)
    agent = ReactAgent(model)
    question = ["What is in this picture?", Image.from_path(png)]
    expected = "What is in this picture? I see 1 image(s)."

    async def in_asyncio() -> list[str]:
        answers = [(await agent.arun(question)).answer, await agent.acall(question)]
        events = [e async for e in agent.astream(question)]
        answers.append(events[-1].text)
        return answers

    answers = [
        agent.run(question).answer,
        agent.call(question),
        "".join(agent.iter_text(question)),
        [e for e in agent.iter(question)][-1].text,
        agent.start(question).result(timeout=10).answer,
        *asyncio.run(in_asyncio()),
    ]
    assert answers == [expected] * 8
    for body in server.requests:
        assert body["messages"] == [
            {
                "role": "user",
                "content": [{"type": "text", "text": "What is in this picture?"}, IMAGE_PART],
            }
        ]


def test_a_file_goes_as_a_file_part(serve_model: Any, tmp_path: Path) -> None:
    server, model = serve_model([text_reply("A short report.")])
    report = tmp_path / "report.pdf"
    report.write_bytes(b"%PDF-1.4 a short report")
    result = ReactAgent(model).run(["Summarise it.", File.from_path(report)])
    assert result.answer == "A short report."
    file_part = server.requests[0]["messages"][0]["content"][1]
    assert file_part == {
        "type": "file",
        "file": {
            "filename": "report.pdf",
            "file_data": "data:application/pdf;base64,"
            + base64.b64encode(b"%PDF-1.4 a short report").decode(),
        },
    }


def test_a_tools_image_follows_its_result_in_a_user_message(serve_model: Any, png: Path) -> None:
    @tool
    def weather_map(city: str) -> list[Any]:
        """A weather map of a city."""
        return [f"The map of {city}:", Image.from_path(png)]

    server, model = serve_model(
        [tool_call_reply(("weather_map", {"city": "Oslo"})), text_reply("Rain in the west.")]
    )
    events = list(ReactAgent(model, [weather_map]).iter("Map of Oslo?"))
    assert events[-1].text == "Rain in the west."

    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.content == "The map of Oslo:\n[image: image/png, 70 bytes]"
    assert result.parts == (Text(text="The map of Oslo:"), Image.from_path(png))
    messages = server.requests[1]["messages"]
    call_id = messages[1]["tool_calls"][0]["id"]
    assert messages[2:] == [
        {
            "role": "tool",
            "tool_call_id": call_id,
            "content": "The map of Oslo:\n[image attached below]",
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"Tool weather_map (call {call_id}) returned:"},
                IMAGE_PART,
            ],
        },
    ]


@pytest.mark.parametrize("backend", ["in_memory", "sqlite"])
def test_memory_keeps_the_parts_for_the_next_turn(
    serve_model: Any, png: Path, tmp_path: Path, backend: str
) -> None:
    @tool
    def snapshot() -> Image:
        """A picture of the sky now."""
        return Image.from_path(png)

    server, model = serve_model(
        [tool_call_reply(("snapshot", {})), text_reply("Clear."), text_reply("Still clear.")]
    )
    memory = InMemoryChatMemory() if backend == "in_memory" else SQLiteChatMemory(tmp_path / "m.db")
    agent = ReactAgent(model, [snapshot], memory=memory)
    agent.run(["Is this sky clear?", Image.from_path(png)], conversation_id="sky")
    agent.run("And now?", conversation_id="sky")

    stored = memory.load("sky")
    assert stored[0] == UserMessage(content=(Text(text="Is this sky clear?"), Image.from_path(png)))
    assert isinstance(stored[2], ToolMessage) and stored[2].content == (Image.from_path(png),)
    third = server.requests[2]["messages"]  # the second turn, with the first from memory
    assert third[0]["content"][1] == IMAGE_PART
    assert third[2]["content"] == "[image attached below]"
    assert third[3]["role"] == "user" and third[3]["content"][1] == IMAGE_PART
    assert third[-1] == {"role": "user", "content": "And now?"}
    if isinstance(memory, SQLiteChatMemory):
        memory.close()


def test_bad_parts_fail_before_any_request(serve_model: Any, tmp_path: Path) -> None:
    server, model = serve_model([text_reply("never")])
    agent = ReactAgent(model)
    with pytest.raises(InvalidArgumentError, match=r"cannot read .*missing.png"):
        agent.run(["What is this?", Image.from_path(tmp_path / "missing.png")])
    huge = tmp_path / "huge.png"
    with huge.open("wb") as file:
        file.truncate(25 * 1024 * 1024)  # sparse: 25 MB on paper, nothing written
    with pytest.raises(InvalidArgumentError, match=rf"is 26,214,400 bytes.*{MAX_PART_BYTES:,}"):
        Image.from_path(huge)
    with pytest.raises(InvalidArgumentError, match=r"question\[1\] must be a str, Text, Image"):
        agent.run(["What is this?", huge])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError, match="empty sequence"):
        agent.run([])
    linked = File.from_url("https://x.test/report.pdf", name="report.pdf")
    with pytest.raises(
        InvalidArgumentError, match=r"\[file report.pdf: .*cannot take a file by URL"
    ):
        agent.run(["Read this.", linked])
    assert server.requests == []
