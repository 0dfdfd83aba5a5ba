"""What the AnthropicModel tests over HTTP share: a mock server and a model on it per test."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from rxreact import AnthropicModel, tool
from rxreact.messages import ChatRequest, UserMessage
from rxreact.model.scripted.replies import Script
from rxreact.testing import MockOpenAIServer

Serve = Callable[..., tuple[MockOpenAIServer, AnthropicModel]]
THINKING = {"type": "enabled", "budget_tokens": 1024}


@contextlib.contextmanager
def served() -> Iterator[Serve]:
    """``server, model = start(script, **model_kwargs)`` inside: both closed at the end (no
    retries unless asked). A test module makes it its ``serve`` fixture."""
    made: list[tuple[MockOpenAIServer, AnthropicModel]] = []

    def start(script: Script, **kwargs: Any) -> tuple[MockOpenAIServer, AnthropicModel]:
        server = MockOpenAIServer(script).start()
        kwargs.setdefault("max_retries", 0)
        model = AnthropicModel("claude-mock", base_url=server.origin, **kwargs)
        made.append((server, model))
        return server, model

    try:
        yield start
    finally:
        for server, model in made:
            model.close()
            server.stop()


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


def ask(text: str = "Hi") -> ChatRequest:
    return ChatRequest(messages=(UserMessage(content=text),))
