"""Evaluators as dataset files spell them: pydantic-evals' ``EvaluatorSpec`` forms, both ways.

::

    EqualsExpected                      no arguments
    {Contains: sunny}                   one argument: the evaluator's first field
    {Contains: {value: sunny, case_sensitive: false}}
                                        keyword arguments

Reading (:func:`evaluator_from_spec`) maps pydantic-evals' own evaluators onto ours where they
mean the same thing (``LLMJudge``'s ``include_input`` is our ``include_question``, a
``MaxDuration`` of ``PT2.5S`` is 2.5 s, ``Contains``' ``as_strings: true`` searches the
answer's text), and refuses, naming the evaluator, the ones rxreact has no counterpart for.
Writing (:func:`evaluator_spec`) is what pydantic-evals' ``to_file`` does: arguments at their
default are left out, and a single first argument takes the short form.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from pydantic import TypeAdapter, ValidationError

from rxreact.evals.evaluators import REGISTRY, Evaluator, LLMJudge, Matches

__all__ = [
    "SpecError",
    "evaluator_from_spec",
    "evaluator_spec",
    "field_hints",
    "init_fields",
    "is_required",
]

NO_COUNTERPART: dict[str, str] = {
    "HasMatchingSpan": "it queries OpenTelemetry spans; rxreact scores the run's typed events "
    "(ToolCalls, MaxRounds, NoErrors...)",
    "GEval": "use LLMJudge with the criteria and steps in its rubric",
    "ToolCorrectness": "use ToolCalls",
    "TrajectoryMatch": "use ToolCalls with its mode",
    "ArgumentCorrectness": "use ToolCalls with (name, {arguments}) pairs",
    "MaxModelRequests": "use MaxRounds",
    "Python": "pydantic-evals removed it too",
}
"""pydantic-evals' evaluators that rxreact does not have, with what to use instead."""

IGNORED_ARGUMENTS: dict[str, frozenset[str]] = {
    # A report names an evaluator by its class; pydantic-evals' renaming has nothing to rename.
    **{name: frozenset({"evaluation_name"}) for name in REGISTRY},
    # rxreact's judge always reports its score, its pass (from the threshold) and its reason.
    "LLMJudge": frozenset({"score", "assertion"}),
}
"""pydantic-evals' arguments that are accepted and have no effect here (see docs/evals.md)."""

_JUDGE_FILE_NAMES = {
    "include_input": "include_question",
    "include_expected_output": "include_expected",
}
"""``LLMJudge``'s pydantic-evals spellings, which files use, and our names for them."""


class SpecError(Exception):
    """An evaluator spec that cannot be used; ``where`` is the argument at fault, if any."""

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.where = where


# -- reading ------------------------------------------------------------------------------------


def evaluator_from_spec(spec: Any) -> Evaluator:
    """The evaluator a spec (``Name``, ``{Name: arg}``, ``{Name: {kwargs}}``) names.

    Raises:
        SpecError: not one of the three forms, an unknown evaluator, one without a counterpart
            here, a missing, unknown or wrong argument.
    """
    name, args, kwargs = _split(spec)
    if name in NO_COUNTERPART:
        raise SpecError(
            f"pydantic-evals' evaluator {name!r} has no counterpart in rxreact "
            f"({NO_COUNTERPART[name]})"
        )
    cls = REGISTRY.get(name)
    if cls is None:
        raise SpecError(f"unknown evaluator {name!r}; the known ones are {', '.join(REGISTRY)}")
    fields = init_fields(cls)
    if args:
        if not fields:
            raise SpecError(f"{name} takes no arguments, got {args[0]!r}")
        kwargs = {fields[0].name: args[0]}
    kwargs = {k: v for k, v in kwargs.items() if k not in IGNORED_ARGUMENTS.get(name, ())}
    if cls is LLMJudge:
        kwargs = _judge_arguments(kwargs)
    if name == "Contains" and "as_strings" in kwargs:
        as_strings = kwargs.pop("as_strings")
        if as_strings is True:
            return _contains_as_text(kwargs, fields)
        if as_strings is not False:
            raise SpecError(f"must be true or false, got {as_strings!r}", "as_strings")
    if name in ("MaxDuration", "FirstTokenWithin") and "seconds" in kwargs:
        kwargs["seconds"] = _seconds(kwargs["seconds"])
    if name == "MaxToolCalls" and kwargs.pop("include_failed", True) is not True:
        raise SpecError(
            "include_failed: false has no counterpart: rxreact's MaxToolCalls counts every call "
            "made, failed or not",
            "include_failed",
        )
    return _construct(cls, fields, kwargs)


def _split(spec: Any) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """``(name, positional args, keyword args)`` of a spec in one of pydantic-evals' forms."""
    if isinstance(spec, str):
        return spec, (), {}
    if isinstance(spec, Mapping):
        if len(spec) != 1:
            raise SpecError(
                f"an evaluator is written Name, {{Name: argument}} or {{Name: {{arguments}}}}; "
                f"this mapping has {len(spec)} keys ({', '.join(map(str, spec))})"
            )
        ((name, value),) = spec.items()
        if not isinstance(name, str):
            raise SpecError(f"an evaluator's name must be a string, got {name!r}")
        # As pydantic-evals reads it: a mapping with string keys is keyword arguments.
        if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
            return name, (), dict(value)
        return name, (value,), {}
    raise SpecError(
        f"an evaluator is written Name, {{Name: argument}} or {{Name: {{arguments}}}}, got {spec!r}"
    )


def init_fields(cls: type) -> list[dataclasses.Field[Any]]:
    """The fields an evaluator class is constructed from (its file arguments)."""
    return [f for f in dataclasses.fields(cls) if f.init]


def _judge_arguments(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``LLMJudge``'s file arguments as ours. A file means what pydantic-evals means by it, so
    the question and the expected answer are shown only when asked for (pydantic-evals'
    defaults, not the Python class's)."""
    if "model_settings" in kwargs:
        raise SpecError(
            "model_settings has no counterpart: configure the judge's model itself "
            "(a 'provider:model' string here uses the environment's settings)",
            "model_settings",
        )
    out = dict(kwargs)
    for theirs, ours in _JUDGE_FILE_NAMES.items():
        if theirs in out and ours in out:
            raise SpecError(f"give {theirs} or {ours}, not both", theirs)
        out[ours] = out.pop(theirs, out.get(ours, False))
    return out


def _contains_as_text(kwargs: dict[str, Any], fields: list[dataclasses.Field[Any]]) -> Evaluator:
    """``Contains(..., as_strings=True)``: pydantic-evals compares ``str(output)``; the text of
    an rxreact answer is its answer, so this is a literal search of the answer's text."""
    unknown = set(kwargs) - {f.name for f in fields}
    if unknown:
        raise SpecError(f"unknown argument {sorted(unknown)[0]!r} of Contains", sorted(unknown)[0])
    if "value" not in kwargs:
        raise SpecError("Contains needs its value", "value")
    sensitive = kwargs.get("case_sensitive", True)
    if not isinstance(sensitive, bool):
        raise SpecError(f"must be true or false, got {sensitive!r}", "case_sensitive")
    return Matches(("" if sensitive else "(?i)") + re.escape(str(kwargs["value"])))


_TIMEDELTA = TypeAdapter(timedelta)


def _seconds(value: Any) -> float:
    """A duration as pydantic-evals writes it: a number of seconds, or ISO 8601 (``PT2.5S``,
    what its ``to_file`` makes of a ``timedelta``)."""
    if isinstance(value, bool):
        raise SpecError(
            f"must be a number of seconds or an ISO 8601 duration, got {value!r}", "seconds"
        )
    if isinstance(value, int | float):
        return float(value)
    try:
        return _TIMEDELTA.validate_python(value).total_seconds()
    except ValidationError:
        raise SpecError(
            f"must be a number of seconds or an ISO 8601 duration (PT2.5S), got {value!r}",
            "seconds",
        ) from None


def _construct(
    cls: type[Evaluator], fields: list[dataclasses.Field[Any]], kwargs: dict[str, Any]
) -> Evaluator:
    names = [f.name for f in fields]
    for key in kwargs:
        if key not in names:
            known = f"its arguments are {', '.join(names)}" if names else "it takes none"
            raise SpecError(f"unknown argument {key!r} of {cls.__name__} ({known})", key)
    for f in fields:
        if f.name not in kwargs and is_required(f):
            raise SpecError(f"{cls.__name__} needs its argument {f.name!r}", f.name)
    hints = field_hints(cls)
    for key, value in kwargs.items():
        _check_type(cls, key, value, hints.get(key))
    try:
        return cls(**kwargs)
    except (TypeError, ValueError, re.error) as error:  # the class's own checks (a bad regex)
        raise SpecError(f"{cls.__name__}: {error}") from None


def is_required(f: dataclasses.Field[Any]) -> bool:
    """A field without a default: a file must give it."""
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def field_hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of ``cls``'s fields (none when one cannot be resolved)."""
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation that names a type only imported for checking
        return {}


def _check_type(cls: type, key: str, value: Any, hint: Any) -> None:
    """A wrong scalar argument is named when the file is read, not when the first run is
    scored. Structured ones (``ToolCalls``' expected calls) are checked by the class itself."""
    if not (hint in (int, float, bool, str) or typing.get_origin(hint) is typing.Literal):
        return
    try:
        TypeAdapter(hint).validate_python(value, strict=True)
    except ValidationError as error:
        message = error.errors()[0]["msg"]
        raise SpecError(
            f"{cls.__name__}'s {key}: {message[0].lower()}{message[1:]}, got {value!r}", key
        ) from None


# -- writing ------------------------------------------------------------------------------------


def evaluator_spec(evaluator: Any) -> Any:
    """An evaluator as pydantic-evals' ``to_file`` writes one.

    Raises:
        SpecError: a function (only the built-in evaluators have a name a file can hold), or an
            argument a file cannot hold (a predicate, a model object).
    """
    if not isinstance(evaluator, Evaluator) or type(evaluator).__name__ not in REGISTRY:
        name = getattr(evaluator, "__name__", type(evaluator).__name__)
        raise SpecError(
            f"evaluator {name!r} is a function or a class of its own; a file holds only the "
            f"built-in evaluators ({', '.join(REGISTRY)})"
        )
    name = type(evaluator).__name__
    fields = init_fields(type(evaluator))
    arguments = {
        f.name: _plain(name, f.name, getattr(evaluator, f.name))
        for f in fields
        if is_required(f) or getattr(evaluator, f.name) != _default(f)
    }
    if isinstance(evaluator, LLMJudge):
        arguments = _judge_file_arguments(evaluator, arguments)
    if not arguments:
        return name
    if len(arguments) == 1 and fields and next(iter(arguments)) == fields[0].name:
        (value,) = arguments.values()
        if not isinstance(value, dict):  # a dict would read back as keyword arguments
            return {name: value}
    return {name: arguments}


def _default(f: dataclasses.Field[Any]) -> Any:
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def _judge_file_arguments(judge: LLMJudge, arguments: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in arguments.items() if k not in ("include_question", "include_expected")}
    for theirs, ours in _JUDGE_FILE_NAMES.items():
        if getattr(judge, ours):  # pydantic-evals' default is False: written when True
            out[theirs] = True
    if judge.model is not None and not isinstance(judge.model, str):
        raise SpecError(
            "LLMJudge's model is an object; a file holds a 'provider:model' string", "model"
        )
    return out


def _plain(evaluator: str, key: str, value: Any) -> Any:
    """``value`` as YAML and JSON hold it (tuples as lists), or :class:`SpecError`."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, tuple | list):
        return [_plain(evaluator, key, v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(evaluator, key, v) for k, v in value.items()}
    if isinstance(value, Callable):  # type: ignore[arg-type]  # typing's Callable works here
        raise SpecError(
            f"{evaluator}'s {key} holds a function ({getattr(value, '__name__', value)!r}); a "
            f"file holds values only",
            key,
        )
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json")
    raise SpecError(f"{evaluator}'s {key} holds {value!r}, which a file cannot hold", key)
