"""`rxreact mock`: reply files are checked (the reply and the field that is wrong are named),
and `--weather` serves the weather desk the README's examples run against."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from processes import finish

from rxreact import OpenAIChatModel, ReactAgent, SQLiteChatMemory, tool
from rxreact._cli.mock import parse_replies
from rxreact.cli import main
from rxreact.errors import ConfigurationError
from rxreact.model.chunks import ChatChunk
from rxreact.model.scripted.replies import HTTPErrorReply


def test_the_vocabulary_parses() -> None:
    replies = parse_replies(
        [
            "Hello!",
            {"text": "Hi", "reasoning": "A greeting.", "interval": 0.01},
            {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}], "text": "…"},
            {"tool_calls": [{"name": "broken", "arguments": "{not json"}]},
            {"status": 429, "message": "slow down"},
        ],
        "r.json",
    )
    assert replies[4] == HTTPErrorReply(429, "slow down")
    texts = ["".join(i.text or "" for i in r if isinstance(i, ChatChunk)) for r in replies[:3]]
    assert texts == ["Hello!", "Hi", "…"]
    calls = [d for item in replies[3] if isinstance(item, ChatChunk) for d in item.tool_calls]
    assert "".join(d.arguments or "" for d in calls) == "{not json"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"text": "hi"}, "r.json: expected a JSON list of replies, got an object"),
        ([], "r.json: the list of replies is empty"),
        (["ok", 3], "r.json: reply 2: expected a string or an object, got the number 3"),
        (["ok", {"txt": "hi"}], "r.json: reply 2: expected a field text, tool_calls or status"),
        ([{"text": "hi", "reasonning": "x"}], "reply 1: unknown field 'reasonning' in a text"),
        ([{"text": 5}], "r.json: reply 1: text: expected a string, got the number 5"),
        ([{"text": "a", "reasoning": ["x"]}], "reply 1: reasoning: expected a string, got a list"),
        ([{"text": "a", "interval": -1}], "reply 1: interval: expected seconds >= 0, got -1"),
        ([{"status": 200}], "r.json: reply 1: status: expected 400-599, got 200"),
        ([{"status": "429"}], "reply 1: status: expected 400-599, got '429'"),
        ([{"status": 500, "message": None}], "reply 1: message: expected a string, got null"),
        ([{"tool_calls": []}], "reply 1: tool_calls: expected a non-empty list of calls"),
        ([{"tool_calls": ["get_weather"]}], "reply 1: tool_calls[0]: expected an object"),
        (
            ["a", "b", {"tool_calls": [{"name": "a"}, {"arguments": {}}]}],
            "r.json: reply 3: tool_calls[1].name: expected the tool's name, got None",
        ),
        (
            [{"tool_calls": [{"name": "a", "arguments": [1]}]}],
            "reply 1: tool_calls[0].arguments: expected an object (or a string of raw JSON), "
            "got a list",
        ),
        (
            [{"tool_calls": [{"name": "a", "args": {}}]}],
            "reply 1: tool_calls[0]: unknown field 'args' (allowed: arguments, name)",
        ),
    ],
)
def test_a_wrong_reply_is_named_with_its_field(data: Any, message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        parse_replies(data, "r.json")
    assert message in str(caught.value)


def test_the_command_refuses_a_wrong_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["Hi", {"tool_calls": [{"name": "x", "arguments": 3}]}]))
    assert main(["mock", str(replies)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"rxreact: {replies}: reply 2: tool_calls[0].arguments: expected an object "
        "(or a string of raw JSON), got the number 3\n"
    )
    assert main(["mock", str(replies), "--weather"]) == 2
    assert "give a reply FILE or --weather, not both" in capsys.readouterr().err


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny, 21°C"


@pytest.mark.integration
def test_mock_weather_answers_the_quick_start(tmp_path: Path) -> None:
    """The quick start against `rxreact mock --weather`, as a reader would run it."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    mock = subprocess.Popen(
        [sys.executable, "-m", "rxreact.cli", "mock", "--weather", "--interval", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert mock.stdout is not None
        first = mock.stdout.readline().strip()
        assert re.fullmatch(r"OPENAI_BASE_URL=http://127\.0\.0\.1:\d+/v1", first), first
        base_url = first.split("=", 1)[1]
        with (
            OpenAIChatModel("mock", base_url=base_url) as model,
            SQLiteChatMemory(tmp_path / "chat.db") as memory,
        ):
            agent = ReactAgent(model, [get_weather], memory=memory)
            assert agent.call("Weather in Paris?", conversation_id="me") == (
                "Here is what I found: Paris: sunny, 21°C."
            )
            assert "".join(agent.iter_text("And in Rome?", conversation_id="me")) == (
                "Here is what I found: Rome: sunny, 21°C."
            )
            # no city named: the conversation's last one, from memory
            result = agent.run("And tomorrow?", conversation_id="me")
            assert result.rounds == 2 and "Rome" in result.answer
            assert agent.call("Thanks!", conversation_id="me") == "You are welcome."
    finally:
        _, err = finish(mock, interrupt=signal.SIGINT, timeout=10)  # SIGKILLed if it ignores it
    assert mock.returncode == 0
    assert "the weather desk" in err and "export OPENAI_BASE_URL=" in err
    assert "stopped after 7 requests" in err  # 2 + 2 + 2 + 1


@pytest.mark.integration
def test_mock_prints_every_variable_and_serves_every_wire_format(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What `rxreact mock` prints is all a reader exports to run any README example on it."""
    from rxreact import AnthropicModel, OpenAIResponsesModel
    from rxreact.model.spec import PREFIXES, base_url_variable

    mock = subprocess.Popen(
        [sys.executable, "-m", "rxreact.cli", "mock", "--weather", "--interval", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert mock.stdout is not None
        lines = [mock.stdout.readline().strip()]
        while not lines[-1].startswith("RXREACT_MODEL="):
            lines.append(mock.stdout.readline().strip())
        exported = dict(line.split("=", 1) for line in lines)
        wanted = {base_url_variable(f"{prefix}:m") for prefix in PREFIXES} | {"RXREACT_MODEL"}
        assert set(exported) == wanted and lines[0].startswith("OPENAI_BASE_URL=")
        for name, value in exported.items():
            monkeypatch.setenv(name, value)
        for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "AWS_ACCESS_KEY_ID"):
            monkeypatch.delenv(key, raising=False)
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        found = "Here is what I found: Paris: sunny, 21°C."
        for model in (
            OpenAIChatModel(),
            OpenAIResponsesModel(),
            AnthropicModel(),
            "ollama:llama3.2",
            "groq:llama-3.3-70b-versatile",
            "gemini:gemini-3-flash",
            "bedrock:us.amazon.nova-pro-v1:0",
        ):
            assert ReactAgent(model, [get_weather]).call("Weather in Paris?") == found, model
    finally:
        _, err = finish(mock, interrupt=signal.SIGINT, timeout=10)
    assert "every wire format" in err and "ANTHROPIC_BASE_URL=" in err


def test_a_child_that_ignores_ctrl_c_is_killed_and_reported() -> None:
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys, threading; signal.signal(signal.SIGINT, signal.SIG_IGN); "
            "print('ready', flush=True); threading.Event().wait()",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert stubborn.stdout is not None and stubborn.stdout.readline() == "ready\n"
    with pytest.raises(AssertionError, match=r"did not end within 0\.5 s"):
        finish(stubborn, interrupt=signal.SIGINT, timeout=0.5)
    assert stubborn.returncode == -signal.SIGKILL
