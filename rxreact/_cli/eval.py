"""``rxreact eval``: run a dataset file on an agent, or re-score recorded runs, and exit with
the verdict (for CI).

::

    rxreact eval weather.yaml --agent my_agent:agent --out report.json --baseline main.json
        stderr: progress (a bar on a terminal)      stdout: the report's table, the comparison
        exit:   0 passed   1 below --min-pass-rate, or a regression   2 bad input   130 Ctrl-C

Everything given is checked before the first run (the dataset, the agent's import, the
baseline), so a typo costs no model request. ``rxreact.evals`` is imported only when the
command runs, so ``rxreact --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rxreact._cli.arguments import positive_int
from rxreact._cli.help import command_parser, examples
from rxreact.errors import ConfigurationError, InvalidArgumentError

if TYPE_CHECKING:
    from rxreact.evals import Dataset

__all__ = ["add_eval_command", "run_eval"]

PASSED, FAILED, BAD_INPUT, INTERRUPTED = 0, 1, 2, 130


def add_eval_command(commands: Any) -> None:
    """Register ``eval`` on the ``rxreact`` command's subparsers."""
    parser = command_parser(
        commands,
        "eval",
        help="run a dataset of cases on an agent, score and compare the runs (for CI)",
        description=(
            "Run every case of DATASET (a YAML or JSON file in pydantic-evals' format) on the\n"
            "agent, record and score each run, print the report's table on stdout (progress\n"
            "goes to stderr) and exit 0 when it passes: 1 when the pass rate is below\n"
            "--min-pass-rate or a case regressed against --baseline, 2 on bad input (a\n"
            "dataset that cannot be read, an agent that does not import), 130 on Ctrl-C\n"
            "(the runs that finished are kept: recorded, and written to --out).\n\n"
            "--agent MODULE:NAME names a ReactAgent, or a factory (scheduler) -> ReactAgent\n"
            "(called for every run; with --virtual-time given a TestScheduler). The working\n"
            "directory is importable. --rescore RUNS_DIR scores recorded runs again with the\n"
            "dataset's evaluators, without running the agent or calling its model."
        ),
        epilog=examples(
            ("rxreact eval weather.yaml --agent my_agent:agent", "run, score, print the table"),
            (
                "rxreact eval weather.yaml --agent my_agent:agent --record runs/ --out main.json",
                "keep every run and the report",
            ),
            (
                "rxreact eval weather.yaml --agent my_agent:agent --baseline main.json",
                "exit 1 when a case that passed on main now fails",
            ),
            ("rxreact eval --rescore runs/ weather.yaml", "score the recorded runs again"),
        ),
    )
    parser.add_argument(
        "dataset",
        metavar="DATASET",
        help="the dataset file, .yaml, .yml or .json (required: no default)",
    )
    parser.add_argument(
        "--agent",
        metavar="MODULE:NAME",
        default=None,
        help="the agent, or a factory of agents (no default: required unless --rescore)",
    )
    parser.add_argument(
        "--rescore",
        metavar="RUNS_DIR",
        default=None,
        help="score the runs recorded in RUNS_DIR instead of running the agent (default: run)",
    )
    parser.add_argument(
        "--concurrency", metavar="N", type=positive_int, default=8, help="runs in flight at once"
    )
    parser.add_argument(
        "--repeat", metavar="K", type=positive_int, default=1, help="runs of each case"
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=_positive_float,
        default=None,
        help="seconds a run may take before it fails as timed out (default: no limit)",
    )
    parser.add_argument(
        "--virtual-time",
        action="store_true",
        help="run every case on a TestScheduler (--agent must name a factory)",
    )
    parser.add_argument(
        "--record",
        metavar="DIR",
        default=None,
        help="write every run to DIR as it ends, one JSON-lines file each (default: none)",
    )
    parser.add_argument(
        "--out", metavar="REPORT", default=None, help="write the report as JSON (default: none)"
    )
    parser.add_argument(
        "--baseline",
        metavar="REPORT",
        default=None,
        help="a report to compare with; a regressed case fails the command (default: none)",
    )
    parser.add_argument(
        "--min-pass-rate",
        metavar="X",
        type=_share,
        default=1.0,
        help="the share of runs that must pass, from 0 to 1",
    )
    parser.set_defaults(run=run_eval)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text}")
    return value


class _BadInput(Exception):
    """What the command was given cannot be used: exit 2 with this message."""


def run_eval(args: argparse.Namespace) -> int:
    """Evaluate (or re-score), print, write, compare; the exit status."""
    try:
        dataset, baseline = _inputs(args)
        agent = None if args.rescore else _agent(args)
    except _BadInput as error:
        print(f"rxreact eval: {error}", file=sys.stderr)
        return BAD_INPUT
    from rxreact.evals import EvaluationInterrupted

    try:
        report = _report(args, dataset, agent)
    except EvaluationInterrupted as interrupt:
        partial = interrupt.report
        _write(args.out, partial)
        kept = f"; the report of those is in {args.out}" if args.out else ""
        print(
            f"\nrxreact eval: interrupted: {len(partial.runs)} run(s) finished{kept}",
            file=sys.stderr,
        )
        return INTERRUPTED
    _write(args.out, report)
    print(report)
    status = PASSED
    if report.pass_rate < args.min_pass_rate:
        print(
            f"rxreact eval: pass rate {report.pass_rate:.1%} is below --min-pass-rate "
            f"{args.min_pass_rate:.1%}",
            file=sys.stderr,
        )
        status = FAILED
    if baseline is not None:
        comparison = report.compare(baseline)
        print()
        print(comparison)
        if comparison.regressed:
            names = ", ".join(change.case for change in comparison.regressed)
            print(f"rxreact eval: regressed against {args.baseline}: {names}", file=sys.stderr)
            status = FAILED
    return status


def _inputs(args: argparse.Namespace) -> tuple[Dataset, Any]:
    """The dataset and the baseline report, read before anything runs."""
    if args.rescore is None and args.agent is None:
        raise _BadInput("give --agent MODULE:NAME to run the dataset, or --rescore RUNS_DIR")
    if args.rescore is not None and args.agent is not None:
        raise _BadInput("--rescore scores recorded runs without an agent: leave out --agent")
    if args.rescore is not None and not Path(args.rescore).is_dir():
        raise _BadInput(f"--rescore {args.rescore}: no such directory of recorded runs")
    if args.out is not None and not Path(args.out).resolve().parent.is_dir():
        # found now, not after every case has run
        raise _BadInput(f"--out {args.out}: its directory does not exist")
    from rxreact.evals import Dataset, Report

    try:
        dataset = Dataset.from_file(args.dataset)
    except (InvalidArgumentError, ConfigurationError) as error:
        raise _BadInput(f"cannot use the dataset: {error}") from None
    baseline = None
    if args.baseline is not None:
        try:
            baseline = Report.from_file(args.baseline)
        except Exception as error:  # any file a report cannot be read from: one line
            raise _BadInput(
                f"--baseline {args.baseline}: cannot read the report: {error}"
            ) from None
    return dataset, baseline


def _agent(args: argparse.Namespace) -> Any:
    """The ``ReactAgent`` or factory ``--agent`` names."""
    from rxreact._cli.chat import import_named
    from rxreact.agent.react_agent import ReactAgent

    try:
        value = import_named("--agent", args.agent, "my_agent:agent")
    except ConfigurationError as error:
        raise _BadInput(str(error)) from None
    if isinstance(value, ReactAgent):
        if args.virtual_time:
            raise _BadInput(
                f"--agent {args.agent} is a ReactAgent; --virtual-time needs a factory "
                "(scheduler) -> ReactAgent that builds the agent on the scheduler it is given"
            )
        return value
    if callable(value):
        return value
    raise _BadInput(
        f"--agent {args.agent}: a {type(value).__name__}, not a ReactAgent or a factory "
        "(scheduler) -> ReactAgent"
    )


def _report(args: argparse.Namespace, dataset: Dataset, agent: Any) -> Any:
    if args.rescore is not None:
        from rxreact.evals import rescore

        return rescore(args.rescore, dataset)
    runs = len(dataset.cases) * args.repeat
    print(
        f"rxreact eval: {runs} run(s) of {len(dataset.cases)} case(s) in {args.dataset} "
        f"on {args.agent}",
        file=sys.stderr,
        flush=True,
    )
    return dataset.evaluate(
        agent,
        concurrency=args.concurrency,
        repeat=args.repeat,
        record_to=args.record,
        progress=True,
        timeout=args.timeout,
        virtual_time=args.virtual_time,
    )


def _write(path: str | None, report: Any) -> None:
    if path is not None:
        report.to_file(path)
