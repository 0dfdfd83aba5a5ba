"""Dataset files: pydantic-evals' own format, read as its ``Dataset.to_file`` writes it (the real
package writes them here), written back by ours, and every way a file can be wrong."""

from __future__ import annotations

import json
import sys
import textwrap
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pydantic_evals
import pydantic_evals.evaluators as pe
import pytest
import yaml

from rxreact import AssistantMessage, Image, Text, UserMessage
from rxreact.errors import ConfigurationError
from rxreact.evals import (
    Case,
    Contains,
    Dataset,
    DatasetError,
    Equals,
    EqualsExpected,
    FirstTokenWithin,
    IsInstance,
    LLMJudge,
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

PeDataset = pydantic_evals.Dataset[Any, Any, Any]


def _pydantic_evals_dataset(**extra: Any) -> Any:
    return PeDataset(
        name="weather",
        cases=[
            pydantic_evals.Case(
                name="paris",
                inputs="What is the weather in Paris?",
                expected_output="Sunny, 21 °C",
                metadata={"difficulty": "easy"},
                evaluators=(
                    pe.Contains("sunny", case_sensitive=False),
                    pe.MaxDuration(timedelta(seconds=2.5)),
                ),
            ),
            pydantic_evals.Case(inputs={"question": "And tomorrow?"}),  # no name, no metadata
        ],
        evaluators=[
            pe.EqualsExpected(),
            pe.Equals("Sunny, 21 °C"),
            pe.IsInstance("str"),
            pe.MaxDuration(5),
            pe.MaxToolCalls(3),
            pe.LLMJudge(
                "Names the city", include_input=True, include_expected_output=True,
                model="openai:gpt-4o",
            ),
            pe.LLMJudge("Is polite"),
        ],
        **extra,
    )  # fmt: skip


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_file_pydantic_evals_wrote_loads_as_is(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"weather{suffix}"
    _pydantic_evals_dataset().to_file(path)  # with its schema file and the $schema reference
    text = path.read_text()
    assert ("# yaml-language-server: $schema=" in text) == (suffix == ".yaml")
    assert ("report_evaluators" in text and "metadata: null" in text) or suffix == ".json"

    dataset = Dataset.from_file(path)

    assert dataset.name == "weather"
    paris, second = dataset.cases
    assert paris.name == "paris" and paris.question == "What is the weather in Paris?"
    assert paris.expected == "Sunny, 21 °C" and paris.metadata == {"difficulty": "easy"}
    assert paris.evaluators == (Contains("sunny", case_sensitive=False), MaxDuration(2.5))
    # pydantic-evals' name for a case without one, its dict inputs as our question
    assert second.name == "Case 2" and second.question == "And tomorrow?"
    assert second.metadata == {} and second.expected is None and second.history == ()
    assert dataset.evaluators == (
        EqualsExpected(),
        Equals("Sunny, 21 °C"),
        IsInstance("str"),
        MaxDuration(5.0),
        MaxToolCalls(3),
        LLMJudge("Names the city", model="openai:gpt-4o", include_question=True,
                 include_expected=True),
        # pydantic-evals' defaults hold in a file: the question is shown only when asked for
        LLMJudge("Is polite", include_question=False),
    )  # fmt: skip


def test_contains_as_strings_searches_the_answer_text(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    PeDataset(
        name="d",
        cases=[pydantic_evals.Case(name="a", inputs="q")],
        evaluators=[pe.Contains("21 °C (sunny)", as_strings=True, case_sensitive=False),
                    pe.Contains(3, as_strings=True)],
    ).to_file(path, schema_path=None)  # fmt: skip

    first, second = Dataset.from_file(path).evaluators
    assert first == Matches(r"(?i)21\ °C\ \(sunny\)")
    assert second == Matches("3")


@pytest.mark.parametrize(
    ("evaluator", "hint"),
    [
        (pe.HasMatchingSpan(query={"name_equals": "search"}), "OpenTelemetry spans"),
        (pe.GEval("correct", ["check the city"]), "LLMJudge"),
        (pe.ToolCorrectness(expected_tools=["get_weather"]), "ToolCalls"),
        (pe.TrajectoryMatch(expected_trajectory=["get_weather"]), "ToolCalls"),
        (pe.MaxModelRequests(3), "MaxRounds"),
    ],
    ids=lambda v: type(v).__name__ if not isinstance(v, str) else v,
)
def test_an_evaluator_without_a_counterpart_names_itself_the_file_and_the_case(
    tmp_path: Path, evaluator: Any, hint: str
) -> None:
    path = tmp_path / "spans.yaml"
    PeDataset(
        name="spans", cases=[pydantic_evals.Case(name="paris", inputs="q", evaluators=(evaluator,))]
    ).to_file(path, schema_path=None)

    with pytest.raises(DatasetError) as caught:
        Dataset.from_file(path)

    name = type(evaluator).__name__
    message = str(caught.value)
    assert message.startswith(f"{path}, case 'paris', field 'evaluators[0]': ")
    assert f"evaluator {name!r} has no counterpart in rxreact" in message and hint in message
    assert (caught.value.path, caught.value.case, caught.value.field) == (
        str(path), "paris", "evaluators[0]"
    )  # fmt: skip
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json"])
def test_our_file_round_trips_and_pydantic_evals_reads_it(tmp_path: Path, suffix: str) -> None:
    dataset = Dataset(
        [
            Case("paris", "Weather in Paris?", expected="sunny", metadata={"tags": ["eu"]},
                 evaluators=[Contains("sunny", case_sensitive=False), MaxDuration(2.5)]),
            Case("oslo", "Weather in Oslo?"),
        ],
        name="weather",
        evaluators=[EqualsExpected(), IsInstance("str"), MaxToolCalls(2),
                    LLMJudge("Names the city", model="openai:gpt-4o", include_expected=True)],
    )  # fmt: skip
    path = tmp_path / f"weather{suffix}"
    dataset.to_file(path)

    again = Dataset.from_file(path)
    assert again.cases == dataset.cases and again.evaluators == dataset.evaluators
    assert again.name == "weather"

    theirs = PeDataset.from_file(path)
    assert [c.name for c in theirs.cases] == ["paris", "oslo"]
    assert theirs.cases[0].evaluators == [
        pe.Contains("sunny", case_sensitive=False),
        pe.MaxDuration(2.5),
    ]
    judge = theirs.evaluators[3]
    assert isinstance(judge, pe.LLMJudge)
    assert (judge.rubric, judge.model, judge.include_input, judge.include_expected_output) == (
        "Names the city", "openai:gpt-4o", True, True
    )  # fmt: skip
    assert theirs.evaluators[:3] == [pe.EqualsExpected(), pe.IsInstance("str"), pe.MaxToolCalls(2)]


def test_our_evaluators_history_and_parts_round_trip(tmp_path: Path) -> None:
    every = [
        EqualsExpected(), Equals({"temp": 21}), Contains("x"), Matches(r"\d+ °C"),
        IsInstance("Forecast"), OutputValid(), NoErrors(), NotForced(), MaxRounds(2),
        MaxToolCalls(max_calls=4), MaxTokens(2_000), MaxDuration(3), FirstTokenWithin(0.5),
        ToolCalls(["get_weather", ("search", {"q": "oslo"})], mode="superset"),
        LLMJudge("good", include_question=False, threshold=0.7),
    ]  # fmt: skip
    dataset = Dataset(
        [
            Case(
                "follow-up",
                "And tomorrow?",
                history=[("user", "Weather in Paris?"), AssistantMessage(content="Sunny.")],
            ),
            Case("photo", ["What is this?", Text(text="Be brief."),
                           Image.from_url("https://example.com/cat.png")], expected={"a": 1}),
        ],
        evaluators=every,
    )  # fmt: skip
    for suffix in (".yaml", ".json"):
        path = tmp_path / f"all{suffix}"
        dataset.to_file(path)
        again = Dataset.from_file(path)
        assert again.evaluators == dataset.evaluators
        assert again.cases == dataset.cases
        assert again.name == "all"  # no name: pydantic-evals' default, the file's stem
    written = yaml.safe_load((tmp_path / "all.yaml").read_text())
    assert written["evaluators"][:3] == [
        "EqualsExpected",
        {"Equals": {"value": {"temp": 21}}},  # a dict alone would read back as arguments
        {"Contains": "x"},
    ]
    assert {"MaxToolCalls": 4} in written["evaluators"]
    assert {
        "ToolCalls": {"expected": ["get_weather", ["search", {"q": "oslo"}]], "mode": "superset"}
    } in written["evaluators"]
    assert written["cases"][0]["inputs"] == {
        "question": "And tomorrow?",
        "history": [{"role": "user", "content": "Weather in Paris?"},
                    {"role": "assistant", "content": "Sunny."}],
    }  # fmt: skip


def test_every_short_form_reads(tmp_path: Path) -> None:
    path = tmp_path / "forms.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            # yaml-language-server: $schema=forms_schema.json
            name: forms
            cases:
            - name: a
              inputs:
                question: Weather there?
                history:
                - [user, I am in Oslo.]
                - {role: assistant, content: Noted.}
              evaluators:
              - NoErrors
              - MaxRounds: 2
              - ToolCalls: [get_weather, {search: {q: oslo}}]
              - ToolCalls: {expected: [get_weather], mode: unordered}
              - MaxDuration: PT1M
            report_evaluators: []
            """
        )
    )
    (case,) = Dataset.from_file(path).cases
    assert case.history == (
        UserMessage(content="I am in Oslo."),
        AssistantMessage(content="Noted."),
    )
    assert case.evaluators == (
        NoErrors(),
        MaxRounds(2),
        ToolCalls(["get_weather", ("search", {"q": "oslo"})]),
        ToolCalls(["get_weather"], mode="unordered"),
        MaxDuration(60),
    )


# -- errors -------------------------------------------------------------------------------------


EVAL = "cases: [{name: a, inputs: q, evaluators: [%s]}]\n"
"""A file of one case, ``a``, with these evaluators."""


def _error(tmp_path: Path, text: str, suffix: str = ".yaml") -> DatasetError:
    path = tmp_path / f"bad{suffix}"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(DatasetError) as caught:
        Dataset.from_file(path)
    error = caught.value
    assert error.path == str(path) and str(error).startswith(str(path))
    assert error.__cause__ is None  # one message, never a traceback from deep inside
    return error


@pytest.mark.parametrize(
    ("text", "case", "field", "words"),
    [
        ("name: x\n", None, "cases", "needs its cases"),
        ("cases: {a: 1}\n", None, "cases", "must be a list of cases"),
        ("cases: []\ncolour: red\n", None, "colour", "unknown key"),
        ("- 1\n", None, None, "holds a mapping"),
        ("cases: [{name: a}]\n", "a", "inputs", "needs its inputs"),
        ("cases: [{name: a, inputs: q, expected: x}]\n", "a", "expected", "unknown key"),
        ("cases: [{name: a, inputs: 3}]\n", "a", "inputs", "must be the question"),
        ("cases: [{name: a, inputs: {query: q}}]\n", "a", "inputs.query", "question and history"),
        ("cases: [{name: a, inputs: {history: []}}]\n", "a", "inputs.question",
         "needs its question"),
        ("cases: [{name: a, inputs: {question: q, history: [[robot, hi]]}}]\n", "a",
         "inputs.history[0]", "role: user|assistant|system"),
        ("cases: [{name: a, inputs: [{type: image}]}]\n", "a", "inputs[0]",
         "needs exactly one of url or data"),
        ("cases: [{name: a, inputs: q, metadata: [1]}]\n", "a", "metadata", "mapping or null"),
        ("cases: [{name: 3, inputs: q}]\n", None, "cases[0].name", "non-empty string"),
        ("cases: [7]\n", None, "cases[0]", "a case is a mapping"),
        ("cases: [{name: a, inputs: q}, {name: a, inputs: r}]\n", "a", "name", "unique"),
        (EVAL % "Sharpness", "a", "evaluators[0]",
         "unknown evaluator 'Sharpness'; the known ones are EqualsExpected"),
        ("cases: [{name: a, inputs: q, evaluators: NoErrors}]\n", "a", "evaluators",
         "must be a list"),
        (EVAL % "{Contains: x, Equals: y}", "a",
         "evaluators[0]", "has 2 keys"),
        (EVAL % "[NoErrors]", "a", "evaluators[0]",
         "an evaluator is written Name"),
        (EVAL % "{MaxRounds: two}", "a",
         "evaluators[0].MaxRounds.n", "MaxRounds's n: input should be a valid integer, got 'two'"),
        (EVAL % "{Contains: {value: x, case: no}}", "a",
         "evaluators[0].Contains.case", "unknown argument 'case' of Contains"
         " (its arguments are value, case_sensitive)"),
        (EVAL % "{Contains: {case_sensitive: false}}", "a",
         "evaluators[0].Contains.value", "Contains needs its argument 'value'"),
        (EVAL % "{NoErrors: 1}", "a", "evaluators[0]",
         "NoErrors takes no arguments"),
        (EVAL % "{ToolCalls: {expected: [x], mode: any}}",
         "a", "evaluators[0].ToolCalls.mode", "should be 'strict', 'unordered',"
         " 'subset' or 'superset'"),
        (EVAL % "{ToolCalls: [[1, 2, 3]]}", "a",
         "evaluators[0]", "expected[0] must be a name"),
        (EVAL % "{Matches: '('}", "a", "evaluators[0]",
         "Matches: missing ), unterminated subpattern"),
        (EVAL % "{MaxDuration: soon}", "a",
         "evaluators[0].MaxDuration.seconds", "ISO 8601 duration (PT2.5S), got 'soon'"),
        (EVAL % "{MaxToolCalls: {max_calls: 1, include_failed: false}}",
         "a", "evaluators[0].MaxToolCalls.include_failed", "counts every call made"),
        (EVAL % "{LLMJudge: {rubric: r, model_settings: {temperature: 0}}}",
         "a", "evaluators[0].LLMJudge.model_settings", "configure the judge's model itself"),
        (EVAL % "{LLMJudge: {rubric: r, include_input: true, include_question: true}}",
         "a", "evaluators[0].LLMJudge.include_input", "not both"),
        (EVAL % "{Contains: {value: x, as_strings: maybe}}",
         "a", "evaluators[0].Contains.as_strings", "true or false"),
        ("evaluators: [Sharpness]\ncases: []\n", None, "evaluators[0]", "unknown evaluator"),
        ("cases: []\nreport_evaluators: [ConfusionMatrixEvaluator]\n", None, "report_evaluators",
         "report evaluators have no counterpart in rxreact (ConfusionMatrixEvaluator)"),
        ("name: [x]\ncases: []\n", None, "name", "must be a string"),
    ],
)  # fmt: skip
def test_a_bad_file_names_the_file_the_case_and_the_field(
    tmp_path: Path, text: str, case: str | None, field: str | None, words: str
) -> None:
    error = _error(tmp_path, text)
    assert (error.case, error.field) == (case, field), str(error)
    assert words in str(error)
    if case is not None:
        assert f"case {case!r}" in str(error)
    if field is not None:
        assert f"field {field!r}" in str(error)


def test_unreadable_files(tmp_path: Path) -> None:
    error = _error(tmp_path, "cases: [{name: a, inputs: q\n")
    assert "not valid YAML" in str(error) and "line 2, column 1" in str(error)
    error = _error(tmp_path, '{"cases": [}', suffix=".json")
    assert "not valid JSON" in str(error) and "line 1, column 12" in str(error)
    error = _error(tmp_path, "cases: []", suffix=".toml")
    assert "a dataset file is .yaml, .yml or .json; got .toml" in str(error)
    missing = tmp_path / "missing.yaml"
    with pytest.raises(
        DatasetError, match=r"missing.yaml: cannot read the dataset file: No such file"
    ):
        Dataset.from_file(missing)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: caf\xe9\ncases: []\n")
    with pytest.raises(DatasetError, match="cannot read the dataset file"):
        Dataset.from_file(latin)


def test_yaml_without_pyyaml_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "d.yaml"
    path.write_text("cases: []\n")
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml now fails
    with pytest.raises(ConfigurationError, match=r"pip install 'rxreact\[evals\]'"):
        Dataset.from_file(path)
    json_path = tmp_path / "d.json"
    json_path.write_text('{"cases": []}')
    assert len(Dataset.from_file(json_path)) == 0  # JSON files need nothing


def test_what_a_file_cannot_hold_is_an_error_and_nothing_is_written(tmp_path: Path) -> None:
    def polite(ctx: Any) -> bool:
        return True

    path = tmp_path / "d.yaml"
    with pytest.raises(
        DatasetError, match=r"case 'a', field 'evaluators\[0\]': cannot be written.*'polite'"
    ):
        Dataset([Case("a", "q", evaluators=[polite])]).to_file(path)
    with pytest.raises(
        DatasetError, match=r"field 'evaluators\[0\]'.*ToolCalls's expected holds a function"
    ):
        Dataset([Case("a", "q")], evaluators=[ToolCalls([("search", {"q": str.islower})])]).to_file(
            path
        )
    assert not path.exists()


def test_the_json_schema_accepts_the_files_and_refuses_mistakes(tmp_path: Path) -> None:
    schema = Dataset.json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    _pydantic_evals_dataset().to_file(tmp_path / "theirs.json")
    validator.validate(json.loads((tmp_path / "theirs.json").read_text()))
    _pydantic_evals_dataset().to_file(tmp_path / "theirs.yaml")
    validator.validate(yaml.safe_load((tmp_path / "theirs.yaml").read_text()))
    ours = Dataset(
        [Case("a", "q", history=[("user", "hi")])],
        evaluators=[ToolCalls(["x"], mode="subset"), MaxRounds(2), NoErrors()],
    )
    ours.to_file(tmp_path / "ours.json")
    validator.validate(json.loads((tmp_path / "ours.json").read_text()))
    for wrong in (
        {"cases": [{"name": "a", "inputs": "q", "evaluators": ["Sharpness"]}]},
        {"cases": [{"name": "a", "inputs": "q", "evaluators": [{"MaxRounds": "two"}]}]},
        {"cases": [{"name": "a"}]},
        {"cases": [], "colour": "red"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(wrong)
