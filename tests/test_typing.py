"""Types that help: events_of narrows the event union, @tool keeps the signature.

(``make lint`` checks the public API's type completeness: pyright --verifytypes rxreact.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from reactivex.testing import ReactiveTest, TestScheduler

from rxreact import FinalAnswer, RoundStarted, TextDelta, events_of

on_next, on_completed = ReactiveTest.on_next, ReactiveTest.on_completed


def test_events_of_keeps_only_those_events_in_marbles() -> None:
    started = RoundStarted(round=1)
    delta = TextDelta(round=1, delta="Sunny")
    final = FinalAnswer(round=1, text="Sunny", rounds=1, forced=False, usage=None)

    def run(*kinds: type[Any]) -> list[Any]:
        scheduler = TestScheduler()
        source = scheduler.create_cold_observable(
            on_next(10, started), on_next(20, delta), on_next(30, final), on_completed(40)
        )
        return scheduler.start(lambda: source.pipe(events_of(*kinds))).messages

    assert run(FinalAnswer) == [on_next(230, final), on_completed(240)]
    assert run(TextDelta, FinalAnswer) == [
        on_next(220, delta),
        on_next(230, final),
        on_completed(240),
    ]


def test_events_of_needs_a_class() -> None:
    with pytest.raises(TypeError, match="at least one event class"):
        events_of()


def _pyright() -> list[str]:
    """The pyright command of this environment (the lint extra installs it), or skip."""
    exe = shutil.which("pyright", path=str(Path(sys.executable).parent)) or shutil.which("pyright")
    if exe is None:
        pytest.skip("pyright is not installed (pip install -e '.[lint]')")
    return [exe]


def _run_pyright(args: list[str], cwd: Path) -> dict[str, Any]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [*_pyright(), "--outputjson", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        pytest.skip(f"pyright did not run: {done.stdout[-300:]} {done.stderr[-300:]}")
    return report


USER_SCRIPT = '''
from typing import assert_type

from reactivex import Observable

from rxreact import FinalAnswer, ReactAgent, ScriptedModel, events_of, tool


@tool
def get_weather(city: str, days: int = 1) -> str:
    """Current weather."""
    return f"{city} in {days} days"


@tool(timeout=5)
async def get_forecast(city: str) -> list[str]:
    """The week's forecast."""
    return [city]


assert_type(get_weather("Paris"), str)


async def main() -> None:
    assert_type(await get_forecast("Paris"), list[str])


assert_type(get_weather("Paris", days=2), str)
get_weather(42)  # the one error expected: an int is not a str

agent = ReactAgent(ScriptedModel([]), [get_weather])
finals = agent.stream("q").pipe(events_of(FinalAnswer))
assert_type(finals, Observable[FinalAnswer])
for piece in agent.iter_text("q"):
    assert_type(piece, str)
'''


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Both scripts written out and checked by one pyright run (its start and its reading of
    rxreact are most of the time): the user script in basic mode, the run-context one strict
    (its ``# pyright: strict`` comment)."""
    where = tmp_path_factory.mktemp("typing")
    (where / "user.py").write_text(USER_SCRIPT)
    (where / "desk.py").write_text(RUN_CONTEXT_SCRIPT)
    return where, _run_pyright(["--pythonversion", "3.11", "user.py", "desk.py"], cwd=where)


def _errors(report: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [
        d
        for d in report["generalDiagnostics"]
        if d["severity"] == "error" and Path(d["file"]).name == name
    ]


@pytest.mark.integration
@pytest.mark.timeout(300)  # pyright on a loaded machine
def test_a_user_script_type_checks(checked: tuple[Path, dict[str, Any]]) -> None:
    errors = _errors(checked[1], "user.py")
    lines = [d["range"]["start"]["line"] + 1 for d in errors]
    expected = (
        USER_SCRIPT.splitlines().index(
            "get_weather(42)  # the one error expected: an int is not a str"
        )
        + 1
    )
    assert lines == [expected], [d["message"] for d in errors]


RUN_CONTEXT_SCRIPT = '''# pyright: strict
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

from typing_extensions import assert_type

from rxreact import ReactAgent, RunContext, RunInfo, ScriptedModel, Tool, tool


class Desk(NamedTuple):
    user: str
    units: str


@tool
def get_weather(ctx: RunContext[Desk], city: str) -> str:
    """Current weather for a city."""
    assert_type(ctx.deps, Desk)
    return f"{city}: 12°{ctx.deps.units} for {ctx.deps.user}"


@tool
async def get_forecast(ctx: RunContext[Desk], city: str) -> list[str]:
    """The week's forecast."""
    return [ctx.deps.user, city, ctx.run_id]


def who(ctx: RunContext[Desk]) -> str:
    return f"The user is {ctx.deps.user}."


async def when(ctx: RunContext[Desk]) -> str:
    return f"Round {ctx.round} of {ctx.agent}."


def by_role(ctx: RunContext[Desk], tools: list[Tool[..., Any]]) -> list[Tool[..., Any]]:
    if ctx.deps.user == "admin":
        return tools
    return [dataclasses.replace(t, description="read only") for t in tools]


def deps_for(info: RunInfo) -> Desk:
    return Desk(info.user or "guest", "C")


agent = ReactAgent[Desk](
    ScriptedModel([]),
    [get_weather, get_forecast],
    deps_type=Desk,
    instructions=[who, "Be brief.", when],
    prepare_tools=by_role,
    deps_factory=deps_for,
)
answer: str = agent.call("Weather in Paris?", deps=Desk("alice", "C"))
assert_type(agent.deps_type, "type[Desk] | None")
plain = ReactAgent(ScriptedModel([]))
assert_type(plain, ReactAgent[None])
plain.call("Hi")
'''


@pytest.mark.integration
@pytest.mark.timeout(300)  # mypy on a loaded machine
def test_the_documented_run_context_example_type_checks_strictly(
    checked: tuple[Path, dict[str, Any]],
) -> None:
    where, report = checked
    assert [d["message"] for d in _errors(report, "desk.py")] == []
    script = where / "desk.py"
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(script)],
        capture_output=True,
        text=True,
        cwd=where,
        timeout=300,
    )
    if "No module named mypy" in done.stderr:
        pytest.skip("mypy is not installed (pip install -e '.[lint]')")
    assert done.returncode == 0, done.stdout
