"""The errors of :mod:`rxreact.evals`, on the branches of :mod:`rxreact.errors` they belong to::

    RxReactError
    └── InvalidArgumentError
        └── DatasetError              a case or a dataset file that cannot be used

    KeyboardInterrupt
    └── EvaluationInterrupted         Ctrl-C during an evaluation; carries the partial report

``EvaluationInterrupted`` is a ``KeyboardInterrupt`` on purpose: code that lets Ctrl-C stop a
program still stops, and code that wants what finished reads ``error.report``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rxreact.errors import InvalidArgumentError

if TYPE_CHECKING:
    from rxreact.evals._report import Report

__all__ = ["DatasetError", "EvaluationInterrupted", "RecordingWarning"]


class DatasetError(InvalidArgumentError):
    """A dataset (in memory or in a file) that cannot be used: a duplicate case name, a missing
    field, an unknown evaluator, a wrong argument.

    The message names the file, the case and the field where they are known; so do the
    attributes, each ``None`` when unknown.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        case: str | None = None,
        field: str | None = None,
    ) -> None:
        where = [
            part
            for part in (
                str(path) if path is not None else None,
                f"case {case!r}" if case is not None else None,
                f"field {field!r}" if field is not None else None,
            )
            if part is not None
        ]
        super().__init__(f"{', '.join(where)}: {message}" if where else message)
        self.path: str | None = None if path is None else str(path)
        """The dataset file, when the dataset came from one."""
        self.case: str | None = case
        """The name of the case at fault."""
        self.field: str | None = field
        """The field at fault (``question``, ``evaluators[1]``, ``inputs``...)."""


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped an evaluation: the runs in flight were cancelled, the finished ones kept.

    ``report`` holds what finished (scored, and written to ``record_to`` as each ended).
    """

    def __init__(self, report: Report) -> None:
        super().__init__(f"evaluation interrupted after {len(report.runs)} run(s)")
        self.report: Report = report
        """The partial report: every run that ended before the interrupt."""


class RecordingWarning(UserWarning):
    """A recording (or a report file) read only in part: cut short, written by another
    rxreact version, or holding events this one cannot read. The message names the file."""
