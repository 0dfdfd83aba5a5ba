"""``rxreact eval``: the real command in its own process, against the loopback weather desk:
every exit status (0, 1 below the pass rate or on a regression, 2 on bad input, 130 on
Ctrl-C with what finished written), re-scoring with no model at all."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

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


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "weather_agent.py").write_text(AGENTS)
    (tmp_path / "weather.yaml").write_text(DATASET)
    return tmp_path


def _env(base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RXREACT_"))}
    env["OPENAI_BASE_URL"] = base_url
    env["PYTHONPATH"] = str(ROOT)
    return env


def _eval(work: Path, base_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rxreact.cli", "eval", *args],
        cwd=work,
        env=_env(base_url),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_passing_dataset_exits_0_with_the_table_on_stdout(
    work: Path, desk: tuple[MockOpenAIServer, Desk]
) -> None:
    server, _ = desk
    done = _eval(
        work, server.base_url, "weather.yaml", "--agent", "weather_agent:agent",
        "--out", "report.json", "--record", "runs", "--concurrency", "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "paris" in done.stdout and "rome" in done.stdout
    assert "2 run(s) of 2 case(s) in weather.yaml on weather_agent:agent" in done.stderr
    assert "paris" not in done.stderr  # not a terminal: no progress bar, the table on stdout
    report = json.loads((work / "report.json").read_text())
    assert report  # the report, as Report.to_file writes it
    assert len(list((work / "runs").iterdir())) == 2  # one recording per run


def test_below_the_pass_rate_exits_1_and_a_lower_bar_passes(
    work: Path, desk: tuple[MockOpenAIServer, Desk]
) -> None:
    server, _ = desk
    # "changed" calls search: paris's ToolCalls fails, rome's answer differs
    done = _eval(work, server.base_url, "weather.yaml", "--agent", "weather_agent:changed")
    assert done.returncode == 1, done.stderr
    assert "rxreact eval: pass rate 0.0% is below --min-pass-rate 100.0%" in done.stderr
    assert "paris" in done.stdout
    lenient = _eval(
        work, server.base_url, "weather.yaml", "--agent", "weather_agent:changed",
        "--min-pass-rate", "0",
    )  # fmt: skip
    assert lenient.returncode == 0, lenient.stderr


def test_a_regression_against_the_baseline_exits_1(
    work: Path, desk: tuple[MockOpenAIServer, Desk]
) -> None:
    server, _ = desk
    base = _eval(
        work, server.base_url, "weather.yaml", "--agent", "weather_agent:agent",
        "--out", "main.json",
    )  # fmt: skip
    assert base.returncode == 0, base.stderr
    same = _eval(
        work, server.base_url, "weather.yaml", "--agent", "weather_agent:factory",
        "--baseline", "main.json",
    )  # fmt: skip
    assert same.returncode == 0, same.stderr  # a factory, and no regression
    worse = _eval(
        work, server.base_url, "weather.yaml", "--agent", "weather_agent:changed",
        "--baseline", "main.json", "--min-pass-rate", "0",
    )  # fmt: skip
    assert worse.returncode == 1, worse.stderr
    assert "rxreact eval: regressed against main.json: paris, rome" in worse.stderr
    assert "get_weather" in worse.stdout and "search" in worse.stdout  # where they diverge


def test_rescore_needs_no_model(work: Path, desk: tuple[MockOpenAIServer, Desk]) -> None:
    server, _ = desk
    recorded = _eval(
        work, server.base_url, "weather.yaml", "--agent", "weather_agent:agent", "--record", "runs"
    )
    assert recorded.returncode == 0, recorded.stderr
    asked = len(server.requests)
    # nothing listens on port 9 of loopback: a model request would fail the runs
    again = _eval(work, "http://127.0.0.1:9/v1", "--rescore", "runs", "weather.yaml")
    assert again.returncode == 0, again.stderr
    assert "paris" in again.stdout and "rome" in again.stdout
    assert len(server.requests) == asked
    stricter = work / "stricter.yaml"
    stricter.write_text(DATASET.replace("{MaxToolCalls: 1}", "{MaxToolCalls: 0}"))
    failing = _eval(work, "http://127.0.0.1:9/v1", "--rescore", "runs", "stricter.yaml")
    assert failing.returncode == 1, failing.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.yaml", "--agent", "weather_agent:agent"],
         "rxreact eval: cannot use the dataset: missing.yaml: cannot read the dataset file"),
        (["broken.yaml", "--agent", "weather_agent:agent"],
         "rxreact eval: cannot use the dataset: broken.yaml: not valid YAML"),
        (["unknown.yaml", "--agent", "weather_agent:agent"],
         "unknown.yaml, case 'a', field 'evaluators[0]': unknown evaluator 'Sharpness'"),
        (["weather.yaml", "--agent", "no_such_module:agent"],
         "rxreact eval: --agent no_such_module:agent: cannot import no_such_module: "
         "No module named 'no_such_module'"),
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
        (["weather.yaml", "--agent", "weather_agent:agent", "--rescore", "runs"],
         "rxreact eval: --rescore runs: no such directory"),
        (["weather.yaml", "--agent", "weather_agent:agent", "--baseline", "broken.yaml"],
         "rxreact eval: --baseline broken.yaml: cannot read the report"),
        (["weather.yaml", "--agent", "weather_agent:agent", "--min-pass-rate", "2"],
         "argument --min-pass-rate: must be from 0 to 1, got 2"),
        (["weather.yaml", "--agent", "weather_agent:agent", "--concurrency", "0"],
         "argument --concurrency: must be at least 1, got 0"),
    ],
)  # fmt: skip
def test_bad_input_exits_2_in_the_commands_terms(
    work: Path, desk: tuple[MockOpenAIServer, Desk], args: list[str], message: str
) -> None:
    server, _ = desk
    (work / "broken.yaml").write_text("cases: [{name: a\n")
    (work / "unknown.yaml").write_text("cases: [{name: a, inputs: q, evaluators: [Sharpness]}]\n")
    asked = len(server.requests)
    done = _eval(work, server.base_url, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1  # one line, never a traceback
    assert done.stdout == ""
    assert len(server.requests) == asked  # checked before any run


def test_ctrl_c_exits_130_with_what_finished_written(
    work: Path, desk: tuple[MockOpenAIServer, Desk]
) -> None:
    server, script = desk
    script.slow_asked.clear()
    (work / "slow.yaml").write_text(
        textwrap.dedent(
            """\
            cases:
            - {name: paris, inputs: What is the weather in Paris?}
            - {name: slow, inputs: Think it over slowly.}
            evaluators: [NoErrors]
            """
        )
    )
    disconnects = server.disconnects
    process = subprocess.Popen(
        [sys.executable, "-m", "rxreact.cli", "eval", "slow.yaml",
         "--agent", "weather_agent:agent", "--concurrency", "1",
         "--out", "partial.json", "--record", "runs"],
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
    report = json.loads((work / "partial.json").read_text())
    assert "paris" in json.dumps(report) and "slow" not in json.dumps(report)
    assert [p.name.startswith("paris") for p in (work / "runs").iterdir()] == [True]
    assert (
        server.disconnects > disconnects
    )  # the run in flight was cancelled: its connection closed
