"""A function's signature as a tool's arguments: the pydantic model that checks what the model
sends, its JSON schema, and the parameters rxreact fills itself (a cancellation token, a
progress callback, the run context), which are not part of the schema."""

from __future__ import annotations

import collections.abc
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, TypeAdapter, create_model

from rxreact.cancellation import CancellationToken
from rxreact.errors import ToolDefinitionError
from rxreact.tools.run_context import is_run_context

__all__ = ["PROGRESS_PARAMETER", "Fills", "arguments_of"]

PROGRESS_PARAMETER = "progress"
"""A tool parameter of this name, annotated as a callable, receives a function that reports an
intermediate value; it is not part of the schema."""


class Fills(NamedTuple):
    """A function's arguments as a tool's: what the model sends, and what rxreact fills."""

    model: type[BaseModel]
    schema: dict[str, Any]
    token: str | None
    """The parameter annotated ``CancellationToken``, if any."""
    progress: str | None
    """The ``progress`` callback parameter, if any."""
    context: str | None
    """The first parameter, when it is annotated ``RunContext`` (or ``RunContext[Deps]``)."""


def arguments_of(fn: Callable[..., Any], tool_name: str) -> Fills:
    """``fn``'s arguments model, its JSON schema, and the names of the parameters rxreact
    fills itself (``None`` when it has none).

    Raises:
        ToolDefinitionError: a parameter without an annotation, ``*args``/``**kwargs``, or a
            type with no JSON schema (the message names the parameter).
    """
    try:
        hints = _parameter_hints(fn)
    except Exception as error:
        raise ToolDefinitionError(f"tool {tool_name!r}: cannot read annotations: {error}") from None
    fields: dict[str, Any] = {}
    token_parameter = None
    progress_parameter = None
    context_parameter = None
    for position, parameter in enumerate(inspect.signature(fn).parameters.values()):
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise ToolDefinitionError(f"tool {tool_name!r}: *args/**kwargs cannot be described")
        if parameter.name not in hints:
            raise ToolDefinitionError(
                f"tool {tool_name!r}: parameter {parameter.name!r} has no type annotation; "
                f"annotate it (e.g. {parameter.name}: str) so the model knows what to send"
            )
        annotation = hints[parameter.name]
        if is_run_context(annotation):
            if position:
                raise ToolDefinitionError(
                    f"tool {tool_name!r}: the RunContext parameter {parameter.name!r} must be "
                    f"the first one"
                )
            context_parameter = parameter.name
            continue
        if annotation is CancellationToken:
            token_parameter = parameter.name
            continue
        if parameter.name == PROGRESS_PARAMETER and _is_callback(annotation):
            progress_parameter = parameter.name
            continue
        _check_schema(tool_name, parameter.name, annotation)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    try:
        arguments_model = create_model(
            f"{tool_name}_arguments",
            __config__=ConfigDict(extra="forbid"),
            **fields,
        )
        schema = _tidy_schema(arguments_model.model_json_schema())
    except Exception as error:
        raise ToolDefinitionError(f"tool {tool_name!r}: {error}") from None
    return Fills(arguments_model, schema, token_parameter, progress_parameter, context_parameter)


def _check_schema(tool_name: str, parameter: str, annotation: Any) -> None:
    """Refuse a parameter type with no JSON schema, naming the parameter, not pydantic's insides."""
    try:
        TypeAdapter(annotation).json_schema()
    except Exception:
        kind = getattr(annotation, "__qualname__", None) or repr(annotation)
        raise ToolDefinitionError(
            f"tool {tool_name!r}: parameter {parameter!r} has type {kind}, which has no JSON "
            f"schema; use str, int, float, bool, a list or dict of those, an Enum or Literal, "
            f"a dataclass, TypedDict or pydantic model"
        ) from None


def _parameter_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """Resolved parameter annotations. The return annotation is skipped: it does not matter
    to the schema, and under postponed evaluation it may name a class local to a function."""
    annotations = {k: v for k, v in getattr(fn, "__annotations__", {}).items() if k != "return"}
    holder = type("_Parameters", (), {"__annotations__": annotations})
    try:
        local_names = dict(inspect.getclosurevars(fn).nonlocals)
    except (TypeError, ValueError):
        local_names = {}
    return get_type_hints(
        holder, globalns=getattr(fn, "__globals__", {}), localns=local_names, include_extras=True
    )


def _tidy_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's generated titles: they cost tokens and tell the model nothing."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def _is_callback(annotation: Any) -> bool:
    return annotation is Any or collections.abc.Callable in (annotation, get_origin(annotation))
