"""A fallback chain named on the command line: ``rxreact chat -m "a|b"`` and ``rxreact serve
-m "a|b"`` (its worker's app), the first model down, the second answering."""

from __future__ import annotations

import gc
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from fault_server import Fault, FaultServer

from rxreact.cli import main
from rxreact.model.scripted.replies import text_reply
from rxreact.testing import MockOpenAIServer

pytestmark = pytest.mark.integration

SPEC = "openai-chat:primary|groq:secondary"


def test_chat_with_a_chain_answers_from_the_second_model_when_the_first_is_down(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with (
        FaultServer(lambda number, body: Fault("status", status=503)) as down,
        MockOpenAIServer([text_reply("From the second.")]) as up,
    ):
        monkeypatch.setenv("OPENAI_BASE_URL", down.base_url)
        monkeypatch.setenv("GROQ_BASE_URL", up.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["chat", "-m", SPEC, "hello"]) == 0
        assert "From the second." in out.getvalue()
        assert down.requests == 3  # 1 + the default max_retries=2, then the next model
        assert up.requests[0]["model"] == "secondary"


def test_serve_builds_its_agent_on_the_chain(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from starlette.testclient import TestClient

    from rxreact.serve.cli import CONFIG_ENV, app_from_env

    with (
        FaultServer(lambda number, body: Fault("status", status=503)) as down,
        MockOpenAIServer([text_reply("Served by the second.")]) as up,
    ):
        monkeypatch.setenv("OPENAI_BASE_URL", down.base_url)
        monkeypatch.setenv("GROQ_BASE_URL", up.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        config = {"model": SPEC, "insecure_no_auth": True, "memory": str(tmp_path / "m.db")}
        monkeypatch.setenv(CONFIG_ENV, json.dumps(config))
        try:
            app = app_from_env()
        finally:
            gc.unfreeze()  # the worker freezes what start-up made; this process goes on
        with TestClient(app, base_url="http://127.0.0.1") as client:
            response = client.post(
                "/v1/chat/completions",
                json={"model": "agent", "messages": [{"role": "user", "content": "hello"}]},
            )
        assert response.status_code == 200, response.text
        assert response.json()["choices"][0]["message"]["content"] == "Served by the second."
        assert down.requests == 3
