"""``"provider:model"`` strings: model_from, ReactAgent("..."), the presets' URLs and keys."""

from __future__ import annotations

import pytest

from rxreact import (
    ConfigurationError,
    InvalidArgumentError,
    OpenAIChatModel,
    ReactAgent,
    model_from,
)
from rxreact.model.scripted.replies import text_reply
from rxreact.model.spec import CHAT_PRESETS, PREFIXES
from rxreact.testing import MockOpenAIServer


def test_a_bare_name_is_a_chat_completions_model_configured_as_today(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    model = model_from("gpt-4o-mini")
    assert type(model) is OpenAIChatModel
    assert (model.model, model.base_url) == ("gpt-4o-mini", "http://127.0.0.1:9/v1")


@pytest.mark.parametrize(("prefix", "preset"), sorted(CHAT_PRESETS.items()))
def test_each_chat_preset_fills_the_base_url_and_its_key_variable(
    prefix: str, preset: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(f"{prefix.upper()}_BASE_URL", raising=False)
    monkeypatch.setenv(preset[1], "k-123")
    model = model_from(f"{prefix}:some-model")
    assert type(model) is OpenAIChatModel
    assert (model.model, model.base_url) == ("some-model", preset[0])
    assert model._endpoint.key is not None and model._endpoint.key.reveal() == "k-123"


def test_a_missing_preset_key_names_the_presets_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = model_from("groq:llama-3.3-70b-versatile")
    with pytest.raises(ConfigurationError, match="GROQ_API_KEY"):
        model._endpoint.headers_for(True)  # what every request sends: refused before it is sent


def test_the_prefix_ends_at_the_first_colon() -> None:
    model = model_from("ollama:llama3:8b")
    assert (model.model, model.base_url) == ("llama3:8b", "http://localhost:11434/v1")
    assert model_from("openai-chat:qwen2.5:7b", base_url="http://127.0.0.1:1/v1").model == (
        "qwen2.5:7b"
    )


def test_keyword_arguments_win_over_the_preset() -> None:
    model = model_from("mistral:mistral-small", base_url="http://127.0.0.1:5/v1", api_key="x")
    assert model.base_url == "http://127.0.0.1:5/v1"


@pytest.mark.parametrize("spec", ["nope:model", "llama3:8b", "OpenAI:gpt-4o"])
def test_an_unknown_prefix_lists_the_known_ones(spec: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        model_from(spec)
    message = str(info.value)
    assert all(prefix in message for prefix in PREFIXES)
    assert f"openai-chat:{spec}" in message  # how to keep a colon in a model name


@pytest.mark.parametrize("spec", ["", "groq:", "ollama:  ", 42])
def test_a_spec_that_names_no_model_is_refused(spec: object) -> None:
    with pytest.raises(InvalidArgumentError):
        model_from(spec)  # type: ignore[arg-type]


@pytest.mark.integration
def test_an_agent_made_from_a_preset_string_answers_through_its_endpoint(
    io_mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MockOpenAIServer([text_reply("Hello from Ollama")]) as server:
        monkeypatch.setenv("OLLAMA_BASE_URL", server.base_url)
        agent = ReactAgent("ollama:llama3:8b")
        try:
            assert agent.call("Hi") == "Hello from Ollama"
        finally:
            agent.model.close()  # type: ignore[attr-defined]
    assert server.requests[0]["model"] == "llama3:8b"


def test_a_preset_never_reads_the_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    model = model_from("groq:llama-3.3-70b-versatile")
    assert model._endpoint.key is None  # the OpenAI key is not sent to Groq's host
    assert model.api_key_variable == "GROQ_API_KEY"


def test_api_key_env_names_the_variable_the_key_is_read_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_GATEWAY_KEY", "k-456")
    model = OpenAIChatModel(
        "m", base_url="https://gateway.example/v1", api_key_env="MY_GATEWAY_KEY"
    )
    assert model._endpoint.key is not None and model._endpoint.key.reveal() == "k-456"
    assert model.api_key_variable == "MY_GATEWAY_KEY"
    monkeypatch.delenv("MY_GATEWAY_KEY")
    keyless = OpenAIChatModel(
        "m", base_url="https://gateway.example/v1", api_key_env="MY_GATEWAY_KEY"
    )
    with pytest.raises(ConfigurationError, match="MY_GATEWAY_KEY"):
        keyless._endpoint.headers_for(True)
    assert OpenAIChatModel("m", base_url="https://gateway.example/v1").api_key_variable == (
        "OPENAI_API_KEY"
    )


def test_api_key_env_must_be_a_str() -> None:
    with pytest.raises(InvalidArgumentError, match="api_key_env"):
        OpenAIChatModel("m", api_key_env=1)  # type: ignore[arg-type]


def test_a_preset_variable_given_as_a_keyword_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTHER_GROQ_KEY", "k-789")
    model = model_from("groq:llama-3.3-70b-versatile", api_key_env="OTHER_GROQ_KEY")
    assert model._endpoint.key is not None and model._endpoint.key.reveal() == "k-789"
