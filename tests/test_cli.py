"""The `rxreact` command: the no-key demo over real HTTP, and `chat` without a key."""

from __future__ import annotations

import io
import re
from contextlib import redirect_stderr, redirect_stdout

import pytest

from rxreact.cli import main


@pytest.mark.integration
def test_demo_runs_both_questions_over_loopback_http() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["demo", "--latency", "0.02"]) == 0
    text = out.getvalue()
    assert re.search(r"mock OpenAI-compatible server on http://127\.0\.0\.1:\d+/v1", text)
    for name in ("get_weather", "get_forecast", "search_warnings"):
        assert f"running {name}" in text
    assert "Beijing today: sunny, 12°C" in text  # the report is written from the tool results
    assert "Shanghai is warmer today, 17°C against 12°C in Beijing, 5°C warmer." in text
    assert text.count("── round") == 3  # two rounds for the report, one from memory


def test_chat_without_a_key_says_so_plainly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    err = io.StringIO()
    with redirect_stderr(err):
        assert main(["chat", "hello"]) == 2
    assert "OPENAI_API_KEY" in err.getvalue()
    assert "Traceback" not in err.getvalue()
