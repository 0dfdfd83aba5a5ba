"""The agent as an OpenAI model: /v1/chat/completions and /v1/models through the official
``openai`` SDK (streamed and not) and through rxreact's own OpenAIChatModel (an agent whose
model is another agent), plus the events -> chunks operator on its own."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import reactivex as rx
from serve_helpers import Gate, chat_servers

from rxreact import OpenAIChatModel, ReactAgent
from rxreact.errors import RunCancelledError
from rxreact.events import (
    FinalAnswer,
    ReasoningDelta,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStarted,
    ToolResult,
)
from rxreact.messages import Usage
from rxreact.model.scripted.replies import HTTPErrorReply, text_reply, tool_call_reply
from rxreact.runs import follow
from rxreact.serve.auth import TokenAuthenticator
from rxreact.serve.openai_compat import chat_completion, to_chat_completion_chunks

openai = pytest.importorskip("openai")

TOKEN = "alice-token-0123456789"
USERS = TokenAuthenticator({TOKEN: "alice"})
USAGE = Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15)


@pytest.fixture
def make_server() -> Iterator[Any]:
    with chat_servers() as start:
        yield start


def client_of(url: str, token: str = TOKEN) -> Any:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=token, max_retries=0)


def weather_script() -> list[Any]:
    return [
        tool_call_reply(("get_weather", {"city": "Paris"}), usage=USAGE),
        text_reply("Sunny in Paris.", pieces=3, usage=USAGE),
    ]


def test_sdk_non_streamed_answer_reasoning_usage(make_server: Any) -> None:
    url, _, app = make_server(weather_script(), authenticate=USERS)
    client = client_of(url)
    reply = client.chat.completions.create(
        model="rxreact", messages=[{"role": "user", "content": "Paris?"}]
    )
    choice = reply.choices[0]
    assert choice.message.content == "Sunny in Paris." and choice.message.role == "assistant"
    assert choice.finish_reason == "stop"
    reasoning = choice.message.model_extra["reasoning_content"]
    assert reasoning.startswith('→ get_weather({"city": "Paris"})\n')
    assert "← get_weather: Paris: sunny, 21°C" in reasoning
    assert reply.usage is not None and reply.usage.total_tokens == 30
    assert reply.object == "chat.completion" and reply.id.startswith("chatcmpl-")
    assert [m.id for m in client.models.list().data] == ["rxreact"]
    assert app.state.runs.agent.memory.conversation_ids() == []  # stateless: nothing kept


def test_sdk_streamed_content_reasoning_finish_and_usage(make_server: Any) -> None:
    url, _, _ = make_server(weather_script(), authenticate=USERS)
    stream = client_of(url).chat.completions.create(
        model="rxreact",
        messages=[{"role": "user", "content": "Paris?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert deltas[0].role == "assistant"
    assert "".join(d.content or "" for d in deltas) == "Sunny in Paris."
    reasoning = "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas)
    assert "get_weather" in reasoning and "Paris: sunny" in reasoning
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 30
    assert len({c.id for c in chunks}) == 1


def test_the_user_field_or_header_is_the_conversation(make_server: Any) -> None:
    script = [text_reply("Hi Ann."), text_reply("You are Ann."), text_reply("Hello stranger.")]
    url, mock, app = make_server(script, authenticate=USERS)
    client = client_of(url)
    client.chat.completions.create(
        model="rxreact", messages=[{"role": "user", "content": "I am Ann."}], user="conv-1"
    )
    second = client.chat.completions.create(
        model="rxreact",
        messages=[{"role": "user", "content": "Who am I?"}],
        extra_headers={"x-rxreact-conversation": "conv-1"},
    )
    assert second.choices[0].message.content == "You are Ann."
    sent = [(m["role"], m["content"]) for m in mock.requests[1]["messages"]]
    assert sent[-3:] == [("user", "I am Ann."), ("assistant", "Hi Ann."), ("user", "Who am I?")]
    assert app.state.runs.agent.memory.conversation_ids() == ["alice/conv-1"]
    # a header naming a bad id is refused like any other conversation id
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(
            model="rxreact",
            messages=[{"role": "user", "content": "Hi"}],
            extra_headers={"x-rxreact-conversation": "x" * 201},
        )


def test_stateless_the_messages_sent_are_the_history(make_server: Any) -> None:
    url, mock, app = make_server([text_reply("Your name is Ann.")])
    reply = client_of(url, "anything").chat.completions.create(
        model="rxreact",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "My name is Ann."}]},
            {"role": "assistant", "content": "Hello Ann."},
            {"role": "user", "content": "What is my name?"},
        ],
    )
    assert reply.choices[0].message.content == "Your name is Ann."
    sent = [(m["role"], m["content"]) for m in mock.requests[0]["messages"]]
    assert sent[-4:] == [
        ("system", "Be brief."),
        ("user", "My name is Ann."),
        ("assistant", "Hello Ann."),
        ("user", "What is my name?"),
    ]
    assert app.state.runs.agent.memory.conversation_ids() == []


def test_an_agent_whose_model_is_another_agent(make_server: Any) -> None:
    url, _, _ = make_server(weather_script(), authenticate=USERS)
    outer = ReactAgent(OpenAIChatModel("rxreact", base_url=f"{url}/v1", api_key=TOKEN))
    try:
        result = outer.run("Paris?")
    finally:
        outer.model.close()  # type: ignore[attr-defined]
    assert result.answer == "Sunny in Paris."
    assert result.usage is not None and result.usage.total_tokens == 30


def test_a_failed_run_is_an_openai_error(make_server: Any) -> None:
    url, _, _ = make_server([HTTPErrorReply(400, "context too long")] * 2)
    client = client_of(url, "x")
    with pytest.raises(openai.APIStatusError) as error:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}])
    assert error.value.status_code == 502
    assert "BadRequestError" in error.value.message
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Hi"}], stream=True
    )  # the run began (a round started): the error comes inside the stream
    with pytest.raises(openai.APIError, match="BadRequestError"):
        list(stream)


def test_a_stream_whose_client_leaves_cancels_its_run(make_server: Any) -> None:
    gate = Gate()
    reply = text_reply("Never read to the end", pieces=4)
    url, _, app = make_server([gate.reply(reply[:3], reply[3:])])
    body = {"model": "m", "messages": [{"role": "user", "content": "Go"}], "stream": True}
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body) as response:
        for line in response.iter_lines():
            if '"content":"Never' in line:
                run_id = line.split('"id":"chatcmpl-', 1)[1].split('"', 1)[0]
                break
    ended = threading.Event()
    errors: list[Exception] = []
    follow(run_id, app.state.runs.event_log).subscribe(
        on_error=lambda e: (errors.append(e), ended.set()), on_completed=ended.set
    )
    assert ended.wait(10)
    assert isinstance(errors[0], RunCancelledError)


def test_the_operator_maps_events_to_chunks() -> None:
    events = [
        RoundStarted(round=1, seq=1),
        ReasoningDelta(round=1, seq=2, delta="Thinking."),
        ToolCallStarted(round=1, seq=3, index=0, call_id="c0", name="get_weather"),
        ToolCallArgsDelta(round=1, seq=4, index=0, delta='{"city":"Oslo"}'),
        RoundFinished(round=1, seq=5, mode="tool_call"),
        ToolResult(round=1, seq=6, call_id="c0", name="get_weather", content="Rain", duration_s=0),
        RoundStarted(round=2, seq=7),
        TextDelta(round=2, seq=8, delta="Rain "),
        TextDelta(round=2, seq=9, delta="in Oslo."),
        FinalAnswer(round=2, seq=10, text="Rain in Oslo.", rounds=2, usage=USAGE),
    ]
    chunks: list[dict[str, Any]] = []
    rx.from_iterable(events).pipe(
        to_chat_completion_chunks("chatcmpl-1", "m", include_usage=True, created=7)
    ).subscribe(chunks.append)
    deltas = [(c["choices"][0]["delta"], c["choices"][0]["finish_reason"]) for c in chunks[:-1]]
    assert deltas == [
        ({"role": "assistant", "content": ""}, None),
        ({"reasoning_content": "Thinking."}, None),
        ({"reasoning_content": '→ get_weather({"city":"Oslo"})\n'}, None),
        ({"reasoning_content": "← get_weather: Rain\n"}, None),
        ({"content": "Rain "}, None),
        ({"content": "in Oslo."}, None),
        ({}, "stop"),
    ]
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    assert {(c["id"], c["created"], c["model"], c["object"]) for c in chunks} == {
        ("chatcmpl-1", 7, "m", "chat.completion.chunk")
    }
    completion = chat_completion(chunks, events[-1])  # type: ignore[arg-type]
    assert completion["choices"][0]["message"]["content"] == "Rain in Oslo."
    assert completion["choices"][0]["message"]["reasoning_content"].startswith("Thinking.→")
    assert completion["usage"]["total_tokens"] == 15


def test_the_operator_turns_a_run_error_into_an_error_chunk() -> None:
    chunks: list[dict[str, Any]] = []
    done = threading.Event()
    rx.concat(rx.of(RoundStarted(round=1, seq=1)), rx.throw(RunCancelledError("stop"))).pipe(
        to_chat_completion_chunks("chatcmpl-2", "m")
    ).subscribe(chunks.append, on_completed=done.set)
    assert done.is_set()
    assert chunks[-1]["error"]["code"] == "run_cancelled"
