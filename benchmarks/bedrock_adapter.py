"""The Bedrock adapter: CPU per streamed chunk and the fixed cost of a short conversation.

The bench conversation (user -> two parallel ``get_weather`` calls -> an answer of N one-word
chunks) in Converse's event-stream frames (:mod:`benchmarks._bedrock_mock`), through:

- ``rxreact``: :class:`~rxreact.ReactAgent` over :class:`~rxreact.BedrockModel`
  (``io="thread"``), the full agent loop, every event to the subscriber, each request signed
  with SigV4 (botocore's signer, as in production);
- ``rxreact_loop``: the same with ``io="loop"``;
- ``httpx_async``: the floor, a hand-written reader of the same wire format on
  ``httpx.AsyncClient`` (``aiter_raw``, frames cut with ``struct`` and both CRCs checked,
  ``json.loads`` per event, the text collected, the calls sent back with their results, tools
  with ``asyncio.gather``), unsigned;
- ``boto3``: the vendor SDK, ``bedrock-runtime`` ``converse_stream`` (sync, signed), when it is
  installed (the ``bench`` extra).

Each stack runs in a child process of its own (a warm-up, then ``sessions`` sessions, medians),
as in :mod:`benchmarks.per_chunk`. Targets: per chunk at most 0.7x the floor, fixed cost at
most 1.0x (the floor signs nothing: rxreact's fixed cost includes two SigV4 signatures).

``python -m benchmarks.bedrock_adapter [--quick]``
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys

from benchmarks._adapter_bench import child, tables
from benchmarks._bedrock_stacks import make_session
from benchmarks._harness import Table, mock_server

STACKS = ("rxreact", "rxreact_loop", "httpx_async", "boto3")
LABELS = {
    "rxreact": 'rxreact BedrockModel, io="thread" (full loop, SigV4)',
    "rxreact_loop": 'rxreact BedrockModel, io="loop" (full loop, SigV4)',
    "httpx_async": "httpx async, aiter_raw + frames + json.loads (floor)",
    "boto3": "boto3 bedrock-runtime converse_stream (sync)",
}


def available() -> tuple[str, ...]:
    """The stacks that can run here (the SDK is an optional bench dependency)."""
    sdk = importlib.util.find_spec("boto3") is not None
    return tuple(s for s in STACKS if s != "boto3" or sdk)


def bedrock_mock() -> contextlib.AbstractContextManager[str]:
    """Start :mod:`benchmarks._bedrock_mock` in a child process; yield its base URL."""
    return mock_server("benchmarks._bedrock_mock", path="")


def run(quick: bool) -> list[Table]:
    with bedrock_mock() as url:
        return tables("Bedrock", LABELS, "bedrock_adapter", available(), url, quick)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:], make_session)
    else:
        for table in run("--quick" in sys.argv[1:]):
            print(table.render(), flush=True)
