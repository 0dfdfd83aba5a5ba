"""Re-scoring recorded runs offline: files written as runs end, read back whole or in part,
replayed in virtual time with no request to the agent's model."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from evals_helpers import get_weather, weather_agent

from rxreact import OpenAIChatModel, ReactAgent
from rxreact.evals import (
    Case,
    Contains,
    Dataset,
    EqualsExpected,
    FirstTokenWithin,
    MaxDuration,
    MaxRounds,
    RecordingWarning,
    ToolCalls,
    rescore,
)
from rxreact.evals._recording import read_run, read_runs
from rxreact.testing import MockOpenAIServer, weather_desk

CASES = [
    Case("paris", "Weather in Paris?", expected="Here is what I found: Paris: sunny."),
    Case("oslo", "Weather in Oslo?", expected="rain"),
]
EVALUATORS = [EqualsExpected(), ToolCalls([("get_weather", {"city": "Paris"})]), MaxRounds(2)]


def test_rescoring_needs_no_model_and_gives_the_same_verdicts_and_times(tmp_path: Path) -> None:
    dataset = Dataset(CASES, evaluators=EVALUATORS)
    server = MockOpenAIServer(weather_desk).start()
    with OpenAIChatModel("mock", base_url=server.base_url) as model:
        live = dataset.evaluate(
            ReactAgent(model, [get_weather]), record_to=tmp_path, progress=False
        )
    requests = len(server.requests)
    server.stop()  # nothing may reach the agent's model from here on

    again = rescore(tmp_path, dataset)
    assert len(server.requests) == requests
    verdicts = lambda r: {  # noqa: E731
        c.name: {n: x.passed for n, x in c.runs[0].results.items()} for c in r.cases
    }
    assert verdicts(again) == verdicts(live)
    assert verdicts(live) == {
        "paris": {"EqualsExpected": True, "ToolCalls": True, "MaxRounds": True},
        "oslo": {"EqualsExpected": False, "ToolCalls": False, "MaxRounds": True},
    }
    for before, after in zip(live.runs, again.runs, strict=True):  # to the virtual clock's µs
        assert after.events == before.events
        assert after.times == pytest.approx(before.times, abs=1e-6)
        assert after.duration == pytest.approx(before.duration, abs=1e-6)
        assert after.first_token == pytest.approx(before.first_token, abs=1e-6)

    # new evaluators replace the old; the recordings keep each case's expected output
    replaced = rescore(tmp_path, [Contains("sunny"), EqualsExpected()])
    assert replaced.evaluators == ("Contains", "EqualsExpected")
    assert {c.name: c.passed for c in replaced.cases} == {"paris": True, "oslo": False}


def test_time_evaluators_give_the_same_result_replayed() -> None:
    dataset = Dataset([Case("paris", "Weather in Paris?")])
    report = dataset.evaluate(weather_agent, virtual_time=True, progress=False)
    strict = report.rescore([MaxDuration(5.5), FirstTokenWithin(3.0)])
    assert strict.passed and strict.runs[0].duration == 5.5 and strict.runs[0].first_token == 3.0
    tight = report.rescore([MaxDuration(5.4), FirstTokenWithin(2.9)])
    assert [r.passed for r in tight.run_results[0].results.values()] == [False, False]


def test_recordings_round_trip_their_typed_events(tmp_path: Path) -> None:
    dataset = Dataset([Case("paris", "Weather in Paris?", history=[("user", "Hi")])])
    report = dataset.evaluate(weather_agent, virtual_time=True, record_to=tmp_path, progress=False)
    (path,) = tmp_path.glob("*.jsonl")
    header = json.loads(path.read_text().splitlines()[0])
    assert header["format"] == "rxreact.evals.run" and header["version"] == 1
    assert (header["case"], header["repeat"], header["agent"]) == ("paris", 0, "agent")
    assert header["model"].startswith("ScriptedModel") and header["virtual"] is True
    run = read_run(path)
    assert run is not None and run.file == str(path) and report.runs[0].file == str(path)
    original = report.runs[0]
    assert run.events == original.events and run.times == original.times
    assert [type(e).__name__ for e in run.events][-1] == "FinalAnswer"
    assert run.result == original.result and run.complete
    assert run.source is not None and run.source.history == original.source.history  # type: ignore[union-attr]


def _recorded(tmp_path: Path) -> Path:
    dataset = Dataset([Case("paris", "Weather in Paris?")])
    dataset.evaluate(weather_agent, virtual_time=True, record_to=tmp_path, progress=False)
    (path,) = tmp_path.glob("*.jsonl")
    return path


def test_a_recording_cut_short_loads_what_is_whole_and_names_the_file(tmp_path: Path) -> None:
    path = _recorded(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # killed mid-write: the last line is partial
    with pytest.warns(RecordingWarning, match=rf"{path.name}: read in part: cut short at line"):
        run = read_run(path)
    assert run is not None and not run.complete and 0 < len(run.events) < 20
    assert run.duration is None and "cut short" in (run.error or "")
    with pytest.warns(RecordingWarning, match=path.name):
        report = rescore(tmp_path, [MaxRounds(2), MaxDuration(10)])
    results = report.run_results[0].results
    assert results["MaxRounds"].passed and not results["MaxDuration"].passed
    assert not report.passed


def test_a_recording_of_another_version_loads_what_this_one_reads(tmp_path: Path) -> None:
    path = _recorded(tmp_path)
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["version"] = 2
    future = json.dumps({"t": 0.1, "event": {"type": "thought_bubble", "round": 1, "seq": 99}})
    path.write_text("\n".join([json.dumps(header), lines[1], future, *lines[2:]]) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = read_run(path)
    (warning,) = caught
    assert issubclass(warning.category, RecordingWarning)
    assert str(path) in str(warning.message)
    assert "format version 2" in str(warning.message) and "1 event(s)" in str(warning.message)
    assert (
        run is not None and run.complete and run.error is None and len(run.events) == len(lines) - 2
    )


def test_files_that_are_not_recordings_are_skipped_with_a_warning(tmp_path: Path) -> None:
    _recorded(tmp_path)
    (tmp_path / "notes.jsonl").write_text("hello\n")
    with pytest.warns(RecordingWarning, match="notes.jsonl: not a recorded run"):
        runs = read_runs(tmp_path)
    assert [r.case for r in runs] == ["paris"]
    with pytest.raises(FileNotFoundError):
        read_runs(tmp_path / "missing")


def test_rescoring_with_a_dataset_leaves_out_cases_it_does_not_have(tmp_path: Path) -> None:
    _recorded(tmp_path)
    other = Dataset([Case("london", "Weather in London?")], evaluators=[MaxRounds(2)])
    with pytest.warns(RecordingWarning, match="left out: paris"):
        report = rescore(tmp_path, other)
    assert report.cases == ()


def test_an_llm_judge_is_the_only_model_asked_when_rescoring(tmp_path: Path) -> None:
    from rxreact.evals import LLMJudge
    from rxreact.model.scripted.model import ScriptedModel
    from rxreact.model.scripted.replies import text_reply

    _recorded(tmp_path)
    judge_model = ScriptedModel([text_reply('{"score": 0.9, "reason": "Names the weather."}')])
    report = rescore(tmp_path, [LLMJudge("Says what the weather is.", model=judge_model)])
    result = report.run_results[0].results["LLMJudge"]
    assert (result.value, result.reason, result.passed) == (0.9, "Names the weather.", True)
    assert len(judge_model.requests) == 1
