"""Tools: the ``@tool`` decorator, the JSON schema from a signature, and running one call.

A tool is a plain function. Its docstring becomes the description, its signature the JSON
schema (through pydantic, so ``Annotated[int, Field(ge=0, description=...)]``, enums, models and
defaults all work). These kinds run the same way, as an ``Observable`` of one result:

- a sync function runs on the tools scheduler (a thread pool, or virtual time in tests);
- an ``async def`` runs on rxreact's I/O event loop;
- a function returning an ``Observable`` is subscribed to; its last value is the result;
- an async generator runs on the I/O loop; its last value is the result.

Tools can report progress (``tool_progress`` events): the values of an Observable or an async
generator before its last one (each reported when the next one arrives, since only then is it
known not to be the result), or, at once, every call of a parameter named ``progress``
(annotated as a callable, e.g. ``Callable[[Any], None]``), which receives a function. A
parameter annotated :class:`~rxreact.cancellation.CancellationToken` receives the call's token,
and a first parameter annotated :class:`~rxreact.RunContext` (``RunContext[Deps]``) the run's
context: its ``deps``, ids, round, usage so far. None of them is part of the schema.

What the model reads for a return value is ruled by :mod:`rxreact.tools.results`. A tool that
raises anything, ``SystemExit`` and ``KeyboardInterrupt`` included, gives an error result
(:class:`ToolInterruptedError` for a ``BaseException``); the run goes on.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar, overload

from pydantic import BaseModel, ValidationError
from reactivex import Observable, abc

from rxreact._validate import (
    check_optional_int,
    check_optional_seconds,
    check_optional_str,
    described,
)
from rxreact.cancellation import CancellationToken
from rxreact.errors import InvalidArgumentError, ToolDefinitionError
from rxreact.messages import ToolSpec
from rxreact.rx._call_once import ToolInterruptedError, call_once
from rxreact.tools._signature import arguments_of
from rxreact.tools.nesting import NestedRun
from rxreact.tools.results import DEFAULT_MAX_RESULT_CHARS
from rxreact.tools.run_context import RunContext

__all__ = ["TOOL_NAME", "Tool", "ToolArgumentsError", "ToolInterruptedError", "tool"]

TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""The tool names model providers accept (OpenAI's rule, the strictest common one)."""


class ToolArgumentsError(Exception):
    """Arguments the model sent do not fit the tool; the message is written for the model.

    Internal to a run: it becomes an error ``tool_result``, never an ``on_error``.
    """


P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, eq=False)
class Tool(Generic[P, R]):
    """A function the model can call. Build one with :func:`tool`.

    Generic in the function's parameters and result, so calling a decorated function directly
    type-checks as the function itself: ``get_weather("Paris")`` is a ``str``.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments object."""
    function: Callable[P, R]
    timeout: float | None = None
    """Seconds before the call is abandoned with an error result; ``None``: the agent's default."""
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS
    """The longest result the model reads; a longer one is cut with a visible marker
    (:func:`~rxreact.tools.results.truncate_result`). ``None``: no limit."""
    requires_approval: bool | Callable[[dict[str, Any]], bool] = False
    """Ask before running: always, or when this predicate on the parsed arguments is true."""
    idempotent: bool = False
    """Running a call twice does no harm: a run resumed by another worker (its process
    stopped during the call, before the result was recorded) runs it again. Otherwise such a
    call gets an error result instead, and never runs twice."""
    _arguments_model: type[BaseModel] | None = None
    _nested: NestedRun | None = None
    """Set on an agent tool: inside a run, the call runs this, nested in the calling run
    (its events in the caller's stream); ``function`` is how it runs anywhere else."""
    _token_parameter: str | None = None
    _progress_parameter: str | None = None
    _context_parameter: str | None = None

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the underlying function directly (a decorated function stays callable)."""
        return self.function(*args, **kwargs)

    def needs_approval(self, arguments: dict[str, Any]) -> bool:
        """Whether a call with these (parsed) arguments must be approved before it runs."""
        rule = self.requires_approval
        return bool(rule(arguments)) if callable(rule) else rule

    @functools.cached_property
    def spec(self) -> ToolSpec:
        """The declaration sent to the model."""
        # Made once (ToolSpec is frozen): every request of every run offers it, and a new one
        # per request (a model, its dict and its fields set) lived as long as that request.
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def parse_arguments(self, raw: str) -> dict[str, Any]:
        """Decode and validate the model's raw JSON arguments.

        Raises:
            ToolArgumentsError: not JSON, not an object, or not matching the schema; the message
                says what is wrong in words the model can act on.
        """
        try:
            decoded = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as error:
            raise ToolArgumentsError(
                f"the arguments are not valid JSON ({error.msg} at position {error.pos}); "
                f"send one JSON object matching the schema {json.dumps(self.parameters)}"
            ) from None
        except RecursionError:
            # Nested deeper than the interpreter's stack allows (``[[[[...``): the model's
            # mistake, not the run's end.
            raise ToolArgumentsError(
                "the arguments are nested too deeply to be read; "
                f"send one flat JSON object matching the schema {json.dumps(self.parameters)}"
            ) from None
        if not isinstance(decoded, dict):
            raise ToolArgumentsError(
                f"the arguments must be a JSON object, got {type(decoded).__name__}; "
                f"schema: {json.dumps(self.parameters)}"
            )
        if self._arguments_model is None:
            return decoded
        try:
            model = self._arguments_model.model_validate(decoded)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(object)'}: {e['msg']}"
                for e in error.errors()
            )
            raise ToolArgumentsError(f"invalid arguments: {problems}") from None
        return {name: getattr(model, name) for name in type(model).model_fields}

    def invoke(
        self,
        arguments: Mapping[str, Any],
        token: CancellationToken,
        scheduler: abc.SchedulerBase,
        progress: Callable[[Any], None] | None = None,
        context: RunContext[Any] | None = None,
    ) -> Observable[Any]:
        """Run the tool once, as a cold ``Observable`` of its one result.

        ::

            sync / async:     ----------r|      (r on the tools scheduler / the event loop)
            observable:       --a--b--c|  ->  --------c|    progress a at b, b at c
            async generator:  --a--b--c|  ->  --------c|    progress a at b, b at c
            progress(v) calls from the function: progress v at once; the return value is
            the result

        Disposing sets ``token``; a result or progress that arrives afterwards is dropped.

        Args:
            arguments: the parsed arguments.
            token: set when the call is disposed.
            scheduler: where a sync tool runs and an observable tool is subscribed.
            progress: called with every intermediate value (from the tool's thread or the
                event loop).
            context: what a ``RunContext`` parameter receives (default: one without deps or
                run, for a call outside any run).
        """
        kwargs = dict(arguments)
        function: Callable[..., Any] = self.function  # called with the model's arguments
        if self._token_parameter is not None:
            kwargs[self._token_parameter] = token
        if self._context_parameter is not None:
            kwargs[self._context_parameter] = context or RunContext(
                None, "", None, 0, None, "", cancellation=token
            )

        return call_once(
            function,
            (),
            kwargs,
            token,
            scheduler,
            progress=progress,
            progress_parameter=self._progress_parameter,
        )


@overload
def tool(function: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    requires_approval: bool | Callable[[dict[str, Any]], bool] = False,
    idempotent: bool = False,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    function: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    requires_approval: bool | Callable[[dict[str, Any]], bool] = False,
    idempotent: bool = False,
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Make a function a :class:`Tool`; use bare (``@tool``) or with options (``@tool(timeout=5)``).

    Args:
        function: the function (sync, ``async def``, or returning an ``Observable``).
        name: the name the model sees (default: the function's name).
        description: what the model reads (default: the docstring).
        timeout: seconds before a call fails with an error result (default: the agent's).
        max_result_chars: the longest result the model reads (default
            :data:`~rxreact.tools.results.DEFAULT_MAX_RESULT_CHARS`); longer ones are cut with a
            visible marker. How return values become text: :mod:`rxreact.tools.results`.
        requires_approval: ask before each call (``True``), or when this predicate on the
            parsed arguments says so; see :mod:`rxreact.tools.approval`.
        idempotent: a second call with the same arguments does no harm, so a run resumed
            after its worker stopped mid-call may run the call again (see ``docs/runs.md``).

    Raises:
        InvalidArgumentError: an option of the wrong type or value (``timeout="5"``,
            ``max_result_chars=-5``), when ``tool(...)`` is called; the message names it.
        ToolDefinitionError: ``*args``/``**kwargs``, a parameter without an annotation or with a
            type that has no JSON schema, a name providers reject (``^[a-zA-Z0-9_-]{1,64}$``),
            or no description at all.
    """
    check_optional_str("name", name)
    check_optional_str("description", description)
    check_optional_seconds("timeout", timeout)
    check_optional_int("max_result_chars", max_result_chars, 1)
    if not isinstance(requires_approval, bool) and not callable(requires_approval):
        raise InvalidArgumentError(
            f"requires_approval must be True, False or a predicate on the arguments, got "
            f"{described(requires_approval)}"
        )

    def build(fn: Callable[P, R]) -> Tool[P, R]:
        built = _build_tool(fn, name=name, description=description, timeout=timeout)
        if max_result_chars != built.max_result_chars:
            built = dataclasses.replace(built, max_result_chars=max_result_chars)
        if requires_approval:
            built = dataclasses.replace(built, requires_approval=requires_approval)
        if idempotent:
            built = dataclasses.replace(built, idempotent=True)
        return built

    return build(function) if function is not None else build


def as_tool(value: Tool[..., Any] | Callable[..., Any]) -> Tool[..., Any]:
    """``value`` itself if it is a :class:`Tool`, else ``tool(value)``."""
    return value if isinstance(value, Tool) else tool(value)


def _build_tool(
    fn: Callable[P, R], *, name: str | None, description: str | None, timeout: float | None
) -> Tool[P, R]:
    if not callable(fn):
        raise ToolDefinitionError(f"a tool must be a function, got {fn!r}")
    tool_name = name or getattr(fn, "__name__", None)
    if not tool_name:
        raise ToolDefinitionError(f"{fn!r} has no __name__; pass name=")
    if not TOOL_NAME.fullmatch(tool_name):
        raise ToolDefinitionError(
            f"tool name {tool_name!r} is not accepted by model providers: use 1 to 64 letters, "
            f"digits, '_' or '-'" + ("" if name else " (pass name=...)")
        )
    text = description or inspect.getdoc(fn)
    if not text:
        raise ToolDefinitionError(
            f"tool {tool_name!r} has no description: give the function a docstring"
        )
    fills = arguments_of(fn, tool_name)
    return Tool(
        name=tool_name,
        description=text,
        parameters=fills.schema,
        function=fn,
        timeout=timeout,
        _arguments_model=fills.model,
        _token_parameter=fills.token,
        _progress_parameter=fills.progress,
        _context_parameter=fills.context,
    )
