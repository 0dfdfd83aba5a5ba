"""The ``rxreact`` command: ``demo``, ``chat``, ``mock``, ``serve`` and ``eval``.

Each subcommand is one ``add`` function that adds its parser and sets ``run`` to its handler
(``handler(args) -> exit status``): ``chat``'s is here, the others' beside their handlers in
``rxreact._cli`` and ``rxreact.serve.cli``. :data:`COMMANDS` lists them, so a new subcommand
is one function and one entry.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from rxreact._cli.arguments import positive_int
from rxreact._cli.demo import add_demo_command
from rxreact._cli.eval import add_eval_command
from rxreact._cli.help import HelpFormatter, command_parser, examples
from rxreact._cli.mock import add_mock_command
from rxreact.errors import ConfigurationError, InvalidArgumentError, RxReactError

if TYPE_CHECKING:
    from rxreact._cli.chat import default_memory_path
    from rxreact._cli.terminal import TerminalRenderer

__all__ = ["COMMANDS", "TerminalRenderer", "build_parser", "default_memory_path", "main"]

# What a command runs is imported when it runs: building the parser (--version, --help) loads
# a handful of modules, not the agent, the models and pydantic.
_LAZY = {
    "TerminalRenderer": "rxreact._cli.terminal",
    "default_memory_path": "rxreact._cli.chat",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'rxreact.cli' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_LAZY[name]), name)


DESCRIPTION = """\
A streaming ReAct agent in your terminal.

  rxreact demo                     the weather demo against a loopback mock model (no key)
  rxreact chat "question"          ask the endpoint in your environment
  rxreact chat                     an interactive session (history kept in SQLite)
  rxreact mock --weather           a loopback mock model that answers weather questions
  rxreact mock replies.json        a loopback mock server playing scripted replies
  rxreact serve                    a chat page and the AI SDK UI stream (needs rxreact[serve])
  rxreact eval DATASET --agent M:A run a dataset of cases on an agent, score it (for CI)

The endpoint comes from OPENAI_BASE_URL (a local server on 127.0.0.1 needs no key),
OPENAI_API_KEY and RXREACT_MODEL, or from --base-url and --model.
"rxreact COMMAND --help" describes each command.
"""

ENDPOINT = """\
The endpoint is OPENAI_BASE_URL (else OpenAI's), the key OPENAI_API_KEY (a server on a
loopback address such as 127.0.0.1 needs none), the model RXREACT_MODEL; --base-url and
--model override them."""

SIGPIPE_STATUS = 128 + 13
"""The exit status when stdout's reader went away (``rxreact chat q | head``): what a shell
reports for a command that SIGPIPE ended, as ``yes | head`` does."""


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


# -- chat ---------------------------------------------------------------------------------------


def _add_chat(commands: Any) -> None:
    chat = command_parser(
        commands,
        "chat",
        help="ask an OpenAI-compatible endpoint (no question: an interactive session)",
        description=(
            "Ask an OpenAI-compatible endpoint. Only the answer goes to stdout; rounds, tools\n"
            "and reasoning go to stderr. Without a question, an interactive session: one\n"
            "question a line, its history kept in SQLite; Ctrl-C stops an answer, Ctrl-D quits.\n\n"
            + ENDPOINT
        ),
        epilog=examples(
            ('rxreact chat "Weather in Paris?"', "one question; only the answer goes to stdout"),
            ("rxreact chat --tools my_tools:get_weather", "a session with your own tools"),
            ('echo "Summarise this" | rxreact chat -', "the question from stdin"),
            ('rxreact chat --conversation trip "And Rome?"', "go on with a kept conversation"),
            ("rxreact mock --weather", "in another shell first: a model to try all this on"),
        ),
    )
    chat.add_argument(
        "question",
        nargs="?",
        default=None,
        help="the question; '-' reads it from stdin (default: an interactive session)",
    )
    chat.add_argument(
        "-m", "--model", default=None,
        help="model name, or provider:model (anthropic:claude-sonnet-4-5, openai:gpt-5, "
        "ollama:llama3.2...; default: $RXREACT_MODEL)",
    )  # fmt: skip
    chat.add_argument("--base-url", default=None, help="endpoint (default: $OPENAI_BASE_URL)")
    chat.add_argument(
        "--max-rounds", type=positive_int, default=5, help="model requests with tools offered"
    )
    chat.add_argument(
        "--system", default=None, help="system prompt (default: none, the model's own behaviour)"
    )
    chat.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="sampling temperature (default: the model's)",
    )
    chat.add_argument(
        "--max-tokens",
        type=positive_int,
        default=None,
        help="max tokens per reply (default: the model's limit)",
    )
    chat.add_argument(
        "--tools",
        metavar="MODULE:NAME",
        action="append",
        default=[],
        help="tools to offer: a @tool function or a list of them, repeatable (default: none)",
    )
    chat.add_argument(
        "--attach",
        metavar="PATH",
        action="append",
        default=[],
        help="send an image or a file with the question, repeatable (default: none)",
    )
    chat.add_argument(
        "--conversation",
        metavar="ID",
        default=None,
        help="go on with this conversation across invocations, kept in --memory "
        "(default: a question keeps nothing; a session starts a new conversation)",
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
    from rxreact._cli.chat import (
        check_endpoint,
        load_tools,
        open_memory,
        open_model,
        read_attachments,
        read_question,
        require_key,
        run_chat,
    )
    from rxreact.agent.react_agent import ReactAgent

    check_endpoint(args.model, args.base_url)
    if args.question is not None:  # before anything is set up, as a usage error would be
        args.question = read_question(args, sys.stdin)
    attachments = read_attachments(args.attach)
    tools = load_tools(args.tools)
    options = {
        key: value
        for key, value in (("temperature", args.temperature), ("max_tokens", args.max_tokens))
        if value is not None
    }
    with open_model(args.model, args.base_url, options=options) as model:
        require_key(model)  # before any file is made or any round is shown
        # An interactive session always keeps history; a one-off question only when named.
        keep = args.conversation is not None or args.question is None
        memory = open_memory(args.memory) if keep else None
        try:
            agent = ReactAgent(
                model, tools, max_rounds=args.max_rounds, system_prompt=args.system, memory=memory
            )
            return run_chat(args, agent, memory, attachments)
        finally:
            if memory is not None:
                memory.close()


def _add_serve(commands: Any) -> None:
    from rxreact.serve.cli import add_serve_command

    add_serve_command(commands)


COMMANDS: list[Callable[[Any], None]] = [
    add_demo_command,
    _add_chat,
    add_mock_command,
    _add_serve,
    add_eval_command,
]
"""Subcommands, in the order ``--help`` lists them: each adds its parser and sets ``run``."""


def build_parser() -> argparse.ArgumentParser:
    """The ``rxreact`` parser with every subcommand of :data:`COMMANDS`."""
    from rxreact import __version__

    parser = _Parser(prog="rxreact", description=DESCRIPTION, formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"rxreact {__version__}")
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", title="commands", parser_class=_Parser
    )
    for add in COMMANDS:
        add(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rxreact`` command; errors are one line on stderr, never a traceback.

    A reader of stdout that goes away (``rxreact chat q | head``) ends the command quietly,
    with :data:`SIGPIPE_STATUS`.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command is None:  # a bare `rxreact`: what it can do
            parser.print_help()
            return 0
        status: int = args.run(args)
    except BrokenPipeError:
        _silence_stdout()
        return SIGPIPE_STATUS
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


def _silence_stdout() -> None:
    """Point stdout at /dev/null: the interpreter flushes it at exit, and a flush into the
    closed pipe would print "Exception ignored ... BrokenPipeError" after all."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file descriptor (tests redirect it)
        pass


if __name__ == "__main__":
    sys.exit(main())
