"""Images and files reach a served agent on every protocol, sent by each protocol's official
client (the ``ai`` package's transport, the ``openai`` SDK, ``@ag-ui/client``, ``a2a-sdk``),
and the model's request (recorded by the loopback mock) carries them; what cannot be carried
is a 400 naming the part, and nothing reaches the model."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_helpers import require_executable, serving, unavailable

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent
from rxreact.model.scripted.replies import text_reply
from rxreact.serve import create_app
from rxreact.testing import MockOpenAIServer

CLIENT_DIR = Path(__file__).parent / "ui_client"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
)
PNG_TYPE = "image/png"
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()
PDF = b"%PDF-1.4\n% a tiny document\n"
PDF_URL = "data:application/pdf;base64," + base64.b64encode(PDF).decode()


class Server:
    def __init__(self, url: str, mock: MockOpenAIServer) -> None:
        self.url, self.mock = url, mock
        self._seen = 0

    def new_requests(self) -> list[dict[str, Any]]:
        """The model requests since the last call."""
        requests = self.mock.requests[self._seen :]
        self._seen = len(self.mock.requests)
        return requests

    def asked(self) -> Any:
        """The last user message's content of the one model request since the last call."""
        (request,) = self.new_requests()
        return request["messages"][-1]["content"]


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    mock = MockOpenAIServer(lambda request: text_reply("I see it.")).start()
    model = OpenAIChatModel("mock", base_url=mock.base_url, api_key="sk-test")
    agent = ReactAgent(model, [], memory=InMemoryChatMemory())
    try:
        with serving(create_app(agent)) as url:
            yield Server(url, mock)
    finally:
        mock.stop()
        model.close()


@pytest.fixture(scope="module")
def node() -> str:
    path = require_executable("node")
    if not (CLIENT_DIR / "node_modules" / "ai").is_dir():
        unavailable("tests/ui_client has no node_modules (run `npm ci` there)")
    return path


def node_client(node: str, script: str, *args: str) -> list[Any]:
    done = subprocess.run(
        [node, str(CLIENT_DIR / script), *args],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def image_url(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


# -- the AI SDK (the chat page's protocol) ------------------------------------------------------


def test_ai_sdk_file_parts_reach_the_model(node: str, server: Server) -> None:
    files = [
        {"type": "file", "mediaType": "image/png", "filename": "dot.png", "url": PNG_URL},
        {"type": "file", "mediaType": "application/pdf", "filename": "a.pdf", "url": PDF_URL},
    ]
    (result,) = node_client(
        node, "read_stream.mjs", f"{server.url}/api/chat", "send", "ai-1", "What is this?", "",
        json.dumps(files),
    )  # fmt: skip
    assert result["errors"] == [] and result["message"]["parts"][-1]["text"] == "I see it."
    assert server.asked() == [
        {"type": "text", "text": "What is this?"},
        image_url(PNG_URL),
        {"type": "file", "file": {"filename": "a.pdf", "file_data": PDF_URL}},
    ]


def test_ai_sdk_an_image_alone_is_a_question(node: str, server: Server) -> None:
    files = [{"type": "file", "mediaType": "image/png", "url": PNG_URL}]
    (result,) = node_client(
        node, "read_stream.mjs", f"{server.url}/api/chat", "send", "ai-2", "", "", json.dumps(files)
    )
    assert result["errors"] == []
    assert server.asked() == [image_url(PNG_URL)]


@pytest.mark.parametrize(
    ("part", "says"),
    [
        ({"type": "file", "mediaType": "image/png", "url": "blob:http://x/1"}, "not 'blob:'"),
        ({"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,@@"}, "base64"),
        ({"type": "dynamic-tool", "toolName": "x"}, "'dynamic-tool' part"),
    ],
)
def test_ai_sdk_parts_that_cannot_be_carried_are_a_400(
    server: Server, part: dict[str, Any], says: str
) -> None:
    body = {"id": "ai-3", "messages": [{"id": "u", "role": "user", "parts": [part]}]}
    response = httpx.post(f"{server.url}/api/chat", json=body, timeout=30)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "unsupported_part" and says in response.json()["detail"]
    assert server.new_requests() == []


# -- OpenAI ------------------------------------------------------------------------------------


def test_openai_image_and_file_parts_reach_the_model(server: Server) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="none", max_retries=0)
    earlier = [{"type": "text", "text": "Keep this."}, image_url(PNG_URL)]
    content = [
        {"type": "text", "text": "And these?"},
        image_url("https://example.com/cat.jpg"),
        {"type": "file", "file": {"filename": "a.pdf", "file_data": PDF_URL}},
    ]
    reply = client.chat.completions.create(
        model="rxreact",
        messages=[
            {"role": "user", "content": earlier},
            {"role": "assistant", "content": "Kept."},
            {"role": "user", "content": content},
        ],
    )
    assert reply.choices[0].message.content == "I see it."
    (request,) = server.new_requests()
    users = [m["content"] for m in request["messages"] if m["role"] == "user"]
    assert users == [earlier, content]  # the stateless history keeps its image too

    only = client.chat.completions.create(
        model="rxreact", messages=[{"role": "user", "content": [image_url(PNG_URL)]}]
    )
    assert only.choices[0].message.content == "I see it."
    assert server.asked() == [image_url(PNG_URL)]


@pytest.mark.parametrize(
    ("part", "says"),
    [
        ({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}, "input_audio"),
        ({"type": "file", "file": {"file_id": "file-123"}}, "file_id"),
        (image_url("ftp://example.com/a.png"), "not 'ftp:'"),
    ],
)
def test_openai_parts_that_cannot_be_carried_are_a_400(
    server: Server, part: dict[str, Any], says: str
) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="none", max_retries=0)
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model="rxreact", messages=[{"role": "user", "content": [part]}]
        )
    assert says in str(refused.value)
    assert server.new_requests() == []


# -- AG-UI -------------------------------------------------------------------------------------


def test_ag_ui_image_and_document_parts_reach_the_model(node: str, server: Server) -> None:
    if not (CLIENT_DIR / "node_modules" / "@ag-ui" / "client").is_dir():
        unavailable("tests/ui_client has no @ag-ui/client (run `npm ci` there)")
    content = [
        {"type": "text", "text": "Look."},
        {"type": "image", "source": {"type": "data", "value": PNG_URL[22:], "mimeType": PNG_TYPE}},
        {"type": "image", "source": {"type": "url", "value": "https://example.com/cat.jpg"}},
        {
            "type": "document",
            "source": {"type": "data", "value": PDF_URL[28:], "mimeType": "application/pdf"},
        },
    ]
    options = json.dumps({"content": content})
    runs = node_client(node, "ag_ui_agent.mjs", f"{server.url}/ag-ui", "agui-1", "", options)
    assert runs[0]["error"] is None and runs[0]["outcome"]["outcome"] == "success"
    sent = server.asked()
    assert sent[:3] == [
        {"type": "text", "text": "Look."},
        image_url(PNG_URL),
        image_url("https://example.com/cat.jpg"),
    ]
    assert sent[3]["type"] == "file" and sent[3]["file"]["file_data"] == PDF_URL


def test_ag_ui_audio_is_a_400(server: Server) -> None:
    pytest.importorskip("ag_ui")
    audio = {"type": "audio", "source": {"type": "data", "value": "AAAA", "mimeType": "audio/wav"}}
    body = {
        "threadId": "agui-2", "runId": "r", "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "messages": [{"id": "u", "role": "user", "content": [audio]}],
    }  # fmt: skip
    response = httpx.post(f"{server.url}/ag-ui", json=body, timeout=30)
    assert response.status_code == 400 and "'audio' part" in response.json()["detail"]
    assert server.new_requests() == []


# -- A2A ---------------------------------------------------------------------------------------


def test_a2a_raw_and_url_parts_reach_the_model(server: Server) -> None:
    pytest.importorskip("a2a")
    from a2a.client import ClientConfig, create_client
    from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest

    parts = [
        Part(text="Both?"),
        Part(raw=PNG, media_type="image/png", filename="dot.png"),
        Part(url="https://example.com/cat.jpg", media_type="image/jpeg"),
        Part(raw=PDF, media_type="application/pdf", filename="a.pdf"),
    ]

    async def send() -> Any:
        async with httpx.AsyncClient(timeout=30) as http:
            config = ClientConfig(streaming=False, httpx_client=http)
            async with await create_client(server.url, config) as client:
                message = Message(role=Role.ROLE_USER, message_id="m-1", parts=parts)
                return [r async for r in client.send_message(SendMessageRequest(message=message))]

    (response,) = asyncio.run(send())
    assert response.task.artifacts[0].parts[0].text == "I see it."
    assert server.asked() == [
        {"type": "text", "text": "Both?"},
        image_url(PNG_URL),
        image_url("https://example.com/cat.jpg"),
        {"type": "file", "file": {"filename": "a.pdf", "file_data": PDF_URL}},
    ]


def test_a2a_0_3_file_parts_reach_the_model(server: Server) -> None:
    pytest.importorskip("a2a")
    png = {"bytes": base64.b64encode(PNG).decode(), "mimeType": "image/png", "name": "dot.png"}
    parts = [
        {"kind": "text", "text": "See?"},
        {"kind": "file", "file": png},
        {"kind": "file", "file": {"uri": "https://example.com/c.jpg", "mimeType": "image/jpeg"}},
    ]
    message = {"role": "user", "messageId": "m", "kind": "message", "parts": parts}
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    answered = httpx.post(f"{server.url}/a2a", json=body, timeout=30).json()
    assert answered["result"]["status"]["state"] == "completed"
    assert server.asked() == [
        {"type": "text", "text": "See?"},
        image_url(PNG_URL),
        image_url("https://example.com/c.jpg"),
    ]
