"""BedrockModel against the mock's Converse dialect, in both I/O modes: agent runs with tool
rounds, SigV4 signatures the mock checks (a wrong one is a 403 AuthenticationError, not
retried), Bedrock API keys, the region and the "bedrock:" prefix, reasoning sent back signed,
whole answers, and the fault matrix (429/5xx and throttling before the first chunk retried,
errors after it not, a cut stream, a slow first byte, a stall, disposal closing the socket).
Nothing waits by sleeping: the tests wait on terminal events and the server's counters."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from test_openai_model import Recorder, collect

from rxreact import BedrockModel, InMemoryChatMemory, ReactAgent, model_from, tool
from rxreact.errors import (
    AuthenticationError,
    ConfigurationError,
    ModelConnectionError,
    ModelTimeoutError,
    ProviderStreamError,
    RateLimitError,
    StreamInterruptedError,
)
from rxreact.messages import ChatRequest, UserMessage
from rxreact.model.assembly import assemble
from rxreact.model.chunks import ChatChunk
from rxreact.model.retry_policy import Backoff
from rxreact.model.scripted.replies import (
    Disconnect,
    Fail,
    Hang,
    HTTPErrorReply,
    Pause,
    Script,
    text_reply,
    tool_call_reply,
)
from rxreact.testing import MockOpenAIServer
from rxreact.testing._bedrock import MOCK_CREDENTIALS
from rxreact.testing.weather_desk import weather_desk

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]

FAST = Backoff(base=0.01, cap=0.05)
REQUEST = ChatRequest(messages=(UserMessage(content="hi"),))
MODEL_ID = "us.anthropic.claude-sonnet-4-5-v1:0"
KEY_ID, SECRET = next(iter(MOCK_CREDENTIALS.items()))
THROTTLED = RateLimitError(429, "Too many requests, please wait before trying again.")


@pytest.fixture(autouse=True)
def _signed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test signs with the mock's credentials, never the machine's."""
    for name in (
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "BEDROCK_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")


@contextmanager
def serving(script: Script, **options: Any) -> Iterator[tuple[MockOpenAIServer, BedrockModel]]:
    options = {"max_retries": 0, "backoff": FAST, **options}
    with (
        MockOpenAIServer(script) as server,
        BedrockModel(MODEL_ID, base_url=server.origin, **options) as model,
    ):
        yield server, model


def result(model: BedrockModel) -> Recorder:
    return collect(model.stream(REQUEST), timeout=10.0)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny, 21°C"


def test_an_agent_runs_a_tool_round_signed_and_remembers_it() -> None:
    memory = InMemoryChatMemory()
    with serving(weather_desk) as (server, model):
        agent = ReactAgent(model, tools=[get_weather], memory=memory)
        first = agent.run("Weather in Paris?", conversation_id="c")
        second = agent.run("And in Rome?", conversation_id="c")
    assert "Paris: sunny" in first.answer and first.rounds == 2
    assert "Rome: sunny" in second.answer
    # The id keeps its colon, percent-encoded in the path as AWS's SDKs send it.
    assert server.request_paths[0] == "/model/us.anthropic.claude-sonnet-4-5-v1%3A0/converse-stream"
    headers = server.request_headers[0]
    assert headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={KEY_ID}/")
    assert "/eu-west-1/bedrock/aws4_request" in headers["authorization"]
    assert headers["accept"] == "application/vnd.amazon.eventstream"


def test_a_wrong_secret_is_an_authentication_error_and_not_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with serving([text_reply("never")] * 3, max_retries=2) as (server, model):
        error = result(model).error
    assert isinstance(error, AuthenticationError) and error.status_code == 403
    assert "signature" in error.provider_message
    assert len(server.requests) == 1


def test_an_unknown_access_key_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIANOTKNOWN0000000")
    with serving([text_reply("never")]) as (_, model):
        assert isinstance(result(model).error, AuthenticationError)


def test_region_wins_over_aws_region_and_a_bearer_key_needs_no_signature(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with serving([text_reply("Hi.")], region="ap-south-1") as (server, model):
        assert result(model).completed
    assert "/ap-south-1/bedrock/" in server.request_headers[0]["authorization"]
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-123")
    with serving([text_reply("Hi.")]) as (server, model):
        assert result(model).completed
    assert server.request_headers[0]["authorization"] == "Bearer bedrock-api-key-123"
    with pytest.raises(ConfigurationError, match="https"):
        BedrockModel(MODEL_ID, base_url="http://bedrock.example.invalid")


def test_the_default_endpoint_is_the_regions_and_a_missing_region_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = BedrockModel(MODEL_ID, region="us-west-2")
    assert model.base_url == "https://bedrock-runtime.us-west-2.amazonaws.com"
    model.close()
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    with pytest.raises(ConfigurationError, match="region"):
        BedrockModel(MODEL_ID)


def test_the_bedrock_prefix_keeps_the_ids_own_colons(monkeypatch: pytest.MonkeyPatch) -> None:
    with MockOpenAIServer([text_reply("Hello from Bedrock.")]) as server:
        monkeypatch.setenv("BEDROCK_BASE_URL", server.origin)
        with model_from(f"bedrock:{MODEL_ID}", max_retries=0) as model:
            assert isinstance(model, BedrockModel) and model.model == MODEL_ID
            assert assemble(result(model).items).content == "Hello from Bedrock."


def test_reasoning_goes_back_signed_on_the_next_round() -> None:
    script = [
        [
            ChatChunk(reasoning="Oslo needs a lookup."),
            *tool_call_reply(("get_weather", {"city": "Oslo"})),
        ],
        text_reply("Oslo is sunny."),
    ]
    with serving(script) as (server, model):
        answer = ReactAgent(model, tools=[get_weather]).run("Weather in Oslo?")
    assert answer.answer == "Oslo is sunny."
    sent = server.requests[1]["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]
    assert sent["text"] == "Oslo needs a lookup." and sent["signature"]  # the mock checked it


def test_a_whole_answer_is_the_converse_route() -> None:
    with serving([text_reply("Whole.")]) as (server, model):
        response = model.complete(REQUEST)
    assert response.content == "Whole." and server.request_paths[0].endswith("/converse")


@pytest.mark.parametrize("status", [429, 500, 503])
def test_an_error_status_before_the_first_chunk_is_retried(status: int) -> None:
    script = [HTTPErrorReply(status, "busy", {"retry-after": "0"}), text_reply("Back.")]
    with serving(script, max_retries=1) as (server, model):
        outcome = result(model)
    assert outcome.completed and assemble(outcome.items).content == "Back."
    assert len(server.requests) == 2


def test_a_throttling_exception_before_the_first_chunk_is_retried() -> None:
    with serving([[Fail(THROTTLED)], text_reply("Back.")], max_retries=1) as (server, model):
        outcome = result(model)
    assert outcome.completed and assemble(outcome.items).content == "Back."
    assert len(server.requests) == 2


def test_an_exception_after_the_first_chunk_is_not_retried() -> None:
    script = [[ChatChunk(text="Hel"), Fail(THROTTLED)], text_reply("never")]
    with serving(script, max_retries=2) as (server, model):
        outcome = result(model)
    assert isinstance(outcome.error, ProviderStreamError)
    assert outcome.error.error_type == "throttlingException"
    assert [c.text for c in outcome.items] == ["Hel"] and len(server.requests) == 1


def test_a_stream_cut_mid_answer_is_an_error_and_nothing_is_stored() -> None:
    script = [[ChatChunk(text="Partial"), Disconnect()], text_reply("never")]
    memory = InMemoryChatMemory()
    with (
        serving(script, max_retries=2) as (server, model),
        pytest.raises((StreamInterruptedError, ModelConnectionError)),
    ):
        ReactAgent(model, memory=memory).call("hi", conversation_id="c")
    assert len(server.requests) == 1 and list(memory.load("c")) == []


def test_a_slow_first_byte_is_waited_for_and_a_silent_one_times_out() -> None:
    with serving([[Pause(0.2), *text_reply("Slow.")]], first_chunk_timeout=5) as (_, model):
        assert assemble(result(model).items).content == "Slow."
    with serving([[Hang()]], first_chunk_timeout=0.3) as (server, model):
        outcome = result(model)
        assert isinstance(outcome.error, ModelTimeoutError) and outcome.error.phase == "first_chunk"
        assert server.wait_for_disconnects(1)


def test_a_stalled_stream_times_out_and_disposing_closes_the_socket() -> None:
    with serving([[ChatChunk(text="Hel"), Hang()]], chunk_timeout=0.3) as (server, model):
        outcome = result(model)
        assert (
            isinstance(outcome.error, ModelTimeoutError) and outcome.error.phase == "between_chunks"
        )
        assert server.wait_for_disconnects(1)
    with serving([[ChatChunk(text="x"), Hang()]]) as (server, model):
        recorder = Recorder(then=lambda r, _: r.done.set())
        subscription = recorder.subscribe(model.stream(REQUEST))
        assert recorder.done.wait(5)
        subscription.dispose()
        assert server.wait_for_disconnects(1)


def test_a_loopback_endpoint_without_credentials_goes_unsigned_and_asks_no_metadata_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    # The chain's instance-role provider would ask 169.254.169.254: the no-network guard of
    # conftest.py fails the test if anything does.
    with serving([text_reply("Hi."), text_reply("Again.")]) as (server, model):
        assert result(model).completed and result(model).completed
    assert "authorization" not in server.request_headers[0]


def test_the_forced_round_keeps_tool_config_and_ends_with_an_answer() -> None:
    with serving(weather_desk) as (server, model):
        result = ReactAgent(model, tools=[get_weather], max_rounds=1).run("Weather in Paris?")
    assert result.forced and "Paris: sunny" in result.answer
    forced = server.requests[-1]
    # Converse has no "no tools" choice and requires toolConfig while the history holds tool
    # blocks: the tools stay declared, no choice is sent, the loop's instruction asks for the
    # answer (the mock refuses a body without toolConfig, as Bedrock does).
    assert forced["toolConfig"]["tools"] and "toolChoice" not in forced["toolConfig"]
