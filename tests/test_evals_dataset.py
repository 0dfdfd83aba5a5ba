"""Cases and datasets in memory: what they hold, and the errors that name case and field."""

from __future__ import annotations

import pytest

from rxreact import AssistantMessage, Image, InvalidArgumentError, UserMessage
from rxreact.evals import Case, Contains, Dataset, DatasetError

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9"
    "awAAAABJRU5ErkJggg=="
)


def test_a_case_holds_its_question_history_and_evaluators() -> None:
    image = Image(data_base64=PNG, media_type="image/png")
    case = Case(
        "picture",
        ["What is in this picture?", image],
        expected="a pixel",
        history=[("user", "Hi"), AssistantMessage(content="Hello!")],
        metadata={"tag": "vision"},
        evaluators=[Contains("pixel")],
    )
    assert case.question == ("What is in this picture?", image)
    assert case.history == (UserMessage(content="Hi"), AssistantMessage(content="Hello!"))
    assert case.metadata == {"tag": "vision"} and case.evaluators == (Contains("pixel"),)
    assert case == Case(
        "picture",
        ["What is in this picture?", image],
        expected="a pixel",
        history=[("user", "Hi"), ("assistant", "Hello!")],
        metadata={"tag": "vision"},
        evaluators=[Contains("pixel")],
    )


def test_a_dataset_refuses_duplicate_names_naming_the_case() -> None:
    with pytest.raises(DatasetError) as caught:
        Dataset([Case("paris", "a"), Case("oslo", "b"), Case("paris", "c")])
    error = caught.value
    assert (error.path, error.case, error.field) == (None, "paris", "name")
    assert (
        str(error)
        == "case 'paris', field 'name': two cases have this name; case names must be unique"
    )
    assert isinstance(error, InvalidArgumentError) and isinstance(error, ValueError)


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: Case("c", 42), "question"),
        (lambda: Case("c", "q", history=[("user", "hi"), ("robot", "beep")]), "history[1]"),
        (lambda: Case("c", "q", history="hi"), "history"),
        (lambda: Case("c", "q", metadata=["x"]), "metadata"),
        (lambda: Case("c", "q", evaluators=["Contains"]), "evaluators[0]"),
        (lambda: Case("c", "q", evaluators=[Contains("x"), Contains]), "evaluators[1]"),
    ],
)
def test_a_bad_case_names_itself_and_the_field(build: object, field: str) -> None:
    with pytest.raises(DatasetError) as caught:
        build()  # type: ignore[operator]
    assert caught.value.case == "c" and caught.value.field == field
    assert str(caught.value).startswith(f"case 'c', field {field!r}: ")


def test_a_dataset_holds_its_cases_by_name() -> None:
    dataset = Dataset([Case("a", "x"), Case("b", "y")], name="tiny", evaluators=[Contains("z")])
    assert len(dataset) == 2 and dataset["b"].question == "y" and dataset.name == "tiny"
    assert repr(dataset) == "Dataset('tiny', 2 cases, 1 evaluators)"
    with pytest.raises(KeyError):
        dataset["c"]
    with pytest.raises(DatasetError, match=r"cases\[0\] must be a Case"):
        Dataset(["not a case"])  # type: ignore[list-item]
