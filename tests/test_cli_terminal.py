"""The `rxreact` command as a person meets it: real processes, pipes and a pseudo-terminal."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from processes import finish

from rxreact import BadRequestError, OpenAIChatModel, ReactAgent, __version__, tool
from rxreact.cli import SIGPIPE_STATUS, main
from rxreact.memory import SQLiteChatMemory
from rxreact.messages import ChatRequest, ToolMessage, UserMessage
from rxreact.model.scripted.replies import Reply, text_reply, tool_call_reply
from rxreact.testing import MockOpenAIServer

pytestmark = pytest.mark.integration


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


TOOLS = '''
from rxreact import CancellationToken, tool

@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"

@tool
def slow(token: CancellationToken) -> str:
    """Runs until cancelled."""
    token.wait(30)
    return "late"

everything = [get_weather, slow]
'''


def desk(request: ChatRequest) -> Reply:
    """Calls the tool a question names ("use slow", "weather in X"); answers tool results."""
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        return text_reply(f"Found: {last.content}.", pieces=3, reasoning="Reading the result.")
    text = last.content if isinstance(last, UserMessage) else ""
    if "use slow" in text:
        return tool_call_reply(("slow", {}))
    city = re.search(r"in ([A-Z]\w+)", text or "")
    if city and request.tools:
        return tool_call_reply(("get_weather", {"city": city[1]}))
    return text_reply("Hello from the mock.", pieces=3)


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(desk) as mock:
        yield mock


@pytest.fixture
def env(tmp_path: Path, server: MockOpenAIServer) -> dict[str, str]:
    (tmp_path / "weather_tools.py").write_text(TOOLS)
    environment = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "NO_COLOR")}
    environment.update(
        OPENAI_BASE_URL=server.base_url,  # loopback: no key needed, from the environment too
        RXREACT_MODEL="mock",
        XDG_DATA_HOME=str(tmp_path / "data"),
        PYTHONPATH=os.pathsep.join([str(Path(__file__).parent.parent), str(tmp_path)]),
    )
    return environment


def rxreact(*args: str, env: dict[str, str], stdin: str = "", cwd: Path | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "rxreact.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=30,
    )


# -- pipes: decorations to stderr, the answer alone on stdout --------------------------------


def test_only_the_answer_goes_to_stdout(env: dict[str, str], tmp_path: Path) -> None:
    done = rxreact("chat", "Weather in Paris?", "--tools", "weather_tools:everything", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Found: Paris: sunny.\n"
    assert "running get_weather" in done.stderr
    assert "Reading the result." in done.stderr  # reasoning is a decoration too
    assert "\x1b[" not in done.stdout + done.stderr  # not a terminal: no colour, no spinner


def test_the_question_from_stdin(env: dict[str, str], server: MockOpenAIServer) -> None:
    done = rxreact("chat", "-", env=env, stdin="Hi there,\nhow are you?\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the mock.\n"
    assert "[1 model request]" in done.stderr  # singular, and no "(s)"
    assert server.requests[-1]["messages"][-1]["content"] == "Hi there,\nhow are you?"


def test_a_session_from_piped_lines_keeps_its_history(
    env: dict[str, str], server: MockOpenAIServer
) -> None:
    tools = ["--tools", "weather_tools:get_weather"]
    done = rxreact("chat", *tools, env=env, stdin="Hello\n\nWeather in Oslo?\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the mock.\nFound: Oslo: sunny.\n"
    contents = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user"]
    assert contents == ["Hello", "Weather in Oslo?"]


# -- a reader that goes away: `rxreact chat q | head -c 3` ----------------------------------------

ENDLESS = "word " * 6000
"""An answer that streams for a minute: a command that ends sooner was stopped, not finished."""


ATTEMPTS = 8
"""Pipelines in a row: each starts a Python process, seconds on a busy machine, so twenty of
them overran the test's 60 s."""


def chat_into_head(env: dict[str, str], *args: str, merged: bool = False) -> tuple[int, bytes, str]:
    """``rxreact chat ARGS | head -c 3`` (``2>&1`` too when ``merged``): the command's exit
    status, what head printed, and the command's stderr."""
    command = subprocess.Popen(
        [sys.executable, "-m", "rxreact.cli", "chat", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        env=env,
    )
    head = subprocess.Popen(["head", "-c", "3"], stdin=command.stdout, stdout=subprocess.PIPE)
    assert command.stdout is not None
    command.stdout.close()  # head holds the only reading end, as in a shell pipeline
    try:
        printed, _ = head.communicate(timeout=20)
        _, err = command.communicate(timeout=20)
    finally:  # whatever happened (pytest-timeout's interrupt too): no process, no open pipe
        for process in (command, head):
            if process.poll() is None:
                process.kill()
            process.communicate(timeout=10)  # reads to EOF and closes its pipes
    return command.returncode, printed, (err or b"").decode()


@pytest.mark.skipif(shutil.which("head") is None, reason="needs head(1)")
def test_head_ends_the_command_quietly_every_time(env: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    with MockOpenAIServer(lambda _: text_reply(ENDLESS, interval=0.01)) as endless:
        environment = {**env, "OPENAI_BASE_URL": endless.base_url}
        for attempt in range(ATTEMPTS):
            args = ("Tell me everything.", "--conversation", "c", "--memory", str(db))
            status, printed, err = chat_into_head(environment, *args)
            assert printed == b"wor"
            assert status == SIGPIPE_STATUS, f"attempt {attempt}: {err}"
            assert err.splitlines() == ["── round 1 ──"], f"attempt {attempt}: {err}"
        # every run was stopped mid-answer: its stream abandoned, its turn never stored
        assert endless.wait_for_disconnects(ATTEMPTS, timeout=10)
        assert len(endless.requests) == ATTEMPTS
    with SQLiteChatMemory(db) as memory:
        assert memory.load("c") == []


@pytest.mark.skipif(shutil.which("head") is None, reason="needs head(1)")
def test_head_on_both_streams_ends_the_command_quietly(env: dict[str, str]) -> None:
    with MockOpenAIServer(lambda _: text_reply(ENDLESS, interval=0.01)) as endless:
        environment = {**env, "OPENAI_BASE_URL": endless.base_url}
        for _ in range(3):
            status, printed, _ = chat_into_head(environment, "Tell me everything.", merged=True)
            assert (status, printed) == (SIGPIPE_STATUS, "─".encode())  # the round marker's


def run_main(
    args: list[str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> tuple[int, str, str]:
    """``main`` in this process (the code path of the command, without a process start)."""
    for name in ("OPENAI_API_KEY", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name in ("OPENAI_BASE_URL", "RXREACT_MODEL", "XDG_DATA_HOME"):
        monkeypatch.setenv(name, env[name])
    try:
        code = main(args)
    except SystemExit as exit:  # argparse: usage errors, --help, --version
        code = int(exit.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("args", "environment", "expected"),
    [
        (["chat", "hi", "--max-rounds", "0"], {}, "--max-rounds: must be at least 1, got 0"),
        (["chat", "hi"], {"RXREACT_MODEL": ""}, "pass --model NAME or set RXREACT_MODEL"),
        (["chat", "hi", "--tools", "nowhere:x"], {}, "--tools nowhere:x: cannot import nowhere"),
        (["chat", "hi", "--tools", "weather_tools:nope"], {}, "weather_tools has no 'nope'"),
        (["chat", "hi", "--tools", "weather_tools"], {}, "write MODULE:NAME"),
        (
            ["chat", "hi", "--memory", "/nonexistent/dir/c.db", "--conversation", "c"],
            {},
            "the directory '/nonexistent/dir' does not exist",
        ),
        (
            ["chat", "hi"],
            {"OPENAI_BASE_URL": "https://api.example.com/v1"},
            "no API key for https://api.example.com/v1: set OPENAI_API_KEY (a server on a",
        ),
        (["chat", "hi", "--base-url", "localhost:8001"], {}, "--base-url: expected an http(s) URL"),
        (["chat", "hi"], {"OPENAI_BASE_URL": "127.0.0.1:8001"}, "OPENAI_BASE_URL: expected an"),
        (["chat", ""], {}, 'chat "": the question is empty'),
        (["chat", "  \n"], {}, 'chat "": the question is empty'),
        (["mock", "/nonexistent.json"], {}, "cannot read /nonexistent.json"),
    ],
)
def test_errors_are_one_line(
    env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
    args: list[str],
    environment: dict[str, str],
    expected: str,
) -> None:
    monkeypatch.chdir(tmp_path)  # where weather_tools.py is
    code, _, err = run_main(args, {**env, **environment}, monkeypatch, capsys)
    assert code in (1, 2)
    assert expected in err
    decorations = [line for line in err.splitlines() if line.startswith("rxreact")]
    assert len(decorations) == 1, err
    assert "Traceback" not in err
    assert "── round" not in err  # refused before anything started


def test_version_and_help(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    assert run_main(["--version"], env, monkeypatch, capsys)[1] == f"rxreact {__version__}\n"
    for args in (["--help"], ["chat", "--help"], ["mock", "--help"]):
        code, text, _ = run_main(args, env, monkeypatch, capsys)
        assert code == 0
        assert "usage: rxreact" in text
        assert "``" not in text and ":class:" not in text and "::" not in text


# -- a terminal --------------------------------------------------------------------------------


class Terminal:
    """A process on a pseudo-terminal: what it printed, and a way to type."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rxreact.cli", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**env, "TERM": "xterm"},
        )
        os.close(slave)
        self.output = ""

    def read_until(self, pattern: str, timeout: float = 20.0) -> str:
        """Everything printed until ``pattern`` (a regex) appears in the output."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.output):
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no {pattern!r} in {self.output!r}"
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the process ended and closed the terminal
                    chunk = b""
                assert chunk, f"the process ended without {pattern!r}: {self.output!r}"
                self.output += chunk.decode(errors="replace")
        return self.output

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
        code = self.process.wait(10)
        os.close(self.master)
        return code


def test_interactive_session_with_ctrl_c(env: dict[str, str], server: MockOpenAIServer) -> None:
    terminal = Terminal(["chat", "--tools", "weather_tools:everything"], env)
    try:
        terminal.read_until(r"you> ")
        terminal.type("Weather in Paris?\n")
        terminal.read_until(r"Found: Paris: sunny\.[\s\S]*you> ")
        terminal.type("please use slow\n")
        terminal.read_until(r"running slow[\s\S]*running 1 tool")  # the spinner: a tool runs
        terminal.process.send_signal(signal.SIGINT)
        terminal.read_until(r"interrupted[\s\S]*you> ")
        terminal.type("Thanks\n")
        terminal.read_until(r"Hello from the mock\.[\s\S]*you> ")
        terminal.type("\x04")  # Ctrl-D
        assert terminal.process.wait(10) == 0
    finally:
        terminal.close()
    output = terminal.output
    assert "\x1b[" in output  # colour on a terminal
    assert "\x1b[2;3mReading " in output  # reasoning dimmed (and in italics)
    assert "Traceback" not in output
    # the interrupted turn left nothing behind: the history the server saw is valid (it checks)
    # and holds the first turn and the last question, not the cancelled tool call
    last = server.requests[-1]["messages"]
    users = [m["content"] for m in last if m["role"] == "user"]
    assert users == ["Weather in Paris?", "Thanks"]
    assert all("slow" not in str(m.get("tool_calls", "")) for m in last)


def test_no_color_on_a_terminal(env: dict[str, str]) -> None:
    terminal = Terminal(
        ["chat", "Weather in Rome?", "--tools", "weather_tools:get_weather"],
        {**env, "NO_COLOR": "1"},
    )
    try:
        terminal.read_until(r"Found: Rome: sunny\.")
        assert terminal.process.wait(10) == 0
    finally:
        terminal.close()
    assert "\x1b[" not in terminal.output


def test_ctrl_c_during_a_one_off_question(env: dict[str, str]) -> None:
    terminal = Terminal(["chat", "please use slow", "--tools", "weather_tools:slow"], env)
    try:
        terminal.read_until(r"running slow")
        terminal.process.send_signal(signal.SIGINT)
        terminal.read_until(r"\n(\x1b\[33m)?interrupted")
        assert terminal.process.wait(10) == 130
    finally:
        terminal.close()
    assert "Traceback" not in terminal.output


# -- rxreact mock ------------------------------------------------------------------------------


def test_mock_serves_replies_from_a_file(env: dict[str, str], tmp_path: Path) -> None:
    replies = tmp_path / "replies.json"
    replies.write_text(
        textwrap.dedent(
            """\
            [
              {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Lima"}}]},
              "It is sunny in Lima.",
              {"status": 400, "message": "no such model here"}
            ]
            """
        )
    )
    mock = subprocess.Popen(
        [sys.executable, "-m", "rxreact.cli", "mock", str(replies)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert mock.stdout is not None
        first = mock.stdout.readline().strip()
        assert re.fullmatch(r"OPENAI_BASE_URL=http://127\.0\.0\.1:\d+/v1", first)
        base_url = first.split("=", 1)[1]
        with OpenAIChatModel("any", base_url=base_url, max_retries=0) as model:
            agent = ReactAgent(model, [get_weather])
            assert agent.call("Weather?") == "It is sunny in Lima."
            with pytest.raises(BadRequestError, match="no such model here"):
                agent.call("Again?")
    finally:
        _, err = finish(mock, interrupt=signal.SIGINT, timeout=10)  # SIGKILLed if it ignores it
    assert mock.returncode == 0
    assert "stopped after 3 requests" in err
