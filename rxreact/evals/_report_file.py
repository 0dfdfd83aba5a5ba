"""A report as one JSON file: ``report.to_file(path)`` / ``Report.from_file(path)``.

::

    {"format": "rxreact.evals.report", "version": 1, "name": ..., "evaluators": [...],
     "interrupted": false,
     "cases": [{"name": "paris", "runs": [{"passed": true,
                                           "results": {"Contains": {"value": true, ...}},
                                           "run": {<the recorded run, events and all>}}]}]}

The runs' events are kept, so a report read back compares (``compare``) and re-scores
(``rescore``) like the one that was written.
"""

from __future__ import annotations

import json
import warnings
from os import PathLike
from pathlib import Path
from typing import Any

from rxreact.evals._recording import run_from_dict, run_to_dict
from rxreact.evals._report import CaseResult, Report, RunResult
from rxreact.evals.errors import RecordingWarning
from rxreact.evals.evaluators._base import EvalResult
from rxreact.messages import Usage

__all__ = ["FORMAT", "VERSION", "load_report", "save_report"]

FORMAT = "rxreact.evals.report"
VERSION = 1


def _result(result: EvalResult) -> dict[str, Any]:
    return {
        "value": result.value,
        "reason": result.reason,
        "passed": result.passed,
        "threshold": result.threshold,
        "usage": None if result.usage is None else result.usage.model_dump(mode="json"),
        "error": result.error,
    }


def save_report(report: Report, path: str | PathLike[str]) -> None:
    """Write ``report`` to ``path`` as JSON."""
    data = {
        "format": FORMAT,
        "version": VERSION,
        "name": report.name,
        "evaluators": list(report.evaluators),
        "interrupted": report.interrupted,
        "cases": [
            {
                "name": case.name,
                "runs": [
                    {
                        "passed": run.passed,
                        "results": {n: _result(r) for n, r in run.results.items()},
                        "run": run_to_dict(run.recording),
                    }
                    for run in case.runs
                ],
            }
            for case in report.cases
        ],
    }
    Path(path).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def load_report(path: str | PathLike[str]) -> Report:
    """Read a report written by :func:`save_report`.

    Raises:
        ValueError: the file is not such a report (the message names it).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ValueError(f"{path}: not a JSON report: {error}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path}: not an rxreact.evals report (no 'format' of one)")
    if int(data.get("version", 0)) > VERSION:
        warnings.warn(
            f"{path}: a report of format version {data.get('version')} (this reads {VERSION})",
            RecordingWarning,
            2,
        )
    cases = []
    for case in data.get("cases", []):
        runs = []
        for run in case.get("runs", []):
            results = {
                name: EvalResult(
                    value=r["value"],
                    reason=r.get("reason", ""),
                    passed=r.get("passed"),
                    threshold=r.get("threshold", 0.5),
                    usage=None if r.get("usage") is None else Usage.model_validate(r["usage"]),
                    error=r.get("error"),
                    name=name,
                )
                for name, r in run.get("results", {}).items()
            }
            recording = run_from_dict(run["run"], str(path))
            runs.append(RunResult(recording, results, bool(run.get("passed"))))
        cases.append(CaseResult(case["name"], tuple(runs)))
    return Report(
        cases,
        name=data.get("name"),
        evaluators=data.get("evaluators", ()),
        interrupted=bool(data.get("interrupted", False)),
    )
