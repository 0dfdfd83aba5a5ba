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
    InMemoryChatMemory,
    InMemoryEventLog,
    InvalidArgumentError,
    LLMJudge,
    OpenAIChatModel,
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


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": OpenAIChatModel}, r"^model must be a ChatModel, got the class OpenAIChatModel"),
        ({"memory": InMemoryChatMemory}, r"^memory must be a ChatMemory, got the class"),
        ({"judge": LLMJudge}, r"^judge must be an instance, got the class LLMJudge"),
        ({"judge": "strict"}, r"^judge must be callable, got 'strict' \(str\)$"),
        ({"approver": True}, r"^approver must be callable, got True \(bool\)$"),
        ({"event_log": InMemoryEventLog}, r"^event_log must be an instance, got the class"),
        ({"event_log": "redis://"}, r"^event_log must be an EventLog"),
        ({"scheduler": "pool"}, r"^scheduler must be a scheduler, got 'pool' \(str\)$"),
        ({"tools_scheduler": 4}, r"^tools_scheduler must be a scheduler"),
        ({"forced_final_instruction": ""}, r"^forced_final_instruction must be a non-empty str"),
        ({"send_reasoning": "no"}, r"^send_reasoning must be True or False, got 'no' \(str\)$"),
        ({"trace_content": 1}, r"^trace_content must be True or False, got 1 \(int\)$"),
        ({"approval_timeout": 0}, r"^approval_timeout must be > 0 seconds"),
        ({"options": [("temperature", 0)]}, r"^options must be a dict or None"),
        ({"options": {0: "x"}}, r"^options keys must be str, got 0 \(int\)$"),
    ],
)
def test_every_agent_option_is_checked_at_construction(
    kwargs: dict[str, Any], message: str
) -> None:
    settings: dict[str, Any] = {"model": model(), **kwargs}
    with pytest.raises(InvalidArgumentError, match=message):
        ReactAgent(**settings)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": 4}, r"^model must be a str or None, got 4 \(int\)$"),
        ({"base_url": 123}, r"^base_url must be a str or None, got 123 \(int\)$"),
        ({"api_key": b"sk"}, r"^api_key must be a str or None"),
        ({"connect_timeout": "5"}, r"^connect_timeout must be a number of seconds or None"),
        ({"first_chunk_timeout": -1}, r"^first_chunk_timeout must be > 0 seconds"),
        ({"chunk_timeout": 0}, r"^chunk_timeout must be > 0 seconds"),
        ({"max_retries": -1}, r"^max_retries must be >= 0, got -1$"),
        ({"max_retries": 1.5}, r"^max_retries must be an int >= 0"),
        ({"backoff": 2}, r"^backoff must be a Backoff or None, got 2 \(int\)$"),
        ({"send_reasoning": "yes"}, r"^send_reasoning must be True or False"),
        ({"think_tags": None}, r"^think_tags must be True or False, got None$"),
        ({"include_usage": 1}, r"^include_usage must be True or False"),
        ({"headers": {"x-team": 7}}, r"^headers values must be str, got 7 \(int\) for 'x-team'$"),
        ({"headers": "x-team: 7"}, r"^headers must be a dict or None"),
        ({"http_client": "client"}, r"^http_client must be an httpx.Client or httpx.AsyncClient"),
        ({"io_scheduler": "thread"}, r"^io_scheduler must be a scheduler or None"),
        ({"options": "temperature=0"}, r"^options must be a dict or None"),
        ({"max_line_bytes": 0}, r"^max_line_bytes must be >= 1 \(or None\), got 0$"),
        ({"max_tool_arguments": "1M"}, r"^max_tool_arguments must be an int >= 1 or None"),
    ],
)
def test_every_model_option_is_checked_at_construction(
    kwargs: dict[str, Any], message: str
) -> None:
    settings: dict[str, Any] = {"model": "m", "base_url": "http://127.0.0.1:9/v1", **kwargs}
    with pytest.raises(InvalidArgumentError, match=message):
        OpenAIChatModel(**settings)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"timeout": "5"}, r"^timeout must be a number of seconds or None, got '5' \(str\)$"),
        ({"timeout": 0}, r"^timeout must be > 0 seconds"),
        ({"max_result_chars": -5}, r"^max_result_chars must be >= 1 \(or None\), got -5$"),
        ({"max_result_chars": 1e5}, r"^max_result_chars must be an int >= 1 or None"),
        ({"name": 7}, r"^name must be a str or None, got 7 \(int\)$"),
        ({"description": ["a"]}, r"^description must be a str or None"),
        ({"requires_approval": "yes"}, r"^requires_approval must be True, False or a predicate"),
    ],
)
def test_every_tool_option_is_checked_where_it_is_given(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        tool(**kwargs)  # before any function: @tool(timeout="5") fails on its own line


def test_good_options_pass() -> None:
    assert tool(timeout=5, max_result_chars=None, requires_approval=lambda a: True)
    assert OpenAIChatModel(
        "m",
        base_url="http://127.0.0.1:9/v1",
        connect_timeout=None,
        headers={"x-team": "7"},
        max_line_bytes=None,
        options={"temperature": 0},
    )
    agent = ReactAgent(model(), approval_timeout=5, options={"seed": 1}, trace_content=True)
    assert agent.options == {"seed": 1}


@pytest.mark.parametrize("conversation_id", ["a b/c@d.e", "météo 北京", "x" * 200, " "])
def test_conversation_ids_may_hold_any_printable_character(conversation_id: str) -> None:
    memory = InMemoryChatMemory()
    agent = ReactAgent(model(), memory=memory, scheduler=TestScheduler())
    assert agent.call("q", conversation_id) == "Hi"
    assert len(memory.load(conversation_id)) == 2
