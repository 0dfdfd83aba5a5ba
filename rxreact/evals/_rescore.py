"""Re-scoring recorded runs: no agent runs, no request goes to its model.

::

    runs (a report's, or read from record_to) ──► replay in virtual time ──► score ──► Report

``report.rescore(evaluators)`` and ``rescore(runs_dir, dataset_or_evaluators)``. A list of
evaluators replaces the old ones (each recording keeps its case's question, expected output,
metadata and history for them); a ``Dataset`` scores each run with its case's evaluators,
and recordings of cases it does not have are left out (with a warning).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from os import PathLike
from typing import Any

from rxreact.evals._case import Case
from rxreact.evals._dataset import Dataset
from rxreact.evals._recording import read_runs
from rxreact.evals._replay import replay
from rxreact.evals._report import CaseResult, Report, RunResult
from rxreact.evals._run import RecordedRun
from rxreact.evals._score import Scorer
from rxreact.evals.errors import RecordingWarning

__all__ = ["rescore", "rescore_runs"]


def rescore(
    runs_dir: str | PathLike[str], dataset_or_evaluators: Dataset | Sequence[Any]
) -> Report:
    """Score the runs recorded in ``runs_dir`` (``evaluate(..., record_to=runs_dir)``) again.

    Args:
        runs_dir: the directory of recordings.
        dataset_or_evaluators: a ``Dataset`` (each run scored by its case's evaluators), or
            evaluators for every run.

    A recording cut short or written by another version is read as far as it goes, with a
    :class:`~rxreact.evals.errors.RecordingWarning` naming the file.
    """
    return rescore_runs(read_runs(runs_dir), dataset_or_evaluators)


def rescore_runs(
    runs: Sequence[RecordedRun],
    dataset_or_evaluators: Dataset | Sequence[Any],
    *,
    name: str | None = None,
) -> Report:
    """``runs`` replayed in virtual time and scored by ``dataset_or_evaluators``."""
    if isinstance(dataset_or_evaluators, Dataset):
        dataset = dataset_or_evaluators
        cases = {case.name: case for case in dataset.cases}
        order = list(cases)
        strangers = sorted({run.case for run in runs if run.case not in cases})
        if strangers:
            warnings.warn(
                f"recorded runs of cases the dataset does not have were left out: "
                f"{', '.join(strangers)}",
                RecordingWarning,
                3,
            )
            runs = [run for run in runs if run.case in cases]
        scorer = Scorer(dataset.evaluators, cases)
        name = dataset.name if name is None else name
    else:
        cases = {}
        order = []
        for run in runs:
            if run.case not in cases:
                cases[run.case] = _bare(run)
                order.append(run.case)
        scorer = Scorer(list(dataset_or_evaluators), cases)
    scored: list[RunResult] = []
    replay(runs, lambda run: scored.append(scorer.score(run)))
    position = {case: i for i, case in enumerate(order)}
    scored.sort(key=lambda r: (position[r.case], r.repeat))
    by_case: dict[str, list[RunResult]] = {}
    for result in scored:
        by_case.setdefault(result.case, []).append(result)
    return Report((CaseResult(n, tuple(r)) for n, r in by_case.items()), name=name)


def _bare(run: RecordedRun) -> Case:
    """The run's case without its evaluators (new ones replace them)."""
    source = run.source
    if source is None:  # an old recording: only the name is known
        return Case(run.case, "(not recorded)")
    return Case(
        source.name,
        source.question,
        expected=source.expected,
        history=source.history,
        metadata=source.metadata,
    )
