"""The Anthropic adapter: CPU per streamed chunk and the fixed cost of a short conversation.

The bench conversation (user -> two parallel ``get_weather`` calls -> an answer of N one-word
chunks) in Anthropic's Messages events (:mod:`benchmarks._anthropic_mock`), through:

- ``rxreact``: :class:`~rxreact.ReactAgent` over :class:`~rxreact.AnthropicModel`
  (``io="thread"``), the full agent loop, every event to the subscriber;
- ``rxreact_loop``: the same with ``io="loop"``;
- ``httpx_async``: the floor, a hand-written reader of the same wire format on
  ``httpx.AsyncClient`` (``aiter_lines`` + ``json.loads`` per event, tool calls assembled by
  block index, tools with ``asyncio.gather``);
- ``anthropic_sdk``: the vendor SDK's own streaming helper, ``AsyncAnthropic().messages.stream``
  (text events, then ``get_final_message()`` for the tool calls), when it is installed
  (the ``bench`` extra).

Each stack runs in a child process of its own (a warm-up, then ``sessions`` sessions, medians),
as in :mod:`benchmarks.per_chunk`. Targets: per chunk at most 0.7x the floor, fixed cost at
most 1.25x, first token within 2 ms of it.

``python -m benchmarks.anthropic_adapter [--quick]``
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys

from benchmarks._adapter_bench import child, tables
from benchmarks._anthropic_stacks import make_session
from benchmarks._harness import Table, mock_server

STACKS = ("rxreact", "rxreact_loop", "httpx_async", "anthropic_sdk")
LABELS = {
    "rxreact": 'rxreact AnthropicModel, io="thread" (full loop)',
    "rxreact_loop": 'rxreact AnthropicModel, io="loop" (full loop)',
    "httpx_async": "httpx async, aiter_lines + json.loads (floor)",
    "anthropic_sdk": "anthropic SDK AsyncAnthropic.messages.stream",
}


def available() -> tuple[str, ...]:
    """The stacks that can run here (the SDK is an optional bench dependency)."""
    sdk = importlib.util.find_spec("anthropic") is not None
    return tuple(s for s in STACKS if s != "anthropic_sdk" or sdk)


def anthropic_mock() -> contextlib.AbstractContextManager[str]:
    """Start :mod:`benchmarks._anthropic_mock` in a child process; yield its base URL."""
    return mock_server("benchmarks._anthropic_mock", path="")


def run(quick: bool) -> list[Table]:
    with anthropic_mock() as url:
        return tables("Anthropic", LABELS, "anthropic_adapter", available(), url, quick)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:], make_session)
    else:
        for table in run("--quick" in sys.argv[1:]):
            print(table.render(), flush=True)
