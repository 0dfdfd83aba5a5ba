"""The examples of docs/redis.md run as written, on a real three-master Redis Cluster."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from redis_cluster import LocalCluster

DOC = Path(__file__).resolve().parents[1] / "docs" / "redis.md"


def test_the_examples_run_in_order(
    redis_cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    redis_cluster.flush()
    monkeypatch.setenv("REDIS_CLUSTER_URL", redis_cluster.url)
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 1
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    assert "Oslo: light snow." in capsys.readouterr().out
