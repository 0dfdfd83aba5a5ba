"""The examples in docs/runs.md run as written (the Redis one against a real redis-server)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from redis_server import RedisServer

DOC = Path(__file__).resolve().parents[1] / "docs" / "runs.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_doc_has_examples() -> None:
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_example_runs(
    index: int,
    redis_server: RedisServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("REDIS_URL", redis_server.url)
    exec(compile(EXAMPLES[index], f"docs/runs.md example {index + 1}", "exec"), {})
    assert capsys.readouterr().out  # each example prints what it shows
