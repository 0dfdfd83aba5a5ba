"""The ``rxreact`` command: ``rxreact demo`` (no key needed) and ``rxreact chat "question"``.

``rxreact chat --conversation ID`` keeps the conversation in a SQLite file (``--memory PATH``,
by default under ``$XDG_DATA_HOME/rxreact/``), so the next invocation with the same id goes on
where this one stopped.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from rxreact.agent import ReactAgent
from rxreact.errors import ChatMemoryError, ConfigurationError, RxReactError
from rxreact.events import (
    FinalAnswer,
    MaxRoundsReached,
    ReasoningDelta,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolCallStarted,
    ToolExecutionStarted,
    ToolResult,
)
from rxreact.memory import InMemoryChatMemory, SQLiteChatMemory

__all__ = ["TerminalRenderer", "default_memory_path", "main"]


class TerminalRenderer:
    """Prints a run live: answer text as it streams, reasoning dimmed, tool activity as it runs."""

    def __init__(self, out: TextIO = sys.stdout, *, color: bool | None = None) -> None:
        self.out = out
        self.color = out.isatty() if color is None else color
        self._at_line_start = True
        self._in_reasoning = False

    def _style(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def _write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self._at_line_start = text.endswith("\n")

    def _line(self, text: str) -> None:
        if not self._at_line_start:
            self._write("\n")
        self._write(text + "\n")

    def __call__(self, event: Any) -> None:
        """Render one event (use as the ``on_next`` of a subscription)."""
        if isinstance(event, ReasoningDelta):
            if not self._in_reasoning:
                self._line(self._style("(thinking)", "2"))
                self._in_reasoning = True
            self._write(self._style(event.delta, "2;3"))
            return
        if self._in_reasoning:
            self._in_reasoning = False
            self._line("")
        if isinstance(event, RoundStarted):
            self._line(self._style(f"── round {event.round} ──", "2"))
        elif isinstance(event, TextDelta):
            self._write(event.delta)
        elif isinstance(event, ToolCallStarted):
            self._line(self._style(f"→ model calls {event.name} [{event.call_id}]", "36"))
        elif isinstance(event, ToolExecutionStarted):
            self._line(self._style(f"⚙ running {event.name} …", "33"))
        elif isinstance(event, ToolResult):
            mark = self._style("✗", "31") if event.is_error else self._style("✓", "32")
            preview = event.content if len(event.content) <= 90 else event.content[:87] + "…"
            self._line(f"{mark} {event.name} ({event.duration_s:.2f} s): {preview}")
        elif isinstance(event, RoundFinished) and event.mode == "final_answer":
            self._line("")
        elif isinstance(event, MaxRoundsReached):
            self._line(self._style("max rounds reached: asking for the answer now", "35"))
        elif isinstance(event, FinalAnswer):
            usage = (
                f", {event.usage.total_tokens} tokens"
                if event.usage and event.usage.total_tokens
                else ""
            )
            self._line(self._style(f"[{event.rounds} model requests{usage}]", "2"))


def render_run(agent: ReactAgent, question: str, conversation_id: str | None, out: TextIO) -> None:
    """Run one question, rendering it live; raises the run's error, if any."""
    renderer = TerminalRenderer(out)
    renderer._line(renderer._style(f"you: {question}", "1"))
    done = threading.Event()
    errors: list[BaseException] = []

    def on_error(error: Exception) -> None:
        errors.append(error)
        done.set()

    subscription = agent.stream(question, conversation_id).subscribe(renderer, on_error, done.set)
    try:
        done.wait()
    finally:
        subscription.dispose()
    if errors:
        raise errors[0]


def _demo(args: argparse.Namespace) -> int:
    from rxreact.demo import FOLLOW_UP, QUESTION, demo_model_script, demo_tools
    from rxreact.model.openai.client import OpenAIChatModel
    from rxreact.testing import MockOpenAIServer

    out = sys.stdout
    with MockOpenAIServer(demo_model_script) as server:
        print(f"mock OpenAI-compatible server on {server.base_url} (real HTTP + SSE)\n", file=out)
        with OpenAIChatModel(
            "mock-weather-model", base_url=server.base_url, api_key="sk-demo"
        ) as model:
            agent = ReactAgent(
                model, demo_tools(args.latency), max_rounds=5, memory=InMemoryChatMemory()
            )
            started = time.perf_counter()
            render_run(agent, QUESTION, "demo", out)
            print(file=out)
            render_run(agent, FOLLOW_UP, "demo", out)
            print(f"\ndone in {time.perf_counter() - started:.2f} s", file=out)
    return 0


def default_memory_path() -> Path:
    """Where ``chat --conversation`` keeps conversations when no ``--memory`` is given.

    ``$XDG_DATA_HOME/rxreact/`` (the XDG base-directory place for user data that must survive
    restarts), else ``~/.local/share/rxreact/``; a relative ``$XDG_DATA_HOME`` is ignored, as
    the spec says.
    """
    data_home = os.environ.get("XDG_DATA_HOME", "")
    base = Path(data_home) if os.path.isabs(data_home) else Path.home() / ".local" / "share"
    return base / "rxreact" / "conversations.sqlite3"


def _open_memory(path: str | None) -> SQLiteChatMemory:
    file = Path(path) if path else default_memory_path()
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ChatMemoryError(f"cannot create {file.parent}: {error}") from error
    return SQLiteChatMemory(file)


def _chat(args: argparse.Namespace) -> int:
    from rxreact.model.openai.client import OpenAIChatModel

    if not os.environ.get("OPENAI_API_KEY") and not args.base_url:
        print(
            "rxreact chat needs an API key: set OPENAI_API_KEY (and OPENAI_BASE_URL / "
            "RXREACT_MODEL for other providers). `rxreact demo` runs without one.",
            file=sys.stderr,
        )
        return 2
    model = OpenAIChatModel(args.model, base_url=args.base_url)
    # Memory only for a named conversation: a one-off question leaves no file behind.
    memory = _open_memory(args.memory) if args.conversation is not None else None
    try:
        agent = ReactAgent(
            model, max_rounds=args.max_rounds, system_prompt=args.system, memory=memory
        )
        render_run(agent, args.question, args.conversation, sys.stdout)
    finally:
        if memory is not None:
            memory.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rxreact`` command."""
    parser = argparse.ArgumentParser(prog="rxreact", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="the weather demo against a loopback mock model")
    demo.add_argument("--latency", type=float, default=1.0, help="scale of the mock tools' latency")
    chat = commands.add_parser("chat", help="ask a real OpenAI-compatible endpoint")
    chat.add_argument("question")
    chat.add_argument("--model", default=None, help="model name (default: $RXREACT_MODEL)")
    chat.add_argument("--base-url", default=None, help="endpoint (default: $OPENAI_BASE_URL)")
    chat.add_argument("--max-rounds", type=int, default=5)
    chat.add_argument("--system", default=None, help="system prompt")
    chat.add_argument(
        "--conversation",
        metavar="ID",
        default=None,
        help="go on with this conversation across invocations (kept in --memory)",
    )
    chat.add_argument(
        "--memory",
        metavar="PATH",
        default=None,
        help="SQLite file of the conversations, used with --conversation "
        "(default: $XDG_DATA_HOME/rxreact/conversations.sqlite3, "
        "else ~/.local/share/rxreact/conversations.sqlite3)",
    )
    args = parser.parse_args(argv)
    try:
        return _demo(args) if args.command == "demo" else _chat(args)
    except ConfigurationError as error:
        print(f"rxreact: {error}", file=sys.stderr)
        return 2
    except RxReactError as error:
        print(f"\nrxreact: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
