"""Bad configuration fails at construction, with a message naming the parameter."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxreact import (
    ChatMemoryError,
    InvalidArgumentError,
    ReactAgent,
    RxReactError,
    ScriptedModel,
    SQLiteChatMemory,
    ToolDefinitionError,
    tool,
)
from rxreact.model.scripted.replies import text_reply


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


def model() -> ScriptedModel:
    return ScriptedModel([text_reply("Hi")])


def test_the_error_is_in_rxreacts_tree_and_a_builtin_kind() -> None:
    assert issubclass(InvalidArgumentError, RxReactError)
    assert issubclass(InvalidArgumentError, TypeError)
    assert issubclass(InvalidArgumentError, ValueError)
    assert issubclass(ToolDefinitionError, InvalidArgumentError)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": None}, r"^model must be a ChatModel .*got None$"),
        ({"model": 42}, r"^model must be a ChatModel .*got 42 \(int\)$"),
        ({"model": "nope:gpt-4o"}, r"^unknown model prefix 'nope'"),
        ({"max_rounds": "3"}, r"^max_rounds must be an int >= 1, got '3' \(str\)$"),
        ({"max_rounds": 2.5}, r"^max_rounds must be an int >= 1, got 2\.5 \(float\)$"),
        ({"max_rounds": True}, r"^max_rounds must be an int >= 1, got True \(bool\)$"),
        ({"max_rounds": 0}, r"^max_rounds must be >= 1, got 0$"),
        ({"max_tool_errors": -1}, r"^max_tool_errors must be >= 0, got -1$"),
        ({"tool_timeout": -5}, r"^tool_timeout must be > 0 seconds .*got -5$"),
        ({"tool_timeout": float("nan")}, r"^tool_timeout must be > 0 seconds"),
        ({"tool_timeout": "60"}, r"^tool_timeout must be a number of seconds or None"),
        ({"buffer_size": 0}, r"^buffer_size must be >= 1, got 0$"),
        ({"memory": "chat.db"}, r"^memory must be a ChatMemory, got 'chat\.db' \(str\)$"),
        ({"system_prompt": 42}, r"^system_prompt must be a str, got 42 \(int\)$"),
        ({"tools": get_weather}, r"^tools must be a list of tools, .*write tools=\[\.\.\.\]$"),
        ({"tools": [get_weather, "get_forecast"]}, r"^tools must hold @tool functions"),
        ({"tools": [get_weather, get_weather]}, r"^tools: two tools are named 'get_weather'$"),
    ],
)
def test_bad_agent_settings(kwargs: dict[str, Any], message: str) -> None:
    settings: dict[str, Any] = {"model": model(), **kwargs}
    with pytest.raises(InvalidArgumentError, match=message):
        ReactAgent(**settings)


def test_good_settings_pass() -> None:
    agent = ReactAgent(model(), [get_weather], max_rounds=1, max_tool_errors=0, tool_timeout=1)
    assert agent.tool_timeout == 1.0
    assert ReactAgent(model(), (t for t in [get_weather]), tool_timeout=None).tools


@pytest.mark.parametrize("name", ["get weather", "météo", "a" * 65, "tools.get"])
def test_tool_names_providers_reject(name: str) -> None:
    def f(city: str) -> str:
        """Doc."""
        return city

    with pytest.raises(ToolDefinitionError, match="not accepted by model providers"):
        tool(f, name=name)


def test_a_lambda_needs_a_name() -> None:
    with pytest.raises(ToolDefinitionError, match=r"'<lambda>' .*\(pass name=\.\.\.\)$"):
        tool(lambda: "x", description="d")
    assert tool(lambda: "x", name="ok-name_1", description="d").name == "ok-name_1"


def test_an_unannotated_parameter_is_named() -> None:
    def lookup(city, days: int = 1) -> str:  # type: ignore[no-untyped-def]
        """Doc."""
        return str(city)

    with pytest.raises(
        ToolDefinitionError, match=r"^tool 'lookup': parameter 'city' has no type annotation"
    ):
        tool(lookup)


def test_a_type_without_a_json_schema_names_the_parameter() -> None:
    def query(sql: str, connection: sqlite3.Connection) -> str:
        """Doc."""
        return sql

    with pytest.raises(ToolDefinitionError) as caught:
        tool(query)
    text = str(caught.value)
    assert text.startswith("tool 'query': parameter 'connection' has type Connection")
    assert "errors.pydantic.dev" not in text
    assert "arbitrary_types_allowed" not in text
    assert "\n" not in text


def test_a_question_that_is_not_a_string_or_parts() -> None:
    agent = ReactAgent(model(), scheduler=TestScheduler())
    expected = r"^question must be a str or a sequence of str, Text, Image and File, got None$"
    for call in (agent.stream, agent.run, agent.call, agent.text, agent.iter, agent.start):
        with pytest.raises(InvalidArgumentError, match=expected):
            call(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="question must be a str"):
        asyncio.run(agent.arun(None))  # type: ignore[arg-type]


def test_sqlite_memory_expands_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    memory = SQLiteChatMemory("~/chat.db")
    assert memory.path == str(tmp_path / "chat.db")
    assert (tmp_path / "chat.db").exists()
    assert not Path("~").exists()


def test_sqlite_memory_names_a_missing_directory(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    with pytest.raises(ChatMemoryError, match=f"the directory '{missing}' does not exist"):
        SQLiteChatMemory(missing / "chat.db")
