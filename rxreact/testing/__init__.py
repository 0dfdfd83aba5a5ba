"""Helpers for testing code built on rxreact: import them in your own tests.

- :class:`MockOpenAIServer`: a loopback OpenAI-compatible server (real HTTP, real SSE) playing
  scripted replies, validating histories like the real API.
- :func:`weather_desk`: a mock model that calls your weather tool when asked about a city and
  answers from its result (``rxreact mock --weather`` serves it).
- :class:`ChaosScheduler`: a thread pool that preempts the threads that schedule on it, to
  find races that a quiet machine hides.
- :func:`run_marbles`, :func:`assert_marbles`, :func:`reply_from_marbles`: run an agent in
  virtual time and compare its event lanes with marble strings.
"""

from rxreact.testing.agent_marbles import (
    AgentFactory,
    assert_marbles,
    reply_from_marbles,
    run_marbles,
)
from rxreact.testing.chaos import ChaosScheduler
from rxreact.testing.mock_server import MockOpenAIServer
from rxreact.testing.weather_desk import weather_desk

__all__ = [
    "AgentFactory",
    "ChaosScheduler",
    "MockOpenAIServer",
    "assert_marbles",
    "reply_from_marbles",
    "run_marbles",
    "weather_desk",
]
