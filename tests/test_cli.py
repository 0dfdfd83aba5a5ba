"""The `rxreact` command: the no-key demo over real HTTP, `chat` without a key, `chat` memory."""

from __future__ import annotations

import io
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from rxreact.cli import default_memory_path, main
from rxreact.memory import SQLiteChatMemory
from rxreact.model.scripted.replies import text_reply
from rxreact.testing import MockOpenAIServer


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
    monkeypatch.setenv("RXREACT_MODEL", "gpt-test")
    err = io.StringIO()
    with redirect_stderr(err):
        assert main(["chat", "hello"]) == 2
    assert "OPENAI_API_KEY" in err.getvalue()
    assert "Traceback" not in err.getvalue()


def chat(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["chat", *args])
    return code, out.getvalue()


@pytest.mark.integration
def test_chat_conversation_goes_on_across_invocations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two invocations, one --conversation: the second request carries the first turn.

    A loopback --base-url needs no key, like the demo; each ``main`` call is a fresh command
    that shares nothing with the one before but the --memory file.
    """
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = tmp_path / "chat.db"
    script = [text_reply("Hello Ada."), text_reply("You are Ada."), text_reply("Who?")]
    with MockOpenAIServer(script) as server:
        flags = ["--base-url", server.base_url, "--model", "mock", "--memory", str(db)]
        assert chat("I am Ada.", *flags, "--conversation", "c1")[0] == 0
        code, text = chat("Who am I?", *flags, "--conversation", "c1")
        assert code == 0 and "You are Ada." in text
        assert chat("Who am I?", *flags, "--conversation", "c2")[0] == 0
    second, third = server.requests[1]["messages"], server.requests[2]["messages"]
    assert [(m["role"], m["content"]) for m in second] == [
        ("user", "I am Ada."),
        ("assistant", "Hello Ada."),
        ("user", "Who am I?"),
    ]
    assert [m["content"] for m in third] == ["Who am I?"]  # another conversation
    with SQLiteChatMemory(db) as memory:
        assert memory.conversation_ids() == ["c1", "c2"]


@pytest.mark.integration
def test_chat_memory_defaults_to_xdg_data_home_and_only_with_a_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    default = tmp_path / "data" / "rxreact" / "conversations.sqlite3"
    assert default_memory_path() == default
    with MockOpenAIServer([text_reply("One."), text_reply("Two.")]) as server:
        flags = ["--base-url", server.base_url, "--model", "mock"]
        assert chat("Once?", *flags)[0] == 0
        assert not default.exists()  # a one-off question keeps nothing
        assert chat("Kept?", *flags, "--conversation", "c")[0] == 0
    with SQLiteChatMemory(default) as memory:
        assert [m.content for m in memory.load("c")] == ["Kept?", "Two."]


def test_default_memory_path_without_xdg_data_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for value in (None, "", "relative/dir"):  # unset, empty and relative mean the default
        if value is None:
            monkeypatch.delenv("XDG_DATA_HOME", raising=False)
        else:
            monkeypatch.setenv("XDG_DATA_HOME", value)
        expected = tmp_path / ".local" / "share" / "rxreact" / "conversations.sqlite3"
        assert default_memory_path() == expected


def test_chat_with_a_memory_file_that_is_not_ours_says_so_plainly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n" * 200)
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        flags = ["--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
        code = main(["chat", "hi", *flags, "--conversation", "c", "--memory", str(notes)])
    assert code == 1
    assert "ChatMemoryError" in err.getvalue() and "notes.txt" in err.getvalue()
    assert "Traceback" not in err.getvalue()


@pytest.mark.integration
def test_chat_attach_sends_images_and_files_with_the_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (tmp_path / "cat.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "notes.txt").write_bytes(b"feed the cat")
    with MockOpenAIServer([text_reply("A cat, and a note.")]) as server:
        flags = ["--base-url", server.base_url, "--model", "mock"]
        attach = ["--attach", str(tmp_path / "cat.png"), "--attach", str(tmp_path / "notes.txt")]
        code, text = chat("What is this?", *flags, *attach)
    assert code == 0 and "A cat, and a note." in text
    content = server.requests[0]["messages"][0]["content"]
    assert [part["type"] for part in content] == ["text", "image_url", "file"]
    assert content[1]["image_url"]["url"] == "data:image/png;base64,iVBORw0KGgo="
    assert content[2]["file"] == {
        "filename": "notes.txt",
        "file_data": "data:text/plain;base64,ZmVlZCB0aGUgY2F0",
    }


def test_chat_attach_of_a_missing_file_fails_before_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    err = io.StringIO()
    with MockOpenAIServer([text_reply("never")]) as server, redirect_stderr(err):
        flags = ["--base-url", server.base_url, "--model", "mock"]
        code, _ = chat("What is this?", *flags, "--attach", str(tmp_path / "nope.png"))
    assert code == 2
    assert err.getvalue().startswith(f"rxreact: --attach {tmp_path / 'nope.png'}: cannot read ")
    assert "Traceback" not in err.getvalue()
    assert server.requests == []


@pytest.mark.integration
def test_a_session_sends_the_attachments_with_its_first_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO("What is this?\nAnd now?\n"))
    (tmp_path / "cat.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    with MockOpenAIServer([text_reply("A cat."), text_reply("Still a cat.")]) as server:
        flags = [
            "--base-url",
            server.base_url,
            "--model",
            "mock",
            "--memory",
            str(tmp_path / "m.db"),
        ]
        code, text = chat(*flags, "--attach", str(tmp_path / "cat.png"))
    assert code == 0 and "Still a cat." in text
    first, second = (body["messages"] for body in server.requests)
    assert [part["type"] for part in first[-1]["content"]] == ["text", "image_url"]
    assert second[0] == first[-1]  # the first question, image and all, from memory
    assert second[-1] == {"role": "user", "content": "And now?"}  # sent once, not again


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ({"RXREACT_MODEL": ""}, "rxreact: no model name: pass --model NAME or set RXREACT_MODEL"),
        (
            {"RXREACT_MODEL": "gpt-test", "OPENAI_BASE_URL": "https://api.example.com/v1"},
            "rxreact: no API key for https://api.example.com/v1: set OPENAI_API_KEY",
        ),
    ],
)
def test_serve_refuses_a_missing_setting_at_start_in_the_commands_terms(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], expected: str
) -> None:
    pytest.importorskip("uvicorn")
    from rxreact.serve.cli import CONFIG_ENV

    monkeypatch.setenv(CONFIG_ENV, "{}")  # serve sets it: restored after the test
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    err = io.StringIO()
    with redirect_stderr(err):
        assert main(["serve", "--port", "0"]) == 2
    assert err.getvalue().startswith(expected)
    assert "api_key=" not in err.getvalue()


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--lost-after", "5"], "--lost-after takes a positive number of seconds, with --redis"),
        (["--event-log", "runs.db", "--lost-after", "0"], "--lost-after takes a positive"),
        (["--redis", "redis://127.0.0.1:1/0", "--event-log", "runs.db"], "--event-log is the"),
        (["--redis-cluster"], "--redis-cluster goes with --redis URL"),
    ],
)
def test_serve_refuses_event_log_options_that_do_not_go_together(
    flags: list[str], expected: str
) -> None:
    pytest.importorskip("uvicorn")
    err = io.StringIO()
    with redirect_stderr(err):
        assert main(["serve", "--port", "0", *flags]) == 2
    assert err.getvalue().startswith(f"rxreact serve: {expected}")


@pytest.mark.integration
@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ("anthropic:claude-test", "/v1/messages"),
        ("openai:gpt-test", "/v1/responses"),
        ("openai-chat:gpt-test", "/v1/chat/completions"),
        ("ollama:llama3:8b", "/v1/chat/completions"),
    ],
)
def test_chat_model_takes_a_provider_spec(
    spec: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-m provider:model`` picks the wire format; each reads its own base-URL variable."""
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RXREACT_MODEL"):
        monkeypatch.delenv(variable, raising=False)
    with MockOpenAIServer([text_reply("Hello from the spec.")]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.origin)
        monkeypatch.setenv("OLLAMA_BASE_URL", server.base_url)
        code, text = chat("-m", spec, "Hi")
        assert (code, text.strip()) == (0, "Hello from the spec.")
        assert server.request_paths == [path]
        assert server.requests[0]["model"] == spec.partition(":")[2]


def test_chat_refuses_an_unknown_provider_in_the_commands_terms(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    err = io.StringIO()
    with redirect_stderr(err):
        assert main(["chat", "-m", "nope:model", "hello"]) == 2
    assert "--model: unknown model prefix 'nope'" in err.getvalue()
    assert "Traceback" not in err.getvalue()
