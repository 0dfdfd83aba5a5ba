"""The examples of docs/conversations.md run as written (the Redis ones on a real server and a
real three-master cluster)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from redis_cluster import LocalCluster
from redis_server import RedisServer

DOC = Path(__file__).resolve().parents[1] / "docs" / "conversations.md"


def test_the_examples_run_in_order(
    redis_server: RedisServer,
    redis_cluster: LocalCluster,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("REDIS_URL", redis_server.url)
    monkeypatch.setenv("REDIS_CLUSTER_URL", redis_cluster.url)
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 6
    namespace: dict[str, object] = {}
    for block in blocks:  # one namespace, as a reader pastes them one after another
        exec(compile(block, str(DOC), "exec"), namespace)
    assert "busy: chat-1" in capsys.readouterr().out
