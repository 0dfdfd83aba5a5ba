"""Agents as tools (``agent.as_tool()``), in virtual time: the child run's events nested in the
parent's stream, ``agent``/``path`` marks, one ``seq``, usage rolled up, cancellation,
approvals answered on the root run, and the memory modes."""

from __future__ import annotations

import json
from typing import Any

import pytest
import reactivex
from pydantic import BaseModel
from reactivex import operators as ops
from reactivex.testing import TestScheduler

from rxreact import (
    CancellationToken,
    InMemoryChatMemory,
    InvalidArgumentError,
    ReactAgent,
    ToolDefinitionError,
    from_agent,
    only_root,
    tool,
)
from rxreact.events import FinalAnswer, TextDelta, ToolApprovalRequested, ToolResult
from rxreact.messages import ChatRequest, Usage
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import Reply, text_reply, tool_call_reply


def usage(total: int) -> Usage:
    return Usage(prompt_tokens=total - 1, completion_tokens=1, total_tokens=total)


@tool
def search(topic: str) -> str:
    """Search the web for a topic."""
    return f"3 pages about {topic}"


@tool
def run_code(source: str) -> str:
    """Run a snippet of Python."""
    return f"ran {len(source)} characters"


def team(scheduler: TestScheduler) -> tuple[ReactAgent, ReactAgent, ReactAgent]:
    """A planner calling a researcher and a coder at once; each child calls its own tool."""
    researcher = ReactAgent(
        ScriptedModel(
            [
                tool_call_reply(("search", {"topic": "rx"}), ids=["r1"], usage=usage(10)),
                text_reply("Rx is streams.", interval=1.0, usage=usage(20)),
            ]
        ),
        [search],
        name="researcher",
        description="Finds facts.",
        scheduler=scheduler,
    )
    coder = ReactAgent(
        ScriptedModel(
            [
                tool_call_reply(("run_code", {"source": "print(1)"}), ids=["k1"], usage=usage(30)),
                text_reply("It prints 1.", interval=2.0, usage=usage(40)),
            ]
        ),
        [run_code],
        name="coder",
        description="Writes and runs code.",
        scheduler=scheduler,
    )
    planner = ReactAgent(
        ScriptedModel(
            [
                tool_call_reply(
                    ("researcher", {"question": "What is Rx?"}),
                    ("coder", {"question": "What does print(1) print?"}),
                    ids=["p1", "p2"],
                    usage=usage(100),
                ),
                text_reply("Use Rx; it prints 1.", usage=usage(200)),
            ]
        ),
        [researcher.as_tool(), coder.as_tool()],
        name="planner",
        scheduler=scheduler,
    )
    return planner, researcher, coder


def collect(agent: ReactAgent, scheduler: TestScheduler, question: str = "plan") -> list[Any]:
    events: list[Any] = []
    errors: list[Exception] = []
    agent.stream(question).subscribe(events.append, errors.append, scheduler=scheduler)
    scheduler.start()
    assert not errors, errors
    return events


def test_a_planner_with_two_agent_tools_streams_both_runs_nested() -> None:
    scheduler = TestScheduler()
    planner, _, _ = team(scheduler)
    events = collect(planner, scheduler)

    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # one sequence
    assert {(e.agent, e.path) for e in events} == {
        ("planner", ()),
        ("researcher", ("p1",)),
        ("coder", ("p2",)),
    }
    for child, call_id in (("researcher", "p1"), ("coder", "p2")):
        own = [e.type for e in events if e.agent == child]
        assert own[0] == "round_started" and own[-1] == "final_answer"
        assert own.count("tool_result") == 1 and own.count("round_finished") == 2
        # the child's run lies between the parent's start and result of its call
        started = next(
            i
            for i, e in enumerate(events)
            if e.type == "tool_execution_started" and e.call_id == call_id and not e.path
        )
        result = next(
            i
            for i, e in enumerate(events)
            if e.type == "tool_result" and e.call_id == call_id and not e.path
        )
        inside = [i for i, e in enumerate(events) if e.agent == child]
        assert started < inside[0] and inside[-1] < result

    results = {e.call_id: e.content for e in events if isinstance(e, ToolResult) and not e.path}
    assert results == {"p1": "Rx is streams.", "p2": "It prints 1."}
    final = events[-1]
    assert isinstance(final, FinalAnswer) and not final.path and final.agent == "planner"
    assert final.text == "Use Rx; it prints 1."
    assert final.usage is not None and final.usage.total_tokens == 400
    assert final.usage_by_agent == {
        "planner": usage(100) + usage(200),
        "researcher": usage(10) + usage(20),
        "coder": usage(30) + usage(40),
    }
    assert final.usage_by_purpose == {"rounds": final.usage}


def test_text_and_run_see_only_the_root_answer_and_filters_pick_runs() -> None:
    scheduler = TestScheduler()
    planner, _, _ = team(scheduler)
    pieces: list[str] = []
    planner.text("plan").subscribe(pieces.append, scheduler=scheduler)
    scheduler.start()
    assert "".join(pieces) == "Use Rx; it prints 1."

    result = team(TestScheduler())[0].run("plan")
    assert result.answer == "Use Rx; it prints 1."
    assert result.usage_by_agent["coder"] == usage(30) + usage(40)

    scheduler = TestScheduler()
    planner, _, _ = team(scheduler)
    root: list[Any] = []
    coder: list[Any] = []
    events = planner.stream("plan").pipe(ops.publish())
    events.pipe(only_root()).subscribe(root.append, scheduler=scheduler)
    events.pipe(from_agent("coder")).subscribe(coder.append, scheduler=scheduler)
    events.connect(scheduler)
    scheduler.start()
    assert root and all(e.path == () and e.agent == "planner" for e in root)
    assert root[-1].type == "final_answer"
    assert coder and all(e.path == ("p2",) for e in coder)
    assert "".join(e.delta for e in coder if isinstance(e, TextDelta)) == "It prints 1."
    with pytest.raises(InvalidArgumentError):
        from_agent(3)  # type: ignore[arg-type]


def test_nesting_has_no_limit_and_paths_grow_by_one_call_id() -> None:
    scheduler = TestScheduler()
    leaf = ReactAgent(ScriptedModel([text_reply("leaf answer")]), name="leaf", scheduler=scheduler)
    middle = ReactAgent(
        ScriptedModel(
            [tool_call_reply(("leaf", {"question": "q"}), ids=["m1"]), text_reply("middle")]
        ),
        [leaf.as_tool()],
        name="middle",
        scheduler=scheduler,
    )
    top = ReactAgent(
        ScriptedModel(
            [tool_call_reply(("middle", {"question": "q"}), ids=["t1"]), text_reply("top")]
        ),
        [middle.as_tool()],
        scheduler=scheduler,
    )
    events = collect(top, scheduler)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    paths = {e.agent: e.path for e in events}
    assert paths == {"agent": (), "middle": ("t1",), "leaf": ("t1", "m1")}
    assert [e.text for e in events if isinstance(e, FinalAnswer)] == [
        "leaf answer",
        "middle",
        "top",
    ]


def test_a_tool_timeout_of_the_agent_tool_disposes_the_child_and_its_tools() -> None:
    scheduler = TestScheduler()
    tokens: list[CancellationToken] = []

    @tool
    def slow(token: CancellationToken) -> reactivex.Observable[str]:
        """Takes forever."""
        tokens.append(token)
        return reactivex.never()

    child = ReactAgent(
        ScriptedModel([tool_call_reply(("slow", {}))]), [slow], name="child", scheduler=scheduler
    )
    parent = ReactAgent(
        ScriptedModel(
            [tool_call_reply(("child", {"question": "go"}), ids=["c1"]), text_reply("gave up")]
        ),
        [child.as_tool()],
        scheduler=scheduler,
        tool_timeout=5.0,
    )
    events = collect(parent, scheduler)
    result = next(e for e in events if isinstance(e, ToolResult) and e.call_id == "c1")
    assert result.is_error and "timed out after 5 s" in result.content
    assert len(tokens) == 1 and tokens[0].cancelled
    assert events[-1].text == "gave up"


def test_disposing_the_parent_disposes_the_child_run_and_sets_its_tools_tokens() -> None:
    scheduler = TestScheduler()
    tokens: list[CancellationToken] = []

    @tool
    def slow(token: CancellationToken) -> reactivex.Observable[str]:
        """Takes forever."""
        tokens.append(token)
        return reactivex.never()

    child = ReactAgent(
        ScriptedModel([tool_call_reply(("slow", {}))]), [slow], name="child", scheduler=scheduler
    )
    parent = ReactAgent(
        ScriptedModel([tool_call_reply(("child", {"question": "go"}))]),
        [child.as_tool()],
        scheduler=scheduler,
        tool_timeout=None,
        stall_timeout=None,
    )
    events: list[Any] = []
    subscription = parent.stream("q").subscribe(events.append, scheduler=scheduler)
    scheduler.advance_to(10.0)
    assert len(tokens) == 1 and not tokens[0].cancelled
    assert events[-1].type == "tool_execution_started" and events[-1].path == ("call_0",)
    subscription.dispose()
    assert tokens[0].cancelled


def test_approvals_of_a_child_are_answered_on_the_root_run() -> None:
    ran: list[str] = []

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        ran.append(f"paid {amount}")
        return "paid"

    child = ReactAgent(
        ScriptedModel([tool_call_reply(("pay", {"amount": 5}), ids=["pay1"]), text_reply("ok")]),
        [pay],
        name="billing",
    )
    root = ReactAgent(
        ScriptedModel([tool_call_reply(("billing", {"question": "pay 5"})), text_reply("done")]),
        [child.as_tool()],
    )
    run = root.start("pay my bill")
    request = (
        run.events()
        .pipe(ops.filter(lambda e: isinstance(e, ToolApprovalRequested)), ops.first())
        .run()
    )
    assert request.path == ("call_0",) and request.agent == "billing"
    assert run.approve(request.call_id)
    result = run.result(timeout=10)
    assert ran == ["paid 5"] and result.answer == "done"


def test_cold_stream_child_approvals_use_the_root_approver() -> None:
    asked: list[str] = []

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        return "paid"

    def approver(request: ToolApprovalRequested) -> bool:
        asked.append(request.agent)
        return False

    scheduler = TestScheduler()
    child = ReactAgent(
        ScriptedModel([tool_call_reply(("pay", {"amount": 5})), text_reply("refused")]),
        [pay],
        name="billing",
        scheduler=scheduler,
    )
    root = ReactAgent(
        ScriptedModel([tool_call_reply(("billing", {"question": "pay"})), text_reply("done")]),
        [child.as_tool()],
        scheduler=scheduler,
        approver=approver,
    )
    events = collect(root, scheduler)
    denied = next(e for e in events if isinstance(e, ToolResult) and e.agent == "billing")
    assert "denied" in denied.content
    assert asked == ["billing"]


class _Recording(ScriptedModel):
    """A scripted model that keeps the requests it was sent."""

    def __init__(self, replies: list[Reply], scheduler: TestScheduler) -> None:
        self.seen: list[ChatRequest] = []
        replies_iter = iter(replies)

        def reply(request: ChatRequest) -> Reply:
            self.seen.append(request)
            return next(replies_iter)

        super().__init__(reply, scheduler=scheduler)


def test_memory_none_starts_fresh_and_shared_reads_the_callers_conversation() -> None:
    for mode in ("none", "shared"):
        scheduler = TestScheduler()
        model = _Recording([text_reply("child says hi")], scheduler)
        child = ReactAgent(model, name="child", scheduler=scheduler)
        parent = ReactAgent(
            ScriptedModel(
                [tool_call_reply(("child", {"question": "greet"})), text_reply("done")],
                scheduler=scheduler,
            ),
            [child.as_tool(memory=mode)],
            scheduler=scheduler,
        )
        collect(parent, scheduler, "say hi to the user")
        (request,) = model.seen
        contents = [m.content for m in request.messages]
        if mode == "none":
            assert contents == ["greet"]
        else:  # the caller's question, then the child's; not the call that is still open
            assert contents == ["say hi to the user", "greet"]


def test_memory_by_conversation_id_keeps_the_childs_own_conversation() -> None:
    scheduler = TestScheduler()
    memory = InMemoryChatMemory()
    child = ReactAgent(
        ScriptedModel([text_reply("first"), text_reply("second")], scheduler=scheduler),
        name="child",
        memory=memory,
        scheduler=scheduler,
    )
    parent = ReactAgent(
        ScriptedModel(
            [
                tool_call_reply(("child", {"question": "one"})),
                text_reply("a"),
                tool_call_reply(("child", {"question": "two"})),
                text_reply("b"),
            ],
            scheduler=scheduler,
        ),
        [child.as_tool(memory=lambda conversation: f"{conversation}/child")],
        memory=InMemoryChatMemory(),
        scheduler=scheduler,
    )
    for question in ("q1", "q2"):
        parent.stream(question, "c1").subscribe(scheduler=scheduler)
        scheduler.start()
    kept = memory.load("c1/child")
    assert [m.content for m in kept] == ["one", "first", "two", "second"]


def test_input_type_fields_are_the_parameters_and_output_type_the_result() -> None:
    class Task(BaseModel):
        goal: str
        budget: int

    class Plan(BaseModel):
        steps: list[str]

    scheduler = TestScheduler()
    model = _Recording([text_reply(json.dumps({"steps": ["a", "b"]}))], scheduler)
    child = ReactAgent(model, name="planner", scheduler=scheduler)
    agent_tool = child.as_tool("make_plan", "Plans a task.", input_type=Task, output_type=Plan)
    assert agent_tool.name == "make_plan" and agent_tool.description == "Plans a task."
    assert set(agent_tool.parameters["properties"]) == {"goal", "budget"}
    parent = ReactAgent(
        ScriptedModel(
            [tool_call_reply(("make_plan", {"goal": "ship", "budget": 3})), text_reply("ok")],
            scheduler=scheduler,
        ),
        [agent_tool],
        scheduler=scheduler,
    )
    events = collect(parent, scheduler)
    result = next(e for e in events if isinstance(e, ToolResult) and not e.path)
    assert json.loads(result.content) == {"steps": ["a", "b"]}
    assert json.loads(str(model.seen[0].messages[-1].content)) == {"goal": "ship", "budget": 3}
    assert "response_format" in model.seen[0].options


def test_an_agent_tool_outside_a_run_answers_alone() -> None:
    child = ReactAgent(ScriptedModel([text_reply("alone")]), name="child")
    answer = child.as_tool().function(question="hi").run()
    assert answer == "alone"


def test_as_tool_refuses_what_cannot_work() -> None:
    agent = ReactAgent(ScriptedModel([]), name="has space")
    with pytest.raises(ToolDefinitionError):
        agent.as_tool()
    assert agent.as_tool("fine").description.startswith("Ask the has space agent")
    with pytest.raises(InvalidArgumentError):
        agent.as_tool("x", input_type=dict)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        agent.as_tool("x", memory="all")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="memory"):
        agent.as_tool("x", memory=lambda c: "id")  # the agent has no memory
    with pytest.raises(InvalidArgumentError):
        ReactAgent(ScriptedModel([]), name="")


def test_a_failing_child_is_an_error_result_the_parent_reads() -> None:
    scheduler = TestScheduler()
    child = ReactAgent(ScriptedModel([]), name="child", scheduler=scheduler)  # no reply at all
    parent = ReactAgent(
        ScriptedModel(
            [tool_call_reply(("child", {"question": "q"})), text_reply("sorry")],
            scheduler=scheduler,
        ),
        [child.as_tool()],
        scheduler=scheduler,
    )
    events = collect(parent, scheduler)
    result = next(e for e in events if isinstance(e, ToolResult) and not e.path)
    assert result.is_error and "child" in result.content
    assert events[-1].text == "sorry"


def test_events_keep_their_marks_through_json() -> None:
    from rxreact.events import agent_event_adapter

    event = TextDelta(round=1, delta="x", agent="coder", path=("p1", "k2"))
    assert agent_event_adapter.validate_json(agent_event_adapter.dump_json(event)) == event


def test_a_childs_events_are_drawn_in_lanes_of_its_own() -> None:
    from rxreact.testing.agent_marbles import assert_marbles, run_marbles

    def build(scheduler: TestScheduler) -> ReactAgent:
        child = ReactAgent(
            ScriptedModel([text_reply("Hi there.", interval=1.0)]),
            name="child",
            scheduler=scheduler,
        )
        return ReactAgent(
            ScriptedModel([tool_call_reply(("child", {"question": "x"})), text_reply("Done.")]),
            [child.as_tool()],
            scheduler=scheduler,
        )

    recording = run_marbles(build)
    assert_marbles(
        recording,
        {"tools": "A--(a,|)", "child/text": "-ab|", "text": "---(a,|)"},
        values={"child/text": {"a": "Hi ", "b": "there."}, "text": {"a": "Done."}},
    )


def test_the_svg_draws_each_child_run_as_a_band_under_the_tool_lane() -> None:
    from rxreact.testing.agent_marbles import run_marbles

    recording = run_marbles(lambda scheduler: team(scheduler)[0])
    svg = recording.to_svg()
    assert "2 rounds" in svg  # the root's rounds only: the children's are in their bands
    assert svg.index(">tools<") < svg.index("\u21b3 researcher") < svg.index("\u21b3 coder")
    assert "agent run as a tool" in svg  # the legend explains the band
    assert "researcher (p1): Rx is streams." in svg  # the band's tooltip: the child's answer
