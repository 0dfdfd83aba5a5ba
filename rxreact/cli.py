"""The ``rxreact`` command: ``demo``, ``chat``, ``mock`` and ``serve``.

Each subcommand is one ``_add_*`` function that adds its parser and sets ``run`` to its
handler (``handler(args) -> exit status``); :data:`COMMANDS` lists them, so a new subcommand
is one function and one entry.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any, NoReturn

from rxreact._cli.chat import (
    default_memory_path,
    load_tools,
    open_memory,
    read_attachments,
    render_run,
    run_chat,
)
from rxreact._cli.terminal import TerminalRenderer
from rxreact.agent.react_agent import ReactAgent
from rxreact.errors import ConfigurationError, InvalidArgumentError, RxReactError
from rxreact.memory import InMemoryChatMemory

__all__ = ["COMMANDS", "TerminalRenderer", "build_parser", "default_memory_path", "main"]

DESCRIPTION = """\
A streaming ReAct agent in your terminal.

  rxreact demo                     the weather demo against a loopback mock model (no key)
  rxreact chat "question"          ask the endpoint in your environment
  rxreact chat                     an interactive session (history kept in SQLite)
  rxreact mock replies.json        a loopback mock server playing scripted replies
  rxreact serve                    a chat page and the AI SDK UI stream (needs rxreact[serve])

The endpoint comes from OPENAI_BASE_URL (a local server on 127.0.0.1 needs no key),
OPENAI_API_KEY and RXREACT_MODEL, or from --base-url and --model.
"""


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


# -- demo ---------------------------------------------------------------------------------------


def _add_demo(commands: Any) -> None:
    demo = commands.add_parser(
        "demo",
        help="the weather demo against a loopback mock model (no key needed)",
        description="The weather demo: a real HTTP + SSE round trip to a loopback mock model.",
    )
    demo.add_argument("--latency", type=float, default=1.0, help="scale of the mock tools' latency")
    demo.set_defaults(run=_demo)


def _demo(args: argparse.Namespace) -> int:
    from rxreact.demo import FOLLOW_UP, QUESTION, demo_model_script, demo_tools
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


# -- chat ---------------------------------------------------------------------------------------


def _add_chat(commands: Any) -> None:
    chat = commands.add_parser(
        "chat",
        help="ask an OpenAI-compatible endpoint (no question: an interactive session)",
        description=(
            "Ask an OpenAI-compatible endpoint. Only the answer goes to stdout; rounds, tools "
            "and reasoning go to stderr."
        ),
    )
    chat.add_argument(
        "question", nargs="?", default=None, help="the question; '-' reads it from stdin"
    )
    chat.add_argument("--model", default=None, help="model name (default: $RXREACT_MODEL)")
    chat.add_argument("--base-url", default=None, help="endpoint (default: $OPENAI_BASE_URL)")
    chat.add_argument("--max-rounds", type=_positive_int, default=5, help="default: 5")
    chat.add_argument("--system", default=None, help="system prompt")
    chat.add_argument("--temperature", type=float, default=None, help="sampling temperature")
    chat.add_argument("--max-tokens", type=_positive_int, default=None, help="max tokens per reply")
    chat.add_argument(
        "--tools",
        metavar="MODULE:NAME",
        action="append",
        default=[],
        help="tools to offer: a @tool function or a list of them (repeatable)",
    )
    chat.add_argument(
        "--attach",
        metavar="PATH",
        action="append",
        default=[],
        help="send an image or a file with the question (repeatable)",
    )
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
        help="SQLite file of the conversations "
        "(default: $XDG_DATA_HOME/rxreact/conversations.sqlite3, "
        "else ~/.local/share/rxreact/conversations.sqlite3)",
    )
    chat.set_defaults(run=_chat)


def _chat(args: argparse.Namespace) -> int:
    from rxreact.model.openai.client import OpenAIChatModel

    if not (args.model or os.environ.get("RXREACT_MODEL")):
        raise ConfigurationError("no model name: pass --model NAME or set RXREACT_MODEL")
    attachments = read_attachments(args.attach)
    tools = load_tools(args.tools)
    # An interactive session always keeps history; a one-off question only when named.
    keep = args.conversation is not None or args.question is None
    memory = open_memory(args.memory) if keep else None
    try:
        options = {
            key: value
            for key, value in (("temperature", args.temperature), ("max_tokens", args.max_tokens))
            if value is not None
        }
        with OpenAIChatModel(args.model, base_url=args.base_url, options=options) as model:
            agent = ReactAgent(
                model, tools, max_rounds=args.max_rounds, system_prompt=args.system, memory=memory
            )
            return run_chat(args, agent, memory, attachments)
    finally:
        if memory is not None:
            memory.close()


# -- mock ---------------------------------------------------------------------------------------


def _add_mock(commands: Any) -> None:
    from rxreact._cli import mock

    parser = commands.add_parser(
        "mock",
        help="a loopback mock OpenAI-compatible server playing replies from a file",
        description=(mock.__doc__ or "").replace("::", ":").replace("``", "'"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", help="JSON list of replies")
    parser.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1 (keep it loopback)")
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    parser.set_defaults(run=lambda args: mock.run_mock(args.file, args.host, args.port))


def _add_serve(commands: Any) -> None:
    from rxreact.serve.cli import add_serve_command

    add_serve_command(commands)


COMMANDS: list[Callable[[Any], None]] = [_add_demo, _add_chat, _add_mock, _add_serve]
"""Subcommands, in the order ``--help`` lists them: each adds its parser and sets ``run``."""


def build_parser() -> argparse.ArgumentParser:
    """The ``rxreact`` parser with every subcommand of :data:`COMMANDS`."""
    from rxreact import __version__

    parser = _Parser(
        prog="rxreact",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"rxreact {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in COMMANDS:
        add(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rxreact`` command; errors are one line on stderr, never a traceback."""
    args = build_parser().parse_args(argv)
    try:
        status: int = args.run(args)
    except (ConfigurationError, InvalidArgumentError) as error:
        print(f"rxreact: {error}", file=sys.stderr)
        return 2
    except RxReactError as error:
        print(f"rxreact: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except Exception as error:  # a bug or an OS failure: still one line, never a traceback
        if os.environ.get("RXREACT_DEBUG"):
            raise
        print(
            f"rxreact: unexpected {type(error).__name__}: {error} "
            "(RXREACT_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
