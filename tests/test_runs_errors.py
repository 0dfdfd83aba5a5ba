"""A run's error through the event log: the same type, message and attributes on the other
side; redis-py stays optional."""

from __future__ import annotations

import json
import sys

import pytest

from rxreact import (
    AgentError,
    ConfigurationError,
    ModelTimeoutError,
    ProviderStreamError,
    RedisEventLog,
    RunCancelledError,
    ServerError,
)
from rxreact.runs._errors import decode_error, encode_error


def through_json(error: Exception) -> Exception:
    return decode_error(json.loads(json.dumps(encode_error(error))))


@pytest.mark.parametrize(
    "error",
    [
        ModelTimeoutError("between_chunks", 2.5),
        ServerError(503, "overloaded", "body"),
        ProviderStreamError("quota", code=429, error_type="rate", payload={"k": [1, 2]}),
        RunCancelledError("run x was cancelled"),
    ],
)
def test_the_type_message_and_attributes_cross(error: Exception) -> None:
    back = through_json(error)
    assert type(back) is type(error)
    assert str(back) == str(error)
    assert vars(back) == vars(error)


def test_a_foreign_error_arrives_as_an_agent_error_naming_it() -> None:
    back = through_json(KeyError("boom"))
    assert isinstance(back, AgentError)
    assert str(back) == "KeyError: 'boom'"


def test_redis_event_log_needs_redis_py_only_when_made(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # makes `import redis` fail
    with pytest.raises(ConfigurationError, match=r"rxreact\[redis\]"):
        RedisEventLog("redis://127.0.0.1:1/0")
