"""A typed answer as it forms, served: AI SDK ``data-output`` parts (one id per round, reset
and final too), AG-UI ``STATE_SNAPSHOT`` / ``STATE_DELTA`` whose patches rebuild each partial,
and the OpenAI-compatible endpoint streaming the JSON text as it is, over a real socket."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pydantic import BaseModel
from reactivex import operators as ops
from serve_helpers import serving

from rxreact import OpenAIChatModel, OutputPartial, ReactAgent, ScriptedModel
from rxreact.model.scripted.replies import text_reply
from rxreact.serve.ag_ui._output_state import grown
from rxreact.serve.ui_stream import to_ui_message_stream
from rxreact.testing import MockOpenAIServer


class Forecast(BaseModel):
    city: str
    celsius: int
    tags: list[str]


TEXT = json.dumps({"city": "Paris", "celsius": 21, "tags": ["wet", "windy"]})
DRAFTS = [text_reply('{"city": "Paris", "celsius": "warm"}', size=5), text_reply(TEXT, size=4)]


def _agent() -> ReactAgent:
    return ReactAgent(ScriptedModel(list(DRAFTS)), output_type=Forecast)


def test_ai_sdk_stream_carries_data_output_parts() -> None:
    agent = _agent()
    parts = [c.part for c in _all(agent.stream("q").pipe(to_ui_message_stream()))]
    outputs = [p for p in parts if p["type"] == "data-output"]
    assert {p["id"] for p in outputs} == {"output-1", "output-2"}
    reset = next(p for p in outputs if "reset" in p["data"])
    assert reset["id"] == "output-1" and reset["data"]["output"] is None
    assert outputs.index(reset) < min(i for i, p in enumerate(outputs) if p["id"] == "output-2")
    final = outputs[-1]
    assert final["data"] == {
        "round": 2,
        "output": {"city": "Paris", "celsius": 21, "tags": ["wet", "windy"]},
        "final": True,
    }
    assert parts[-1]["type"] == "finish" and parts.index(final) < len(parts) - 1


def test_ag_ui_state_patches_rebuild_every_partial() -> None:
    pytest.importorskip("ag_ui")
    from rxreact.serve.ag_ui import to_ag_ui_events

    partials = [e.output for e in _agent().iter("q") if isinstance(e, OutputPartial)]
    chunks = _all(_agent().stream("q").pipe(to_ag_ui_events("t", "r")))
    state: dict[str, Any] = {}
    seen: list[Any] = []
    for event in (c.to_json() for c in chunks):  # as the client reads them
        if event["type"] == "STATE_SNAPSHOT":
            state = copy.deepcopy(event["snapshot"])
        elif event["type"] == "STATE_DELTA":
            state = _patched(state, event["delta"])
        else:
            continue
        seen.append(copy.deepcopy(state["output"]))
    assert seen[-1] == {"city": "Paris", "celsius": 21, "tags": ["wet", "windy"]}
    assert {} in seen  # the reset
    # every partial, then the validated object
    assert [s for s in seen if s != {}][:-1] == [p for p in partials if p != {}]


def _all(source: Any) -> list[Any]:
    return list(source.pipe(ops.to_list()).run())


def _patched(state: Any, ops: list[dict[str, Any]]) -> Any:
    """RFC 6902 ``add`` / ``replace`` applied to a copy (what a client's state does)."""
    state = copy.deepcopy(state)
    for op in ops:
        *parents, last = [
            p.replace("~1", "/").replace("~0", "~") for p in op["path"][1:].split("/")
        ]
        target = state
        for name in parents:
            target = target[int(name)] if isinstance(target, list) else target[name]
        if isinstance(target, list):
            if last == "-":
                target.append(op["value"])
            else:
                target[int(last)] = op["value"]
        else:
            target[last] = op["value"]
    return state


def test_the_patch_of_grown_values() -> None:
    before = {"a": "x", "b": [1, {"c": "y"}]}
    after = {"a": "xy", "b": [1, {"c": "yz"}, 3], "d/e": None}
    assert grown(before, after, "/output") == [
        {"op": "replace", "path": "/output/a", "value": "xy"},
        {"op": "replace", "path": "/output/b/1/c", "value": "yz"},
        {"op": "add", "path": "/output/b/-", "value": 3},
        {"op": "add", "path": "/output/d~1e", "value": None},
    ]


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    from rxreact.serve import create_app

    mock = MockOpenAIServer([text_reply(TEXT, size=4, interval=0.01)] * 4).start()  # paced
    model = OpenAIChatModel("mock", base_url=mock.base_url, api_key="sk-test", max_retries=0)
    with serving(create_app(ReactAgent(model, output_type=Forecast))) as url:
        yield url
    model.close()
    mock.stop()


@pytest.mark.integration
def test_served_the_openai_endpoint_streams_the_json_text_as_it_is(served: str) -> None:
    body = {"model": "rxreact", "stream": True, "messages": [{"role": "user", "content": "q"}]}
    pieces = []
    with httpx.stream("POST", f"{served}/v1/chat/completions", json=body, timeout=30) as r:
        for line in r.iter_lines():
            if line.startswith("data: {"):
                delta = json.loads(line[6:])["choices"][0]["delta"]
                pieces.append(delta.get("content") or "")
    assert "".join(pieces) == TEXT and len([p for p in pieces if p]) > 1


@pytest.mark.integration
def test_served_the_chat_stream_has_data_output_parts(served: str) -> None:
    body = {
        "id": "c1",
        "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "q"}]}],
        "trigger": "submit-message",
    }
    with httpx.stream("POST", f"{served}/api/chat", json=body, timeout=30) as r:
        parts = [json.loads(x[6:]) for x in r.iter_lines() if x.startswith("data: {")]
    outputs = [p for p in parts if p["type"] == "data-output"]
    assert len(outputs) >= 3 and outputs[-1]["data"]["final"] is True
