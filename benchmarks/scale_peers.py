"""Workload 4's agent frameworks: pydantic-ai, openai-agents, LangGraph on the same workload.

Each stack is the framework's own agent loop, streamed the way its documentation shows, on
the same mock, tool, prompt and measurement as the other stacks (``scale._asyncio_runs``:
every run a task on one event loop, a warm-up run first, receive time stamped where the
subscriber gets each text delta, the answer checked word by word). They run with the peers'
venv Python (``scale.run`` picks it; ``PEERS_VENV``), like ``openai_async``:

- ``pydantic_ai``: ``Agent(OpenAIChatModel(..., provider=OpenAIProvider(openai_client=...)))``,
  ``agent.run_stream(prompt)`` and ``stream_text(delta=True, debounce_by=None)`` (every delta
  as it arrives, no batching), as the peer harness's ``peers/pydantic_ai.py`` does.
- ``openai_agents``: ``Runner.run_streamed`` with ``OpenAIChatCompletionsModel``, text from the
  raw ``ResponseTextDeltaEvent`` s, tracing disabled, as ``peers/openai_agents.py`` does, but
  without ``instructions``: the mock finds a run's tag in the first message, and instructions
  would put a system message there.
- ``langgraph``: ``create_react_agent(ChatOpenAI(streaming=True), [tool(get_weather)])``,
  ``agent.astream(..., stream_mode="messages")``, text from the ``AIMessageChunk`` s, as
  ``peers/langgraph.py`` does.

pydantic-ai and openai-agents get the ``AsyncOpenAI`` client ``openai_async`` uses;
LangGraph's ``ChatOpenAI`` gets the same settings (``http_async_client``, ``default_headers``,
``max_retries``, ``timeout``): an ``httpx.AsyncClient`` with room for every connection
(``max_connections`` and ``max_keepalive_connections`` = runs + 8), a 60 s timeout and
``max_retries=0`` (a failed request is a failed run, as in every stack).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from benchmarks._harness import MODEL, mock_headers
from benchmarks.scale import _asyncio_runs, _limits, get_weather


def openai_client(url: str, runs: int, chunks: int, delay_ms: float) -> Any:
    """The openai SDK's ``AsyncOpenAI`` on the mock, with room for ``runs`` connections."""
    from openai import AsyncOpenAI

    http = httpx.AsyncClient(limits=_limits(runs), timeout=60)
    headers = mock_headers(chunks, 2, delay_ms)
    return AsyncOpenAI(
        api_key="sk-x", base_url=url, http_client=http, default_headers=headers, max_retries=0
    )


def _agent_opener(
    url: str, runs: int, chunks: int, delay_ms: float, build: Callable[[Any], Any]
) -> Callable[[], contextlib.AbstractAsyncContextManager[Any]]:
    """``open()`` yields ``build(client)`` (the framework's agent) and closes the client after."""

    @contextlib.asynccontextmanager
    async def open_agent() -> AsyncIterator[Any]:
        async with openai_client(url, runs, chunks, delay_ms) as client:
            yield build(client)

    return open_agent


def pydantic_ai(
    url: str, runs: int, chunks: int, delay_ms: float, deadline_s: float, ramp_s: float = 0.0
) -> dict[str, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    def build(client: Any) -> Any:
        model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))
        return Agent(model, tools=[get_weather])

    async def react(agent: Any, prompt: str, _tool: Any) -> AsyncIterator[str]:
        async with agent.run_stream(prompt) as result:
            async for text in result.stream_text(delta=True, debounce_by=None):
                yield text

    opener = _agent_opener(url, runs, chunks, delay_ms, build)
    return _asyncio_runs(url, runs, deadline_s, chunks, opener, react, ramp_s)


def openai_agents(
    url: str, runs: int, chunks: int, delay_ms: float, deadline_s: float, ramp_s: float = 0.0
) -> dict[str, Any]:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from openai.types.responses import ResponseTextDeltaEvent

    set_tracing_disabled(True)  # the default exporter would try to reach api.openai.com

    def build(client: Any) -> Any:
        model = OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
        return Agent(name="weather", model=model, tools=[function_tool(get_weather)])

    async def react(agent: Any, prompt: str, _tool: Any) -> AsyncIterator[str]:
        result = Runner.run_streamed(agent, input=prompt)
        try:
            async for event in result.stream_events():
                if event.type == "raw_response_event" and isinstance(
                    event.data, ResponseTextDeltaEvent
                ):
                    yield event.data.delta
        finally:
            if not result.is_complete:  # cut off by the deadline: stop its background task
                result.cancel()

    opener = _agent_opener(url, runs, chunks, delay_ms, build)
    return _asyncio_runs(url, runs, deadline_s, chunks, opener, react, ramp_s)


def langgraph(
    url: str, runs: int, chunks: int, delay_ms: float, deadline_s: float, ramp_s: float = 0.0
) -> dict[str, Any]:
    import warnings

    from langchain_core.messages import AIMessageChunk
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    with warnings.catch_warnings():  # deprecated in favour of langchain.agents.create_agent
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

    @contextlib.asynccontextmanager
    async def open_agent() -> AsyncIterator[Any]:
        async with httpx.AsyncClient(limits=_limits(runs), timeout=60) as http:
            llm = ChatOpenAI(
                model=MODEL,
                base_url=url,
                api_key="sk-x",
                streaming=True,
                max_retries=0,
                timeout=60,
                default_headers=mock_headers(chunks, 2, delay_ms),
                http_async_client=http,
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                agent = create_react_agent(llm, [tool(get_weather)])
            yield agent

    async def react(agent: Any, prompt: str, _tool: Any) -> AsyncIterator[str]:
        inputs = {"messages": [("user", prompt)]}
        async for message, _meta in agent.astream(inputs, stream_mode="messages"):
            if isinstance(message, AIMessageChunk) and message.content:
                yield message.content

    return _asyncio_runs(url, runs, deadline_s, chunks, open_agent, react, ramp_s)
