"""Running a dataset: fresh seeded conversations, real concurrency, repeats, failures and
timeouts, Ctrl-C, progress; in virtual time and against the loopback mock."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from evals_helpers import get_weather, slow_tool, weather_agent
from reactivex.testing import TestScheduler

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent, ServerError, tool
from rxreact.errors import InvalidArgumentError
from rxreact.evals import (
    Case,
    Contains,
    Dataset,
    EvalContext,
    EvaluationInterrupted,
    MaxDuration,
    ToolCalls,
)
from rxreact.evals._progress import Progress
from rxreact.messages import ChatRequest
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import Fail, Hang, Pause, text_reply
from rxreact.testing import MockOpenAIServer, weather_desk


def test_each_case_runs_in_a_fresh_conversation_seeded_with_its_history() -> None:
    memory = InMemoryChatMemory()
    models: list[ScriptedModel] = []

    def factory(scheduler: Any) -> ReactAgent:
        models.append(ScriptedModel([text_reply("Still sunny.")]))
        return ReactAgent(models[-1], memory=memory, scheduler=scheduler)

    dataset = Dataset(
        [
            Case("follow-up", "And tomorrow?", history=[("user", "Weather in Paris?"),
                                                        ("assistant", "Sunny.")]),
            Case("alone", "Weather in Oslo?"),
        ]
    )  # fmt: skip
    report = dataset.evaluate(factory, virtual_time=True, progress=False)
    assert report.passed
    sent = [[(m.role, m.content) for m in model.requests[0].messages] for model in models]
    assert sent == [
        [("user", "Weather in Paris?"), ("assistant", "Sunny."), ("user", "And tomorrow?")],
        [("user", "Weather in Oslo?")],
    ]
    assert memory.load("follow-up") == [] and report.runs[0].result is not None
    assert [m.role for m in report.runs[0].result.messages] == ["user", "assistant"]


def test_concurrency_is_real_in_virtual_time() -> None:
    # a paced model answering in 1 s: 100 cases at concurrency=20 take 5 s, not 100 s
    def factory(scheduler: Any) -> ReactAgent:
        return ReactAgent(ScriptedModel([[Pause(1.0), *text_reply("ok")]]), scheduler=scheduler)

    dataset = Dataset([Case(f"c{i}", "Hi?") for i in range(100)], evaluators=[MaxDuration(1.0)])
    report = dataset.evaluate(factory, concurrency=20, virtual_time=True, progress=False)
    assert report.pass_rate == 1.0
    assert {run.duration for run in report.runs} == {1.0}
    assert max(run.start + (run.duration or 0) for run in report.runs) == 5.0
    assert sorted({run.start for run in report.runs}) == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_concurrency_is_real_live() -> None:
    # four runs meet at a barrier inside their tool: only runs in flight together pass it
    barrier = threading.Barrier(4, timeout=10)

    @tool
    def meet() -> str:
        """Wait for the others."""
        barrier.wait()
        return "met"

    script = lambda request: (  # noqa: E731
        text_reply("done") if request.messages[-1].role == "tool" else _call("meet")
    )
    agent = ReactAgent(ScriptedModel(script), [meet])
    dataset = Dataset([Case(f"c{i}", "Go") for i in range(4)], evaluators=[ToolCalls(["meet"])])
    report = dataset.evaluate(agent, concurrency=4, progress=False)
    assert report.pass_rate == 1.0, report.failures
    assert all("met" in str(run.events) for run in report.runs)


def _call(name: str) -> Any:
    from rxreact.model.scripted.replies import tool_call_reply

    return tool_call_reply((name, {}))


def test_repeat_gives_each_case_its_pass_rate_pass_at_k_and_pass_hat_k() -> None:
    counter = iter(range(1000))

    def factory(scheduler: Any) -> ReactAgent:
        n = next(counter)
        answer = "sunny" if n % 3 != 2 else "rain"  # every third run of the process fails
        return ReactAgent(ScriptedModel([text_reply(answer)]), scheduler=scheduler)

    dataset = Dataset([Case("paris", "Weather?")], evaluators=[Contains("sunny")])
    report = dataset.evaluate(factory, repeat=3, concurrency=1, virtual_time=True, progress=False)
    (case,) = report.cases
    assert [r.repeat for r in case.runs] == [0, 1, 2]
    assert [r.passed for r in case.runs] == [True, True, False]
    assert case.pass_rate == pytest.approx(2 / 3) and not case.passed
    assert case.pass_at_k == 1.0 and case.pass_hat_k == 0.0
    assert case.pass_at(1) == pytest.approx(2 / 3) and case.pass_hat(2) == pytest.approx(1 / 3)
    assert report.pass_rate == pytest.approx(2 / 3)
    assert report.pass_at(3) == 1.0 and report.pass_hat(3) == 0.0
    assert report.pass_at(1) == pytest.approx(2 / 3)
    assert "pass@k" in str(report) and "2/3" in str(report)


def test_errors_and_timeouts_are_failed_cases_with_their_reason() -> None:
    def factory(scheduler: Any) -> ReactAgent:
        def script(request: ChatRequest) -> Any:
            question = request.messages[-1].content
            if question == "fail":
                return [Fail(ServerError("upstream is down", 503))]
            if question == "hang":
                return [Hang()]
            return text_reply("fine", interval=1.0)

        return ReactAgent(ScriptedModel(script), scheduler=scheduler)

    dataset = Dataset(
        [Case("fails", "fail"), Case("hangs", "hang"), Case("slow", "slow"), Case("ok", "ok")]
    )
    report = dataset.evaluate(factory, virtual_time=True, timeout=2.5, progress=False)
    outcome = {c.name: (c.passed, c.runs[0].error) for c in report.cases}
    assert outcome == {
        "fails": (False, "ServerError: HTTP upstream is down: 503"),
        "hangs": (False, "TimeoutError: the run took longer than 2.5 s (timeout)"),
        "slow": (True, None),  # role @0, fine @1, finish @2: within 2.5
        "ok": (True, None),
    }
    assert report.case("hangs").runs[0].duration == 2.5
    assert report.failures[0].reasons == ("error: ServerError: HTTP upstream is down: 503",)


def test_a_run_that_waits_forever_in_virtual_time_ends_as_failed_without_a_timeout() -> None:
    def factory(scheduler: Any) -> ReactAgent:
        script = lambda r: [Hang()] if r.messages[-1].content == "hang" else text_reply("ok")  # noqa: E731
        return ReactAgent(ScriptedModel(script), scheduler=scheduler, stall_timeout=None)

    dataset = Dataset([Case("hangs", "hang"), Case("fine", "fine")])
    report = dataset.evaluate(factory, virtual_time=True, concurrency=1, progress=False)
    assert report.case("fine").passed
    assert "nothing was left to happen in virtual time" in (
        report.case("hangs").runs[0].error or ""
    )


def test_ctrl_c_in_virtual_time_keeps_what_finished(tmp_path: Path) -> None:
    def factory(scheduler: Any) -> ReactAgent:
        def script(request: ChatRequest) -> Any:
            if request.messages[-1].content == "stop":
                raise KeyboardInterrupt  # what Ctrl-C does to the thread running the runs
            return text_reply("ok", interval=1.0)

        return ReactAgent(ScriptedModel(script), scheduler=scheduler)

    questions = ["a", "b", "stop", "c"]
    dataset = Dataset([Case(q, q) for q in questions], evaluators=[Contains("ok")])
    with pytest.raises(EvaluationInterrupted) as caught:
        dataset.evaluate(
            factory, concurrency=1, virtual_time=True, record_to=tmp_path, progress=False
        )
    assert isinstance(caught.value, KeyboardInterrupt)
    partial = caught.value.report
    assert partial.interrupted and [c.name for c in partial.cases] == ["a", "b"]
    assert partial.pass_rate == 1.0
    assert len(list(tmp_path.glob("*.jsonl"))) == 2


def test_ctrl_c_live_cancels_the_runs_in_flight_and_keeps_the_finished(tmp_path: Path) -> None:
    def script(request: ChatRequest) -> Any:
        content = request.messages[-1].content
        return [Hang()] if content == "hang" else text_reply(f"answer to {content}")

    seen: list[str] = []
    lock = threading.Lock()

    def interrupt_after_two(ctx: EvalContext) -> bool:
        with lock:
            seen.append(ctx.case.name)
            if len(seen) == 2:  # both answering runs are recorded: Ctrl-C, as a person would
                os.kill(os.getpid(), signal.SIGINT)
        return True

    dataset = Dataset(
        [Case("a", "a"), Case("hang", "hang"), Case("b", "b")], evaluators=[interrupt_after_two]
    )
    with MockOpenAIServer(script) as server, OpenAIChatModel("mock", base_url=server.base_url) as m:
        agent = ReactAgent(m)
        with pytest.raises(EvaluationInterrupted) as caught:
            dataset.evaluate(agent, concurrency=1 + 2, record_to=tmp_path, progress=False)
        assert server.wait_for_disconnects(1, timeout=10)  # the hanging run's connection closed
    partial = caught.value.report
    # the first scored run is in it; the second may still be scoring when Ctrl-C lands
    assert seen[0] in [c.name for c in partial.cases] and partial.interrupted
    assert {c.name for c in partial.cases} <= {"a", "b"} and partial.pass_rate == 1.0
    assert {p.name.split("-")[0] for p in tmp_path.glob("*.jsonl")} == {"a", "b"}


def test_a_live_evaluation_against_the_mock_records_every_run(tmp_path: Path) -> None:
    dataset = Dataset(
        [Case("paris", "Weather in Paris?"), Case("oslo", "Weather in Oslo?")],
        evaluators=[ToolCalls(["get_weather"]), Contains("sunny")],
    )
    with (
        MockOpenAIServer(weather_desk) as server,
        OpenAIChatModel("mock", base_url=server.base_url) as model,
    ):
        report = dataset.evaluate(
            ReactAgent(model, [get_weather]), record_to=tmp_path, progress=False
        )
    assert report.passed, report.failures
    run = report.case("paris").runs[0].recording
    assert not run.virtual and run.agent == "agent" and "mock" in run.model
    assert run.duration is not None and run.duration > 0 and run.first_token is not None
    assert sorted(p.name.split("-")[0] for p in tmp_path.glob("*.jsonl")) == ["oslo", "paris"]


def test_aevaluate_live_and_in_virtual_time() -> None:
    dataset = Dataset([Case("paris", "Weather in Paris?")], evaluators=[Contains("sunny")])

    async def both() -> tuple[Any, Any]:
        with (
            MockOpenAIServer(weather_desk) as server,
            OpenAIChatModel("mock", base_url=server.base_url) as model,
        ):
            live = await dataset.aevaluate(ReactAgent(model, [get_weather]), progress=False)
        virtual = await dataset.aevaluate(weather_agent, virtual_time=True, progress=False)
        return live, virtual

    live, virtual = asyncio.run(both())
    assert live.passed and virtual.passed and virtual.runs[0].duration == 5.5


def test_virtual_time_plays_reactivex_timers_of_tools_exactly() -> None:
    def factory(scheduler: Any) -> ReactAgent:
        from rxreact.model.scripted.replies import tool_call_reply

        script = [tool_call_reply(("slow", {})), text_reply("done")]
        return ReactAgent(ScriptedModel(script), [slow_tool(30.0)], scheduler=scheduler)

    dataset = Dataset([Case(f"c{i}", "Go") for i in range(50)], evaluators=[MaxDuration(30.0)])
    report = dataset.evaluate(factory, virtual_time=True, concurrency=50, progress=False)
    assert report.pass_rate == 1.0 and {r.duration for r in report.runs} == {30.0}


def test_bad_arguments_are_clear() -> None:
    dataset = Dataset([Case("a", "a")])
    agent = ReactAgent(ScriptedModel([text_reply("x")]))
    with pytest.raises(InvalidArgumentError, match="virtual_time=True needs a factory"):
        dataset.evaluate(agent, virtual_time=True)
    with pytest.raises(InvalidArgumentError, match="concurrency"):
        dataset.evaluate(agent, concurrency=0)
    with pytest.raises(InvalidArgumentError, match="must return a ReactAgent"):
        dataset.evaluate(lambda s: "nope", virtual_time=True, progress=False)
    on_test_scheduler = ReactAgent(ScriptedModel([text_reply("x")]), scheduler=TestScheduler())
    assert dataset.evaluate(on_test_scheduler, virtual_time=True, progress=False).passed
    on_test_scheduler = ReactAgent(ScriptedModel([text_reply("x")]), scheduler=TestScheduler())
    assert dataset.evaluate(on_test_scheduler, progress=False).passed  # its clock moved here too


def test_progress_draws_on_a_terminal_only(capsys: pytest.CaptureFixture[str]) -> None:
    Dataset([Case("a", "a")]).evaluate(weather_agent, virtual_time=True, progress=True)
    assert capsys.readouterr().err == ""  # pytest's stderr is not a terminal

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    bar = Progress(3, True, screen)
    for passed in (True, False, True):
        bar.add(passed)
    bar.close()
    assert screen.getvalue().rstrip().endswith("3/3  ✓ 2  ✗ 1  " + screen.getvalue().split()[-1])
    assert "█" in screen.getvalue() and screen.getvalue().endswith("\n")
    quiet = io.StringIO()
    Progress(3, True, quiet).add(True)
    assert quiet.getvalue() == ""


def test_a_live_timeout_fails_the_case_and_closes_its_connection() -> None:
    def script(request: ChatRequest) -> Any:
        return [Hang()] if request.messages[-1].content == "hang" else text_reply("ok")

    dataset = Dataset([Case("hangs", "hang"), Case("fine", "fine")])
    with MockOpenAIServer(script) as server, OpenAIChatModel("mock", base_url=server.base_url) as m:
        report = dataset.evaluate(ReactAgent(m), timeout=0.5, progress=False)
        assert server.wait_for_disconnects(1, timeout=10)
    hangs = report.case("hangs").runs[0]
    assert hangs.error == "TimeoutError: the run took longer than 0.5 s (timeout)"
    assert hangs.duration == 0.5 and report.case("fine").passed


def test_cancelling_aevaluate_cancels_the_runs_in_flight() -> None:
    dataset = Dataset([Case("hangs", "hang")])

    async def cancel_midway(server: MockOpenAIServer, model: OpenAIChatModel) -> None:
        task = asyncio.ensure_future(dataset.aevaluate(ReactAgent(model), progress=False))
        assert await asyncio.to_thread(server.wait_for_requests, 1, 10.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with (
        MockOpenAIServer(lambda request: [Hang()]) as server,
        OpenAIChatModel("mock", base_url=server.base_url) as model,
    ):
        asyncio.run(cancel_midway(server, model))
        assert server.wait_for_disconnects(1, timeout=10)


def test_the_collector_is_left_as_it_was() -> None:
    import gc

    dataset = Dataset([Case(f"c{i}", "Hi?") for i in range(130)])

    def factory(scheduler: Any) -> ReactAgent:
        return ReactAgent(ScriptedModel([text_reply("ok")]), scheduler=scheduler)

    report = dataset.evaluate(factory, virtual_time=True, progress=False)
    assert report.pass_rate == 1.0 and gc.get_freeze_count() == 0 and gc.isenabled()
