"""The judge (the seed's VALIDATING phase) over real HTTP against the loopback mock server."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
import reactivex

from rxreact import (
    InMemoryChatMemory,
    JudgeError,
    LLMJudge,
    ReactAgent,
    ScriptedModel,
    Usage,
    Verdict,
    tool,
)
from rxreact.checks.validation import REVISION_INSTRUCTION
from rxreact.messages import Message
from rxreact.model.scripted.replies import HTTPErrorReply, text_reply, tool_call_reply
from rxreact.scheduling import ElasticScheduler
from rxreact.testing import ChaosScheduler
from rxreact.testing.agent_marbles import assert_marbles, run_marbles

JSON_MODE = {"type": "json_object"}


def verdict(passed: bool, feedback: str = "", usage: Usage | None = None) -> Any:
    return text_reply(json.dumps({"passed": passed, "feedback": feedback}), usage=usage)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


def collect(agent: ReactAgent, question: str, **kwargs: Any) -> tuple[list[Any], Any]:
    events: list[Any] = []
    errors: list[Exception] = []
    done = threading.Event()
    agent.stream(question, **kwargs).subscribe(
        events.append, lambda e: (errors.append(e), done.set()), done.set
    )
    assert done.wait(20)
    return events, errors[0] if errors else None


pytestmark = pytest.mark.integration


@pytest.mark.usefixtures("io_mode")
def test_a_passing_draft_is_judged_once_in_json_mode_not_streamed(serve_model: Any) -> None:
    server, model = serve_model([text_reply("Oslo is sunny."), verdict(True)])
    events, error = collect(ReactAgent(model, judge=LLMJudge()), "Weather in Oslo?")

    assert error is None
    types = [e.type for e in events]
    assert types[-3:] == ["validation_started", "answer_validated", "final_answer"]
    assert events[-2].passed is True
    assert (events[-1].text, events[-1].validated) == ("Oslo is sunny.", True)
    judge_body = server.requests[1]
    assert judge_body["stream"] is False and judge_body["response_format"] == JSON_MODE
    assert "Weather in Oslo?" in judge_body["messages"][-1]["content"]
    assert "Oslo is sunny." in judge_body["messages"][-1]["content"]


@pytest.mark.usefixtures("io_mode")
def test_a_rejected_draft_stays_in_history_and_the_feedback_brings_a_revision(
    serve_model: Any,
) -> None:
    server, model = serve_model(
        [
            text_reply("It is sunny."),
            verdict(False, "Say which city."),
            text_reply("Oslo is sunny."),
            verdict(True),
        ]
    )
    memory = InMemoryChatMemory()
    agent = ReactAgent(model, judge=LLMJudge(), memory=memory)
    result = agent.run("Weather in Oslo?", "c1")

    assert (result.answer, result.validated, result.rounds) == ("Oslo is sunny.", True, 2)
    revision_request = server.requests[2]["messages"]
    feedback = REVISION_INSTRUCTION.format(feedback="Say which city.")
    assert revision_request == [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": "It is sunny."},
        {"role": "user", "content": feedback},
    ]
    kept = [(m.role, m.content) for m in memory.load("c1")]  # the whole turn, as the model saw it
    assert kept == [
        ("user", "Weather in Oslo?"),
        ("assistant", "It is sunny."),
        ("user", feedback),
        ("assistant", "Oslo is sunny."),
    ]
    assert [m.content for m in result.messages] == [c for _, c in kept]


@pytest.mark.usefixtures("io_mode")
def test_text_never_shows_a_rejected_draft(serve_model: Any) -> None:
    _, model = serve_model(
        [
            tool_call_reply(("get_weather", {"city": "Oslo"}), text="Let me look."),
            text_reply("Rainy, I guess."),
            verdict(False, "Use the tool result."),
            text_reply("Oslo is sunny."),
            verdict(True),
        ]
    )
    agent = ReactAgent(model, [get_weather], judge=LLMJudge())
    pieces = agent.text("Weather in Oslo?").pipe(reactivex.operators.to_list()).run()
    assert "".join(pieces) == "Let me look.Oslo is sunny."


def test_stream_shows_every_draft_live() -> None:
    judge_model = ScriptedModel([verdict(False, "Try again."), verdict(True)])
    model = ScriptedModel([text_reply("No."), text_reply("Yes.")])
    events, _ = collect(ReactAgent(model, judge=LLMJudge(judge_model)), "q")
    assert "".join(e.delta for e in events if e.type == "text_delta") == "No.Yes."
    assert [e.passed for e in events if e.type == "answer_validated"] == [False, True]


@pytest.mark.usefixtures("io_mode")
def test_when_revisions_run_out_the_last_draft_stands(serve_model: Any) -> None:
    server, model = serve_model(
        [text_reply("A."), verdict(False, "no"), text_reply("B."), verdict(False, "still no")]
    )
    agent = ReactAgent(model, judge=LLMJudge(), max_revisions=1)
    events, error = collect(agent, "q")
    assert error is None
    final = events[-1]
    assert (final.text, final.validated, final.rounds) == ("B.", False, 2)
    assert len(server.requests) == 4


def test_text_shows_the_draft_that_stands() -> None:
    judge_model = ScriptedModel([verdict(False, "no"), verdict(False, "no")])
    model = ScriptedModel([text_reply("A."), text_reply("B.")])
    agent = ReactAgent(model, judge=LLMJudge(judge_model), max_revisions=1)
    assert "".join(agent.text("q").pipe(reactivex.operators.to_list()).run()) == "B."


@pytest.mark.usefixtures("io_mode")
def test_a_judge_that_fails_accepts_the_draft_by_default(serve_model: Any) -> None:
    _, model = serve_model([text_reply("Draft."), HTTPErrorReply(500, "judge down")])
    events, error = collect(ReactAgent(model, judge=LLMJudge()), "q")

    assert error is None
    validated = events[-2]
    assert validated.type == "answer_validated" and validated.passed is None
    assert "judge down" in (validated.error or "")
    assert (events[-1].text, events[-1].validated) == ("Draft.", None)


@pytest.mark.usefixtures("io_mode")
def test_a_judge_that_fails_ends_the_run_with_raise(serve_model: Any) -> None:
    _, model = serve_model([text_reply("Draft."), HTTPErrorReply(500, "judge down")])
    events, error = collect(ReactAgent(model, judge=LLMJudge(), on_judge_error="raise"), "q")
    assert isinstance(error, JudgeError) and "judge down" in str(error)
    assert "final_answer" not in [e.type for e in events]


@pytest.mark.usefixtures("io_mode")
def test_an_unparseable_verdict_is_asked_for_once_more(serve_model: Any) -> None:
    server, model = serve_model([text_reply("Draft."), text_reply("yes!"), verdict(True)])
    result = ReactAgent(model, judge=LLMJudge()).run("q")
    assert result.validated is True
    retry = server.requests[2]
    assert retry["response_format"] == JSON_MODE
    assert [m["role"] for m in retry["messages"]] == ["system", "user", "assistant", "user"]
    assert retry["messages"][2]["content"] == "yes!"


@pytest.mark.usefixtures("io_mode")
def test_two_unparseable_verdicts_are_a_judge_failure(serve_model: Any) -> None:
    _, model = serve_model([text_reply("Draft."), text_reply("yes!"), text_reply("{}")])
    events, error = collect(ReactAgent(model, judge=LLMJudge()), "q")
    assert error is None
    assert events[-2].passed is None and "JSON object" in (events[-2].error or "")
    _, model = serve_model([text_reply("Draft."), text_reply("yes!"), text_reply("{}")])
    with pytest.raises(JudgeError, match="JSON object"):
        ReactAgent(model, judge=LLMJudge(), on_judge_error="raise").run("q")


@pytest.mark.usefixtures("io_mode")
def test_usage_sums_every_request_and_says_what_each_purpose_took(serve_model: Any) -> None:
    def used(prompt: int, completion: int) -> Usage:
        return Usage(prompt_tokens=prompt, completion_tokens=completion)

    _, model = serve_model(
        [
            text_reply("A.", usage=used(10, 2)),
            verdict(False, "no", usage=used(30, 5)),
            text_reply("B.", usage=used(20, 2)),
            verdict(True, usage=used(31, 4)),
        ]
    )
    result = ReactAgent(model, judge=LLMJudge()).run("q")
    assert result.usage == used(91, 13)
    assert result.usage_by_purpose == {"rounds": used(30, 4), "judge": used(61, 9)}


def test_a_judge_on_another_model_and_with_its_own_instructions() -> None:
    judge_model = ScriptedModel([verdict(True)])
    model = ScriptedModel([text_reply("A.")])
    ReactAgent(model, judge=LLMJudge(judge_model, instructions="Be strict.")).run("q")
    assert len(model.requests) == 1
    assert judge_model.requests[0].messages[0].content == "Be strict."


@pytest.mark.parametrize("kind", ["sync", "async", "observable"])
def test_callable_judges_sync_async_and_observable(kind: str) -> None:
    seen: list[tuple[str, str, Sequence[Message]]] = []

    def decide(question: str, draft: str, history: Sequence[Message]) -> Verdict:
        seen.append((question, draft, history))
        return Verdict(passed="Oslo" in draft, feedback="Name the city.")

    async def adecide(question: str, draft: str, history: Sequence[Message]) -> Verdict:
        await asyncio.sleep(0)
        return decide(question, draft, history)

    def odecide(question: str, draft: str, history: Sequence[Message]) -> Any:
        return reactivex.of(
            Verdict(passed=False, feedback="ignored"), decide(question, draft, history)
        )

    judge = {"sync": decide, "async": adecide, "observable": odecide}[kind]
    model = ScriptedModel([text_reply("Sunny."), text_reply("Oslo: sunny.")])
    result = ReactAgent(model, judge=judge).run("Weather?")
    assert (result.answer, result.validated) == ("Oslo: sunny.", True)
    assert [draft for _, draft, _ in seen] == ["Sunny.", "Oslo: sunny."]
    history = seen[1][2]  # the conversation the second draft answers, without the draft
    assert [m.content for m in history] == [
        "Weather?",
        "Sunny.",
        REVISION_INSTRUCTION.format(feedback="Name the city."),
    ]


def test_a_judge_returning_no_verdict_is_a_judge_error() -> None:
    model = ScriptedModel([text_reply("A.")])
    agent = ReactAgent(model, judge=lambda q, d, h: True, on_judge_error="raise")  # type: ignore[arg-type,return-value]
    with pytest.raises(JudgeError, match="not a Verdict"):
        agent.run("q")


def test_a_rejected_forced_answer_is_revised_without_tools() -> None:
    model = ScriptedModel(
        [
            tool_call_reply(("get_weather", {"city": "Oslo"})),
            text_reply("Forced draft."),
            text_reply("Forced revision."),
        ]
    )
    verdicts = iter([Verdict(passed=False, feedback="more"), Verdict(passed=True)])
    agent = ReactAgent(model, [get_weather], max_rounds=1, judge=lambda q, d, h: next(verdicts))
    result = agent.run("q")
    assert (result.answer, result.forced, result.rounds) == ("Forced revision.", True, 3)
    assert [r.tool_choice for r in model.requests] == [None, "none", "none"]


def test_without_a_judge_final_answer_is_not_validated() -> None:
    result = ReactAgent(ScriptedModel([text_reply("A.")])).run("q")
    assert result.validated is None and result.usage_by_purpose == {}


def test_a_rejection_and_its_revision_as_marbles_in_virtual_time() -> None:
    def slow_judge(question: str, draft: str, history: Sequence[Message]) -> Any:
        passed = "Oslo" in draft
        verdict = Verdict(passed=passed, feedback="" if passed else "Which city?")
        return reactivex.timer(1.0).pipe(reactivex.operators.map(lambda _: verdict))

    model = ScriptedModel(
        [text_reply("Sunny.", pieces=2, interval=1), text_reply("Oslo: sunny.", interval=1)]
    )
    recording = run_marbles(
        lambda scheduler: ReactAgent(model, judge=slow_judge, scheduler=scheduler), "Weather?"
    )
    assert_marbles(
        recording,
        {
            "rounds": "RA-fRA-f(F,|)",  # the judge takes a second: X one after V
            "text": "-ab--cd-|",
            "checks": "---VX--V(P,|)",
        },
        values={"checks": {"X": "rejected: Which city?", "P": "passed"}},
    )


def test_many_judged_runs_on_a_chaotic_scheduler_all_end_with_the_revision() -> None:
    """Judge steps and held-back text on a pool that preempts its callers at random."""
    scheduler = ChaosScheduler(8, preempt=0.5, max_pause=0.001, seed=7)
    tools = ElasticScheduler(8, name="chaos_judges")
    count = 300
    texts: list[str] = []
    failures: list[Exception] = []
    lock = threading.Lock()
    ended = threading.Semaphore(0)

    def judge(question: str, draft: str, history: Sequence[Message]) -> Verdict:
        return Verdict(passed=draft == "Oslo is sunny.", feedback="Which city?")

    def done(pieces: list[str]) -> None:
        with lock:
            texts.append("".join(pieces))

    def failed(error: Exception) -> None:
        with lock:
            failures.append(error)
        ended.release()

    for _ in range(count):
        model = ScriptedModel(
            [
                text_reply("It is sunny.", interval=0.0005),
                text_reply("Oslo is sunny.", interval=0.0005),
            ]
        )
        agent = ReactAgent(
            model, judge=judge, scheduler=scheduler, tools_scheduler=tools, stall_timeout=None
        )
        agent.text("q").pipe(reactivex.operators.to_list()).subscribe(done, failed, ended.release)
    deadline = time.monotonic() + 30
    finished = 0
    while finished < count and ended.acquire(timeout=max(0.0, deadline - time.monotonic())):
        finished += 1
    assert finished == count, f"{count - finished} of {count} runs never ended"
    assert failures == []
    assert texts == ["Oslo is sunny."] * count
