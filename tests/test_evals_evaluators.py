"""Every built-in evaluator and mode, on runs made in virtual time; custom evaluators and
evaluators that fail."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from evals_helpers import one_case, result_of
from pydantic import BaseModel

from rxreact import Usage
from rxreact.evals import (
    REGISTRY,
    Contains,
    Equals,
    EqualsExpected,
    EvalContext,
    EvalResult,
    Evaluator,
    FirstTokenWithin,
    IsInstance,
    Matches,
    MaxDuration,
    MaxRounds,
    MaxTokens,
    MaxToolCalls,
    NoErrors,
    NotForced,
    OutputValid,
    ToolCalls,
)


def verdict(evaluator: Any, **agent: Any) -> EvalResult:
    report = one_case(evaluator, **agent)
    (result,) = report.cases[0].runs[0].results.values()
    return result


def test_registry_names_every_builtin_by_class_name_and_fields_are_the_arguments() -> None:
    assert set(REGISTRY) == {
        "EqualsExpected", "Equals", "Contains", "Matches", "IsInstance", "OutputValid",
        "ToolCalls", "MaxRounds", "MaxToolCalls", "NoErrors", "NotForced", "MaxTokens",
        "MaxDuration", "FirstTokenWithin", "LLMJudge",
    }  # fmt: skip
    for name, cls in REGISTRY.items():
        assert cls.__name__ == name and issubclass(cls, Evaluator)
        assert dataclasses.is_dataclass(cls)
    judge = REGISTRY["LLMJudge"]("is polite", include_expected=True)
    assert [f.name for f in dataclasses.fields(judge)] == [
        "rubric", "model", "include_question", "include_expected", "threshold",
    ]  # fmt: skip
    again = REGISTRY["LLMJudge"](
        **{f.name: getattr(judge, f.name) for f in dataclasses.fields(judge)}
    )
    assert again == judge


def test_answer_evaluators_pass_and_fail_with_reasons() -> None:
    assert verdict(EqualsExpected()).passed
    failed = one_case(EqualsExpected(), expected="It rains.")
    reason = result_of(failed, "EqualsExpected").reason
    assert not failed.passed and "'It rains.'" in reason and "'It is sunny in Paris.'" in reason
    assert result_of(one_case(EqualsExpected(), expected=None), "EqualsExpected").value == "skipped"
    assert verdict(Equals("It is sunny in Paris.")).passed
    assert not verdict(Equals("sunny")).passed
    assert verdict(Contains("sunny")).passed
    assert not verdict(Contains("SUNNY")).passed
    assert verdict(Contains("SUNNY", case_sensitive=False)).passed
    assert verdict(Matches(r"sunny in \w+")).passed
    missing = verdict(Matches(r"\d+ °C"))
    assert not missing.passed and "no match" in missing.reason
    assert verdict(IsInstance("str")).passed
    wrong = verdict(IsInstance("Forecast"))
    assert not wrong.passed and wrong.reason == "is a str, not a Forecast"
    assert not verdict(OutputValid()).passed  # no output_type asked for


class Forecast(BaseModel):
    city: str
    temperature: int


def test_typed_outputs_compare_as_their_json_and_check_their_type() -> None:
    from evals_helpers import weather_agent

    from rxreact.evals import Case, Dataset

    dataset = Dataset(
        [Case("typed", "Forecast for Paris?", expected={"city": "Paris", "temperature": 21})],
        evaluators=[EqualsExpected(), IsInstance("Forecast"), IsInstance("BaseModel"),
                    OutputValid(), Contains({"city": "Paris"})],
    )  # fmt: skip
    report = dataset.evaluate(
        lambda s: weather_agent(s, answer='{"city": "Paris", "temperature": 21}'),
        virtual_time=True,
        output_type=Forecast,
        progress=False,
    )
    run = report.cases[0].runs[0]
    assert {n: r.passed for n, r in run.results.items()} == {
        "EqualsExpected": True, "IsInstance": True, "IsInstance_2": True, "OutputValid": True,
        "Contains": True,
    }  # fmt: skip
    assert isinstance(run.recording.result.output, Forecast)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("mode", "expected", "passed"),
    [
        ("strict", ["get_weather", "search"], True),
        ("strict", ["search", "get_weather"], True),  # one round: parallel calls, any order
        ("strict", ["get_weather"], False),
        ("unordered", ["search", ("get_weather", {"city": "Paris"})], True),
        ("unordered", ["search", ("get_weather", {"city": "Oslo"})], False),
        ("subset", ["get_weather"], True),
        ("subset", ["get_weather", "get_weather"], False),
        ("superset", ["get_weather", "search", "lookup"], True),
        ("superset", ["get_weather"], False),
    ],
)
def test_tool_calls_modes_on_one_parallel_round(
    mode: str, expected: list[Any], passed: bool
) -> None:
    calls = (("get_weather", {"city": "Paris", "unit": "C"}), ("search", {"q": "paris"}))
    result = verdict(ToolCalls(expected, mode=mode), calls=calls)  # type: ignore[arg-type]
    assert result.passed is passed, result.reason


def test_tool_calls_strict_keeps_the_order_of_rounds() -> None:
    from evals_helpers import get_weather, search

    from rxreact import ReactAgent
    from rxreact.evals import Case, Dataset
    from rxreact.model.scripted.model import ScriptedModel
    from rxreact.model.scripted.replies import text_reply, tool_call_reply

    def factory(s: Any) -> ReactAgent:
        script = [
            tool_call_reply(("search", {"q": "oslo"})),
            tool_call_reply(("get_weather", {"city": "Oslo"})),
            text_reply("Rain in Oslo."),
        ]
        return ReactAgent(ScriptedModel(script), [get_weather, search], scheduler=s)

    def run(evaluator: ToolCalls) -> EvalResult:
        report = Dataset([Case("oslo", "Weather in Oslo?")], evaluators=[evaluator]).evaluate(
            factory, virtual_time=True, progress=False
        )
        return report.cases[0].runs[0].results["ToolCalls"]

    assert run(ToolCalls(["search", ("get_weather", {"city": "Oslo"})])).passed
    swapped = run(ToolCalls(["get_weather", "search"]))
    assert not swapped.passed
    assert swapped.reason == "round 1: called search(q='oslo'), expected get_weather"
    assert run(ToolCalls(["get_weather", "search"], mode="unordered")).passed
    missing = run(ToolCalls(["search", "get_weather", "search"]))
    assert not missing.passed and missing.reason.startswith("missing search")


def test_tool_call_arguments_are_values_or_predicates_and_only_listed_ones_count() -> None:
    calls = (("get_weather", {"city": "Paris", "unit": "C"}),)
    assert verdict(ToolCalls([("get_weather", {"city": "Paris"})]), calls=calls).passed
    assert verdict(ToolCalls([("get_weather", {"city": str.istitle})]), calls=calls).passed
    fails = verdict(ToolCalls([("get_weather", {"city": lambda c: c == "Oslo"})]), calls=calls)
    assert not fails.passed and "<a predicate>" in fails.reason
    assert not verdict(ToolCalls([("get_weather", {"country": "FR"})]), calls=calls).passed
    with pytest.raises(ValueError, match="mode must be one of"):
        ToolCalls(["x"], mode="sorted")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=re.escape("expected[0]")):
        ToolCalls([("x", "not a mapping")])  # type: ignore[list-item]
    # the file forms: a two-item list, a one-key mapping
    assert ToolCalls([["get_weather", {"city": "Paris"}], {"search": {"q": "x"}}]).expected == (
        ("get_weather", {"city": "Paris"}),
        ("search", {"q": "x"}),
    )


def test_trajectory_counts() -> None:
    assert verdict(MaxRounds(2)).passed
    too_many = verdict(MaxRounds(1))
    assert not too_many.passed and too_many.reason == "2 round(s): more than 1"
    assert verdict(MaxToolCalls(1)).passed
    assert not verdict(MaxToolCalls(0)).passed
    assert verdict(NoErrors()).passed
    assert verdict(NotForced()).passed
    forced = verdict(NotForced(), max_rounds=1, calls=(("get_weather", {"city": "Paris"}),))
    assert not forced.passed and "forced" in forced.reason


def test_no_errors_sees_failed_tool_calls() -> None:
    failing = verdict(NoErrors(), calls=(("unknown_tool", {}),))
    assert not failing.passed and "1 tool call(s) failed; round 1: unknown_tool" in failing.reason


def test_max_tokens_reads_the_runs_usage() -> None:
    usage = Usage(prompt_tokens=40, completion_tokens=10, total_tokens=50)
    assert verdict(MaxTokens(100), usage=usage).passed  # two rounds: 100 tokens
    over = verdict(MaxTokens(99), usage=usage)
    assert not over.passed and over.reason == "100 tokens: more than 99"
    assert not verdict(MaxTokens(1000)).passed  # no usage reported: nothing to hold it to


def test_time_evaluators_measure_virtual_time_exactly() -> None:
    # round 1: role @0, call @0.5, three argument pieces @1.0-2.0, finish @2.5; the tool
    # answers at once; round 2: role @2.5, "It " @3.0 (the first token), ... finish @5.5
    report = one_case(MaxDuration(5.5), FirstTokenWithin(3.0))
    run = report.cases[0].runs[0]
    assert run.duration == 5.5 and run.first_token == 3.0
    assert run.passed
    late = one_case(MaxDuration(5.49), FirstTokenWithin(2.99))
    assert result_of(late, "MaxDuration").reason == "5.5 s: over 5.49 s"
    assert result_of(late, "FirstTokenWithin").reason == "first token at 3 s: over 2.99 s"


def test_custom_evaluators_sync_and_async_and_their_values() -> None:
    def answered_in_words(ctx: EvalContext) -> bool:
        return len(ctx.answer or "") > 5

    def score(ctx: EvalContext) -> float:
        return 0.25

    def label(ctx: EvalContext) -> str:
        return "sunny" if "sunny" in (ctx.answer or "") else "other"

    async def tools_used(ctx: EvalContext) -> EvalResult:
        names = [call.name for call in ctx.tool_calls]
        return EvalResult(names == ["get_weather"], f"called {names}")

    report = one_case(answered_in_words, score, label, tools_used)
    results = report.cases[0].runs[0].results
    assert results["answered_in_words"].passed and results["answered_in_words"].kind == "assertion"
    assert results["score"].kind == "score" and results["score"].passed is False  # below 0.5
    assert results["label"].value == "sunny" and results["label"].passed
    assert results["tools_used"].passed and results["tools_used"].reason == "called ['get_weather']"
    assert not report.passed


def test_an_evaluator_that_raises_fails_only_itself() -> None:
    def broken(ctx: EvalContext) -> bool:
        raise KeyError("missing")

    def out_of_range(ctx: EvalContext) -> float:
        return 1.5

    report = one_case(broken, Contains("sunny"), out_of_range)
    results = report.cases[0].runs[0].results
    assert results["broken"].error == "KeyError: 'missing'" and not results["broken"].passed
    assert results["Contains"].passed
    assert "a score must be in [0, 1]" in (results["out_of_range"].error or "")
    assert report.failures[0].reasons[0] == ("broken: the evaluator failed: KeyError: 'missing'")


def test_eval_context_carries_the_run() -> None:
    seen: list[EvalContext] = []

    def look(ctx: EvalContext) -> bool:
        seen.append(ctx)
        return True

    one_case(look)
    (ctx,) = seen
    assert ctx.case.name == "paris" and ctx.expected == "It is sunny in Paris."
    assert ctx.result is not None and ctx.result.rounds == 2 and ctx.output == ctx.answer
    assert [e.seq for e in ctx.events] == list(range(1, len(ctx.events) + 1))
    assert len(ctx.times) == len(ctx.events) and ctx.duration == 5.5 and ctx.first_token == 3.0
    assert ctx.usage is None and ctx.error is None
    assert str(ctx.tool_calls[0]) == "get_weather(city='Paris')"
    assert ctx.recording.completed and ctx.recording.virtual
