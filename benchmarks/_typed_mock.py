"""A loopback mock that answers every request with one typed answer: a JSON form of
``ROWS`` rows in ``PIECE``-character chunks, at once; a question that says "paced" gets
``PACED_ROWS`` rows, a chunk every ``PACE`` seconds (``python -m benchmarks._typed_mock 0``;
prints ``PORT n``, serves until terminated). For :mod:`benchmarks.output_partials`."""

from __future__ import annotations

import json
import threading
from typing import Any

from rxreact.messages import ChatRequest
from rxreact.model.scripted.replies import text_reply
from rxreact.testing import MockOpenAIServer

ROWS = 120
PIECE = 3  # characters per chunk: about a token's worth of JSON

PACED_ROWS = 12
PACE = 0.002


def form(rows: int) -> str:
    return json.dumps(
        {
            "title": "Weather across the region this week, city by city",
            "rows": [
                {"city": f"City {i}", "celsius": 10 + i % 15, "note": "light rain, then sun"}
                for i in range(rows)
            ],
        }
    )


ANSWER = form(ROWS)
PACED_ANSWER = form(PACED_ROWS)


def reply(request: ChatRequest) -> Any:
    if "paced" in str(request.messages[-1].content):
        return text_reply(PACED_ANSWER, size=PIECE, interval=PACE)
    return text_reply(ANSWER, size=PIECE)


def main() -> None:
    with MockOpenAIServer(reply) as server:
        print(f"PORT {server.base_url.rsplit(':', 1)[1].split('/')[0]}", flush=True)
        threading.Event().wait()  # until the parent terminates this process


if __name__ == "__main__":
    main()
