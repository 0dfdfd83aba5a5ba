"""What a new user of ``rxreact serve`` gets: a real model is served with no tools unless
``--tools`` names some (the A2A card then advertises none), and the demo's model answers the
question it was asked, not the same Beijing report to everything."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from reactivex import operators as ops
from serve_helpers import serving

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent
from rxreact.demo import FOLLOW_UP, QUESTION, demo_model_script, demo_tools
from rxreact.serve.cli import CONFIG_ENV, app_from_env
from rxreact.testing import MockOpenAIServer, weather_desk


@pytest.fixture
def served_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``app_from_env`` as ``rxreact serve -m mock --base-url MOCK [--tools ...]`` builds it."""
    opened: list[Any] = []

    def build(*tools: str) -> Any:
        server = MockOpenAIServer(weather_desk).start()
        config = {
            "model": "mock",
            "base_url": server.base_url,
            "memory": str(tmp_path / "memory.sqlite3"),
            "tools": list(tools),
        }
        monkeypatch.setenv(CONFIG_ENV, json.dumps(config))
        app = app_from_env()
        gc.unfreeze()  # app_from_env freezes what a worker made; a test process goes on
        opened.append((server, app))
        return app

    yield build
    for server, app in opened:
        app.state.runs.agent.memory.close()
        server.stop()


def card_skills(app: Any) -> set[str]:
    with serving(app) as url:
        card = httpx.get(f"{url}/.well-known/agent-card.json", timeout=10).json()
    return {skill["id"] for skill in card["skills"]}


def test_a_served_model_has_no_tools_unless_told(served_app: Any) -> None:
    bare = served_app()
    assert bare.state.runs.agent.tools == {}
    assert card_skills(bare) == {"answer"}

    with_tools = served_app("serve_helpers:get_weather")
    assert set(with_tools.state.runs.agent.tools) == {"get_weather"}
    assert card_skills(with_tools) == {"answer", "tool:get_weather"}


@pytest.fixture
def demo_agent() -> Iterator[ReactAgent]:
    with (
        MockOpenAIServer(demo_model_script) as server,
        OpenAIChatModel("mock-weather-model", base_url=server.base_url, api_key="sk") as model,
    ):
        yield ReactAgent(model, demo_tools(0), memory=InMemoryChatMemory())


def test_the_demo_model_answers_the_question_asked(demo_agent: ReactAgent) -> None:
    answer = demo_agent.call("What is 2+2?", conversation_id="other")
    assert "Beijing" not in answer and "report" not in answer.lower()

    paris = demo_agent.start("What is the weather in Paris?", conversation_id="paris")
    events = paris.events().pipe(ops.to_list()).run()
    calls = [e for e in events if e.type == "tool_call_started"]
    assert [c.name for c in calls] == ["get_weather"]
    assert "Paris" in paris.result(timeout=10).answer

    report = demo_agent.call(QUESTION, conversation_id="seeded")
    assert report.startswith("Weather report.") and "Shanghai" in report
    follow_up = demo_agent.call(FOLLOW_UP, conversation_id="seeded")
    assert "Shanghai is warmer today, 17°C against 12°C" in follow_up


def test_deps_factory_names_the_served_runs_deps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rxreact serve --deps-factory MODULE:NAME` is create_app's deps_factory; a name that
    does not import is the option's own error."""
    from serve_helpers import deps_for_request

    from rxreact.errors import ConfigurationError

    server = MockOpenAIServer(weather_desk).start()
    config = {"model": "mock", "base_url": server.base_url, "memory": str(tmp_path / "m.db")}
    try:
        monkeypatch.setenv(
            CONFIG_ENV, json.dumps({**config, "deps_factory": "serve_helpers:deps_for_request"})
        )
        app = app_from_env()
        gc.unfreeze()
        assert app.state.runs.deps_factory is deps_for_request
        app.state.runs.agent.memory.close()
        monkeypatch.setenv(CONFIG_ENV, json.dumps({**config, "deps_factory": "serve_helpers:nope"}))
        with pytest.raises(ConfigurationError, match="--deps-factory serve_helpers:nope"):
            app_from_env()
    finally:
        gc.unfreeze()
        server.stop()
