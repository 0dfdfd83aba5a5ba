"""Reports: the table, failures, files, HTML with marble diagrams, comparisons with the first
divergent event, assert_passed, and the LLM judge's usage kept apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from evals_helpers import weather_agent

from rxreact import ReactAgent, Usage
from rxreact.evals import (
    Case,
    Contains,
    Dataset,
    EqualsExpected,
    LLMJudge,
    MaxRounds,
    Report,
    ToolCalls,
)
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import text_reply

USAGE = Usage(prompt_tokens=40, completion_tokens=10, total_tokens=50)
CASES = [
    Case("paris", "Weather in Paris?", expected="It is sunny in Paris."),
    Case("oslo", "Weather in Oslo?", expected="It rains in Oslo."),
]
EVALUATORS = [EqualsExpected(), ToolCalls([("get_weather", {"city": "Paris"})]), MaxRounds(2)]


def evaluate(**agent: Any) -> Report:
    dataset = Dataset(CASES, name="weather", evaluators=EVALUATORS)
    return dataset.evaluate(
        lambda s: weather_agent(s, usage=USAGE, **agent), virtual_time=True, progress=False
    )


def test_the_table_averages_latencies_and_usage() -> None:
    report = evaluate()
    text = str(report)
    lines = text.splitlines()
    assert lines[0] == "weather: 2 case(s), 2 run(s)"
    assert lines[1].split() == [
        "case", "EqualsExpected", "ToolCalls", "MaxRounds", "duration", "first", "token", "tokens",
    ]  # fmt: skip
    assert lines[2].split() == ["paris", "✓", "✓", "✓", "5.50", "s", "3.00", "s", "100"]
    assert lines[3].split() == ["oslo", "✗", "✓", "✓", "5.50", "s", "3.00", "s", "100"]
    assert lines[4].split() == ["average", "0.50", "1.00", "1.00"]
    assert "pass rate 50.0% (1 of 2 runs) · cases passed 1 of 2" in text
    assert "total p50 5.50 s  p95 5.50 s · first token p50 3.00 s  p95 3.00 s" in text
    assert "agent 200 tokens (prompt 160, completion 40) · judge none" in text
    assert report.pass_rate == 0.5 and report.averages()["EqualsExpected"] == 0.5
    (failure,) = report.failures
    assert failure.case == "oslo"
    assert str(failure) == (
        "oslo: EqualsExpected: expected 'It rains in Oslo.', got 'It is sunny in Paris.'"
    )


def test_the_report_file_round_trips(tmp_path: Path) -> None:
    report = evaluate()
    path = tmp_path / "report.json"
    report.to_file(path)
    again = Report.from_file(path)
    assert str(again) == str(report)
    assert [r.events for r in again.runs] == [r.events for r in report.runs]
    assert again.rescore(EVALUATORS).pass_rate == 0.5
    (path.parent / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match=r"bad\.json: not an rxreact\.evals report"):
        Report.from_file(path.parent / "bad.json")


def test_html_has_the_table_and_each_cases_marble_diagram_with_its_reason() -> None:
    report = evaluate(answer="It is <b>sunny</b> in Paris.")
    html = report._repr_html_()
    assert html.count("<svg") == 2 and "<table" in html
    assert "&lt;b&gt;sunny&lt;/b&gt;" in html and "<b>sunny</b>" not in html
    assert "EqualsExpected: expected" in html.replace("&#x27;", "'")


def test_compare_names_regressions_and_the_first_divergent_event() -> None:
    baseline = evaluate(calls=(("get_weather", {"city": "Oslo"}),))
    # baseline: paris fails ToolCalls (Oslo), oslo fails EqualsExpected
    changed = evaluate(calls=(("search", {"q": "oslo"}),))
    comparison = changed.compare(baseline)
    assert [c.case for c in comparison.regressed] == [] and comparison.improved == ()

    good = evaluate()
    comparison = changed.compare(good)
    (regressed,) = comparison.regressed
    assert regressed.case == "paris"
    assert regressed.divergence == (
        "round 1: called `search(q='oslo')`, baseline called `get_weather(city='Paris')`"
    )
    lines = regressed.marbles.splitlines()
    assert lines[0].startswith("marbles (one character = ")
    assert lines[1].split()[:2] == ["rounds", "now"] and lines[2].split()[0] == "baseline"
    assert comparison.deltas == {"EqualsExpected": 0.0, "ToolCalls": -1.0, "MaxRounds": 0.0}
    assert [c.case for c in good.compare(changed).improved] == ["paris"]
    text = str(comparison)
    assert "1 regressed, 0 improved" in text and "first divergence: round 1" in text

    fewer = Dataset(CASES[:1], evaluators=EVALUATORS).evaluate(
        weather_agent, virtual_time=True, progress=False
    )
    assert fewer.compare(good).disappeared == ("oslo",)
    assert good.compare(fewer).appeared == ("oslo",)


def test_divergence_of_answers_and_of_runs_that_end_early() -> None:
    good = evaluate()
    other_answer = evaluate(answer="It is cloudy in Paris.")
    (regressed,) = other_answer.compare(good).regressed
    assert regressed.divergence == (
        "round 2: answered 'It is cloudy in Paris.', baseline answered 'It is sunny in Paris.'"
    )


def test_assert_passed_lists_failing_and_regressed_cases() -> None:
    good = evaluate()
    good.assert_passed(min_pass_rate=0.5)
    with pytest.raises(AssertionError) as caught:
        good.assert_passed()
    assert "pass rate 50.0% is below 100.0%" in str(caught.value)
    assert "oslo: EqualsExpected: expected 'It rains in Oslo.'" in str(caught.value)

    worse = evaluate(calls=(("search", {"q": "oslo"}),))
    with pytest.raises(AssertionError) as caught:
        worse.assert_passed(min_pass_rate=0.0, baseline=good)
    message = str(caught.value)
    assert "1 case(s) regressed against the baseline" in message
    assert "paris: pass rate 1.00 -> 0.00" in message
    assert (
        "ToolCalls: round 1: called search(q='oslo'), expected get_weather(city='Paris')" in message
    )
    worse.assert_passed(min_pass_rate=0.0, baseline=worse)


def test_llm_judge_scores_with_structured_output_and_its_usage_apart() -> None:
    judge_usage = Usage(prompt_tokens=7, completion_tokens=3, total_tokens=10)
    judge_model = ScriptedModel(
        lambda request: (
            text_reply(
                '{"score": 0.4, "reason": "Vague."}'
                if "Oslo" in request.messages[-1].content  # type: ignore[operator]
                else "not json at first",
                usage=judge_usage,
            )
            if len(request.messages) == 2
            else text_reply('{"score": 1, "reason": "Exact."}', usage=judge_usage)
        )
    )
    judge = LLMJudge("Names the city.", model=judge_model, include_expected=True, threshold=0.5)
    dataset = Dataset(CASES, evaluators=[judge])
    report = dataset.evaluate(
        lambda s: weather_agent(s, usage=USAGE), virtual_time=True, progress=False
    )
    paris = report.case("paris").runs[0].results["LLMJudge"]
    oslo = report.case("oslo").runs[0].results["LLMJudge"]
    assert (paris.value, paris.reason, paris.passed) == (1.0, "Exact.", True)  # asked twice
    assert (oslo.value, oslo.reason, oslo.passed) == (0.4, "Vague.", False)
    first = judge_model.requests[0]
    assert first.options["response_format"]["type"] == "json_schema"
    prompt = first.messages[1].content
    assert "Question:\nWeather in" in prompt and "Expected answer:\n" in prompt  # type: ignore[operator]
    assert "Rubric:\nNames the city." in first.messages[0].content  # type: ignore[operator]
    assert report.judge_usage == Usage(prompt_tokens=21, completion_tokens=9, total_tokens=30)
    assert report.usage == Usage(prompt_tokens=160, completion_tokens=40, total_tokens=200)
    assert "judge 30 tokens (prompt 21, completion 9)" in str(report)


def test_a_judge_that_fails_is_that_evaluators_error() -> None:
    judge_model = ScriptedModel(lambda request: text_reply("never JSON"))
    dataset = Dataset(CASES[:1], evaluators=[LLMJudge("x", model=judge_model), Contains("sunny")])
    report = dataset.evaluate(weather_agent, virtual_time=True, progress=False)
    results = report.run_results[0].results
    assert results["Contains"].passed and not results["LLMJudge"].passed
    assert "JudgeError" in (results["LLMJudge"].error or "")
    assert len(judge_model.requests) == 2  # asked once more, as the run's judge does


def test_the_run_judge_keeps_its_behaviour() -> None:
    from rxreact import LLMJudge as RunJudge

    judge_model = ScriptedModel([text_reply("?"), text_reply('{"passed": true}')])
    agent = ReactAgent(ScriptedModel([text_reply("Hi.")]), judge=RunJudge(judge_model))
    assert agent.run("Hello?").validated is True
    retry = judge_model.requests[1].messages[-1].content
    assert retry == (
        'That was not the JSON object asked for. Reply with only {"passed": <true|false>, '
        '"feedback": "<string>"}.'
    )
    assert judge_model.requests[0].options == {"response_format": {"type": "json_object"}}


def test_a_comparison_in_jupyter_draws_both_runs_one_above_the_other() -> None:
    good = evaluate()
    changed = evaluate(calls=(("search", {"q": "oslo"}),))
    html = changed.compare(good)._repr_html_()
    assert html.count("<svg") == 2 and "paris · now" in html and "paris · baseline" in html
    assert "called `search(q=" in html.replace("&#x27;", "'")
