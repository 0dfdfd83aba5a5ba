"""Guardrails in virtual time: input guardrails concurrent with round 1, output guardrails at
sentence boundaries with ``hold="sentence"`` and ``hold="none"``, and what a trip leaves."""

from __future__ import annotations

from typing import Any

import pytest
import reactivex
from reactivex import operators as ops
from reactivex.testing import TestScheduler

from rxreact import (
    CancellationToken,
    GuardrailResult,
    GuardrailTrippedError,
    InMemoryChatMemory,
    InvalidArgumentError,
    ReactAgent,
    tool,
)
from rxreact.checks.guardrails import sentence_ends
from rxreact.events import GuardrailTripped
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import text_reply, tool_call_reply

PASS = GuardrailResult(tripped=False)


def after(seconds: float, result: GuardrailResult) -> Any:
    """A guardrail's answer after ``seconds`` of (virtual) time."""
    return reactivex.timer(seconds).pipe(ops.map(lambda _: result))


class Outcome:
    """Everything a run delivered: events with their virtual times, text, the error."""

    def __init__(self, agent: ReactAgent, scheduler: TestScheduler, conversation: Any = None):
        self.events: list[tuple[float, Any]] = []
        self.text: list[str] = []
        self.error: Exception | None = None
        self.completed = False
        agent.stream("question", conversation).subscribe(
            lambda e: self.events.append((scheduler.clock, e)),
            self._failed,
            self._done,
            scheduler=scheduler,
        )
        scheduler.start()

    def _failed(self, error: Exception) -> None:
        self.error = error

    def _done(self) -> None:
        self.completed = True

    def types(self) -> list[str]:
        return [e.type for _, e in self.events]

    def shown(self) -> str:
        """The answer text delivered (what ``text()`` shows)."""
        return "".join(e.delta for _, e in self.events if e.type == "text_delta" and not e.path)


def test_text_waits_for_the_input_guardrails_and_stream_marks_the_hold() -> None:
    scheduler = TestScheduler()

    def on_topic(question: str, history: Any) -> Any:
        assert question == "question" and list(history) == []
        return after(2.5, PASS)

    agent = ReactAgent(
        ScriptedModel([text_reply("One two. Three.", interval=1.0)]),
        scheduler=scheduler,
        input_guardrails=[on_topic],
    )
    run = Outcome(agent, scheduler)
    assert run.completed and run.shown() == "One two. Three."
    assert run.types()[:2] == ["guardrail_started", "round_started"]
    timed = [(t, e.type) for t, e in run.events]
    passed = timed.index((2.5, "guardrail_passed"))
    first_text = next(i for i, (_, kind) in enumerate(timed) if kind == "text_delta")
    assert passed < first_text and timed[first_text][0] == 2.5  # the held text, at the pass
    assert [e.seq for _, e in run.events] == list(range(1, len(run.events) + 1))

    pieces: list[str] = []
    scheduler = TestScheduler()
    agent = ReactAgent(
        ScriptedModel([text_reply("One two. Three.", interval=1.0)]),
        scheduler=scheduler,
        input_guardrails=[on_topic],
    )
    agent.text("question").subscribe(pieces.append, scheduler=scheduler)
    scheduler.start()
    assert "".join(pieces) == "One two. Three."


def test_an_input_guardrail_tripping_during_a_tool_round_stops_everything() -> None:
    scheduler = TestScheduler()
    tokens: list[CancellationToken] = []
    effects: list[str] = []

    @tool
    def slow(token: CancellationToken) -> reactivex.Observable[str]:
        """Runs for a long time."""
        tokens.append(token)
        return reactivex.timer(10.0).pipe(ops.map(lambda _: "slow done"))

    @tool
    def send_email(to: str) -> str:
        """Sends an email."""
        effects.append(to)
        return "sent"

    def on_topic(question: str, history: Any) -> Any:
        return after(3.0, GuardrailResult(tripped=True, reason="off topic"))

    memory = InMemoryChatMemory()
    agent = ReactAgent(
        ScriptedModel(
            [
                tool_call_reply(("slow", {}), interval=0.5),  # round 1 ends at 1.0
                tool_call_reply(("send_email", {"to": "x@y.z"})),  # never requested
                text_reply("never"),
            ],
            scheduler=scheduler,
        ),
        [slow, send_email],
        scheduler=scheduler,
        input_guardrails=[on_topic],
        memory=memory,
    )
    run = Outcome(agent, scheduler, "c1")
    assert isinstance(run.error, GuardrailTrippedError)
    assert run.error.guardrail == "on_topic" and run.error.reason == "off topic"
    assert run.error.kind == "input"
    assert len(tokens) == 1 and tokens[0].cancelled  # the running tool, told to stop
    assert effects == []  # no tool started after the trip
    assert run.types()[-1] == "guardrail_tripped"
    tripped = run.events[-1][1]
    assert isinstance(tripped, GuardrailTripped) and tripped.reason == "off topic"
    assert run.events[-1][0] == 3.0
    assert "tool_result" not in run.types() and run.shown() == ""
    assert memory.load("c1") == []


def test_an_input_trip_before_round_1_ends_closes_its_model_stream() -> None:
    scheduler = TestScheduler()
    effects: list[str] = []

    @tool
    def send_email(to: str) -> str:
        """Sends an email."""
        effects.append(to)
        return "sent"

    agent = ReactAgent(
        ScriptedModel(
            [tool_call_reply(("send_email", {"to": "a@b.c"}), interval=1.0)], scheduler=scheduler
        ),
        [send_email],
        scheduler=scheduler,
        input_guardrails=[lambda q, h: after(1.5, GuardrailResult(tripped=True, reason="no"))],
    )
    run = Outcome(agent, scheduler)
    assert isinstance(run.error, GuardrailTrippedError)
    assert effects == []
    # nothing of round 1 arrives after the trip: the model stream was disposed at 1.5
    assert max(t for t, _ in run.events) == 1.5


def test_an_output_guardrail_trips_mid_answer_and_the_sentence_never_shows() -> None:
    scheduler = TestScheduler()
    seen: list[str] = []

    def no_secrets(text_so_far: str) -> Any:
        seen.append(text_so_far)
        return after(0.5, GuardrailResult(tripped="secret" in text_so_far, reason="a secret"))

    memory = InMemoryChatMemory()
    agent = ReactAgent(
        ScriptedModel(
            [text_reply("One two. Three four. The secret is x. End.", interval=1.0)],
            scheduler=scheduler,
        ),
        scheduler=scheduler,
        output_guardrails=[no_secrets],
        memory=memory,
    )
    run = Outcome(agent, scheduler, "c1")
    assert isinstance(run.error, GuardrailTrippedError) and run.error.kind == "output"
    assert run.shown() == "One two. Three four. "  # one sentence at a time, the last never
    assert seen == ["One two. ", "One two. Three four. ", "One two. Three four. The secret is x. "]
    released = [t for t, e in run.events if e.type == "text_delta"]
    assert released == [2.5, 2.5, 4.5, 4.5]  # each sentence its check's 0.5 s after its end
    tripped = run.events[-1][1]
    # the round's text that went out is withdrawn with the answer; the tripped sentence
    # itself never went out
    assert tripped.type == "guardrail_tripped" and tripped.withdrawn == "One two. Three four. "
    assert memory.load("c1") == []


def test_hold_none_shows_text_at_once_and_the_trip_withdraws_it() -> None:
    scheduler = TestScheduler()
    agent = ReactAgent(
        ScriptedModel(
            [text_reply("One two. The secret is x. End.", interval=1.0)], scheduler=scheduler
        ),
        scheduler=scheduler,
        output_guardrails=[
            lambda text: after(0.5, GuardrailResult(tripped="secret" in text, reason="leak"))
        ],
        hold="none",
    )
    run = Outcome(agent, scheduler)
    assert isinstance(run.error, GuardrailTrippedError)
    live = [t for t, e in run.events if e.type == "text_delta"]
    assert live == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # nothing waited
    tripped = run.events[-1][1]
    assert tripped.type == "guardrail_tripped" and tripped.kind == "output"
    assert tripped.withdrawn == "One two. The secret is x. " and run.events[-1][0] == 6.5


def test_passing_output_guardrails_check_every_sentence_and_the_end() -> None:
    scheduler = TestScheduler()
    seen: list[str] = []

    def record(text_so_far: str) -> GuardrailResult:
        seen.append(text_so_far)
        return PASS

    memory = InMemoryChatMemory()
    agent = ReactAgent(
        ScriptedModel([text_reply("Hi there! Is 3.5 ok? Yes")], scheduler=scheduler),
        scheduler=scheduler,
        output_guardrails=[record],
        memory=memory,
    )
    run = Outcome(agent, scheduler, "c1")
    assert run.completed and run.shown() == "Hi there! Is 3.5 ok? Yes"
    assert seen[-1] == "Hi there! Is 3.5 ok? Yes"  # the end is checked too
    assert all(text.endswith(("! ", "? ", "Yes")) for text in seen)  # never after "3."
    assert run.types()[-1] == "final_answer" and len(memory.load("c1")) == 2


@pytest.mark.parametrize(
    ("guardrail", "reason"),
    [
        (lambda text: 1 / 0, "ZeroDivisionError"),
        (lambda text: "fine", "not a GuardrailResult"),
    ],
)
def test_a_guardrail_that_cannot_answer_trips(guardrail: Any, reason: str) -> None:
    scheduler = TestScheduler()
    agent = ReactAgent(
        ScriptedModel([text_reply("Hello.")], scheduler=scheduler),
        scheduler=scheduler,
        output_guardrails=[guardrail],
    )
    run = Outcome(agent, scheduler)
    assert isinstance(run.error, GuardrailTrippedError) and reason in run.error.reason
    assert run.shown() == ""


def test_async_guardrails_on_real_threads() -> None:
    async def polite(question: str, history: Any) -> GuardrailResult:
        return GuardrailResult(tripped="stupid" in question, reason="rude")

    async def short(text: str) -> GuardrailResult:
        return GuardrailResult(tripped=len(text) > 100, reason="too long")

    agent = ReactAgent(
        ScriptedModel([text_reply("Fine. Thanks."), text_reply("never")]),
        input_guardrails=[polite],
        output_guardrails=[short],
    )
    assert agent.call("how are you?") == "Fine. Thanks."
    with pytest.raises(GuardrailTrippedError, match="rude"):
        agent.call("stupid question")


def test_sentence_ends() -> None:
    assert sentence_ends("One two. Three") == 9
    assert sentence_ends("Pi is 3.") is None  # maybe 3.14: wait for what follows
    assert sentence_ends('He said "no." Then') == 14
    assert sentence_ends("a line\nnext") == 7
    assert sentence_ends("One. Two. ", 5) == 10


def test_settings_are_checked() -> None:
    model = ScriptedModel([])
    with pytest.raises(InvalidArgumentError):
        ReactAgent(model, input_guardrails=lambda q, h: PASS)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        ReactAgent(model, output_guardrails=["no"])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError):
        ReactAgent(model, hold="word")  # type: ignore[arg-type]


def test_each_check_is_an_execute_guardrail_span_of_the_run() -> None:
    otel = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = otel.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def on_topic(question: str, history: Any) -> GuardrailResult:
        return PASS

    def no_secrets(text_so_far: str) -> GuardrailResult:
        return GuardrailResult(tripped="secret" in text_so_far, reason="a secret")

    scheduler = TestScheduler()
    agent = ReactAgent(
        ScriptedModel([text_reply("Fine. The secret is x. ")], scheduler=scheduler),
        scheduler=scheduler,
        input_guardrails=[on_topic],
        output_guardrails=[no_secrets],
        tracer_provider=provider,
    )
    run = Outcome(agent, scheduler)
    assert isinstance(run.error, GuardrailTrippedError)
    spans = {span.name: span for span in exporter.get_finished_spans()}
    (root,) = [span for span in spans.values() if span.name.startswith("invoke_agent")]
    checked = spans["execute_guardrail on_topic"]
    tripped = [s for s in exporter.get_finished_spans() if s.name == "execute_guardrail no_secrets"]
    assert checked.attributes is not None and checked.attributes["rxreact.guardrail.kind"] == (
        "input"
    )
    assert checked.parent is not None and checked.parent.span_id == root.context.span_id
    assert [s.attributes["rxreact.guardrail.tripped"] for s in tripped] == [False, True]
    assert tripped[-1].status.description == "a secret"


def test_guardrails_are_drawn_in_the_checks_lane() -> None:
    from rxreact.testing.agent_marbles import assert_marbles, run_marbles

    def build(scheduler: TestScheduler) -> ReactAgent:
        return ReactAgent(
            ScriptedModel([text_reply("One two. Three.", interval=1.0)]),
            scheduler=scheduler,
            input_guardrails=[lambda question, history: after(1.5, PASS)],
            output_guardrails=[lambda text: after(0.5, PASS)],
        )

    recording = run_marbles(build)
    assert_marbles(
        recording,
        {"checks": "G--g-----|", "text": "-----(a,b)(c,|)", "rounds": "R-A------(f,F,|)"},
        unit=0.5,
        values={"text": {"a": "One ", "b": "two. ", "c": "Three."}},
    )
