"""``rxreact eval``: the real command in its own process, against the loopback weather desk:
every exit status (0, 1 below the pass rate or on a regression, 2 on bad input, 130 on
Ctrl-C with what finished written), re-scoring with no model at all."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rxreact.cli import main
from rxreact.evals import Report
from rxreact.messages import ChatRequest
from rxreact.model.chunks import ChatChunk
from rxreact.model.scripted.replies import Hang, Reply
from rxreact.testing import MockOpenAIServer, weather_desk

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]

AGENTS = '''\
import os
from rxreact import OpenAIChatModel, ReactAgent, tool


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny, 21°C"


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"no results for {query}"


model = OpenAIChatModel("mock", base_url=os.environ["OPENAI_BASE_URL"])
agent = ReactAgent(model, [get_weather])
changed = ReactAgent(model, [search])  # the change under test: the weather tool is gone


def factory(scheduler):
    return ReactAgent(model, [get_weather])


not_an_agent = 42
'''

DATASET = """\
name: weather
cases:
- name: paris
  inputs: What is the weather in Paris?
  evaluators:
  - ToolCalls: [[get_weather, {city: Paris}]]
- name: rome
  inputs: What is the weather in Rome?
  expected_output: "Here is what I found: Rome: sunny, 21°C."
  evaluators: [EqualsExpected]
evaluators:
- {Contains: {value: sunny, case_sensitive: false}}
- NoErrors
- {MaxToolCalls: 1}
"""


class Desk:
    """The weather desk, except a question with "slowly" in it, which never finishes (until
    its client goes away); ``slow_asked`` is set when that request comes in."""

    def __init__(self) -> None:
        self.slow_asked = threading.Event()

    def __call__(self, request: ChatRequest) -> Reply:
        last = request.messages[-1]
        if last.role == "user" and "slowly" in str(last.content):
            self.slow_asked.set()
            return [ChatChunk(role="assistant"), ChatChunk(text="Let me see"), Hang()]
        return weather_desk(request)


@pytest.fixture(scope="module")
def desk() -> Iterator[tuple[MockOpenAIServer, Desk]]:
    script = Desk()
    with MockOpenAIServer(script) as server:
        yield server, script


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory for the module: its agents' module is imported once in this process."""
    path = tmp_path_factory.mktemp("eval")
    (path / "weather_agent.py").write_text(AGENTS)
    (path / "weather.yaml").write_text(DATASET)
    (path / "broken.yaml").write_text("cases: [{name: a\n")
    (path / "unknown.yaml").write_text("cases: [{name: a, inputs: q, evaluators: [Sharpness]}]\n")
    return path


def _env(base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RXREACT_"))}
    env["OPENAI_BASE_URL"] = base_url
    env["PYTHONPATH"] = str(ROOT)
    return env


def _eval(work: Path, base_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``rxreact eval ARGS`` in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "rxreact.cli", "eval", *args],
        cwd=work,
        env=_env(base_url),
        capture_output=True,
        text=True,
        timeout=90,
    )


@pytest.fixture
def here(
    work: Path, desk: tuple[MockOpenAIServer, Desk], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., tuple[int, str, str]]:
    """``rxreact eval ARGS`` in this process (the same ``main``): status, stdout, stderr.
    The process-level behaviour is the subprocess tests'; these check more cases cheaply."""
    server, _ = desk
    monkeypatch.chdir(work)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def run(*args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["eval", *args])
        return status, out.getvalue(), err.getvalue()

    return run


@pytest.fixture(scope="module")
def baseline(work: Path, desk: tuple[MockOpenAIServer, Desk]) -> subprocess.CompletedProcess[str]:
    """The passing evaluation, recorded to runs/ and written to main.json."""
    server, _ = desk
    return _eval(
        work, server.base_url, "weather.yaml", "--agent", "weather_agent:agent",
        "--out", "main.json", "--record", "runs", "--concurrency", "2",
    )  # fmt: skip


def test_a_passing_dataset_exits_0_with_the_table_on_stdout(
    work: Path, baseline: subprocess.CompletedProcess[str]
) -> None:
    assert baseline.returncode == 0, baseline.stderr
    assert "paris" in baseline.stdout and "rome" in baseline.stdout
    assert "pass rate 100.0% (2 of 2 runs)" in baseline.stdout
    assert baseline.stderr == (
        "rxreact eval: 2 run(s) of 2 case(s) in weather.yaml on weather_agent:agent\n"
    )  # not a terminal: no progress bar
    report = Report.from_file(work / "main.json")
    assert [case.name for case in report.cases] == ["paris", "rome"]
    assert sorted(p.name.split("-")[0] for p in (work / "runs").iterdir()) == ["paris", "rome"]


def test_below_the_pass_rate_or_a_regression_exits_1(
    work: Path,
    desk: tuple[MockOpenAIServer, Desk],
    baseline: subprocess.CompletedProcess[str],
    here: Callable[..., tuple[int, str, str]],
) -> None:
    server, _ = desk
    assert baseline.returncode == 0
    # "changed" has no weather tool: paris's ToolCalls fails, rome's answer is not the expected
    worse = _eval(
        work, server.base_url, "weather.yaml", "--agent", "weather_agent:changed",
        "--baseline", "main.json",
    )  # fmt: skip
    assert worse.returncode == 1, worse.stderr
    assert "rxreact eval: pass rate 0.0% is below --min-pass-rate 100.0%" in worse.stderr
    assert "rxreact eval: regressed against main.json: paris, rome" in worse.stderr
    assert "get_weather" in worse.stdout and "search" in worse.stdout  # where the runs part
    # a regression alone fails it, whatever the pass rate
    status, out, err = here(
        "weather.yaml", "--agent", "weather_agent:changed", "--baseline", "main.json",
        "--min-pass-rate", "0",
    )  # fmt: skip
    assert status == 1 and "pass rate" not in err and "regressed against main.json" in err
    # below the bar alone fails it; a lower bar passes
    assert here("weather.yaml", "--agent", "weather_agent:changed")[0] == 1
    assert here("weather.yaml", "--agent", "weather_agent:changed", "--min-pass-rate", "0")[0] == 0
    # a factory, no regression
    status, out, err = here(
        "weather.yaml", "--agent", "weather_agent:factory", "--baseline", "main.json"
    )
    assert status == 0, err
    assert "0 regressed" in out


def test_rescore_needs_no_model(
    work: Path,
    desk: tuple[MockOpenAIServer, Desk],
    baseline: subprocess.CompletedProcess[str],
    here: Callable[..., tuple[int, str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, _ = desk
    assert baseline.returncode == 0
    asked = len(server.requests)
    # nothing listens on port 9 of loopback: a model request would fail the runs
    again = _eval(work, "http://127.0.0.1:9/v1", "--rescore", "runs", "weather.yaml")
    assert again.returncode == 0, again.stderr
    assert "paris" in again.stdout and "pass rate 100.0% (2 of 2 runs)" in again.stdout
    stricter = work / "stricter.yaml"
    stricter.write_text(DATASET.replace("{MaxToolCalls: 1}", "{MaxToolCalls: 0}"))
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    status, out, err = here("--rescore", "runs", "stricter.yaml")
    assert status == 1 and "pass rate 0.0%" in out, err
    assert len(server.requests) == asked


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.yaml", "--agent", "weather_agent:agent"],
         "rxreact eval: cannot use the dataset: missing.yaml: cannot read the dataset file: "
         "No such file or directory"),
        (["weather.yaml", "--agent", "no_such_module:agent"],
         "rxreact eval: --agent no_such_module:agent: cannot import no_such_module: "
         "No module named 'no_such_module'"),
    ],
)  # fmt: skip
def test_bad_input_exits_2_with_one_line(
    work: Path, desk: tuple[MockOpenAIServer, Desk], args: list[str], message: str
) -> None:
    server, _ = desk
    asked = len(server.requests)
    done = _eval(work, server.base_url, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr == message + "\n"  # one line, never a traceback
    assert done.stdout == ""
    assert len(server.requests) == asked  # checked before any run


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["broken.yaml", "--agent", "weather_agent:agent"],
         "rxreact eval: cannot use the dataset: broken.yaml: not valid YAML"),
        (["unknown.yaml", "--agent", "weather_agent:agent"],
         "unknown.yaml, case 'a', field 'evaluators[0]': unknown evaluator 'Sharpness'"),
        (["weather.yaml", "--agent", "weather_agent:nobody"],
         "rxreact eval: --agent weather_agent:nobody: weather_agent has no 'nobody'"),
        (["weather.yaml", "--agent", "weather_agent"],
         "rxreact eval: --agent weather_agent: write MODULE:NAME, e.g. my_agent:agent"),
        (["weather.yaml", "--agent", "weather_agent:not_an_agent"],
         "rxreact eval: --agent weather_agent:not_an_agent: a int, not a ReactAgent or a factory"),
        (["weather.yaml", "--agent", "weather_agent:agent", "--virtual-time"],
         "--virtual-time needs a factory"),
        (["weather.yaml"],
         "rxreact eval: give --agent MODULE:NAME to run the dataset, or --rescore"),
        (["weather.yaml", "--rescore", "nowhere"],
         "rxreact eval: --rescore nowhere: no such directory"),
        (["weather.yaml", "--agent", "weather_agent:agent", "--rescore", "."],
         "rxreact eval: --rescore scores recorded runs without an agent: leave out --agent"),
        (["weather.yaml", "--agent", "weather_agent:agent", "--out", "nowhere/report.json"],
         "rxreact eval: --out nowhere/report.json: its directory does not exist"),
        (["weather.yaml", "--agent", "weather_agent:agent", "--baseline", "broken.yaml"],
         "rxreact eval: --baseline broken.yaml: cannot read the report"),
    ],
)  # fmt: skip
def test_every_bad_input_exits_2_in_the_commands_terms(
    desk: tuple[MockOpenAIServer, Desk],
    here: Callable[..., tuple[int, str, str]],
    args: list[str],
    message: str,
) -> None:
    server, _ = desk
    asked = len(server.requests)
    status, out, err = here(*args)
    assert status == 2 and message in err and out == "", err
    assert len(err.strip().splitlines()) == 1
    assert len(server.requests) == asked


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--min-pass-rate", "2"], "argument --min-pass-rate: must be from 0 to 1, got 2"),
        (["--concurrency", "0"], "argument --concurrency: must be at least 1, got 0"),
        (["--timeout", "-1"], "argument --timeout: must be more than 0, got -1"),
    ],
)
def test_usage_errors_exit_2(
    here: Callable[..., tuple[int, str, str]], args: list[str], message: str, capsys: Any
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["eval", "weather.yaml", "--agent", "weather_agent:agent", *args])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_ctrl_c_exits_130_with_what_finished_written(
    work: Path, desk: tuple[MockOpenAIServer, Desk]
) -> None:
    server, script = desk
    script.slow_asked.clear()
    (work / "slow.yaml").write_text(
        textwrap.dedent(
            """\
            cases:
            - name: paris
              inputs: What is the weather in Paris?
            - name: slow
              inputs: Think it over slowly.
            evaluators: [NoErrors]
            """
        )
    )
    disconnects = server.disconnects
    process = subprocess.Popen(
        [sys.executable, "-m", "rxreact.cli", "eval", "slow.yaml",
         "--agent", "weather_agent:agent", "--concurrency", "1",
         "--out", "partial.json", "--record", "partial_runs"],
        cwd=work, env=_env(server.base_url),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # concurrency 1: "slow" is asked once "paris" has ended
        assert script.slow_asked.wait(30), "the slow case never reached the model"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, err
    assert (
        "rxreact eval: interrupted: 1 run(s) finished; the report of those is in partial.json"
        in err
    )
    assert "Traceback" not in err and out == ""
    assert [case.name for case in Report.from_file(work / "partial.json").cases] == ["paris"]
    assert [p.name.split("-")[0] for p in (work / "partial_runs").iterdir()] == ["paris"]
    # the run in flight was cancelled: its connection closed
    assert server.disconnects > disconnects
