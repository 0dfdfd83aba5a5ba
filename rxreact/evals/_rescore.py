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
from functools import partial
from os import PathLike
from typing import Any

import reactivex
from reactivex import operators as ops

from rxreact.evals._case import Case
from rxreact.evals._dataset import Dataset
from rxreact.evals._gc import FinishedRuns
from rxreact.evals._recording import read_runs
from rxreact.evals._replay import replay
from rxreact.evals._report import CaseResult, Report, RunResult
from rxreact.evals._run import RecordedRun
from rxreact.evals._score import Scorer
from rxreact.evals.errors import RecordingWarning
from rxreact.scheduling import shared_scheduler

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
    with FinishedRuns() as kept:
        runs = read_runs(runs_dir, kept.add)
        return rescore_runs(runs, dataset_or_evaluators, kept=kept)


def rescore_runs(
    runs: Sequence[RecordedRun],
    dataset_or_evaluators: Dataset | Sequence[Any],
    *,
    name: str | None = None,
    kept: FinishedRuns | None = None,
) -> Report:
    """``runs`` replayed in virtual time and scored by ``dataset_or_evaluators``; ``kept``
    (made here when not given) keeps the scored runs out of the collector's way."""
    if kept is None:
        with FinishedRuns() as kept:
            return rescore_runs(runs, dataset_or_evaluators, name=name, kept=kept)
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
    scored = _scored(runs, scorer, kept)
    position = {case: i for i, case in enumerate(order)}
    scored.sort(key=lambda r: (position[r.case], r.repeat))
    by_case: dict[str, list[RunResult]] = {}
    for result in scored:
        by_case.setdefault(result.case, []).append(result)
    return Report((CaseResult(n, tuple(r)) for n, r in by_case.items()), name=name)


def _scored(runs: Sequence[RecordedRun], scorer: Scorer, kept: FinishedRuns) -> list[RunResult]:
    """Every run replayed and scored: inline for pure evaluators; on the tools' pool, many at
    once, when some wait (an ``LLMJudge``'s requests).

    ::

        replayed:  -r1-r2-r3-|
        scored:    ---s2--s1-s3|      (flat_map onto the tools' pool: order of completion)
    """
    if not any(scorer.blocking(case) for case in scorer.cases.values()):
        inline: list[RunResult] = []

        def score(run: RecordedRun) -> None:
            inline.append(scorer.score(run))
            kept.add()

        replay(runs, score)
        return inline
    replayed: list[RecordedRun] = []
    replay(runs, replayed.append)
    if not replayed:
        return []
    pool = shared_scheduler("tools", 16)

    def on_pool(run: RecordedRun) -> reactivex.Observable[RunResult]:
        return reactivex.start(partial(scorer.score, run), pool)

    scored: reactivex.Observable[list[RunResult]] = reactivex.from_iterable(replayed).pipe(
        ops.flat_map(on_pool), ops.to_list()
    )
    return scored.run()


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
