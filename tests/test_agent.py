"""The agent loop in virtual time: rounds, tools, order, max rounds, bad calls, memory, cancel."""

from __future__ import annotations

import json
from typing import Any

import pytest
import reactivex
from reactivex import operators as ops
from reactivex.testing import TestScheduler
from virtual_run import Recorder, run_virtual

from rxreact import (
    AssistantMessage,
    CancellationToken,
    InMemoryChatMemory,
    ReactAgent,
    ToolErrorBudgetExceededError,
    ToolMessage,
    UserMessage,
    tool,
)
from rxreact.events import FinalAnswer, TextDelta, ToolResult
from rxreact.messages import ChatRequest
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import Fail, Hang, text_reply, tool_call_reply


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


def test_final_answer_streams_live_in_virtual_time() -> None:
    scheduler = TestScheduler()
    model = ScriptedModel([text_reply("Hello there world", interval=1.0)])
    rec = run_virtual(ReactAgent(model, scheduler=scheduler))

    assert rec.completed and rec.error is None
    assert rec.types == [
        "round_started",
        "round_mode_decided",
        "text_delta",
        "text_delta",
        "text_delta",
        "round_finished",
        "final_answer",
    ]
    # role chunk at t=0, then one chunk per virtual second: each word arrives when produced
    assert [t for t, e in rec.items if e.type == "text_delta"] == [1.0, 2.0, 3.0]
    final = rec.events[-1]
    assert isinstance(final, FinalAnswer)
    assert (final.text, final.rounds, final.forced) == ("Hello there world", 1, False)
    assert rec.events[-2].mode == "final_answer"


def test_tool_round_then_answer_history_and_events() -> None:
    scheduler = TestScheduler()
    model = ScriptedModel(
        [
            tool_call_reply(
                ("get_weather", {"city": "Beijing"}), ("get_weather", {"city": "Shanghai"})
            ),
            text_reply("Both sunny."),
        ]
    )
    rec = run_virtual(ReactAgent(model, [get_weather], scheduler=scheduler))

    assert rec.error is None
    started = rec.of_type("tool_call_started")
    assert [(e.index, e.call_id, e.name) for e in started] == [
        (0, "call_0", "get_weather"),
        (1, "call_1", "get_weather"),
    ]
    args = "".join(e.delta for e in rec.of_type("tool_call_args_delta") if e.index == 0)
    assert json.loads(args) == {"city": "Beijing"}
    results = rec.of_type("tool_result")
    assert sorted(r.content for r in results) == ["Beijing: sunny", "Shanghai: sunny"]
    assert not any(r.is_error for r in results)
    assert rec.of_type("round_finished")[0].mode == "tool_call"
    assert rec.events[-1].text == "Both sunny."
    assert rec.events[-1].rounds == 2

    second = model.requests[1].messages
    assert isinstance(second[1], AssistantMessage)
    assert [c.name for c in second[1].tool_calls] == ["get_weather", "get_weather"]
    assert [(m.tool_call_id, m.content) for m in second[2:]] == [
        ("call_0", "Beijing: sunny"),
        ("call_1", "Shanghai: sunny"),
    ]
    # nothing of a tool round reaches the text view
    assert [e for e in rec.events if isinstance(e, TextDelta)] == rec.of_type("text_delta")
    assert all(e.round == 2 for e in rec.of_type("text_delta"))


def _delayed(label: str, seconds: float) -> Any:
    @tool(name=f"slow_{label}")
    def slow() -> reactivex.Observable[str]:
        """Answers after a virtual delay."""
        return reactivex.timer(seconds).pipe(ops.map(lambda _: f"{label} done"))

    return slow


def test_tools_run_concurrently_and_results_keep_call_order() -> None:
    scheduler = TestScheduler()
    tools = [_delayed("a", 3.0), _delayed("b", 1.0), _delayed("c", 2.0)]
    model = ScriptedModel(
        [tool_call_reply(("slow_a", {}), ("slow_b", {}), ("slow_c", {})), text_reply("ok")]
    )
    rec = run_virtual(ReactAgent(model, tools, scheduler=scheduler))

    assert rec.error is None
    results = [(t, e.name) for t, e in rec.items if isinstance(e, ToolResult)]
    # all three started together at t0: they finish at t0+1, t0+2, t0+3 (completion order)
    t0 = results[0][0] - 1.0
    assert results == [(t0 + 1.0, "slow_b"), (t0 + 2.0, "slow_c"), (t0 + 3.0, "slow_a")]
    assert [r.duration_s for r in rec.of_type("tool_result")] == [1.0, 2.0, 3.0]
    # the next round starts only after the last one, and the history is in call order
    round2 = next(t for t, e in rec.items if e.type == "round_started" and e.round == 2)
    assert round2 == t0 + 3.0
    history = model.requests[1].messages
    assert [m.content for m in history if isinstance(m, ToolMessage)] == [
        "a done",
        "b done",
        "c done",
    ]


def test_text_then_tool_call_switches_round_and_keeps_text() -> None:
    scheduler = TestScheduler()
    model = ScriptedModel(
        [
            tool_call_reply(("get_weather", {"city": "Paris"}), text="Let me check the weather."),
            text_reply("Sunny in Paris."),
        ]
    )
    rec = run_virtual(ReactAgent(model, [get_weather], scheduler=scheduler))

    decided = [e.mode for e in rec.of_type("round_mode_decided") if e.round == 1]
    assert decided == ["final_answer", "tool_call"]
    streamed_round1 = "".join(e.delta for e in rec.of_type("text_delta") if e.round == 1)
    assert streamed_round1 == "Let me check the weather."
    assistant = model.requests[1].messages[1]
    assert isinstance(assistant, AssistantMessage)
    assert assistant.content == "Let me check the weather."
    assert assistant.tool_calls[0].name == "get_weather"
    assert rec.events[-1].text == "Sunny in Paris."


def always_calls_tools(request: ChatRequest) -> Any:
    return tool_call_reply(("get_weather", {"city": "Beijing"}), text=None)


def test_max_rounds_runs_tools_then_a_forced_streamed_round() -> None:
    scheduler = TestScheduler()

    def script(request: ChatRequest) -> Any:
        if request.tool_choice == "none":
            # the model still tries a call in the forced round: ignored
            return [*text_reply("Forced answer."), *tool_call_reply(("get_weather", {}))]
        return always_calls_tools(request)

    model = ScriptedModel(script)
    rec = run_virtual(ReactAgent(model, [get_weather], max_rounds=2, scheduler=scheduler))

    assert rec.error is None
    assert len(model.requests) == 3
    assert [r.tool_choice for r in model.requests] == [None, None, "none"]
    forced = model.requests[2]
    assert [t.name for t in forced.tools] == ["get_weather"]  # tools stay declared
    assert isinstance(forced.messages[-1], UserMessage)
    assert "Do not call any tools" in forced.messages[-1].content
    assert rec.types.count("tool_result") == 2  # the N-th round's calls did run
    assert rec.types.index("max_rounds_reached") > max(
        i for i, t in enumerate(rec.types) if t == "tool_result"
    )
    final = rec.events[-1]
    assert (final.text, final.rounds, final.forced) == ("Forced answer.", 3, True)
    assert not [e for e in rec.of_type("tool_call_started") if e.round == 3]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (("no_such_tool", {}), "no tool named 'no_such_tool'. Valid tools: boom, get_weather"),
        (("get_weather", '{"city": '), "not valid JSON"),
        (("get_weather", {"town": "x"}), "city: Field required"),
        (("boom", {}), "raised ValueError: kaput"),
    ],
)
def test_bad_calls_become_error_results_the_model_reads(call: Any, expected: str) -> None:
    @tool
    def boom() -> str:
        """Always fails."""
        raise ValueError("kaput")

    scheduler = TestScheduler()
    model = ScriptedModel([tool_call_reply(call), text_reply("recovered")])
    rec = run_virtual(ReactAgent(model, [get_weather, boom], scheduler=scheduler))

    assert rec.error is None
    (result,) = rec.of_type("tool_result")
    assert result.is_error
    assert expected in result.content
    sent = model.requests[1].messages[-1]
    assert isinstance(sent, ToolMessage) and expected in sent.content
    assert rec.events[-1].text == "recovered"


def test_tool_timeout_in_virtual_time_cancels_the_tool() -> None:
    tokens: list[CancellationToken] = []

    @tool(timeout=5.0)
    def stuck(token: CancellationToken) -> reactivex.Observable[str]:
        """Never answers."""
        tokens.append(token)
        return reactivex.never()

    scheduler = TestScheduler()
    model = ScriptedModel([tool_call_reply(("stuck", {})), text_reply("gave up")])
    rec = run_virtual(ReactAgent(model, [stuck], scheduler=scheduler))

    (result,) = rec.of_type("tool_result")
    assert result.is_error and "timed out after 5 s" in result.content
    assert result.duration_s == 5.0
    assert tokens and tokens[0].cancelled
    assert "token" not in stuck.parameters["properties"]


def test_tool_error_budget_ends_the_run() -> None:
    scheduler = TestScheduler()
    model = ScriptedModel(lambda request: tool_call_reply(("nope", {}), ("nope", {})))
    agent = ReactAgent(model, [get_weather], max_rounds=10, max_tool_errors=3, scheduler=scheduler)
    rec = run_virtual(agent)

    assert isinstance(rec.error, ToolErrorBudgetExceededError)
    assert len(model.requests) == 2  # 2 errors after round 1, 4 > 3 after round 2


def test_model_error_reaches_on_error() -> None:
    from rxreact import ServerError

    scheduler = TestScheduler()
    model = ScriptedModel([[*text_reply("partial")[:2], Fail(ServerError(500, "down"))]])
    rec = run_virtual(ReactAgent(model, scheduler=scheduler))
    assert isinstance(rec.error, ServerError)
    assert "final_answer" not in rec.types


def test_memory_keeps_conversations_apart_and_commits_whole_turns() -> None:
    scheduler = TestScheduler()
    memory = InMemoryChatMemory()
    model = ScriptedModel(
        [
            tool_call_reply(("get_weather", {"city": "Oslo"})),
            text_reply("Oslo is sunny."),
            text_reply("You asked about Oslo."),
            text_reply("Fresh start."),
        ]
    )
    agent = ReactAgent(model, [get_weather], memory=memory, scheduler=scheduler)
    run_virtual(agent, "Weather in Oslo?", conversation_id="a")
    run_virtual(agent, "What did I ask?", conversation_id="a")
    run_virtual(agent, "Hello?", conversation_id="b")

    third = model.requests[2].messages
    assert [m.role for m in third] == ["user", "assistant", "tool", "assistant", "user"]
    assert third[0].content == "Weather in Oslo?" and third[-1].content == "What did I ask?"
    assert [m.role for m in model.requests[3].messages] == ["user"]
    assert [m.role for m in memory.load("a")] == [*(m.role for m in third), "assistant"]
    assert [m.content for m in memory.load("b")] == ["Hello?", "Fresh start."]


def test_dispose_mid_run_cancels_tools_and_writes_nothing() -> None:
    tokens: list[CancellationToken] = []

    @tool
    def slow(token: CancellationToken) -> reactivex.Observable[str]:
        """Takes ten seconds."""
        tokens.append(token)
        return reactivex.timer(10.0).pipe(ops.map(lambda _: "late"))

    scheduler = TestScheduler()
    memory = InMemoryChatMemory()
    model = ScriptedModel([tool_call_reply(("slow", {})), text_reply("never")])
    agent = ReactAgent(model, [slow], memory=memory, scheduler=scheduler)
    rec = Recorder(scheduler)
    subscription = agent.stream("q", conversation_id="c").subscribe(
        rec.on_next, rec.on_error, rec.on_completed
    )
    scheduler.advance_to(3.0)
    assert rec.types[-1] == "tool_execution_started"
    subscription.dispose()
    scheduler.start()

    assert tokens[0].cancelled
    assert "tool_result" not in rec.types and not rec.completed
    assert len(model.requests) == 1  # no further round
    assert memory.load("c") == []


def test_hanging_model_is_cancelled_by_dispose() -> None:
    scheduler = TestScheduler()
    model = ScriptedModel([[*text_reply("par")[:2], Hang()]])
    rec = Recorder(scheduler)
    sub = (
        ReactAgent(model, scheduler=scheduler)
        .stream("q")
        .subscribe(rec.on_next, rec.on_error, rec.on_completed)
    )
    scheduler.advance_to(100.0)
    sub.dispose()
    scheduler.start()
    assert rec.types == ["round_started", "round_mode_decided", "text_delta"]
    assert not rec.completed and rec.error is None


def test_text_view_and_blocking_views_agree() -> None:
    scheduler = TestScheduler()

    def script(request: ChatRequest) -> Any:
        if len(request.messages) == 1:
            return tool_call_reply(("get_weather", {"city": "Rome"}), text="Checking. ")
        return text_reply("Rome is sunny.", interval=0.5)

    agent = ReactAgent(ScriptedModel(script), [get_weather], scheduler=scheduler)
    texts: list[str] = []
    agent.text("q").subscribe(texts.append)
    scheduler.start()
    # the late-switch sentence reached text() live; then the answer
    assert "".join(texts) == "Checking. Rome is sunny."

    result = agent.run("q")
    assert result.answer == "Rome is sunny." == agent.call("q")
    assert result.rounds == 2 and not result.forced
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
