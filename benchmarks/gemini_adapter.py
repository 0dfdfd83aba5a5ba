"""The Gemini adapter: CPU per streamed chunk and the fixed cost of a short conversation.

The bench conversation (user -> two parallel ``get_weather`` calls -> an answer of N one-word
chunks) in Gemini's native events (:mod:`benchmarks._gemini_mock`), through:

- ``rxreact``: :class:`~rxreact.ReactAgent` over :class:`~rxreact.GeminiModel`
  (``io="thread"``), the full agent loop, every event to the subscriber;
- ``rxreact_loop``: the same with ``io="loop"``;
- ``httpx_async``: the floor, a hand-written reader of the same wire format on
  ``httpx.AsyncClient`` (``aiter_lines`` + ``json.loads`` per event, the text of each event's
  parts collected, the function calls sent back with their results, tools with
  ``asyncio.gather``);
- ``google_genai``: the vendor SDK, ``client.aio.models.generate_content_stream`` with
  automatic function calling off, when it is installed (the ``bench`` extra).

Each stack runs in a child process of its own (a warm-up, then ``sessions`` sessions, medians),
as in :mod:`benchmarks.per_chunk`. Targets: per chunk at most 0.7x the floor, fixed cost at
most 1.0x.

``python -m benchmarks.gemini_adapter [--quick]``
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys

from benchmarks._adapter_bench import child, tables
from benchmarks._gemini_stacks import make_session
from benchmarks._harness import Table, mock_server

STACKS = ("rxreact", "rxreact_loop", "httpx_async", "google_genai")
LABELS = {
    "rxreact": 'rxreact GeminiModel, io="thread" (full loop)',
    "rxreact_loop": 'rxreact GeminiModel, io="loop" (full loop)',
    "httpx_async": "httpx async, aiter_lines + json.loads (floor)",
    "google_genai": "google-genai aio.models.generate_content_stream",
}


def available() -> tuple[str, ...]:
    """The stacks that can run here (the SDK is an optional bench dependency)."""
    sdk = importlib.util.find_spec("google.genai") is not None
    return tuple(s for s in STACKS if s != "google_genai" or sdk)


def gemini_mock() -> contextlib.AbstractContextManager[str]:
    """Start :mod:`benchmarks._gemini_mock` in a child process; yield its base URL."""
    return mock_server("benchmarks._gemini_mock", path="")


def run(quick: bool) -> list[Table]:
    with gemini_mock() as url:
        return tables("Gemini", LABELS, "gemini_adapter", available(), url, quick)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:], make_session)
    else:
        for table in run("--quick" in sys.argv[1:]):
            print(table.render(), flush=True)
