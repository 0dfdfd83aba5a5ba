"""The typed run context: ``deps=`` on every way to run, ``RunContext`` in tools (sync and
async), instructions and ``prepare_tools`` per run, agent tools and handoffs, bad deps; in
virtual time and over real HTTP in both I/O modes."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxreact import (
    FinalAnswer,
    InMemoryChatMemory,
    InvalidArgumentError,
    ReactAgent,
    RunContext,
    ScriptedModel,
    Tool,
    ToolResult,
    tool,
)
from rxreact.messages import ChatRequest, SystemMessage
from rxreact.model.scripted.replies import text_reply, tool_call_reply


@dataclass
class Shop:
    user: str
    refunds: list[str]


seen: list[RunContext[Shop]] = []


@tool
def whoami(ctx: RunContext[Shop], loud: bool = False) -> str:
    """Says whose run this is."""
    seen.append(ctx)
    return ctx.deps.user.upper() if loud else ctx.deps.user


@tool
async def refund(ctx: RunContext[Shop], order: str) -> str:
    """Refunds an order."""
    await asyncio.sleep(0)
    ctx.deps.refunds.append(order)
    return f"refunded {order} for {ctx.deps.user}"


def _script(*calls: tuple[str, dict[str, Any]]) -> list[Any]:
    return [tool_call_reply(*calls), text_reply("Done.")]


def _tool_text(result: Any, name: str) -> str:
    return next(m.content for m in result.messages if getattr(m, "name", None) == name)


@pytest.fixture(autouse=True)
def _forget() -> None:
    seen.clear()


def test_the_context_parameter_is_not_in_the_schema() -> None:
    assert whoami.parameters["properties"] == {"loud": {"default": False, "type": "boolean"}}
    assert refund.parameters["required"] == ["order"]


def test_a_sync_and_an_async_tool_read_the_deps_and_the_run() -> None:
    shop = Shop("alice", [])
    agent = ReactAgent[Shop](
        ScriptedModel(_script(("whoami", {}), ("refund", {"order": "A7"}))),
        [whoami, refund],
        deps_type=Shop,
        memory=InMemoryChatMemory(),
        name="desk",
    )
    result = agent.run("Refund A7", "c1", deps=shop)
    assert _tool_text(result, "whoami") == "alice"
    assert _tool_text(result, "refund") == "refunded A7 for alice"
    assert shop.refunds == ["A7"]
    (ctx,) = seen
    assert (ctx.deps, ctx.conversation_id, ctx.round, ctx.agent, ctx.path) == (
        shop,
        "c1",
        1,
        "desk",
        (),
    )
    assert len(ctx.run_id) == 32
    assert ctx.cancellation.cancelled  # the call's token: set once the call is over


def test_usage_so_far_is_the_runs_before_the_call() -> None:
    from rxreact.messages import Usage

    model = ScriptedModel(
        [
            tool_call_reply(("whoami", {}), usage=Usage(total_tokens=12)),
            tool_call_reply(("whoami", {}), usage=Usage(total_tokens=23)),
            text_reply("Done."),
        ]
    )
    ReactAgent(model, [whoami]).run("q", deps=Shop("a", []))  # type: ignore[arg-type]
    assert [(c.round, c.usage.total_tokens if c.usage else None) for c in seen] == [
        (1, 12),
        (2, 35),
    ]


def test_every_way_to_run_takes_deps() -> None:
    def agent() -> ReactAgent[Shop]:
        return ReactAgent[Shop](ScriptedModel(_script(("whoami", {}))), [whoami], deps_type=Shop)

    assert agent().call("q", deps=Shop("call", [])) == "Done."
    assert agent().run("q", deps=Shop("run", [])).answer == "Done."
    assert list(agent().iter_text("q", deps=Shop("iter_text", []))) == ["Done."]
    assert any(isinstance(e, FinalAnswer) for e in agent().iter("q", deps=Shop("iter", [])))
    finals: list[Any] = []
    agent().stream("q", deps=Shop("stream", [])).subscribe(finals.append)
    assert agent().start("q", deps=Shop("start", [])).result(timeout=10).answer == "Done."
    assert agent().text("q", deps=Shop("text", [])).run() == "Done."

    async def both() -> None:
        assert (await agent().arun("q", deps=Shop("arun", []))).answer == "Done."
        assert await agent().acall("q", deps=Shop("acall", [])) == "Done."
        assert [e async for e in agent().astream("q", deps=Shop("astream", []))]

    asyncio.run(both())
    users = sorted(c.deps.user for c in seen)
    wanted = ["acall", "arun", "astream", "call", "iter", "iter_text", "run", "start", "text"]
    assert [u for u in users if u != "stream"] == wanted


def test_deps_of_the_wrong_type_fail_at_the_call_before_any_request() -> None:
    model = ScriptedModel(_script(("whoami", {})))
    agent = ReactAgent[Shop](model, [whoami], deps_type=Shop)
    wrong: Any = "alice"
    for call in (
        lambda: agent.run("q", deps=wrong),
        lambda: agent.call("q", deps=wrong),
        lambda: agent.stream("q", deps=wrong),
        lambda: agent.start("q", deps=wrong),
        lambda: agent.iter("q", deps=wrong),
        lambda: agent.text("q", deps=wrong),
        lambda: asyncio.run(agent.arun("q", deps=wrong)),
        lambda: agent.run("q"),  # none at all, for an agent that needs them
    ):
        with pytest.raises(InvalidArgumentError, match="deps must be a Shop"):
            call()
    assert model.requests == []


def test_an_agent_without_deps_gives_ctx_deps_none() -> None:
    @tool
    def peek(ctx: RunContext[None]) -> str:
        """Peeks."""
        return repr(ctx.deps)

    result = ReactAgent(ScriptedModel(_script(("peek", {}))), [peek]).run("q")
    assert _tool_text(result, "peek") == "None"


def test_a_tool_called_outside_a_run_gets_an_empty_context() -> None:
    @tool
    def peek(ctx: RunContext[None], x: int) -> str:
        """Peeks."""
        return f"{ctx.deps}/{ctx.run_id!r}/{x}"

    from rxreact import CancellationToken
    from rxreact.scheduling import shared_scheduler

    result = peek.invoke({"x": 3}, CancellationToken(), shared_scheduler("tools", 16)).run()
    assert result == "None/''/3"


def test_the_context_must_be_the_first_parameter() -> None:
    from rxreact import ToolDefinitionError

    def late(x: int, ctx: RunContext[None]) -> str:
        """Late."""
        return ""

    with pytest.raises(ToolDefinitionError, match="must be the first one"):
        tool(late)


def test_instructions_are_called_at_each_run_start_and_never_stored() -> None:
    calls: list[str] = []

    def who(ctx: RunContext[Shop]) -> str:
        calls.append(ctx.deps.user)
        return f"The user is {ctx.deps.user}."

    async def when(ctx: RunContext[Shop]) -> str:
        return f"Run {ctx.run_id[:4]} of {ctx.agent}."

    model = ScriptedModel([text_reply("One."), text_reply("Two.")])
    memory = InMemoryChatMemory()
    agent = ReactAgent[Shop](
        model,
        system_prompt="You are a shop.",
        instructions=[who, "Be brief.", when],
        deps_type=Shop,
        memory=memory,
    )
    agent.run("a", "c1", deps=Shop("alice", []))
    agent.run("b", "c1", deps=Shop("bob", []))
    assert calls == ["alice", "bob"]
    for request, user in zip(model.requests, ["alice", "bob"], strict=True):
        systems = [m for m in request.messages if isinstance(m, SystemMessage)]
        assert len(systems) == 1
        text = systems[0].content
        assert text.startswith(f"You are a shop.\n\nThe user is {user}.\n\nBe brief.\n\nRun ")
        assert text.endswith(" of agent.")
    stored = memory.load("c1")
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]


def test_a_failing_instructions_function_ends_the_run_with_an_agent_error() -> None:
    from rxreact import AgentError

    def broken(ctx: RunContext[None]) -> str:
        raise RuntimeError("no database")

    model = ScriptedModel([text_reply("never")])
    with pytest.raises(AgentError, match="no database"):
        ReactAgent(model, instructions=broken).run("q")
    assert model.requests == []


def test_prepare_tools_hides_a_tool_and_a_hidden_call_never_runs() -> None:
    ran: list[str] = []

    @tool
    def refund_order(ctx: RunContext[Shop], order: str) -> str:
        """Refunds."""
        ran.append(order)
        return "refunded"

    @tool
    def lookup(order: str) -> str:
        """Looks an order up."""
        return f"{order}: shipped"

    def only_admins(ctx: RunContext[Shop], tools: list[Tool[..., Any]]) -> list[Tool[..., Any]]:
        if ctx.deps.user == "admin":
            return tools
        return [t for t in tools if t.name != "refund_order"]

    def script() -> list[Any]:
        return _script(("refund_order", {"order": "A7"}))

    user_model = ScriptedModel(script())
    agent = ReactAgent[Shop](
        user_model, [refund_order, lookup], deps_type=Shop, prepare_tools=only_admins
    )
    result = agent.run("Refund A7", deps=Shop("mallory", []))
    assert [t.name for t in user_model.requests[0].tools] == ["lookup"]
    assert _tool_text(result, "refund_order") == (
        "Error: there is no tool named 'refund_order'. Valid tools: lookup."
    )
    assert ran == []
    admin_model = ScriptedModel(script())
    admin = ReactAgent[Shop](
        admin_model, [refund_order, lookup], deps_type=Shop, prepare_tools=only_admins
    )
    assert _tool_text(admin.run("Refund A7", deps=Shop("admin", [])), "refund_order") == "refunded"
    assert ran == ["A7"]


def test_prepare_tools_may_change_a_tool_and_be_async() -> None:
    import dataclasses

    async def describe(ctx: RunContext[None], tools: list[Tool[..., Any]]) -> list[Tool[..., Any]]:
        return [dataclasses.replace(t, description=f"{t.description} (today)") for t in tools]

    model = ScriptedModel([text_reply("ok")])
    ReactAgent(model, [whoami], prepare_tools=describe).run("q")
    assert model.requests[0].tools[0].description == "Says whose run this is. (today)"


def test_an_agent_tool_child_gets_the_callers_deps_and_a_longer_path() -> None:
    child = ReactAgent[Shop](
        ScriptedModel(_script(("whoami", {}))), [whoami], name="helper", deps_type=Shop
    )
    parent = ReactAgent[Shop](
        ScriptedModel(
            [tool_call_reply(("helper", {"question": "who?"}), ids=["p1"]), text_reply("ok")]
        ),
        [child.as_tool()],
        deps_type=Shop,
    )
    parent.run("q", deps=Shop("carol", []))
    (ctx,) = seen
    assert (ctx.deps.user, ctx.agent, ctx.path) == ("carol", "helper", ("p1",))


def test_a_handoff_target_gets_the_deps_and_works_out_its_own_instructions() -> None:
    billing_model = ScriptedModel(_script(("whoami", {})))
    billing = ReactAgent[Shop](
        billing_model,
        [whoami],
        name="billing",
        deps_type=Shop,
        instructions=lambda ctx: f"Bill {ctx.deps.user}.",
    )
    triage = ReactAgent[Shop](
        ScriptedModel([tool_call_reply(("transfer_to_billing", {}))]),
        handoffs=[billing],
        deps_type=Shop,
    )
    triage.run("q", deps=Shop("dave", []))
    (ctx,) = seen
    assert (ctx.deps.user, ctx.agent) == ("dave", "billing")
    system = billing_model.requests[0].messages[0]
    assert isinstance(system, SystemMessage) and system.content == "Bill dave."


def test_in_virtual_time_the_context_and_instructions_run_on_the_test_scheduler() -> None:
    scheduler = TestScheduler()
    model = ScriptedModel(
        [tool_call_reply(("whoami", {}), interval=2.0), text_reply("Done.", interval=1.0)],
        scheduler=scheduler,
    )
    agent = ReactAgent[Shop](
        model,
        [whoami],
        deps_type=Shop,
        scheduler=scheduler,
        instructions=lambda ctx: ctx.deps.user,
    )
    events = scheduler.start(lambda: agent.stream("q", deps=Shop("erin", []))).messages
    kinds = [m.value.value for m in events if m.value.kind == "N"]
    assert [e.content for e in kinds if isinstance(e, ToolResult)] == ["erin"]
    assert isinstance(kinds[-1], FinalAnswer)
    assert model.requests[0].messages[0].content == "erin"


@pytest.mark.integration
@pytest.mark.usefixtures("io_mode")
def test_over_http_tools_and_instructions_read_the_deps(serve_model: Any) -> None:
    def script(request: ChatRequest) -> Any:
        if request.messages[-1].role == "tool":
            return text_reply(f"Answered: {request.messages[-1].content}")
        return tool_call_reply(("whoami", {"loud": True}), ("refund", {"order": "B2"}))

    server, model = serve_model(script)
    shop = Shop("frank", [])
    agent = ReactAgent[Shop](
        model,
        [whoami, refund],
        deps_type=Shop,
        instructions=lambda ctx: f"Serving {ctx.deps.user}.",
    )
    result = agent.run("q", deps=shop)
    assert result.answer == "Answered: refunded B2 for frank"
    assert shop.refunds == ["B2"]
    assert server.requests[0]["messages"][0] == {"role": "system", "content": "Serving frank."}
    assert "ctx" not in str(server.requests[0]["tools"])
