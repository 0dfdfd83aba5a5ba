"""``rxreact demo``: the weather demo of :mod:`rxreact.demo` against a loopback mock model."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from rxreact._cli.help import command_parser, examples

__all__ = ["add_demo_command", "run_demo"]


def add_demo_command(commands: Any) -> None:
    """Register ``demo`` on the ``rxreact`` command's subparsers."""
    demo = command_parser(
        commands,
        "demo",
        help="the weather demo against a loopback mock model (no key needed)",
        description=(
            "The weather demo: a real HTTP + SSE round trip to a loopback mock model, which\n"
            "calls four mock tools at once, writes a report from their results, then answers\n"
            "a follow-up question from the conversation's memory."
        ),
        epilog=examples(
            ("rxreact demo", "the demo, its tools taking 0.35-0.6 s each"),
            ("rxreact demo --latency 0", "the same with instant tools"),
        ),
    )
    demo.add_argument(
        "--latency", type=float, default=1.0, help="scale of the mock tools' latency (0: none)"
    )
    demo.set_defaults(run=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    """Both demo questions over real HTTP, everything shown on stdout; the exit status."""
    from rxreact._cli.chat import render_run
    from rxreact._cli.terminal import TerminalRenderer
    from rxreact.agent import ReactAgent
    from rxreact.demo import FOLLOW_UP, QUESTION, demo_model_script, demo_tools
    from rxreact.memory import InMemoryChatMemory
    from rxreact.model.openai.client import OpenAIChatModel
    from rxreact.testing import MockOpenAIServer

    out = sys.stdout
    renderer = TerminalRenderer(out)  # the demo shows everything on stdout
    with MockOpenAIServer(demo_model_script) as server:
        print(f"mock OpenAI-compatible server on {server.base_url} (real HTTP + SSE)\n", file=out)
        with OpenAIChatModel(
            "mock-weather-model", base_url=server.base_url, api_key="sk-demo"
        ) as model:
            agent = ReactAgent(
                model, demo_tools(args.latency), max_rounds=5, memory=InMemoryChatMemory()
            )
            started = time.perf_counter()
            for question in (QUESTION, FOLLOW_UP):
                renderer.line(renderer.style(f"you: {question}", "1"))
                render_run(agent, question, "demo", renderer)
                print(file=out)
            print(f"done in {time.perf_counter() - started:.2f} s", file=out)
    return 0
