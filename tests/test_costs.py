"""Usage.cost from genai-prices and from a table of one's own; Budget, per run and per
conversation, checked on the projected cost while a round streams (virtual time, and one
loopback server that sees its socket closed)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from fault_server import Fault, FaultServer
from reactivex.testing import TestScheduler
from virtual_run import run_virtual

from rxreact import (
    AnthropicModel,
    Budget,
    BudgetExceededError,
    ConfigurationError,
    FallbackModel,
    InMemoryChatMemory,
    ModelPrice,
    OpenAIChatModel,
    ReactAgent,
    ScriptedModel,
    SQLiteChatMemory,
    Usage,
    register_price,
)
from rxreact.costs import prices
from rxreact.costs.prices import cost_of
from rxreact.model.scripted.replies import text_reply, tool_call_reply

genai_prices = pytest.importorskip("genai_prices")

LOOPBACK = "http://127.0.0.1:9/v1"


def reference(model: str, provider: str, **tokens: int) -> float:
    """What genai-prices itself says, for the same tokens."""
    usage = genai_prices.Usage(**tokens)
    return float(genai_prices.calc_price(usage, model, provider_id=provider).total_price)


def test_openai_cached_input_is_billed_at_the_cache_read_price() -> None:
    model = OpenAIChatModel("gpt-5", base_url=LOOPBACK)
    usage = Usage(
        prompt_tokens=1000,
        completion_tokens=300,
        prompt_tokens_details={"cached_tokens": 600},
        completion_tokens_details={"reasoning_tokens": 200},  # inside completion_tokens
    )
    expected = reference(
        "gpt-5", "openai", input_tokens=1000, cache_read_tokens=600, output_tokens=300
    )
    assert cost_of(usage, model) == pytest.approx(expected)
    assert expected < reference("gpt-5", "openai", input_tokens=1000, output_tokens=300)


def test_anthropic_cache_reads_and_writes_are_billed_as_anthropic_bills_them() -> None:
    model = AnthropicModel("claude-sonnet-4-5", base_url="http://127.0.0.1:9")
    usage = Usage(
        prompt_tokens=1000,  # every input token: uncached + cache writes + cache reads
        completion_tokens=100,
        cache_read_input_tokens=500,
        cache_creation_input_tokens=100,
    )
    expected = reference(
        "claude-sonnet-4-5",
        "anthropic",
        input_tokens=1000,
        cache_read_tokens=500,
        cache_write_tokens=100,
        output_tokens=100,
    )
    assert cost_of(usage, model) == pytest.approx(expected)


def test_an_unknown_model_costs_none_not_zero_and_a_sum_with_it_too() -> None:
    unknown = OpenAIChatModel("no-such-model-anywhere", base_url=LOOPBACK)
    assert cost_of(Usage(prompt_tokens=10, completion_tokens=1), unknown) is None
    assert (Usage(prompt_tokens=1, cost=0.5) + Usage(prompt_tokens=1)).cost is None
    assert (Usage(prompt_tokens=1, cost=0.5) + Usage(prompt_tokens=1, cost=0.25)).cost == 0.75


def test_a_price_of_ones_own_and_a_providers_reported_cost() -> None:
    register_price("my-local-model", ModelPrice(input=1.0, output=2.0))
    local = OpenAIChatModel("my-local-model", base_url=LOOPBACK)
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=500_000)
    assert cost_of(usage, local) == pytest.approx(2.0)
    assert cost_of(Usage(prompt_tokens=5, cost=0.125), local) == 0.125  # as reported


def test_without_genai_prices_only_ones_own_table_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prices, "_GENAI", [None])
    monkeypatch.setattr(prices, "_FOUND", {})
    known = OpenAIChatModel("gpt-4o-mini", base_url=LOOPBACK)
    assert cost_of(Usage(prompt_tokens=10, completion_tokens=1), known) is None


def priced(script: Any, name: str = "gpt-4o-mini", provider: str = "openai") -> ScriptedModel:
    model = ScriptedModel(script)
    model.model = name  # type: ignore[attr-defined]
    model.provider = provider  # type: ignore[attr-defined]
    return model


def test_every_round_and_the_run_carry_cost() -> None:
    @__import__("rxreact").tool
    def weather(city: str) -> str:
        """The weather."""
        return "sunny"

    round_usage = Usage(prompt_tokens=2000, completion_tokens=100)
    model = priced(
        [
            tool_call_reply(("weather", {"city": "Oslo"}), usage=round_usage),
            text_reply("Sunny.", usage=round_usage),
        ]
    )
    rec = run_virtual(ReactAgent(model, [weather], scheduler=TestScheduler()))
    one = reference("gpt-4o-mini", "openai", input_tokens=2000, output_tokens=100)
    rounds = rec.of_type("round_finished")
    assert [r.usage.cost for r in rounds] == [pytest.approx(one)] * 2
    final = rec.events[-1]
    assert final.usage.cost == pytest.approx(2 * one)
    assert final.usage_by_agent["agent"].cost == pytest.approx(2 * one)


DEAR = ModelPrice(input=0.0, output=1_000_000.0)  # $1 an output token: 25 cents a character


@pytest.fixture
def dear() -> None:
    register_price("dear-model", DEAR)


def test_a_run_budget_stops_the_round_while_it_streams(dear: None) -> None:
    scheduler = TestScheduler()
    model = priced([text_reply("abcd " * 20, interval=1.0)], name="dear-model")
    rec = run_virtual(ReactAgent(model, scheduler=scheduler, budget=Budget(usd=2.0)))
    assert isinstance(rec.error, BudgetExceededError)
    assert rec.error.spent > 2.0 and rec.error.limit == 2.0 and rec.error.per == "run"
    shown = "".join(e.delta for e in rec.of_type("text_delta"))
    assert 0 < len(shown) <= 8  # stopped at once: about eight characters are two dollars
    assert rec.items[-1][0] < 5  # at the crossing, not at the stream's end (t=20)


def test_on_exceed_final_answer_ends_with_the_text_so_far_marked_cut(dear: None) -> None:
    memory = InMemoryChatMemory()
    model = priced(
        [tool_call_reply(("weather", {"city": "Oslo"}), text="Let me look that up.")],
        name="dear-model",
    )
    agent = ReactAgent(
        model,
        scheduler=TestScheduler(),
        memory=memory,
        budget=Budget(usd=3.0, on_exceed="final_answer"),
    )
    rec = run_virtual(agent, conversation_id="c")
    assert rec.error is None
    final = rec.events[-1]
    assert final.budget_exceeded and 0 < len(final.text) < len("Let me look that up.")
    stored = memory.load("c")
    assert stored[-1].content == final.text and stored[-1].tool_calls == ()  # no call runs


def test_budget_on_every_way_to_run_overrides_the_agents(dear: None) -> None:
    model = priced(lambda request: text_reply("abcd " * 10), name="dear-model")
    agent = ReactAgent(model, budget=Budget(usd=1000.0))
    assert agent.run("q").answer.startswith("abcd")
    with pytest.raises(BudgetExceededError):
        agent.run("q", budget=Budget(usd=1.0))
    with pytest.raises(BudgetExceededError):
        agent.call("q", budget=Budget(usd=1.0))
    with pytest.raises(BudgetExceededError):
        list(agent.iter("q", budget=Budget(usd=1.0)))
    cut = agent.run("q", budget=Budget(usd=1.0, on_exceed="final_answer"))
    assert cut.budget_exceeded and len(cut.answer) <= 4


def test_a_budget_needs_a_price(dear: None) -> None:
    agent = ReactAgent(priced([text_reply("x")], name="unpriced-model"), budget=Budget(usd=1.0))
    with pytest.raises(ConfigurationError, match="price of"):
        agent.run("q")


@pytest.mark.parametrize("backend", ["memory", "sqlite", "redis"])
def test_a_conversation_budget_is_kept_in_the_memory(
    backend: str, dear: None, tmp_path: Any, request: pytest.FixtureRequest
) -> None:
    if backend == "memory":
        memory: Any = InMemoryChatMemory()
    elif backend == "sqlite":
        memory = SQLiteChatMemory(str(tmp_path / "chat.db"))
    else:
        from rxreact import RedisChatMemory

        server = request.getfixturevalue("redis_server")
        memory = RedisChatMemory(server.url, prefix=f"costs-{tmp_path.name}:")
    budget = Budget(usd=5.0, per="conversation")
    answer = text_reply("ab", usage=Usage(prompt_tokens=0, completion_tokens=2))
    first = ReactAgent(priced(lambda r: answer, name="dear-model"), memory=memory, budget=budget)
    assert first.run("q", "conv").answer == "ab"
    assert memory.spend("conv") == pytest.approx(2.0)
    again = ReactAgent(priced(lambda r: answer, name="dear-model"), memory=memory, budget=budget)
    assert again.run("q", "conv").answer == "ab"  # 4 of 5 dollars now
    with pytest.raises(BudgetExceededError) as raised:
        ReactAgent(priced(lambda r: text_reply("abcdefgh"), name="dear-model"), memory=memory).run(
            "q", "conv", budget=budget
        )
    assert raised.value.spent > 5.0 and raised.value.per == "conversation"
    assert memory.spend("other") == 0.0


def test_crossing_the_budget_closes_the_socket() -> None:
    register_price("m", ModelPrice(input=0.0, output=1_000_000.0))
    with FaultServer([Fault("endless", interval=0.01)]) as server:
        model = OpenAIChatModel("m", base_url=server.base_url, max_retries=0)
        done = threading.Event()
        errors: list[Exception] = []

        def on_error(error: Exception) -> None:
            errors.append(error)
            done.set()

        agent = ReactAgent(model, budget=Budget(usd=3.0))
        agent.stream("q").subscribe(lambda e: None, on_error, done.set)
        assert done.wait(10)
        assert isinstance(errors[0], BudgetExceededError)
        assert server.wait_for(lambda s: s.closed_by_client >= 1, timeout=2)
        model.close()


def test_a_fallback_chain_prices_each_model_it_called() -> None:
    from rxreact import StreamInterruptedError
    from rxreact.model.chunks import ChatChunk
    from rxreact.model.scripted.replies import Fail

    cut = priced(
        [
            [
                ChatChunk(text="x", usage=Usage(prompt_tokens=1000, completion_tokens=1)),
                Fail(StreamInterruptedError("cut")),
            ]
        ],
        name="gpt-4o",
    )
    whole = priced([text_reply("y", usage=Usage(prompt_tokens=1000, completion_tokens=2))])
    rec = run_virtual(
        ReactAgent(FallbackModel([cut, whole], breaker=None), scheduler=TestScheduler())
    )
    by_model = rec.events[-1].usage_by_model
    assert by_model["openai:gpt-4o"].cost == pytest.approx(
        reference("gpt-4o", "openai", input_tokens=1000, output_tokens=1)
    )
    assert by_model["openai:gpt-4o-mini"].cost == pytest.approx(
        reference("gpt-4o-mini", "openai", input_tokens=1000, output_tokens=2)
    )


def test_the_openai_compatible_usage_record_carries_the_cost() -> None:
    from rxreact.events import FinalAnswer
    from rxreact.serve.openai_compat import usage_of

    priced_usage = Usage(prompt_tokens=3, completion_tokens=2, cost=0.25)
    record = usage_of(FinalAnswer(round=1, text="x", rounds=1, usage=priced_usage))
    assert record == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5, "cost": 0.25}
    unpriced = usage_of(FinalAnswer(round=1, text="x", rounds=1, usage=Usage(prompt_tokens=3)))
    assert "cost" not in unpriced  # unknown is left out, never 0
