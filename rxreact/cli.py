"""The ``rxreact`` command: ``rxreact demo`` (no key needed) and ``rxreact chat "question"``."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import Any, TextIO

from rxreact.agent import ReactAgent
from rxreact.errors import ConfigurationError, RxReactError
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
from rxreact.memory import InMemoryChatMemory

__all__ = ["TerminalRenderer", "main"]


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
    from rxreact.model.openai import OpenAIChatModel
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


def _chat(args: argparse.Namespace) -> int:
    from rxreact.model.openai import OpenAIChatModel

    if not os.environ.get("OPENAI_API_KEY") and not args.base_url:
        print(
            "rxreact chat needs an API key: set OPENAI_API_KEY (and OPENAI_BASE_URL / "
            "RXREACT_MODEL for other providers). `rxreact demo` runs without one.",
            file=sys.stderr,
        )
        return 2
    model = OpenAIChatModel(args.model, base_url=args.base_url)
    agent = ReactAgent(model, max_rounds=args.max_rounds, system_prompt=args.system)
    render_run(agent, args.question, None, sys.stdout)
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
