"""``"provider:model"`` strings: :func:`model_from` makes the model a string names.

::

    model_from("anthropic:claude-sonnet-4-5")      AnthropicModel("claude-sonnet-4-5")
    model_from("gemini:gemini-2.5-flash")          GeminiModel("gemini-2.5-flash"), the native API
    model_from("bedrock:us.amazon.nova-pro-v1:0")  BedrockModel("us.amazon.nova-pro-v1:0")
    model_from("openai:gpt-5")                     OpenAIResponsesModel("gpt-5")
    model_from("openai-chat:gpt-4o-mini")          OpenAIChatModel("gpt-4o-mini")
    model_from("groq:llama-3.3-70b-versatile")     OpenAIChatModel on Groq's endpoint and key
    model_from("gpt-4o-mini")                      a bare name: OpenAIChatModel, as always

The chat-completions presets only fill in the base URL and the environment variable the key
is read from; each base URL can be moved with ``<PREFIX>_BASE_URL`` (``OLLAMA_BASE_URL``...)
or ``base_url=``. The prefix ends at the first colon, so model names that contain colons
(Ollama's ``llama3:8b``) keep them: ``ollama:llama3:8b``.

``gemini:`` is Gemini's native API (:class:`~rxreact.GeminiModel`, ``$GEMINI_API_KEY``,
``$GEMINI_BASE_URL``); it used to be the OpenAI-compatible endpoint, which is now
``gemini-openai:`` (``$GEMINI_OPENAI_BASE_URL``, the same key), its tool rounds keeping
Gemini 3's thought signatures.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from rxreact.errors import InvalidArgumentError
from rxreact.model.http.model import HTTPChatModel
from rxreact.model.openai._call_extras import SKIP_SIGNATURE

__all__ = ["CHAT_PRESETS", "PREFIXES", "base_url_variable", "model_from"]


class ChatPreset(NamedTuple):
    """A chat-completions provider: where it is and which variable holds its key."""

    base_url: str
    api_key_env: str
    signature_placeholder: str | None = None
    """Sent where the provider requires a thought signature the history lacks (Gemini)."""


CHAT_PRESETS: dict[str, ChatPreset] = {
    "ollama": ChatPreset("http://localhost:11434/v1", "OLLAMA_API_KEY"),
    "openrouter": ChatPreset("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "groq": ChatPreset("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "deepseek": ChatPreset("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "mistral": ChatPreset("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "together": ChatPreset("https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "xai": ChatPreset("https://api.x.ai/v1", "XAI_API_KEY"),
    "gemini-openai": ChatPreset(
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "GEMINI_API_KEY",
        SKIP_SIGNATURE,
    ),
}
"""The chat-completions presets (prefix → base URL and key variable)."""

PREFIXES: tuple[str, ...] = (
    "openai",
    "openai-chat",
    "anthropic",
    "gemini",
    "bedrock",
    *CHAT_PRESETS,
)
"""Every prefix :func:`model_from` knows."""


def model_from(spec: str, **kwargs: Any) -> HTTPChatModel:
    """The model ``spec`` names (``"provider:model"``, or a bare model name).

    Args:
        spec: ``openai:`` (the Responses API), ``openai-chat:`` (chat completions),
            ``anthropic:``, ``gemini:`` (Gemini's native API), ``bedrock:`` (Bedrock's
            Converse API: ``region=`` or ``$AWS_REGION``, ``$BEDROCK_BASE_URL``), or a
            chat-completions preset (:data:`CHAT_PRESETS`); a name with no colon is an
            :class:`~rxreact.OpenAIChatModel` configured as today (``$OPENAI_*``).
        **kwargs: passed to the model's constructor (``base_url=``, ``api_key=``, timeouts...).

    Raises:
        InvalidArgumentError: ``spec`` is not a string, names no model, or has an unknown
            prefix (the message lists the known ones).
    """
    if not isinstance(spec, str):
        raise InvalidArgumentError(f"a model spec must be a str, got {type(spec).__name__}")
    prefix, colon, name = spec.partition(":")
    if not colon:
        prefix, name = "openai-chat", spec
    if not name.strip():
        raise InvalidArgumentError(f"model spec {spec!r} names no model")
    if prefix == "openai":
        from rxreact.model.openai.responses import OpenAIResponsesModel

        return OpenAIResponsesModel(name, **kwargs)
    if prefix == "anthropic":
        from rxreact.model.anthropic.client import AnthropicModel

        return AnthropicModel(name, **kwargs)
    if prefix == "gemini":
        from rxreact.model.gemini.client import GeminiModel

        return GeminiModel(name, **kwargs)
    if prefix == "bedrock":
        from rxreact.model.bedrock.client import BedrockModel

        return BedrockModel(name, **kwargs)  # the id keeps its own colons
    from rxreact.model.openai.client import OpenAIChatModel

    if prefix == "openai-chat":
        return OpenAIChatModel(name, **kwargs)
    preset = CHAT_PRESETS.get(prefix)
    if preset is None:
        raise InvalidArgumentError(
            f"unknown model prefix {prefix!r} in {spec!r}; known: {', '.join(PREFIXES)} "
            f"(a model name with a colon in it takes a prefix: 'openai-chat:{spec}')"
        )
    kwargs.setdefault("base_url", os.environ.get(_base_url_env(prefix)) or preset.base_url)
    # The preset's own variable only: never $OPENAI_API_KEY, sent to another provider's host.
    kwargs.setdefault("api_key_env", preset.api_key_env)
    if preset.signature_placeholder is not None:
        kwargs.setdefault("signature_placeholder", preset.signature_placeholder)
    return OpenAIChatModel(name, **kwargs)


def base_url_variable(spec: str) -> str:
    """The environment variable the model ``spec`` names reads its base URL from (a command
    line checks it before it starts, in its own terms)."""
    prefix, colon, _ = spec.partition(":")
    if not colon or prefix in ("openai", "openai-chat"):
        return "OPENAI_BASE_URL"
    if prefix == "anthropic":
        return "ANTHROPIC_BASE_URL"
    return _base_url_env(prefix)  # GEMINI_BASE_URL, BEDROCK_BASE_URL, OLLAMA_BASE_URL...


def _base_url_env(prefix: str) -> str:
    return f"{prefix.upper().replace('-', '_')}_BASE_URL"  # gemini-openai: GEMINI_OPENAI_...
