"""AnthropicModel's ``anthropic_version``: ``2023-06-01`` by default; ``2026-10-21`` (and
later) takes no ``temperature``, ``top_p`` or ``top_k``, refused in rxreact's terms before a
request goes out."""

from __future__ import annotations

import pytest

from rxreact import AnthropicModel, ReactAgent
from rxreact.errors import InvalidArgumentError
from rxreact.messages import ChatRequest, UserMessage
from rxreact.model.scripted.replies import text_reply
from rxreact.testing import MockOpenAIServer

pytestmark = pytest.mark.integration

REQUEST = ChatRequest(messages=(UserMessage(content="hi"),))


def test_the_default_version_is_2023_06_01_and_takes_sampling_options() -> None:
    with (
        MockOpenAIServer([text_reply("Hi.")]) as server,
        AnthropicModel("m", base_url=server.origin, options={"temperature": 0.2}) as model,
    ):
        assert model.complete(REQUEST).content == "Hi."
    assert server.request_headers[0]["anthropic-version"] == "2023-06-01"
    assert server.requests[0]["temperature"] == 0.2


@pytest.mark.parametrize("option", ["temperature", "top_p", "top_k"])
def test_the_new_version_refuses_sampling_options_at_construction(option: str) -> None:
    with pytest.raises(InvalidArgumentError, match=f"'2026-10-21' takes no {option}"):
        AnthropicModel("m", anthropic_version="2026-10-21", options={option: 1})


def test_the_new_version_refuses_a_request_s_sampling_options_before_a_round_trip() -> None:
    request = REQUEST.model_copy(update={"options": {"temperature": 0.5, "top_k": 3}})
    with (
        MockOpenAIServer([text_reply("Hi."), text_reply("Hi.")]) as server,
        AnthropicModel("m", base_url=server.origin, anthropic_version="2026-10-21") as model,
    ):
        with pytest.raises(InvalidArgumentError, match="takes no temperature, top_k") as error:
            model.complete(request)
        assert "request's options" in str(error.value)
        agent = ReactAgent(model, options={"top_p": 0.9})
        with pytest.raises(InvalidArgumentError, match="takes no top_p"):
            agent.call("hi")
        assert server.requests == []  # nothing was sent
        assert model.complete(REQUEST).content == "Hi."  # without them it goes out
    assert server.request_headers[0]["anthropic-version"] == "2026-10-21"


def test_a_version_must_be_a_non_empty_string() -> None:
    with pytest.raises(InvalidArgumentError, match="anthropic_version"):
        AnthropicModel("m", anthropic_version="")
