"""``rxreact mock``: the loopback mock server on its own, for trying rxreact without a key and for
testing your own front end.

``--weather`` serves :func:`rxreact.testing.weather_desk`, a model that decides from each request
(it calls your weather tool for the city a question names, then answers from the result);
a FILE serves scripted replies. A reply file is checked whole before the server starts, and a
mistake is reported with the reply's number and the field that is wrong.
"""

from __future__ import annotations

import functools
import json
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rxreact._cli.help import command_parser, examples
from rxreact.errors import ConfigurationError

if TYPE_CHECKING:  # imported where used: building the parser (--help) loads none of them
    from rxreact.messages import ChatRequest
    from rxreact.model.scripted.replies import Reply, Script

__all__ = [
    "FILE_FORMAT",
    "add_mock_command",
    "endpoint_variables",
    "parse_replies",
    "read_replies",
    "run_mock",
    "weather_script",
]

FILE_FORMAT = """\
FILE is JSON: a list of replies, played in request order and then from the start again.
A reply is one of:

  "Hello!"                                                an answer
  {"text": "Hi", "reasoning": "The user greets me."}      an answer with reasoning
  {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
                                                          tool calls (optional "text" first)
  {"status": 429, "message": "slow down"}                 an HTTP error (400-599)

Replies stream as real SSE; "interval": 0.05 in a text or tool-call reply spaces its chunks
0.05 s apart."""
"""The reply-file format, as ``rxreact mock --help`` shows it."""


def add_mock_command(commands: Any) -> None:
    """Register ``mock`` on the ``rxreact`` command's subparsers."""
    parser = command_parser(
        commands,
        "mock",
        help="a loopback mock model: the weather desk, or replies from a file (no key)",
        description=(
            "A loopback mock model server (real HTTP + SSE) to try rxreact without a key, or to\n"
            "test your own front end. It serves every wire format rxreact speaks (OpenAI chat\n"
            "completions and Responses, Anthropic Messages; the presets such as ollama: are\n"
            "chat completions) and prints the variables to export, one NAME=value a line on\n"
            "stdout (OPENAI_BASE_URL first, ANTHROPIC_BASE_URL, OLLAMA_BASE_URL, ...,\n"
            "RXREACT_MODEL); any model name is accepted and no key is needed.\n\n"
            "--weather answers like a small weather desk, deciding from each request: a question\n"
            'naming a city ("Weather in Paris?") gets a call of the offered tool that fits it\n'
            "best, with the city as its argument; the tool's result gets an answer quoting it.\n\n"
            + FILE_FORMAT
        ),
        epilog=examples(
            ("rxreact mock --weather", "the weather desk; then, in another shell:"),
            (
                "export OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 RXREACT_MODEL=mock",
                "the address it printed, and any model name",
            ),
            ('rxreact chat --tools my_tools:get_weather "Weather in Paris?"', "ask it"),
            ("rxreact mock replies.json --port 8001", "scripted replies on a fixed port"),
        ),
    )
    parser.add_argument(
        "file", nargs="?", default=None, help="a JSON list of replies (default: the weather desk)"
    )
    parser.add_argument(
        "--weather", action="store_true", help="answer as the weather desk (what no FILE means)"
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=0.02,
        help="seconds between the weather desk's streamed pieces",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface (keep it loopback)")
    parser.add_argument("--port", type=int, default=0, help="port (default: 0, a free one)")
    parser.set_defaults(
        run=lambda args: run_mock(args.file, args.weather, args.interval, args.host, args.port)
    )


_FIELDS = {
    "text": {"text", "reasoning", "interval"},
    "tool_calls": {"tool_calls", "text", "interval"},
    "status": {"status", "message"},
}


def parse_replies(data: Any, source: str) -> list[Reply]:
    """The replies of a mock file's JSON (see :data:`FILE_FORMAT`).

    Raises:
        ConfigurationError: naming the reply (counted from 1) and the field that is wrong.
    """
    if not isinstance(data, list) or not data:
        raise ConfigurationError(
            f"{source}: expected a JSON list of replies, got {_kind(data)}"
            if not isinstance(data, list)
            else f"{source}: the list of replies is empty"
        )
    return [_reply(item, f"{source}: reply {n}") for n, item in enumerate(data, 1)]


def _reply(item: Any, where: str) -> Reply:
    from rxreact.model.scripted.replies import HTTPErrorReply, text_reply, tool_call_reply

    if isinstance(item, str):
        return text_reply(item)
    if not isinstance(item, dict):
        raise ConfigurationError(f"{where}: expected a string or an object, got {_kind(item)}")
    kind = next((key for key in ("status", "tool_calls", "text") if key in item), None)
    if kind is None:
        raise ConfigurationError(f"{where}: expected a field text, tool_calls or status")
    unknown = sorted(set(item) - _FIELDS[kind])
    if unknown:
        allowed = ", ".join(sorted(_FIELDS[kind]))
        raise ConfigurationError(
            f"{where}: unknown field {unknown[0]!r} in a {kind} reply (allowed: {allowed})"
        )
    if kind == "status":
        status = item["status"]
        if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status <= 599:
            raise ConfigurationError(f"{where}: status: expected 400-599, got {status!r}")
        return HTTPErrorReply(status, _string(item, "message", where, "error"))
    interval = item.get("interval", 0.0)
    if not isinstance(interval, int | float) or isinstance(interval, bool) or interval < 0:
        raise ConfigurationError(f"{where}: interval: expected seconds >= 0, got {interval!r}")
    if kind == "tool_calls":
        calls = item["tool_calls"]
        if not isinstance(calls, list) or not calls:
            raise ConfigurationError(f"{where}: tool_calls: expected a non-empty list of calls")
        return tool_call_reply(
            *(_call(call, f"{where}: tool_calls[{i}]") for i, call in enumerate(calls)),
            text=_string(item, "text", where, None),
            interval=float(interval),
        )
    return text_reply(
        _string(item, "text", where, ""),
        reasoning=_string(item, "reasoning", where, None),
        interval=float(interval),
    )


def _call(call: Any, where: str) -> tuple[str, dict[str, Any] | str]:
    if not isinstance(call, dict):
        raise ConfigurationError(f"{where}: expected an object, got {_kind(call)}")
    unknown = sorted(set(call) - {"name", "arguments"})
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown field {unknown[0]!r} (allowed: arguments, name)"
        )
    name = call.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"{where}.name: expected the tool's name, got {name!r}")
    arguments = call.get("arguments", {})
    if not isinstance(arguments, dict | str):
        raise ConfigurationError(
            f"{where}.arguments: expected an object (or a string of raw JSON), "
            f"got {_kind(arguments)}"
        )
    return name, arguments


def _string(item: dict[str, Any], field: str, where: str, default: str | None) -> Any:
    value = item.get(field, default)
    if value is not default and not isinstance(value, str):
        raise ConfigurationError(f"{where}: {field}: expected a string, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    """How JSON would name ``value``'s type, for messages about a file written in JSON."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), f"the number {value}" if isinstance(value, int | float) else "?")


def read_replies(path: str) -> tuple[list[Reply], str]:
    """The replies of the file at ``path``, and how to name the file in messages."""
    file = Path(path).expanduser()
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigurationError(f"cannot read {file}: {error.strerror}") from None
    except ValueError as error:
        raise ConfigurationError(f"{file} is not JSON: {error}") from None
    return parse_replies(data, str(file)), str(file)


def _cycle(replies: list[Reply]) -> Script:
    """A script playing ``replies`` in request order, then from the start again."""
    served = [0]
    lock = threading.Lock()

    def script(_: ChatRequest) -> Reply:
        with lock:
            n = served[0]
            served[0] += 1
        return replies[n % len(replies)]

    return script


def weather_script(interval: float) -> Script:
    """:func:`~rxreact.testing.weather_desk`, its answers spaced ``interval`` s apart."""
    from rxreact.testing.weather_desk import weather_desk

    return functools.partial(weather_desk, interval=interval)


_ROOT_VARIABLES = frozenset({"ANTHROPIC_BASE_URL", "GEMINI_BASE_URL", "BEDROCK_BASE_URL"})


def endpoint_variables(base_url: str, origin: str) -> dict[str, str]:
    """Every variable that points a model spec's prefix at the mock (``OPENAI_BASE_URL`` first),
    then ``RXREACT_MODEL``: what to export to run any example against it."""
    from rxreact.model.spec import PREFIXES, base_url_variable

    variables = {}
    for prefix in PREFIXES:
        name = base_url_variable(f"{prefix}:mock")
        # Anthropic's, Gemini's and Bedrock's base URLs are the API root (their paths carry
        # the version); the others end in /v1.
        variables[name] = origin if name in _ROOT_VARIABLES else base_url
    return {**variables, "RXREACT_MODEL": "mock"}


def run_mock(file: str | None, weather: bool, interval: float, host: str, port: int) -> int:
    """Serve ``file``'s replies, else the weather desk, until interrupted; prints
    ``OPENAI_BASE_URL=...`` on stdout first, then every other variable to export
    (:func:`endpoint_variables`)."""
    from rxreact._cli.terminal import counted
    from rxreact.testing import MockOpenAIServer

    if file is not None and weather:
        raise ConfigurationError("mock: give a reply FILE or --weather, not both")
    if file is not None:
        replies, name = read_replies(file)
        script, what = _cycle(replies), f"{counted(len(replies), 'reply', 'replies')} from {name}"
    else:
        script, what = weather_script(interval), "the weather desk"
    # The desk's histories are the agent's own, so it checks them as the real API does; a reply
    # file may script any history (a test of what your code does with a bad one).
    with MockOpenAIServer(script, host=host, port=port, validate_history=file is None) as server:
        exports = endpoint_variables(server.base_url, server.origin)
        print("\n".join(f"{name}={value}" for name, value in exports.items()), flush=True)
        print(
            f"rxreact mock: {what} at {server.base_url} (any model name, no key; Ctrl-C stops),\n"
            "  in every wire format rxreact speaks: OpenAI chat completions and Responses,\n"
            "  Anthropic Messages, and the chat-completions presets (ollama:, groq:, ...).\n"
            "  In another shell:\n    export "
            + " \\\n      ".join(f"{name}={value}" for name, value in exports.items()),
            file=sys.stderr,
            flush=True,
        )
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            served = counted(len(server.requests), "request")
            print(f"\nrxreact mock: stopped after {served}", file=sys.stderr)
    return 0
