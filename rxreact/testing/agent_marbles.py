"""Marble tests for your own agent: a scripted model, your tools, virtual time, one diagram.

A whole run takes no real time and gives the same diagram every time::

    from rxreact import ReactAgent, ScriptedModel, tool
    from rxreact.model.scripted.replies import tool_call_reply
    from rxreact.testing.agent_marbles import assert_marbles, reply_from_marbles, run_marbles

    @tool
    def get_weather(city: str) -> str:
        \"\"\"Current weather for a city.\"\"\"
        return f"{city}: sunny"

    def test_weather() -> None:
        recording = run_marbles(
            lambda scheduler: ReactAgent(
                ScriptedModel([
                    tool_call_reply(("get_weather", {"city": "Oslo"})),
                    reply_from_marbles("r-a-b-f|", {"a": "Sunny ", "b": "in Oslo."}),
                ]),
                [get_weather],
                scheduler=scheduler,
            ),
            "Weather in Oslo?",
        )
        assert_marbles(recording, {"text": "--a-b--|"}, values={"text": {"a": "Sunny "}})

Replies and tools can be written with ``reactivex``'s marble syntax: :func:`reply_from_marbles`
turns a marble line into a scripted reply, and a tool may return
``reactivex.from_marbles("--r|", lookup={"r": "sunny"}, timespan=1.0)``, which plays on the
agent's ``TestScheduler``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reactivex.observable.marbles import parse
from reactivex.testing import TestScheduler

from rxreact.agent.react_agent import ReactAgent
from rxreact.marbles import Recorder, Recording, record
from rxreact.model.chunks import ChatChunk
from rxreact.model.scripted.replies import Fail, Pause, ReplyItem

__all__ = ["AgentFactory", "assert_marbles", "reply_from_marbles", "run_marbles"]

AgentFactory = Callable[[TestScheduler], ReactAgent]
"""Builds the agent under test on the ``TestScheduler`` it is given."""

_DEFAULT_CHUNKS = {
    "r": ChatChunk(role="assistant"),
    "f": ChatChunk(finish_reason="stop"),
}


def run_marbles(
    agent: ReactAgent[Any] | AgentFactory,
    question: str = "question",
    *,
    conversation_id: str | None = None,
    chunks: bool = True,
    until: float | None = None,
    timeout: float | None = 30.0,
) -> Recording:
    """Run ``agent`` on ``question`` once and record every event (and the model's chunks).

    Given a factory, the agent is built on a fresh ``TestScheduler`` and the run plays in virtual
    time. An agent whose scheduler is a ``TestScheduler`` runs in virtual time too; any other
    runs for real (waiting at most ``timeout`` seconds), so the same helper draws a real run.

    Args:
        agent: the agent, or a function building it on a ``TestScheduler``.
        question: the user's question.
        conversation_id: the conversation, for agents with memory.
        chunks: also record the model's chunks (the ``chunks`` lane).
        until: stop after this many seconds even if the run goes on.
        timeout: real-time limit for runs that are not virtual.

    Returns:
        The :class:`~rxreact.marbles.Recording` of the run.
    """
    if not isinstance(agent, ReactAgent):
        agent = agent(TestScheduler())
    scheduler = agent.scheduler
    recorder = Recorder(scheduler)
    model = agent.model
    if chunks:
        agent.model = recorder.wrap_model(model)
    try:
        return record(
            agent.stream(question, conversation_id),
            scheduler,
            until=until,
            timeout=timeout,
            recorder=recorder,
        )
    finally:
        agent.model = model


def assert_marbles(
    recording: Recording,
    expected: Mapping[str, str],
    *,
    unit: float = 1.0,
    values: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Assert that lanes of ``recording`` draw as ``expected`` marble lines.

    Args:
        recording: a recorded run (e.g. from :func:`run_marbles`).
        expected: lane name -> marble line (``-`` per ``unit``, ``|``, ``#``, ``(a,b)``).
        unit: seconds per character.
        values: lane name -> symbol -> what the symbol must stand for (see
            ``Recording.legend``); symbols left out are not checked.

    Raises:
        AssertionError: with every lane drawn, expected against actual, and the legends.
    """
    problems: list[str] = []
    width = max((len(lane) for lane in expected), default=0) + 2
    for lane, line in expected.items():
        actual = recording.to_marbles(lane, unit=unit)
        if actual != line:
            column = next(
                (i for i, (a, b) in enumerate(zip(actual, line, strict=False)) if a != b),
                min(len(actual), len(line)),
            )
            problems.append(
                f"{lane:<{width}}expected {line}\n{'':<{width}}actual   {actual}\n"
                f"{'':<{width}}         {' ' * column}^"
            )
    for lane, symbols in (values or {}).items():
        legend = recording.legend(lane)
        for symbol, value in symbols.items():
            if legend.get(symbol, _MISSING) != value:
                got = legend.get(symbol, "(no such symbol)")
                problems.append(f"{lane:<{width}}{symbol} expected {value!r}, got {got!r}")
    if problems:
        drawing = recording.to_text(unit=unit)
        raise AssertionError(
            f"marbles differ (unit={unit:g} s):\n" + "\n".join(problems) + f"\n\nrun:\n{drawing}"
        )


_MISSING = object()


def reply_from_marbles(
    marbles: str,
    values: Mapping[str, ChatChunk | str] | None = None,
    *,
    unit: float = 1.0,
    error: Exception | None = None,
) -> list[ReplyItem]:
    """A scripted reply written as a marble line: its chunks at the times the line says.

    ::

        reply_from_marbles("r-a--b-f|", {"a": "Hello ", "b": "world"})
        # role chunk at 0, "Hello " at 2, "world" at 5, finish at 7, end at 8 (times unit)

    Args:
        marbles: ``reactivex`` marble syntax; each symbol one chunk, ``|`` the end of the
            stream, ``#`` a failure.
        values: symbol -> chunk, or text (a text chunk). ``r`` (role) and ``f`` (finish
            ``stop``) need no entry.
        unit: seconds per character.
        error: what ``#`` fails with (default: a ``StreamInterruptedError``).

    Returns:
        Reply items for :class:`~rxreact.model.scripted.model.ScriptedModel` (chunks and pauses).
    """
    from rxreact.errors import StreamInterruptedError

    lookup: dict[str | float, Any] = {
        symbol: ChatChunk(text=v) if isinstance(v, str) else v
        for symbol, v in {**_DEFAULT_CHUNKS, **(values or {})}.items()
    }
    failure = error or StreamInterruptedError("scripted failure")
    items: list[ReplyItem] = []
    now = 0.0
    for due, notification in parse(marbles, timespan=unit, lookup=lookup, error=failure):
        seconds = float(due) if not hasattr(due, "total_seconds") else due.total_seconds()
        if seconds > now:
            items.append(Pause(round(seconds - now, 9)))
            now = seconds
        if notification.kind == "N":
            value = notification.value
            if not isinstance(value, ChatChunk):
                raise ValueError(f"no chunk for symbol {value!r}: give it in values")
            items.append(value)
        elif notification.kind == "E":
            items.append(Fail(failure))
            return items
        else:
            return items
    return items
