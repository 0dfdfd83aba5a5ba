"""``rxreact mock FILE``: the loopback mock server on its own, for testing your own front end.

FILE is JSON: a list of replies, played in request order and then from the start again.
A reply is one of::

    "Hello!"                                                  an answer
    {"text": "Hi", "reasoning": "The user greets me."}        an answer with reasoning
    {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
    {"status": 429, "message": "slow down"}                   an HTTP error

Replies stream as real SSE; ``"interval": 0.05`` in an answer spaces its chunks in time.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

from rxreact.errors import ConfigurationError
from rxreact.messages import ChatRequest
from rxreact.model.scripted.replies import HTTPErrorReply, Reply, text_reply, tool_call_reply

__all__ = ["parse_replies", "run_mock"]


def parse_replies(data: Any, source: str) -> list[Reply]:
    """The replies of a mock file's JSON (see the module doc)."""
    if not isinstance(data, list) or not data:
        raise ConfigurationError(f"{source}: expected a JSON list of replies")
    replies: list[Reply] = []
    for n, item in enumerate(data, 1):
        where = f"{source}: reply {n}"
        if isinstance(item, str):
            replies.append(text_reply(item))
        elif not isinstance(item, dict):
            raise ConfigurationError(f"{where}: expected a string or an object")
        elif "status" in item:
            replies.append(HTTPErrorReply(int(item["status"]), str(item.get("message", ""))))
        elif "tool_calls" in item:
            calls = [(c["name"], c.get("arguments", {})) for c in item["tool_calls"]]
            replies.append(tool_call_reply(*calls, text=item.get("text")))
        elif "text" in item:
            replies.append(
                text_reply(
                    item["text"],
                    reasoning=item.get("reasoning"),
                    interval=float(item.get("interval", 0.0)),
                )
            )
        else:
            raise ConfigurationError(f"{where}: expected text, tool_calls or status")
    return replies


def run_mock(path: str, host: str, port: int) -> int:
    """Serve the file's replies until interrupted; prints ``OPENAI_BASE_URL=...`` first."""
    from rxreact.testing import MockOpenAIServer

    file = Path(path).expanduser()
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigurationError(f"cannot read {file}: {error.strerror}") from None
    except ValueError as error:
        raise ConfigurationError(f"{file} is not JSON: {error}") from None
    replies = parse_replies(data, str(file))
    served = [0]
    lock = threading.Lock()

    def script(_: ChatRequest) -> Reply:
        with lock:
            n = served[0]
            served[0] += 1
        return replies[n % len(replies)]

    with MockOpenAIServer(script, host=host, port=port, validate_history=False) as server:
        print(f"OPENAI_BASE_URL={server.base_url}", flush=True)
        print(
            f"rxreact mock: {len(replies)} replies from {file} at {server.base_url} "
            "(any model name, no key; Ctrl-C stops)",
            file=sys.stderr,
            flush=True,
        )
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            print(f"\nrxreact mock: stopped after {served[0]} requests", file=sys.stderr)
    return 0
