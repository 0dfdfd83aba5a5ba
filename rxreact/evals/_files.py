"""Dataset files in pydantic-evals' own format, YAML or JSON by the file's suffix.

::

    # yaml-language-server: $schema=weather_schema.json
    name: weather
    cases:
    - name: paris
      inputs: What is the weather in Paris?          the question (or {question, history})
      metadata: {difficulty: easy}                   or null
      expected_output: sunny                         Case.expected
      evaluators: [{Contains: {value: sunny, case_sensitive: false}}]
    evaluators: [EqualsExpected, {MaxToolCalls: 2}]  every case's
    report_evaluators: []                            accepted when empty

A file pydantic-evals' ``Dataset.to_file`` wrote loads as is where its evaluators have a
counterpart here (:mod:`rxreact.evals._evaluator_specs`). Anything wrong is one
:class:`~rxreact.evals.DatasetError` naming the file, the case and the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from rxreact._validate import described
from rxreact.evals._case import Case
from rxreact.evals._dataset import Dataset
from rxreact.evals._evaluator_specs import SpecError, evaluator_from_spec, evaluator_spec
from rxreact.evals._file_inputs import inputs_data, plain, read_inputs
from rxreact.evals.errors import DatasetError

__all__ = ["dataset_json_schema", "load_dataset", "save_dataset"]

_DATASET_KEYS = ("$schema", "name", "cases", "evaluators", "report_evaluators")
_CASE_KEYS = ("name", "inputs", "metadata", "expected_output", "evaluators")


def dataset_json_schema() -> dict[str, Any]:
    """The JSON schema of dataset files (see :mod:`rxreact.evals._file_schema`)."""
    from rxreact.evals._file_schema import dataset_schema

    return dataset_schema()


# -- reading ------------------------------------------------------------------------------------


def load_dataset(path: str | PathLike[str]) -> Dataset:
    """The dataset in the YAML (``.yaml``, ``.yml``) or JSON (``.json``) file at ``path``.

    Raises:
        DatasetError: the file cannot be read or parsed, or holds something that is not a
            dataset (the message names the file, the case and the field).
        ConfigurationError: a YAML file without PyYAML (the ``evals`` extra).
    """
    file = Path(path)
    data = _parse(file, _read(file))
    return _dataset(file, data)


def _read(file: Path) -> str:
    _format(file)  # a wrong suffix before the file is even opened
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise DatasetError(f"cannot read the dataset file: {reason}", path=str(file)) from None


def _format(file: Path) -> str:
    suffix = file.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix == ".json":
        return "json"
    raise DatasetError(
        f"a dataset file is .yaml, .yml or .json; got {suffix or 'no suffix'}", path=str(file)
    )


def _parse(file: Path, text: str) -> Any:
    if _format(file) == "json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise DatasetError(
                f"not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}",
                path=str(file),
            ) from None
    yaml = _yaml()
    try:
        # The "# yaml-language-server: $schema=" line pydantic-evals writes is a comment.
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise DatasetError(f"not valid YAML: {problem}{where}", path=str(file)) from None


def _yaml() -> Any:
    from rxreact._extras import import_extra

    return import_extra("yaml", "evals")


def _dataset(file: Path, data: Any) -> Dataset:
    path = str(file)
    if not isinstance(data, Mapping):
        raise DatasetError(
            f"a dataset file holds a mapping (name, cases...), got {described(data)}", path=path
        )
    _no_unknown_keys(data, _DATASET_KEYS, path=path)
    name = data.get("name", file.stem)  # pydantic-evals' default: the file's stem
    if name is None:
        name = file.stem
    if not isinstance(name, str):
        raise DatasetError(f"must be a string, got {described(name)}", path=path, field="name")
    if data.get("report_evaluators"):
        names = ", ".join(_spec_name(s) for s in data["report_evaluators"])
        raise DatasetError(
            f"report evaluators have no counterpart in rxreact ({names}): a Report gives the pass "
            "rate, scores per evaluator and latencies",
            path=path,
            field="report_evaluators",
        )
    if "cases" not in data:
        raise DatasetError("a dataset needs its cases", path=path, field="cases")
    cases = data["cases"]
    if not isinstance(cases, list):
        raise DatasetError(
            f"must be a list of cases, got {described(cases)}", path=path, field="cases"
        )
    evaluators = _evaluators(data.get("evaluators"), path=path, case=None)
    loaded = [_case(i, raw, path) for i, raw in enumerate(cases)]
    try:
        return Dataset(loaded, name=name, evaluators=evaluators)
    except DatasetError as error:
        raise DatasetError(_bare(error), path=path, case=error.case, field=error.field) from None


def _case(index: int, raw: Any, path: str) -> Case:
    if not isinstance(raw, Mapping):
        raise DatasetError(
            f"a case is a mapping (name, inputs...), got {described(raw)}",
            path=path,
            field=f"cases[{index}]",
        )
    name = raw.get("name")
    if name is None:
        name = f"Case {index + 1}"  # what pydantic-evals calls a case without a name
    elif not isinstance(name, str) or not name:
        raise DatasetError(
            f"must be a non-empty string, got {described(name)}",
            path=path,
            field=f"cases[{index}].name",
        )
    _no_unknown_keys(raw, _CASE_KEYS, path=path, case=name)
    if "inputs" not in raw:
        raise DatasetError(
            "a case needs its inputs (the question)", path=path, case=name, field="inputs"
        )
    question, history = read_inputs(raw["inputs"], path=path, case=name)
    metadata = raw.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, Mapping):
        raise DatasetError(
            f"must be a mapping or null, got {described(metadata)}",
            path=path,
            case=name,
            field="metadata",
        )
    evaluators = _evaluators(raw.get("evaluators"), path=path, case=name)
    try:
        return Case(
            name,
            question,
            expected=raw.get("expected_output"),
            history=history,
            metadata=metadata,
            evaluators=evaluators,
        )
    except DatasetError as error:
        raise DatasetError(_bare(error), path=path, case=name, field=error.field) from None


def _evaluators(raw: Any, *, path: str, case: str | None) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise DatasetError(
            f"must be a list of evaluators, got {described(raw)}",
            path=path,
            case=case,
            field="evaluators",
        )
    evaluators = []
    for i, spec in enumerate(raw):
        try:
            evaluators.append(evaluator_from_spec(spec))
        except SpecError as error:
            field = f"evaluators[{i}]"
            if error.where is not None:
                field += f".{_spec_name(spec)}.{error.where}"
            raise DatasetError(str(error), path=path, case=case, field=field) from None
    return evaluators


def _spec_name(spec: Any) -> str:
    if isinstance(spec, Mapping) and len(spec) == 1:
        return str(next(iter(spec)))
    return str(spec)


def _no_unknown_keys(
    data: Mapping[str, Any], known: Sequence[str], *, path: str, case: str | None = None
) -> None:
    for key in data:
        if key not in known:
            raise DatasetError(
                f"unknown key (known: {', '.join(known)})", path=path, case=case, field=str(key)
            )


def _bare(error: DatasetError) -> str:
    """The message of an error raised without the file: its text after the place it names."""
    text = str(error)
    prefix = ", ".join(
        p
        for p in (
            f"case {error.case!r}" if error.case is not None else None,
            f"field {error.field!r}" if error.field is not None else None,
        )
        if p is not None
    )
    return text[len(prefix) + 2 :] if prefix and text.startswith(prefix + ": ") else text


# -- writing ------------------------------------------------------------------------------------


def save_dataset(dataset: Dataset, path: str | PathLike[str]) -> None:
    """Write ``dataset`` to ``path`` as pydantic-evals' ``to_file`` does, YAML or JSON by the
    suffix (every key of every case written out, ``metadata: null`` when there is none).

    Raises:
        DatasetError: a suffix that is neither, or something a file cannot hold (a custom
            evaluator function, a predicate argument); nothing is written then.
    """
    file = Path(path)
    fmt = _format(file)
    data = dataset_data(dataset, path=str(file))
    if fmt == "json":
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    else:
        text = _yaml().dump(data, sort_keys=False, allow_unicode=True)
    try:
        file.write_text(text, encoding="utf-8")
    except OSError as error:
        raise DatasetError(
            f"cannot write the dataset file: {error.strerror or error}", path=str(file)
        ) from None


def dataset_data(dataset: Dataset, *, path: str | None = None) -> dict[str, Any]:
    """``dataset`` as the mapping its file holds."""
    return {
        "name": dataset.name,
        "cases": [_case_data(case, path) for case in dataset.cases],
        "evaluators": _specs(dataset.evaluators, path=path, case=None),
    }


def _case_data(case: Case, path: str | None) -> dict[str, Any]:
    return {
        "name": case.name,
        "inputs": inputs_data(case),
        "metadata": plain(case.metadata) if case.metadata else None,
        "expected_output": plain(case.expected),
        "evaluators": _specs(case.evaluators, path=path, case=case.name),
    }


def _specs(evaluators: Sequence[Any], *, path: str | None, case: str | None) -> list[Any]:
    specs = []
    for i, evaluator in enumerate(evaluators):
        try:
            specs.append(evaluator_spec(evaluator))
        except SpecError as error:
            raise DatasetError(
                f"cannot be written to a file: {error}",
                path=path,
                case=case,
                field=f"evaluators[{i}]",
            ) from None
    return specs
