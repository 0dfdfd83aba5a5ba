"""The JSON schema of dataset files, for editors: ``Dataset.json_schema()``.

Save it beside the dataset and point at it, as pydantic-evals does::

    # yaml-language-server: $schema=weather_schema.json        (first line of a YAML file)
    {"$schema": "weather_schema.json", "name": ...}             (a key of a JSON file)

Each evaluator has the forms its arguments allow, as in pydantic-evals' own schema: its bare
name when it needs no argument, ``{Name: first_argument}`` when it needs at most one, and
``{Name: {arguments}}``; arguments are spelled as files spell them (``LLMJudge``'s
``include_input``), with pydantic-evals' accepted extras (``evaluation_name``...).
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from rxreact.evals._evaluator_specs import IGNORED_ARGUMENTS, field_hints, init_fields, is_required
from rxreact.evals.evaluators import REGISTRY

__all__ = ["dataset_schema"]

_ANY: dict[str, Any] = {}
_EXTRA_ARGUMENTS: dict[str, dict[str, dict[str, Any]]] = {
    "Contains": {"as_strings": {"type": "boolean"}},
    "MaxToolCalls": {"include_failed": {"const": True}},
    "MaxDuration": {
        "seconds": {"anyOf": [{"type": "number"}, {"type": "string", "format": "duration"}]}
    },
    "FirstTokenWithin": {
        "seconds": {"anyOf": [{"type": "number"}, {"type": "string", "format": "duration"}]}
    },
    "LLMJudge": {
        "include_input": {"type": "boolean"},
        "include_expected_output": {"type": "boolean"},
        "model": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
}
_DROPPED = {"LLMJudge": ("include_question", "include_expected")}
"""Arguments a file spells another way (``_EXTRA_ARGUMENTS`` has the file's spelling); both
are accepted when reading, the schema offers pydantic-evals' one."""


def dataset_schema() -> dict[str, Any]:
    """The schema (JSON Schema 2020-12) of a dataset file."""
    evaluators = {"type": "array", "items": {"anyOf": _evaluator_forms()}}
    case = {
        "type": "object",
        "additionalProperties": False,
        "required": ["inputs"],
        "properties": {
            "name": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}]},
            "inputs": {"$ref": "#/$defs/Inputs"},
            "metadata": {"anyOf": [{"type": "object"}, {"type": "null"}]},
            "expected_output": _ANY,
            "evaluators": {"$ref": "#/$defs/Evaluators"},
        },
    }
    question = {"anyOf": [{"type": "string"}, {"type": "array", "minItems": 1}]}
    message = {
        "anyOf": [
            {
                "type": "object",
                "required": ["role", "content"],
                "properties": {"role": {"enum": ["user", "assistant", "system"]}},
            },
            {
                "type": "array",
                "prefixItems": [{"enum": ["user", "assistant", "system"]}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
        ]
    }
    inputs = {
        "anyOf": [
            question,
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["question"],
                "properties": {
                    "question": question,
                    "history": {"type": "array", "items": message},
                },
            },
        ]
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "rxreact dataset (pydantic-evals' format)",
        "type": "object",
        "additionalProperties": False,
        "required": ["cases"],
        "properties": {
            "$schema": {"type": "string"},
            "name": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "cases": {"type": "array", "items": {"$ref": "#/$defs/Case"}},
            "evaluators": {"$ref": "#/$defs/Evaluators"},
            "report_evaluators": {"type": "array", "maxItems": 0},
        },
        "$defs": {"Case": case, "Inputs": inputs, "Evaluators": evaluators},
    }


def _evaluator_forms() -> list[dict[str, Any]]:
    forms: list[dict[str, Any]] = []
    for name, cls in REGISTRY.items():
        fields = init_fields(cls)
        hints = field_hints(cls)
        arguments = {
            f.name: _field_schema(hints.get(f.name))
            for f in fields
            if f.name not in _DROPPED.get(name, ())
        }
        arguments.update(_EXTRA_ARGUMENTS.get(name, {}))
        arguments.update({extra: _ANY for extra in IGNORED_ARGUMENTS.get(name, ())})
        required = [f.name for f in fields if is_required(f)]
        if not required:
            forms.append({"const": name})
        if fields and len(required) <= 1:
            forms.append(_one_key(name, arguments[fields[0].name]))
        if arguments:
            forms.append(
                _one_key(
                    name,
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "required": required,
                        "properties": arguments,
                    },
                )
            )
    return forms


def _one_key(name: str, value: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [name],
        "properties": {name: value},
    }


def _field_schema(hint: Any) -> dict[str, Any]:
    if hint is None or hint is Any:
        return _ANY
    try:
        schema = TypeAdapter(hint).json_schema()
    except Exception:  # a predicate's Callable has no schema: any value
        return _ANY
    schema.pop("title", None)
    return schema if "$defs" not in schema else _ANY
