"""OpenAIChatModel against the loopback MockOpenAIServer: real sockets, real SSE."""

from __future__ import annotations

import json
import logging
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any, Self

import httpx
import pytest
from conftest import FIXTURES
from reactivex import Observable, abc
from reactivex.scheduler import CurrentThreadScheduler
from reactivex.testing import TestScheduler

from rxreact.errors import (
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ModelConnectionError,
    ModelHTTPError,
    ModelTimeoutError,
    NotFoundError,
    ProviderStreamError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
    StreamProtocolError,
)
from rxreact.messages import ChatRequest, Usage, UserMessage
from rxreact.model.assembly import assemble
from rxreact.model.chunks import ChatChunk, ModelResponse
from rxreact.model.http._errors import provider_message, retry_after
from rxreact.model.openai.client import OpenAIChatModel, run_on_io_loop
from rxreact.model.retry_policy import Backoff
from rxreact.model.scripted.replies import (
    Disconnect,
    Fail,
    Hang,
    HTTPErrorReply,
    Pause,
    RawSSE,
    Reply,
    ReplyItem,
    Script,
    text_reply,
    tool_call_reply,
)
from rxreact.testing import MockOpenAIServer

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]
IO_THREAD = {"thread": "rxreact-http", "loop": "rxreact-io"}

KEY = "sk-test-0123456789SECRET"
FAST = Backoff(base=0.01, factor=2.0, cap=0.05)
REQUEST = ChatRequest(messages=(UserMessage(content="hi"),))


class Recorder:
    """An observer that records everything, with the threads it was called on.

    ``then(recorder, value)``, when given, runs after each value was recorded.
    """

    def __init__(self, then: Callable[[Recorder, Any], None] | None = None) -> None:
        self.then = then
        self.items: list[Any] = []
        self.error: Exception | None = None
        self.completed = False
        self.threads: set[str] = set()
        self.done = threading.Event()

    def on_next(self, value: Any) -> None:
        self.threads.add(threading.current_thread().name)
        self.items.append(value)
        if self.then is not None:
            self.then(self, value)

    def on_error(self, error: Exception) -> None:
        self.error = error
        self.done.set()

    def on_completed(self) -> None:
        self.completed = True
        self.done.set()

    def subscribe(
        self, source: Observable[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return source.subscribe(self.on_next, self.on_error, self.on_completed, scheduler=scheduler)

    def wait(self, timeout: float = 5.0) -> Self:
        assert self.done.wait(timeout), "the stream did not end"
        return self


def collect(source: Observable[Any], timeout: float = 5.0) -> Recorder:
    recorder = Recorder()
    recorder.subscribe(source)
    return recorder.wait(timeout)


@contextmanager
def serve(script: Script, **options: Any) -> Iterator[tuple[MockOpenAIServer, OpenAIChatModel]]:
    options = {"api_key": KEY, "backoff": FAST, **options}
    with (
        MockOpenAIServer(script) as server,
        OpenAIChatModel("mock-model", base_url=server.base_url, **options) as model,
    ):
        yield server, model


# -- success --------------------------------------------------------------------------------


def test_streams_the_scripted_chunks_on_an_io_thread(io_mode: str) -> None:
    reply = text_reply("Hello there, world.", reasoning="Greet", usage=Usage(total_tokens=5))
    with serve([reply]) as (server, model):
        recorder = collect(model.stream(REQUEST))

    assert model.io == io_mode
    assert recorder.completed
    assert recorder.items == reply
    assert recorder.threads == {IO_THREAD[io_mode]}
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["stream_options"] == {"include_usage": True}
    assert server.request_headers[0]["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    "reply",
    [
        text_reply("Sunny in Paris.", reasoning="Look it up.", usage=Usage(prompt_tokens=4)),
        tool_call_reply(("get_weather", {"city": "Paris"}), ("f", "{}"), text="Let me check."),
        text_reply("<think>\nHmm, weather.\n</think>\n\nSunny.", size=3),
    ],
    ids=["text", "tool_calls", "think_tags"],
)
def test_complete_equals_the_assembled_stream(reply: list[Any]) -> None:
    with serve([reply, reply]) as (server, model):
        streamed = assemble(collect(model.stream(REQUEST)).items)
        whole = model.complete(REQUEST)

    assert whole == streamed
    assert server.requests[1]["stream"] is False


def test_think_tags_are_split_only_when_asked() -> None:
    reply = text_reply("<think>Hmm.</think>Sunny.", size=4)
    with serve([reply, reply]) as (_, model):
        split = assemble(collect(model.stream(REQUEST)).items)
    with serve([reply]) as (_, model_raw):
        model_raw.think_tags = False
        raw = assemble(collect(model_raw.stream(REQUEST)).items)

    assert (split.reasoning, split.content) == ("Hmm.", "Sunny.")
    assert raw.content == "<think>Hmm.</think>Sunny."


def test_stream_is_cold() -> None:
    with serve([text_reply("one"), text_reply("two")]) as (server, model):
        stream = model.stream(REQUEST)
        assert not server.wait_for_requests(1, timeout=0.05)
        first, second = collect(stream), collect(stream)

    assert [assemble(r.items).content for r in (first, second)] == ["one", "two"]


# -- ends of a stream -----------------------------------------------------------------------


def test_done_without_finish_reason_is_a_normal_end() -> None:
    with serve([[ChatChunk(text="a")]]) as (_, model):
        recorder = collect(model.stream(REQUEST))

    assert recorder.completed
    assert recorder.items == [ChatChunk(text="a")]


def test_finish_reason_then_eof_without_done_is_a_normal_end() -> None:
    script: list[Reply] = [[ChatChunk(text="a"), ChatChunk(finish_reason="stop"), Disconnect()]]
    with serve(script) as (_, model):
        recorder = collect(model.stream(REQUEST))

    assert recorder.completed
    assert assemble(recorder.items).finish_reason == "stop"


def test_eof_without_done_or_finish_reason_is_an_interruption() -> None:
    raw = RawSSE(b'data: {"choices": [{"index": 0, "delta": {"content": "a"}}]}\n\n')
    with serve([[ChatChunk(text="a"), Disconnect()], raw], max_retries=0) as (_, model):
        cut = collect(model.stream(REQUEST))
        clean_eof = collect(model.stream(REQUEST))

    for recorder in (cut, clean_eof):
        assert isinstance(recorder.error, StreamInterruptedError)
        assert recorder.items == [ChatChunk(text="a")]


def test_in_stream_error_after_text() -> None:
    error = ProviderStreamError("Overloaded, try later", code="overloaded")
    with serve([[ChatChunk(text="Hel"), ChatChunk(text="lo"), Fail(error)]]) as (server, model):
        recorder = collect(model.stream(REQUEST))

    assert recorder.items == [ChatChunk(text="Hel"), ChatChunk(text="lo")]
    assert isinstance(recorder.error, ProviderStreamError)
    assert recorder.error.provider_message == "Overloaded, try later"
    assert recorder.error.code == "overloaded"
    assert len(server.requests) == 1


def test_json_instead_of_a_stream_is_the_providers_error() -> None:
    with serve([HTTPErrorReply(200, "quota exhausted")]) as (_, model):
        recorder = collect(model.stream(REQUEST))

    assert isinstance(recorder.error, ProviderStreamError)
    assert recorder.error.provider_message == "quota exhausted"


def test_an_html_page_is_not_a_stream(io_mode: str) -> None:
    portal = httpx.MockTransport(lambda _: httpx.Response(200, html="<p>Log in to the Wi-Fi</p>"))
    client = httpx.Client(transport=portal)
    aclient = httpx.AsyncClient(transport=portal)
    http_client = aclient if io_mode == "loop" else client
    with OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", http_client=http_client) as model:
        recorder = collect(model.stream(REQUEST))
    client.close()
    run_on_io_loop(aclient.aclose())

    assert isinstance(recorder.error, StreamProtocolError)
    assert "text/html" in str(recorder.error)


def test_options_that_are_not_json() -> None:
    request = REQUEST.model_copy(update={"options": {"seed": object()}})
    with serve([]) as (server, model):
        recorder = collect(model.stream(request))

    assert isinstance(recorder.error, ConfigurationError)
    assert server.requests == []


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.sse")), ids=lambda p: p.stem)
def test_recorded_provider_streams(path: Path) -> None:
    expected = json.loads(path.with_suffix(".expected.json").read_text())
    error = expected.pop("error", None)
    with serve([RawSSE(path.read_bytes())]) as (_, model):
        recorder = collect(model.stream(REQUEST))

    response = assemble(recorder.items)
    if error is None:
        assert recorder.completed
        assert response == ModelResponse.model_validate(expected)
    else:
        assert isinstance(recorder.error, ProviderStreamError)
        assert recorder.error.provider_message == error["message"]
        # The usage of an error chunk may ride on the error itself: compare the rest.
        fields = ("content", "reasoning", "tool_calls", "finish_reason")
        want = ModelResponse.model_validate(expected)
        assert [getattr(response, f) for f in fields] == [getattr(want, f) for f in fields]


# -- HTTP errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, AuthenticationError),
        (404, NotFoundError),
        (422, BadRequestError),
        (429, RateLimitError),
        (500, ServerError),
        (503, ServerError),
        (409, ModelHTTPError),
    ],
)
def test_http_errors_carry_status_andprovider_message(
    status: int, error_class: type[ModelHTTPError]
) -> None:
    message = f"The provider says no ({status})"
    with serve([HTTPErrorReply(status, message)] * 2, max_retries=0) as (_, model):
        recorder = collect(model.stream(REQUEST))
        with pytest.raises(error_class) as raised:
            model.complete(REQUEST)

    assert type(recorder.error) is error_class
    for error in (recorder.error, raised.value):
        assert isinstance(error, ModelHTTPError)
        assert error.status_code == status
        assert error.provider_message == message
        assert message in str(error)


def test_provider_message_from_any_body() -> None:
    assert provider_message('{"error": {"message": "bad key", "type": "x"}}') == "bad key"
    assert provider_message('{"error": "plain"}') == "plain"
    assert provider_message('{"detail": "Not Found"}') == "Not Found"
    assert provider_message("  Bad Gateway\n") == "Bad Gateway"


def test_retry_after_forms() -> None:
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)

    assert retry_after(httpx.Headers({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert retry_after(httpx.Headers({"retry-after": "2"})) == 2.0
    assert 25 < (retry_after(httpx.Headers({"retry-after": soon})) or 0) <= 30
    assert retry_after(httpx.Headers({"retry-after": "whenever"})) is None
    assert retry_after(httpx.Headers()) is None


# -- retries --------------------------------------------------------------------------------


def test_429_with_retry_after_then_success() -> None:
    script: list[Reply] = [
        HTTPErrorReply(429, "slow down", {"Retry-After": "0.02"}),
        text_reply("ok"),
    ]
    with serve(script) as (server, model):
        recorder = collect(model.stream(REQUEST))

    assert recorder.completed
    assert assemble(recorder.items).content == "ok"
    assert len(server.requests) == 2


def test_5xx_and_cut_streams_are_retried_then_the_last_error_wins() -> None:
    script: list[Reply] = [HTTPErrorReply(502), [Disconnect()], HTTPErrorReply(503, "still down")]
    with serve(script, max_retries=2) as (server, model):
        recorder = collect(model.stream(REQUEST))

    assert isinstance(recorder.error, ServerError)
    assert recorder.error.provider_message == "still down"
    assert len(server.requests) == 3


def test_complete_retries_too() -> None:
    with serve([HTTPErrorReply(500), text_reply("ok")]) as (server, model):
        assert model.complete(REQUEST).content == "ok"
    assert len(server.requests) == 2


def test_no_retry_once_a_chunk_was_emitted() -> None:
    cut: list[ReplyItem] = [ChatChunk(role="assistant"), ChatChunk(text="a"), Disconnect()]
    script: list[Reply] = [cut, text_reply("b")]
    with serve(script) as (server, model):
        recorder = collect(model.stream(REQUEST))

    assert isinstance(recorder.error, StreamInterruptedError)
    assert recorder.items == [ChatChunk(role="assistant"), ChatChunk(text="a")]
    assert len(server.requests) == 1


def test_retry_after_longer_than_the_cap_is_not_waited_for() -> None:
    with serve([HTTPErrorReply(429, "later", {"Retry-After": "30"})]) as (server, model):
        recorder = collect(model.stream(REQUEST))

    assert isinstance(recorder.error, RateLimitError)
    assert recorder.error.retry_after == 30
    assert len(server.requests) == 1


class RecordingTestScheduler(TestScheduler):
    """A virtual-time scheduler that reports each relative schedule (the backoff waits)."""

    __test__ = False

    def __init__(self) -> None:
        super().__init__()
        self.waits: queue.Queue[float] = queue.Queue()

    def schedule_relative(self, duetime: Any, action: Any, state: Any = None) -> Any:
        disposable = super().schedule_relative(duetime, action, state)
        self.waits.put(self.to_seconds(duetime))
        return disposable


def attempts(caplog: pytest.LogCaptureFixture) -> int:
    """Attempts that sent a request, in either I/O mode (each logs its POST)."""
    return sum(r.getMessage().startswith("POST ") for r in caplog.records)


def test_backoff_waits_on_the_subscribers_scheduler() -> None:
    scheduler = RecordingTestScheduler()
    script: list[Reply] = [
        HTTPErrorReply(429, "slow", {"retry-after-ms": "40"}),
        HTTPErrorReply(503),
    ]
    script += [text_reply("ok")]
    no_watchdog = {"first_chunk_timeout": None, "chunk_timeout": None}
    with serve(script, **no_watchdog) as (server, model):
        recorder = Recorder()
        recorder.subscribe(model.stream(REQUEST), scheduler=scheduler)
        # Virtual time does not move by itself: the retry waits for us.
        assert scheduler.waits.get(timeout=5) == pytest.approx(0.04)  # Retry-After > backoff
        assert len(server.requests) == 1
        scheduler.advance_by(0.04)
        assert scheduler.waits.get(timeout=5) == pytest.approx(FAST.base * FAST.factor)
        scheduler.advance_by(1.0)
        recorder.wait()

    assert recorder.completed
    assert len(server.requests) == 3


def test_retry_after_on_a_503_is_waited_for_on_the_subscribers_scheduler() -> None:
    scheduler = RecordingTestScheduler()
    script: list[Reply] = [HTTPErrorReply(503, "busy", {"Retry-After": "2"}), text_reply("ok")]
    no_watchdog = {"first_chunk_timeout": None, "chunk_timeout": None}
    patient = Backoff(base=0.01, cap=0.05, max_retry_wait=5)
    with serve(script, backoff=patient, **no_watchdog) as (server, model):
        recorder = Recorder()
        recorder.subscribe(model.stream(REQUEST), scheduler=scheduler)
        assert scheduler.waits.get(timeout=5) == pytest.approx(2.0)  # not the 0.01 backoff
        scheduler.advance_by(2.0)
        recorder.wait()

    assert recorder.completed
    assert len(server.requests) == 2


def test_a_503_retry_after_past_max_retry_wait_fails_at_once_carrying_it() -> None:
    with serve([HTTPErrorReply(503, "later", {"Retry-After": "30"})]) as (server, model):
        recorder = collect(model.stream(REQUEST))

    assert isinstance(recorder.error, ServerError)
    assert recorder.error.retry_after == 30
    assert len(server.requests) == 1


def test_dispose_during_backoff_cancels_the_retry(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, "rxreact.model.http")
    scheduler = RecordingTestScheduler()
    options = {"first_chunk_timeout": None, "chunk_timeout": None}
    with serve([HTTPErrorReply(503), text_reply("never")], **options) as (server, model):
        recorder = Recorder()
        subscription = recorder.subscribe(model.stream(REQUEST), scheduler=scheduler)
        scheduler.waits.get(timeout=5)
        subscription.dispose()
        scheduler.advance_by(10.0)

    assert attempts(caplog) == 1
    assert len(server.requests) == 1
    assert not recorder.done.is_set()


def test_a_trampoline_scheduler_is_not_used_for_waits() -> None:
    # CurrentThreadScheduler would run the backoff by blocking the subscribing thread.
    with serve([HTTPErrorReply(500), text_reply("ok")]) as (_, model):
        recorder = Recorder()
        recorder.subscribe(model.stream(REQUEST), scheduler=CurrentThreadScheduler())
        assert recorder.wait().completed


def test_connection_refused_is_retried_then_a_connection_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, "rxreact.model.http")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with OpenAIChatModel(
        "m", base_url=f"http://127.0.0.1:{port}/v1", backoff=FAST, max_retries=1
    ) as model:
        recorder = collect(model.stream(REQUEST))

    assert isinstance(recorder.error, ModelConnectionError)
    assert f"127.0.0.1:{port}" in str(recorder.error)
    assert attempts(caplog) == 2


# -- timeouts -------------------------------------------------------------------------------


def test_connect_timeout() -> None:
    # A listener with a full accept queue: the kernel drops further SYNs, connect() hangs.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = [socket.socket() for _ in range(3)]
        for filler in fillers:
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
        try:
            with OpenAIChatModel(
                "m", base_url=f"http://127.0.0.1:{port}/v1", connect_timeout=0.2, max_retries=0
            ) as model:
                recorder = collect(model.stream(REQUEST))
        finally:
            for filler in fillers:
                filler.close()

    assert isinstance(recorder.error, ModelTimeoutError)
    assert (recorder.error.phase, recorder.error.seconds) == ("connect", 0.2)


def test_first_chunk_timeout_while_the_server_is_silent() -> None:
    with serve([[Hang()]], first_chunk_timeout=0.2) as (server, model):
        start = time.monotonic()
        recorder = collect(model.stream(REQUEST))
        elapsed = time.monotonic() - start
        assert server.wait_for_disconnects(1, timeout=1)

    assert isinstance(recorder.error, ModelTimeoutError)
    assert (recorder.error.phase, recorder.error.seconds) == ("first_chunk", 0.2)
    assert elapsed >= 0.2  # not before the limit (how soon after is for the benchmarks)
    assert len(server.requests) == 1  # timeouts are not retried


def test_first_chunk_timeout_before_the_headers() -> None:
    # Non-streaming: nothing at all comes back. The first request opens a new connection
    # (the watchdog can reach its socket); the second reuses it (httpx's read limit acts).
    limits = {"first_chunk_timeout": 0.2, "chunk_timeout": 5}
    with serve([text_reply("ok"), [Hang()], [Hang()]], **limits) as (server, model):
        assert model.complete(REQUEST).content == "ok"
        for _ in range(2):
            with pytest.raises(ModelTimeoutError) as raised:
                model.complete(REQUEST)
            assert (raised.value.phase, raised.value.seconds) == ("first_chunk", 0.2)
        assert server.wait_for_disconnects(2, timeout=1)


def test_the_first_chunk_limit_does_not_cut_later_silences() -> None:
    steady: list[ReplyItem] = [ChatChunk(text="a"), Pause(0.3), ChatChunk(text="b")]
    with serve([steady], first_chunk_timeout=0.2, chunk_timeout=2) as (_, model):
        recorder = collect(model.stream(REQUEST))

    assert recorder.completed
    assert assemble(recorder.items).content == "ab"


def test_between_chunks_timeout() -> None:
    script: list[Reply] = [[ChatChunk(role="assistant"), ChatChunk(text="a"), Hang()]]
    with serve(script, chunk_timeout=0.2) as (server, model):
        recorder = collect(model.stream(REQUEST))
        assert server.wait_for_disconnects(1, timeout=1)

    assert recorder.items == [ChatChunk(role="assistant"), ChatChunk(text="a")]
    assert isinstance(recorder.error, ModelTimeoutError)
    assert (recorder.error.phase, recorder.error.seconds) == ("between_chunks", 0.2)


def test_a_slow_but_steady_stream_does_not_time_out() -> None:
    # Silences of 0.12 s against limits of 0.5 s: a loaded host may deliver a chunk late, but
    # not by the 0.38 s it would take to look like a silent server.
    steady: list[ReplyItem] = [ChatChunk(text="a"), Pause(0.12), ChatChunk(text="b"), Pause(0.12)]
    steady += [ChatChunk(text="c"), ChatChunk(finish_reason="stop")]
    with serve([steady], first_chunk_timeout=0.5, chunk_timeout=0.5) as (_, model):
        recorder = collect(model.stream(REQUEST))

    assert recorder.completed
    assert assemble(recorder.items).content == "abc"


def test_a_slow_consumer_is_not_a_silent_server() -> None:
    busy = threading.Event()

    def slow(_: Recorder, chunk: Any) -> None:
        if chunk.text == "a ":
            busy.wait(0.5)  # a consumer busy for longer than both limits

    with serve([text_reply("a b c")], first_chunk_timeout=0.2, chunk_timeout=0.2) as (_, model):
        recorder = Recorder(then=slow)
        recorder.subscribe(model.stream(REQUEST))
        recorder.wait()

    assert recorder.completed


# -- cancellation ---------------------------------------------------------------------------


def test_dispose_while_the_server_is_silent_closes_the_connection() -> None:
    got_text = threading.Event()
    script: list[Reply] = [[ChatChunk(role="assistant"), ChatChunk(text="a"), Hang()]]
    with serve(script) as (server, model):
        recorder = Recorder(then=lambda _, chunk: got_text.set() if chunk.text else None)
        subscription = recorder.subscribe(model.stream(REQUEST))
        assert got_text.wait(5)
        subscription.dispose()
        assert server.wait_for_disconnects(1, timeout=1)

    assert not recorder.done.is_set()
    assert len(recorder.items) == 2


def test_nothing_reaches_the_observer_after_dispose() -> None:
    steady: list[ReplyItem] = [ChatChunk(role="assistant")]
    for i in range(500):
        steady += [ChatChunk(text=f"{i} "), Pause(0.002)]
    five = threading.Event()
    with serve([steady]) as (server, model):
        recorder = Recorder(then=lambda r, _: five.set() if len(r.items) >= 5 else None)
        subscription = recorder.subscribe(model.stream(REQUEST))
        assert five.wait(5)
        subscription.dispose()
        seen = len(recorder.items)
        assert server.wait_for_disconnects(1, timeout=1)

    assert len(recorder.items) == seen
    assert not recorder.done.is_set()


def test_dispose_from_inside_on_next() -> None:
    subscribed, disposed = threading.Event(), threading.Event()
    holder: list[abc.DisposableBase] = []

    def dispose_at_three(recorder: Recorder, _: Any) -> None:
        if len(recorder.items) == 3:
            assert subscribed.wait(5)
            holder[0].dispose()
            disposed.set()

    with serve([text_reply("one two three four five six")]) as (_, model):
        recorder = Recorder(then=dispose_at_three)
        holder.append(recorder.subscribe(model.stream(REQUEST)))
        subscribed.set()
        assert disposed.wait(5)

    assert len(recorder.items) == 3
    assert not recorder.done.is_set()


# -- configuration and secrets --------------------------------------------------------------


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RXREACT_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    model = OpenAIChatModel()

    assert (model.model, model.base_url) == ("env-model", "http://127.0.0.1:9/v1")
    assert repr(model) == "OpenAIChatModel(model='env-model', base_url='http://127.0.0.1:9/v1')"


def test_missing_model_or_bad_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RXREACT_MODEL", raising=False)
    with pytest.raises(ConfigurationError, match="RXREACT_MODEL"):
        OpenAIChatModel()
    with pytest.raises(ConfigurationError, match="base_url"):
        OpenAIChatModel("m", base_url="api.example.com")


def test_missing_key_fails_the_request_not_the_construction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with OpenAIChatModel("m", base_url="https://api.example.com/v1") as model:
        recorder = collect(model.stream(REQUEST))
        with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
            model.complete(REQUEST)

    assert isinstance(recorder.error, ConfigurationError)
    assert "OPENAI_API_KEY" in str(recorder.error)


def test_loopback_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with serve([text_reply("ok")], api_key=None) as (server, model):
        assert collect(model.stream(REQUEST)).completed

    assert "authorization" not in server.request_headers[0]


def test_the_key_never_shows(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    script = [
        HTTPErrorReply(503, f"upstream rejected {KEY}"),
        HTTPErrorReply(401, f"Incorrect API key provided: {KEY}."),
    ]
    with serve(script, max_retries=1) as (_, model):
        recorder = collect(model.stream(REQUEST))
        shown = [repr(model), str(model), repr(vars(model))]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with OpenAIChatModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY) as closed:
        closed._max_retries = 0
        refused = collect(closed.stream(REQUEST))

    error = recorder.error
    assert isinstance(error, AuthenticationError)
    assert error.provider_message == "Incorrect API key provided: ***."
    assert isinstance(refused.error, ModelConnectionError)
    for text in [*shown, str(error), repr(error), error.body, str(refused.error), caplog.text]:
        assert KEY not in text
    assert "retry 1/1" in caplog.text  # the log did record the retry, without the key
