"""FallbackModel in virtual time: failover before and after the first chunk, the hold window,
usage by model, circuit breakers and hedging, on scripted models and a ``TestScheduler``."""

from __future__ import annotations

from typing import Any

import pytest
import reactivex
from fallback_helpers import cut, named
from reactivex import operators as ops
from reactivex.testing import TestScheduler
from virtual_run import Recorder, run_virtual

from rxreact import (
    BadRequestError,
    CircuitBreaker,
    CircuitOpenError,
    FallbackModel,
    GuardrailResult,
    ReactAgent,
    Usage,
    tool,
)
from rxreact.messages import AssistantMessage, ChatRequest, UserMessage
from rxreact.model.assembly import ResponseAssembler
from rxreact.model.chunks import ChatChunk, ToolCallDelta
from rxreact.model.scripted.replies import HTTPErrorReply, Pause, text_reply


def agent_of(model: Any, scheduler: TestScheduler, **kw: Any) -> ReactAgent:
    return ReactAgent(model, scheduler=scheduler, **kw)


def texts(rec: Recorder) -> str:
    return "".join(e.delta for e in rec.of_type("text_delta"))


def test_before_the_first_chunk_a_failing_model_hands_over_without_a_restart() -> None:
    scheduler = TestScheduler()
    a = named("a", [HTTPErrorReply(503, "overloaded")])
    b = named("b", [text_reply("From b.", usage=Usage(prompt_tokens=3, completion_tokens=2))])
    rec = run_virtual(agent_of(FallbackModel([a, b], breaker=None), scheduler))

    assert rec.error is None and rec.completed
    switched = rec.of_type("model_switched")
    assert [(s.from_model, s.to_model) for s in switched] == [("a", "b")]
    assert "ServerError" in switched[0].reason
    assert rec.of_type("round_restarted") == []
    final = rec.events[-1]
    assert final.text == "From b."
    assert final.usage_by_model == {"b": Usage(prompt_tokens=3, completion_tokens=2)}
    assert len(a.requests) == 1 and len(b.requests) == 1


def test_a_bad_request_does_not_fall_back_unless_fallback_on_says_so() -> None:
    scheduler = TestScheduler()
    a = named("a", [HTTPErrorReply(400, "bad"), HTTPErrorReply(400, "bad")])
    b = named("b", [text_reply("ok")])
    rec = run_virtual(agent_of(FallbackModel([a, b], breaker=None), scheduler))
    assert isinstance(rec.error, BadRequestError) and b.requests == []

    allowing = FallbackModel(
        [a, b], breaker=None, fallback_on=lambda e: isinstance(e, BadRequestError)
    )
    rec = run_virtual(agent_of(allowing, TestScheduler()))
    assert rec.error is None and rec.events[-1].text == "ok"


def test_a_cut_mid_answer_restarts_the_round_on_the_next_model() -> None:
    scheduler = TestScheduler()
    a = named(
        "a",
        [
            cut(
                ChatChunk(text="Hello "),
                ChatChunk(text="wor", usage=Usage(prompt_tokens=10, completion_tokens=1)),
            )
        ],
    )
    b = named("b", [text_reply("Hi there.", usage=Usage(prompt_tokens=10, completion_tokens=3))])
    agent = agent_of(FallbackModel([a, b], breaker=None), scheduler)
    rec = run_virtual(agent)

    assert rec.error is None
    kinds = rec.types
    restart = kinds.index("round_restarted")
    assert kinds[restart - 1] == "model_switched" and kinds[restart + 1] == "round_started"
    shown_before = "".join(e.delta for e in rec.events[:restart] if e.type == "text_delta")
    shown_after = "".join(e.delta for e in rec.events[restart:] if e.type == "text_delta")
    assert (shown_before, shown_after) == ("Hello wor", "Hi there.")
    final = rec.events[-1]
    assert final.text == "Hi there."
    assert final.usage_by_model == {
        "a": Usage(prompt_tokens=10, completion_tokens=1),
        "b": Usage(prompt_tokens=10, completion_tokens=3),
    }
    assert final.usage == Usage(prompt_tokens=20, completion_tokens=4)
    assert b.requests[0] == a.requests[0]  # the same request, again


def test_a_call_cut_half_way_never_runs_and_its_id_never_reaches_a_request() -> None:
    ran: list[str] = []

    @tool
    def weather(city: str) -> str:
        """The weather."""
        ran.append(city)
        return "sunny"

    scheduler = TestScheduler()
    a = named(
        "a",
        [
            cut(
                ChatChunk(tool_calls=(ToolCallDelta(0, "call_cut", "weather", '{"ci'),)),
                ChatChunk(tool_calls=(ToolCallDelta(0, None, None, 'ty": "Par'),)),
            ),
            text_reply("Sunny."),
        ],
    )
    from rxreact.model.scripted.replies import tool_call_reply

    b = named("b", [tool_call_reply(("weather", {"city": "Oslo"}), ids=["call_ok"])])
    rec = run_virtual(agent_of(FallbackModel([a, b], breaker=None), scheduler, tools=[weather]))

    assert rec.error is None and rec.events[-1].text == "Sunny."
    assert ran == ["Oslo"]
    started = [e.call_id for e in rec.of_type("tool_call_started")]
    assert started == ["call_cut", "call_ok"]  # shown, then withdrawn by round_restarted
    assert "call_ok" in a.requests[1].model_dump_json()
    assert "call_cut" not in a.requests[1].model_dump_json()


def test_hold_sentence_hides_a_failure_inside_the_window_and_releases_sentences_as_they_end() -> (
    None
):
    scheduler = TestScheduler()
    a = named("a", [cut(ChatChunk(text="Never "), ChatChunk(text="seen"))])
    b = named("b", [text_reply("One. Two three four.", interval=1.0)])
    rec = run_virtual(agent_of(FallbackModel([a, b], breaker=None, hold="sentence"), scheduler))

    assert rec.error is None
    assert "round_restarted" not in rec.types
    assert texts(rec) == "One. Two three four."
    times = [(t, e.delta) for t, e in rec.items if e.type == "text_delta"]
    # a failed at t=3, unseen; b's first sentence goes out when it ends (t=4), the rest when
    # the answer does (t=8, with the finish chunk).
    assert times == [(4.0, "One. "), (8.0, "Two "), (8.0, "three "), (8.0, "four.")]


def test_hold_n_characters_lags_behind() -> None:
    scheduler = TestScheduler()
    b = named("b", [text_reply("abcdefgh", pieces=4, interval=1.0)])
    rec = run_virtual(agent_of(FallbackModel([b], breaker=None, hold=3), scheduler))
    times = [(t, e.delta) for t, e in rec.items if e.type == "text_delta"]
    # "ab" "cd" "ef" "gh" at t=1..4, finished at t=5; a character goes out three later.
    expected = [(2.0, "a"), (3.0, "b"), (3.0, "c"), (4.0, "d"), (4.0, "e"), (5.0, "f")]
    assert times == [*expected, (5.0, "gh")]


def test_assembling_a_fallback_stream_keeps_only_the_answering_model() -> None:
    scheduler = TestScheduler()
    a = named("a", [cut(ChatChunk(text="bad"))])
    b = named("b", [text_reply("good")])
    assembler = ResponseAssembler()
    request = ChatRequest(messages=(UserMessage(content="q"),))
    FallbackModel([a, b], breaker=None).stream(request).subscribe(
        assembler.add, scheduler=scheduler
    )
    scheduler.start()
    assert assembler.response().content == "good"
    assert assembler.response().replay == ()


def test_complete_falls_back_too() -> None:
    a = named("a", [HTTPErrorReply(503)])
    b = named("b", [text_reply("whole")])
    request = ChatRequest(messages=(UserMessage(content="q"),))
    assert FallbackModel([a, b], breaker=None).complete(request).content == "whole"


def test_model_from_a_chain_gives_every_model_the_keyword_arguments() -> None:
    from rxreact import AnthropicModel, OpenAIResponsesModel, model_from

    with model_from(
        "openai:gpt-5|anthropic:claude-sonnet-4-5", base_url="http://127.0.0.1:9/v1"
    ) as model:
        assert isinstance(model, FallbackModel)
        first, second = model.models
        assert isinstance(first, OpenAIResponsesModel) and isinstance(second, AnthropicModel)
        assert first.base_url == "http://127.0.0.1:9/v1"
        assert second.base_url.startswith("http://127.0.0.1:9")
        assert model.labels == ("openai:gpt-5", "anthropic:claude-sonnet-4-5")
        assert not model.needs_api_key  # loopback


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_breaker_opens_after_failures_skips_the_model_then_one_probe_closes_it() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failures=2, window=60, cooldown=30, clock=clock)
    a = named("a", lambda request: [HTTPErrorReply(503)])
    b = named("b", lambda request: text_reply("b answers"))
    fallback = FallbackModel([a, b], breaker=breaker)
    for _ in range(2):
        run_virtual(agent_of(fallback, TestScheduler()))
    assert fallback.breakers[0].state == "open" and len(a.requests) == 2
    rec = run_virtual(agent_of(fallback, TestScheduler()))
    assert len(a.requests) == 2  # skipped
    assert rec.of_type("model_switched")[0].reason == "circuit open"

    clock.now = 31
    assert fallback.breakers[0].state == "half_open"
    a._script = lambda request: text_reply("a is back", interval=1.0)  # type: ignore[assignment]
    scheduler = TestScheduler()
    recorders = [Recorder(scheduler) for _ in range(4)]
    agent = agent_of(fallback, scheduler)
    for recorder in recorders:  # four runs at once during the probe
        agent.stream("q").subscribe(recorder.on_next, recorder.on_error, recorder.on_completed)
    scheduler.start()
    assert len(a.requests) == 3  # one probe
    answers = sorted(r.events[-1].text for r in recorders)
    assert answers == ["a is back", "b answers", "b answers", "b answers"]
    assert fallback.breakers[0].state == "closed"


def test_every_breaker_open_fails_at_once_naming_each_model() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failures=1, window=60, cooldown=30, clock=clock)
    a = named("a", lambda request: [HTTPErrorReply(503)])
    b = named("b", lambda request: [HTTPErrorReply(502)])
    fallback = FallbackModel([a, b], breaker=breaker)
    run_virtual(agent_of(fallback, TestScheduler()))
    assert [br.state for br in fallback.breakers] == ["open", "open"]
    rec = run_virtual(agent_of(fallback, TestScheduler()))
    assert isinstance(rec.error, CircuitOpenError)
    assert rec.error.states == {"a": "open", "b": "open"}
    assert "a: open" in str(rec.error) and len(a.requests) == 1


def test_breakers_are_shared_by_fallback_models_with_the_same_policy() -> None:
    breaker = CircuitBreaker(failures=1, clock=Clock())
    a = named("a", [HTTPErrorReply(503)])
    first = FallbackModel([a, named("b", [])], breaker=breaker)
    second = FallbackModel([a, named("c", [])], breaker=breaker)
    assert first.breakers[0] is second.breakers[0]


def test_hedge_starts_the_second_model_and_the_first_chunk_wins() -> None:
    scheduler = TestScheduler()
    slow = named("slow", [[Pause(5.0), *text_reply("slow answer")]])
    fast = named("fast", [text_reply("fast answer")])
    rec = run_virtual(
        agent_of(FallbackModel([slow, fast], breaker=None, hedge_after=0.8), scheduler)
    )
    assert rec.error is None and rec.events[-1].text == "fast answer"
    switch = rec.of_type("model_switched")[0]
    assert (switch.from_model, switch.to_model) == ("slow", "fast")
    started = next(t for t, e in rec.items if e.type == "model_switched")
    assert started == pytest.approx(0.8)
    assert rec.items[-1][0] == pytest.approx(0.8)  # not held up by the slow one


def test_hedge_percentile_waits_for_observations() -> None:
    model = FallbackModel([named("a", []), named("b", [])], breaker=None, hedge_after="p90")
    assert model.hedge_delay() is None
    for i in range(20):
        model.first_chunk_latency(0, i / 10)
    assert model.hedge_delay() == pytest.approx(1.8)


def test_history_is_valid_after_a_switch() -> None:
    scheduler = TestScheduler()
    a = named("a", [cut(ChatChunk(text="partial"))])
    b = named("b", [text_reply("whole")])
    rec = run_virtual(agent_of(FallbackModel([a, b], breaker=None), scheduler))
    assert rec.error is None
    final = rec.events[-1]
    assert final.text == "whole"
    result_messages = agent_of(FallbackModel([named("c", [text_reply("x")])]), TestScheduler())
    assert result_messages is not None
    assistant = AssistantMessage(content="whole")
    assert assistant.content == final.text


def test_each_attempt_is_its_own_span_naming_its_model_and_breaker_state() -> None:
    otel = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = otel.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    scheduler = TestScheduler()
    a = named("a", [cut(ChatChunk(text="half"))])
    b = named("b", [text_reply("whole", usage=Usage(prompt_tokens=4, completion_tokens=1))])
    breaker = CircuitBreaker(clock=Clock())
    model = FallbackModel([a, b], breaker=breaker)
    rec = run_virtual(ReactAgent(model, scheduler=scheduler, tracer_provider=provider))
    assert rec.error is None
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert [s.name for s in chats] == ["chat a", "chat b"]
    first, second = (dict(s.attributes or {}) for s in chats)
    assert first["error.type"] == "model_switched"
    assert "StreamInterruptedError" in first["rxreact.fallback.reason"]
    assert first["rxreact.circuit_breaker.state"] == "closed"
    assert second["gen_ai.request.model"] == "b"
    assert second["gen_ai.usage.input_tokens"] == 4


def test_the_chat_page_stream_withdraws_the_text_of_the_model_that_failed() -> None:
    from rxreact.serve.ui_stream import to_ui_message_stream

    scheduler = TestScheduler()
    a = named("a", [cut(ChatChunk(text="Half an "))])
    b = named("b", [text_reply("Whole.")])
    agent = ReactAgent(FallbackModel([a, b], breaker=None), scheduler=scheduler)
    parts: list[Any] = []
    agent.stream("q").pipe(to_ui_message_stream()).subscribe(lambda c: parts.append(c.part))
    scheduler.start()
    (restarted,) = [p for p in parts if p["type"] == "data-round-restarted"]
    withdrawn = restarted["data"]["partIds"]
    shown = [p for p in parts if p["type"] == "text-delta"]
    assert [p["delta"] for p in shown if p["id"] in withdrawn] == ["Half an "]
    assert [p["delta"] for p in shown if p["id"] not in withdrawn] == ["Whole."]


def test_a_typed_answer_cut_mid_json_is_read_anew_on_the_next_model() -> None:
    from pydantic import BaseModel

    class Forecast(BaseModel):
        city: str
        sky: str

    scheduler = TestScheduler()
    a = named("a", [cut(ChatChunk(text='{"city": "Os'), ChatChunk(text='lo", "sk'))])
    b = named("b", [text_reply('{"city": "Bergen", "sky": "rain"}', pieces=4)])
    agent = ReactAgent(FallbackModel([a, b], breaker=None), scheduler=scheduler)
    rec = run_virtual(agent, output_type=Forecast)
    assert rec.error is None
    kinds = rec.types
    assert kinds.index("output_reset") > kinds.index("round_restarted")
    after = [
        e.output for e in rec.events[kinds.index("output_reset") :] if e.type == "output_partial"
    ]
    assert after[-1] == {"city": "Bergen", "sky": "rain"}
    assert all("Os" not in str(value) for value in after)
    assert rec.events[-1].output == Forecast(city="Bergen", sky="rain")


def _guarded_restart(first: str, second: str) -> tuple[Recorder, list[str]]:
    """Model a streams ``first`` then is cut; b answers ``second``. An output guardrail that
    answers 10 virtual seconds after each check trips on "FORBIDDEN"; what it saw, too."""
    seen: list[str] = []

    def check(text: str) -> Any:
        seen.append(text)
        verdict = GuardrailResult(tripped="FORBIDDEN" in text, reason="said FORBIDDEN")
        return reactivex.timer(10.0).pipe(ops.map(lambda _: verdict))

    a = named("a", [cut(ChatChunk(text=first), ChatChunk(text="and"))])
    b = named("b", [text_reply(second)])
    agent = agent_of(
        FallbackModel([a, b], breaker=None),
        TestScheduler(),
        output_guardrails=[check],
        hold="sentence",
    )
    return run_virtual(agent), seen


def test_a_restart_voids_the_held_text_and_its_pending_check() -> None:
    # The cut comes while the check of "FORBIDDEN words." is still running: that verdict is on
    # void text, so it neither trips the run nor lets the held text out after the restart.
    rec, seen = _guarded_restart("FORBIDDEN words. ", "Fine answer.")

    assert rec.error is None, rec.error
    assert "guardrail_tripped" not in rec.types
    restart = rec.types.index("round_restarted")
    assert "text_delta" not in rec.types[:restart]  # the void text was held, then dropped
    assert texts(rec) == "Fine answer." and rec.events[-1].text == "Fine answer."
    assert seen == ["FORBIDDEN words. ", "Fine answer."]


def test_after_a_restart_the_new_models_text_is_still_checked() -> None:
    rec, seen = _guarded_restart("Fine start. ", "FORBIDDEN now.")

    assert rec.types.count("guardrail_tripped") == 1
    assert "FORBIDDEN" not in texts(rec)
    assert seen[-1] == "FORBIDDEN now."
