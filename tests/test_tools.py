"""@tool: schemas from signatures, argument checks, and the three kinds of tool on real threads."""

from __future__ import annotations

import asyncio
import threading
from enum import Enum
from typing import Annotated, Any

import pytest
import reactivex
from pydantic import BaseModel, Field
from reactivex import operators as ops
from reactivex.scheduler import ThreadPoolScheduler

from rxreact import CancellationToken, ToolDefinitionError, tool
from rxreact.tools.tool import Tool, ToolArgumentsError

POOL = ThreadPoolScheduler(4)


class Unit(Enum):
    C = "celsius"
    F = "fahrenheit"


@tool
def forecast(
    city: Annotated[str, Field(description="City name")],
    days: Annotated[int, Field(ge=1, le=7)] = 3,
    unit: Unit = Unit.C,
) -> str:
    """Forecast for a city.

    Longer explanation stays in the description.
    """
    return f"{city} {days} {unit.value}"


def result_of(t: Tool, arguments: dict[str, Any], token: CancellationToken | None = None) -> Any:
    done = threading.Event()
    box: dict[str, Any] = {}

    def on_next(v: Any) -> None:
        box["value"] = v

    def on_error(e: Exception) -> None:
        box["error"] = e
        done.set()

    t.invoke(arguments, token or CancellationToken(), POOL).subscribe(on_next, on_error, done.set)
    assert done.wait(10)
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_schema_and_description_come_from_the_function() -> None:
    assert forecast.name == "forecast"
    assert forecast.description.startswith("Forecast for a city.\n\nLonger explanation")
    schema = forecast.parameters
    assert schema["required"] == ["city"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["city"] == {"description": "City name", "type": "string"}
    assert schema["properties"]["days"]["maximum"] == 7
    assert forecast.spec.name == "forecast"
    assert forecast("Oslo") == "Oslo 3 celsius"  # still callable


def test_arguments_are_validated_and_coerced() -> None:
    assert forecast.parse_arguments('{"city": "Oslo", "unit": "fahrenheit"}') == {
        "city": "Oslo",
        "days": 3,
        "unit": Unit.F,
    }
    with pytest.raises(ToolArgumentsError, match="days: Input should be less than or equal to 7"):
        forecast.parse_arguments('{"city": "Oslo", "days": 9}')
    with pytest.raises(ToolArgumentsError, match="must be a JSON object"):
        forecast.parse_arguments("[1]")
    assert tool(lambda: "x", name="noargs", description="d").parse_arguments("") == {}


def test_bad_definitions_are_rejected() -> None:
    def undocumented(x: int) -> int:
        return x

    def variadic(*args: int) -> int:
        """Variadic."""
        return 0

    with pytest.raises(ToolDefinitionError, match="docstring"):
        tool(undocumented)
    with pytest.raises(ToolDefinitionError, match=r"\*args"):
        tool(variadic)


def test_sync_tool_runs_on_the_tools_pool() -> None:
    caller = threading.get_ident()

    @tool
    def where() -> int:
        """Which thread."""
        return threading.get_ident()

    assert result_of(where, {}) != caller


def test_async_and_observable_tools() -> None:
    @tool
    async def later(x: int) -> int:
        """Async tool."""
        await asyncio.sleep(0)
        return x * 2

    @tool(name="obs")
    def observable(n: int) -> reactivex.Observable[int]:
        """Observable tool: its last value is the result."""
        return reactivex.range(n).pipe(ops.map(lambda i: i * 10))

    class Out(BaseModel):
        a: int

    @tool
    def structured() -> Out:
        """Returns a model."""
        return Out(a=1)

    assert result_of(later, {"x": 21}) == 42
    assert result_of(observable, {"n": 4}) == 30
    assert result_of(structured, {}) == Out(a=1)


def test_exceptions_travel_as_errors() -> None:
    @tool
    async def broken() -> None:
        """Fails."""
        raise KeyError("nope")

    with pytest.raises(KeyError):
        result_of(broken, {})


def test_dispose_sets_the_token_and_drops_the_late_result() -> None:
    entered = threading.Event()
    seen: list[Any] = []

    @tool
    def waits(token: CancellationToken) -> str:
        """Waits to be cancelled."""
        entered.set()
        token.wait(10)
        return "late"

    token = CancellationToken()
    subscription = waits.invoke({}, token, POOL).subscribe(seen.append)
    assert entered.wait(10)
    subscription.dispose()
    assert token.cancelled
    assert seen == []


def test_arguments_nested_a_million_deep_are_an_arguments_error() -> None:
    with pytest.raises(ToolArgumentsError, match="nested too deeply"):
        forecast.parse_arguments("[" * 10**6 + "]" * 10**6)
