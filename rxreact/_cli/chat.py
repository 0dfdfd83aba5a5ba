"""``rxreact chat``: one question (an argument, or ``-`` for stdin), or an interactive session.

The question is read (``args.question`` holds it) before :func:`run_chat` is called.

The session keeps its history in SQLite (``--conversation ID``, by default a new one per
session), so a later ``rxreact chat --conversation ID`` goes on from it. Ctrl-C during an
answer cancels that run only: nothing of it is stored, so the conversation stays valid, and
the session asks for the next question.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import select
import sys
import threading
import uuid
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from rxreact._cli.terminal import TerminalRenderer
from rxreact.agent.react_agent import ReactAgent
from rxreact.errors import ChatMemoryError, ConfigurationError, InvalidArgumentError
from rxreact.memory import SQLiteChatMemory
from rxreact.messages import File, Image
from rxreact.messages._labels import Question
from rxreact.model.spec import base_url_variable, model_from
from rxreact.tools.tool import Tool

if TYPE_CHECKING:
    from rxreact.model.http.model import HTTPChatModel

__all__ = [
    "check_endpoint",
    "default_memory_path",
    "import_named",
    "load_tools",
    "read_attachments",
    "read_question",
    "render_run",
    "require_key",
    "run_chat",
]


def render_run(
    agent: ReactAgent[Any],
    question: Question,
    conversation_id: str | None,
    renderer: TerminalRenderer,
) -> None:
    """Run one question, rendering it live; raises the run's error, or ``KeyboardInterrupt``,
    or ``BrokenPipeError`` when the reader of the output went away (the run is cancelled
    first in both cases)."""
    done = threading.Event()
    errors: list[BaseException] = []

    def on_next(event: Any) -> None:
        renderer(event)
        if renderer.broken_pipe.is_set():
            done.set()  # nobody reads the answer any more: stop the run rather than finish it

    def on_error(error: Exception) -> None:
        errors.append(error)
        done.set()

    subscription = agent.stream(question, conversation_id).subscribe(on_next, on_error, done.set)
    try:
        # Short waits, not one long one: SIGINT may be delivered to any of the process's
        # threads, and a main thread blocked without a timeout would only see Ctrl-C at the end.
        while not done.wait(_SIGNAL_CHECK_S):
            pass
    finally:
        subscription.dispose()
        renderer.spinner.stop()
    if renderer.broken_pipe.is_set():
        raise BrokenPipeError("the reader of the output went away")
    if errors:
        raise errors[0]


_SIGNAL_CHECK_S = 0.1
"""How often the main thread wakes to notice Ctrl-C while it waits (see :func:`render_run`)."""


def read_line(stdin: TextIO) -> str:
    """The next line of ``stdin`` ("" at its end), waking often enough to notice Ctrl-C.

    Only a terminal is watched with ``select``: it hands over one line per read, so nothing
    waits in Python's buffer unseen by ``select``, as lines of a pipe could.
    """
    if not stdin.isatty():
        return stdin.readline()
    while not select.select([stdin.fileno()], [], [], _SIGNAL_CHECK_S)[0]:
        pass
    return stdin.readline()


def default_memory_path() -> Path:
    """Where ``chat`` keeps conversations when no ``--memory`` is given.

    ``$XDG_DATA_HOME/rxreact/`` (the XDG base-directory place for user data that must survive
    restarts), else ``~/.local/share/rxreact/``; a relative ``$XDG_DATA_HOME`` is ignored, as
    the spec says.
    """
    data_home = os.environ.get("XDG_DATA_HOME", "")
    base = Path(data_home) if os.path.isabs(data_home) else Path.home() / ".local" / "share"
    return base / "rxreact" / "conversations.sqlite3"


def open_memory(path: str | None) -> SQLiteChatMemory:
    """The conversations file (``--memory``, else :func:`default_memory_path`), created."""
    file = Path(path).expanduser() if path else default_memory_path()
    if not path:
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ChatMemoryError(f"cannot create {file.parent}: {error}") from error
    return SQLiteChatMemory(file)


def import_named(option: str, spec: str, example: str) -> Any:
    """What ``MODULE:NAME`` names (an option's value such as ``--tools``): the module imported,
    the working directory importable as with ``python -m``.

    Raises:
        ConfigurationError: not ``MODULE:NAME``, a module that fails to import, no such name
            (one line, starting with the option and its value).
    """
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigurationError(f"{option} {spec}: write MODULE:NAME, e.g. {example}")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # the user's module: any failure is reported, in one line
        raise ConfigurationError(f"{option} {spec}: cannot import {module_name}: {error}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigurationError(f"{option} {spec}: {module_name} has no {attr!r}") from None


def load_tools(specs: list[str]) -> list[Any]:
    """The tools named by ``--tools module:attr`` (a tool, a function, or a list of them).

    The working directory is importable, as with ``python -m``.
    """
    tools: list[Any] = []
    for spec in specs:
        value = import_named("--tools", spec, "my_tools:get_weather")
        if isinstance(value, Tool) or callable(value):
            tools.append(value)
        elif isinstance(value, list | tuple):
            tools.extend(value)
        else:
            attr = spec.partition(":")[2]
            raise ConfigurationError(
                f"--tools {spec}: {attr} is a {type(value).__name__}, not a tool or a list of tools"
            )
    return tools


def read_attachments(paths: list[str]) -> tuple[Image | File, ...]:
    """The ``--attach`` files, read now (a missing or too large one fails before any request):
    an image when its name says so (``.png``, ``.jpg``...), any other file as a document."""
    parts: list[Image | File] = []
    for path in paths:
        try:
            file = File.from_path(path)
        except InvalidArgumentError as error:
            raise ConfigurationError(f"--attach {path}: {error}") from None
        if file.media_type is not None and file.media_type.startswith("image/"):
            parts.append(Image(data_base64=file.data_base64, media_type=file.media_type))
        else:
            parts.append(file)
    return tuple(parts)


def read_question(args: argparse.Namespace, stdin: TextIO) -> str:
    """The question argument, or all of stdin for ``-``; an empty one is refused."""
    question: str = args.question
    if question == "-":
        question = stdin.read().strip()
        if not question:
            raise ConfigurationError("chat -: stdin held no question")
    elif not question.strip():
        raise ConfigurationError('chat "": the question is empty')
    return question


def check_endpoint(model: str | None, base_url: str | None) -> None:
    """The model name and endpoint from ``--model`` / ``--base-url`` or the environment, checked
    before anything starts and reported in the command's terms (the flag or the variable)."""
    spec = model or os.environ.get("RXREACT_MODEL")
    if not spec:
        raise ConfigurationError("no model name: pass --model NAME or set RXREACT_MODEL")
    variable = base_url_variable(spec)
    url = base_url or os.environ.get(variable)
    if url and not re.match(r"https?://[^/\s]", url):
        where = "--base-url" if base_url else variable
        raise ConfigurationError(
            f"{where}: expected an http(s) URL such as http://127.0.0.1:8001/v1, got {url!r}"
        )


def open_model(model: str | None, base_url: str | None, **kwargs: Any) -> HTTPChatModel:
    """The model ``--model`` names (a ``provider:model`` spec, or a bare name), else
    ``$RXREACT_MODEL``'s; ``--base-url`` wins over the provider's own."""
    spec = model or os.environ.get("RXREACT_MODEL") or ""
    if base_url:
        kwargs["base_url"] = base_url
    try:
        return model_from(spec, **kwargs)
    except InvalidArgumentError as error:
        raise ConfigurationError(f"--model: {error}") from None


def require_key(model: HTTPChatModel) -> None:
    """Refuse to start when the endpoint needs a key and none is set (in the command's terms:
    the library's own message speaks of ``api_key=``)."""
    if model.needs_api_key:
        raise ConfigurationError(
            f"no API key for {model.base_url}: set {model.api_key_variable} "
            "(a server on a loopback address such as 127.0.0.1 needs none)"
        )


def run_chat(
    args: argparse.Namespace,
    agent: ReactAgent[Any],
    memory: SQLiteChatMemory | None,
    attachments: tuple[Image | File, ...] = (),
) -> int:
    """Answer the question, or hold a session when none was given; the exit status.

    ``attachments`` go with the question, or with a session's first question.
    """
    renderer = TerminalRenderer(sys.stdout, sys.stderr)
    if args.question is not None:
        question: str = args.question  # read and checked by the command (read_question)
        try:
            render_run(agent, _with(question, attachments), args.conversation, renderer)
        except KeyboardInterrupt:
            renderer.interrupted()
            return 130
        return 0
    conversation = args.conversation or datetime.now().strftime(
        f"session-%Y%m%d-%H%M%S-{uuid.uuid4().hex[:6]}"
    )
    tty = sys.stdin.isatty()
    if tty:
        renderer.line(
            renderer.style(
                f"rxreact chat · conversation {conversation}"
                f"{f' in {memory.path}' if memory else ''} · Ctrl-C stops an answer, "
                "Ctrl-D quits",
                "2",
            )
        )
    while True:
        try:
            if tty:
                renderer.write(renderer.style("you> ", "1"))
            line = read_line(sys.stdin)
        except KeyboardInterrupt:
            renderer.write("\n")
            return 130
        if not line:  # end of input (Ctrl-D)
            if tty:
                renderer.write("\n")
            return 0
        question = line.strip()
        if not question:
            continue
        if question in ("/exit", "/quit"):
            return 0
        try:
            render_run(agent, _with(question, attachments), conversation, renderer)
        except KeyboardInterrupt:
            renderer.interrupted()
        attachments = ()


def _with(question: str, attachments: tuple[Image | File, ...]) -> Question:
    return [question, *attachments] if attachments else question
